"""The broker's side of SASL: one authenticator per connection on a SASL listener.

Kafka's SaslServerAuthenticator, in the same states:

1. a new connection may send ApiVersions (answered as usual; once: a second
   one closes the connection, though an answer of UNSUPPORTED_VERSION lets the
   client ask again at a version it has) and then must send SaslHandshake
   naming a mechanism the listener enables (else the answer is
   UNSUPPORTED_SASL_MECHANISM and the connection closes);
2. after SaslHandshake v1 the SASL messages come inside SaslAuthenticate
   requests; after v0 they come as bare size-prefixed frames (old clients);
3. when the mechanism is satisfied the connection carries the principal
   ``User:<name>`` and every request goes to the dispatcher from then on.

Anything else before that point (a Metadata, a Produce, a Fetch, garbage)
closes the connection without a byte written, and so does a frame larger than
``sasl.server.max.receive.size`` (512 KiB; the connection enforces it, unread,
until the login is complete). A failed authentication is
answered with SASL_AUTHENTICATION_FAILED, and then the connection closes; the
answer waits ``connection.failed.authentication.delay.ms`` (100 ms), for every
failed login, as Kafka's delayed close does (``FailedAuthenticationDelay``).
What bounds password guessing is the connection limits (``max.connections.per.ip``,
``max.connection.creation.rate``: ``broker/connection_quotas.py``).

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` set, a
successful SaslAuthenticate answers ``session_lifetime_ms``; the client sends
SaslHandshake and SaslAuthenticate again on the same connection before then
(same mechanism, same principal, at most once a second), which starts a new
session. A request that arrives after the session's end on a connection that
has not re-authenticated closes it, as Kafka's processor does
(``SaslServerAuthenticator.takes``): a deleted SCRAM user's connection lasts at
most one session.

PLAIN users are configured in JAAS text, as Kafka's PlainLoginModule takes
them: ``user_alice="alice-secret"`` entries (``JaasConfig``). SCRAM users live
in ZooKeeper (``credentials.py``). OAUTHBEARER has no users: a token names its
principal, and Kafka's unsecured validator (``protocol/oauthbearer.py``, its
options from ``listener.name.<l>.oauthbearer.sasl.jaas.config``) checks it. A
token also ends the session at its ``exp``: the lifetime answered is the
smaller of what is left of the token and ``connections.max.reauth.ms``, and a
session ends even without that key, as Kafka's ``ReauthInfo`` computes it.

This module is the state machine and the mechanisms: it takes plain values
(an API key, a mechanism's name, a client's token) and answers plain values
(an error code, the server's token, a delay). Reading the frames and building
the SaslHandshake and SaslAuthenticate answers is the handlers' part
(``simplekafka.broker.apis.sasl``), as everything that builds a wire answer is.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.jaas import JaasConfig
from simplekafka.protocol.oauthbearer import OAuthBearerServer, UnsecuredValidator
from simplekafka.protocol.sasl import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    SaslAuthenticationError,
    ScramCredential,
    ScramServer,
    parse_plain,
)

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import Clock
    from simplekafka.broker.config import BrokerConfig

log = logging.getLogger(__name__)


class LoggingIn(Protocol):
    """The connection a login is on (``KafkaConnection``): its peer, and the principal
    a successful login sets."""

    peer: str
    principal: str


def jaas_for(config: BrokerConfig, listener: str, mechanism: str) -> JaasConfig:
    """The JAAS text for one listener and mechanism, Kafka's prefixed key first."""
    prefixed = f"{mechanism.lower()}.sasl.jaas.config"
    return JaasConfig.parse(config.listener_setting(listener, prefixed)
                            or config.listener_setting(listener, "sasl.jaas.config"))


def reauth_ms(config: BrokerConfig, listener: str, mechanism: str) -> int:
    """``connections.max.reauth.ms`` for one listener and mechanism (0: sessions never end),
    Kafka's most specific key first: ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``."""
    value = (config.listener_setting(listener, f"{mechanism.lower()}.connections.max.reauth.ms")
             or config.listener_setting(listener, "connections.max.reauth.ms"))
    return max(int(value or 0), 0)


def oauthbearer_validator(config: BrokerConfig, listener: str) -> UnsecuredValidator:
    """Kafka's unsecured validator with the options of the listener's OAUTHBEARER JAAS text
    (ValueError, one line, for an option it cannot use)."""
    jaas = jaas_for(config, listener, OAUTHBEARER)
    try:
        return UnsecuredValidator(jaas.options)
    except ValueError as exc:
        raise ValueError(f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config: "
                         f"{exc}") from None


class FailedAuthenticationDelay:
    """How long to hold a failed authentication's answer: Kafka's
    ``connection.failed.authentication.delay.ms``, the same for every failed login.

    Kafka delays the close of a connection whose login failed (the answer goes
    out with the close) by this fixed time; it does not grow with repeated
    failures. ``failures`` counts them (for logs and tests).
    """

    def __init__(self, base: float, clock: Clock):
        self.base = base
        self.clock = clock
        self.failures = 0

    def record(self, address: str) -> float:
        """Count one failure from ``address``; returns the delay to apply to it."""
        self.failures += 1
        return self.base


@dataclass
class SaslSettings:
    """What every authenticator of one listener shares."""

    listener: str
    mechanisms: list[str]
    plain_users: dict[str, str]
    scram_lookup: Callable[[str, str], ScramCredential | None]
    delay: FailedAuthenticationDelay
    # The reactor, an IReactorTime: read here for seconds(), handed to Twisted's deferLater
    # by the handlers; Twisted names it as a zope interface, which no Protocol can be.
    clock: Any
    # sasl.server.max.receive.size: the largest frame read until the login is complete.
    max_receive_size: int = 524288
    # connections.max.reauth.ms per mechanism (0 or absent: sessions never end).
    reauth_ms: dict[str, int] = field(default_factory=dict)
    # OAUTHBEARER's token checks (Kafka's defaults when the listener has no JAAS options).
    oauthbearer: UnsecuredValidator = field(default_factory=UnsecuredValidator)


# Kafka's SaslServerAuthenticator lets a connection start re-authenticating at most once a
# second; a faster SaslHandshake is answered by the broker (ILLEGAL_SASL_STATE).
MIN_REAUTH_INTERVAL = 1.0


class SaslServerAuthenticator:
    """One connection's authentication: its state, the mechanism, the session.

    ``route`` says where a logged-in connection's request goes; until
    ``complete``, ``accepts`` says which request the state allows, and
    ``handshake``, ``authenticate`` and ``failed`` move it on.
    """

    INITIAL, AUTHENTICATE, RAW_TOKENS, FAILED = "initial", "authenticate", "raw", "failed"
    HANDSHAKE = "handshake"  # ApiVersions answered: only SaslHandshake may follow
    REAUTH = "reauth"  # a logged-in connection's SaslHandshake starts re-authentication

    # Where ``route`` sends a request.
    TO_AUTHENTICATOR, TO_DISPATCHER, SESSION_OVER = "authenticator", "dispatcher", "over"

    def __init__(self, settings: SaslSettings):
        self.settings = settings
        self.state = self.INITIAL
        self.complete = False
        self.mechanism: str | None = None
        self._scram: ScramServer | None = None
        self._oauth: OAuthBearerServer | None = None
        self._session_lifetime_ms = 0
        self.reauthenticating = False
        self.session_end: float | None = None  # settings.clock time; None: never ends
        self._reauth_started: float | None = None
        self.reauthentications = 0

    @property
    def authenticating(self) -> bool:
        """Whether frames go to this authenticator (and ``max_receive_size`` bounds them)."""
        return not self.complete or self.reauthenticating

    @property
    def max_receive_size(self) -> int:
        return self.settings.max_receive_size

    def route(self, api_key: int | None, connection: object) -> str:
        """Where a request with ``api_key`` (None: too short to tell) goes.

        On a logged-in connection whose session ends, a SaslHandshake starts a
        re-authentication, and any other request after the session's end is
        SESSION_OVER (the connection closes), as Kafka's processor does.
        """
        if self.authenticating:
            return self.TO_AUTHENTICATOR
        if self.session_end is None:
            return self.TO_DISPATCHER
        now = self.settings.clock.seconds()
        if (api_key == ApiKey.SASL_HANDSHAKE
                and (self._reauth_started is None
                     or now - self._reauth_started >= MIN_REAUTH_INTERVAL)):
            self._reauth_started = now
            self.reauthenticating = True
            self.state = self.REAUTH
            return self.TO_AUTHENTICATOR
        if now >= self.session_end:
            log.info("closing %s: the SASL session of %s on listener %s ended "
                     "(connections.max.reauth.ms) and it did not re-authenticate",
                     getattr(connection, "peer", "?"), getattr(connection, "principal", "?"),
                     self.settings.listener)
            return self.SESSION_OVER
        return self.TO_DISPATCHER

    @property
    def takes_raw_tokens(self) -> bool:
        """After SaslHandshake v0 the tokens come as bare frames, not in requests."""
        return self.state == self.RAW_TOKENS

    def accepts(self, api_key: int) -> bool:
        """Whether the state allows a request with ``api_key`` now (else: close)."""
        if api_key == ApiKey.API_VERSIONS:
            return self.state == self.INITIAL
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self.state in (self.INITIAL, self.HANDSHAKE, self.REAUTH)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            return self.state == self.AUTHENTICATE
        return False

    def api_versions_answered(self) -> None:
        """An ApiVersions at a version the broker has was answered: no second one."""
        self.state = self.HANDSHAKE

    def handshake(self, mechanism: str, version: int, peer: str) -> ErrorCode:
        """A SaslHandshake (``version``: v0 means bare tokens follow). Anything but NONE
        fails the authentication: the answer is sent, then the connection closes."""
        enabled = self.settings.mechanisms
        if mechanism not in enabled:
            log.info("%s asked for SASL mechanism %r; enabled are %s", peer, mechanism, enabled)
            self.state = self.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        if self.reauthenticating and (mechanism != self.mechanism or version < 1):
            log.info("closing %s: re-authentication asked for %r (SaslHandshake v%d); it must "
                     "use %s, with SaslAuthenticate", peer, mechanism, version, self.mechanism)
            self.state = self.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        if mechanism in SCRAM_MECHANISMS:
            self._scram = ScramServer(SCRAM_MECHANISMS[mechanism],
                                      lambda user: self.settings.scram_lookup(user, mechanism))
        if mechanism == OAUTHBEARER:
            self._oauth = OAuthBearerServer(self.settings.oauthbearer)
        self.state = self.AUTHENTICATE if version >= 1 else self.RAW_TOKENS
        return ErrorCode.NONE

    @property
    def lifetime_ms(self) -> int:
        """The session just begun, as SaslAuthenticate answers it (0: no end)."""
        if self.session_end is None or self.authenticating:
            return 0
        return self._session_lifetime_ms

    def authenticate(self, token: bytes, connection: LoggingIn) -> bytes:
        """Feed one client message to the mechanism; returns the server's next message
        (raises SaslAuthenticationError: then ``failed``)."""
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
        if self.mechanism == OAUTHBEARER:
            return self._oauthbearer(token, connection)
        scram = self._scram
        assert scram is not None
        if scram.username is None:
            return scram.first(token)
        final = scram.final(token)
        self._succeeded(connection, scram.username)
        return final

    def _oauthbearer(self, token: bytes, connection: LoggingIn) -> bytes:
        server = self._oauth
        assert server is not None
        now = self.settings.clock.seconds()
        answer = server.evaluate(token, now * 1000)
        if server.token is None:  # the JSON error: the client acknowledges it, then it fails
            log.info("%s: OAUTHBEARER token refused on listener %s: %s", connection.peer,
                     self.settings.listener, server.rejection)
            return answer
        self._succeeded(connection, server.token.principal, server.token.expires_ms)
        return answer

    def _succeeded(self, connection: LoggingIn, username: str,
                   expires_ms: int | None = None) -> None:
        """Log the connection in; ``expires_ms`` (a token's ``exp``) also bounds the session."""
        principal = f"User:{username}"
        if self.reauthenticating and principal != connection.principal:
            raise SaslAuthenticationError(f"Cannot change principals during re-authentication "
                                          f"from {connection.principal}: {principal}")
        now = self.settings.clock.seconds()
        lifetime_ms = self.settings.reauth_ms.get(self.mechanism or "", 0)
        if expires_ms is not None:  # Kafka's ReauthInfo: the credential's end, if sooner
            left = max(int(expires_ms - now * 1000), 0)
            lifetime_ms = min(left, lifetime_ms) if lifetime_ms > 0 else left
        self._session_lifetime_ms = lifetime_ms
        self.session_end = (now + lifetime_ms / 1000.0
                            if lifetime_ms > 0 or expires_ms is not None else None)
        if self.reauthenticating:
            self.reauthenticating = False
            self.reauthentications += 1
            log.info("%s re-authenticated as %s with %s on listener %s", connection.peer,
                     principal, self.mechanism, self.settings.listener)
        else:
            log.info("%s authenticated as %s with %s on listener %s", connection.peer,
                     principal, self.mechanism, self.settings.listener)
        self.complete = True
        connection.principal = principal

    def failed(self, connection: LoggingIn) -> float:
        """The login failed: how long to hold the answer before closing (seconds)."""
        self.state = self.FAILED
        host = connection.peer.rpartition(":")[0] or connection.peer
        delay = self.settings.delay.record(host)
        log.info("failed %s %sauthentication from %s on listener %s; answering in %.2f s, "
                 "then closing", self.mechanism, "re-" if self.reauthenticating else "",
                 connection.peer, self.settings.listener, delay)
        return delay


def _equal(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), given.encode())
