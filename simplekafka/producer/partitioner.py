"""Choosing a partition: explicit, by key hash (murmur2, as the Java client), or sticky.

The key hash must match the Java client bit for bit, so that the same key lands
in the same partition whichever client produced it: that is what keeps a key's
records in order across a mixed fleet. ``murmur2`` is Kafka's
``Utils.murmur2`` (seed 0x9747b28c, little-endian 4-byte words), and the
partition is ``(murmur2(key) & 0x7fffffff) % partitions``.

Records without a key go to a "sticky" partition that changes only when a batch
for it is sent (the Java client's KIP-480): full batches without spreading
single records over every partition.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 of ``data``, as a signed int (like Java's)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    left = length & 3
    if left == 3:
        h ^= data[whole + 2] << 16
    if left >= 2:
        h ^= data[whole + 1] << 8
    if left >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (not abs())."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, partition_count: int) -> int:
    """The partition the Java client's default partitioner picks for ``key``."""
    return to_positive(murmur2(key)) % partition_count


class DefaultPartitioner:
    """murmur2 for keyed records, a sticky partition for records without a key.

    Call it as ``partitioner(topic, key_bytes, partitions)``; the producer calls
    ``on_new_batch(topic, partition)`` when the sticky partition's batch is sent.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky: dict[str, int] = {}
        self._lock = threading.Lock()
        self._rng = rng or random.Random()

    def __call__(self, topic: str, key: bytes | None, partitions: Sequence[int]) -> int:
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        sticky = self._sticky.get(topic)
        if sticky is None or sticky not in partitions:
            with self._lock:
                sticky = self._rng.choice(list(partitions))
                self._sticky[topic] = sticky
        return sticky

    def on_new_batch(self, topic: str, partition: int, partitions: Sequence[int]) -> None:
        """The sticky batch for ``topic`` was closed: move on to another partition."""
        with self._lock:
            if self._sticky.get(topic) != partition:
                return
            others = [p for p in partitions if p != partition]
            self._sticky[topic] = self._rng.choice(others) if others else partition


class RoundRobinPartitioner:
    """Every record to the next partition in turn, key or not."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, topic: str, key: bytes | None, partitions: Sequence[int]) -> int:
        with self._lock:
            index = self._next.get(topic, 0)
            self._next[topic] = index + 1
        return partitions[index % len(partitions)]
