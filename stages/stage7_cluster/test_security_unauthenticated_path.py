"""The unauthenticated path bounded as Kafka bounds it, and SASL re-authentication (KIP-368).

One broker (module-scoped, a real process) serves PLAINTEXT and SASL_PLAINTEXT
with small limits: ``connections.max.idle.ms=2500``,
``max.connections.per.ip.overrides=127.0.0.2:3`` (clients bind 127.0.0.2 as
their source address to be that address), ``connections.max.reauth.ms=3000``
and Kafka's default ``sasl.server.max.receive.size`` (512 KiB).

What must hold: 1 MiB frames before login close their connections at once with
the broker's RSS (``/proc/<pid>/status``) bounded; a second ApiVersions before
the handshake closes the connection; an idle connection is closed after
``connections.max.idle.ms`` and not before; a fourth connection from an
address allowed three is closed while other addresses are served; a
confluent-kafka consumer logged in with SCRAM keeps consuming over several
session lifetimes, re-authenticating on its own; a client that does not
re-authenticate, and a deleted user's, lose their connection at the session's
end.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
import uuid

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.coordination.users import delete_scram_credential, set_scram_credential
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.sasl import SCRAM_MECHANISMS, ScramClient, make_credential

pytestmark = pytest.mark.integration

IDLE_MS = 2500
REAUTH_MS = 3000
SCRAM = "SCRAM-SHA-256"
USERS = {"dave": "dave-secret", "erin": "erin-secret", "frank": "frank-secret"}
OTHER_ADDRESS = "127.0.0.2"


class Broker:
    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster
        self.process = cluster.brokers[1]

    def port(self, listener: str = "PLAINTEXT") -> int:
        return self.process.port if listener == "PLAINTEXT" else \
            self.process.listener_ports[listener]

    def log(self) -> str:
        return self.process.log_file.read_text(errors="replace")

    def rss_kib(self) -> int:
        status = open(f"/proc/{self.process.pid}/status").read()
        return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)[1])


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("unauthenticated")
    config = secure_broker_config(None, {}, ("SASL_PLAINTEXT",))
    config.update({
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": "1",
        "connections.max.idle.ms": str(IDLE_MS),
        "max.connections.per.ip.overrides": f"{OTHER_ADDRESS}:3",
        "connections.max.reauth.ms": str(REAUTH_MS),
        "connection.failed.authentication.delay.ms": "100",
    })
    with LocalCluster(1, base_dir=base / "cluster", listeners=["SASL_PLAINTEXT"],
                      broker_config=config) as cluster:
        for user, password in USERS.items():
            set_scram_credential(cluster.zk, user, SCRAM,
                                 make_credential(SCRAM_MECHANISMS[SCRAM], password))
        found = Broker(cluster)
        cluster.wait_for(lambda: all(f"SCRAM credentials of user {u} updated" in found.log()
                                     for u in USERS), "the SCRAM users on the broker")
        yield found


# -- raw Kafka frames over a socket -------------------------------------------------------


def connect(port: int, source: str | None = None) -> socket.socket:
    sock = socket.socket()
    if source is not None:
        sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def send(sock: socket.socket, api_key: ApiKey, version: int, body: dict,
         correlation_id: int = 1) -> None:
    payload = encode_request(api_key, version, correlation_id, "raw", body)
    sock.sendall(struct.pack(">i", len(payload)) + payload)


def read_frame(sock: socket.socket) -> bytes | None:
    """The next response frame, or None once the broker closed the connection."""
    data = b""
    try:
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    except ConnectionResetError:
        return None
    return data[4:]


def call(sock: socket.socket, api_key: ApiKey, version: int, body: dict,
         correlation_id: int = 1):
    send(sock, api_key, version, body, correlation_id)
    frame = read_frame(sock)
    return None if frame is None else decode_response(api_key, version, frame)[1]


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the broker closes ``sock`` within ``seconds`` (reading what it sends)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def scram_login(port: int, user: str, password: str):
    """A raw connection logged in with SCRAM; returns (socket, session_lifetime_ms)."""
    sock = connect(port)
    assert call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": SCRAM}).error_code == 0
    client = ScramClient(SCRAM_MECHANISMS[SCRAM], user, password)
    first = call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.first()}, 2)
    final = call(sock, ApiKey.SASL_AUTHENTICATE, 1,
                 {"auth_bytes": client.final(first.auth_bytes)}, 3)
    assert final.error_code == 0, final
    client.verify(final.auth_bytes)
    return sock, final.session_lifetime_ms


def metadata(sock: socket.socket, correlation_id: int):
    return call(sock, ApiKey.METADATA, 1, {"topics": []}, correlation_id)


# -- before login ---------------------------------------------------------------------------


def test_frames_larger_than_sasl_server_max_receive_size_close_at_once(broker):
    """20 connections each announce a 1 MiB frame before login and send it: each is closed
    on the length alone, and the broker's RSS does not grow by what they sent."""
    before = broker.rss_kib()
    announced = 1 << 20
    socks = [connect(broker.port("SASL_PLAINTEXT")) for _ in range(20)]
    body = b"\x00\x12\x00\x00" + b"x" * (announced - 5)  # ApiVersions, one byte short

    def push(sock):
        try:
            sock.sendall(struct.pack(">i", announced) + body)
        except OSError:
            pass  # the broker closed it part-way: what must happen

    pushers = [threading.Thread(target=push, args=(s,)) for s in socks]
    for thread in pushers:
        thread.start()
    for thread in pushers:
        thread.join(15)
    assert all(closed_within(sock, 5) for sock in socks)
    grown = broker.rss_kib() - before
    assert grown < 8 * 1024, f"the broker's RSS grew by {grown} KiB"
    assert "frame length 1048576 outside 0..524288 (sasl.server.max.receive.size" in broker.log()
    for sock in socks:
        sock.close()
    # Kafka's limit is before login only: the same listener serves its users afterwards.
    sock, _lifetime = scram_login(broker.port("SASL_PLAINTEXT"), "frank", USERS["frank"])
    assert metadata(sock, 4) is not None
    sock.close()


def test_a_second_api_versions_before_the_handshake_closes_the_connection(broker):
    sock = connect(broker.port("SASL_PLAINTEXT"))
    assert call(sock, ApiKey.API_VERSIONS, 0, {}).error_code == 0
    assert call(sock, ApiKey.API_VERSIONS, 0, {}, 2) is None
    sock.close()


def test_failed_logins_are_answered_after_the_delay_then_closed(broker):
    """Kafka's delay is the same for every failed login: eight in parallel from one address
    are all answered after about 100 ms (a delay growing per address took 3.2 s)."""
    started = time.monotonic()
    socks = [connect(broker.port("SASL_PLAINTEXT")) for _ in range(8)]
    for sock in socks:
        assert call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}).error_code == 0
        send(sock, ApiKey.SASL_AUTHENTICATE, 1,
             {"auth_bytes": b"\x00frank\x00wrong"}, 2)
    for sock in socks:
        answer = decode_response(ApiKey.SASL_AUTHENTICATE, 1, read_frame(sock))[1]
        assert answer.error_code != 0
        assert closed_within(sock, 5)
        sock.close()
    assert 0.1 <= time.monotonic() - started < 2


# -- connection limits ----------------------------------------------------------------------


def test_an_idle_connection_is_closed_after_connections_max_idle_ms(broker):
    sock = connect(broker.port())
    assert call(sock, ApiKey.API_VERSIONS, 0, {}).error_code == 0
    answered = time.monotonic()
    assert not closed_within(sock, IDLE_MS / 1000 * 0.8)
    assert closed_within(sock, IDLE_MS / 1000 + 5)
    idle = time.monotonic() - answered
    assert IDLE_MS / 1000 <= idle < IDLE_MS / 1000 + 5
    assert "(connections.max.idle.ms)" in broker.log()
    sock.close()


def test_a_busy_connection_is_not_closed_as_idle(broker):
    sock = connect(broker.port())
    for correlation_id in range(int(IDLE_MS / 1000 * 2 / 0.5)):
        assert metadata(sock, correlation_id) is not None
        time.sleep(0.5)
    sock.close()


def test_max_connections_per_ip_closes_the_connection_past_it(broker):
    port = broker.port()
    allowed = [connect(port, OTHER_ADDRESS) for _ in range(3)]
    for sock in allowed:
        assert call(sock, ApiKey.API_VERSIONS, 0, {}).error_code == 0
    refused = connect(port, OTHER_ADDRESS)  # accepted by the kernel, closed by the broker
    assert closed_within(refused, 5)
    refused.close()
    others = [connect(port) for _ in range(4)]  # 127.0.0.1 has no such limit
    assert all(call(sock, ApiKey.API_VERSIONS, 0, {}).error_code == 0 for sock in others)
    assert ("rejected connection from 127.0.0.2 on listener PLAINTEXT: the address already "
            "has the configured maximum of 3 connections") in broker.log()
    allowed.pop().close()
    deadline = time.monotonic() + 10
    while True:  # the slot is free once the broker has seen the close
        again = connect(port, OTHER_ADDRESS)
        answer = call(again, ApiKey.API_VERSIONS, 0, {})
        again_ok = answer is not None
        if again_ok or time.monotonic() > deadline:
            break
        again.close()
        time.sleep(0.1)
    assert again_ok
    for sock in [*allowed, *others, again]:
        sock.close()


# -- re-authentication ------------------------------------------------------------------------


def produce_and_consume(broker, user: str, seconds: float, delete_after: float | None = None):
    """A producer on PLAINTEXT writes a record every 0.1 s for ``seconds``; a confluent-kafka
    consumer logged in as ``user`` with SCRAM reads them. Returns (times the consumer got each
    record, when the user was deleted or None)."""
    from confluent_kafka import Consumer, Producer

    topic = f"reauth-{user}-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.cluster.bootstrap(), "linger.ms": 0})
    consumer = Consumer({
        "bootstrap.servers": broker.cluster.bootstrap("SASL_PLAINTEXT"),
        **client_config("SASL_PLAINTEXT", None, SCRAM, user, USERS[user]),
        "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
        "heartbeat.interval.ms": 500, "session.timeout.ms": 6000,
        "fetch.wait.max.ms": 200, "topic.metadata.refresh.interval.ms": 1000,
    })
    producer.produce(topic, b"first")
    producer.flush(20)
    consumer.subscribe([topic])
    received: list[float] = []
    deleted = None
    started = time.monotonic()
    next_send = started
    try:
        while time.monotonic() - started < seconds:
            now = time.monotonic()
            if now >= next_send:
                producer.produce(topic, b"%f" % now)
                producer.poll(0)
                next_send = now + 0.1
            if delete_after is not None and deleted is None and now - started > delete_after:
                delete_scram_credential(broker.cluster.zk, user)
                deleted = time.monotonic()
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                received.append(time.monotonic())
        producer.flush(10)
    finally:
        consumer.close()
    return received, deleted


def test_a_scram_consumer_reauthenticates_and_keeps_consuming(broker):
    seconds = REAUTH_MS / 1000 * 4
    received, _ = produce_and_consume(broker, "dave", seconds)
    assert received, "the consumer read nothing"
    started = received[0]
    # Records kept coming in every session lifetime after the first.
    for lifetime in range(1, 4):
        window = (started + lifetime * REAUTH_MS / 1000, started + (lifetime + 1) *
                  REAUTH_MS / 1000 - 0.5)
        assert any(window[0] <= t < window[1] for t in received), (lifetime, window)
    log = broker.log()
    assert len(re.findall(r"re-authenticated as User:dave with SCRAM-SHA-256", log)) >= 2
    assert not re.search(r"SASL session of User:dave .* ended", log)


def test_a_deleted_users_connection_is_dropped_at_its_session_end(broker):
    seconds = REAUTH_MS / 1000 * 4
    received, deleted = produce_and_consume(broker, "erin", seconds, delete_after=2.0)
    assert deleted is not None
    assert any(t < deleted for t in received), "the consumer read nothing before"
    # At most one session (plus a poll) after the deletion, nothing more is read.
    late = [t for t in received if t > deleted + REAUTH_MS / 1000 + 1.0]
    assert not late, f"{len(late)} records read after erin's session ended"
    log = broker.log()
    assert re.search(r"failed SCRAM-SHA-256 re-authentication from|"
                     r"SASL session of User:erin on listener SASL_PLAINTEXT ended", log)


def test_a_client_that_does_not_reauthenticate_is_closed_at_its_session_end(broker):
    sock, lifetime_ms = scram_login(broker.port("SASL_PLAINTEXT"), "frank", USERS["frank"])
    assert lifetime_ms == REAUTH_MS
    logged_in = time.monotonic()
    correlation_id = 10
    while time.monotonic() - logged_in < REAUTH_MS / 1000 - 0.5:
        assert metadata(sock, correlation_id) is not None  # served within the session
        correlation_id += 1
        time.sleep(0.3)
    time.sleep(max(0.0, logged_in + REAUTH_MS / 1000 + 0.2 - time.monotonic()))
    assert metadata(sock, correlation_id) is None  # past its end: closed, unanswered
    assert "SASL session of User:frank on listener SASL_PLAINTEXT ended" in broker.log()
    sock.close()
