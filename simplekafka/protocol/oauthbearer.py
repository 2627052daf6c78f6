"""SASL/OAUTHBEARER (RFC 7628, Kafka's KIP-255) with unsecured JWS tokens, without sockets.

The client sends one message, ``n,[a=<authzid>],\\x01auth=Bearer <token>\\x01
[key=value\\x01...]\\x01`` (the ``key=value`` pairs are SASL extensions). The
server validates the token: on success it answers nothing and the principal is
``User:<the token's principal claim>``; on failure it answers a JSON error,
``{"status":"invalid_token"}`` (or ``insufficient_scope`` with the scope it
wanted), the client acknowledges with a single ``\\x01``, and only then does the
authentication fail, with that JSON as the error message.

What Kafka checks out of the box, and what this module implements, is the
*unsecured* token of its ``OAuthBearerUnsecuredValidatorCallbackHandler``: a
JWS (RFC 7515) whose header says ``"alg":"none"`` and whose signature part is
empty, so anybody can write one for any principal. It exists so that
OAUTHBEARER code paths can be developed and tested without an authorization
server; Kafka says it is not for production, and neither is it here. The checks:

* three dot-separated base64url parts, JSON objects in the first two, an empty third;
* ``alg`` is ``none``;
* the principal claim (``unsecuredValidatorPrincipalClaimName``, default ``sub``)
  is a non-blank string; ``exp`` is a number (seconds since the epoch);
* ``iat``, if present, is not after now plus the allowed clock skew
  (``unsecuredValidatorAllowableClockSkewMs``, default 0); now minus the skew is
  before ``exp``; ``exp`` is after ``iat``;
* the scope claim (``unsecuredValidatorScopeClaimName``, default ``scope``; a
  string is one scope, a list is several) holds every scope of
  ``unsecuredValidatorRequiredScope`` (space-separated; default none).

The token's ``exp`` also bounds the session: the broker answers a session
lifetime no longer than what is left of the token (KIP-368), so a client must
re-authenticate with a fresh token before its token expires.

The client side builds tokens the way Kafka's ``OAuthBearerUnsecuredLoginCallbackHandler``
does from its JAAS options (``unsecuredLoginStringClaim_sub="alice"``,
``unsecuredLoginListClaim_scope=",read,write"``, ``unsecuredLoginLifetimeSeconds``):
``UnsecuredTokenProvider``, whose ``token()`` kafka-python takes as its
``sasl_oauth_token_provider`` too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from simplekafka.json_values import JsonMapping, JsonObject
from simplekafka.protocol.sasl import OAUTHBEARER, SaslAuthenticationError

__all__ = ["OAuthBearerServer", "TokenRejected", "UnsecuredTokenProvider", "UnsecuredValidator",
           "ValidatedToken", "client_first_message", "parse_client_first", "unsecured_jws"]

SEPARATOR = "\x01"
# RFC 7628's grammar as Kafka applies it: a saslname authzid, extension keys of letters only,
# values of printable ASCII, space and tab, CR, LF; the token is base64url and dots.
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # no "," or "=" unescaped
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<pairs>(?:{_KEY}={_VALUE}\x01)*)\x01", re.S)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)", re.S)

VALIDATOR_OPTIONS = ("unsecuredValidatorPrincipalClaimName", "unsecuredValidatorScopeClaimName",
                     "unsecuredValidatorRequiredScope", "unsecuredValidatorAllowableClockSkewMs")


def _generic_failure() -> SaslAuthenticationError:
    # Kafka hides why a malformed message failed (its SaslException text is not sent).
    return SaslAuthenticationError("Authentication failed during authentication due to invalid "
                                   f"credentials with SASL mechanism {OAUTHBEARER}")


# -- the client's first message ----------------------------------------------------------------


def client_first_message(token: str, authzid: str = "",
                         extensions: Mapping[str, str] | None = None) -> bytes:
    """The client's one message (RFC 7628 section 3.1); ``auth`` is not an extension name."""
    pairs = "".join(f"{SEPARATOR}{key}={value}" for key, value in (extensions or {}).items())
    authz = f"a={authzid}" if authzid else ""
    return f"n,{authz},{SEPARATOR}auth=Bearer {token}{pairs}{SEPARATOR}{SEPARATOR}".encode()


def parse_client_first(message: bytes) -> tuple[str, str, dict[str, str]]:
    """(authzid, token, extensions) of a client first message; a malformed one fails
    with Kafka's generic message."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise _generic_failure() from None
    match = _CLIENT_FIRST.fullmatch(text)
    if match is None:
        raise _generic_failure()
    pairs = dict(item.split("=", 1) for item in match["pairs"].split(SEPARATOR) if item)
    auth = _AUTH.fullmatch(pairs.pop("auth", ""))
    if auth is None or auth["scheme"].lower() != "bearer":
        raise _generic_failure()
    return match["authzid"] or "", auth["token"], pairs


# -- unsecured JWS ------------------------------------------------------------------------------


def _b64url(data: JsonMapping) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unsecured_jws(claims: JsonMapping, header: JsonMapping | None = None) -> str:
    """``base64url(header).base64url(claims).`` with ``{"alg":"none"}`` as the default header."""
    return f"{_b64url(dict(header or {'alg': 'none'}))}.{_b64url(dict(claims))}."


class TokenRejected(Exception):
    """A token that does not validate: ``status`` and, for a missing scope, ``scope``."""

    def __init__(self, reason: str, scope: list[str] | None = None):
        super().__init__(reason)
        self.reason = reason
        self.scope = scope

    @property
    def status(self) -> str:
        return "insufficient_scope" if self.scope is not None else "invalid_token"

    def json(self) -> str:
        """The server's error message, formatted as Kafka formats it."""
        text = f'{{"status":"{self.status}"'
        if self.scope is not None:
            text += f', "scope":"[{", ".join(self.scope)}]"'
        return text + "}"


def _decode_part(part: str) -> JsonObject:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        raise TokenRejected("malformed Base64 URL encoded value or JSON") from None
    if not isinstance(decoded, dict):
        raise TokenRejected("malformed JSON: not an object")
    return decoded


def _number(claims: JsonMapping, name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenRejected(f"The '{name}' claim was not of type Number")
    return float(value)


@dataclass(frozen=True)
class ValidatedToken:
    """A token that passed: who it names, until when (ms since the epoch), with which scope."""

    principal: str
    expires_ms: int
    scope: frozenset[str]
    claims: JsonObject


class UnsecuredValidator:
    """Kafka's unsecured validator, configured by its JAAS options (``VALIDATOR_OPTIONS``)."""

    def __init__(self, options: Mapping[str, str] | None = None):
        options = options or {}
        self.principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() \
            or "sub"
        self.scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() \
            or "scope"
        self.required_scope = (options.get("unsecuredValidatorRequiredScope") or "").split()
        skew = (options.get("unsecuredValidatorAllowableClockSkewMs") or "0").strip() or "0"
        try:
            self.clock_skew_ms = int(skew)
        except ValueError:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs must be an integer, "
                             f"got {skew!r}") from None
        if self.clock_skew_ms < 0:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs must not be negative, "
                             f"got {self.clock_skew_ms}")

    def validate(self, token: str, now_ms: float) -> ValidatedToken:
        """The token's principal, expiry and scope, or ``TokenRejected``."""
        if ".." in token:
            raise TokenRejected("Malformed compact serialization contains '..'")
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenRejected("Unsecured JWS compact serializations must have 3 dot-separated "
                                "Base64URL-encoded values")
        header, claims = _decode_part(parts[0]), _decode_part(parts[1])
        if header.get("alg") != "none":
            raise TokenRejected("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise TokenRejected("Unsecured JWS must not contain a digital signature")
        scope = self._scope(claims)
        expires, issued = _number(claims, "exp"), _number(claims, "iat")
        if expires is None:
            raise TokenRejected("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise TokenRejected(f"No principal name in JWT claim: {self.principal_claim}")
        skew = self.clock_skew_ms
        if issued is not None and issued * 1000 > now_ms + skew:
            raise TokenRejected(f"The Issued At value ({issued} seconds) was after the indicated "
                                f"time ({now_ms:.0f} ms) plus allowable clock skew ({skew} ms)")
        if now_ms - skew >= expires * 1000:
            raise TokenRejected(f"The indicated time ({now_ms:.0f} ms) minus allowable clock skew "
                                f"({skew} ms) was on or after the Expiration Time value "
                                f"({expires} seconds)")
        if issued is not None and expires <= issued:
            raise TokenRejected(f"The Expiration Time time ({expires} seconds) was not after the "
                                f"Issued At time ({issued} seconds)")
        missing = [s for s in self.required_scope if s not in scope]
        if missing:
            raise TokenRejected(f"The provided scope ({sorted(scope)}) was missing a required "
                                f"scope ({missing[0]})", self.required_scope)
        return ValidatedToken(principal, round(expires * 1000), scope, claims)

    def _scope(self, claims: JsonMapping) -> frozenset[str]:
        value = claims.get(self.scope_claim)
        if isinstance(value, str):  # a string is a single scope, as Kafka reads it
            return frozenset([value.strip()]) if value.strip() else frozenset()
        if isinstance(value, list):
            return frozenset(str(s).strip() for s in value if str(s).strip())
        if value is None:
            return frozenset()
        raise TokenRejected(f"The '{self.scope_claim}' claim was not of type List")


# -- the server side ----------------------------------------------------------------------------


class OAuthBearerServer:
    """One server side of one exchange: ``evaluate(message)`` until ``token`` is set.

    An invalid token is answered with the JSON error (not a failure yet); the
    client's ``\\x01`` then fails the authentication with that JSON as the message.
    """

    def __init__(self, validator: UnsecuredValidator):
        self.validator = validator
        self.token: ValidatedToken | None = None
        self.extensions: dict[str, str] = {}
        self.rejection: str | None = None  # why the last token failed (for the server's log)
        self._error: str | None = None

    @property
    def complete(self) -> bool:
        return self.token is not None

    def evaluate(self, message: bytes, now_ms: float) -> bytes:
        if message == SEPARATOR.encode() and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        authzid, token, extensions = parse_client_first(message)
        try:
            validated = self.validator.validate(token, now_ms)
        except TokenRejected as rejected:
            self.rejection = rejected.reason
            self._error = rejected.json()
            return self._error.encode()
        if authzid and authzid != validated.principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({validated.principal})")
        self.extensions = extensions  # the unsecured validator accepts every extension
        self.token = validated
        return b""


# -- the client side ----------------------------------------------------------------------------


class UnsecuredTokenProvider:
    """Unsecured tokens from Kafka's client JAAS options (``unsecuredLogin*``).

    ``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>`` and
    ``unsecuredLoginListClaim_<name>`` (the value's first character separates the
    items) set claims; ``unsecuredLoginPrincipalClaimName`` (``sub``) names the one
    that must be there; ``unsecuredLoginLifetimeSeconds`` (3600) sets ``exp`` from
    ``iat``; ``unsecuredLoginExtension_<name>`` are SASL extensions. Each
    ``token()`` is a new token, valid from now.
    """

    def __init__(self, options: Mapping[str, str], clock: Callable[[], float] = time.time):
        self.options = dict(options)
        self.clock = clock
        self.principal_claim = self.options.get("unsecuredLoginPrincipalClaimName") or "sub"
        self.lifetime = float(self.options.get("unsecuredLoginLifetimeSeconds") or 3600)
        self.claims: JsonObject = {}
        for key, value in self.options.items():
            kind, _, name = key.partition("_")
            if kind == "unsecuredLoginStringClaim":
                self.claims[name] = value
            elif kind == "unsecuredLoginNumberClaim":
                self.claims[name] = float(value) if "." in value else int(value)
            elif kind == "unsecuredLoginListClaim":
                self.claims[name] = [item for item in value[1:].split(value[:1]) if item] \
                    if value else []
        if name_clash := {"iat", "exp"} & set(self.claims):
            raise ValueError(f"unsecuredLogin options may not set {sorted(name_clash)}")
        if not isinstance(self.claims.get(self.principal_claim), str):
            raise ValueError(f"OAUTHBEARER unsecured login needs "
                             f'unsecuredLoginStringClaim_{self.principal_claim}="<principal>"')
        self._extensions = {key.partition("_")[2]: value for key, value in self.options.items()
                            if key.startswith("unsecuredLoginExtension_")}

    @classmethod
    def for_principal(cls, principal: str, lifetime_seconds: float = 3600,
                      scope: tuple[str, ...] = ()) -> UnsecuredTokenProvider:
        """A provider of tokens with ``sub=principal`` (and ``scope`` when given)."""
        options = {"unsecuredLoginStringClaim_sub": principal,
                   "unsecuredLoginLifetimeSeconds": str(lifetime_seconds)}
        if scope:
            options["unsecuredLoginListClaim_scope"] = "," + ",".join(scope)
        return cls(options)

    @property
    def principal(self) -> str:
        return str(self.claims[self.principal_claim])

    def extensions(self) -> dict[str, str]:
        """The SASL extensions to send with the token (a method, as kafka-python's)."""
        return dict(self._extensions)

    def token(self) -> str:
        now = self.clock()
        return unsecured_jws({**self.claims, "iat": now, "exp": now + self.lifetime})
