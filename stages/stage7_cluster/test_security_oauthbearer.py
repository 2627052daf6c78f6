"""SASL/OAUTHBEARER with Kafka's unsecured tokens, against real clients.

One broker (module-scoped) serves SASL_PLAINTEXT and SASL_SSL with PLAIN,
SCRAM and OAUTHBEARER enabled, Kafka's unsecured validator requiring the
scope ``kafka``, and the ACL authorizer on (``super.users=User:admin``, the
brokers' own PLAIN login). ACLs give ``User:alice`` everything on topics and
groups prefixed ``oauth.`` and nobody else anything.

What must hold: confluent-kafka (librdkafka's own unsecured tokens) and
kafka-python (a token provider that writes the JWS itself) log in as
``User:<sub>`` and produce and consume; bob's equally valid token gets bob's
rights, which are none; an expired token, one without the required scope, one
signed with another ``alg`` and a malformed first message are refused with
Kafka's answers and nothing lands; our own client and the ``simplekafka acls``
command log in with OAUTHBEARER too; a session lasts no longer than its token
and a fresh token extends it on the same connection (KIP-368); a confluent-kafka
consumer re-authenticates on its own every 3 s (``connections.max.reauth.ms`` of
OAUTHBEARER on SASL_PLAINTEXT) and keeps consuming.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import subprocess
import sys
import time
import uuid

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.broker.security.certs import make_certificates
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
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.oauthbearer import UnsecuredTokenProvider
from stages.stage7_cluster.test_security_unauthenticated_path import call, connect, read_frame

pytestmark = pytest.mark.integration

LISTENERS = ["SASL_PLAINTEXT", "SASL_SSL"]
ADMIN = ("admin", "admin-secret")
REFUSED_TOPIC = "oauth.refused"
REAUTH_MS = 3000  # connections.max.reauth.ms of OAUTHBEARER on SASL_PLAINTEXT
GENERIC = ("Authentication failed during authentication due to invalid credentials with SASL "
           "mechanism OAUTHBEARER")


class Secured:
    def __init__(self, cluster: LocalCluster, certs):
        self.cluster, self.certs = cluster, certs

    def port(self, listener: str) -> int:
        return self.cluster.brokers[1].listener_ports[listener]

    def log(self) -> str:
        return self.cluster.brokers[1].log_file.read_text(errors="replace")

    def confluent(self, listener: str, principal: str, oauth: str = "scope=kafka") -> dict:
        return {"bootstrap.servers": self.cluster.bootstrap(listener),
                **client_config(listener, self.certs, "OAUTHBEARER", principal,
                                oauthbearer_config=oauth)}

    def admin_settings(self) -> dict:
        return {"bootstrap.servers": self.cluster.bootstrap("SASL_PLAINTEXT"),
                **client_config("SASL_PLAINTEXT", None, "PLAIN", *ADMIN)}

    def end_offset(self, topic: str) -> int:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.admin_settings(), "group.id": "offsets"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
        finally:
            consumer.close()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    base = tmp_path_factory.mktemp("oauthbearer")
    certs = make_certificates(base / "certs")
    config = secure_broker_config(certs, {}, tuple(LISTENERS),
                                  inter_broker_listener="SASL_PLAINTEXT", authorizer=True,
                                  oauthbearer={"unsecuredValidatorRequiredScope": "kafka"})
    config.update({"num.partitions": "1", "offsets.topic.replication.factor": "1",
                   "group.initial.rebalance.delay.ms": "0",
                   "connection.failed.authentication.delay.ms": "10",
                   "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms":
                       str(REAUTH_MS)})
    with LocalCluster(1, base_dir=base / "cluster", listeners=LISTENERS,
                      broker_config=config) as cluster:
        login = client_security("SASL_PLAINTEXT", "PLAIN", *ADMIN)
        with KafkaClient(cluster.bootstrap("SASL_PLAINTEXT"), security=login) as client, \
                Admin(client=client) as admin:
            admin.create_topics([NewTopic(REFUSED_TOPIC, 1, 1)])
            admin.create_acls([
                AclBinding(ResourcePattern(kind, "oauth.", PatternType.PREFIXED),
                           AccessControlEntry("User:alice", "*", AclOperation.ALL,
                                              AclPermissionType.ALLOW))
                for kind in (ResourceType.TOPIC, ResourceType.GROUP)])
        yield Secured(cluster, certs)


def topic_name(prefix: str) -> str:
    return f"oauth.{prefix}-{uuid.uuid4().hex[:8]}"


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def jws(claims: dict, header: dict | None = None, signature: str = "") -> str:
    """An unsecured JWS written here, independently of simplekafka's token builder."""
    return f"{b64url(header or {'alg': 'none'})}.{b64url(claims)}.{signature}"


def good_claims(sub: str = "alice", lifetime: float = 60, scope=("kafka",)) -> dict:
    now = time.time()
    return {"sub": sub, "iat": now, "exp": now + lifetime, "scope": list(scope)}


def round_trip_confluent(settings: dict, topic: str, count: int = 3) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({**settings, "message.timeout.ms": 20000})
    failures: list = []
    for i in range(count):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda err, _m: failures.append(err)
                         if err else None)
    assert producer.flush(30) == 0 and not failures, failures
    consumer = Consumer({**settings, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


# -- real clients that get in ------------------------------------------------------------------


@pytest.mark.parametrize("listener", LISTENERS)
def test_confluent_kafka_logs_in_with_librdkafkas_unsecured_token(secured, listener):
    topic = topic_name(listener.lower())
    assert round_trip_confluent(secured.confluent(listener, "alice"), topic) == \
        [b"v0", b"v1", b"v2"]
    assert f"authenticated as User:alice with OAUTHBEARER on listener {listener}" in \
        secured.log()


def test_kafka_python_logs_in_with_a_token_provider(secured):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self) -> str:
            return jws(good_claims())

        def extensions(self) -> dict:
            return {"traceId": "t-1"}

    topic = topic_name("kafka-python")
    settings = {"bootstrap_servers": secured.cluster.bootstrap("SASL_SSL"),
                "security_protocol": "SASL_SSL", "ssl_cafile": str(secured.certs.ca),
                "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Provider()}
    producer = KafkaProducer(**settings)
    for i in range(3):
        producer.send(topic, b"kp%d" % i)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", group_id=topic,
                             consumer_timeout_ms=20000, **settings)
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == 3:
            break
    consumer.close()
    assert got == [b"kp0", b"kp1", b"kp2"]


def test_the_principal_is_user_sub_so_bobs_valid_token_gets_bobs_rights(secured):
    from confluent_kafka import KafkaError, Producer

    outcome: list = []
    producer = Producer({**secured.confluent("SASL_PLAINTEXT", "bob"),
                         "message.timeout.ms": 10000})
    producer.produce(topic_name("bob"), b"x", on_delivery=lambda err, _m: outcome.append(err))
    producer.flush(20)
    assert outcome and outcome[0] is not None
    assert outcome[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert "authenticated as User:bob with OAUTHBEARER on listener SASL_PLAINTEXT" in \
        secured.log()


def test_our_client_and_the_acls_command_log_in_with_oauthbearer(secured, tmp_path):
    provider = UnsecuredTokenProvider.for_principal("alice", scope=("kafka",))
    login = client_security("SASL_SSL", "OAUTHBEARER", ssl_cafile=str(secured.certs.ca),
                            sasl_oauth_token_provider=provider)
    topic = topic_name("ours")
    with KafkaClient(secured.cluster.bootstrap("SASL_SSL"), security=login) as client, \
            Admin(client=client) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
        assert topic in admin.list_topics()
    # The command takes a Java client's properties: an unsecured token for the super user
    # is all it takes to be the super user, which is why such tokens are for development.
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
        'required unsecuredLoginStringClaim_sub="admin" unsecuredLoginListClaim_scope=",kafka";\n')
    listed = subprocess.run(
        [sys.executable, "-m", "simplekafka", "acls", "list", "--bootstrap-server",
         secured.cluster.bootstrap("SASL_PLAINTEXT"), "--command-config", str(properties)],
        capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "principal=User:alice" in listed.stdout


# -- what is refused ---------------------------------------------------------------------------


def oauth_exchange(secured, message: bytes):
    """Handshake and one SaslAuthenticate on a raw connection: (socket, answer)."""
    sock = connect(secured.port("SASL_PLAINTEXT"))
    assert call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"}).error_code == 0
    return sock, call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": message}, 2)


def produce_after(sock) -> bytes | None:
    from simplekafka.protocol.messages import encode_request
    from simplekafka.protocol.records import build_batch

    batch = build_batch([(None, b"should-not-land")])
    payload = encode_request(ApiKey.PRODUCE, 3, 9, "raw", {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": REFUSED_TOPIC,
                        "partition_data": [{"index": 0, "records": batch}]}]})
    try:
        sock.sendall(len(payload).to_bytes(4, "big") + payload)
    except OSError:
        return None
    return read_frame(sock)


# Tokens are built when the test runs, not at collection: a run of many workers can reach
# this test minutes after collecting it, past a good token's one-minute lifetime.
@pytest.mark.parametrize("make_token, answer", [
    (lambda: jws(good_claims(lifetime=-1)), '{"status":"invalid_token"}'),
    (lambda: jws(good_claims(scope=("read",))),
     '{"status":"insufficient_scope", "scope":"[kafka]"}'),
    (lambda: jws(good_claims(), {"alg": "HS256", "typ": "JWT"}, "c2lnbmVk"),
     '{"status":"invalid_token"}'),
    (lambda: jws({"iat": time.time(), "exp": time.time() + 60, "scope": ["kafka"]}),
     '{"status":"invalid_token"}'),
], ids=["expired", "without-the-scope", "signed", "without-a-subject"])
def test_refused_tokens_get_kafkas_answers_and_nothing_lands(secured, make_token, answer):
    from simplekafka.protocol.oauthbearer import client_first_message

    sock, first = oauth_exchange(secured, client_first_message(make_token()))
    assert (first.error_code, first.auth_bytes.decode()) == (0, answer)
    final = call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\x01"}, 3)
    assert (final.error_code, final.error_message) == (58, answer)  # SASL_AUTHENTICATION_FAILED
    assert produce_after(sock) is None  # closed: the Produce behind it is never read
    sock.close()
    assert secured.end_offset(REFUSED_TOPIC) == 0


def test_a_malformed_first_message_is_refused_at_once(secured):
    sock, first = oauth_exchange(secured, b"n,,\x01auth=Bearer\x01\x01")
    assert (first.error_code, first.error_message) == (58, GENERIC)
    assert produce_after(sock) is None
    sock.close()
    assert secured.end_offset(REFUSED_TOPIC) == 0


def test_librdkafka_without_the_required_scope_delivers_nothing(secured):
    from confluent_kafka import Producer

    outcome: list = []
    producer = Producer({**secured.confluent("SASL_PLAINTEXT", "alice", "scope=read"),
                         "message.timeout.ms": 3000})
    producer.produce(REFUSED_TOPIC, b"x", on_delivery=lambda err, _m: outcome.append(err))
    producer.flush(15)
    assert outcome and outcome[0] is not None
    assert secured.end_offset(REFUSED_TOPIC) == 0
    assert "OAUTHBEARER token refused on listener SASL_PLAINTEXT: The provided scope" in \
        secured.log()


# -- re-authentication ------------------------------------------------------------------------


def oauth_login(sock, token: str, correlation_id: int = 1):
    from simplekafka.protocol.oauthbearer import client_first_message

    assert call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"},
                correlation_id).error_code == 0
    answer = call(sock, ApiKey.SASL_AUTHENTICATE, 1,
                  {"auth_bytes": client_first_message(token)}, correlation_id + 1)
    assert (answer.error_code, answer.auth_bytes) == (0, b""), answer
    return answer.session_lifetime_ms


def metadata_answered(sock, correlation_id: int) -> bool:
    try:
        return call(sock, ApiKey.METADATA, 1, {"topics": []}, correlation_id) is not None
    except (OSError, struct.error, AttributeError, ValueError):
        return False


def test_a_token_bounds_the_session_and_a_fresh_one_extends_it(secured):
    """On SASL_PLAINTEXT ``connections.max.reauth.ms`` is 3 s for OAUTHBEARER: a token with
    2 s left gets a session of at most those 2 s; logging in again on the same connection
    with a fresh token (KIP-368) gets 3 s more, and the connection outlives the first token;
    a connection that does not log in again is closed once its token has expired."""
    sock, idle = connect(secured.port("SASL_PLAINTEXT")), connect(
        secured.port("SASL_PLAINTEXT"))
    short = jws(good_claims(lifetime=2.0))
    lifetime_ms = oauth_login(sock, short)
    assert 1000 < lifetime_ms <= 2000
    assert 1000 < oauth_login(idle, short) <= 2000
    time.sleep(1.1)  # Kafka's minimum between two re-authentications is a second
    assert oauth_login(sock, jws(good_claims(lifetime=60)), 10) == REAUTH_MS
    time.sleep(1.5)  # the first token has expired now
    assert metadata_answered(sock, 20)
    assert not metadata_answered(idle, 20)
    sock.close()
    idle.close()
    log = secured.log()
    assert "re-authenticated as User:alice with OAUTHBEARER on listener SASL_PLAINTEXT" in log
    assert "SASL session of User:alice on listener SASL_PLAINTEXT ended" in log


def test_a_confluent_consumer_reauthenticates_and_keeps_consuming(secured):
    """librdkafka logs in again on its own before each 3 s session ends, with its
    current token, and records keep coming in every session; none is closed for having
    ended. (Its tokens live a minute here: librdkafka refreshes a token 80 % through its
    life on a one-second timer and re-authenticates about 90 % through a session, so a
    token of a few seconds is presented again when nearly expired, the session answered
    is a fraction of a second, and its next handshake comes within the second Kafka
    requires between two: refused with ILLEGAL_SASL_STATE, by Kafka too.)"""
    from confluent_kafka import Consumer, Producer

    lifetime = REAUTH_MS / 1000
    topic = topic_name("reauth")
    producer = Producer({**secured.admin_settings(), "linger.ms": 0})
    producer.produce(topic, b"first")
    producer.flush(20)
    consumer = Consumer({**secured.confluent("SASL_PLAINTEXT", "alice",
                                             "scope=kafka lifeSeconds=60"),
                         "group.id": topic, "auto.offset.reset": "earliest",
                         "heartbeat.interval.ms": 500, "session.timeout.ms": 6000,
                         "fetch.wait.max.ms": 200})
    consumer.subscribe([topic])
    received: list[float] = []
    started = next_send = time.monotonic()
    try:
        while time.monotonic() - started < lifetime * 4:
            now = time.monotonic()
            if now >= next_send:
                producer.produce(topic, b"%f" % now)
                producer.poll(0)
                next_send = now + 0.1
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                received.append(time.monotonic())
        producer.flush(10)
    finally:
        consumer.close()
    assert received, "the consumer read nothing"
    first = received[0]
    for n in range(1, 3):
        window = (first + n * lifetime, first + (n + 1) * lifetime - 0.5)
        assert any(window[0] <= t < window[1] for t in received), (n, window)
    assert len(re.findall(r"re-authenticated as User:alice with OAUTHBEARER", secured.log())) \
        >= 2
