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
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from simplekafka.protocol.batch_header import BatchHeader
from simplekafka.protocol.errors import ErrorCode, error_for

BATCHES_REMEMBERED = 5
SEQUENCE_WRAP = 1 << 31


@dataclass(frozen=True)
class BatchRecord:
    """What the leader remembers about one appended batch of a producer."""

    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[BatchRecord] = field(default_factory=lambda: deque(maxlen=BATCHES_REMEMBERED))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1


class ProducerStateTable:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

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
        """Remember a batch just appended at ``base_offset`` (leader or follower, or recovery)."""
        if header.producer_id < 0 or header.base_sequence < 0:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
            self._producers[header.producer_id] = entry
        entry.batches.append(BatchRecord(
            header.base_sequence, header.last_sequence,
            base_offset, base_offset + header.last_offset_delta,
        ))

    def clear(self) -> None:
        self._producers.clear()
