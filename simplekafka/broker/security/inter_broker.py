"""A broker's own connections to other brokers, on the inter-broker listener.

Followers fetching from a leader and the controller sending LeaderAndIsr and
UpdateMetadata connect to the other broker's ``inter.broker.listener.name``
endpoint, with TLS when that listener's protocol has it, and log in with SASL
when it has that: the broker's own ``username``/``password`` from the
listener's JAAS text, with ``sasl.mechanism.inter.broker.protocol``. Kafka does
the same (its inter-broker principal is usually a super user for the ACLs).
"""

from __future__ import annotations

import logging
from typing import Any

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

log = logging.getLogger(__name__)

CLIENT_ID = "simplekafka-inter-broker"
CONNECT_TIMEOUT = 5


class InterBrokerLogin:
    """How this broker connects to the inter-broker listener of the others."""

    def __init__(self, config: Any):
        from simplekafka.broker.security.sasl import jaas_for

        self.config = config
        self.listener = config.inter_broker_listener
        found = next(li for li in config.listeners if li.name == self.listener)
        self.uses_tls, self.uses_sasl = found.uses_tls, found.uses_sasl
        self.mechanism = config["sasl.mechanism.inter.broker.protocol"]
        self.login = jaas_for(config, self.listener, self.mechanism).login \
            if self.uses_sasl else None
        self._tls_options: dict[str, Any] = {}

    def endpoint(self, reactor: Any, host: str, port: int) -> Any:
        if not self.uses_tls:
            return TCP4ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        from simplekafka.broker.security.tls import client_options

        options = self._tls_options.get(host)
        if options is None:
            options = self._tls_options[host] = client_options(self.config, self.listener,
                                                               host)
        return SSL4ClientEndpoint(reactor, host, port, options, timeout=CONNECT_TIMEOUT)

    @defer.inlineCallbacks
    def connect(self, reactor: Any, host: str, port: int, factory: Any) -> Any:
        """Connect (TLS as the listener wants), log in (SASL), fire with the protocol."""
        reader = yield self.endpoint(reactor, host, port).connect(factory)
        if self.uses_sasl:
            try:
                yield self._authenticate(reader, reactor)
            except Exception:
                reader.transport.loseConnection()
                raise
        return reader

    @defer.inlineCallbacks
    def _authenticate(self, reader: Any, reactor: Any) -> Any:
        assert self.login is not None  # checked at start-up (check_security_config)
        username, password = self.login
        correlation = iter(range(1, 10))

        @defer.inlineCallbacks
        def call(api_key: ApiKey, version: int, body: dict) -> Any:
            correlation_id = next(correlation)
            waiter = reader.send(correlation_id,
                                 encode_request(api_key, version, correlation_id, CLIENT_ID,
                                                body))
            waiter.addTimeout(10, reactor)
            frame = yield waiter
            return decode_response(api_key, version, frame)[1]

        def authenticate(token: bytes) -> Any:
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
