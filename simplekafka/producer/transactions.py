"""The producer's side of transactions (KIP-98): its coordinator, epoch, state and partitions.

A transactional producer finds its transaction coordinator (FindCoordinator,
key type 1) and gets a producer id and epoch for its ``transactional_id``
(InitProducerId; this fences any older producer with the same id). Inside a
transaction, every partition is added (AddPartitionsToTxn) before the first
batch to it is sent; the sender thread does that for the partitions
``send()`` named since, in one request. ``send_offsets_to_transaction`` adds
the group's offsets (AddOffsetsToTxn) and writes them to the group
coordinator (TxnOffsetCommit); ``commit``/``abort`` flush and end it (EndTxn).

Errors behave as in Kafka's clients: a fenced producer (PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH, or an id mapping gone) is *fatal*, every later call
raises it and the producer can only be closed; any other failure inside a
transaction (a batch that could not be written, a refused request) is
*abortable*: ``commit_transaction`` raises it and only ``abort_transaction``
is allowed next.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping

from simplekafka.client.client import Deadline, KafkaClient
from simplekafka.client.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    error_for,
)
from simplekafka.client.group_protocol import find_coordinator
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.structs import TopicPartition

log = logging.getLogger(__name__)

COORDINATOR_KEY_TRANSACTION = 1

# Answers after which this producer may never write again.
FATAL_CODES = frozenset({
    ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_TRANSACTION_TIMEOUT, ErrorCode.TRANSACTION_COORDINATOR_FENCED,
})
# Answers that mean "ask the coordinator again, after finding it again".
RELOCATE_CODES = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class TransactionState(enum.Enum):
    UNINITIALIZED = "Uninitialized"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


class TransactionStateError(KafkaError):
    """A transactional method called in a state that does not allow it (a usage error)."""


class TransactionAbortedError(KafkaError):
    """A record not sent because its transaction was aborted first."""


class TransactionManager:
    """One transactional id's client state; thread-safe (the app and the sender use it)."""

    def __init__(self, client: KafkaClient, transactional_id: str, timeout_ms: int,
                 request_timeout_ms: int):
        if not isinstance(transactional_id, str) or not transactional_id:
            raise ValueError("transactional_id must be a non-empty string")
        if not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise ValueError(f"transaction_timeout_ms must be a positive int, not {timeout_ms!r}")
        self.client = client
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.state = TransactionState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.error: KafkaError | None = None
        self.added: set[TopicPartition] = set()
        self.pending: set[TopicPartition] = set()
        self.offsets_sent = False  # the group's offsets partition is in the transaction
        self._coordinator: int | None = None
        self._lock = threading.Lock()

    # -- state ------------------------------------------------------------------------

    def _require(self, *states: TransactionState) -> None:
        if self.state == TransactionState.FATAL_ERROR and self.error is not None:
            raise self.error
        if self.state not in states:
            wanted = " or ".join(s.value for s in states)
            detail = f" ({self.error})" if self.error is not None else ""
            raise TransactionStateError(
                f"transaction state is {self.state.value}{detail}, this needs {wanted}")

    def fail(self, error: BaseException) -> None:
        """A failure inside the transaction: fatal if fenced, else abortable."""
        code = getattr(error, "error_code", None)
        if not isinstance(error, KafkaError):
            error = KafkaError(str(error))
        with self._lock:
            if code in FATAL_CODES:
                self.state, self.error = TransactionState.FATAL_ERROR, error
            elif self.state == TransactionState.IN_TRANSACTION:
                self.state, self.error = TransactionState.ABORTABLE_ERROR, error

    def check_can_send(self) -> None:
        self._require(TransactionState.IN_TRANSACTION)

    def check_can_abort(self) -> None:
        self._require(TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR)

    def maybe_add(self, tp: TopicPartition) -> None:
        """``send()`` wrote to ``tp``: add it to the transaction before its first batch."""
        if tp not in self.added:
            with self._lock:
                if tp not in self.added:
                    self.pending.add(tp)

    # -- talking to the coordinator ------------------------------------------------------

    def _call(self, api_key: ApiKey, body: dict, answer_code: Callable[[Struct], ErrorCode],
              timeout_ms: int, what: str) -> Struct:
        """Send one request to the transaction coordinator, retried until it answers without
        a retriable error (re-finding the coordinator when it moved)."""

        def attempt(deadline: Deadline) -> Struct:
            if self._coordinator is None:
                self._coordinator = self._find(deadline)
            try:
                answer = self.client.request(
                    self._coordinator, api_key, body,
                    timeout_ms=max(1, int(deadline.remaining(self.request_timeout_ms / 1000)
                                          * 1000)))
            except KafkaConnectionError:
                self._coordinator = None
                raise
            code = answer_code(answer)
            if code in RELOCATE_CODES:
                self._coordinator = None
            if code != ErrorCode.NONE:
                raise error_for(code, f"{what} ({self.transactional_id!r})")
            return answer

        return self.client.call_with_retries(attempt, timeout_ms)

    def _find(self, deadline: Deadline) -> int:
        answer = self.client.request(
            self.client.least_loaded_node(), ApiKey.FIND_COORDINATOR,
            {"key": self.transactional_id, "key_type": COORDINATOR_KEY_TRANSACTION},
            timeout_ms=max(1, int(deadline.remaining() * 1000)))
        if answer.error_code:
            raise error_for(answer.error_code,
                            f"finding the transaction coordinator of {self.transactional_id!r}")
        if self.client.metadata.broker(answer.node_id) is None:
            self.client.refresh_metadata(None, max(200, int(deadline.remaining() * 1000)))
        return answer.node_id

    def _ids(self) -> dict:
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch}

    # -- the steps ---------------------------------------------------------------------------

    def init(self, timeout_ms: int) -> tuple[int, int]:
        """InitProducerId: this id's producer id and a new epoch (older producers fenced)."""
        self._require(TransactionState.UNINITIALIZED)
        try:
            answer = self._call(
                ApiKey.INIT_PRODUCER_ID,
                {"transactional_id": self.transactional_id,
                 "transaction_timeout_ms": self.timeout_ms},
                lambda a: ErrorCode.of(a.error_code), timeout_ms, "InitProducerId")
        except KafkaError as exc:
            if getattr(exc, "error_code", None) in FATAL_CODES:
                self.fail(exc)
            raise
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
        self.state = TransactionState.READY
        log.info("transactional id %r: producer id %d, epoch %d", self.transactional_id,
                 self.producer_id, self.producer_epoch)
        return self.producer_id, self.producer_epoch

    def begin(self) -> None:
        self._require(TransactionState.READY)
        with self._lock:
            self.added.clear()
            self.pending.clear()
            self.offsets_sent = False
            self.state = TransactionState.IN_TRANSACTION

    def add_pending(self) -> None:
        """AddPartitionsToTxn for what ``send()`` named since (on the sender thread)."""
        with self._lock:
            wanted = sorted(self.pending - self.added)
        if not wanted or self.state != TransactionState.IN_TRANSACTION:
            return
        topics: dict[str, list[int]] = {}
        for tp in wanted:
            topics.setdefault(tp.topic, []).append(tp.partition)

        def worst(answer: Struct) -> ErrorCode:
            codes = [ErrorCode.of(p.partition_error_code)
                     for t in answer.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            failed = [c for c in codes if c != ErrorCode.NONE]
            real = [c for c in failed if c != ErrorCode.OPERATION_NOT_ATTEMPTED]
            return (real or failed or [ErrorCode.NONE])[0]

        try:
            self._call(ApiKey.ADD_PARTITIONS_TO_TXN, {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": p}
                                        for t, p in topics.items()]},
                worst, self.request_timeout_ms, "AddPartitionsToTxn")
        except KafkaError as exc:
            self.fail(exc)
            return
        with self._lock:
            self.added.update(wanted)
            self.pending.difference_update(wanted)

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str,
                     timeout_ms: int) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator."""
        self._require(TransactionState.IN_TRANSACTION)
        try:
            self._call(ApiKey.ADD_OFFSETS_TO_TXN, {**self._ids(), "group_id": group_id},
                       lambda a: ErrorCode.of(a.error_code), timeout_ms, "AddOffsetsToTxn")
            self.offsets_sent = True
            self._commit_offsets(offsets, group_id, timeout_ms)
        except KafkaError as exc:
            self.fail(exc)
            raise

    def _commit_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str,
                        timeout_ms: int) -> None:
        topics: dict[str, list[dict]] = {}
        for tp, offset in offsets.items():
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1, "committed_metadata": ""})
        body = {"transactional_id": self.transactional_id, "group_id": group_id,
                "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
        coordinator: list[int] = []

        def attempt(deadline: Deadline) -> None:
            if not coordinator:
                coordinator.append(find_coordinator(
                    self.client, group_id, max(1, int(deadline.remaining() * 1000))))
            answer = self.client.request(coordinator[0], ApiKey.TXN_OFFSET_COMMIT, body,
                                         timeout_ms=max(1, int(deadline.remaining() * 1000)))
            for topic in answer.topics:
                for p in topic.partitions:
                    if p.error_code:
                        if p.error_code in RELOCATE_CODES:
                            coordinator.clear()
                        raise error_for(p.error_code, f"TxnOffsetCommit for {group_id!r}")

        self.client.call_with_retries(attempt, timeout_ms)

    def end(self, commit: bool, timeout_ms: int) -> None:
        """EndTxn; back to Ready. (The caller has flushed the records.)"""
        if commit:
            self._require(TransactionState.IN_TRANSACTION)
        else:
            self._require(TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR)
        if self.added or self.offsets_sent:  # else the coordinator knows of no transaction
            try:
                self._call(ApiKey.END_TXN, {**self._ids(), "committed": commit},
                           lambda a: ErrorCode.of(a.error_code), timeout_ms,
                           "EndTxn(commit)" if commit else "EndTxn(abort)")
            except KafkaError as exc:
                self.fail(exc)
                raise
        with self._lock:
            self.state = TransactionState.READY
            self.error = None
            self.added.clear()
            self.pending.clear()
            self.offsets_sent = False


def timeout_ms_of(timeout: float | None, default_ms: int) -> int:
    if timeout is None:
        return default_ms
    if timeout <= 0:
        raise KafkaTimeoutError("timeout must be positive")
    return int(timeout * 1000)
