"""Did the cluster keep its promises? Compare acknowledged sends with consumed records.

This is the assertion of Kafka's own replication system test: a producer
records every send the cluster acknowledged (topic, partition, offset, key,
value), a consumer records everything it read, and afterwards every
acknowledged record must have been consumed. Per partition the checker
reports three kinds of trouble:

* **lost**: acknowledged but never consumed (the promise was broken);
* **duplicated**: the same key and value stored at more than one offset (a
  producer retry without idempotence: allowed by Kafka's test, but counted);
* **reordered**: acknowledged records read back in a different order than the
  offsets they were acknowledged at, or at a different offset (the log was
  rewritten under a reader).

Records are told apart by (topic, partition, key, value), so give each send a
unique value. Reading the same offset twice (a consumer that re-fetches) is
not a duplicate. ``replica_logs_agree`` compares the replicas' data files of a
partition, for "no diverging logs" checks after failures.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.records import parse_batches

if TYPE_CHECKING:
    from simplekafka.producer.futures import RecordFuture


@dataclass(frozen=True)
class Delivered:
    """One record at a known place: an acknowledged send or a consumed record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None

    @property
    def identity(self) -> tuple[str, int, bytes | None, bytes | None]:
        return (self.topic, self.partition, self.key, self.value)


def _as_bytes(data: object) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"keys and values must be bytes, str or None, not {type(data).__name__}")


def delivered(topic: str, partition: int, offset: int, key: object, value: object
              ) -> Delivered:
    """A Delivered from loose values (str keys and values are UTF-8 encoded)."""
    if not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    return Delivered(str(topic), int(partition), offset, _as_bytes(key), _as_bytes(value))


class ConfluentMessage(Protocol):
    """What a delivery callback reads of a confluent-kafka ``Message``."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> object: ...
    def value(self) -> object: ...


class ConsumedRecord(Protocol):
    """A consumed record of any client: ours, kafka-python's."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> object: ...
    @property
    def value(self) -> object: ...


class DeliveryLog:
    """A thread-safe notebook of acknowledged sends and consumed records.

    Delivery callbacks run on client threads, so ``acknowledged`` and
    ``consumed`` may be called from anywhere. ``check()`` gives the report.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acks: list[Delivered] = []
        self._consumed: list[Delivered] = []
        self.failed_sends = 0

    def acknowledged(self, topic: str, partition: int, offset: int,
                     key: object = None, value: object = None) -> None:
        """Note a send the cluster acknowledged at ``offset``."""
        record = delivered(topic, partition, offset, key, value)
        with self._lock:
            self._acks.append(record)

    def failed(self) -> None:
        """Note a send that was not acknowledged (it may or may not be stored)."""
        with self._lock:
            self.failed_sends += 1

    def consumed(self, topic: str, partition: int, offset: int,
                 key: object = None, value: object = None) -> None:
        """Note a record a consumer read."""
        record = delivered(topic, partition, offset, key, value)
        with self._lock:
            self._consumed.append(record)

    def confluent_callback(self, error: object, message: ConfluentMessage) -> None:
        """A confluent-kafka ``on_delivery`` callback that records acks and failures."""
        if error is not None:
            self.failed()
            return
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None:  # librdkafka sets all three
            raise ValueError(f"a delivery report without its topic, partition or offset: "
                             f"{topic!r}, {partition!r}, {offset!r}")
        self.acknowledged(topic, partition, offset, message.key(), message.value())

    def track(self, future: RecordFuture, key: object = None, value: object = None
              ) -> RecordFuture:
        """Record the outcome of one of our Producer's send() futures when it completes."""
        def done(completed: RecordFuture) -> None:
            if completed.exception() is not None:
                self.failed()
            else:
                metadata = completed.result()
                self.acknowledged(metadata.topic, metadata.partition, metadata.offset, key, value)

        future.add_done_callback(done)
        return future

    def consumed_all(self, records: Iterable[ConsumedRecord]) -> None:
        """Note consumed records that have topic, partition, offset, key and value attributes."""
        for record in records:
            self.consumed(record.topic, record.partition, record.offset, record.key, record.value)

    def acked_ends(self) -> dict[tuple[str, int], int]:
        """Per partition, one past the highest acknowledged offset: how far a reader must get.

        A new leader's high watermark can lag for a moment after a failover (it
        learns its followers' positions on their next fetch), so "read to the
        end offset once" can stop short; read at least to here.
        """
        ends: dict[tuple[str, int], int] = {}
        with self._lock:
            for record in self._acks:
                where = (record.topic, record.partition)
                ends[where] = max(ends.get(where, 0), record.offset + 1)
        return ends

    @property
    def acks(self) -> list[Delivered]:
        with self._lock:
            return list(self._acks)

    @property
    def consumed_records(self) -> list[Delivered]:
        with self._lock:
            return list(self._consumed)

    def check(self) -> CheckReport:
        with self._lock:
            return check(self._acks, self._consumed)


@dataclass
class PartitionReport:
    """What went wrong (if anything) in one partition."""

    topic: str
    partition: int
    acknowledged: int = 0
    consumed: int = 0
    lost: list[Delivered] = field(default_factory=list)
    duplicated: list[Delivered] = field(default_factory=list)
    reordered: list[Delivered] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing lost and nothing reordered (duplicates are allowed without idempotence)."""
        return not self.lost and not self.reordered

    def summary(self) -> str:
        return (f"{self.topic}-{self.partition}: {self.acknowledged} acknowledged, "
                f"{self.consumed} consumed, {len(self.lost)} lost, "
                f"{len(self.duplicated)} duplicated, {len(self.reordered)} reordered")


@dataclass
class CheckReport:
    """The checker's verdict, partition by partition."""

    partitions: dict[tuple[str, int], PartitionReport]

    @property
    def lost(self) -> list[Delivered]:
        return [r for p in self.partitions.values() for r in p.lost]

    @property
    def duplicated(self) -> list[Delivered]:
        return [r for p in self.partitions.values() for r in p.duplicated]

    @property
    def reordered(self) -> list[Delivered]:
        return [r for p in self.partitions.values() for r in p.reordered]

    @property
    def acknowledged(self) -> int:
        return sum(p.acknowledged for p in self.partitions.values())

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions.values())

    def summary(self, examples: int = 5) -> str:
        """One line per partition, plus a few of the lost or reordered records."""
        lines = [p.summary() for _, p in sorted(self.partitions.items())]
        for what, records in (("lost", self.lost), ("reordered", self.reordered)):
            for record in records[:examples]:
                lines.append(f"  {what}: {record.topic}-{record.partition} offset "
                             f"{record.offset} key={record.key!r} value={record.value!r}")
        return "\n".join(lines) if lines else "nothing acknowledged and nothing consumed"


def check(acknowledged: Iterable[Delivered], consumed: Iterable[Delivered]) -> CheckReport:
    """Compare acknowledged sends with consumed records, partition by partition."""
    reports: dict[tuple[str, int], PartitionReport] = {}

    def report(record: Delivered) -> PartitionReport:
        where = (record.topic, record.partition)
        if where not in reports:
            reports[where] = PartitionReport(record.topic, record.partition)
        return reports[where]

    # What the consumers saw: one record per offset (re-reads are not duplicates).
    by_offset: dict[tuple[str, int, int], Delivered] = {}
    for record in consumed:
        by_offset.setdefault((record.topic, record.partition, record.offset), record)
    offsets_of: dict[tuple, list[int]] = {}
    for (_, _, offset), record in sorted(by_offset.items()):
        report(record).consumed += 1
        offsets_of.setdefault(record.identity, []).append(offset)
    for identity, offsets in offsets_of.items():
        if len(offsets) > 1:
            topic, partition, key, value = identity
            report(Delivered(topic, partition, offsets[0], key, value)).duplicated.extend(
                Delivered(topic, partition, offset, key, value) for offset in offsets[1:])

    # Every acknowledged record, in the order of the offsets it was acknowledged at.
    acks_by_partition: dict[tuple[str, int], list[Delivered]] = {}
    for record in acknowledged:
        report(record).acknowledged += 1
        acks_by_partition.setdefault((record.topic, record.partition), []).append(record)
    for where, acks in acks_by_partition.items():
        partition_report = reports[where]
        highest_read = -1
        for record in sorted(acks, key=lambda r: r.offset):
            found = offsets_of.get(record.identity)
            if not found:
                partition_report.lost.append(record)
                continue
            # A retried send may be stored twice; what counts is the copy it was acked for.
            read_at = record.offset if record.offset in found else found[0]
            if read_at != record.offset or read_at < highest_read:
                partition_report.reordered.append(record)
            highest_read = max(highest_read, read_at)
    return CheckReport(reports)


# ----- replica logs ------------------------------------------------------------------


@dataclass(frozen=True)
class StoredRecord:
    """A record as a replica's data files hold it."""

    offset: int
    leader_epoch: int
    key: bytes | None
    value: bytes | None


def read_partition_dir(directory: Path) -> list[StoredRecord]:
    """Every record in a partition directory's segments, read-only (a torn tail is left out)."""
    stored: list[StoredRecord] = []
    for segment in sorted(Path(directory).glob("*.log")):
        try:
            batches = parse_batches(segment.read_bytes())
        except ProtocolError as exc:
            raise ValueError(f"{segment}: unreadable batch ({exc})") from exc
        for batch in batches:
            epoch = batch.header.partition_leader_epoch
            stored.extend(StoredRecord(r.offset, epoch, r.key, r.value) for r in batch.records)
    return stored


@dataclass
class ReplicaComparison:
    """How the replicas of one partition compare: their log end offsets and first difference."""

    log_end_offsets: dict[int, int]
    first_divergence: int | None
    detail: str = ""

    @property
    def agree(self) -> bool:
        return self.first_divergence is None


def compare_replicas(logs: Mapping[int, list[StoredRecord]]) -> ReplicaComparison:
    """Replicas agree when, up to the shortest one's end, they hold the same records.

    A follower that is behind is fine; a different record (or epoch) at the
    same offset is a diverging log, the failure KIP-101's leader epochs prevent.
    """
    ends = {broker: (records[-1].offset + 1 if records else 0) for broker, records in logs.items()}
    by_offset = {broker: {r.offset: r for r in records} for broker, records in logs.items()}
    common_end = min(ends.values(), default=0)
    brokers = sorted(logs)
    for offset in range(common_end):
        seen = {broker: by_offset[broker].get(offset) for broker in brokers}
        distinct = {(r.leader_epoch, r.key, r.value) if r else None for r in seen.values()}
        if len(distinct) > 1:
            detail = ", ".join(
                f"broker {b}: " + (f"epoch {r.leader_epoch} value {r.value!r}" if r else "missing")
                for b, r in seen.items())
            return ReplicaComparison(ends, offset, f"offset {offset} differs: {detail}")
    return ReplicaComparison(ends, None)


def locate(records: Iterable[Delivered],
           logs: Mapping[int, list[StoredRecord]]) -> dict[Delivered, list[tuple[int, int]]]:
    """Where each record is stored: ``[(broker, offset), ...]`` over the replicas' logs.

    Kafka's test does this with the records it found lost: present on disk
    means the consumer missed it; absent everywhere means the cluster lost it.
    """
    places: dict[tuple[bytes | None, bytes | None], list[tuple[int, int]]] = {}
    for broker, stored in logs.items():
        for record in stored:
            places.setdefault((record.key, record.value), []).append((broker, record.offset))
    return {record: places.get((record.key, record.value), []) for record in records}
