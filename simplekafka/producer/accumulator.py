"""The record accumulator: records wait here, grouped into batches per partition.

``send()`` appends a record to the open batch of its partition and returns at
once; the sender thread takes batches out when they are full (``batch_size``),
old enough (``linger_ms``), or a flush or close asks for everything. Memory is
bounded: ``buffer_memory`` bytes of records at most, and an append that would
exceed it blocks (back-pressure) up to ``max_block_ms``, then fails with
``BufferExhaustedError``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from simplekafka.client.errors import BufferExhaustedError
from simplekafka.producer.futures import BatchResult, RecordFuture
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import TopicPartition

_sleep = time.sleep
_new_future = object.__new__  # a RecordFuture without a Python-level __init__ call

RECORD_OVERHEAD = 21  # worst-case varint framing of one record in a batch
BATCH_OVERHEAD = 61


def estimate_size(key: bytes | None, value: bytes | None, headers: list | None) -> int:
    """Upper bound on the bytes a record takes in an uncompressed batch."""
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for hkey, hvalue in headers:
            size += 10 + len(hkey.encode()) + (len(hvalue) if hvalue else 0)
    return size


@dataclass(eq=False, slots=True)
class ProducerBatch:
    """Records for one partition that travel in one RecordBatch."""

    tp: TopicPartition
    created: float
    deadline: float
    records: list[Record] = field(default_factory=list)
    size: int = BATCH_OVERHEAD
    result: BatchResult = field(default_factory=BatchResult)
    attempts: int = 0
    retry_at: float = 0.0
    base_sequence: int = -1
    encoded: bytes | None = None
    closed: bool = False

    @property
    def is_retry(self) -> bool:
        return self.attempts > 0


class RecordAccumulator:
    """Per-partition queues of batches, with memory accounting (thread-safe)."""

    def __init__(
        self,
        batch_size: int = 16_384,
        linger_ms: float = 5,
        buffer_memory: int = 32 * 1024 * 1024,
        delivery_timeout_ms: int = 120_000,
    ) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout_ms / 1000
        self._lock = threading.Lock()  # never held while user code runs
        self.condition = threading.Condition(self._lock)
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        # The newest batch of each partition (the one appends go to, unless closed).
        self._open: dict[TopicPartition, ProducerBatch] = {}
        self._used = 0
        self._incomplete: set[ProducerBatch] = set()
        self._flushing = 0
        self.closed = False

    # ----- producer side ---------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        record: Record,
        size: int,
        max_block: float,
    ) -> RecordFuture:
        """Add ``record`` (about ``size`` bytes) to its partition's open batch.

        Blocks while the buffer is full, up to ``max_block`` seconds. This is the
        producer's hot path: one lock, no calls it can avoid.
        """
        with self._lock:
            used = self._used + size
            if used > self.buffer_memory and self._used > 0:
                self._wait_for_memory(size, max_block)
                used = self._used + size
            batch = self._open.get(tp)
            if batch is None or batch.closed or (
                batch.size + size > self.batch_size and batch.records
            ):
                handed_over = batch is not None and not batch.closed
                batch = self._new_batch(tp, batch)
            else:
                handed_over = False
            records = batch.records
            records.append(record)
            batch.size += size
            self._used = used
            if batch.size >= self.batch_size:
                batch.closed = True
                handed_over = True
                self.condition.notify_all()
            future = _new_future(RecordFuture)
            future._batch = batch
            future._index = len(records) - 1
        if handed_over:
            # A full batch is waiting for the sender thread. A caller in a tight send()
            # loop would otherwise keep the GIL for a whole switch interval (5 ms);
            # yielding here lets the sender (and the I/O thread) take it now.
            _sleep(0)
        return future

    def _wait_for_memory(self, size: int, max_block: float) -> None:
        deadline = time.monotonic() + max_block
        while self._used + size > self.buffer_memory and self._used > 0:
            left = deadline - time.monotonic()
            if left <= 0 or self.closed:
                raise BufferExhaustedError(
                    f"producer buffer ({self.buffer_memory} bytes) stayed full for "
                    f"{max_block * 1000:.0f} ms: the broker is slower than the producer"
                )
            self.condition.wait(left)

    def _new_batch(self, tp: TopicPartition, previous: ProducerBatch | None) -> ProducerBatch:
        if previous is not None and not previous.closed:
            previous.closed = True
            self.condition.notify_all()
        now = time.monotonic()
        batch = ProducerBatch(tp, now, now + self.delivery_timeout)
        self._queues.setdefault(tp, deque()).append(batch)
        self._open[tp] = batch
        self._incomplete.add(batch)
        return batch

    # ----- sender side (call with the condition held) ---------------------------

    def ready_partitions(self, now: float) -> tuple[list[TopicPartition], float]:
        """Partitions whose head batch may go now, and seconds until the next may."""
        ready = []
        wait = 3600.0
        flushing = self._flushing > 0 or self.closed
        for tp, queue in self._queues.items():
            if not queue:
                continue
            head = queue[0]
            if head.is_retry:
                due = head.retry_at
            elif head.closed or len(queue) > 1 or flushing:
                due = now
            else:
                due = head.created + self.linger
            if due <= now:
                ready.append(tp)
            else:
                wait = min(wait, due - now)
        return ready, wait

    def head(self, tp: TopicPartition) -> ProducerBatch | None:
        queue = self._queues.get(tp)
        return queue[0] if queue else None

    def pop(self, tp: TopicPartition) -> ProducerBatch:
        batch = self._queues[tp].popleft()
        batch.closed = True
        return batch

    def requeue(self, batch: ProducerBatch, backoff: float) -> None:
        """Put a failed batch back, ahead of newer ones, in sequence order."""
        batch.retry_at = time.monotonic() + backoff
        queue = self._queues.setdefault(batch.tp, deque())
        index = 0
        while (
            index < len(queue)
            and queue[index].is_retry
            and 0 <= queue[index].base_sequence < batch.base_sequence
        ):
            index += 1
        queue.insert(index, batch)
        self.condition.notify_all()

    def complete(self, batch: ProducerBatch) -> None:
        """The batch is finished (acknowledged or failed): free its memory."""
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self._used -= batch.size - BATCH_OVERHEAD
            self.condition.notify_all()

    def expired(self, now: float) -> list[ProducerBatch]:
        """Queued batches past their delivery deadline (removed from the queues)."""
        gone = []
        for queue in self._queues.values():
            while queue and queue[0].deadline <= now:
                batch = queue.popleft()
                batch.closed = True  # no append may land in it any more
                gone.append(batch)
        return gone

    def drain_all(self) -> list[ProducerBatch]:
        """Every queued batch (for an abort on close)."""
        batches = [b for queue in self._queues.values() for b in queue]
        for queue in self._queues.values():
            queue.clear()
        for batch in batches:
            batch.closed = True
        self._open.clear()
        return batches

    # ----- flush -----------------------------------------------------------------

    def incomplete(self) -> list[ProducerBatch]:
        with self.condition:
            return list(self._incomplete)

    def begin_flush(self) -> None:
        with self.condition:
            self._flushing += 1
            self.condition.notify_all()

    def end_flush(self) -> None:
        with self.condition:
            self._flushing -= 1

    @property
    def used_bytes(self) -> int:
        return self._used

    def has_unsent(self) -> bool:
        return any(self._queues.values())
