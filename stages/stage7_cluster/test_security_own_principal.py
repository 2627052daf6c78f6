"""A broker's requests to itself carry its own inter-broker principal, not User:ANONYMOUS.

The controller's LeaderAndIsr, UpdateMetadata and StopReplica to the broker it
runs in, and the transaction coordinator's WriteTxnMarkers to its own
partitions, reach the dispatcher without a socket. They come on the broker's
``own_connection``: the principal another broker sees it log in as on the
inter-broker listener (``User:<username>`` of its SASL login, the subject of its
certificate on SSL when client certificates are asked for, ``User:ANONYMOUS``
on PLAINTEXT, as with Kafka). So ``super.users`` needs the brokers' user and
nobody else. Unit tests on a broker without sockets (the handler harness);
``test_system_hard_bounce.py`` runs a real three-broker cluster so configured.
"""

from __future__ import annotations

import pytest
from twisted.internet import defer

from simplekafka.broker.config import BrokerConfig
from simplekafka.broker.security.inter_broker import own_connection, own_principal
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import encode_request
from stages.stage4_broker.test_broker_handlers import BROKER_ID, Harness

PLAIN_LOGIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
               'username="kafka-broker" password="s3cret" user_kafka-broker="s3cret";')
SCRAM_LOGIN = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
               'username="scram-broker" password="s3cret";')


def config(**settings: str) -> BrokerConfig:
    return BrokerConfig.from_properties({
        "broker.id": "1", "log.dirs": "/nonexistent", "zookeeper.connect": "127.0.0.1:1",
        **settings})


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from simplekafka.broker.security.certs import make_certificates

    return make_certificates(tmp_path_factory.mktemp("own-certs"), clients=[])


def test_plaintext_inter_broker_listener_is_anonymous_as_in_kafka():
    assert own_principal(config(listeners="PLAINTEXT://127.0.0.1:9092")) == "User:ANONYMOUS"


@pytest.mark.parametrize("mechanism, jaas_key, jaas, user", [
    ("PLAIN", "listener.name.internal.plain.sasl.jaas.config", PLAIN_LOGIN, "kafka-broker"),
    ("SCRAM-SHA-512", "listener.name.internal.scram-sha-512.sasl.jaas.config", SCRAM_LOGIN,
     "scram-broker"),
])
def test_sasl_inter_broker_listener_is_the_brokers_login(mechanism, jaas_key, jaas, user):
    found = config(**{
        "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://10.0.0.5:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "sasl.enabled.mechanisms": mechanism,
        "sasl.mechanism.inter.broker.protocol": mechanism, jaas_key: jaas})
    connection = own_connection(found)
    assert connection.principal == f"User:{user}"
    assert connection.listener == "INTERNAL"
    assert connection.peer == "10.0.0.5:0"  # an ACL's host sees the broker's own address


@pytest.mark.parametrize("client_auth, by_certificate", [
    ("required", True), ("requested", True), ("none", False)])
def test_ssl_inter_broker_listener_is_the_brokers_certificate(certs, client_auth,
                                                               by_certificate):
    from cryptography import x509

    from simplekafka.broker.security.tls import principal_of

    found = config(**{
        "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        "security.inter.broker.protocol": "SSL", "ssl.client.auth": client_auth,
        "ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca)})
    certificate = x509.load_pem_x509_certificate(certs.broker.read_bytes())

    class Presenting:  # a TLS transport whose peer presented the broker's certificate
        @staticmethod
        def getPeerCertificate():
            from OpenSSL import crypto

            return crypto.X509.from_cryptography(certificate)

    # What another broker's SSL listener makes of this broker's certificate, or nothing
    # when that listener does not ask for one.
    expected = principal_of(Presenting()) if by_certificate else "User:ANONYMOUS"
    assert "CN=broker" in expected or not by_certificate
    assert own_principal(found) == expected


def broker_with_login(tmp_path) -> Harness:
    """A harness broker whose inter-broker login is User:kafka-broker, the only super user."""
    return Harness(tmp_path, **{
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_LOGIN,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:kafka-broker"})


def update_metadata() -> dict:
    return {"controller_id": BROKER_ID, "controller_epoch": 1, "topic_states": [],
            "live_brokers": [{"id": BROKER_ID, "rack": None, "endpoints": [
                {"port": 9093, "host": "127.0.0.1", "listener": "SASL_PLAINTEXT",
                 "security_protocol": 2}]}]}


def answered(result):
    if isinstance(result, defer.Deferred):
        assert result.called
        return result.result
    return result


def test_the_controllers_requests_to_its_own_broker_are_authorized(tmp_path):
    from simplekafka.broker.controller.channel import ControllerChannel

    harness = broker_with_login(tmp_path)
    try:
        broker = harness.broker
        # What the ControllerService wires up: the channel's local handler is the broker's own.
        channel = ControllerChannel(harness.clock, BROKER_ID, broker._dispatch_own,
                                    lambda _b: None)
        response = answered(channel.send(BROKER_ID, ApiKey.UPDATE_METADATA, 5,
                                         update_metadata()))
        assert response.error_code == ErrorCode.NONE
        # The same request from nobody (no connection: User:ANONYMOUS) is refused.
        frame = encode_request(ApiKey.UPDATE_METADATA, 5, 1, "test", update_metadata())
        refused = answered(broker.dispatcher(frame, None))
        assert int.from_bytes(refused[4:6], "big") == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        harness.close()


def test_the_transaction_coordinators_markers_to_its_own_partitions_are_authorized(tmp_path):
    harness = broker_with_login(tmp_path)
    try:
        harness.connection = harness.broker.own_connection
        harness.lead("orders")
        markers = harness.broker.marker_requests
        response = answered(markers.send(BROKER_ID, ApiKey.WRITE_TXN_MARKERS, 0, {"markers": [
            {"producer_id": 7, "producer_epoch": 0, "transaction_result": True,
             "topics": [{"name": "orders", "partition_indexes": [0]}],
             "coordinator_epoch": 0}]}))
        codes = [p.error_code for m in response.markers for t in m.topics for p in t.partitions]
        assert codes == [ErrorCode.NONE]
    finally:
        harness.close()


def test_the_secure_set_up_makes_only_the_brokers_login_a_super_user():
    from simplekafka.cluster.security import secure_broker_config

    config = secure_broker_config(None, {"alice": "a"}, ("SASL_PLAINTEXT",),
                                  inter_broker_listener="SASL_PLAINTEXT", authorizer=True)
    assert config["super.users"] == "User:admin"
    found = BrokerConfig.from_properties({
        "broker.id": "1", "log.dirs": "/nonexistent", "zookeeper.connect": "127.0.0.1:1",
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093", **config})
    assert own_principal(found) == "User:admin"
    # On a PLAINTEXT inter-broker listener the brokers are User:ANONYMOUS: not offered.
    with pytest.raises(ValueError, match="SASL inter-broker listener"):
        secure_broker_config(None, {}, ("SASL_PLAINTEXT",), authorizer=True)
