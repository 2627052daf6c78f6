"""Reading one partition's offset range from its leader, whatever happens to the leader.

``read_range`` is what an executor's ``read()`` runs: Fetch requests to the
partition's current leader, the next one sent before the last answer is
decoded (the broker works while we decode), until the range's end. A leader
that dies or moves costs a metadata refresh and a retry from the first offset
not yet handed out, so nothing is lost or repeated. A new leader's high
watermark can lag the range's end for a moment after a failover: the loop
waits for it rather than stopping short.

Records the range needs that retention removed are data loss: with
``failOnDataLoss`` the read fails with :class:`DataLossError` naming the
partition and offsets, otherwise it logs a warning and goes on from the log
start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future

from simplekafka.admin.groups import list_offsets
from simplekafka.client.client import KafkaClient, wait_for
from simplekafka.client.errors import KafkaError, error_for
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, ApiKey
from simplekafka.protocol.batch_header import iter_batch_positions, read_header
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import TopicPartition
from simplekafka.spark.arrow_records import DecodedRecords, decode_columns

log = logging.getLogger("simplekafka.spark")


class DataLossError(RuntimeError):
    """Records a query needs were removed (retention) or never reached the log."""


def data_loss_message(topic: str, partition: int, first: int, last: int) -> str:
    return (
        f"data loss in {topic}-{partition}: offsets {first} to {last} are no longer in the "
        f"log (removed by retention before the query read them); set the option "
        f"failOnDataLoss to false to skip them"
    )


def report_data_loss(fail: bool, topic: str, partition: int, first: int, last: int) -> None:
    """Raise :class:`DataLossError` or log a warning, as ``failOnDataLoss`` says."""
    message = data_loss_message(topic, partition, first, last)
    if fail:
        raise DataLossError(message)
    log.warning("%s (failOnDataLoss=false: skipping them)", message.split(";")[0])


def fetch_body(tp: TopicPartition, offset: int, max_wait_ms: int, max_bytes: int,
               partition_max_bytes: int) -> dict:
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": tp.topic, "partitions": [{
            "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": offset,
            "log_start_offset": -1, "partition_max_bytes": partition_max_bytes}]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


class RangeReader:
    """Fetches ``[start, end)`` of one partition as decoded columns, one answer at a time."""

    def __init__(
        self,
        client: KafkaClient,
        tp: TopicPartition,
        start: int,
        end: int,
        fail_on_data_loss: bool = True,
        max_bytes: int = 64 * 1024 * 1024,
        partition_max_bytes: int = 16 * 1024 * 1024,
        max_wait_ms: int = 200,
        timeout_s: float = 120.0,
        check_crcs: bool = True,
    ) -> None:
        self.client = client
        self.tp = tp
        self.position = start
        self.end = end
        self.fail_on_data_loss = fail_on_data_loss
        self.max_bytes = max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.max_wait_ms = max_wait_ms
        self.timeout_s = timeout_s
        self.check_crcs = check_crcs

    def _send(self, offset: int) -> Future:
        try:
            leader = self.client.leader_for(self.tp.topic, self.tp.partition)
            body = fetch_body(self.tp, offset, self.max_wait_ms, self.max_bytes,
                              self.partition_max_bytes)
            return self.client.send(
                leader, ApiKey.FETCH, body,
                timeout_ms=self.client.request_timeout_ms + self.max_wait_ms,
            )
        except KafkaError as exc:
            failed: Future = Future()
            failed.set_exception(exc)
            return failed

    def __iter__(self) -> Iterator[DecodedRecords]:
        deadline = time.monotonic() + self.timeout_s
        backoff = 0.05
        pending: Future | None = None
        pending_offset = -1
        while self.position < self.end:
            if pending is None or pending_offset != self.position:
                pending = self._send(self.position)
                pending_offset = self.position
            try:
                answer = wait_for(pending, self.client.request_timeout_ms / 1000 + 5)
                part = answer.responses[0].partitions[0]
                code = part.error_code
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._out_of_range(deadline)
                    pending = None
                    continue
                if code != ErrorCode.NONE:
                    raise error_for(code, f"fetching {self.tp} at {self.position}")
            except KafkaError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                pending = None
                self.client.metadata.request_update()
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            records = part.records or b""
            spans = iter_batch_positions(records)
            next_fetch = read_header(records, spans[-1][0]).next_offset if spans else -1
            if next_fetch <= self.position:
                # Nothing new: the leader's high watermark is behind the range's end
                # (a new leader catching up). Wait for it, within the deadline.
                if time.monotonic() > deadline:
                    self._missing_end(part.high_watermark)
                    return
                pending = None
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            backoff = 0.05
            low = self.position
            self.position = min(next_fetch, self.end)
            if self.position < self.end:  # pipelining: the next fetch goes out before we decode
                pending = self._send(self.position)
                pending_offset = self.position
            decoded, _ = decode_columns(records, low, self.end, self.check_crcs)
            if len(decoded):
                yield decoded

    def _out_of_range(self, deadline: float) -> None:
        offsets = list_offsets(self.client, {self.tp: EARLIEST_TIMESTAMP},
                               self.client.request_timeout_ms)
        earliest = offsets[self.tp]
        if self.position < earliest:
            report_data_loss(self.fail_on_data_loss, self.tp.topic, self.tp.partition,
                             self.position, min(earliest, self.end) - 1)
            self.position = min(earliest, self.end)
        elif time.monotonic() > deadline:
            self._missing_end(-1)
        else:  # beyond the end: a leader's high watermark not caught up yet
            time.sleep(0.1)

    def _missing_end(self, high_watermark: int) -> None:
        """The range's end never came back (a log truncated after a failover): data loss."""
        message = (
            f"data loss in {self.tp.topic}-{self.tp.partition}: offsets {self.position} to "
            f"{self.end - 1} were planned but the leader's log now ends at "
            f"{high_watermark if high_watermark >= 0 else 'an earlier offset'}"
        )
        if self.fail_on_data_loss:
            raise DataLossError(message + "; set the option failOnDataLoss to false to skip them")
        log.warning("%s (failOnDataLoss=false: skipping them)", message)
        self.position = self.end
