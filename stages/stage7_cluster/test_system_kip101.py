"""The two failures of KIP-101, reproduced on real processes: leader epochs must prevent both.

Two brokers, a topic with one partition on both (replication factor 2,
min.insync.replicas 1), as in the KIP. With truncation to the high
watermark, scenario 1 loses an acknowledged record and scenario 2 leaves
the replicas with different records at the same offset. With leader epochs
(OffsetForLeaderEpoch before fetching) neither happens.
"""

from __future__ import annotations

import pytest

from simplekafka.cluster.checker import DeliveryLog, read_partition_dir
from simplekafka.storage.checkpoints import read_offset_checkpoint
from simplekafka.storage.manager import HIGH_WATERMARK_CHECKPOINT
from stages.stage7_cluster.system import (
    chop_log_from,
    create_topic,
    drain,
    running_cluster,
    send_and_wait,
    wait_for_identical_logs,
)

pytestmark = pytest.mark.integration  # starts real processes


def test_scenario_1_a_restarted_follower_keeps_acknowledged_records(tmp_path):
    """B restarts (its checkpointed HW is stale), rejoins, A dies: B must still have every ack.

    The HW checkpoint is written rarely here, so the race of the KIP is certain
    to happen, and the test checks that it did: on B's disk at the crash, the
    checkpointed HW lies below records that were acknowledged (truncating to it,
    as before KIP-101, would throw them away).
    """
    topic = "kip101-one"
    rarely = {"replica.high.watermark.checkpoint.interval.ms": "600000"}
    with running_cluster(tmp_path, brokers=2, config=rarely) as (cluster, faults):
        create_topic(cluster, topic, 1, 2)
        leader = cluster.leader_of(topic, 0)
        follower = next(b for b in cluster.replicas_of(topic, 0) if b != leader)
        log = DeliveryLog()
        values = [f"m{i}".encode() for i in range(1, 21)]
        assert send_and_wait(cluster.bootstrap_servers, topic, values, "all", log) == [None] * 20
        follower_dir = cluster.partition_dir(follower, topic, 0)
        cluster.wait_for(lambda: len(read_partition_dir(follower_dir)) == 20,
                         "the follower to copy every acknowledged record")
        # Crash the follower right after the acks: its HW on disk lags behind its log.
        faults.kill(follower)
        cluster.wait_for_znode_gone(follower)
        checkpointed = read_offset_checkpoint(
            follower_dir.parent / HIGH_WATERMARK_CHECKPOINT).get((topic, 0), 0)
        assert checkpointed < len(read_partition_dir(follower_dir)) == 20, (
            f"no divergence to test: the follower's checkpointed HW is {checkpointed}")
        faults.restart(follower)
        cluster.wait_for_isr(topic, 0, [follower])
        # The moment it is back in the ISR, the leader dies and it takes over.
        faults.kill(leader)
        cluster.wait_for_znode_gone(leader)
        assert cluster.wait_for_leader(topic, 0, not_=leader) == follower
        assert len(read_partition_dir(follower_dir)) >= 20  # kept above its stale HW
        drain(cluster, topic, 1, log)
        report = log.check()
        assert report.lost == [] and report.reordered == [], report.summary()
        # The old leader returns as a follower; the replicas end up identical.
        assert send_and_wait(cluster.bootstrap_servers, topic, [b"m21"], "all", log) == [None]
        faults.restart(leader)
        cluster.wait_for_isr(topic, 0, [leader])
        wait_for_identical_logs(cluster, topic, 0)


def test_scenario_2_replicas_do_not_diverge_after_both_crash(tmp_path):
    """Both crash; B lost its unflushed m2, returns first, leads, takes m3 at m2's offset.

    When A returns it must drop its m2 (an epoch-0 record the new leader does
    not have) and copy m3, rather than keep m2 because it is below its HW.
    """
    topic = "kip101-two"
    with running_cluster(tmp_path, brokers=2) as (cluster, faults):
        create_topic(cluster, topic, 1, 2)
        a = cluster.leader_of(topic, 0)
        b = next(broker for broker in cluster.replicas_of(topic, 0) if broker != a)
        log = DeliveryLog()
        assert send_and_wait(cluster.bootstrap_servers, topic, [b"m1"], "all", log) == [None]
        # m2 is acknowledged by the leader alone (acks=1): losing it breaks no promise.
        assert send_and_wait(cluster.bootstrap_servers, topic, [b"m2"], 1) == [None]
        b_dir = cluster.partition_dir(b, topic, 0)
        cluster.wait_for(lambda: [r.value for r in read_partition_dir(b_dir)] == [b"m1", b"m2"],
                         "the follower to copy m2")
        # Both crash, A first (so B is the last in-sync replica and may lead again).
        faults.kill(a)
        cluster.wait_for_znode_gone(a)
        cluster.wait_for_leader(topic, 0, not_=a)
        faults.kill(b)
        cluster.wait_for_znode_gone(b)
        assert chop_log_from(b_dir, 1) > 0  # B's m2 was never flushed: the power failed
        faults.restart(b)
        assert cluster.wait_for_leader(topic, 0) == b
        assert send_and_wait(cluster.bootstrap_servers, topic, [b"m3"], "all", log) == [None]
        faults.restart(a)
        cluster.wait_for_isr(topic, 0, [a])
        wait_for_identical_logs(cluster, topic, 0)
        a_values = [r.value for r in read_partition_dir(cluster.partition_dir(a, topic, 0))]
        assert a_values == [b"m1", b"m3"]
        drain(cluster, topic, 1, log)
        report = log.check()
        assert report.lost == [] and report.reordered == [], report.summary()
