"""The fetcher: keeps one Fetch in flight per broker and turns answers into records.

Pipelining: as soon as a broker's answer arrives, the next fetch offset of each
partition is read from the batch *headers* (no record decoding needed), and the
next Fetch goes out to that broker before the records of this one are decoded.
The broker works on the next answer while we decode and the user consumes.

Each partition keeps two positions: ``fetch_offset`` (what to ask for next) and
``position`` (the next record to give the user). A ``seek`` bumps the
partition's epoch; answers to fetches sent before it are thrown away.

Control batches (transaction markers) are never handed out. A read_committed
consumer (``isolation_level=1``) is answered only below the last stable
offset, with the aborted transactions of the range, and drops the batches of
those transactions as Kafka's consumer does: an aborted transaction of
producer P starting at offset F makes P's transactional batches from F on
aborted, up to P's abort marker.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import CorruptMessageError, KafkaError, error_for
from simplekafka.protocol.api import READ_COMMITTED, ApiKey
from simplekafka.protocol.batch_header import BatchHeader, iter_batch_positions, read_header
from simplekafka.protocol.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DecompressedTooLargeError,
)
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import FetchRequest, FetchRequestTopicsPartitions
from simplekafka.protocol.records import parse_batch, parse_control_marker
from simplekafka.protocol.structs import TopicPartition


class ConsumerRecord(NamedTuple):
    """One record as the consumer returns it (key and value after deserializers)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    # What the consumer's deserializers made of the bytes: the application's own types.
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]


@dataclass
class PartitionState:
    """Where we are in one assigned partition."""

    position: int | None = None  # next offset to return; None = reset needed
    fetch_offset: int | None = None  # next offset to fetch
    epoch: int = 0  # bumped by seek: older fetch answers are dropped
    in_flight: bool = False
    high_watermark: int = -1
    # raw answers not decoded yet: (records bytes, aborted transactions as (pid, first offset))
    buffered: deque = field(default_factory=deque)
    records: deque = field(default_factory=deque)  # decoded batches, see decode_next
    error: KafkaError | None = None  # to raise from the next poll
    reset_pending: bool = False
    # Fetch from the closest replica (KIP-392): the follower the leader named, until when.
    read_replica: int | None = None
    read_replica_until: float = 0.0


class Fetcher:
    """Fetch requests and their answers for a set of partitions."""

    def __init__(
        self,
        client: KafkaClient,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        isolation_level: int = 0,
        check_crcs: bool = True,
        max_buffered_batches: int = 4,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        client_rack: str = "",
        read_replica_max_age_ms: int = 300_000,
    ) -> None:
        self.client = client
        self.client_rack = client_rack  # sent as Fetch's rack_id (KIP-392)
        self.read_replica_max_age_ms = read_replica_max_age_ms
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.isolation_level = isolation_level
        self.check_crcs = check_crcs
        self.max_decompressed_bytes = max_decompressed_bytes
        self.max_buffered = max_buffered_batches
        self.states: dict[TopicPartition, PartitionState] = {}
        self.condition = threading.Condition()
        self._completed: deque[tuple[int, Future, dict[TopicPartition, int]]] = deque()
        self._in_flight_nodes: set[int] = set()

    # ----- requests --------------------------------------------------------------

    def send_fetches(self) -> int:
        """Send a Fetch to every leader that has fetchable partitions and none in flight."""
        per_node: dict[int, list[TopicPartition]] = {}
        missing_leader = False
        for tp, state in self.states.items():
            if state.fetch_offset is None or state.in_flight or state.error is not None:
                continue
            if len(state.buffered) + (1 if state.records else 0) >= self.max_buffered:
                continue
            leader = self.client.metadata.leader_for(tp.topic, tp.partition)
            if leader is None:
                missing_leader = True
                continue
            node = self._read_replica(state) if self.client_rack else None
            node = leader if node is None else node
            if node in self._in_flight_nodes:
                continue
            per_node.setdefault(node, []).append(tp)
        if missing_leader:
            self.client.metadata.request_update()
        for node_id, tps in per_node.items():
            self._send(node_id, tps)
        return len(per_node)

    def _read_replica(self, state: PartitionState) -> int | None:
        """The replica the leader named for this partition, while it holds (as Kafka's
        consumer, it asks the leader again after ``read_replica_max_age_ms``)."""
        if state.read_replica is None:
            return None
        if (time.monotonic() > state.read_replica_until
                or self.client.metadata.broker(state.read_replica) is None):
            state.read_replica = None
        return state.read_replica

    def _send(self, node_id: int, tps: list[TopicPartition]) -> None:
        topics: dict[str, list[FetchRequestTopicsPartitions]] = {}
        epochs: dict[TopicPartition, int] = {}
        for tp in tps:
            state = self.states[tp]
            assert state.fetch_offset is not None  # send_fetches picks positioned ones only
            state.in_flight = True
            epochs[tp] = state.epoch
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": state.fetch_offset,
                    "log_start_offset": -1,
                    "partition_max_bytes": self.max_partition_fetch_bytes,
                }
            )
        body: FetchRequest = {
            "replica_id": -1,
            "max_wait_ms": self.fetch_max_wait_ms,
            "min_bytes": self.fetch_min_bytes,
            "max_bytes": self.fetch_max_bytes,
            "isolation_level": self.isolation_level,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": self.client_rack,
        }
        self._in_flight_nodes.add(node_id)
        timeout = self.client.request_timeout_ms + self.fetch_max_wait_ms
        try:
            future = self.client.send(node_id, ApiKey.FETCH, body, timeout_ms=timeout)
        except KafkaError as exc:
            future = Future()
            future.set_exception(exc)

        def arrived(done: Future) -> None:
            with self.condition:
                self._completed.append((node_id, done, epochs))
                self.condition.notify_all()

        future.add_done_callback(arrived)

    # ----- answers ---------------------------------------------------------------

    def wait_for_answers(self, timeout: float) -> None:
        with self.condition:
            if not self._completed:
                self.condition.wait(timeout)

    def handle_answers(self) -> int:
        """Take in every answer that arrived; send follow-up fetches at once (pipelining)."""
        handled = 0
        while True:
            with self.condition:
                if not self._completed:
                    return handled
                node_id, future, epochs = self._completed.popleft()
            handled += 1
            self._in_flight_nodes.discard(node_id)
            for tp in epochs:
                state = self.states.get(tp)
                if state is not None and state.epoch == epochs[tp]:
                    state.in_flight = False
            error = future.exception()
            if error is not None:
                for tp in epochs:
                    state = self.states.get(tp)
                    if state is not None and state.epoch == epochs[tp]:
                        state.in_flight = False
                self.client.metadata.request_update()
                continue
            self._take_response(future.result(), epochs)
            self.send_fetches()

    def _take_response(self, body: Struct, epochs: dict[TopicPartition, int]) -> None:
        refresh = False
        for topic in body.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                state = self.states.get(tp)
                if state is None or epochs.get(tp) != state.epoch:
                    continue  # unassigned or sought since: stale
                code = part.error_code
                preferred = getattr(part, "preferred_read_replica", -1)
                if code == ErrorCode.NONE and preferred is not None and preferred >= 0:
                    # The leader sends us to a replica in our rack (KIP-392).
                    state.read_replica = preferred
                    state.read_replica_until = (time.monotonic()
                                                + self.read_replica_max_age_ms / 1000.0)
                    continue
                if code != ErrorCode.NONE and state.read_replica is not None:
                    # Any trouble at the follower: back to the leader, which decides again.
                    state.read_replica = None
                    if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        continue
                if code == ErrorCode.NONE:
                    state.high_watermark = part.high_watermark
                    records = part.records or b""
                    spans = iter_batch_positions(records)
                    if spans:
                        pos, _ = spans[-1]
                        state.fetch_offset = max(
                            state.fetch_offset or 0, read_header(records, pos).next_offset
                        )
                        aborted = [(txn.producer_id, txn.first_offset)
                                   for txn in part.aborted_transactions or ()]
                        state.buffered.append((records, aborted))
                    elif len(records) >= self.max_partition_fetch_bytes:
                        state.error = error_for(
                            ErrorCode.RECORD_LIST_TOO_LARGE,
                            f"{tp}: a batch at offset {state.fetch_offset} is larger than "
                            f"max_partition_fetch_bytes ({self.max_partition_fetch_bytes})",
                        )
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    state.reset_pending = True
                else:
                    error = error_for(code, f"fetching {tp}")
                    if error.retriable:
                        refresh = True
                    else:
                        state.error = error
        if refresh:
            self.client.metadata.request_update()

    # ----- decoding --------------------------------------------------------------

    def decode_next(self, tp: TopicPartition) -> None:
        """Decode one buffered answer of ``tp`` into records at or after its position."""
        state = self.states[tp]
        if not state.buffered:
            return
        records, aborted = state.buffered.popleft()
        position = state.position if state.position is not None else 0
        skip = _AbortedFilter(aborted) if self.isolation_level == READ_COMMITTED else None
        for pos, _ in iter_batch_positions(records):
            try:
                batch = parse_batch(records, pos, check_crc=self.check_crcs,
                                    max_decompressed_bytes=self.max_decompressed_bytes)
            except DecompressedTooLargeError as exc:
                raise CorruptMessageError(
                    f"{tp}: the record batch at offset {read_header(records, pos).base_offset} "
                    f"decompresses to more than max_decompressed_bytes "
                    f"({self.max_decompressed_bytes}); refused, not decoded"
                ) from exc
            except CorruptBatchError as exc:
                raise CorruptMessageError(
                    f"{tp}: corrupt record batch near offset {position}: {exc}"
                ) from exc
            next_offset = batch.header.next_offset
            dropped = skip is not None and skip.drops(batch.header, batch.records)
            if next_offset <= position:
                continue
            decoded = [] if batch.is_control or dropped else batch.records
            if decoded and decoded[0].offset < position:
                decoded = [r for r in decoded if r.offset >= position]
            # [records, index of the next one to hand out, timestamp type, offset after batch]
            state.records.append([decoded, 0, batch.timestamp_type, next_offset])


class _AbortedFilter:
    """Which batches of one fetch answer belong to aborted transactions (read_committed)."""

    def __init__(self, aborted: list[tuple[int, int]]):
        self.pending = sorted(aborted, key=lambda txn: txn[1])  # by first offset
        self.aborting: set[int] = set()  # producers inside an aborted transaction here

    def drops(self, header: BatchHeader, records: list) -> bool:
        """True if the batch's records are not to be returned (control batches end an
        aborted transaction and are dropped by the caller in any case)."""
        if header.producer_id < 0:
            return False
        while self.pending and self.pending[0][1] <= header.last_offset:
            self.aborting.add(self.pending.pop(0)[0])
        if header.is_control:
            marker = parse_control_marker(records[0]) if records else None
            if marker is not None and not marker.commit:
                self.aborting.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self.aborting
