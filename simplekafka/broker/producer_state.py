"""Idempotent produce: per-producer sequence numbers, checked before a batch is appended.

An idempotent producer (InitProducerId gave it a producer id and epoch) numbers
its records; each batch carries the sequence of its first record. The leader
remembers, per producer, the last few batches it appended (Kafka keeps five,
the most a producer may have in flight), and so it can tell:

* a retry of a batch it already has: acknowledge it again with the original
  offset, and do not append it twice;
* the next batch in order: append it;
* a gap (a batch lost in between) or a stale sequence: refuse it with
  OUT_OF_ORDER_SEQUENCE_NUMBER, and the producer will resend in order.

A producer the leader has never heard of (new, or one whose state aged away) may
start at any sequence, as in Kafka since KIP-360; from then on it is checked.

Transactions (KIP-98) add one fact per producer: the first offset of its open
transaction on this partition, set by its first transactional batch and
cleared by the commit or abort marker the coordinator has the leader write.
The oldest of those first offsets is the partition's first unstable offset; a
transaction whose marker is not yet below the high watermark still counts
(Kafka's "unreplicated" transactions), so the last stable offset is::

    LSO = min(high watermark, first offsets of open or unreplicated transactions)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from simplekafka.protocol.batch_header import BatchHeader
from simplekafka.protocol.errors import ErrorCode, error_for
from simplekafka.storage.producer_snapshot import SnapshotEntry

BATCHES_REMEMBERED = 5
SEQUENCE_WRAP = 1 << 31


@dataclass(frozen=True)
class BatchRecord:
    """What the leader remembers about one appended batch of a producer."""

    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


class CompletedTxn(NamedTuple):
    """A transaction a marker just ended on this partition."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class ActiveProducer(NamedTuple):
    """One producer's state on a partition (Kafka's DescribeProducers fields)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction here


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[BatchRecord] = field(default_factory=lambda: deque(maxlen=BATCHES_REMEMBERED))
    coordinator_epoch: int = -1  # of the last marker written for this producer
    last_timestamp: int = -1  # the max timestamp of its last batch (DescribeProducers)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerStateTable:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: list[CompletedTxn] = []  # ended, marker not yet below the HW

    def __len__(self) -> int:
        return len(self._producers)

    def check(self, header: BatchHeader) -> BatchRecord | None:
        """Decide on a batch before it is appended.

        Returns the remembered BatchRecord when the batch is a duplicate (answer
        with its offsets, append nothing), None when it may be appended, and
        raises KafkaError when it must be refused.
        """
        if header.producer_id < 0:
            return None
        if not header.is_transactional and header.producer_id in self.ongoing:
            raise error_for(ErrorCode.INVALID_TXN_STATE,
                            f"producer {header.producer_id} wrote a non-transactional batch "
                            "inside its open transaction")
        if header.base_sequence < 0:
            raise error_for(ErrorCode.INVALID_RECORD, "idempotent batch without a sequence")
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise error_for(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} < {entry.epoch}",
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise error_for(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"new epoch {header.producer_epoch} must start at sequence 0",
                )
            return None
        for batch in entry.batches:
            if (batch.first_sequence == header.base_sequence
                    and batch.last_sequence == header.last_sequence):
                return batch
        expected = (entry.last_sequence + 1) % SEQUENCE_WRAP
        if header.base_sequence != expected:
            raise error_for(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id}: sequence {header.base_sequence}, "
                f"expected {expected}",
            )
        return None

    def record(self, header: BatchHeader, base_offset: int) -> None:
        """Remember a data batch just appended at ``base_offset`` (leader, follower, recovery)."""
        if header.producer_id < 0:
            return
        if header.is_transactional and header.producer_id not in self.ongoing:
            # (the broker's own transactional batches, TxnOffsetCommit's, have no sequence)
            self.ongoing[header.producer_id] = base_offset
        entry = self._entry_at_epoch(header.producer_id, header.producer_epoch)
        entry.last_timestamp = header.max_timestamp
        if header.base_sequence < 0:
            return
        entry.batches.append(BatchRecord(
            header.base_sequence, header.last_sequence,
            base_offset, base_offset + header.last_offset_delta,
        ))

    def _entry_at_epoch(self, producer_id: int, epoch: int) -> ProducerEntry:
        """The producer's entry; a new epoch starts afresh (at sequence 0) but keeps the
        coordinator epoch of the markers seen."""
        entry = self._producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = ProducerEntry(epoch, coordinator_epoch=coordinator_epoch)
            self._producers[producer_id] = entry
        return entry

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer this partition remembers, as DescribeProducers reports them."""
        return [ActiveProducer(producer_id, entry.epoch, entry.last_sequence,
                               entry.last_timestamp, entry.coordinator_epoch,
                               self.ongoing.get(producer_id, -1))
                for producer_id, entry in self._producers.items()]

    # -- snapshots (``<offset>.snapshot``, Kafka's format) ---------------------------------

    def snapshot(self) -> list[SnapshotEntry]:
        """Every producer as a snapshot entry: its epoch, its last batch, its open transaction."""
        entries = []
        for producer_id, entry in self._producers.items():
            last = entry.batches[-1] if entry.batches else None
            entries.append(SnapshotEntry(
                producer_id, entry.epoch,
                last.last_sequence if last else -1, last.last_offset if last else -1,
                last.last_offset - last.base_offset if last else 0, entry.last_timestamp,
                entry.coordinator_epoch, self.ongoing.get(producer_id, -1)))
        return entries

    @classmethod
    def from_snapshot(cls, entries: list[SnapshotEntry]) -> ProducerStateTable:
        """The table a snapshot describes (the last batch of each producer, as Kafka keeps)."""
        table = cls()
        for e in entries:
            entry = ProducerEntry(e.epoch, coordinator_epoch=e.coordinator_epoch,
                                  last_timestamp=e.timestamp)
            if e.last_sequence >= 0:
                entry.batches.append(BatchRecord(
                    (e.last_sequence - e.offset_delta) % SEQUENCE_WRAP, e.last_sequence,
                    e.last_offset - e.offset_delta, e.last_offset))
            table._producers[e.producer_id] = entry
            if e.current_txn_first_offset >= 0:
                table.ongoing[e.producer_id] = e.current_txn_first_offset
        table.ongoing = dict(sorted(table.ongoing.items(), key=lambda item: item[1]))
        return table

    # -- transactions ---------------------------------------------------------------------

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Fence a marker from an older producer epoch or an older coordinator (as Kafka's
        ``appendEndTxnMarker``)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise error_for(ErrorCode.INVALID_PRODUCER_EPOCH,
                            f"marker for producer {producer_id} at epoch {producer_epoch} "
                            f"< {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise error_for(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                            f"marker from coordinator epoch {coordinator_epoch} < "
                            f"{entry.coordinator_epoch}")

    def complete_txn(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                     marker_offset: int, commit: bool, high_watermark: int = -1) -> CompletedTxn:
        """A marker was appended at ``marker_offset``: the producer's transaction ends.

        A marker with no open transaction on this partition (a retried
        WriteTxnMarkers) spans the marker alone, as in Kafka.
        """
        first = self.ongoing.pop(producer_id, marker_offset)
        entry = self._entry_at_epoch(producer_id, producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        completed = CompletedTxn(producer_id, first, marker_offset, not commit)
        if self._unreplicated:  # forget those below the HW (also where nobody asks the LSO)
            self._unreplicated = [t for t in self._unreplicated
                                  if t.last_offset >= high_watermark]
        self._unreplicated.append(completed)
        return completed

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO an aborted transaction's index entry records (Kafka's definition:
        the oldest other open transaction's first offset, else the marker + 1)."""
        others = [first for pid, first in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    @property
    def may_hold_back_lso(self) -> bool:
        """Whether a transaction (open, or ended with its marker not yet below the HW) may
        put the LSO below the HW; without one the LSO is the HW, nothing to compute."""
        return bool(self.ongoing or self._unreplicated)

    def last_stable_offset(self, high_watermark: int) -> int:
        """min(HW, first offsets of open transactions and of ended ones whose marker is not
        yet below the HW)."""
        if self._unreplicated:
            self._unreplicated = [t for t in self._unreplicated
                                  if t.last_offset >= high_watermark]
        lso = high_watermark
        for first in self.ongoing.values():
            if first < lso:
                lso = first
        for txn in self._unreplicated:
            if txn.first_offset < lso:
                lso = txn.first_offset
        return lso

    def clear(self) -> None:
        self._producers.clear()
        self.ongoing.clear()
        self._unreplicated.clear()
