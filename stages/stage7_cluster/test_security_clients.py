"""Real clients over every security protocol, against one broker serving all listeners.

One broker (module-scoped) serves PLAINTEXT, SSL (client certificates
requested), SASL_PLAINTEXT and SASL_SSL. PLAIN users come from the listeners'
JAAS text, SCRAM users from ``/config/users`` in ZooKeeper (written the way
``simplekafka users add`` writes them). confluent-kafka, kafka-python,
aiokafka and kcat each produce and consume over SSL, SASL_PLAINTEXT with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and SASL_SSL; and what must be refused
is refused, with nothing readable coming back.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import struct
import time
import uuid

import pytest

from simplekafka.broker.security.certs import make_certificates, make_client_certificate
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.coordination.users import set_scram_credential
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.sasl import SCRAM_MECHANISMS, make_credential
from stages.stage4_broker._interop import kcat

pytestmark = pytest.mark.integration

LISTENERS = ["SSL", "SASL_PLAINTEXT", "SASL_SSL"]
PLAIN_USERS = {"alice": "alice-secret"}
SCRAM_USERS = {"bob": ("SCRAM-SHA-256", "bob-secret"), "carol": ("SCRAM-SHA-512", "carol-secret")}
# (listener, mechanism, user, password): every way in that must work.
WAYS_IN = [
    ("SSL", None, None, None),
    ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", "bob-secret"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", "carol", "carol-secret"),
    ("SASL_SSL", "SCRAM-SHA-512", "carol", "carol-secret"),
]


class Secured:
    def __init__(self, cluster: LocalCluster, certs):
        self.cluster, self.certs = cluster, certs

    def bootstrap(self, listener: str) -> str:
        return self.cluster.bootstrap(listener)

    def port(self, listener: str) -> int:
        return self.cluster.brokers[1].listener_ports[listener]

    def log(self) -> str:
        return self.cluster.brokers[1].log_file.read_text(errors="replace")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    base = tmp_path_factory.mktemp("security")
    certs = make_certificates(base / "certs", clients=["client"])
    config = secure_broker_config(certs, PLAIN_USERS, LISTENERS)
    config["group.initial.rebalance.delay.ms"] = "0"
    # Failed logins are answered after this delay; keep it short for the module.
    config["connection.failed.authentication.delay.ms"] = "10"
    config["offsets.topic.replication.factor"] = "1"
    with LocalCluster(1, base_dir=base / "cluster", listeners=LISTENERS,
                      broker_config=config) as cluster:
        for user, (mechanism, password) in SCRAM_USERS.items():
            set_scram_credential(cluster.zk, user, mechanism,
                                 make_credential(SCRAM_MECHANISMS[mechanism], password))
        found = Secured(cluster, certs)
        cluster.wait_for(lambda: all(f"SCRAM credentials of user {u} updated" in found.log()
                                     for u in SCRAM_USERS), "the SCRAM users on the broker")
        yield found


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def confluent_settings(secured, listener, mechanism, user, password) -> dict:
    return {"bootstrap.servers": secured.bootstrap(listener),
            **client_config(listener, secured.certs, mechanism, user, password,
                            client_certificate=secured.certs.clients["client"])}


# -- the clients ---------------------------------------------------------------------------


def test_registration_carries_every_endpoint_as_kafka_writes_it(secured):
    import json

    registered = json.loads(secured.cluster.zk.get("/brokers/ids/1")[0])
    broker = secured.cluster.brokers[1]
    assert registered["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"] + [
        f"{name}://127.0.0.1:{broker.listener_ports[name]}" for name in LISTENERS]
    assert registered["listener_security_protocol_map"] == {
        name: name for name in ["PLAINTEXT", *LISTENERS]}
    assert (registered["host"], registered["port"]) == ("127.0.0.1", broker.port)


def test_metadata_answers_the_endpoints_of_the_listener_asked_on(secured):
    from confluent_kafka.admin import AdminClient

    for listener, mechanism, user, password in WAYS_IN[::2]:
        admin = AdminClient(confluent_settings(secured, listener, mechanism, user, password))
        brokers = admin.list_topics(timeout=20).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [
            ("127.0.0.1", secured.port(listener))], listener


def test_confluent_kafka_produces_and_consumes_every_way_in(secured):
    from confluent_kafka import Consumer, Producer

    for listener, mechanism, user, password in WAYS_IN:
        settings = confluent_settings(secured, listener, mechanism, user, password)
        topic = topic_name("ck")
        producer = Producer(settings)
        for i in range(3):
            producer.produce(topic, f"{listener}-{i}".encode())
        assert producer.flush(30) == 0, (listener, mechanism)
        consumer = Consumer({**settings, "group.id": topic, "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value().decode())
        consumer.close()
        assert got == [f"{listener}-{i}" for i in range(3)], (listener, mechanism)
    log = secured.log()
    assert ("authenticated as User:O=SimpleKafka demo,CN=client by its certificate on "
            "listener SSL") in log
    assert "authenticated as User:bob with SCRAM-SHA-256 on listener SASL_PLAINTEXT" in log
    assert "authenticated as User:carol with SCRAM-SHA-512 on listener SASL_SSL" in log


def test_kafka_python_produces_and_consumes_every_way_in(secured):
    from kafka import KafkaConsumer, KafkaProducer

    for listener, mechanism, user, password in WAYS_IN:
        settings = {"bootstrap_servers": secured.bootstrap(listener),
                    "security_protocol": listener}
        if mechanism:
            settings.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                            sasl_plain_password=password)
        if "SSL" in listener:
            client = str(secured.certs.clients["client"])
            settings.update(ssl_cafile=str(secured.certs.ca), ssl_certfile=client,
                            ssl_keyfile=client)
        topic = topic_name("kp")
        producer = KafkaProducer(**settings)
        for i in range(3):
            producer.send(topic, f"{listener}-{i}".encode())
        producer.flush(30)
        producer.close()
        consumer = KafkaConsumer(topic, auto_offset_reset="earliest", group_id=topic,
                                 consumer_timeout_ms=20000, **settings)
        got = []
        for message in consumer:
            got.append(message.value.decode())
            if len(got) == 3:
                break
        consumer.close()
        assert got == [f"{listener}-{i}" for i in range(3)], (listener, mechanism)


def test_aiokafka_produces_and_consumes_every_way_in(secured):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    async def round_trip(listener, mechanism, user, password) -> list[str]:
        settings = {"bootstrap_servers": secured.bootstrap(listener),
                    "security_protocol": listener}
        if mechanism:
            settings.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                            sasl_plain_password=password)
        if "SSL" in listener:
            client = str(secured.certs.clients["client"])
            settings["ssl_context"] = create_ssl_context(
                cafile=str(secured.certs.ca), certfile=client, keyfile=client)
        topic = topic_name("aio")
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"{listener}-{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings)
        await consumer.start()
        got: list[str] = []
        try:
            async with asyncio.timeout(30):
                async for message in consumer:
                    got.append(message.value.decode())
                    if len(got) == 3:
                        break
        finally:
            await consumer.stop()
        return got

    for listener, mechanism, user, password in WAYS_IN:
        got = asyncio.run(round_trip(listener, mechanism, user, password))
        assert got == [f"{listener}-{i}" for i in range(3)], (listener, mechanism)


def kcat_settings(secured, listener, mechanism, user, password) -> list[str]:
    settings = client_config(listener, secured.certs, mechanism, user, password,
                             client_certificate=secured.certs.clients["client"])
    return [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]


def test_kcat_produces_and_consumes_every_way_in(secured):
    for listener, mechanism, user, password in WAYS_IN:
        topic = topic_name("kcat")
        settings = kcat_settings(secured, listener, mechanism, user, password)
        lines = b"".join(f"{listener}-{i}\n".encode() for i in range(3))
        kcat(secured.bootstrap(listener), *settings, "-P", "-t", topic, stdin=lines)
        out = kcat(secured.bootstrap(listener), *settings, "-C", "-t", topic, "-o",
                   "beginning", "-c", "3", "-e")
        assert out.decode().split() == [f"{listener}-{i}" for i in range(3)], listener


# -- refusals ------------------------------------------------------------------------------


def refused(settings: dict, topic: str) -> str:
    """Produce with confluent-kafka; returns the error text (the test fails if it worked)."""
    from confluent_kafka import KafkaException, Producer

    errors: list[str] = []
    delivered: list[bool] = []
    producer = Producer({**settings, "error_cb": lambda e: errors.append(str(e)),
                         "message.timeout.ms": 1500, "reconnect.backoff.max.ms": 1000})
    try:
        producer.produce(topic, b"must not land",
                         on_delivery=lambda err, msg: delivered.append(err is None))
    except KafkaException as exc:
        errors.append(str(exc))
    deadline = time.monotonic() + 20  # a loaded machine may take a while to say why
    while not (errors and delivered) and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.flush(10)
    assert delivered == [False], "a refused client delivered a record"
    return " ".join(errors)


@pytest.mark.parametrize("case", ["wrong password", "unknown user", "wrong mechanism",
                                  "scram with a plain-only user"])
def test_bad_logins_are_refused_and_nothing_lands(secured, case):
    listener, mechanism, user, password = {
        "wrong password": ("SASL_PLAINTEXT", "PLAIN", "alice", "guess"),
        "unknown user": ("SASL_PLAINTEXT", "SCRAM-SHA-256", "mallory", "x"),
        "wrong mechanism": ("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "bob-secret"),
        "scram with a plain-only user": ("SASL_SSL", "SCRAM-SHA-256", "alice",
                                         "alice-secret"),
    }[case]
    topic = topic_name("refused")
    errors = refused(confluent_settings(secured, listener, mechanism, user, password), topic)
    assert re.search(r"[Aa]uthentication", errors), errors
    assert topic not in secured.cluster.zk.get_children("/brokers/topics")


def test_expired_and_untrusted_certificates_are_refused(secured, tmp_path):
    from confluent_kafka import Producer  # noqa: F401 (refused() uses it)

    expired = make_client_certificate(secured.certs, "expired", tmp_path / "expired.pem",
                                      expired=True)
    stranger = make_certificates(tmp_path / "other-ca", clients=["stranger"])
    for certificate in [expired, stranger.clients["stranger"]]:
        settings = {"bootstrap.servers": secured.bootstrap("SSL"),
                    **client_config("SSL", secured.certs,
                                    client_certificate=certificate)}
        topic = topic_name("badcert")
        errors = refused(settings, topic)
        assert re.search(r"SSL|certificate|handshake", errors, re.I), errors
        assert topic not in secured.cluster.zk.get_children("/brokers/topics")


def test_a_client_that_does_not_trust_the_broker_gets_nowhere(secured, tmp_path):
    stranger = make_certificates(tmp_path / "other-ca", clients=[])
    settings = {"bootstrap.servers": secured.bootstrap("SASL_SSL"),
                **client_config("SASL_SSL", stranger, "PLAIN", "alice", "alice-secret")}
    errors = refused(settings, topic_name("untrusted"))
    assert re.search(r"certificate verify failed|SSL", errors, re.I), errors


def raw_requests_before_login(port: int, requests: list[bytes], use_tls: bool = False,
                              certs=None) -> bytes:
    """Send frames on a fresh connection; returns every byte the broker sent back."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if use_tls:
        context = ssl.create_default_context(cafile=str(certs.ca))
        sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
    received = b""
    try:
        for payload in requests:
            sock.sendall(struct.pack(">i", len(payload)) + payload)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except (ConnectionResetError, ssl.SSLError):
        return received
    finally:
        sock.close()


@pytest.mark.parametrize("api_key, version, body", [
    (ApiKey.METADATA, 1, {"topics": None}),
    (ApiKey.PRODUCE, 3, {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                         "topic_data": [{"name": "sneaky", "partition_data": [
                             {"index": 0, "records": b"\0" * 70}]}]}),
    (ApiKey.FETCH, 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 100,
                       "isolation_level": 0, "topics": [{"topic": "sneaky", "partitions": [
                           {"partition": 0, "fetch_offset": 0,
                            "partition_max_bytes": 100}]}]}),
])
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_requests_before_login_are_disconnected_with_nothing_written(secured, listener,
                                                                     api_key, version, body):
    payload = encode_request(api_key, version, 7, "sneaky", body)
    answer = raw_requests_before_login(secured.port(listener), [payload],
                                       use_tls=listener == "SASL_SSL", certs=secured.certs)
    assert answer == b""
    assert "sneaky" not in secured.cluster.zk.get_children("/brokers/topics")


# -- managing SCRAM users --------------------------------------------------------------------


def can_log_in(secured, mechanism: str, user: str, password: str) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**confluent_settings(secured, "SASL_PLAINTEXT", mechanism, user,
                                              password), "socket.timeout.ms": 3000})
    try:
        admin.list_topics(timeout=3)
        return True
    except Exception:
        return False


def test_users_cli_adds_lists_and_deletes_without_a_broker_restart(secured, capsys):
    from simplekafka.cli import main

    zookeeper = secured.cluster.zookeeper_connect
    assert main(["users", "add", "dave", "--password", "dave-secret", "--mechanism",
                 "SCRAM-SHA-512", "--zookeeper", zookeeper]) == 0
    stored = secured.cluster.zk.get("/config/users/dave")[0].decode()
    assert "salt=" in stored and "stored_key=" in stored and "dave-secret" not in stored
    secured.cluster.wait_for(lambda: can_log_in(secured, "SCRAM-SHA-512", "dave",
                                                "dave-secret"), "dave to log in", timeout=30)
    assert main(["users", "list", "--zookeeper", zookeeper]) == 0
    assert "dave: SCRAM-SHA-512 (iterations=4096)" in capsys.readouterr().out
    assert main(["users", "delete", "dave", "--zookeeper", zookeeper]) == 0
    secured.cluster.wait_for(lambda: not can_log_in(secured, "SCRAM-SHA-512", "dave",
                                                    "dave-secret"), "dave to be refused",
                             timeout=30)
    assert main(["users", "delete", "dave", "--zookeeper", zookeeper]) == 2
    assert "no SCRAM credential" in capsys.readouterr().err


def test_admin_client_alters_and_describes_scram_credentials(secured):
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(confluent_settings(secured, "SASL_SSL", "SCRAM-SHA-512", "carol",
                                           "carol-secret"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("erin", info, b"erin-secret")])
    futures["erin"].result(30)
    described = admin.describe_user_scram_credentials(["erin", "carol"])
    erin = described["erin"].result(30)
    assert [(c.mechanism, c.iterations) for c in erin.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)]
    # No names (an empty list on the wire): every user, as Kafka answers.
    assert {"erin", "carol"} <= set(admin.describe_user_scram_credentials().result(30))
    secured.cluster.wait_for(lambda: can_log_in(secured, "SCRAM-SHA-256", "erin",
                                                "erin-secret"), "erin to log in", timeout=30)
    bad = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10), b"pw")])
    with pytest.raises(Exception, match=r"(?i)iterations|credential"):
        bad["frank"].result(30)
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "erin", ScramMechanism.SCRAM_SHA_256)])["erin"].result(30)
    with pytest.raises(Exception, match=r"(?i)not exist|RESOURCE_NOT_FOUND"):
        admin.describe_user_scram_credentials(["erin"])["erin"].result(30)


def test_any_user_name_is_kept_under_kafkas_sanitized_znode_and_logs_in(secured):
    """A name ZooKeeper would refuse as a path ("/", a character past U+FFFF) is
    URL-encoded in its znode, as Kafka's Sanitizer writes it, and still logs in."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    name = "ops/ella \U0001f418"
    admin = AdminClient(confluent_settings(secured, "SASL_SSL", "SCRAM-SHA-512", "carol",
                                           "carol-secret"))
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
        b"ella-secret")])[name].result(30)
    assert secured.cluster.zk.exists("/config/users/ops%2Fella%20%F0%9F%90%98") is not None
    assert name in admin.describe_user_scram_credentials([name])[name].result(30).user
    secured.cluster.wait_for(lambda: can_log_in(secured, "SCRAM-SHA-256", name, "ella-secret"),
                             "the sanitized user to log in", timeout=30)


# -- hostile bytes on the secured listeners ---------------------------------------------------


def test_random_and_truncated_bytes_and_silent_connections_never_break_the_broker(secured):
    """A bounded real-socket fuzz: garbage, truncated SASL frames, half TLS handshakes and
    connections that never speak, on the SASL and TLS listeners; the broker keeps serving."""
    import random

    rng = random.Random(14)
    handshake = encode_request(ApiKey.SASL_HANDSHAKE, 1, 1, "fuzz", {"mechanism": "PLAIN"})
    authenticate = encode_request(ApiKey.SASL_AUTHENTICATE, 1, 2, "fuzz",
                                  {"auth_bytes": b"\0alice\0alice-secret"})
    silent = [socket.create_connection(("127.0.0.1", secured.port(listener)), timeout=5)
              for listener in ("SASL_PLAINTEXT", "SSL", "SASL_SSL") for _ in range(10)]
    try:
        for attempt in range(60):
            listener = ["SASL_PLAINTEXT", "SSL", "SASL_SSL"][attempt % 3]
            kind = attempt % 4
            if kind == 0:  # random bytes
                data = rng.randbytes(rng.randrange(1, 300))
            elif kind == 1:  # a SASL exchange cut at a random byte
                frames = b"".join(struct.pack(">i", len(p)) + p for p in (handshake,
                                                                           authenticate))
                data = frames[:rng.randrange(1, len(frames))]
            elif kind == 2:  # a frame whose body is random
                body = rng.randbytes(rng.randrange(0, 64))
                data = struct.pack(">i", len(body)) + body
            else:  # a huge announced length
                data = struct.pack(">i", rng.choice([2**31 - 1, -1, 10**8]))
            with socket.create_connection(("127.0.0.1", secured.port(listener)),
                                          timeout=5) as sock:
                try:
                    sock.sendall(data)
                    sock.settimeout(0.3)
                    answer = sock.recv(4096)
                except (TimeoutError, ConnectionResetError, BrokenPipeError):
                    answer = b""
                if kind != 1 and listener == "SASL_PLAINTEXT":
                    assert answer == b"", (kind, answer[:40])  # nothing answered to garbage
    finally:
        for sock in silent:
            sock.close()
    assert secured.cluster.brokers[1].is_running
    secured.cluster.wait_for(lambda: can_log_in(secured, "SCRAM-SHA-256", "bob", "bob-secret"),
                             "a login after the fuzzing", timeout=30)
    assert "Traceback" not in secured.log()


def test_our_client_library_produces_and_consumes_every_way_in(secured):
    """simplekafka's own KafkaClient (so Producer, Consumer and Admin) over TLS and SASL."""
    from simplekafka.admin import Admin
    from simplekafka.client.client import KafkaClient
    from simplekafka.client.errors import KafkaError
    from simplekafka.client.security import client_security
    from simplekafka.consumer import Consumer
    from simplekafka.producer import Producer

    def security(listener, mechanism, user, password):
        return client_security(listener, mechanism, user, password, str(secured.certs.ca),
                               str(secured.certs.clients["client"]))

    for listener, mechanism, user, password in WAYS_IN:
        topic = topic_name("ours")
        writer = KafkaClient(secured.bootstrap(listener),
                             security=security(listener, mechanism, user, password))
        with Admin(client=writer) as admin:
            admin.create_topic(topic, 1, 1)
        with Producer(client=writer) as producer:
            for i in range(3):
                producer.send(topic, value=f"{listener}-{i}".encode()).result(30)
        reader = KafkaClient(secured.bootstrap(listener),
                             security=security(listener, mechanism, user, password))
        got: list[str] = []
        with Consumer(client=reader, auto_offset_reset="earliest") as consumer:
            consumer.assign([(topic, 0)])
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                got += [record.value.decode() for record in consumer.poll(500)]
        assert got == [f"{listener}-{i}" for i in range(3)], (listener, mechanism)
    wrong = KafkaClient(secured.bootstrap("SASL_SSL"), request_timeout_ms=5000,
                        security=security("SASL_SSL", "SCRAM-SHA-512", "carol", "guess"))
    with pytest.raises(KafkaError, match="SASL SCRAM-SHA-512 login as carol refused"):
        wrong.request(-1, ApiKey.METADATA, {"topics": None})
    wrong.close()
