"""murmur2 partitioning must agree with the Java client, and stickiness must behave."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from simplekafka.producer.partitioner import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    murmur2,
    partition_for_key,
)

# Kafka's own test vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_the_java_clients_test_vectors():
    for key, expected in JAVA_VECTORS.items():
        assert murmur2(key) == expected, key


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python_on_any_key(key):
    assert murmur2(key) & 0x7FFFFFFF == kafka_python_murmur2(key) & 0x7FFFFFFF


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.integers(min_value=1, max_value=64))
def test_keyed_partition_is_what_kafka_pythons_default_partitioner_picks(key, count):
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % count
    assert partition_for_key(key, count) == expected
    assert DefaultPartitioner()("t", key, list(range(count))) == expected


def test_known_keys_land_where_the_java_client_puts_them():
    # (murmur2 & 0x7fffffff) % n, computed from the Java vectors above.
    assert partition_for_key(b"foobar", 3) == (-790332482 & 0x7FFFFFFF) % 3
    assert partition_for_key(b"21", 10) == (-973932308 & 0x7FFFFFFF) % 10


def test_null_keys_stick_to_one_partition_until_its_batch_is_sent():
    partitioner = DefaultPartitioner(random.Random(7))
    partitions = list(range(6))
    first = {partitioner("t", None, partitions) for _ in range(100)}
    assert len(first) == 1
    (sticky,) = first
    partitioner.on_new_batch("t", sticky, partitions)
    assert partitioner("t", None, partitions) != sticky


def test_sticky_choices_spread_over_partitions_in_the_long_run():
    partitioner = DefaultPartitioner(random.Random(1))
    partitions = list(range(4))
    seen = set()
    for _ in range(50):
        chosen = partitioner("t", None, partitions)
        seen.add(chosen)
        partitioner.on_new_batch("t", chosen, partitions)
    assert seen == set(partitions)


def test_round_robin_cycles():
    rr = RoundRobinPartitioner()
    assert [rr("t", b"k", [0, 1, 2]) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
