"""Kafka's replication system test, hard bounce: nothing acknowledged is lost while brokers die.

Three brokers, a topic with three partitions, replication factor 3 and
min.insync.replicas 2. A producer with acks=all and a consumer run the whole
time. The leader of partition 0 is SIGKILLed and restarted five times (each
time only after its ``/brokers/ids`` znode has vanished), then the controller
five times. At the end every acknowledged record must be consumed
(duplicates are allowed: the producer is not idempotent). Run once with
confluent-kafka's producer and once with ours, and once more with
confluent-kafka while the brokers replicate (and the controller sends its
requests) over a SASL_SSL inter-broker listener: TLS with host-name checks and
a SASL/PLAIN login on every broker-to-broker connection, re-made after each
bounce (two bounces of each kind there, to keep the suite's time). That
cluster runs Kafka's ACL authorizer with ``super.users=User:admin``, the
brokers' own login and nobody else: the controller's requests to the broker it
runs in must come as User:admin too, or that broker never becomes ready. The
test's PLAINTEXT clients are User:ANONYMOUS, given All on the bounced topic by
an ACL written to ZooKeeper (as ``simplekafka acls add --zookeeper`` does), and
refused a write to a topic they may only create and describe.
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
# Over SASL_SSL the point is that every broker-to-broker connection is re-made, with TLS and
# a login, after each bounce; two of each kind show that within the suite's time budget.
SECURE_BOUNCES = 2


#: A topic the PLAINTEXT clients may create and describe, and not write.
READ_ONLY = "read-only"


def secure_inter_broker(tmp_path) -> tuple[dict, tuple[str, ...]]:
    """Broker settings for replication over SASL_SSL (clients stay on PLAINTEXT), with
    the ACL authorizer and the brokers' own user as the only super user."""
    from simplekafka.broker.security.certs import make_certificates
    from simplekafka.cluster.security import secure_broker_config

    certs = make_certificates(tmp_path / "certs", clients=[])
    config = secure_broker_config(certs, {}, ("SASL_SSL",), inter_broker_listener="SASL_SSL",
                                  authorizer=True)
    assert config["super.users"] == "User:admin"
    return config, ("SASL_SSL",)


def grant_plaintext_clients(cluster) -> None:
    """User:ANONYMOUS (the PLAINTEXT clients): All on TOPIC, Create and Describe on
    READ_ONLY, written to ZooKeeper; returns once every broker applies them."""
    from simplekafka.client.client import KafkaClient
    from simplekafka.coordination.acls import add_entries
    from simplekafka.coordination.processes import wait_until
    from simplekafka.protocol.acls import (
        AccessControlEntry,
        AclOperation,
        AclPermissionType,
        ResourcePattern,
        ResourceType,
    )
    from simplekafka.protocol.api import ApiKey
    from simplekafka.protocol.errors import ErrorCode

    def allow(*operations: AclOperation) -> list[AccessControlEntry]:
        return [AccessControlEntry("User:ANONYMOUS", "*", op, AclPermissionType.ALLOW)
                for op in operations]

    add_entries(cluster.zk, ResourcePattern(ResourceType.TOPIC, TOPIC), allow(AclOperation.ALL))
    add_entries(cluster.zk, ResourcePattern(ResourceType.TOPIC, READ_ONLY),
                allow(AclOperation.CREATE, AclOperation.DESCRIBE))

    def applied(broker_id: int) -> bool:
        with KafkaClient(cluster.brokers[broker_id].address) as client:
            answer = client.request(-1, ApiKey.METADATA, {
                "topics": [{"name": TOPIC}, {"name": READ_ONLY}],
                "allow_auto_topic_creation": False}, 10_000)
        return all(t.error_code != ErrorCode.TOPIC_AUTHORIZATION_FAILED for t in answer.topics)

    for broker_id in cluster.brokers:
        wait_until(lambda b=broker_id: applied(b), f"broker {broker_id} to apply the ACLs", 60)


def assert_plaintext_write_refused(cluster) -> None:
    """A PLAINTEXT client (User:ANONYMOUS, no super user) writing where no ACL lets it:
    TOPIC_AUTHORIZATION_FAILED, and nothing lands."""
    from confluent_kafka import KafkaError, Producer

    from simplekafka.cluster.checker import read_partition_dir

    create_topic(cluster, READ_ONLY, 1, 3)
    outcome = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "message.timeout.ms": 20000})
    producer.produce(READ_ONLY, b"not allowed", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    assert outcome and outcome[0] is not None, f"the write was not refused: {outcome}"
    assert outcome[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, outcome[0]
    for broker_id in cluster.replicas_of(READ_ONLY, 0):
        assert read_partition_dir(cluster.partition_dir(broker_id, READ_ONLY, 0)) == []


@pytest.mark.parametrize("client, inter_broker", [
    ("confluent", "PLAINTEXT"), ("ours", "PLAINTEXT"), ("confluent", "SASL_SSL")])
def test_hard_bounce_loses_nothing_acknowledged(tmp_path, client, inter_broker):
    config, listeners = secure_inter_broker(tmp_path) if inter_broker == "SASL_SSL" else ({}, ())
    with running_cluster(tmp_path / "cluster", config=config, listeners=listeners) as (
            cluster, faults):
        if inter_broker == "SASL_SSL":
            grant_plaintext_clients(cluster)
            assert_plaintext_write_refused(cluster)
        create_topic(cluster, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        log = DeliveryLog()
        producer = BackgroundProducer(cluster, TOPIC, log, client=client)
        consumer = BackgroundConsumer(cluster, TOPIC, PARTITIONS, log)
        producer.start()
        consumer.start()
        try:
            producer.wait_for_acks(100)
            bounces = BOUNCES if inter_broker == "PLAINTEXT" else SECURE_BOUNCES
            targets = [("leader of partition 0", lambda: faults.leader(TOPIC, 0))] * bounces
            targets += [("controller", faults.controller)] * bounces
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
        assert report.acknowledged >= 100 * 1 + 50 * 2 * bounces
        assert report.lost == [], explain_lost(cluster, report)
        assert report.reordered == [], report.summary()
        for partition in range(PARTITIONS):
            wait_for_identical_logs(cluster, TOPIC, partition)
        if inter_broker == "SASL_SSL":  # replication really went over the secured listener
            logs = [cluster.brokers[b].log_file.read_text() for b in cluster.brokers]
            assert all("authenticated as User:admin with PLAIN on listener SASL_SSL" in text
                       for text in logs)
