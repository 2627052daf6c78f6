"""Replication throttles on Twisted's clocks: the quota, the leader's side, the follower's side.

A throttle holds back only replicas that are listed in the topic's
``*.replication.throttled.replicas`` and are not in sync, and only while the
broker's byte quota is used up; everything else replicates at full speed.
"""

from __future__ import annotations

import pytest
from twisted.internet import task
from twisted.internet.testing import MemoryReactorClock

from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_fetcher import FetchSettings, ReplicaFetcherManager
from simplekafka.broker.replication_quota import (
    ALL_REPLICAS,
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    UNLIMITED,
    ReplicationQuota,
    ReplicationThrottle,
    ThrottleConfigError,
    parse_rate,
    parse_throttled_replicas,
    throttled_replicas_text,
)
from simplekafka.protocol.api import ApiKey, request_schema
from simplekafka.protocol.fields import Struct
from simplekafka.storage import Log, LogConfig
from stages.stage7_cluster.test_replication_fetcher import (
    FOLLOWER,
    LEADER,
    PlayedLeader,
    batch,
    fetch_answer,
    follower_partition,
)

MOVING = 3  # a replica being added by a reassignment, not in the ISR


def test_the_quota_refuses_while_its_bucket_is_empty_and_refills_at_the_rate():
    clock = task.Clock()
    quota = ReplicationQuota(clock.seconds, rate=1000)
    assert not quota.is_quota_exceeded()  # one second's worth to start with
    quota.record(1500)  # a batch is never split: the bucket goes below zero
    assert quota.is_quota_exceeded()
    assert quota.seconds_until_available() == pytest.approx(0.501)
    clock.advance(0.4)
    assert quota.is_quota_exceeded()
    clock.advance(0.2)
    assert not quota.is_quota_exceeded()
    clock.advance(100)  # idle time does not bank more than one second's worth
    quota.record(1000)
    assert quota.is_quota_exceeded()


def test_an_unlimited_quota_never_refuses_and_a_lowered_rate_caps_the_bucket():
    clock = task.Clock()
    quota = ReplicationQuota(clock.seconds)
    assert quota.rate == UNLIMITED and not quota.limited
    quota.record(10**12)
    assert not quota.is_quota_exceeded()
    quota.set_rate(100)
    quota.record(101)
    assert quota.is_quota_exceeded()


def test_throttled_replicas_are_partition_broker_pairs_or_a_star():
    assert parse_throttled_replicas("0:1, 2:3") == [(0, 1), (2, 3)]
    assert parse_throttled_replicas("*") == ALL_REPLICAS
    assert parse_throttled_replicas("") == []
    assert throttled_replicas_text([(2, 3), (0, 1), (0, 1)]) == "0:1,2:3"
    for bad in ("0", "a:1", "0:1:2", "-1:2"):
        with pytest.raises(ThrottleConfigError):
            parse_throttled_replicas(bad)
    assert parse_rate(None) == UNLIMITED and parse_rate("2048") == 2048
    for bad in ("0", "-5", "fast"):
        with pytest.raises(ThrottleConfigError):
            parse_rate(bad)


def test_a_broker_applies_only_the_pairs_that_name_it_and_never_to_in_sync_replicas():
    clock = task.Clock()
    configs = {"t": {LEADER_REPLICAS: "0:1,1:2"}, "u": {LEADER_REPLICAS: "*"}}
    throttle = ReplicationThrottle(LEADER_REPLICAS, 1, configs, clock.seconds)
    assert throttle.is_throttled("t", 0) and not throttle.is_throttled("t", 1)
    assert throttle.is_throttled("u", 7) and not throttle.is_throttled("v", 0)
    throttle.quota.set_rate(100)
    throttle.record("t", 0, False, 500)
    assert throttle.holds_back("t", 0, in_sync=False)
    assert not throttle.holds_back("t", 0, in_sync=True)  # the ISR is never slowed
    assert not throttle.holds_back("t", 1, in_sync=False)  # not listed for this broker
    configs["t"] = {LEADER_REPLICAS: "1:1"}  # a config change takes effect at once
    assert not throttle.is_throttled("t", 0) and throttle.is_throttled("t", 1)


def leader_partition(tmp_path) -> Partition:
    log = Log.open(tmp_path / "t-0-leader", LogConfig())
    partition = Partition("t", 0, LEADER, log)
    assert partition.make_leader(1, [LEADER, FOLLOWER], [LEADER, FOLLOWER, MOVING], 0, 1)
    for _ in range(4):
        partition.append_as_leader(batch(b"x" * 1000), 1, 1, 1 << 20, 8)
    return partition


class _Replicas:
    """The ReplicaManager's part the Fetch handler uses, around one real partition."""

    def __init__(self, partition: Partition, throttle: ReplicationThrottle) -> None:
        self.partition = partition
        self.leader_throttle = throttle

    def leader_partition(self, topic: str, index: int) -> Partition:
        return self.partition

    def get_partition(self, topic: str, index: int) -> Partition:
        return self.partition

    def maybe_expand_isr(self, partition: Partition, replica_id: int) -> None:
        pass


def follower_fetch(replica_id: int, offset: int = 0) -> Struct:
    wanted = dict(partition=0, current_leader_epoch=1, fetch_offset=offset,
                  log_start_offset=0, partition_max_bytes=1200)
    return request_schema(ApiKey.FETCH, 10).make(  # v10: no rack_id, the leader reads
        replica_id=replica_id, max_wait_ms=0, min_bytes=1, isolation_level=0,
        max_bytes=1 << 20, topics=[dict(topic="t", partitions=[wanted])])


def records_of(body: dict) -> bytes:
    return body["responses"][0]["partitions"][0]["records"]


def test_the_leader_sends_a_moving_replica_nothing_while_its_quota_is_used_up(tmp_path):
    clock = task.Clock()
    partition = leader_partition(tmp_path)
    throttle = ReplicationThrottle(LEADER_REPLICAS, LEADER,
                                   {"t": {LEADER_REPLICAS: f"0:{LEADER}"}}, clock.seconds)
    throttle.quota.set_rate(1000)
    handler = FetchHandler(_Replicas(partition, throttle), clock, lambda: False)

    first = records_of(handler.read(follower_fetch(MOVING))[0])
    assert first and throttle.quota.recorded == len(first)  # over a second's worth now
    assert records_of(handler.read(follower_fetch(MOVING, 1))[0]) == b""
    assert partition.follower_end_offsets[MOVING] == 1  # its position still counts
    # The in-sync follower of the same partition gets its data regardless.
    assert records_of(handler.read(follower_fetch(FOLLOWER))[0])
    clock.advance(2.0)
    assert records_of(handler.read(follower_fetch(MOVING, 1))[0])


def test_the_follower_leaves_a_throttled_replica_out_of_its_fetches_until_the_quota_refills(
        tmp_path):
    partition = follower_partition(tmp_path, leader_epoch=0)
    reactor = MemoryReactorClock()
    throttle = ReplicationThrottle(FOLLOWER_REPLICAS, FOLLOWER,
                                   {"t": {FOLLOWER_REPLICAS: f"0:{FOLLOWER}"}}, reactor.seconds)
    throttle.quota.set_rate(1000)
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker), throttle)
    manager.follow(partition)
    leader = PlayedLeader(reactor)
    header, fetch = leader.request()
    assert header.api_key == ApiKey.FETCH and fetch.topics[0].partitions[0].fetch_offset == 0
    leader.answer(header, fetch_answer(batch(b"y" * 3000), high_watermark=10))
    assert partition.log_end_offset == 1 and throttle.quota.is_quota_exceeded()
    assert leader.transport.value() == b""  # held back: no fetch goes out
    reactor.advance(1.0)
    assert leader.transport.value() == b""  # still about 2 s of bytes to make up
    reactor.advance(3.0)
    header, fetch = leader.request()
    assert fetch.topics[0].partitions[0].fetch_offset == 1
    # Caught up with the leader's HW: in sync, so no longer throttled at all.
    leader.answer(header, fetch_answer(b"", high_watermark=1))
    throttle.quota.record(10**6)
    reactor.advance(0.01)
    header, fetch = leader.request()
    assert fetch.topics[0].partitions[0].fetch_offset == 1
    manager.shutdown()


def test_a_parked_fetch_of_a_held_back_replica_is_not_woken_by_appends(tmp_path):
    clock = task.Clock()
    partition = leader_partition(tmp_path)
    throttle = ReplicationThrottle(LEADER_REPLICAS, LEADER,
                                   {"t": {LEADER_REPLICAS: f"0:{LEADER}"}}, clock.seconds)
    throttle.quota.set_rate(1000)
    throttle.quota.record(5000)  # used up for the next few seconds
    handler = FetchHandler(_Replicas(partition, throttle), clock, lambda: False)
    end = partition.log_end_offset

    def parked(replica_id: int):
        request = follower_fetch(replica_id, end)
        request.max_wait_ms = 500
        answer = handler(None, request)
        assert not isinstance(answer, dict), "expected the fetch to wait"
        return answer

    moving, in_sync = parked(MOVING), parked(FOLLOWER)
    partition.append_as_leader(batch(b"new"), 1, 1, 1 << 20, 8)
    assert in_sync.called and not moving.called  # no busy loop of empty answers
    clock.advance(0.5)
    assert moving.called and records_of(moving.result) == b""


@pytest.mark.integration  # a real ZooKeeper
def test_throttles_written_to_zookeeper_keep_other_overrides_and_are_cleared(zk):
    """What ``reassign --execute --zookeeper --throttle`` and automatic mode write, and
    what is left once they are cleared."""
    from simplekafka.coordination.configs import (
        BROKERS,
        TOPICS,
        read_entity_config,
        write_entity_config,
    )
    from simplekafka.coordination.throttles import (
        FOLLOWER_RATE,
        LEADER_RATE,
        clear_throttles,
        write_throttles,
    )

    write_entity_config(zk, TOPICS, "t", {"retention.ms": "1000"})
    write_entity_config(zk, BROKERS, "3", {"log.retention.ms": "5000"})
    current, target = {("t", 0): [1, 2], ("t", 1): [2, 3]}, {("t", 0): [1, 3], ("t", 1): [2, 3]}
    write_throttles(zk, current, target, 4096)
    assert read_entity_config(zk, TOPICS, "t") == {
        "retention.ms": "1000", LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "0:3"}
    for broker in ("1", "2", "3"):
        config = read_entity_config(zk, BROKERS, broker)
        assert config[LEADER_RATE] == config[FOLLOWER_RATE] == "4096"
    assert read_entity_config(zk, BROKERS, "3")["log.retention.ms"] == "5000"
    changes = len(zk.get_children("/config/changes"))
    clear_throttles(zk, ["t"], [1, 2, 3])
    assert read_entity_config(zk, TOPICS, "t") == {"retention.ms": "1000"}
    assert read_entity_config(zk, BROKERS, "3") == {"log.retention.ms": "5000"}
    assert read_entity_config(zk, BROKERS, "1") == {}
    assert len(zk.get_children("/config/changes")) == changes + 4  # every broker is told
