"""Holes an attacker on loopback found (issue 26), closed as Kafka closes them, with real clients.

One broker (module-scoped) with PLAINTEXT (User:ANONYMOUS, no super user: it
may DescribeConfigs by an ACL), SSL and SASL_PLAINTEXT listeners (the
inter-broker one: admin, the brokers' own login, is the only super user), an
authorizer, an encrypted TLS key (``ssl.key.password``) and JAAS texts with
passwords in them. alice may DescribeConfigs on the cluster, Read
and Write ``alice-topic``, Write (hence Describe) the transactional id
``alice-tx`` and Read group ``alice-group``; she may not Read ``other-topic``
nor do anything as a broker.

* DescribeConfigs (confluent-kafka as alice, as the super user admin, over
  PLAINTEXT), ``simplekafka configs --describe`` and the broker's log never
  show a password: password-type keys answer ``is_sensitive`` with a null value;
* a Produce of transactional batches without a transactional id is refused
  with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, even for a super user, and nothing
  lands (the last stable offset keeps up);
* TxnOffsetCommit needs Read on each topic, as OffsetCommit does;
* a Fetch claiming a replica id without ClusterAction leaves that replica's
  fetch session alone;
* a SCRAM credential stored with fewer than 4096 iterations does not log in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.broker.security.certs import make_certificates
from simplekafka.client.client import KafkaClient
from simplekafka.client.security import client_security
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.coordination.users import set_scram_credential
from simplekafka.protocol.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import build_batch
from simplekafka.protocol.sasl import (
    SCRAM_MECHANISMS,
    credential_from_salted_password,
    make_credential,
)

pytestmark = pytest.mark.integration

USERS = {"alice": "alice-secret-1", "mallory": "mallory-secret-2"}
KEY_PASSWORD = "key-password-3"
TOP_JAAS_SECRET = "top-jaas-secret-4"
SECRETS = (*USERS.values(), "admin-secret", KEY_PASSWORD, TOP_JAAS_SECRET)
TOPICS = ("alice-topic", "other-topic", "tx-topic", "fetch-topic")
PASSWORD_KEYS = ("sasl.jaas.config", "ssl.key.password", "listener.name.ssl.ssl.key.password",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                 "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config")


def acl(kind: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(ResourcePattern(kind, name, PatternType.LITERAL),
                      AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW))


def encrypted_keystore(plain: os.PathLike, out: os.PathLike) -> str:
    """``plain``'s key and certificate with the key encrypted under KEY_PASSWORD."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    data = open(plain, "rb").read()
    key = serialization.load_pem_private_key(data, None)
    certificates = x509.load_pem_x509_certificates(data)
    with open(out, "wb") as written:
        written.write(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(KEY_PASSWORD.encode())))
        written.write(b"".join(c.public_bytes(serialization.Encoding.PEM)
                               for c in certificates))
    return str(out)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("hardening")
    certs = make_certificates(base / "certs")
    config = secure_broker_config(certs, USERS, ("SSL", "SASL_PLAINTEXT"),
                                  inter_broker_listener="SASL_PLAINTEXT", authorizer=True)
    config.update({
        "ssl.keystore.location": encrypted_keystore(certs.broker, base / "broker-enc.pem"),
        "ssl.key.password": KEY_PASSWORD,
        "listener.name.ssl.ssl.key.password": KEY_PASSWORD,
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                            f'username="admin" password="admin-secret" '
                            f'user_nobody="{TOP_JAAS_SECRET}";',
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.num.partitions": "2",
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "10"})
    with LocalCluster(1, base_dir=base / "cluster", listeners=["SSL", "SASL_PLAINTEXT"],
                      broker_config=config) as running:
        with Admin(client=our_client(running, "admin", refresh=False)) as admin:
            admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS])
            admin.create_acls([
                AclBinding(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME,
                                           PatternType.LITERAL),
                           AccessControlEntry("User:ANONYMOUS", "*",
                                              AclOperation.DESCRIBE_CONFIGS,
                                              AclPermissionType.ALLOW)),
                acl(ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.DESCRIBE_CONFIGS),
                acl(ResourceType.TOPIC, "alice-topic", AclOperation.WRITE),
                acl(ResourceType.TOPIC, "alice-topic", AclOperation.READ),
                acl(ResourceType.TRANSACTIONAL_ID, "alice-tx", AclOperation.WRITE),
                acl(ResourceType.GROUP, "alice-group", AclOperation.READ),
            ])
        yield running


def sasl_settings(cluster: LocalCluster, user: str, password: str | None = None,
                  mechanism: str = "PLAIN") -> dict:
    return {"bootstrap.servers": cluster.bootstrap("SASL_PLAINTEXT"),
            **client_config("SASL_PLAINTEXT", mechanism=mechanism, user=user,
                            password=password or USERS.get(user, "admin-secret"))}


def our_client(cluster: LocalCluster, user: str | None = None,
               refresh: bool = True) -> KafkaClient:
    """SimpleKafka's own client: as ``user`` over SASL_PLAINTEXT, else PLAINTEXT."""
    if user is None:
        client = KafkaClient(cluster.bootstrap_servers, request_timeout_ms=20000)
    else:
        client = KafkaClient(cluster.bootstrap("SASL_PLAINTEXT"), request_timeout_ms=20000,
                             security=client_security("SASL_PLAINTEXT", "PLAIN", user,
                                                      USERS.get(user, "admin-secret")))
    if refresh:
        client.refresh_metadata(["alice-topic"])  # the brokers' addresses, for any principal
    return client


def broker_log(cluster: LocalCluster) -> str:
    return cluster.brokers[1].log_file.read_text(errors="replace")


# -- 1. secrets in DescribeConfigs ---------------------------------------------------------


def test_describe_configs_answers_no_password_to_anyone(cluster):
    from confluent_kafka.admin import AdminClient, ConfigResource

    for who, settings in [
            ("alice (DescribeConfigs on the cluster only)", sasl_settings(cluster, "alice")),
            ("admin (a super user)", sasl_settings(cluster, "admin", "admin-secret")),
            ("ANONYMOUS over PLAINTEXT (DescribeConfigs by an ACL)",
             {"bootstrap.servers": cluster.bootstrap_servers})]:
        admin = AdminClient(settings)
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        entries = admin.describe_configs([resource])[resource].result(timeout=30)
        for key in PASSWORD_KEYS:
            assert key in entries, (who, key)
            assert entries[key].is_sensitive and entries[key].value is None, (who, key)
        for name, entry in entries.items():
            shown = [entry.value, *(s.value for s in entry.synonyms.values())]
            assert not any(secret in (value or "") for value in shown for secret in SECRETS), \
                (who, name)
        assert not entries["ssl.client.auth"].is_sensitive
        assert entries["ssl.client.auth"].value == "requested"


def test_the_cli_and_the_log_show_no_password(cluster):
    shown = subprocess.run(
        [sys.executable, "-m", "simplekafka", "configs", "--describe", "--entity-type",
         "brokers", "--entity-name", "1", "--bootstrap-server", cluster.bootstrap_servers],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert shown.returncode == 0, shown.stderr
    assert "sasl.jaas.config=null (STATIC_BROKER_CONFIG, sensitive" in shown.stdout
    assert "ssl.key.password=null (STATIC_BROKER_CONFIG, sensitive" in shown.stdout
    assert "listener.name.sasl_plaintext.plain.sasl.jaas.config=null" in shown.stdout
    log = broker_log(cluster)
    for secret in SECRETS:
        assert secret not in shown.stdout + shown.stderr
        assert secret not in log


# -- 3. transactional batches without a transactional id ------------------------------------


def end_offsets(client: KafkaClient, topic: str) -> tuple[int, int]:
    """(high watermark, last stable offset) of partition 0."""
    found = []
    for isolation in (0, 1):
        answer = client.request(client.leader_for(topic, 0), ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": isolation, "topics": [{
                "name": topic, "partitions": [{"partition_index": 0, "timestamp": -1,
                                               "current_leader_epoch": -1}]}]})
        found.append(answer.topics[0].partitions[0].offset)
    return found[0], found[1]


def produce(client: KafkaClient, topic: str, records: bytes,
            transactional_id: str | None = None) -> int:
    answer = client.request(client.leader_for(topic, 0), ApiKey.PRODUCE, {
        "transactional_id": transactional_id, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
    return answer.responses[0].partition_responses[0].error_code


def test_transactional_batches_without_a_transactional_id_are_refused(cluster):
    client = our_client(cluster, "admin")  # a super user: refused all the same
    try:
        ids = client.request(client.least_loaded_node(), ApiKey.INIT_PRODUCER_ID, {
            "transactional_id": None, "transaction_timeout_ms": 60000})
        assert ids.error_code == ErrorCode.NONE
        batch = build_batch([(b"k", b"an open transaction no coordinator knows")],
                            producer_id=ids.producer_id, producer_epoch=ids.producer_epoch,
                            base_sequence=0, is_transactional=True)
        assert produce(client, "tx-topic", batch) == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert end_offsets(client, "tx-topic") == (0, 0)  # nothing landed
        # A plain record after it: read_committed readers are not held back.
        assert produce(client, "tx-topic", build_batch([(b"k", b"plain")])) == ErrorCode.NONE
        assert end_offsets(client, "tx-topic") == (1, 1)
    finally:
        client.close()
    alice = our_client(cluster, "alice")  # with an id she may not Write: refused too
    try:
        batch = build_batch([(b"k", b"v")], producer_id=ids.producer_id,
                            producer_epoch=ids.producer_epoch, base_sequence=0,
                            is_transactional=True)
        assert produce(alice, "alice-topic", batch, "mallory-tx") == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    finally:
        alice.close()


# -- 4. TxnOffsetCommit needs Read on the topics ------------------------------------------


def test_txn_offset_commit_needs_read_on_each_topic(cluster):
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

    settings = sasl_settings(cluster, "alice")
    producer = Producer({**settings, "transactional.id": "alice-tx",
                         "transaction.timeout.ms": 60000})
    consumer = Consumer({**settings, "group.id": "alice-group"})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("alice-topic", b"in the transaction")
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction(
                [TopicPartition("other-topic", 0, 1)], consumer.consumer_group_metadata(), 30)
        assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()
        producer.flush(5)

    # The broker's answer itself: the readable topic committed, the other refused.
    client = our_client(cluster, "alice")
    try:
        coordinator = client.request(client.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                     {"key": "alice-tx", "key_type": 1})
        assert coordinator.error_code == ErrorCode.NONE
        node = coordinator.node_id
        deadline = time.monotonic() + 60
        while True:  # the refused transaction above is being aborted: wait for it
            ids = client.request(node, ApiKey.INIT_PRODUCER_ID, {
                "transactional_id": "alice-tx", "transaction_timeout_ms": 60000})
            if ids.error_code != ErrorCode.CONCURRENT_TRANSACTIONS \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ids.error_code == ErrorCode.NONE
        txn = {"transactional_id": "alice-tx", "producer_id": ids.producer_id,
               "producer_epoch": ids.producer_epoch}
        added = client.request(node, ApiKey.ADD_OFFSETS_TO_TXN, {**txn,
                                                                  "group_id": "alice-group"})
        assert added.error_code == ErrorCode.NONE
        group_node = client.request(node, ApiKey.FIND_COORDINATOR,
                                    {"key": "alice-group", "key_type": 0}).node_id
        committed = client.request(group_node, ApiKey.TXN_OFFSET_COMMIT, {
            **txn, "group_id": "alice-group", "topics": [
                {"name": name, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                               "committed_metadata": ""}]}
                for name in ("other-topic", "alice-topic")]})
        codes = {t.name: t.partitions[0].error_code for t in committed.topics}
        assert codes == {"other-topic": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         "alice-topic": ErrorCode.NONE}
        ended = client.request(node, ApiKey.END_TXN, {**txn, "committed": False})
        assert ended.error_code == ErrorCode.NONE
    finally:
        client.close()


# -- 7. a Fetch claiming a replica id, the SCRAM iteration floor ---------------------------


def fetch(client: KafkaClient, replica_id: int, session_id: int, epoch: int) -> Any:
    return client.request(1, ApiKey.FETCH, {
        "replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": "fetch-topic", "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}] if epoch == 0 else [],
        "forgotten_topics_data": [], "rack_id": ""})


def test_a_fetch_claiming_a_replica_id_cannot_evict_its_session(cluster):
    follower = our_client(cluster, "admin")  # the brokers' own user: ClusterAction
    attacker = our_client(cluster, "alice")
    try:
        opened = fetch(follower, 2, 0, 0)  # a follower session as replica 2
        assert opened.error_code == ErrorCode.NONE and opened.session_id > 0
        claimed = fetch(attacker, 2, 0, 0)  # "I am replica 2 too, start my session"
        again = fetch(follower, 2, opened.session_id, 1)
        assert again.error_code == ErrorCode.NONE, ErrorCode(again.error_code).name
        assert again.session_id == opened.session_id
        assert claimed.session_id == 0
        assert [p.error_code for t in claimed.responses for p in t.partitions] == \
            [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    finally:
        follower.close()
        attacker.close()


def test_stored_scram_credentials_under_4096_iterations_do_not_log_in(cluster):
    from confluent_kafka.admin import AdminClient

    mechanism = SCRAM_MECHANISMS["SCRAM-SHA-256"]
    salt = os.urandom(16)
    weak = credential_from_salted_password(
        mechanism, mechanism.salted_password("weak-secret", salt, 1), salt, 1)
    set_scram_credential(cluster.zk, "weak", "SCRAM-SHA-256", weak)  # by hand, not a tool
    set_scram_credential(cluster.zk, "strong", "SCRAM-SHA-256",
                         make_credential(mechanism, "strong-secret"))
    cluster.wait_for(lambda: "SCRAM credentials of user strong updated" in broker_log(cluster)
                     and "SCRAM credentials of user weak updated" in broker_log(cluster),
                     "the SCRAM users on the broker")

    def logs_in(user: str, password: str) -> tuple[bool, list[str]]:
        errors: list[str] = []
        admin = AdminClient({**sasl_settings(cluster, user, password, "SCRAM-SHA-256"),
                             "error_cb": lambda e: errors.append(str(e))})
        try:
            admin.list_topics(timeout=8)
            return True, errors
        except Exception as exc:  # KafkaException: no broker answered after login
            deadline = time.monotonic() + 10
            while not any("Authentication failed" in e for e in errors) \
                    and time.monotonic() < deadline:
                admin.poll(0.2)  # error_cb is served from poll
            return False, [*errors, str(exc)]

    assert logs_in("strong", "strong-secret")[0]
    ok, errors = logs_in("weak", "weak-secret")
    assert not ok
    assert any("Authentication failed" in e for e in errors), errors
    assert "fewer than the minimum 4096" in broker_log(cluster)


def test_the_scram_step_of_a_refusal_tells_whether_the_user_exists_as_in_kafka():
    """What docs/security.md says: the same message, at the first message for an unknown
    user and at the final one for a wrong password (Kafka's ScramSaslServer does the same)."""
    from simplekafka.protocol.sasl import SaslAuthenticationError, ScramClient, ScramServer

    mechanism = SCRAM_MECHANISMS["SCRAM-SHA-256"]
    known = {"bob": make_credential(mechanism, "bob-secret")}
    server = ScramServer(mechanism, known.get)
    with pytest.raises(SaslAuthenticationError) as unknown:
        server.first(ScramClient(mechanism, "ghost", "x").first())
    client = ScramClient(mechanism, "bob", "wrong")
    server = ScramServer(mechanism, known.get)
    final = client.final(server.first(client.first()))
    with pytest.raises(SaslAuthenticationError) as wrong:
        server.final(final)
    assert str(unknown.value) == str(wrong.value)


# -- `simplekafka certs`: private keys 0600 from their creation ----------------------------


def test_certs_never_writes_a_key_through_a_planted_link(tmp_path):
    out, victim = tmp_path / "certs", tmp_path / "readable-by-all.pem"
    out.mkdir()
    victim.write_bytes(b"")
    victim.chmod(0o644)
    (out / "broker.pem").symlink_to(victim)  # left by another user of a shared directory
    made = subprocess.run(
        [sys.executable, "-m", "simplekafka", "certs", "--out", str(out), "--client", "c"],
        capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.umask(0),
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert made.returncode == 0, made.stderr
    assert victim.read_bytes() == b"" and (victim.stat().st_mode & 0o777) == 0o644
    for name in ("ca-key.pem", "broker.pem", "client-c.pem"):
        path = out / name
        assert not path.is_symlink() and b"PRIVATE KEY" in path.read_bytes(), name
        assert path.stat().st_mode & 0o777 == 0o600, name
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary left


def test_certs_creates_keys_0600_without_a_chmod(tmp_path, monkeypatch):
    from pathlib import Path

    from simplekafka.broker.security import certs

    def no_chmod(*_args, **_kwargs):
        raise AssertionError("a key was chmod-ed after its creation")

    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(Path, "chmod", no_chmod)
    old = os.umask(0)
    try:
        made = certs.make_certificates(tmp_path / "certs", clients=["c"])
    finally:
        os.umask(old)
    for path in (made.ca_key, made.broker, made.clients["c"]):
        assert path.stat().st_mode & 0o777 == 0o600, path
    made_again = certs.make_certificates(tmp_path / "certs", clients=["c"])  # over the old
    assert made_again.broker.stat().st_mode & 0o777 == 0o600


def test_scram_server_refuses_a_credential_under_4096_iterations():
    from simplekafka.protocol.sasl import SaslAuthenticationError, ScramClient, ScramServer

    mechanism = SCRAM_MECHANISMS["SCRAM-SHA-512"]
    salt = b"0123456789abcdef"
    weak = credential_from_salted_password(
        mechanism, mechanism.salted_password("pw", salt, 4095), salt, 4095)
    with pytest.raises(SaslAuthenticationError):
        ScramServer(mechanism, {"weak": weak}.get).first(
            ScramClient(mechanism, "weak", "pw").first())
