"""``Producer``: send records to topics, batched, compressed, retried, in the background.

``send()`` serializes the key and value, picks a partition, appends the record
to the accumulator and returns a future at once; the sender thread does the
network work. ``flush()`` waits for everything sent so far; ``close()`` flushes
and stops. Configuration names follow Kafka's (``acks``, ``linger_ms``,
``batch_size``, ``compression_type``, ``enable_idempotence``, ...).

With a ``transactional_id`` the producer is transactional (KIP-98, the
methods of Kafka's producer): ``init_transactions()`` once, then
``begin_transaction()``, sends, maybe ``send_offsets_to_transaction()``, and
``commit_transaction()`` or ``abort_transaction()``; the state and the errors
are ``producer.transactions``'.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import (
    ClientClosedError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from simplekafka.client.metadata import ClusterSnapshot
from simplekafka.producer.accumulator import (
    BATCH_OVERHEAD,
    RECORD_OVERHEAD,
    RecordAccumulator,
    estimate_size,
)
from simplekafka.producer.futures import RecordFuture
from simplekafka.producer.partitioner import DefaultPartitioner
from simplekafka.producer.sender import Sender
from simplekafka.producer.transactions import (
    TransactionAbortedError,
    TransactionManager,
    TransactionStateError,
    timeout_ms_of,
)
from simplekafka.protocol.compression import Compression
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import OffsetAndMetadata, TopicPartition

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_new_record = tuple.__new__
_time_ns = time.time_ns
_NO_HEADERS: list[tuple[str, bytes | None]] = []  # shared, never appended to
# A serializer takes the application's own keys and values, of whatever type it chose (as
# kafka-python's): Any, so that a serializer of dicts or of str is one.
Serializer = Callable[[Any], bytes | None]
Offset = int | OffsetAndMetadata  # what send_offsets_to_transaction commits
Partitioner = Callable[[str, bytes | None, Sequence[int]], int]


def _parse_acks(acks: int | str) -> int:
    if acks in ("all", -1, "-1"):
        return -1
    if acks in (0, 1, "0", "1"):
        return int(acks)
    raise ValueError(f"acks must be 0, 1 or 'all', not {acks!r}")


def _to_bytes(data: object, serializer: Serializer | None, what: str) -> bytes | None:
    if serializer is not None:
        try:
            data = serializer(data)
        except Exception as exc:
            raise SerializationError(f"{what} serializer failed: {exc}") from exc
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise SerializationError(
        f"{what} must be bytes (or None), not {type(data).__name__}; "
        f"pass {what}_serializer=... to convert it (e.g. str.encode)"
    )


class Producer:
    """A thread-safe Kafka producer (one background sender thread, one I/O thread)."""

    transactions: TransactionManager | None = None  # with a transactional_id

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str] = "localhost:9092",
        *,
        client_id: str = "simplekafka-producer",
        acks: int | str | None = None,
        linger_ms: float = 5,
        batch_size: int = 16_384,
        compression_type: str | int | None = None,
        enable_idempotence: bool = False,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        retries: int = 2**31 - 1,
        retry_backoff_ms: int = 100,
        max_in_flight: int = 5,
        buffer_memory: int = 32 * 1024 * 1024,
        max_block_ms: int = 60_000,
        max_request_size: int = 1024 * 1024,
        request_timeout_ms: int = 30_000,
        delivery_timeout_ms: int = 120_000,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        partitioner: Partitioner | None = None,
        client: KafkaClient | None = None,
    ) -> None:
        self.acks = _parse_acks(1 if acks is None else acks)
        if transactional_id is not None:  # transactions need idempotence and acks=all
            if acks is not None and self.acks != -1:
                raise ValueError("a transactional producer needs acks='all'")
            enable_idempotence = True
            self.acks = -1
        if enable_idempotence:
            if self.acks != -1:
                raise ValueError("enable_idempotence needs acks='all'")
            max_in_flight = min(max_in_flight, 5)
        if batch_size <= 0 or buffer_memory <= 0 or max_request_size <= 0:
            raise ValueError("batch_size, buffer_memory and max_request_size must be positive")
        self.compression = Compression.of(compression_type or 0)
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.partitioner = partitioner or DefaultPartitioner()
        self.max_block = max_block_ms / 1000
        self.max_request_size = max_request_size
        self._owns_client = client is None
        self.client = client or KafkaClient(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            max_in_flight=max_in_flight,
        )
        self.accumulator = RecordAccumulator(
            batch_size, linger_ms, buffer_memory, delivery_timeout_ms
        )
        self.transactions = None if transactional_id is None else TransactionManager(
            self.client, transactional_id, transaction_timeout_ms, request_timeout_ms)
        self._request_timeout_ms = request_timeout_ms
        self._sender = Sender(
            self.client,
            self.accumulator,
            acks=self.acks,
            compression=int(self.compression),
            retries=retries,
            retry_backoff_ms=retry_backoff_ms,
            request_timeout_ms=request_timeout_ms,
            max_in_flight=max_in_flight,
            max_request_size=max_request_size,
            idempotent=enable_idempotence,
            on_new_batch=self._batch_closed,
            transactions=self.transactions,
        )
        self._partitions: dict[str, list[int]] = {}
        self._metadata = self.client.metadata  # replaced in place, never swapped
        self._append = self.accumulator.append
        self._tps: dict[tuple[str, int], TopicPartition] = {}
        self._size_limit = min(max_request_size, buffer_memory + BATCH_OVERHEAD)
        self._snapshot: ClusterSnapshot | None = None
        self._closed = False
        self._sender.start()

    # ----- sending ---------------------------------------------------------------

    def send(
        self,
        topic: str,
        value: object = None,
        key: object = None,
        headers: Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordFuture:
        """Queue one record; the future resolves to its ``RecordMetadata`` once acknowledged.

        Raises at once (not through the future) for mistakes on this side: a
        value that is not bytes, a record over ``max_request_size``, a topic
        or partition that does not exist (after waiting ``max_block_ms`` for
        metadata), a closed producer.
        """
        if self._closed:
            raise ClientClosedError("send() on a closed producer")
        # The common case (bytes or None, no serializer) stays on a short path.
        if self.key_serializer is None and (key is None or type(key) is bytes):
            key_bytes = key
        else:
            key_bytes = _to_bytes(key, self.key_serializer, "key")
        if self.value_serializer is None and (value is None or type(value) is bytes):
            value_bytes = value
        else:
            value_bytes = _to_bytes(value, self.value_serializer, "value")
        if headers:
            header_list = _headers(headers)
            size = estimate_size(key_bytes, value_bytes, header_list)
        else:
            header_list = _NO_HEADERS
            size = RECORD_OVERHEAD + (len(key_bytes) if key_bytes else 0) + (
                len(value_bytes) if value_bytes else 0
            )
        if size + BATCH_OVERHEAD > self._size_limit:
            limit = min(self.max_request_size, self.accumulator.buffer_memory)
            raise MessageTooLargeError(
                f"record of about {size + BATCH_OVERHEAD} bytes is larger than the limit of "
                f"{limit} bytes (max_request_size / buffer_memory)"
            )
        partitions = self._partitions.get(topic)
        if partitions is None or self._snapshot is not self._metadata.snapshot:
            partitions = self._partitions_of(topic)
        if partition is None:
            partitioner = self.partitioner
            if key_bytes is None and type(partitioner) is DefaultPartitioner:
                # The default partitioner's sticky partition, read without a call (the
                # common case); a topic it has not seen yet, or whose partitions changed,
                # goes through the call.
                partition = partitioner._sticky.get(topic)
                if partition is None or partition not in partitions:
                    partition = partitioner(topic, None, partitions)
            else:
                partition = partitioner(topic, key_bytes, partitions)
        elif partition not in partitions:
            if type(partition) is not int or partition < 0:
                raise ValueError(f"partition must be a non-negative int, not {partition!r}")
            partitions = self._wait_for_partition(topic, partition)
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
        elif type(timestamp) is not int or timestamp < 0:
            raise ValueError(f"timestamp must be milliseconds as a non-negative int: {timestamp!r}")
        tp = self._tps.get((topic, partition))
        if tp is None:
            tp = self._tps[(topic, partition)] = TopicPartition(topic, partition)
        if self.transactions is not None:
            self.transactions.check_can_send()
            self.transactions.maybe_add(tp)
        return self._append(
            tp,
            _new_record(Record, (0, timestamp, key_bytes, value_bytes, header_list)),
            size,
            self.max_block,
        )

    def _partitions_of(self, topic: str) -> list[int]:
        if not isinstance(topic, str) or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise InvalidTopicError(
                f"{topic!r} is not a legal topic name (1-249 of a-z A-Z 0-9 . _ -)"
            )
        if self._closed:
            raise ClientClosedError("send() on a closed producer")
        snapshot = self.client.metadata.snapshot
        partitions = self.client.metadata.partitions_for(topic)
        if partitions is None or self.client.metadata.needs_update():
            partitions = self.client.partitions_for(topic, int(self.max_block * 1000))
            snapshot = self.client.metadata.snapshot
        if self._snapshot is not snapshot:
            self._partitions.clear()
            self._snapshot = snapshot
        self._partitions[topic] = partitions
        return partitions

    def _wait_for_partition(self, topic: str, partition: int) -> list[int]:
        """Our metadata may be stale (topic recreated bigger): refresh until ``max_block``."""
        deadline = time.monotonic() + self.max_block
        while True:
            self.client.metadata.request_update()
            partitions = self._partitions_of(topic)
            if partition in partitions:
                return partitions
            if time.monotonic() >= deadline:
                raise UnknownTopicOrPartitionError(
                    f"topic {topic!r} has partitions {partitions[0]}..{partitions[-1]}, "
                    f"not {partition}"
                )
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def _batch_closed(self, tp: TopicPartition) -> None:
        on_new_batch = getattr(self.partitioner, "on_new_batch", None)
        if on_new_batch is not None:
            on_new_batch(tp.topic, tp.partition, self._partitions.get(tp.topic, [tp.partition]))

    def partitions_for(self, topic: str) -> list[int]:
        """The partition numbers of ``topic`` (waits up to ``max_block_ms`` for metadata)."""
        return list(self._partitions_of(topic))

    # ----- transactions -----------------------------------------------------------

    def _txn(self) -> TransactionManager:
        if self.transactions is None:
            raise TransactionStateError("this producer has no transactional_id")
        if self._closed:
            raise ClientClosedError("the producer is closed")
        return self.transactions

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get this transactional id's producer id and a new epoch (fencing older producers
        with the same id, and aborting what they left open). Call once, first."""
        txn = self._txn()
        timeout_ms = timeout_ms_of(timeout, self._request_timeout_ms * 2)
        producer_id, epoch = txn.init(timeout_ms)
        self._sender.producer_id, self._sender.producer_epoch = producer_id, epoch

    def begin_transaction(self) -> None:
        """Start a transaction: what is sent from now on commits or aborts together."""
        self._txn().begin()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Offset]
                                    | Mapping[tuple[str, int], Offset],
                                    group_metadata_or_group_id: object,
                                    timeout: float | None = None) -> None:
        """Commit a consumer group's offsets as part of this transaction (read-process-write).

        ``offsets`` maps partitions (``TopicPartition`` or ``(topic, partition)``) to the
        next offset to read (an int, or an ``OffsetAndMetadata``); the group is its id or
        anything with a ``group_id``. They become the group's committed offsets only if the
        transaction commits.
        """
        txn = self._txn()
        group_id = getattr(group_metadata_or_group_id, "group_id", group_metadata_or_group_id)
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"a group id (or group metadata) is needed, not "
                             f"{group_metadata_or_group_id!r}")
        wanted = {}
        for tp, offset in offsets.items():
            offset = getattr(offset, "offset", offset)
            if not isinstance(offset, int) or offset < 0:
                raise ValueError(f"offset for {tp} must be a non-negative int, not {offset!r}")
            wanted[TopicPartition(*tp)] = offset
        txn.send_offsets(wanted, group_id, timeout_ms_of(timeout, self._request_timeout_ms))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. Raises the transaction's error if any send failed: then
        only ``abort_transaction()`` may follow."""
        txn = self._txn()
        txn.check_can_send()
        self.flush(timeout)
        txn.check_can_send()  # a batch failed while flushing: abortable
        txn.end(True, timeout_ms_of(timeout, self._request_timeout_ms))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop what is not sent yet, wait for what is in flight, then abort."""
        txn = self._txn()
        txn.check_can_abort()
        self._sender.abort_unsent(TransactionAbortedError("the transaction was aborted"))
        try:
            self.flush(timeout)
        except KafkaError:
            pass
        txn.end(False, timeout_ms_of(timeout, self._request_timeout_ms))

    # ----- flushing and closing -------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each is acknowledged or failed.

        Raises ``KafkaTimeoutError`` if that takes longer than ``timeout`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self.accumulator.begin_flush()
        try:
            for batch in self.accumulator.incomplete():
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not batch.result.wait(left):
                    raise KafkaTimeoutError(f"flush() did not finish within {timeout} s")
        finally:
            self.accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout`` seconds), then stop the threads; unsent records fail."""
        if self._closed:
            return
        self._closed = True
        try:
            self.flush(timeout)
        except KafkaError:
            pass
        self._sender.initiate_close(force=True)
        self._sender.join(5)
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def producer_id(self) -> int:
        """The id InitProducerId gave (idempotence), -1 otherwise or before the first send."""
        return self._sender.producer_id


def _headers(
    headers: Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None] | None,
) -> list[tuple[str, bytes | None]]:
    if not headers:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    result = []
    for item in items:
        try:
            hkey, hvalue = item
        except (TypeError, ValueError):
            raise SerializationError(f"a header must be a (key, value) pair: {item!r}") from None
        if not isinstance(hkey, str):
            raise SerializationError(f"header keys must be str, not {type(hkey).__name__}")
        if isinstance(hvalue, str):
            hvalue = hvalue.encode()
        elif hvalue is not None and not isinstance(hvalue, bytes):
            if isinstance(hvalue, (bytearray, memoryview)):
                hvalue = bytes(hvalue)
            else:
                raise SerializationError(
                    f"header {hkey!r} value must be bytes or None, not {type(hvalue).__name__}"
                )
        result.append((hkey, hvalue))
    return result
