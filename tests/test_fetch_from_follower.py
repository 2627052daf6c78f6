"""Fetch from the closest replica (KIP-392) with a real client and real brokers.

Three brokers in three racks with Kafka's RackAwareReplicaSelector; a
confluent-kafka consumer with ``client.rack`` set to a follower's rack is sent
there by the leader (``preferred_read_replica``), reads every record from that
follower (its fetch counters say so), every record once and in order; our
Consumer with ``client_rack`` too. That a
follower serves only up to its high watermark is checked in
stages/stage7_cluster/test_replica_selector.py.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.broker.replica_selector import RACK_AWARE
from simplekafka.cluster import LocalCluster
from tests.test_broker_metrics import scrape, value

pytestmark = pytest.mark.integration

RACKS = ["rack-a", "rack-b", "rack-c"]


def test_a_consumer_with_client_rack_reads_everything_from_the_follower_in_its_rack(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, count = "near", 300
    with LocalCluster(brokers=3, base_dir=tmp_path, racks=RACKS,
                      broker_config={"replica.selector.class": RACK_AWARE}) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(topic, 1, 3)])
        cluster.wait_for(lambda: len(cluster.replicas_of(topic, 0)) == 3, "the assignment")
        cluster.wait_for_isr(topic, 0, cluster.replicas_of(topic, 0))
        leader = cluster.leader_of(topic, 0)
        follower = next(b for b in cluster.replicas_of(topic, 0) if b != leader)

        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(count):
            producer.produce(topic, f"r{i}".encode(), partition=0)
        assert producer.flush(60) == 0

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                             "group.id": "near-readers", "client.rack": RACKS[follower - 1],
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        seen: list[bytes] = []
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            deadline = time.monotonic() + 90
            while len(seen) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    seen.append(message.value())
        finally:
            consumer.close()
        assert seen == [f"r{i}".encode() for i in range(count)]

        urls = cluster.metrics_urls
        at_follower, at_leader = scrape(urls[follower]), scrape(urls[leader])
        served_by_follower = value(at_follower, "kafka_server_consumerfetch_bytes_total",
                                   role="follower")
        assert served_by_follower > 0, "the in-rack follower served no consumer fetch"
        assert value(at_leader, "kafka_server_consumerfetch_preferredreadreplica_total") >= 1
        # The leader sent this consumer nothing: the follower served every record.
        assert value(at_leader, "kafka_server_consumerfetch_bytes_total", role="leader") == 0
        third = next(b for b in (1, 2, 3) if b not in (leader, follower))
        assert value(scrape(urls[third]), "kafka_server_consumerfetch_bytes_total",
                     role="follower") == 0

        # Our Consumer does the same with client_rack: the third broker's rack this time.
        from simplekafka.consumer import Consumer as OurConsumer

        ours: list[bytes] = []
        with OurConsumer(bootstrap_servers=cluster.bootstrap_servers,
                         auto_offset_reset="earliest", client_rack=RACKS[third - 1]) as consumer:
            consumer.assign([(topic, 0)])
            deadline = time.monotonic() + 90
            while len(ours) < count and time.monotonic() < deadline:
                ours.extend(record.value for record in consumer.poll(500))
        assert ours == [f"r{i}".encode() for i in range(count)]
        assert value(scrape(urls[third]), "kafka_server_consumerfetch_bytes_total",
                     role="follower") > 0
        assert value(scrape(urls[leader]), "kafka_server_consumerfetch_bytes_total",
                     role="leader") == 0
