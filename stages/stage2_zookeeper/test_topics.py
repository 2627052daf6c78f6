"""Topic creation against a REAL ZooKeeper: what is written, and that bad input writes nothing."""

from __future__ import annotations

import pytest

from simplekafka.coordination import (
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    TopicConfig,
    TopicError,
    ZkPaths,
    create_topic,
    create_topic_znodes,
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    ensure_kafka_paths,
    format_tree,
    live_brokers,
    read_topic_assignment,
    validate_topic_name,
)
from simplekafka.protocol.errors import ErrorCode


@pytest.mark.parametrize("name", ["a", "orders", "Orders.v2", "__consumer_offsets", "a-b_c.d",
                                  "x" * 249, "..."])
def test_legal_topic_names(name):
    assert validate_topic_name(name) == name


@pytest.mark.parametrize(("name", "message"), [
    ("", "empty"), (".", "cannot be '.'"), ("..", "cannot be '..'"),
    ("x" * 250, "250 characters long"), ("a b", "contains ' '"), ("a/b", "contains '/'"),
    ("ümlaut", "contains 'ü'"), (None, "must be a string"), (42, "must be a string"),
])
def test_illegal_topic_names(name, message):
    with pytest.raises(TopicError, match=message) as caught:
        validate_topic_name(name)
    assert caught.value.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION


def test_leader_election_rules_for_new_and_offline_partitions():
    new = elect_leader_for_new_partition((3, 1, 2), live={1, 2}, controller_epoch=4)
    assert new == PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=4)
    assert elect_leader_for_new_partition((3,), live={1}, controller_epoch=4) is None
    current = PartitionState(leader=3, leader_epoch=5, isr=(3, 1), controller_epoch=4)
    moved = elect_leader_for_offline_partition((3, 1, 2), current, live={1, 2},
                                               controller_epoch=6)
    assert moved == PartitionState(leader=1, leader_epoch=6, isr=(1,), controller_epoch=6)
    # The last ISR member gone: no leader, and the ISR is kept (never emptied).
    alone = PartitionState(leader=3, leader_epoch=5, isr=(3,), controller_epoch=4)
    offline = elect_leader_for_offline_partition((3, 1), alone, live={1}, controller_epoch=6)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (-1, (3,), 6)
    unclean = elect_leader_for_offline_partition((3, 1), alone, {1}, 6, unclean=True)
    assert (unclean.leader, unclean.isr) == (1, (1,))
    assert elect_leader_for_offline_partition((1, 2), moved, {1, 2}, 7) == moved  # no change


@pytest.fixture
def three_racked_brokers(zk):
    ensure_kafka_paths(zk)
    registrations = [BrokerRegistration(zk, b, "127.0.0.1", 9090 + b, rack=f"rack-{b}")
                     for b in (1, 2, 3)]
    for registration in registrations:
        registration.register()
    return registrations


@pytest.mark.integration
def test_create_topic_writes_config_and_a_rack_aware_assignment(zk, three_racked_brokers):
    assignment = create_topic(zk, "orders", partitions=6, replication_factor=3,
                              config={"min.insync.replicas": "2"})
    assert read_topic_assignment(zk, "orders") == assignment
    assert sorted(assignment.partitions) == list(range(6))
    for replicas in assignment.partitions.values():
        assert sorted(replicas) == [1, 2, 3]
    assert sorted(r[0] for r in assignment.partitions.values()) == [1, 1, 2, 2, 3, 3]
    config = TopicConfig.from_json(zk.get(ZkPaths.topic_config("orders"))[0])
    assert config.config == {"min.insync.replicas": "2"}
    # The config znode was created before (or with) the assignment, never after.
    assert (zk.exists(ZkPaths.topic_config("orders")).czxid
            <= zk.exists(ZkPaths.topic("orders")).czxid)
    assert sorted(live_brokers(zk)) == [1, 2, 3]


@pytest.mark.integration
def test_create_topic_with_an_explicit_assignment(zk, three_racked_brokers):
    create_topic(zk, "manual", 0, 0, replica_assignment={0: [3, 1], 1: [1, 2]})
    assignment = read_topic_assignment(zk, "manual")
    assert assignment.partitions == TopicAssignment({0: (3, 1), 1: (1, 2)}).partitions
    assert assignment.topic_id is not None  # created with its ID (KIP-516)


@pytest.mark.integration
@pytest.mark.parametrize(("kwargs", "code", "message"), [
    ({"topic": "bad name!"}, ErrorCode.INVALID_TOPIC_EXCEPTION, "contains"),
    ({"topic": "x" * 250}, ErrorCode.INVALID_TOPIC_EXCEPTION, "limit is 249"),
    ({"topic": ".."}, ErrorCode.INVALID_TOPIC_EXCEPTION, "cannot be"),
    ({"partitions": 0}, ErrorCode.INVALID_PARTITIONS, "at least 1"),
    ({"partitions": -3}, ErrorCode.INVALID_PARTITIONS, "at least 1"),
    ({"replication_factor": 4}, ErrorCode.INVALID_REPLICATION_FACTOR, "live brokers \\(3\\)"),
    ({"replication_factor": 0}, ErrorCode.INVALID_REPLICATION_FACTOR, "at least 1"),
    ({"replica_assignment": {0: [1, 1]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "twice"),
    ({"replica_assignment": {0: [1, 9]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "unknown"),
    ({"replica_assignment": {1: [1]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "numbered"),
    ({"replica_assignment": {0: [1], 1: [1, 2]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "same"),
    ({"replica_assignment": {}}, ErrorCode.INVALID_PARTITIONS, "at least one"),
    ({"topic": "existing"}, ErrorCode.TOPIC_ALREADY_EXISTS, "already exists"),
    ({"topic": "exist.ing"}, ErrorCode.INVALID_TOPIC_EXCEPTION, "collides"),
])
def test_bad_requests_get_a_clear_error_and_write_nothing(zk, three_racked_brokers, kwargs,
                                                          code, message):
    create_topic(zk, "exist_ing", 1, 1)
    create_topic(zk, "existing", 1, 1)
    before = format_tree(zk)
    request = {"topic": "fresh", "partitions": 3, "replication_factor": 2, **kwargs}
    with pytest.raises(TopicError, match=message) as caught:
        create_topic(zk, **request)
    assert caught.value.error_code is code
    assert format_tree(zk) == before


@pytest.mark.integration
def test_replication_factor_above_live_brokers_counts_only_live_ones(zk, three_racked_brokers):
    three_racked_brokers[2].deregister()
    before = format_tree(zk)
    with pytest.raises(TopicError, match="larger than the number of live brokers \\(2\\)"):
        create_topic(zk, "t", 1, 3)
    assert format_tree(zk) == before


@pytest.mark.integration
def test_create_topic_znodes_validates_before_writing(zk):
    ensure_kafka_paths(zk)
    before = format_tree(zk)
    for bad in ({}, {0: []}, {0: [1], 2: [1]}):
        with pytest.raises(TopicError):
            create_topic_znodes(zk, "t", bad)
    with pytest.raises(TopicError):
        create_topic_znodes(zk, "no/slashes", {0: [1]})
    assert format_tree(zk) == before
    create_topic_znodes(zk, "t", {0: [1]})
    assert "t = " in format_tree(zk)
