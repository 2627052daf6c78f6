"""The broker's side of SASL: one authenticator per connection on a SASL listener.

Kafka's SaslServerAuthenticator, in the same states:

1. a new connection may send ApiVersions (answered as usual) and then must
   send SaslHandshake naming a mechanism the listener enables (else the answer
   is UNSUPPORTED_SASL_MECHANISM and the connection closes);
2. after SaslHandshake v1 the SASL messages come inside SaslAuthenticate
   requests; after v0 they come as bare size-prefixed frames (old clients);
3. when the mechanism is satisfied the connection carries the principal
   ``User:<name>`` and every request goes to the dispatcher from then on.

Anything else before that point (a Metadata, a Produce, a Fetch, garbage)
closes the connection without a byte written. A failed authentication is
answered with SASL_AUTHENTICATION_FAILED and a message that never says whether
the user exists, and then the connection closes; the answer waits
``connection.failed.authentication.delay.ms``, doubled for every further
failure from the same address within a minute (``FailedAuthenticationDelay``),
so guessing passwords is slow.

PLAIN users are configured in JAAS text, as Kafka's PlainLoginModule takes
them: ``user_alice="alice-secret"`` entries (``JaasConfig``). SCRAM users live
in ZooKeeper (``credentials.py``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task

from simplekafka.broker.server import CloseAfter, CloseConnection
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode, ProtocolError
from simplekafka.protocol.jaas import JaasConfig
from simplekafka.protocol.messages import decode_request, encode_response
from simplekafka.protocol.sasl import (
    PLAIN,
    SCRAM_MECHANISMS,
    SaslAuthenticationError,
    ScramCredential,
    ScramServer,
    parse_plain,
)

log = logging.getLogger(__name__)

_HEADER_START = struct.Struct(">hhi")


def jaas_for(config: Any, listener: str, mechanism: str) -> JaasConfig:
    """The JAAS text for one listener and mechanism, Kafka's prefixed key first."""
    prefixed = f"{mechanism.lower()}.sasl.jaas.config"
    return JaasConfig.parse(config.listener_setting(listener, prefixed)
                            or config.listener_setting(listener, "sasl.jaas.config"))


class FailedAuthenticationDelay:
    """How long to hold a failed authentication's answer, per client address.

    The first failure waits ``base`` seconds; each further failure from the same
    address within ``window`` seconds of the last doubles it, up to 32 times
    ``base``. Addresses without failures cost nothing.
    """

    def __init__(self, base: float, clock: Any, window: float = 60.0, max_doublings: int = 5):
        self.base = base
        self.clock = clock
        self.window = window
        self.max_doublings = max_doublings
        self._failures: dict[str, tuple[int, float]] = {}

    def record(self, address: str) -> float:
        """Count one failure from ``address``; returns the delay to apply to it."""
        now = self.clock.seconds()
        count, last = self._failures.get(address, (0, now))
        count = count + 1 if now - last <= self.window else 1
        self._failures[address] = (count, now)
        if len(self._failures) > 10_000:  # forget the oldest addresses first
            for stale in sorted(self._failures, key=lambda a: self._failures[a][1])[:5_000]:
                del self._failures[stale]
        return self.base * 2 ** min(count - 1, self.max_doublings)


@dataclass
class SaslSettings:
    """What every authenticator of one listener shares."""

    listener: str
    mechanisms: list[str]
    plain_users: dict[str, str]
    scram_lookup: Callable[[str, str], ScramCredential | None]
    delay: FailedAuthenticationDelay
    clock: Any


class SaslServerAuthenticator:
    """One connection's authentication; ``receive`` takes its frames until ``complete``."""

    INITIAL, AUTHENTICATE, RAW_TOKENS, FAILED = "initial", "authenticate", "raw", "failed"

    def __init__(self, settings: SaslSettings, handler: Callable[[bytes, Any], Any]):
        self.settings = settings
        self.handler = handler
        self.state = self.INITIAL
        self.complete = False
        self.mechanism: str | None = None
        self._scram: ScramServer | None = None

    # -- the frames -----------------------------------------------------------------------

    def receive(self, frame: bytes, connection: Any) -> Any:
        peer = getattr(connection, "peer", "?")
        if self.state == self.RAW_TOKENS:
            return self._raw_token(frame, connection)
        if len(frame) < _HEADER_START.size:
            log.warning("closing %s: %d-byte frame before authentication", peer, len(frame))
            raise CloseConnection()
        api_key, _version, correlation_id = _HEADER_START.unpack_from(frame, 0)
        if api_key == ApiKey.API_VERSIONS and self.state == self.INITIAL:
            return self.handler(frame, connection)
        if api_key == ApiKey.SASL_HANDSHAKE and self.state == self.INITIAL:
            return self._handshake(frame, peer)
        if api_key == ApiKey.SASL_AUTHENTICATE and self.state == self.AUTHENTICATE:
            return self._authenticate(frame, connection)
        log.warning("closing %s: api key %d (correlation id %d) before SASL authentication "
                    "on listener %s", peer, api_key, correlation_id, self.settings.listener)
        raise CloseConnection()

    def _decode(self, frame: bytes, peer: str) -> tuple[Any, Any]:
        try:
            return decode_request(frame)
        except ProtocolError as exc:
            log.warning("closing %s: bad SASL request: %s", peer, exc)
            raise CloseConnection() from None

    def _handshake(self, frame: bytes, peer: str) -> Any:
        header, request = self._decode(frame, peer)
        enabled = self.settings.mechanisms
        mechanism = request.mechanism
        response = lambda code: encode_response(  # noqa: E731
            ApiKey.SASL_HANDSHAKE, header.api_version, header.correlation_id,
            {"error_code": code, "mechanisms": enabled})
        if mechanism not in enabled:
            log.info("%s asked for SASL mechanism %r; enabled are %s", peer, mechanism, enabled)
            self.state = self.FAILED
            return CloseAfter(response(ErrorCode.UNSUPPORTED_SASL_MECHANISM))
        self.mechanism = mechanism
        if mechanism in SCRAM_MECHANISMS:
            self._scram = ScramServer(SCRAM_MECHANISMS[mechanism],
                                      lambda user: self.settings.scram_lookup(user, mechanism))
        self.state = self.AUTHENTICATE if header.api_version >= 1 else self.RAW_TOKENS
        return response(ErrorCode.NONE)

    def _authenticate(self, frame: bytes, connection: Any) -> Any:
        header, request = self._decode(frame, connection.peer)

        def answer(code: int = 0, message: str | None = None, data: bytes = b"") -> bytes:
            return encode_response(ApiKey.SASL_AUTHENTICATE, header.api_version,
                                   header.correlation_id,
                                   {"error_code": code, "error_message": message,
                                    "auth_bytes": data, "session_lifetime_ms": 0})

        try:
            challenge = self._step(request.auth_bytes, connection)
        except SaslAuthenticationError as exc:
            return self._failed(connection, answer(ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                   str(exc)))
        return answer(data=challenge)

    def _raw_token(self, frame: bytes, connection: Any) -> Any:
        try:
            return self._step(frame, connection)
        except SaslAuthenticationError:
            return self._failed(connection, None)  # v0 has no way to say why: just close

    def _step(self, token: bytes, connection: Any) -> bytes:
        """Feed one client message to the mechanism; returns the server's next message."""
        if self.mechanism == PLAIN:
            authzid, username, password = parse_plain(token)
            expected = self.settings.plain_users.get(username)
            if authzid and authzid != username:
                raise SaslAuthenticationError("Authentication failed: Client requested an "
                                              "authorization id that is different from "
                                              "username")
            if expected is None or not _equal(expected, password):
                raise SaslAuthenticationError("Authentication failed: Invalid username or "
                                              "password")
            self._succeeded(connection, username)
            return b""
        scram = self._scram
        assert scram is not None
        if scram.username is None:
            return scram.first(token)
        final = scram.final(token)
        self._succeeded(connection, scram.username)
        return final

    def _succeeded(self, connection: Any, username: str) -> None:
        self.complete = True
        connection.principal = f"User:{username}"
        log.info("%s authenticated as User:%s with %s on listener %s", connection.peer,
                 username, self.mechanism, self.settings.listener)

    def _failed(self, connection: Any, response: bytes | None) -> defer.Deferred:
        self.state = self.FAILED
        host = connection.peer.rpartition(":")[0] or connection.peer
        delay = self.settings.delay.record(host)
        log.info("failed %s authentication from %s on listener %s; answering in %.2f s",
                 self.mechanism, connection.peer, self.settings.listener, delay)
        return task.deferLater(self.settings.clock, delay, CloseAfter, response)


def _equal(expected: str, given: str) -> bool:
    import hmac

    return hmac.compare_digest(expected.encode(), given.encode())


class SaslApis:
    """The SASL requests that reach the dispatcher, i.e. outside an authentication:
    on a listener without SASL, or again after a connection authenticated. Kafka
    answers both with ILLEGAL_SASL_STATE (no re-authentication here: sessions
    never expire, ``session_lifetime_ms`` is 0)."""

    def __init__(self, credentials: Any, reactor: Any, zookeeper: Callable[[], Any]):
        self.credentials = credentials
        self.reactor = reactor
        self.zookeeper = zookeeper

    def register(self, dispatcher: Any) -> None:
        dispatcher.register(ApiKey.SASL_HANDSHAKE, self.sasl_handshake)
        dispatcher.register(ApiKey.SASL_AUTHENTICATE, self.sasl_authenticate)

    def sasl_handshake(self, context: Any, request: Any) -> dict:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}

    def sasl_authenticate(self, context: Any, request: Any) -> dict:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                "error_message": f"no SASL authentication in progress on this connection "
                                 f"(listener {context.listener})",
                "auth_bytes": b"", "session_lifetime_ms": 0}
