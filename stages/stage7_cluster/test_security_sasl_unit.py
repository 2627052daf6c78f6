"""SASL without sockets: SCRAM against RFC 7677's test vector, PLAIN, and the broker's
per-connection authenticator on Twisted's StringTransport and Clock.

What must hold: a SCRAM exchange gives the RFC's exact bytes; a connection on a
SASL listener answers ApiVersions and the SASL requests only, and closes on
anything else with nothing written; a failed login is answered after Kafka's
fixed delay (connection.failed.authentication.delay.ms), then closed; a
successful one puts ``User:<name>`` on the connection, which the dispatcher
hands to every handler.
"""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet import task
from twisted.internet.testing import StringTransport

from simplekafka.broker.apis.sasl import SaslAuthentication
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.broker.security.credentials import ScramCredentialCache
from simplekafka.broker.security.sasl import (
    FailedAuthenticationDelay,
    JaasConfig,
    SaslServerAuthenticator,
    SaslSettings,
)
from simplekafka.broker.server import KafkaConnection
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.sasl import (
    SCRAM_MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslAuthenticationError,
    ScramClient,
    ScramCredential,
    ScramServer,
    make_credential,
    parse_plain,
    plain_token,
)

SHA256 = SCRAM_MECHANISMS[SCRAM_SHA_256]

# RFC 7677 section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> ScramCredential:
    return make_credential(SHA256, "pencil", 4096, RFC_SALT)


# -- the mechanisms ------------------------------------------------------------------------


def test_scram_sha_256_client_gives_rfc_7677_bytes():
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)


def test_scram_sha_256_server_gives_rfc_7677_bytes():
    server = ScramServer(SHA256, {"user": rfc_credential()}.get, nonce=RFC_SERVER_NONCE)
    assert server.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


def test_client_refuses_a_server_that_does_not_know_the_password():
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationError):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_wrong_password_and_unknown_user_fail_alike(mechanism):
    scram = SCRAM_MECHANISMS[mechanism]
    stored = {"alice": make_credential(scram, "right")}
    messages = []
    for user, password in [("alice", "wrong"), ("mallory", "right")]:
        client = ScramClient(scram, user, password)
        server = ScramServer(scram, stored.get)
        with pytest.raises(SaslAuthenticationError) as failure:
            server.final(client.final(server.first(client.first())))
        messages.append(str(failure.value))
    assert messages[0] == messages[1]  # the answer does not tell whether the user exists
    assert "alice" not in messages[0] and "mallory" not in messages[0]


def test_credential_text_is_kafkas():
    credential = rfc_credential()
    text = credential.to_kafka()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert text.endswith(",iterations=4096") and "server_key=" in text
    assert ScramCredential.from_kafka(text) == credential
    with pytest.raises(ValueError):
        ScramCredential.from_kafka("salt=abc")


def test_iterations_outside_kafkas_bounds_are_refused():
    with pytest.raises(ValueError):
        make_credential(SHA256, "pw", iterations=100)


def test_plain_message():
    assert parse_plain(plain_token("alice", "pw")) == ("", "alice", "pw")
    for bad in [b"", b"alice", b"\0alice\0", b"\0\0pw", b"\xff\0a\0b"]:
        with pytest.raises(SaslAuthenticationError):
            parse_plain(bad)


def test_jaas_text_gives_users_and_login():
    jaas = JaasConfig.parse(
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="a=b,c";')
    assert jaas.login == ("admin", "admin-secret")
    assert jaas.users == {"admin": "admin-secret", "alice": "a=b,c"}


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_scram_server_never_fails_otherwise_on_garbage(first, final):
    server = ScramServer(SHA256, {"user": rfc_credential()}.get)
    try:
        server.first(first)
        server.final(final)
    except SaslAuthenticationError:
        return
    raise AssertionError("garbage authenticated")


# -- the authenticator on a connection ------------------------------------------------------


def request(api_key: ApiKey, version: int, body: dict, correlation_id: int = 1) -> bytes:
    payload = encode_request(api_key, version, correlation_id, "test", body)
    return struct.pack(">i", len(payload)) + payload


def frames(data: bytes) -> list[bytes]:
    found = []
    while data:
        (length,) = struct.unpack_from(">i", data)
        found.append(data[4:4 + length])
        data = data[4 + length:]
    return found


class Setup:
    """A SASL connection over StringTransport whose dispatcher records who asked."""

    def __init__(self, clock=None, mechanisms=("PLAIN", SCRAM_SHA_256)):
        self.clock = clock or task.Clock()
        self.credentials = ScramCredentialCache()
        self.credentials.update("bob", {SCRAM_SHA_256: make_credential(SHA256, "bob-pw")
                                        .to_kafka()})
        self.delay = FailedAuthenticationDelay(0.1, self.clock)
        self.settings = SaslSettings("SASL_PLAINTEXT", list(mechanisms), {"alice": "alice-pw"},
                                     self.credentials.get, self.delay, self.clock)
        self.seen = []
        self.dispatcher = RequestDispatcher()
        self.dispatcher.register(ApiKey.API_VERSIONS, lambda ctx, req: {
            "error_code": 0, "api_keys": [], "throttle_time_ms": 0})
        self.dispatcher.register(ApiKey.METADATA, self._metadata)

    def _metadata(self, context, request):
        self.seen.append((context.principal, context.listener))
        return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None,
                "controller_id": -1, "topics": []}

    def connect(self, peer_port: int = 5000):
        connection = KafkaConnection(self.dispatcher, 1 << 20, "SASL_PLAINTEXT",
                                     SaslAuthentication(SaslServerAuthenticator(self.settings),
                                                        self.dispatcher))
        transport = StringTransport(peerAddress=_Address("10.0.0.7", peer_port))
        connection.makeConnection(transport)
        return connection, transport


class _Address:
    def __init__(self, host, port):
        self.host, self.port = host, port


def answers(transport, *api) -> list:
    return [decode_response(key, version, frame)[1]
            for (key, version), frame in zip(api, frames(transport.value()))]


@pytest.mark.parametrize("api_key, version, body", [
    (ApiKey.METADATA, 1, {"topics": None}),
    (ApiKey.PRODUCE, 3, {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
                         "topic_data": []}),
    (ApiKey.FETCH, 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                       "max_bytes": 100, "isolation_level": 0, "topics": []}),
])
def test_requests_before_authentication_close_with_nothing_written(api_key, version, body):
    setup = Setup()
    connection, transport = setup.connect()
    connection.dataReceived(request(api_key, version, body))
    assert transport.value() == b"" and transport.disconnecting
    assert setup.seen == []


def test_api_versions_is_answered_before_authentication():
    setup = Setup()
    connection, transport = setup.connect()
    connection.dataReceived(request(ApiKey.API_VERSIONS, 0, {}))
    assert answers(transport, (ApiKey.API_VERSIONS, 0))[0].error_code == 0
    assert not transport.disconnecting


def test_plain_login_puts_the_principal_on_the_connection():
    setup = Setup()
    connection, transport = setup.connect()
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, 1)
                            + request(ApiKey.SASL_AUTHENTICATE, 1,
                                      {"auth_bytes": plain_token("alice", "alice-pw")}, 2)
                            + request(ApiKey.METADATA, 1, {"topics": None}, 3))
    handshake, authenticate = answers(transport, (ApiKey.SASL_HANDSHAKE, 1),
                                      (ApiKey.SASL_AUTHENTICATE, 1))
    assert handshake.error_code == 0 and handshake.mechanisms == ["PLAIN", SCRAM_SHA_256]
    assert authenticate.error_code == 0
    assert connection.principal == "User:alice"
    assert setup.seen == [("User:alice", "SASL_PLAINTEXT")]


def test_handshake_v0_then_bare_tokens():
    setup = Setup()
    connection, transport = setup.connect()
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))
    token = plain_token("alice", "alice-pw")
    connection.dataReceived(struct.pack(">i", len(token)) + token)
    assert frames(transport.value())[1] == b""  # PLAIN's empty answer, as a bare frame
    assert connection.principal == "User:alice"


def test_scram_login_over_sasl_authenticate():
    setup = Setup()
    connection, transport = setup.connect()
    client = ScramClient(SHA256, "bob", "bob-pw")
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": SCRAM_SHA_256}, 1)
                            + request(ApiKey.SASL_AUTHENTICATE, 2,
                                      {"auth_bytes": client.first()}, 2))
    first = answers(transport, (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 2))[1]
    transport.clear()
    connection.dataReceived(request(ApiKey.SASL_AUTHENTICATE, 2,
                                    {"auth_bytes": client.final(first.auth_bytes)}, 3))
    final = answers(transport, (ApiKey.SASL_AUTHENTICATE, 2))[0]
    assert final.error_code == 0
    client.verify(final.auth_bytes)
    assert connection.principal == "User:bob"


def test_unsupported_mechanism_is_answered_then_closed():
    setup = Setup()
    connection, transport = setup.connect()
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}))
    (answer,) = answers(transport, (ApiKey.SASL_HANDSHAKE, 1))
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert transport.disconnecting and connection.principal == "User:ANONYMOUS"


def failed_login(setup, port):
    connection, transport = setup.connect(port)
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}, 1)
                            + request(ApiKey.SASL_AUTHENTICATE, 1,
                                      {"auth_bytes": plain_token("alice", "nope")}, 2)
                            + request(ApiKey.METADATA, 1, {"topics": None}, 3))
    return connection, transport


def test_failed_login_is_answered_after_the_delay_then_closed():
    setup = Setup()
    for attempt, delay in enumerate([0.1, 0.1, 0.1, 0.1]):
        connection, transport = failed_login(setup, 6000 + attempt)
        setup.clock.advance(delay - 0.01)
        assert len(frames(transport.value())) == 1 and not transport.disconnecting
        setup.clock.advance(0.01)
        assert transport.disconnecting
        _handshake, authenticate = answers(transport, (ApiKey.SASL_HANDSHAKE, 1),
                                           (ApiKey.SASL_AUTHENTICATE, 1))
        assert authenticate.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "alice" not in (authenticate.error_message or "")
        assert len(frames(transport.value())) == 2  # the Metadata behind it: never answered
        assert connection.principal == "User:ANONYMOUS"
    assert setup.seen == []


def test_delay_is_the_same_for_every_failed_login_as_kafkas():
    clock = task.Clock()
    delay = FailedAuthenticationDelay(0.1, clock)
    assert [delay.record("a") for _ in range(7)] + [delay.record("b")] == [0.1] * 8
    assert delay.failures == 8


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.binary(max_size=64), max_size=6), st.integers(0, 3))
def test_garbage_before_authentication_never_reaches_a_handler(chunks, cut):
    setup = Setup()
    connection, _transport = setup.connect()
    stream = request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}) * (cut > 0)
    for chunk in chunks:
        stream += struct.pack(">i", len(chunk)) + chunk if cut != 2 else chunk
    connection.dataReceived(stream)
    setup.clock.advance(10)
    assert setup.seen == []
    assert connection.principal == "User:ANONYMOUS"


# -- a broker's own login to another broker ---------------------------------------------------


class _LoopbackReader:
    """Stands in for the controller channel's ResponseReader: each request goes straight
    into a broker-side connection, and its answer comes back as the response frame."""

    def __init__(self, connection, transport):
        self.connection, self.transport = connection, transport
        self.waiting = None

    def send(self, correlation_id, payload):
        from twisted.internet import defer

        self.waiting = defer.Deferred()
        self.connection.dataReceived(struct.pack(">i", len(payload)) + payload)
        waiting = self.waiting
        self.deliver()
        return waiting

    def deliver(self):
        """Hand over the broker's answer, if written (a failed login's comes later)."""
        answer = self.transport.value()
        if self.waiting is not None and (answer or self.transport.disconnecting):
            self.transport.clear()
            waiting, self.waiting = self.waiting, None
            if answer:
                waiting.callback(answer[4:])
            else:
                waiting.errback(ConnectionError("closed"))


@pytest.mark.parametrize("mechanism, password, works", [
    (SCRAM_SHA_256, "bob-pw", True), ("PLAIN", "alice-pw", True),
    (SCRAM_SHA_256, "wrong", False)])
def test_inter_broker_login(mechanism, password, works):
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.security.inter_broker import InterBrokerLogin

    user = "alice" if mechanism == "PLAIN" else "bob"
    config = BrokerConfig.from_properties({
        "broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x",
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "sasl.jaas.config": f'x required username="{user}" password="{password}";'})
    login = InterBrokerLogin(config)
    setup = Setup()
    connection, transport = setup.connect()
    outcome = []
    reader = _LoopbackReader(connection, transport)
    login._authenticate(reader, setup.clock).addCallbacks(outcome.append, outcome.append)
    setup.clock.advance(1)  # a failed login is answered after the delay
    reader.deliver()
    if works:
        assert outcome == [None] and connection.principal == f"User:{user}"
    else:
        assert len(outcome) == 1 and "failed" in str(outcome[0].value)
        assert connection.principal == "User:ANONYMOUS"
