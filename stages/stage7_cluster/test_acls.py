"""ACLs on a real broker with real clients (confluent-kafka, kafka-python) and the CLI.

Two brokers with ``authorizer.class.name`` set and
``allow.everyone.if.no.acl.found=true``; the clients connect as
``User:ANONYMOUS`` (PLAINTEXT). The module's fixture gives ACLs that name
other principals to some resources, so ANONYMOUS, with none of its own there,
is refused on them and served elsewhere; one ACL denies it over an allow; the
cluster ACLs grant it ClusterAction (the controller's own requests),
Describe and Alter but not Create. ACLs are made through confluent-kafka's
AdminClient (CreateAcls) and through ``simplekafka acls --zookeeper`` (which
reaches the brokers only by the change notification they follow: each
broker's DescribeAcls, answered from its own authorizer, shows it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.processes import wait_until

pytestmark = pytest.mark.integration

CONFIG = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
          "allow.everyone.if.no.acl.found": "true", "num.partitions": "1",
          "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "acls", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    from confluent_kafka.admin import AclBinding, AdminClient

    cluster = LocalCluster(brokers=2, base_dir=tmp_path_factory.mktemp("acls"),
                           broker_config=CONFIG)
    cluster.start()
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(t, 1, 1) for t in ("open", "locked", "secret-a")])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        acls = [
            AclBinding("TOPIC", "locked", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
            AclBinding("TOPIC", "secret-a", "LITERAL", "User:ANONYMOUS", "*", "ALL", "ALLOW"),
            AclBinding("TOPIC", "secret-", "PREFIXED", "User:ANONYMOUS", "*", "READ", "DENY"),
        ] + [AclBinding("BROKER", "kafka-cluster", "LITERAL", "User:ANONYMOUS", "*", op,
                        "ALLOW") for op in ("CLUSTER_ACTION", "DESCRIBE", "ALTER")]
        for future in admin.create_acls(acls, request_timeout=30).values():
            assert future.result(timeout=60) is None
        added = cli("add", "--allow-principal", "User:alice", "--operation", "Read",
                    "--group", "locked-group", "--zookeeper", cluster.zookeeper_connect)
        assert added.returncode == 0, added.stderr
        # Every broker learns of the CLI's ACL from /kafka-acl-changes only.
        with Admin(cluster.bootstrap_servers) as ours:
            for broker_id in cluster.brokers:
                wait_until(lambda b=broker_id: "locked-group" in _acl_names(ours, b),
                           f"broker {broker_id} to apply the ACL change notification", 60)
        yield cluster
    finally:
        cluster.stop()


def _acl_names(admin: Admin, broker_id: int) -> set[str]:
    """The resource names of the ACLs one broker's authorizer holds (its DescribeAcls)."""
    from simplekafka.protocol.api import ApiKey

    admin.client.controller_id(10_000)  # the brokers' addresses
    answer = admin.client.request(broker_id, ApiKey.DESCRIBE_ACLS, {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1},
        10_000)
    return {r.resource_name for r in answer.resources}


def _deliver(bootstrap: str, topic: str) -> int:
    """Produce one record with confluent-kafka; the delivery error code (0: delivered)."""
    from confluent_kafka import Producer

    outcome = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000})
    producer.produce(topic, b"value", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report"
    return outcome[0].code() if outcome[0] is not None else 0


def test_write_on_a_topic_acl_is_not_for_others_and_open_topics_stay_open(secured):
    from confluent_kafka import KafkaError

    assert _deliver(secured.bootstrap_servers, "locked") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _deliver(secured.bootstrap_servers, "open") == 0


def test_kafka_python_producer_is_refused_on_the_locked_topic(secured):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=secured.bootstrap_servers,
                             max_block_ms=20000, enable_idempotence=False)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("locked", b"value").get(timeout=30)
        assert producer.send("open", b"value").get(timeout=30).offset >= 0
    finally:
        producer.close(timeout=5)


def test_metadata_leaves_out_topics_the_principal_may_not_describe(secured):
    from confluent_kafka.admin import AdminClient

    topics = AdminClient({"bootstrap.servers": secured.bootstrap_servers}).list_topics(
        timeout=30).topics
    assert "open" in topics and "secret-a" in topics
    assert "locked" not in topics


def _first_consume_error(bootstrap: str, topic: str, group: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is not None:
                return message.error().code()
            if message is not None:
                return 0
        raise AssertionError(f"no record and no error from {topic}")
    finally:
        consumer.close()


def test_deny_wins_over_allow_and_the_locked_topic_cannot_be_read(secured):
    from confluent_kafka import KafkaError

    bootstrap = secured.bootstrap_servers
    assert _deliver(bootstrap, "secret-a") == 0  # allowed All, denied Read only
    assert _first_consume_error(bootstrap, "secret-a", "readers") == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _first_consume_error(bootstrap, "locked", "readers") == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _deliver(bootstrap, "open") == 0
    assert _first_consume_error(bootstrap, "open", "readers") == 0


def test_no_create_or_delete_without_the_acls(secured):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    # secret-new: the prefixed ACL applies (so allow.everyone does not), none allows Create.
    created = admin.create_topics([NewTopic("secret-new", 1, 1)], request_timeout=30)
    with pytest.raises(Exception) as refused:
        created["secret-new"].result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    deleted = admin.delete_topics(["locked"], request_timeout=30)
    with pytest.raises(Exception) as refused:
        deleted["locked"].result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Nor by auto-creation: Metadata refuses an unknown topic without Create.
    assert _deliver(secured.bootstrap_servers, "secret-" + uuid.uuid4().hex[:6]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_joining_a_group_of_another_principal_is_refused(secured):
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer({"bootstrap.servers": secured.bootstrap_servers,
                         "group.id": "locked-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["open"])
        code = None
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is not None:
                code = message.error().code()
                break
        assert code == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_acls_are_stored_in_zookeeper_as_kafka_stores_them(secured):
    zk = secured.zk
    data, _stat = zk.get("/kafka-acl/Topic/locked")
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write",
         "host": "*"}]}
    data, _stat = zk.get("/kafka-acl-extended/prefixed/Topic/secret-")
    assert json.loads(data)["acls"] == [{"principal": "User:ANONYMOUS",
                                         "permissionType": "Deny", "operation": "Read",
                                         "host": "*"}]
    cluster_ops = {a["operation"] for a in json.loads(
        zk.get("/kafka-acl/Cluster/kafka-cluster")[0])["acls"]}
    assert cluster_ops == {"ClusterAction", "Describe", "Alter"}
    literal = {zk.get(f"/kafka-acl-changes/{c}")[0] for c in zk.get_children("/kafka-acl-changes")}
    assert {b"Topic:locked", b"Group:locked-group"} <= literal
    extended = [json.loads(zk.get(f"/kafka-acl-extended-changes/{c}")[0])
                for c in zk.get_children("/kafka-acl-extended-changes")]
    assert {"version": 1, "resourceType": "Topic", "name": "secret-",
            "patternType": "PREFIXED"} in extended


def test_describe_and_delete_acls_with_confluent_and_the_cli(secured):
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AdminClient

    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    temporary = AclBinding("TOPIC", "tmp-", "PREFIXED", "User:bob", "10.1.1.1", "DESCRIBE",
                           "ALLOW")
    admin.create_acls([temporary])[temporary].result(timeout=60)
    everything = AclBindingFilter("ANY", None, "ANY", None, None, "ANY", "ANY")
    found = admin.describe_acls(everything, request_timeout=30).result(timeout=60)
    assert temporary in found and len(found) == 8
    by_bob = AclBindingFilter("TOPIC", None, "ANY", "User:bob", None, "ANY", "ANY")
    assert admin.delete_acls([by_bob])[by_bob].result(timeout=60) == [temporary]
    assert temporary not in admin.describe_acls(everything).result(timeout=60)
    assert not secured.zk.exists("/kafka-acl-extended/prefixed/Topic/tmp-")

    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
        ResourceType,
    )

    kafka_python = KafkaAdminClient(bootstrap_servers=secured.bootstrap_servers)
    try:
        acls, _error = kafka_python.describe_acls(ACLFilter(
            principal="User:alice", host="*", operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY, resource_pattern=ResourcePatternFilter(
                ResourceType.ANY, None, ACLResourcePatternType.ANY)))
        assert {(a.resource_pattern.resource_name, a.operation) for a in acls} == {
            ("locked", ACLOperation.WRITE), ("locked-group", ACLOperation.READ)}
    finally:
        kafka_python.close()

    listed = cli("list", "--topic", "locked", "--bootstrap-server", secured.bootstrap_servers)
    assert listed.returncode == 0, listed.stderr
    assert ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=locked, "
            "patternType=LITERAL)`:") in listed.stdout
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" \
        in listed.stdout
    listed = cli("list", "--group", "locked-group", "--zookeeper", secured.zookeeper_connect)
    assert "operation=READ" in listed.stdout and listed.returncode == 0
    removed = cli("remove", "--allow-principal", "User:carol", "--operation", "Read",
                  "--group", "locked-group", "--zookeeper", secured.zookeeper_connect)
    assert removed.returncode == 0 and "nothing removed" in removed.stderr
