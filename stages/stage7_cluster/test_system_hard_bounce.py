"""Kafka's replication system test, hard bounce: nothing acknowledged is lost while brokers die.

Three brokers, a topic with three partitions, replication factor 3 and
min.insync.replicas 2. A producer with acks=all and a consumer run the whole
time. The leader of partition 0 is SIGKILLed and restarted five times (each
time only after its ``/brokers/ids`` znode has vanished), then the controller
five times. At the end every acknowledged record must be consumed
(duplicates are allowed: the producer is not idempotent). Run once with
confluent-kafka's producer and once with ours.
"""

from __future__ import annotations

import pytest

from simplekafka.cluster.checker import DeliveryLog
from stages.stage7_cluster.system import (
    BackgroundConsumer,
    BackgroundProducer,
    create_topic,
    drain,
    explain_lost,
    running_cluster,
    wait_for_identical_logs,
)

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "bounced"
PARTITIONS = 3
BOUNCES = 5


@pytest.mark.parametrize("client", ["confluent", "ours"])
def test_hard_bounce_loses_nothing_acknowledged(tmp_path, client):
    with running_cluster(tmp_path) as (cluster, faults):
        create_topic(cluster, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        log = DeliveryLog()
        producer = BackgroundProducer(cluster, TOPIC, log, client=client)
        consumer = BackgroundConsumer(cluster, TOPIC, PARTITIONS, log)
        producer.start()
        consumer.start()
        try:
            producer.wait_for_acks(100)
            targets = [("leader of partition 0", lambda: faults.leader(TOPIC, 0))] * BOUNCES
            targets += [("controller", faults.controller)] * BOUNCES
            for what, find in targets:
                victim = find()
                print(f"hard bounce of broker {victim}, the {what}", flush=True)
                faults.hard_bounce(victim)
                for partition in range(PARTITIONS):
                    cluster.wait_for_isr(TOPIC, partition, [victim], timeout=90)
                producer.wait_for_acks(50, timeout=90)
        finally:
            producer.stop()
            consumer.stop()
        assert consumer.read > 0, "the background consumer read nothing while brokers died"
        drain(cluster, TOPIC, PARTITIONS, log)
        report = log.check()
        print(report.summary())
        print(f"sent {producer.sent}, acknowledged {report.acknowledged}, "
              f"failed {log.failed_sends}")
        assert report.acknowledged >= 100 * 1 + 50 * 2 * BOUNCES
        assert report.lost == [], explain_lost(cluster, report)
        assert report.reordered == [], report.summary()
        for partition in range(PARTITIONS):
            wait_for_identical_logs(cluster, TOPIC, partition)
