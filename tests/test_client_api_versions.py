"""Real clients pick the versions the broker advertises (Kafka 3.9's for groups,
transactions and admin), as the broker's request counts per version show.

confluent-kafka (librdkafka 2.x) and kafka-python run a consumer group, a
transaction and admin calls against one broker; its metrics
(``kafka_network_requestmetrics_requests_total{request,version}``) then say which
version of each API they spoke, and ApiVersions v3 has told it their software
names (KIP-511), counted per name and version.
"""

from __future__ import annotations

import time
import uuid

import confluent_kafka
import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import ConsumerGroupType
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from tests.test_broker_metrics import scrape

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("versions"))
    local.start()
    try:
        with Admin(local.bootstrap_servers) as admin:
            admin.create_topic("versions", num_partitions=1, replication_factor=1)
        yield local
    finally:
        local.stop()


def versions_seen(cluster: LocalCluster) -> dict[str, set[int]]:
    """Request name -> the versions clients used, from the broker's metrics."""
    seen: dict[str, set[int]] = {}
    for url in cluster.metrics_urls.values():
        for labels, count in scrape(url).get("kafka_network_requestmetrics_requests_total", []):
            if count:
                seen.setdefault(labels["request"], set()).add(int(labels["version"]))
    return seen


def run_confluent_group(bootstrap: str) -> None:
    group = f"ck-{uuid.uuid4().hex[:8]}"
    producer = CkProducer({"bootstrap.servers": bootstrap, "transactional.id": group})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce("versions", b"in a transaction")
    producer.commit_transaction(60)
    consumer = CkConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["versions"])
    deadline = time.monotonic() + 60
    message = None
    while message is None and time.monotonic() < deadline:
        message = consumer.poll(1)
    assert message is not None and message.error() is None
    consumer.commit(message, asynchronous=False)
    assert consumer.committed([confluent_kafka.TopicPartition("versions", 0)], 30)[0].offset > 0
    consumer.close()  # LeaveGroup
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(30)
    assert group in {g.group_id for g in listed.valid}
    # ListGroups v5 (KIP-848): every group of a ZooKeeper-mode broker is classic.
    classic = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30)
    assert {g.type for g in classic.valid if g.group_id == group} == {ConsumerGroupType.CLASSIC}
    new_protocol = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30)
    assert group not in {g.group_id for g in new_protocol.valid}
    described = admin.describe_consumer_groups([group])[group].result(30)
    assert described.group_id == group


def run_kafka_python_group(bootstrap: str) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient

    group = f"kp-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer("versions", bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=30000)
    message = next(iter(consumer))
    consumer.commit()
    assert consumer.committed(TopicPartition("versions", 0)) == message.offset + 1
    consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Empty"  # ListGroups v4's state (KIP-518)
        admin.describe_groups([group])
    finally:
        admin.close()


def test_clients_pick_kafka_3_9_versions(cluster):
    run_confluent_group(cluster.bootstrap_servers)
    run_kafka_python_group(cluster.bootstrap_servers)
    seen = versions_seen(cluster)
    print("versions seen:", {k: sorted(v) for k, v in sorted(seen.items())})
    # Above what the broker advertised before (Kafka 2.4's): what librdkafka 2.x and
    # kafka-python 3 pick when a broker offers Kafka 3.9's versions.
    # Kafka 3.9's newest where the client knows them: OffsetCommit v9 and OffsetFetch v9
    # (KIP-848's shapes, as classic groups), ListGroups v5 from librdkafka, ApiVersions v4
    # from kafka-python (v3 from librdkafka); FindCoordinator v6 from kafka-python 3 (which
    # knows Kafka's message definitions; librdkafka stops at v2).
    for request, version in [("ApiVersions", 3), ("ApiVersions", 4), ("FindCoordinator", 6),
                             ("JoinGroup", 7), ("SyncGroup", 5), ("LeaveGroup", 5),
                             ("OffsetCommit", 9), ("OffsetFetch", 9), ("InitProducerId", 4),
                             ("ListGroups", 5), ("DescribeGroups", 5)]:
        assert version in seen.get(request, set()), (request, sorted(seen.get(request, [])))
    software = {labels["client_software_name"]
                for url in cluster.metrics_urls.values()
                for labels, _ in scrape(url).get(
                    "kafka_server_clientsoftware_apiversions_total", [])}
    assert "confluent-kafka-python" in software, software
