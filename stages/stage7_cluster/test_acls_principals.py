"""ACLs for authenticated principals: real clients log in with SASL PLAIN as alice, bob
or admin, and each gets exactly what its ACLs give it, with Kafka's error codes.

One broker (module-scoped) with a SASL_PLAINTEXT listener for the clients and
for inter-broker traffic (the broker logs in as admin), ``authorizer.class.name``
set, ``allow.everyone.if.no.acl.found`` at its default (false), and
``super.users=User:admin``, the brokers' own login and nobody else (the
controller's requests to its own broker come as admin too; the test's set-up
logs in as admin). PLAINTEXT clients are User:ANONYMOUS, with no ACL at all:
they may do nothing. alice may Write ``alice-topic``
and every topic prefixed ``alice.``, and Read group ``alice-group``; bob may do
All on topics prefixed ``shared.`` but is denied Write on ``shared.secret``;
nobody else may do anything.
"""

from __future__ import annotations

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.client.client import KafkaClient
from simplekafka.client.security import client_security
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

pytestmark = pytest.mark.integration

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
TOPICS = ("alice-topic", "alice.orders", "aliceorders", "bob-topic", "shared.open",
          "shared.secret")


def acl(kind: ResourceType, name: str, principal: str, op: AclOperation,
        pattern: PatternType = PatternType.LITERAL,
        permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(kind, name, pattern),
                      AccessControlEntry(principal, "*", op, permission))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    config = secure_broker_config(None, USERS, ("SASL_PLAINTEXT",),
                                  inter_broker_listener="SASL_PLAINTEXT", authorizer=True)
    config.update({"num.partitions": "1",
                   "offsets.topic.replication.factor": "1",
                   "group.initial.rebalance.delay.ms": "0"})
    with LocalCluster(1, base_dir=tmp_path_factory.mktemp("acl-principals"),
                      listeners=["SASL_PLAINTEXT"], broker_config=config) as running:
        login = client_security("SASL_PLAINTEXT", "PLAIN", "admin", "admin-secret")
        with KafkaClient(running.bootstrap("SASL_PLAINTEXT"), security=login) as client, \
                Admin(client=client) as admin:
            admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS])
            topic, group = ResourceType.TOPIC, ResourceType.GROUP
            admin.create_acls([
                acl(topic, "alice-topic", "User:alice", AclOperation.WRITE),
                acl(topic, "alice.", "User:alice", AclOperation.WRITE, PatternType.PREFIXED),
                acl(group, "alice-group", "User:alice", AclOperation.READ),
                acl(topic, "shared.", "User:bob", AclOperation.ALL, PatternType.PREFIXED),
                acl(topic, "shared.secret", "User:bob", AclOperation.WRITE,
                    permission=AclPermissionType.DENY),
            ])
        yield running


def settings(cluster: LocalCluster, user: str, password: str | None = None) -> dict:
    return {"bootstrap.servers": cluster.bootstrap("SASL_PLAINTEXT"),
            **client_config("SASL_PLAINTEXT", mechanism="PLAIN", user=user,
                            password=password or USERS.get(user, "admin-secret"))}


def deliver(cluster: LocalCluster, user: str, topic: str) -> int:
    from confluent_kafka import Producer

    outcome = []
    producer = Producer({**settings(cluster, user), "message.timeout.ms": 20000})
    producer.produce(topic, b"value", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report"
    return outcome[0].code() if outcome[0] is not None else 0


def first_consumer_error(cluster: LocalCluster, user: str, topic: str, group: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer({**settings(cluster, user), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None:
                return message.error().code() if message.error() is not None else 0
        raise AssertionError(f"{user}: no record and no error from {topic}")
    finally:
        consumer.close()


def test_write_on_one_topic_is_not_write_on_another(cluster):
    from confluent_kafka import KafkaError

    assert deliver(cluster, "alice", "alice-topic") == 0
    assert deliver(cluster, "alice", "bob-topic") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert deliver(cluster, "bob", "alice-topic") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_prefixed_acls_cover_the_prefix_only(cluster):
    from confluent_kafka import KafkaError

    assert deliver(cluster, "alice", "alice.orders") == 0
    assert deliver(cluster, "alice", "aliceorders") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_wins_over_allow(cluster):
    from confluent_kafka import KafkaError

    assert deliver(cluster, "bob", "shared.open") == 0
    assert deliver(cluster, "bob", "shared.secret") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_write_is_not_read(cluster):
    from confluent_kafka import KafkaError

    assert deliver(cluster, "alice", "alice-topic") == 0
    assert first_consumer_error(cluster, "alice", "alice-topic", "alice-group") == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert first_consumer_error(cluster, "bob", "shared.open", "shared-group") == \
        KafkaError.GROUP_AUTHORIZATION_FAILED  # All on the topics, nothing on the group


def test_no_joining_another_principals_group(cluster):
    from confluent_kafka import KafkaError

    assert first_consumer_error(cluster, "bob", "shared.open", "alice-group") == \
        KafkaError.GROUP_AUTHORIZATION_FAILED


def test_no_creating_or_deleting_topics(cluster):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings(cluster, "alice"))
    created = admin.create_topics([NewTopic("alice-new", 1, 1)], request_timeout=30)
    with pytest.raises(Exception) as refused:
        created["alice-new"].result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    deleted = admin.delete_topics(["alice-topic"], request_timeout=30)
    with pytest.raises(Exception) as refused:
        deleted["alice-topic"].result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_shows_each_principal_its_own_topics(cluster):
    from confluent_kafka.admin import AdminClient

    alice = set(AdminClient(settings(cluster, "alice")).list_topics(timeout=30).topics)
    assert alice == {"alice-topic", "alice.orders"}
    bob = set(AdminClient(settings(cluster, "bob")).list_topics(timeout=30).topics)
    assert bob == {"shared.open", "shared.secret"}  # denied Write, still Describe by All


def test_super_users_may_do_everything(cluster):
    from confluent_kafka.admin import AdminClient, NewTopic

    assert deliver(cluster, "admin", "bob-topic") == 0
    assert deliver(cluster, "admin", "shared.secret") == 0
    assert first_consumer_error(cluster, "admin", "bob-topic", "admin-group") == 0
    admin = AdminClient(settings(cluster, "admin"))
    admin.create_topics([NewTopic("admin-new", 1, 1)])["admin-new"].result(timeout=60)
    assert "admin-new" in admin.list_topics(timeout=30).topics


def test_kafka_python_gets_the_same_refusal(cluster):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap("SASL_PLAINTEXT"),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username="alice", sasl_plain_password="alice-secret",
                             enable_idempotence=False, max_block_ms=20000)
    try:
        assert producer.send("alice-topic", b"v").get(timeout=30).offset >= 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("bob-topic", b"v").get(timeout=30)
    finally:
        producer.close(timeout=5)


def test_the_cli_logs_in_with_a_command_config(cluster, tmp_path):
    import subprocess
    import sys

    def properties(user: str, password: str) -> str:
        path = tmp_path / f"{user}.properties"
        path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                        "sasl.jaas.config=org.apache.kafka.common.security.plain."
                        f'PlainLoginModule required username="{user}" password="{password}";\n')
        return str(path)

    def acls(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "simplekafka", "acls", *args,
                               "--bootstrap-server", cluster.bootstrap("SASL_PLAINTEXT")],
                              capture_output=True, text=True, timeout=120)

    admin = properties("admin", "admin-secret")
    added = acls("add", "--allow-principal", "User:carol", "--operation", "Read", "--topic",
                 "carol-topic", "--command-config", admin)
    assert added.returncode == 0, added.stderr
    listed = acls("list", "--topic", "carol-topic", "--command-config", admin)
    assert "(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)" \
        in listed.stdout
    refused = acls("list", "--command-config", properties("alice", "alice-secret"))
    assert refused.returncode == 1
    errors = refused.stderr.strip().splitlines()
    assert len(errors) == 1 and "ClusterAuthorizationFailedError" in errors[0]


def test_plaintext_clients_are_nobody_in_particular(cluster):
    """User:ANONYMOUS is no super user: without an ACL its write is refused, as alice's is."""
    from confluent_kafka import KafkaError, Producer

    outcome = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "message.timeout.ms": 20000})
    producer.produce("alice-topic", b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    assert outcome and outcome[0] is not None
    assert outcome[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
