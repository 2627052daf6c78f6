"""min.insync.replicas: with one replica left in the ISR acks=all is refused, acks=1 works."""

from __future__ import annotations

import pytest

from simplekafka.client.errors import NotEnoughReplicasError
from simplekafka.cluster.checker import DeliveryLog, read_partition_dir
from stages.stage7_cluster.system import create_topic, running_cluster, send_and_wait

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "min-isr"


def test_acks_all_fails_with_not_enough_replicas_and_acks_1_works(tmp_path):
    from confluent_kafka import Producer

    with running_cluster(tmp_path) as (cluster, faults):
        create_topic(cluster, TOPIC, 1, 3, {"min.insync.replicas": "2"})
        leader = cluster.leader_of(TOPIC, 0)
        for follower in cluster.replicas_of(TOPIC, 0):
            if follower != leader:
                faults.kill(follower)
                cluster.wait_for_znode_gone(follower)
        cluster.wait_for(lambda: cluster.isr_of(TOPIC, 0) == (leader,), "an ISR of the leader")

        log = DeliveryLog()
        values = [f"refused-{i}".encode() for i in range(5)]
        errors = send_and_wait(cluster.bootstrap_servers, TOPIC, values, "all", log, retries=0)
        assert all(isinstance(e, NotEnoughReplicasError) for e in errors), errors

        # confluent-kafka retries NOT_ENOUGH_REPLICAS until its message timeout: still no ack.
        outcomes = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "message.timeout.ms": 4000})
        producer.produce(TOPIC, value=b"refused-confluent", partition=0,
                         on_delivery=lambda error, message: outcomes.append(error))
        producer.flush(30)
        assert len(outcomes) == 1 and outcomes[0] is not None
        print(f"confluent-kafka delivery error: {outcomes[0]}")
        assert log.acks == []

        assert send_and_wait(cluster.bootstrap_servers, TOPIC, [b"one-ack"], 1) == [None]
        stored = [r.value for r in read_partition_dir(cluster.partition_dir(leader, TOPIC, 0))]
        assert stored == [b"one-ack"]  # refused before appending: nothing else reached the log


def test_a_dead_controller_leaves_the_isrs_it_was_in(tmp_path):
    """The controller itself dies while following: the next controller takes it out of the ISR.

    Without this, an ISR keeps a dead member after a controller failover and
    acks=all keeps being accepted (then times out) instead of being refused.
    """
    topic = "dead-controller"
    with running_cluster(tmp_path) as (cluster, faults):
        create_topic(cluster, topic, 3, 3)
        controller = faults.controller()
        followed = [p for p in range(3) if cluster.leader_of(topic, p) != controller]
        assert followed, "placement gives every broker a leadership among three partitions"
        faults.kill(controller)
        cluster.wait_for_znode_gone(controller)
        cluster.wait_for(lambda: cluster.controller_id() not in (None, controller),
                         "a new controller")
        for partition in followed:
            cluster.wait_for(lambda p=partition: controller not in cluster.isr_of(topic, p),
                             f"dead broker {controller} out of the ISR of {topic}-{partition}",
                             timeout=30)
