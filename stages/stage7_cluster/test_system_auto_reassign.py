"""Automatic reassignment (``auto.reassign.on.membership.change``) on real processes.

Three brokers, a topic of four partitions with two replicas each, a steady
acks=all confluent-kafka producer. A broker is SIGKILLed and stays dead: once
its grace period is over, the controller moves its replicas to the two
brokers left (throttled), every partition is back to two in-sync replicas,
the throttle is cleared, and every acknowledged record is consumed.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.cluster.checker import DeliveryLog
from simplekafka.coordination.configs import TOPICS, read_entity_config
from simplekafka.coordination.throttles import REPLICAS_KEYS
from stages.stage7_cluster.system import (
    BackgroundProducer,
    create_topic,
    drain,
    running_cluster,
)

pytestmark = pytest.mark.integration  # starts real processes

TOPIC, PARTITIONS, GRACE_S = "self-healing", 4, 3.0
AUTOMATIC = {"auto.reassign.on.membership.change": "true",
             "auto.reassign.grace.ms": str(int(GRACE_S * 1000)),
             "auto.reassign.new.broker.delay.ms": "600000"}


def test_a_broker_gone_past_its_grace_period_has_its_replicas_recreated_elsewhere(tmp_path):
    with running_cluster(tmp_path, brokers=3, config=AUTOMATIC) as (cluster, faults):
        create_topic(cluster, TOPIC, PARTITIONS, 2)
        log = DeliveryLog()
        producer = BackgroundProducer(cluster, TOPIC, log)
        producer.start()
        try:
            producer.wait_for_acks(200)
            controller = faults.controller()
            victim = next(b for b in (1, 2, 3) if b != controller)
            held = [p for p in range(PARTITIONS) if victim in cluster.replicas_of(TOPIC, p)]
            assert held, f"broker {victim} holds no replica of {TOPIC}"
            faults.kill(victim)
            cluster.wait_for_znode_gone(victim)
            gone_at = time.monotonic()

            def healed() -> bool:
                for p in range(PARTITIONS):
                    replicas = cluster.replicas_of(TOPIC, p)
                    if victim in replicas or len(replicas) != 2 \
                            or sorted(cluster.isr_of(TOPIC, p)) != sorted(replicas):
                        return False
                return True

            cluster.wait_for(healed, f"broker {victim}'s replicas re-created", timeout=120)
            # The controller counts the grace period from when it saw the broker gone,
            # which is after its znode vanished: nothing can have moved earlier.
            assert time.monotonic() - gone_at >= GRACE_S * 0.9
            assert all(sorted(cluster.replicas_of(TOPIC, p)) == sorted({1, 2, 3} - {victim})
                       for p in held)
            producer.wait_for_acks(200)  # writes flow on the healed partitions
        finally:
            producer.stop()
        cluster.wait_for(lambda: not set(REPLICAS_KEYS) & set(
            read_entity_config(cluster.zk, TOPICS, TOPIC)), "the throttle to be cleared")
        drain(cluster, TOPIC, PARTITIONS, log)
        report = log.check()
        assert report.lost == [] and report.reordered == [], report.summary()
        assert len(log.acks) >= 400
