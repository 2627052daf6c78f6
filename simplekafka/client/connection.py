"""The sans-I/O heart of a broker connection: requests in, bytes out; bytes in, responses out.

``ConnectionCore`` never touches a socket. The transport (``transport.py``)
writes whatever ``data_to_send()`` returns and feeds whatever arrives to
``receive_data()``; tests do the same with plain bytes. What it keeps track of:

- correlation ids: each request gets the next one, and a response must answer
  the oldest request in flight (Kafka answers in order on a connection);
- the in-flight limit: requests beyond it wait in a queue, unsent;
- ApiVersions negotiation: the first request on every connection. We send v2
  (our codec does not do flexible versions); a broker that does not know v2
  answers error 35 in v0 format with its own range, and we retry with that.
  Once the broker's ranges are known each API is sent at
  ``min(client max, broker max)``;
- a SASL login, when ``sasl`` is given: after ApiVersions, SaslHandshake v1
  and SaslAuthenticate until the mechanism (PLAIN or SCRAM, from
  ``simplekafka.protocol.sasl``; OAUTHBEARER from ``protocol.oauthbearer``) is
  satisfied; only then do queued requests go.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from simplekafka.client.errors import IncompatibleBrokerError, KafkaConnectionError, error_for
from simplekafka.protocol.api import ADVERTISED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ErrorCode, ProtocolError
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.framing import FrameDecoder, encode_frame
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.oauthbearer import UnsecuredTokenProvider, client_first_message
from simplekafka.protocol.sasl import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    SaslAuthenticationError,
    ScramClient,
    plain_token,
)

# The versions this client speaks: what our broker advertises (the codec's
# client-facing APIs), narrowed where old versions are of no use to a client:
# Produce below v3 uses the old message format; Metadata v0 cannot say "all topics".
CLIENT_VERSIONS: dict[ApiKey, tuple[int, int]] = dict(ADVERTISED_VERSIONS)
CLIENT_VERSIONS[ApiKey.PRODUCE] = (3, CLIENT_VERSIONS[ApiKey.PRODUCE][1])
CLIENT_VERSIONS[ApiKey.METADATA] = (1, CLIENT_VERSIONS[ApiKey.METADATA][1])
# The broker speaks Kafka 3.9's versions; this client stays at the highest versions its
# requests and answers are written for. Above these the layouts change: Fetch v13 and
# DeleteTopics v6 name topics by ID, FindCoordinator v4 and OffsetFetch v8 batch their
# keys, Produce v10 and Fetch v12+ carry KIP-951's leader hints.
CLIENT_MAX_VERSIONS: dict[ApiKey, int] = {
    ApiKey.API_VERSIONS: 2, ApiKey.PRODUCE: 8, ApiKey.FETCH: 11, ApiKey.LIST_OFFSETS: 7,
    ApiKey.METADATA: 8,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: 3, ApiKey.CREATE_TOPICS: 4, ApiKey.DELETE_TOPICS: 3,
    ApiKey.OFFSET_COMMIT: 7, ApiKey.OFFSET_FETCH: 5, ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 5, ApiKey.HEARTBEAT: 3, ApiKey.LEAVE_GROUP: 3, ApiKey.SYNC_GROUP: 3,
    ApiKey.DESCRIBE_GROUPS: 4, ApiKey.LIST_GROUPS: 2, ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1, ApiKey.CREATE_PARTITIONS: 1, ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1, ApiKey.DELETE_GROUPS: 1,
    ApiKey.ELECT_LEADERS: 1, ApiKey.ADD_PARTITIONS_TO_TXN: 2, ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2, ApiKey.TXN_OFFSET_COMMIT: 2,
}
for _key, _high in CLIENT_MAX_VERSIONS.items():
    CLIENT_VERSIONS[_key] = (CLIENT_VERSIONS[_key][0], min(_high, CLIENT_VERSIONS[_key][1]))

HANDSHAKE_VERSION = min(2, CLIENT_VERSIONS[ApiKey.API_VERSIONS][1])
MAX_CORRELATION_ID = 2**31 - 1

# A request body: a Struct, a dict (its TypedDict in protocol.message_types) or any object
# with the fields as attributes; the schema of the negotiated version encodes it.
Body = object
BodyFactory = Callable[[int], Body]


class TokenProvider(Protocol):
    """An OAUTHBEARER token source (kafka-python's shape); ``extensions()`` is optional."""

    def token(self) -> str: ...


@dataclass(frozen=True)
class SaslCredentials:
    """A SASL login: mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), user,
    password; for OAUTHBEARER a ``token_provider`` (``token()``, and ``extensions()`` if it
    has them, as kafka-python's), by default unsecured tokens naming ``username``."""

    mechanism: str
    username: str
    password: str = ""
    token_provider: TokenProvider | None = None

    def oauthbearer_message(self) -> bytes:
        """The OAUTHBEARER client message, with a token fresh from the provider."""
        provider: TokenProvider = self.token_provider or UnsecuredTokenProvider.for_principal(
            self.username)
        extensions: Mapping[str, str] | None = getattr(provider, "extensions", dict)()
        return client_first_message(provider.token(), extensions=extensions or {})


@dataclass
class InFlightRequest:
    """One request: what was asked, with which id and version, and the caller's token."""

    api_key: ApiKey
    body: Body | BodyFactory
    context: object = None  # the caller's, handed back with the response untouched
    expect_response: bool = True
    correlation_id: int = -1
    api_version: int = -1
    internal: bool = False


@dataclass
class Response:
    """A decoded answer to ``request`` (``body`` is the response Struct)."""

    request: InFlightRequest
    body: Struct

    @property
    def context(self) -> object:
        return self.request.context


@dataclass
class ConnectionCore:
    """The protocol state of one connection to one broker, without any I/O."""

    client_id: str = "simplekafka"
    max_in_flight: int = 5
    max_frame_bytes: int = 100 * 1024 * 1024
    client_versions: dict[ApiKey, tuple[int, int]] = field(
        default_factory=lambda: dict(CLIENT_VERSIONS)
    )
    broker_versions: dict[int, tuple[int, int]] | None = None
    sasl: SaslCredentials | None = None

    def __post_init__(self) -> None:
        self._decoder = FrameDecoder(self.max_frame_bytes)
        self._next_correlation_id = 0
        self._outbox: list[bytes] = []
        self._waiting: deque[InFlightRequest] = deque()
        self._in_flight: deque[InFlightRequest] = deque()
        self._handshake_done = self.broker_versions is not None
        self._handshake_sent = False
        self._completed_without_response: list[InFlightRequest] = []
        self._failed: list[tuple[InFlightRequest, Exception]] = []
        self._logged_in = self.sasl is None
        self._scram: ScramClient | None = None
        self._scram_final_sent = False
        self._oauth_refused = False

    # ----- state -----------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """True once the broker's API versions are known (and the SASL login, if any, done)."""
        return self._handshake_done and self._logged_in

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)

    def in_flight(self) -> list[InFlightRequest]:
        """The requests sent and not yet answered, oldest first."""
        return list(self._in_flight)

    def waiting(self) -> list[InFlightRequest]:
        """The requests queued and not yet sent (handshake pending or in-flight limit)."""
        return list(self._waiting)

    def version_for(self, api_key: ApiKey) -> int:
        """The version to send ``api_key`` at: the highest both sides speak."""
        api_key = ApiKey(api_key)
        if api_key not in self.client_versions:
            raise IncompatibleBrokerError(f"the client does not implement {api_key.name}")
        client_min, client_max = self.client_versions[api_key]
        if self.broker_versions is None:
            return client_max
        if int(api_key) not in self.broker_versions:
            raise IncompatibleBrokerError(f"the broker does not support {api_key.name}")
        broker_min, broker_max = self.broker_versions[int(api_key)]
        version = min(client_max, broker_max)
        if version < max(client_min, broker_min):
            raise IncompatibleBrokerError(
                f"no common version of {api_key.name}: client {client_min}-{client_max}, "
                f"broker {broker_min}-{broker_max}"
            )
        return version

    # ----- requests in, bytes out ------------------------------------------------

    def send_request(
        self,
        api_key: ApiKey,
        body: Body | BodyFactory,
        context: object = None,
        expect_response: bool = True,
    ) -> InFlightRequest:
        """Queue a request; its bytes appear in ``data_to_send()`` when it may go.

        ``body`` is a dict/Struct, or a callable taking the negotiated version and
        returning one (for fields that differ between versions).
        """
        request = InFlightRequest(ApiKey(api_key), body, context, expect_response)
        self._waiting.append(request)
        self._pump()
        return request

    def data_to_send(self) -> bytes:
        """All bytes ready for the wire (and forget them)."""
        self._pump()
        data = b"".join(self._outbox)
        self._outbox.clear()
        return data

    def completed_without_response(self) -> list[InFlightRequest]:
        """Requests that went out and will get no answer (acks=0 produce)."""
        done, self._completed_without_response = self._completed_without_response, []
        return done

    def _pump(self) -> None:
        if not self._handshake_done:
            if not self._handshake_sent:
                self._send_handshake(HANDSHAKE_VERSION)
            return
        if not self._logged_in:
            return
        while self._waiting and len(self._in_flight) < self.max_in_flight:
            request = self._waiting.popleft()
            try:
                self._write(request, self.version_for(request.api_key))
            except (IncompatibleBrokerError, ProtocolError, ValueError, TypeError) as exc:
                # This request cannot be sent (no common version, or a body that does
                # not encode); it fails alone, the connection carries on.
                self._failed.append((request, exc))

    def pop_failed(self) -> list[tuple[InFlightRequest, Exception]]:
        """Requests that could not be sent, with the reason (the caller fails them)."""
        failed, self._failed = self._failed, []
        return failed

    def _send_handshake(self, version: int) -> None:
        request = InFlightRequest(ApiKey.API_VERSIONS, {}, internal=True)
        self._handshake_sent = True
        self._write(request, version)

    def _write(self, request: InFlightRequest, version: int) -> None:
        body = request.body(version) if callable(request.body) else request.body
        request.api_version = version
        request.correlation_id = self._next_correlation_id
        self._next_correlation_id = (self._next_correlation_id + 1) % (MAX_CORRELATION_ID + 1)
        payload = encode_request(
            request.api_key, version, request.correlation_id, self.client_id, body
        )
        self._outbox.append(encode_frame(payload))
        if request.expect_response:
            self._in_flight.append(request)
        else:
            self._completed_without_response.append(request)

    # ----- bytes in, responses out -----------------------------------------------

    def receive_data(self, data: bytes) -> list[Response]:
        """Feed bytes from the wire; get back the responses they complete.

        Raises ``KafkaConnectionError`` if the broker broke the protocol (a frame
        that does not decode, or an answer to a request we did not send): the
        connection is then unusable.
        """
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            raise KafkaConnectionError(f"bad frame from broker: {exc}") from exc
        responses: list[Response] = []
        for frame in frames:
            response = self._decode(frame)
            if response is not None:
                responses.append(response)
        return responses

    def _decode(self, frame: bytes) -> Response | None:
        if not self._in_flight:
            raise KafkaConnectionError("broker sent a response to no request")
        request = self._in_flight.popleft()
        try:
            correlation_id, body = decode_response(request.api_key, request.api_version, frame)
        except ProtocolError as exc:
            if request.api_key != ApiKey.API_VERSIONS or request.api_version == 0:
                raise KafkaConnectionError(
                    f"undecodable {request.api_key.name} v{request.api_version} response: {exc}"
                ) from exc
            # A broker that does not know our ApiVersions version answers in v0 format.
            correlation_id, body = decode_response(request.api_key, 0, frame)
        if correlation_id != request.correlation_id:
            raise KafkaConnectionError(
                f"correlation id mismatch: expected {request.correlation_id}, got {correlation_id}"
            )
        if request.internal:
            if request.api_key == ApiKey.API_VERSIONS:
                self._handle_handshake(request, body)
            else:
                self._handle_sasl(request, body)
            return None
        return Response(request, body)

    def _handle_handshake(self, request: InFlightRequest, body: Struct) -> None:
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}
        if body.error_code == ErrorCode.UNSUPPORTED_VERSION:
            ours = versions.get(int(ApiKey.API_VERSIONS))
            retry = min(request.api_version - 1, ours[1]) if ours else 0
            if retry < 0 or retry >= request.api_version:
                raise KafkaConnectionError("broker rejected every ApiVersions version")
            self._send_handshake(retry)
            return
        if body.error_code:
            raise KafkaConnectionError(f"ApiVersions failed: {error_for(body.error_code)}")
        self.broker_versions = versions
        self._handshake_done = True
        if self.sasl is not None:
            self._send_internal(ApiKey.SASL_HANDSHAKE, {"mechanism": self.sasl.mechanism})
            return
        self._pump()

    # ----- the SASL login ----------------------------------------------------------

    def _send_internal(self, api_key: ApiKey, body: dict) -> None:
        self._write(InFlightRequest(api_key, body, internal=True), self.version_for(api_key))

    def _authenticate(self, token: bytes) -> None:
        self._send_internal(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})

    def _handle_sasl(self, request: InFlightRequest, body: Struct) -> None:
        sasl = self.sasl
        assert sasl is not None
        if body.error_code:
            detail = getattr(body, "error_message", None) or error_for(body.error_code)
            raise KafkaConnectionError(f"SASL {sasl.mechanism} login as {sasl.username} "
                                       f"refused: {detail}")
        try:
            if request.api_key == ApiKey.SASL_HANDSHAKE:
                if sasl.mechanism == PLAIN:
                    self._authenticate(plain_token(sasl.username, sasl.password))
                    return
                if sasl.mechanism == OAUTHBEARER:
                    self._authenticate(sasl.oauthbearer_message())
                    return
                self._scram = ScramClient(SCRAM_MECHANISMS[sasl.mechanism], sasl.username,
                                          sasl.password)
                self._authenticate(self._scram.first())
                return
            if sasl.mechanism == OAUTHBEARER and body.auth_bytes and not self._oauth_refused:
                # The broker's JSON error: acknowledge it (RFC 7628), the failure follows.
                self._oauth_refused = True
                self._authenticate(b"\x01")
                return
            if self._scram is not None and not self._scram_final_sent:
                self._scram_final_sent = True
                self._authenticate(self._scram.final(body.auth_bytes))
                return
            if self._scram is not None:
                self._scram.verify(body.auth_bytes)
        except (SaslAuthenticationError, KeyError) as exc:
            raise KafkaConnectionError(f"SASL {sasl.mechanism} login failed: {exc}") from None
        self._logged_in = True
        self._pump()

    def fail_all(self) -> list[InFlightRequest]:
        """The connection is gone: every request in flight or waiting (caller fails them)."""
        lost = [r for r in self._in_flight if not r.internal] + list(self._waiting)
        self._in_flight.clear()
        self._waiting.clear()
        return lost
