"""ZooKeeper session expiry under load: the broker lives on, but ZooKeeper has forgotten it.

Its ephemeral znodes (``/brokers/ids/<id>``, and ``/controller`` if it held
it) vanish at once, the controller moves its leaderships away, and the broker
must notice, resign whatever it led or controlled, register again with a new
session and come back as a follower, all while a producer writes with acks=all.
Nothing acknowledged may be lost.
"""

from __future__ import annotations

import pytest

from simplekafka.cluster.checker import DeliveryLog
from stages.stage7_cluster.system import (
    BackgroundProducer,
    create_topic,
    drain,
    explain_lost,
    running_cluster,
    wait_for_identical_logs,
)

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "expired"
PARTITIONS = 3


def test_expired_sessions_of_leader_and_controller_lose_nothing(tmp_path):
    with running_cluster(tmp_path) as (cluster, faults):
        create_topic(cluster, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        log = DeliveryLog()
        producer = BackgroundProducer(cluster, TOPIC, log, client="confluent")
        producer.start()
        try:
            producer.wait_for_acks(100)
            targets = [("leader of partition 0", lambda: faults.leader(TOPIC, 0))] * 3
            targets += [("controller", faults.controller)] * 2
            for what, find in targets:
                victim = find()
                registered = cluster.zk.exists(f"/brokers/ids/{victim}")
                print(f"expiring the session of broker {victim}, the {what}", flush=True)
                faults.expire_session(victim)
                cluster.wait_for(
                    lambda v=victim, r=registered: (
                        (stat := cluster.zk.exists(f"/brokers/ids/{v}")) is not None
                        and stat.czxid > r.czxid),
                    f"broker {victim} to register again with a new session")
                for partition in range(PARTITIONS):
                    cluster.wait_for_isr(TOPIC, partition, [victim], timeout=90)
                producer.wait_for_acks(50, timeout=90)
        finally:
            producer.stop()
        assert sorted(cluster.running_brokers()) == [1, 2, 3]  # nobody died of it
        drain(cluster, TOPIC, PARTITIONS, log)
        report = log.check()
        print(report.summary())
        assert report.lost == [] and report.reordered == [], explain_lost(cluster, report)
        for partition in range(PARTITIONS):
            wait_for_identical_logs(cluster, TOPIC, partition)
