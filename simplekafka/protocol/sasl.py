"""SASL mechanisms as byte exchanges, without sockets: PLAIN (RFC 4616) and SCRAM (RFC 5802/7677).

(OAUTHBEARER, RFC 7628 with Kafka's unsecured tokens, is in ``oauthbearer.py``.)

The broker (server side), the broker's own inter-broker connections and our
client (client side), the dissector and the tests all use these, so an
exchange means the same bytes everywhere. Each side is a small state machine:
feed it the peer's message, get the next message to send, or a
``SaslAuthenticationError`` whose text is safe to show the peer (it never says
whether the user exists).

SCRAM in one paragraph: the server never stores the password, only
``salt``, ``iterations``, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))``
and ``ServerKey = HMAC(SaltedPassword, "Server Key")``, with
``SaltedPassword = PBKDF2(password, salt, iterations)``. The client proves it
knows SaltedPassword by sending ``ClientKey XOR HMAC(StoredKey, AuthMessage)``;
the server recovers ClientKey, checks ``H(ClientKey) == StoredKey``, and proves
itself with ``HMAC(ServerKey, AuthMessage)``. Kafka writes a credential as
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (its
``ScramCredentialUtils``), which is what ``/config/users/<name>`` holds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


class SaslAuthenticationError(Exception):
    """Authentication failed; the message is what the peer may be told."""


@dataclass(frozen=True)
class ScramMechanism:
    """One SCRAM variant: its name, hash, Kafka's type number and iteration bounds."""

    name: str
    hash_name: str
    type_number: int  # DescribeUserScramCredentials / AlterUserScramCredentials
    min_iterations: int = 4096
    max_iterations: int = 16384

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode("utf-8"), salt, iterations)


SCRAM_MECHANISMS: dict[str, ScramMechanism] = {
    SCRAM_SHA_256: ScramMechanism(SCRAM_SHA_256, "sha256", 1),
    SCRAM_SHA_512: ScramMechanism(SCRAM_SHA_512, "sha512", 2),
}
SCRAM_BY_TYPE: dict[int, ScramMechanism] = {m.type_number: m for m in SCRAM_MECHANISMS.values()}


def scram_mechanism(name: str) -> ScramMechanism:
    try:
        return SCRAM_MECHANISMS[name.upper()]
    except KeyError:
        raise ValueError(f"unknown SCRAM mechanism {name!r} (use SCRAM-SHA-256 or "
                         "SCRAM-SHA-512)") from None


# -- credentials ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps for one user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_kafka(self) -> str:
        """Kafka's text form, as stored in ``/config/users/<name>``."""
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
                f"server_key={b64(self.server_key)},iterations={self.iterations}")

    @staticmethod
    def from_kafka(text: str) -> ScramCredential:
        """Parse Kafka's text form (ValueError when a part is missing or malformed)."""
        parts = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        try:
            return ScramCredential(
                base64.b64decode(parts["salt"], validate=True),
                base64.b64decode(parts["stored_key"], validate=True),
                base64.b64decode(parts["server_key"], validate=True),
                int(parts["iterations"]))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"not a SCRAM credential: {exc}") from None


def credential_from_salted_password(mechanism: ScramMechanism, salted_password: bytes,
                                    salt: bytes, iterations: int) -> ScramCredential:
    """The stored form from SaltedPassword (AlterUserScramCredentials sends exactly this)."""
    client_key = mechanism.hmac(salted_password, b"Client Key")
    return ScramCredential(salt, mechanism.digest(client_key),
                           mechanism.hmac(salted_password, b"Server Key"), iterations)


def make_credential(mechanism: ScramMechanism, password: str, iterations: int = 4096,
                    salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` with a random salt (Kafka's ScramFormatter)."""
    if not mechanism.min_iterations <= iterations <= mechanism.max_iterations:
        raise ValueError(f"iterations must be {mechanism.min_iterations}.."
                         f"{mechanism.max_iterations} for {mechanism.name}, got {iterations}")
    salt = salt if salt is not None else os.urandom(32)
    return credential_from_salted_password(
        mechanism, mechanism.salted_password(password, salt, iterations), salt, iterations)


# -- message syntax ---------------------------------------------------------------------------


def _attributes(message: str) -> dict[str, str]:
    """``a=1,b=2`` into a dict (values may contain '=')."""
    result: dict[str, str] = {}
    for item in message.split(","):
        if len(item) < 2 or item[1] != "=":
            raise SaslAuthenticationError("Invalid SCRAM message")
        result.setdefault(item[0], item[2:])
    return result


def _saslname_decode(name: str) -> str:
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise SaslAuthenticationError("Invalid SCRAM username")
    return name.replace("=2C", ",").replace("=3D", "=")


def _saslname_encode(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("Invalid SASL message: not UTF-8") from None


def _nonce() -> str:
    return base64.b64encode(os.urandom(24)).decode().rstrip("=").replace("+", "-")


# -- PLAIN ------------------------------------------------------------------------------------


def plain_token(username: str, password: str, authzid: str = "") -> bytes:
    """The single PLAIN message: ``authzid NUL username NUL password``."""
    return f"{authzid}\0{username}\0{password}".encode()


def parse_plain(token: bytes) -> tuple[str, str, str]:
    """(authzid, username, password) of a PLAIN message."""
    parts = _text(token).split("\0")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        raise SaslAuthenticationError("Invalid SASL/PLAIN message")
    return parts[0], parts[1], parts[2]


# -- SCRAM, server side ---------------------------------------------------------------------


class ScramServer:
    """One server side of one exchange: ``first(client_first)`` then ``final(client_final)``.

    ``lookup(username)`` returns the user's credential for this mechanism or
    None. An unknown user fails with the same message as a wrong password, but
    at the client's first message where a wrong password fails at its final
    one, so the step tells whether the user exists: Kafka's ScramSaslServer
    does the same. A stored credential with fewer iterations than the
    mechanism's minimum (4096) is refused at the first message too, as Kafka
    refuses it: such a credential was not written by a Kafka tool.
    """

    FAILED = "Authentication failed during authentication due to invalid credentials " \
             "with SASL mechanism {}"

    def __init__(self, mechanism: ScramMechanism, lookup, nonce: str | None = None):
        self.mechanism = mechanism
        self.lookup = lookup
        self._server_nonce = nonce or _nonce()
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.complete = False

    def _fail(self) -> SaslAuthenticationError:
        return SaslAuthenticationError(self.FAILED.format(self.mechanism.name))

    def first(self, message: bytes) -> bytes:
        text = _text(message)
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y") or (authzid and
                                                              not authzid.startswith("a=")):
            raise SaslAuthenticationError("Invalid SCRAM client first message")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes or not attributes["r"]:
            raise SaslAuthenticationError("Invalid SCRAM client first message")
        username = _saslname_decode(attributes["n"])
        if authzid and _saslname_decode(authzid[2:]) != username:
            raise SaslAuthenticationError("Authorization id does not match the username")
        credential = self.lookup(username)
        if credential is None or credential.iterations < self.mechanism.min_iterations:
            raise self._fail()
        self.username = username
        self._credential = credential
        self._client_first_bare = bare
        self._nonce = attributes["r"] + self._server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        if self._credential is None:
            raise SaslAuthenticationError("SCRAM client final message before the first")
        text = _text(message)
        without_proof, _, proof_part = text.rpartition(",p=")
        attributes = _attributes(text)
        # Kafka checks that the nonce *ends with* the one it sent: librdkafka up to 2.x
        # sends the client nonce twice (cnonce + the server's whole r=), and the proof
        # below covers the message exactly as sent, so nothing is lost by accepting it.
        if not without_proof or not attributes.get("r", "").endswith(self._nonce) \
                or "p" not in attributes:
            raise SaslAuthenticationError("Invalid SCRAM client final message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise SaslAuthenticationError("Invalid SCRAM client proof") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}"
        credential, mechanism = self._credential, self.mechanism
        signature = mechanism.hmac(credential.stored_key, auth_message.encode())
        if len(proof) != len(signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(mechanism.digest(client_key), credential.stored_key):
            raise self._fail()
        verifier = mechanism.hmac(credential.server_key, auth_message.encode())
        self.complete = True
        return b"v=" + base64.b64encode(verifier)


# -- SCRAM, client side ---------------------------------------------------------------------


class ScramClient:
    """One client side: ``first()``, ``final(server_first)``, then ``verify(server_final)``."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str,
                 nonce: str | None = None):
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self._nonce = nonce or _nonce()
        self._client_first_bare = f"n={_saslname_encode(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first)
        attributes = _attributes(text)
        nonce, salt, iterations = attributes.get("r", ""), attributes.get("s"), \
            attributes.get("i", "")
        if not nonce.startswith(self._nonce) or salt is None or not iterations.isdigit():
            raise SaslAuthenticationError("Invalid SCRAM server first message")
        if int(iterations) < self.mechanism.min_iterations:
            raise SaslAuthenticationError("SCRAM iterations below the minimum")
        mechanism = self.mechanism
        salted = mechanism.salted_password(self.password, base64.b64decode(salt), int(iterations))
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = mechanism.hmac(salted, b"Client Key")
        signature = mechanism.hmac(mechanism.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = mechanism.hmac(mechanism.hmac(salted, b"Server Key"),
                                                auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attributes = _attributes(_text(server_final))
        if "e" in attributes:
            raise SaslAuthenticationError(f"SCRAM server error: {attributes['e']}")
        if base64.b64decode(attributes.get("v", "")) != self._server_signature:
            raise SaslAuthenticationError("SCRAM server signature does not match")
