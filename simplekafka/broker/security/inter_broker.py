"""A broker's own connections to other brokers, on the inter-broker listener.

Followers fetching from a leader and the controller sending LeaderAndIsr and
UpdateMetadata connect to the other broker's ``inter.broker.listener.name``
endpoint, with TLS when that listener's protocol has it, and log in with SASL
when it has that: the broker's own ``username``/``password`` from the
listener's JAAS text, with ``sasl.mechanism.inter.broker.protocol``. Kafka does
the same (its inter-broker principal is usually a super user for the ACLs).

A broker's requests to *itself* (the controller's LeaderAndIsr, UpdateMetadata
and StopReplica to the broker it runs in, the transaction coordinator's
WriteTxnMarkers to its own partitions) never touch a socket: they go straight
to the dispatcher on an ``OwnConnection``, which carries the principal another
broker would see this one log in as (``own_principal``). So ``super.users``
need list the brokers' own user and nothing else, exactly as with Kafka, whose
controller reaches its own broker over the inter-broker listener like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, NamedTuple, cast

from twisted.internet import defer
from twisted.internet.endpoints import SSL4ClientEndpoint, TCP4ClientEndpoint

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.sasl import (
    PLAIN,
    SCRAM_MECHANISMS,
    SaslAuthenticationError,
    ScramClient,
    plain_token,
)

if TYPE_CHECKING:
    from twisted.internet import ssl
    from twisted.internet.interfaces import (
        IOpenSSLClientConnectionCreator,
        IProtocolFactory,
        IReactorSSL,
        IReactorTCP,
        IReactorTime,
    )

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.controller.channel import ResponseReader
    from simplekafka.protocol.fields import Struct

log = logging.getLogger(__name__)

CLIENT_ID = "simplekafka-inter-broker"
CONNECT_TIMEOUT = 5
ANONYMOUS = "User:ANONYMOUS"


class OwnConnection(NamedTuple):
    """What the dispatcher reads from a connection, for a broker's requests to itself."""

    principal: str
    listener: str
    peer: str


def own_principal(config: BrokerConfig) -> str:
    """The principal this broker has on the inter-broker listener, as the others see it.

    SASL (SASL_PLAINTEXT, SASL_SSL): ``User:<username>`` of the broker's own login
    in the listener's JAAS text (PLAIN and SCRAM alike, as Kafka's default principal
    builder makes it). SSL: the subject of the broker's own certificate (the one it
    presents to the others), when the listener asks for client certificates
    (``ssl.client.auth`` requested or required); without that the others cannot
    see it either, and it is ``User:ANONYMOUS``, as on PLAINTEXT.
    """
    from simplekafka.broker.security.sasl import jaas_for

    name = config.inter_broker_listener
    listener = next(li for li in config.listeners if li.name == name)
    if listener.uses_sasl:
        login = jaas_for(config, name, config["sasl.mechanism.inter.broker.protocol"]).login
        return f"User:{login[0]}" if login is not None else ANONYMOUS
    if listener.uses_tls and str(config.listener_setting(
            name, "ssl.client.auth", "none")).lower() != "none":
        from simplekafka.broker.security.tls import load_keystore

        _key, chain = load_keystore(config.listener_setting(name, "ssl.keystore.location"),
                                    config.listener_setting(name, "ssl.key.password"))
        return "User:" + chain[0].to_cryptography().subject.rfc4514_string()
    return ANONYMOUS


def own_connection(config: BrokerConfig) -> OwnConnection:
    """The connection a broker's requests to itself come on (see the module docstring)."""
    name = config.inter_broker_listener
    host = config.advertised_listeners.get(name, ("", 0))[0] or "127.0.0.1"
    return OwnConnection(own_principal(config), name, f"{host}:0")


class InterBrokerLogin:
    """How this broker connects to the inter-broker listener of the others."""

    def __init__(self, config: BrokerConfig):
        from simplekafka.broker.security.sasl import jaas_for

        self.config = config
        self.listener = config.inter_broker_listener
        found = next(li for li in config.listeners if li.name == self.listener)
        self.uses_tls, self.uses_sasl = found.uses_tls, found.uses_sasl
        self.mechanism = config["sasl.mechanism.inter.broker.protocol"]
        self.login = jaas_for(config, self.listener, self.mechanism).login \
            if self.uses_sasl else None
        self._tls_options: dict[
            str, IOpenSSLClientConnectionCreator | ssl.CertificateOptions] = {}

    def endpoint(self, reactor: Reactor, host: str,
                 port: int) -> TCP4ClientEndpoint | SSL4ClientEndpoint:
        # The reactor is an IReactorTCP/IReactorSSL through zope, which a Protocol cannot name.
        if not self.uses_tls:
            return TCP4ClientEndpoint(cast("IReactorTCP", reactor), host, port,
                                      timeout=CONNECT_TIMEOUT)
        from simplekafka.broker.security.tls import client_options

        options = self._tls_options.get(host)
        if options is None:
            options = self._tls_options[host] = client_options(self.config, self.listener,
                                                               host)
        return SSL4ClientEndpoint(cast("IReactorSSL", reactor), host, port, options,
                                  timeout=CONNECT_TIMEOUT)

    @defer.inlineCallbacks
    def connect(self, reactor: Reactor, host: str, port: int, factory: IProtocolFactory
                ) -> Generator[defer.Deferred, object, ResponseReader]:
        """Connect (TLS as the listener wants), log in (SASL), fire with the protocol."""
        reader = cast("ResponseReader", (yield self.endpoint(reactor, host, port).connect(
            factory)))  # the factory's protocol
        if self.uses_sasl:
            try:
                yield self._authenticate(reader, reactor)
            except Exception:
                reader.transport.loseConnection()
                raise
        return reader

    @defer.inlineCallbacks
    def _authenticate(self, reader: ResponseReader,
                      reactor: Reactor) -> Generator[defer.Deferred[Struct], Struct, None]:
        assert self.login is not None  # checked at start-up (check_security_config)
        username, password = self.login
        correlation = iter(range(1, 10))

        @defer.inlineCallbacks
        def call(api_key: ApiKey, version: int,
                 body: dict) -> Generator[defer.Deferred, bytes, Struct]:
            correlation_id = next(correlation)
            waiter = reader.send(correlation_id,
                                 encode_request(api_key, version, correlation_id, CLIENT_ID,
                                                body))
            waiter.addTimeout(10, cast("IReactorTime", reactor))
            frame = yield waiter  # the response frame (ResponseReader.send)
            return decode_response(api_key, version, frame)[1]

        def authenticate(token: bytes) -> defer.Deferred[Struct]:
            return call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})

        handshake = yield call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": self.mechanism})
        if handshake.error_code:
            raise SaslAuthenticationError(
                f"inter-broker SASL mechanism {self.mechanism} refused (error "
                f"{handshake.error_code}; enabled: {handshake.mechanisms})")
        if self.mechanism == PLAIN:
            answers = [(yield authenticate(plain_token(username, password)))]
        else:
            scram = ScramClient(SCRAM_MECHANISMS[self.mechanism], username, password)
            first = yield authenticate(scram.first())
            answers = [first]
            if not first.error_code:
                final = yield authenticate(scram.final(first.auth_bytes))
                answers.append(final)
                if not final.error_code:
                    scram.verify(final.auth_bytes)
        failed = [a for a in answers if a.error_code]
        if failed:
            raise SaslAuthenticationError(
                f"inter-broker login as {username} failed: {failed[0].error_message}")
