"""What ``Producer.send`` returns: a future for one record, resolved with its batch.

One ``concurrent.futures.Future`` per record costs a lock and a condition each;
at hundreds of thousands of records a second that is most of the budget. So
the batch carries the one event, and each record's future is a small view on
it (its index in the batch). The interface is the familiar one: ``result()``
(alias ``get()``), ``done()``, ``exception()``, ``add_done_callback()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from simplekafka.client.errors import KafkaTimeoutError

if TYPE_CHECKING:  # the batch module imports this one
    from simplekafka.producer.accumulator import ProducerBatch


class RecordMetadata(NamedTuple):
    """Where an acknowledged record landed (offset -1 when acks=0 gives no answer)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1


class BatchResult:
    """The outcome shared by every record of one batch, set once by the sender."""

    __slots__ = ("_callbacks", "_event", "_lock", "base_offset", "error", "log_append_time")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[tuple[RecordFuture, Callable[[RecordFuture], object]]] = []
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._event.wait(timeout)

    def complete(
        self, base_offset: int, log_append_time: int = -1, error: BaseException | None = None
    ) -> None:
        """Resolve every record future of the batch and run their callbacks."""
        with self._lock:
            if self._event.is_set():
                return
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for future, callback in callbacks:
            _call_safely(callback, future)

    def add_callback(self, future: RecordFuture,
                     callback: Callable[[RecordFuture], object]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append((future, callback))
                return
        _call_safely(callback, future)


def _call_safely(callback: Callable[[RecordFuture], object], future: RecordFuture) -> None:
    try:
        callback(future)
    except Exception:  # a user callback must not kill the sender thread
        import logging

        logging.getLogger(__name__).exception("producer callback raised")


class RecordFuture:
    """The future of one sent record (concurrent.futures-like).

    ``batch`` is the producer batch holding the record (it has ``result``, a
    ``BatchResult``, ``tp`` and ``records``); the record is ``batch.records[index]``.
    """

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: ProducerBatch, index: int) -> None:
        self._batch = batch
        self._index = index

    @property
    def topic(self) -> str:
        return self._batch.tp.topic

    @property
    def partition(self) -> int:
        return self._batch.tp.partition

    def done(self) -> bool:
        return self._batch.result.done

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Block until acknowledged; raise the batch's error (a ``KafkaError``) if it failed."""
        outcome = self._batch.result
        if not outcome.wait(timeout):
            raise KafkaTimeoutError(f"record not acknowledged within {timeout} s")
        if outcome.error is not None:
            raise outcome.error
        base = outcome.base_offset
        offset = base + self._index if base >= 0 else -1
        record = self._batch.records[self._index]
        timestamp = outcome.log_append_time
        if timestamp < 0:  # the producer stamps every record (so never -1 here)
            timestamp = record.timestamp if record.timestamp is not None else -1
        tp = self._batch.tp
        return RecordMetadata(
            tp.topic,
            tp.partition,
            offset,
            timestamp,
            len(record.key) if record.key is not None else -1,
            len(record.value) if record.value is not None else -1,
        )

    get = result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        outcome = self._batch.result
        if not outcome.wait(timeout):
            raise KafkaTimeoutError(f"record not acknowledged within {timeout} s")
        return outcome.error

    def add_done_callback(self, callback: Callable[[RecordFuture], object]) -> None:
        """Run ``callback(future)`` when done (on the producer's sender thread)."""
        self._batch.result.add_callback(self, callback)

    def __repr__(self) -> str:
        outcome = self._batch.result
        state = "pending" if not outcome.done else ("failed" if outcome.error else "done")
        return f"<RecordFuture {self.topic}-{self.partition} {state}>"
