"""Adding partitions in ZooKeeper (``coordination.partitions``), against a REAL ZooKeeper."""

from __future__ import annotations

import pytest

from simplekafka.coordination import (
    BrokerRegistration,
    TopicError,
    create_topic,
    ensure_kafka_paths,
    read_topic_assignment,
)
from simplekafka.coordination.partitions import add_partitions
from simplekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration


@pytest.fixture
def racked(zk):
    """Four brokers in two racks."""
    ensure_kafka_paths(zk)
    registrations = [BrokerRegistration(zk, b, "127.0.0.1", 9090 + b, rack=f"rack-{b % 2}")
                     for b in (1, 2, 3, 4)]
    for registration in registrations:
        registration.register()
    return registrations


def test_new_partitions_extend_the_assignment_rack_aware(zk, racked):
    before = create_topic(zk, "grow", partitions=2, replication_factor=2)
    grown = add_partitions(zk, "grow", 6)
    assert read_topic_assignment(zk, "grow") == grown
    assert sorted(grown.partitions) == list(range(6))
    for p in (0, 1):  # existing partitions are untouched
        assert grown.partitions[p] == before.partitions[p]
    for p in range(2, 6):
        replicas = grown.partitions[p]
        assert len(set(replicas)) == 2 and set(replicas) <= {1, 2, 3, 4}
        assert len({r % 2 for r in replicas}) == 2, f"partition {p} in one rack: {replicas}"
    assert len({grown.partitions[p][0] for p in range(2, 6)}) == 4  # leaders spread


def test_explicit_assignment_and_refusals_write_nothing(zk, racked):
    create_topic(zk, "manual-grow", partitions=1, replication_factor=2)
    grown = add_partitions(zk, "manual-grow", 3, [[3, 4], [4, 1]])
    assert grown.partitions[1] == (3, 4) and grown.partitions[2] == (4, 1)
    for args, code in [
        (("manual-grow", 3), ErrorCode.INVALID_PARTITIONS),
        (("manual-grow", 2), ErrorCode.INVALID_PARTITIONS),
        (("manual-grow", 4, [[1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (("manual-grow", 4, [[1, 9]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (("manual-grow", 5, [[1, 2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (("no-such-topic", 5), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]:
        with pytest.raises(TopicError) as raised:
            add_partitions(zk, *args)
        assert raised.value.error_code == code, args
    assert read_topic_assignment(zk, "manual-grow") == grown
    assert add_partitions(zk, "manual-grow", 9, validate_only=True).partitions.keys() == set(
        range(9))
    assert read_topic_assignment(zk, "manual-grow") == grown
