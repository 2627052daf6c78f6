"""Leadership returns to the preferred replicas (the first of each assignment) after bounces."""

from __future__ import annotations

import pytest

from stages.stage7_cluster.system import create_topic, running_cluster

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "preferred"
PARTITIONS = 3
REBALANCE = {"auto.leader.rebalance.enable": "true",
             "leader.imbalance.check.interval.seconds": "2"}


def preferred_leaders_lead(cluster) -> bool:
    return all(cluster.leader_of(TOPIC, p) == cluster.replicas_of(TOPIC, p)[0]
               for p in range(PARTITIONS))


def test_leaders_come_back_to_preferred_replicas(tmp_path):
    with running_cluster(tmp_path, config=REBALANCE) as (cluster, faults):
        create_topic(cluster, TOPIC, PARTITIONS, 3)
        cluster.wait_for(lambda: preferred_leaders_lead(cluster), "preferred leaders at first")
        for broker_id in sorted(cluster.brokers):
            faults.hard_bounce(broker_id)
            for partition in range(PARTITIONS):
                cluster.wait_for_isr(TOPIC, partition, [broker_id])
        cluster.wait_for(lambda: preferred_leaders_lead(cluster),
                         "every partition led by its preferred replica again", timeout=60)
