"""``simplekafka certs`` and the TLS settings read from its PEM files, without a broker."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simplekafka.broker.config import BrokerConfig, ConfigError
from simplekafka.broker.security.certs import make_certificates, make_client_certificate
from simplekafka.broker.security.tls import load_keystore, load_truststore
from simplekafka.cli import main


def test_certs_cli_writes_a_ca_a_broker_and_clients(tmp_path, capsys):
    assert main(["certs", "--out", str(tmp_path), "--client", "alice", "--client", "bob"]) == 0
    out = capsys.readouterr().out
    assert "ssl.truststore.location" in out and "client-alice.pem" in out
    _key, chain = load_keystore(str(tmp_path / "broker.pem"))
    broker = chain[0].to_cryptography()
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    (ca,) = load_truststore(str(tmp_path / "ca.pem"))
    assert broker.issuer == ca.to_cryptography().subject
    alice = load_keystore(str(tmp_path / "client-alice.pem"))[1][0].to_cryptography()
    assert alice.subject.rfc4514_string() == "O=SimpleKafka demo,CN=alice"
    assert (tmp_path / "ca-key.pem").stat().st_mode & 0o077 == 0


def test_expired_client_certificate_is_in_the_past(tmp_path):
    files = make_certificates(tmp_path, clients=[])
    path = make_client_certificate(files, "old", tmp_path / "old.pem", expired=True)
    certificate = load_keystore(str(path))[1][0].to_cryptography()
    assert certificate.not_valid_after_utc < datetime.datetime.now(datetime.timezone.utc)


BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x"}


@pytest.mark.parametrize("settings, expected", [
    ({"listeners": "SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"},
     "ssl.keystore.location is required"),
    ({"listeners": "SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
      "ssl.keystore.location": "/nonexistent.pem"}, "cannot read /nonexistent.pem"),
    ({"listeners": "INTERNAL://127.0.0.1:9093"}, "listener.security.protocol.map"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "inter.broker.listener.name": "SASL_SSL"},
     "not in listeners"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
      "inter.broker.listener.name": "SASL_PLAINTEXT"}, "username="),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
      "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI is not supported"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
      "ssl.keystore.location": "KEYSTORE", "ssl.client.auth": "maybe"}, "ssl.client.auth"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
      "sasl.enabled.mechanisms": "OAUTHBEARER",
      "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
          'unsecuredValidatorAllowableClockSkewMs="-5";'},
     "oauthbearer.sasl.jaas.config: unsecuredValidatorAllowableClockSkewMs must not be"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
      "inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER",
      "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"}, "OAUTHBEARER is not supported"),
])
def test_bad_security_settings_are_one_clear_line(tmp_path, settings, expected):
    files = make_certificates(tmp_path, clients=[])
    settings = {k: (str(files.broker) if v == "KEYSTORE" else v) for k, v in settings.items()}
    with pytest.raises(ConfigError, match=expected) as failure:
        BrokerConfig.from_properties({**BASE, **settings})
    assert "\n" not in str(failure.value)


def test_a_kafka_default_mechanism_list_is_fine_without_sasl_listeners():
    config = BrokerConfig.from_properties({**BASE, "sasl.enabled.mechanisms": "GSSAPI"})
    assert [li.name for li in config.listeners] == ["PLAINTEXT"]


def test_listeners_endpoints_and_the_inter_broker_listener():
    config = BrokerConfig.from_properties({
        **BASE, "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://0.0.0.0:9094",
        "advertised.listeners": "INTERNAL://broker1.example:19094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "listener.name.internal.plain.sasl.jaas.config":
            'x required username="admin" password="pw" user_admin="pw";'})
    assert [(li.name, li.security_protocol) for li in config.listeners] == [
        ("PLAINTEXT", "PLAINTEXT"), ("INTERNAL", "SASL_PLAINTEXT")]
    assert config.advertised_listeners == {"PLAINTEXT": ("127.0.0.1", 9092),
                                           "INTERNAL": ("broker1.example", 19094)}
    assert config.inter_broker_listener == "INTERNAL"
    assert config.listener_setting("INTERNAL", "plain.sasl.jaas.config").startswith("x ")


# -- TLS without sockets: the principal, client-certificate modes, garbage on the wire --------


class _PeerWith:
    def __init__(self, certificate):
        self.certificate = certificate

    def getPeerCertificate(self):  # Twisted's name
        return self.certificate


def test_the_principal_is_the_client_certificates_subject(tmp_path):
    from simplekafka.broker.security.tls import principal_of

    files = make_certificates(tmp_path, clients=["alice"])
    certificate = load_keystore(str(files.clients["alice"]))[1][0]
    assert principal_of(_PeerWith(certificate)) == "User:O=SimpleKafka demo,CN=alice"
    assert principal_of(_PeerWith(None)) == "User:ANONYMOUS"


@pytest.mark.parametrize("mode, verify, fail_without", [
    ("required", True, True), ("requested", True, False), ("none", False, False)])
def test_ssl_client_auth_modes(tmp_path, mode, verify, fail_without):
    from OpenSSL import SSL

    from simplekafka.broker.security.tls import server_options

    files = make_certificates(tmp_path, clients=[])
    config = BrokerConfig.from_properties({
        **BASE, "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "ssl.keystore.location": str(files.broker), "ssl.truststore.location": str(files.ca),
        "ssl.client.auth": mode})
    context = server_options(config, "SSL").getContext()
    assert bool(context.get_verify_mode() & SSL.VERIFY_PEER) == verify
    assert bool(context.get_verify_mode() & SSL.VERIFY_FAIL_IF_NO_PEER_CERT) == fail_without


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("tls"), clients=[])


def tls_listener(files):
    """A TLS listener's protocol on a StringTransport, with a dispatcher that records calls."""
    from twisted.internet.testing import StringTransport
    from twisted.protocols.tls import TLSMemoryBIOFactory

    from simplekafka.broker.security.tls import principal_of, server_options
    from simplekafka.broker.server import KafkaServerFactory

    config = BrokerConfig.from_properties({
        **BASE, "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "ssl.keystore.location": str(files.broker), "ssl.truststore.location": str(files.ca),
        "ssl.client.auth": "required"})
    reached: list[bytes] = []
    factory = KafkaServerFactory(lambda frame, connection: reached.append(frame), 1 << 20, "SSL",
                                 tls_principal=principal_of)
    tls = TLSMemoryBIOFactory(server_options(config, "SSL"), False, factory)
    protocol = tls.buildProtocol(("127.0.0.1", 5555))
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport, reached


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=5))  # a read is never b""
def test_garbage_on_a_tls_listener_never_reaches_a_handler(tls_files, chunks):
    protocol, transport, reached = tls_listener(tls_files)
    for chunk in chunks:
        if transport.disconnecting:  # a bad handshake drops the connection: no more reads
            break
        protocol.dataReceived(chunk)
    assert reached == []


def test_a_tls_client_hello_cut_short_reaches_nothing(tls_files):
    protocol, transport, reached = tls_listener(tls_files)
    # The start of a real TLS 1.2 ClientHello record, then silence.
    protocol.dataReceived(bytes.fromhex("16030100c8010000c40303") + b"\0" * 20)
    assert reached == [] and transport.value()[:1] in (b"", b"\x15", b"\x16")
