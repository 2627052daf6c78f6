"""Fetch from the closest replica (KIP-392), without processes: the selector and the follower.

The leader names a follower in the consumer's rack that has the fetch offset
(in sync, log long enough), or nobody when the leader is in that rack itself;
a follower serves consumers that may read from any replica, but only up to
the high watermark it learnt from its leader, never its unacknowledged tail.
"""

from __future__ import annotations

import pytest

from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_selector import (
    NO_PREFERENCE,
    RACK_AWARE,
    RackAwareReplicaSelector,
    replica_selector,
)
from simplekafka.protocol.errors import KafkaError
from simplekafka.protocol.records import parse_batches
from simplekafka.storage import Log, LogConfig
from stages.stage7_cluster.test_replication_fetcher import batch

RACK = {1: "a", 2: "b", 3: "b", 4: "c"}


def leader(tmp_path) -> Partition:
    partition = Partition("t", 0, 1, Log.open(tmp_path / "t-0", LogConfig()))
    assert partition.make_leader(1, [1, 2, 3], [1, 2, 3, 4], 0, 1)
    return partition


def test_the_leader_names_the_in_sync_follower_of_the_consumers_rack_that_has_the_offset(
        tmp_path):
    partition = leader(tmp_path)
    selector = replica_selector(RACK_AWARE, RACK.get)
    assert isinstance(selector, RackAwareReplicaSelector)
    partition.follower_end_offsets.update({2: 5, 3: 9, 4: 9})
    assert selector.preferred_read_replica(partition, "b", 4) == 3  # the longer log of rack b
    assert selector.preferred_read_replica(partition, "b", 7) == 3
    assert selector.preferred_read_replica(partition, "b", 10) == NO_PREFERENCE  # none has it
    assert selector.preferred_read_replica(partition, "a", 0) == NO_PREFERENCE  # the leader's
    assert selector.preferred_read_replica(partition, "c", 0) == NO_PREFERENCE  # 4: not in ISR
    assert selector.preferred_read_replica(partition, "z", 0) == NO_PREFERENCE
    assert replica_selector(None, RACK.get) is None


def test_a_follower_serves_consumers_up_to_its_high_watermark_only(tmp_path):
    follower = Partition("t", 0, 2, Log.open(tmp_path / "t-0", LogConfig()))
    assert follower.make_follower(1, 1, [1, 2], [1, 2], 0, 1)
    leaders_log = Log.open(tmp_path / "leader", LogConfig())
    for value in (b"acked", b"not yet"):
        leaders_log.append(batch(value), 1)
    follower.append_as_follower(bytes(leaders_log.read(0, 1 << 20)), leader_high_watermark=1)
    assert (follower.log_end_offset, follower.high_watermark) == (2, 1)
    served = follower.read(0, 1 << 20, leader_only=False)
    assert [r.value for b in parse_batches(served) for r in b.records] == [b"acked"]
    for refused in ({}, {"replica_id": 3, "leader_only": False}):
        try:
            follower.read(0, 1 << 20, **refused)
        except KafkaError:
            continue
        raise AssertionError(f"a follower served {refused or 'a leader-only read'}")


def test_replica_selector_class_accepts_kafkas_selectors_and_refuses_others():
    from simplekafka.broker.config import BrokerConfig, ConfigError

    required = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x"}
    config = BrokerConfig.from_properties({**required, "replica.selector.class": RACK_AWARE})
    assert config["replica.selector.class"] == RACK_AWARE
    assert BrokerConfig.from_properties(required)["replica.selector.class"] is None
    with pytest.raises(ConfigError, match="RackAwareReplicaSelector"):
        BrokerConfig.from_properties({**required, "replica.selector.class": "my.Selector"})
