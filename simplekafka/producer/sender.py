"""The sender thread: takes ready batches out of the accumulator and produces them.

One loop, one thread, all batch state: it waits until a batch is ready (full,
lingered long enough, or flushed), finds each partition's leader in the
metadata cache, groups batches by leader into one ProduceRequest per broker
(at most ``max_in_flight`` outstanding per broker), and handles the answers
the I/O thread hands back: success resolves the futures; a retriable error
(NOT_LEADER_OR_FOLLOWER, a lost connection...) refreshes metadata and puts
the batch back, keeping its sequence number so an idempotent broker can drop
duplicates; anything else, or the delivery timeout, fails the batch.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import (
    ClientClosedError,
    KafkaError,
    KafkaTimeoutError,
    error_for,
    needs_metadata_refresh,
)
from simplekafka.producer.accumulator import ProducerBatch, RecordAccumulator
from simplekafka.producer.transactions import TransactionManager
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import ProduceRequest, ProduceRequestTopicDataPartitionData
from simplekafka.protocol.records import build_batch
from simplekafka.protocol.structs import TopicPartition

log = logging.getLogger(__name__)


class Sender(threading.Thread):
    """Moves batches from the accumulator to the brokers (a daemon thread)."""

    def __init__(
        self,
        client: KafkaClient,
        accumulator: RecordAccumulator,
        acks: int,
        compression: int,
        retries: int,
        retry_backoff_ms: int,
        request_timeout_ms: int,
        max_in_flight: int,
        max_request_size: int,
        idempotent: bool,
        on_new_batch=None,
        transactions: TransactionManager | None = None,
    ) -> None:
        super().__init__(name="simplekafka-producer-sender", daemon=True)
        self.client = client
        self.accumulator = accumulator
        self.acks = acks
        self.compression = compression
        self.retries = retries
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.max_request_size = max_request_size
        self.idempotent = idempotent
        self.transactions = transactions  # a transactional producer's state (else None)
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[TopicPartition, int] = {}
        self._in_flight_nodes: dict[int, int] = {}
        self._in_flight_tps: dict[TopicPartition, int] = {}
        self._responses: list[tuple[Future, int, list[ProducerBatch]]] = []
        self._running = True
        self._force_close = False
        self._on_new_batch = on_new_batch
        self._refreshing = False
        self._outcomes: list[tuple[ProducerBatch, int, int, BaseException | None]] = []

    # ----- control from the producer --------------------------------------------

    def initiate_close(self, force: bool = False) -> None:
        with self.accumulator.condition:
            self._running = False
            self._force_close = force
            self.accumulator.closed = True
            self.accumulator.condition.notify_all()

    # ----- the loop --------------------------------------------------------------

    def run(self) -> None:
        try:
            while True:
                if not self._run_once():
                    break
        except Exception:  # log, fail what is left, never hang flush()
            log.exception("producer sender thread crashed")
            self._fail_everything(KafkaError("the producer's sender thread crashed"))
        finally:
            self._fail_everything(ClientClosedError("the producer was closed"))

    def _run_once(self) -> bool:
        acc = self.accumulator
        with acc.condition:
            responses, self._responses = self._responses, []
        for future, node_id, batches in responses:
            self._handle_response(future, node_id, batches)
        self._resolve()
        if self._force_close:
            return False
        txn = self.transactions
        if txn is not None:
            if txn.pending:
                txn.add_pending()  # AddPartitionsToTxn before the partitions' first batches
        elif self.idempotent and self.producer_id < 0 and acc.has_unsent():
            self._init_producer_id()
        now = time.monotonic()
        with acc.condition:
            for batch in acc.expired(now):
                self._fail(batch, KafkaTimeoutError("batch expired before it was acknowledged"))
            ready, wait = acc.ready_partitions(now)
            requests = self._drain(ready) if ready else {}
            if not requests and not self._responses:
                if not self._running and not acc.has_unsent() and not self._in_flight_nodes_busy():
                    return False
                acc.condition.wait(min(wait, 0.1) if ready or wait < 3600 else 0.1)
        self._resolve()
        for node_id, batches in requests.items():
            self._send(node_id, batches)
        self._resolve()
        return True

    def _in_flight_nodes_busy(self) -> bool:
        return any(self._in_flight_nodes.values())

    def _drain(self, ready: list[TopicPartition]) -> dict[int, list[ProducerBatch]]:
        """Take one head batch per ready partition whose leader can take more requests."""
        acc = self.accumulator
        per_node: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        missing_leader = False
        for tp in ready:
            leader = self.client.metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                missing_leader = True
                continue
            if self._in_flight_nodes.get(leader, 0) >= self.max_in_flight:
                continue
            head = acc.head(tp)
            if head is None:
                continue
            if self.idempotent:
                if self.producer_id < 0:
                    continue
                if self.transactions is not None and tp not in self.transactions.added:
                    continue
                # A retried batch must go before anything after it, alone.
                if head.is_retry and self._in_flight_tps.get(tp, 0):
                    continue
            if sizes.get(leader, 0) + head.size > self.max_request_size and per_node.get(leader):
                continue
            batch = acc.pop(tp)
            if self._on_new_batch is not None and not batch.is_retry:
                self._on_new_batch(tp)
            per_node.setdefault(leader, []).append(batch)
            sizes[leader] = sizes.get(leader, 0) + batch.size
        if missing_leader:
            self.client.metadata.request_update()
            self._refresh_in_background()
        return per_node

    def _refresh_in_background(self) -> None:
        """One metadata refresh at a time, off the sender thread (it may take a while)."""
        if self._refreshing:
            return
        self._refreshing = True
        threading.Thread(target=self._refresh_quietly, daemon=True).start()

    def _refresh_quietly(self) -> None:
        try:
            self.client.refresh_metadata(None, self.request_timeout_ms)
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)
        finally:
            self._refreshing = False
        with self.accumulator.condition:
            self.accumulator.condition.notify_all()

    def _encode(self, batch: ProducerBatch) -> bytes:
        if batch.encoded is None:
            if self.idempotent:
                seq = self._sequences.get(batch.tp, 0)
                batch.base_sequence = seq
                self._sequences[batch.tp] = (seq + len(batch.records)) % (2**31)
            batch.encoded = build_batch(
                batch.records,
                compression=self.compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=batch.base_sequence,
                is_transactional=self.transactions is not None,
            )
        return batch.encoded

    def _send(self, node_id: int, batches: list[ProducerBatch]) -> None:
        topics: dict[str, list[ProduceRequestTopicDataPartitionData]] = {}
        for batch in batches:
            try:
                records = self._encode(batch)
            except (ValueError, TypeError) as exc:
                with self.accumulator.condition:
                    self._fail(batch, KafkaError(f"cannot encode batch: {exc}"))
                continue
            topics.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": records}
            )
        batches = [b for b in batches if not b.result.done]
        if not batches:
            return
        body: ProduceRequest = {
            "transactional_id": None if self.transactions is None
            else self.transactions.transactional_id,
            "acks": self.acks,
            "timeout_ms": self.request_timeout_ms,
            "topic_data": [{"name": t, "partition_data": p} for t, p in topics.items()],
        }
        with self.accumulator.condition:
            self._in_flight_nodes[node_id] = self._in_flight_nodes.get(node_id, 0) + 1
            for batch in batches:
                batch.attempts += 1
                self._in_flight_tps[batch.tp] = self._in_flight_tps.get(batch.tp, 0) + 1
        try:
            future = self.client.send(
                node_id,
                ApiKey.PRODUCE,
                body,
                expect_response=self.acks != 0,
                timeout_ms=self.request_timeout_ms + 5_000,
            )
        except KafkaError as exc:
            future = Future()
            future.set_exception(exc)
        future.add_done_callback(lambda f: self._on_done(f, node_id, batches))

    def _on_done(self, future: Future, node_id: int, batches: list[ProducerBatch]) -> None:
        with self.accumulator.condition:
            self._responses.append((future, node_id, batches))
            self.accumulator.condition.notify_all()

    # ----- answers ---------------------------------------------------------------

    def _handle_response(self, future: Future, node_id: int, batches: list[ProducerBatch]) -> None:
        acc = self.accumulator
        with acc.condition:
            self._in_flight_nodes[node_id] = max(0, self._in_flight_nodes.get(node_id, 0) - 1)
            for batch in batches:
                self._in_flight_tps[batch.tp] = max(0, self._in_flight_tps.get(batch.tp, 0) - 1)
            error = future.exception()
            if error is not None:
                for batch in batches:
                    self._retry_or_fail(batch, error)
                return
            body = future.result()
            if body is None:  # acks=0: nobody will tell us the offset
                for batch in batches:
                    self._succeed(batch, -1, -1)
                return
            answers: dict[TopicPartition, Struct] = {}
            for topic in body.responses:
                for part in topic.partition_responses:
                    answers[TopicPartition(topic.name, part.index)] = part
            for batch in batches:
                part = answers.get(batch.tp)
                if part is None:
                    self._retry_or_fail(batch, KafkaError(f"no answer for {batch.tp} in response"))
                    continue
                code = part.error_code
                if code == ErrorCode.NONE:
                    self._succeed(batch, part.base_offset, getattr(part, "log_append_time_ms", -1))
                elif code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                    self._succeed(batch, -1, -1)  # already written by an earlier attempt
                else:
                    message = getattr(part, "error_message", None)
                    error = error_for(code, message or f"producing to {batch.tp}")
                    if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self.idempotent:
                        error.retriable = True  # an earlier batch is being retried
                    self._retry_or_fail(batch, error)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        """Record the outcome (under the lock); futures resolve in ``_resolve`` (outside it)."""
        self.accumulator.complete(batch)
        lat = log_append_time if log_append_time is not None else -1
        self._outcomes.append((batch, base_offset, lat, None))

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self.accumulator.complete(batch)
        if self.transactions is not None:
            self.transactions.fail(error)  # the transaction can only be aborted now
        self._outcomes.append((batch, -1, -1, error))

    def _resolve(self) -> None:
        """Resolve futures and run user callbacks, never while holding the accumulator lock
        (a callback may well call ``send()``)."""
        with self.accumulator.condition:
            outcomes, self._outcomes = self._outcomes, []
        for batch, base_offset, log_append_time, error in outcomes:
            batch.result.complete(base_offset, log_append_time, error)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException) -> None:
        retriable = isinstance(error, KafkaError) and error.retriable
        if needs_metadata_refresh(error):
            self.client.metadata.request_update()
        if (
            retriable
            and batch.attempts <= self.retries
            and time.monotonic() < batch.deadline
            and not self._force_close
        ):
            log.debug("retrying %s after %s", batch.tp, error)
            if not self.idempotent:
                batch.encoded = None  # rebuilt (fresh timestamps are not needed: keep it simple)
            self.accumulator.requeue(batch, self.retry_backoff)
            if needs_metadata_refresh(error):
                self._refresh_in_background()
        else:
            self._fail(batch, error)

    # ----- idempotence -----------------------------------------------------------

    def _init_producer_id(self) -> None:
        """Ask a broker for a producer id and epoch (InitProducerId), retrying until it works."""

        def attempt(deadline):
            node = self.client.least_loaded_node()
            body = self.client.request(
                node,
                ApiKey.INIT_PRODUCER_ID,
                {"transactional_id": None, "transaction_timeout_ms": 60_000},
                timeout_ms=max(1, int(deadline.remaining(self.request_timeout_ms / 1000) * 1000)),
            )
            if body.error_code:
                raise error_for(body.error_code, "InitProducerId")
            return body

        try:
            if self.client.metadata.needs_update():
                self.client.refresh_metadata(None, self.request_timeout_ms)
            body = self.client.call_with_retries(attempt, self.request_timeout_ms)
        except KafkaError as exc:
            with self.accumulator.condition:
                for batch in self.accumulator.drain_all():
                    self._fail(batch, exc)
            self._resolve()
            return
        self.producer_id = body.producer_id
        self.producer_epoch = body.producer_epoch
        self._sequences.clear()

    def abort_unsent(self, error: KafkaError) -> None:
        """Fail every batch not sent yet (an aborted transaction's); in-flight ones finish."""
        with self.accumulator.condition:
            for batch in self.accumulator.drain_all():
                self._fail(batch, error)
        self._resolve()

    def _fail_everything(self, error: KafkaError) -> None:
        leftovers = self.accumulator.incomplete()
        with self.accumulator.condition:
            self.accumulator.drain_all()
            for batch in leftovers:
                self._fail(batch, error)
        self._resolve()
