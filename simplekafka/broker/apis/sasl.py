"""SaslHandshake (17) and SaslAuthenticate (36): the frames of a login, and their answers.

Kafka's ``SaslServerAuthenticator`` reads a connection's frames until its
login is complete. The state machine and the mechanisms are the domain's
(``simplekafka.broker.security.sasl``: plain values in, plain values out);
this module is the wire side of it, as every answer is built in ``apis/``:

* ``SaslAuthentication`` is what a connection on a SASL listener hands its
  frames to (``server.KafkaConnection``: ``takes``, ``receive``): it reads the
  API key and the request, asks the authenticator, and encodes the answer; a
  request the state does not allow closes the connection with nothing written;
  a failed login's answer waits the failed-login delay, then closes.
* ``SaslApis`` answers the SASL requests that reach the dispatcher, i.e.
  outside an authentication: on a listener without SASL, or again after a
  connection authenticated. Kafka answers both with ILLEGAL_SASL_STATE
  (re-authentication, when ``connections.max.reauth.ms`` is set, is the
  authenticator's: a SaslHandshake reaches the dispatcher only without it, or
  sooner than a second after the last one).
"""

from __future__ import annotations

import logging
import struct

from twisted.internet import defer, task

from simplekafka.broker.dispatch import RequestContext, RequestDispatcher
from simplekafka.broker.security.sasl import SaslServerAuthenticator
from simplekafka.broker.server import (
    Answer,
    CloseAfter,
    CloseConnection,
    KafkaConnection,
    RequestHandler,
)
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ErrorCode, ProtocolError
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from simplekafka.protocol.messages import RequestHeader, decode_request, encode_response
from simplekafka.protocol.sasl import SaslAuthenticationError

log = logging.getLogger(__name__)

_HEADER_START = struct.Struct(">hhi")
_API_KEY = struct.Struct(">h")


class SaslAuthentication:
    """One connection's login on the wire; ``receive`` takes its frames until ``complete``."""

    def __init__(self, authenticator: SaslServerAuthenticator, handler: RequestHandler):
        self.authenticator = authenticator
        self.handler = handler  # the dispatcher: ApiVersions is answered as usual

    @property
    def complete(self) -> bool:
        return self.authenticator.complete

    @property
    def authenticating(self) -> bool:
        return self.authenticator.authenticating

    @property
    def max_receive_size(self) -> int:
        return self.authenticator.max_receive_size

    def takes(self, frame: bytes, connection: KafkaConnection) -> bool:
        """Whether ``frame`` is for the authenticator rather than the dispatcher
        (raises CloseConnection for a request after the session's end)."""
        api_key = _API_KEY.unpack_from(frame, 0)[0] if len(frame) >= 2 else None
        route = self.authenticator.route(api_key, connection)
        if route == SaslServerAuthenticator.SESSION_OVER:
            raise CloseConnection()
        return route == SaslServerAuthenticator.TO_AUTHENTICATOR

    def receive(self, frame: bytes, connection: KafkaConnection) -> Answer:
        authenticator = self.authenticator
        peer = getattr(connection, "peer", "?")
        if authenticator.takes_raw_tokens:
            return self._raw_token(frame, connection)
        if len(frame) < _HEADER_START.size:
            log.warning("closing %s: %d-byte frame before authentication", peer, len(frame))
            raise CloseConnection()
        api_key, version, correlation_id = _HEADER_START.unpack_from(frame, 0)
        if not authenticator.accepts(api_key):
            log.warning("closing %s: api key %d (correlation id %d) before SASL "
                        "authentication on listener %s", peer, api_key, correlation_id,
                        authenticator.settings.listener)
            raise CloseConnection()
        if api_key == ApiKey.API_VERSIONS:
            low, high = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
            if low <= version <= high:  # answered: no second one (UNSUPPORTED_VERSION: retry)
                authenticator.api_versions_answered()
            return self.handler(frame, connection)
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(frame, peer)
        return self._authenticate(frame, connection)

    def _decode(self, frame: bytes, peer: str) -> tuple[RequestHeader, Struct]:
        try:
            header, request = decode_request(frame)
        except ProtocolError as exc:
            log.warning("closing %s: bad SASL request: %s", peer, exc)
            raise CloseConnection() from None
        assert request is not None  # only an ApiVersions probe decodes to None
        return header, request

    def _handshake(self, frame: bytes, peer: str) -> bytes | CloseAfter:
        header, request = self._decode(frame, peer)
        code = self.authenticator.handshake(request.mechanism, header.api_version, peer)
        answer = encode_response(ApiKey.SASL_HANDSHAKE, header.api_version,
                                 header.correlation_id,
                                 {"error_code": code,
                                  "mechanisms": self.authenticator.settings.mechanisms})
        return answer if code == ErrorCode.NONE else CloseAfter(answer)

    def _authenticate(self, frame: bytes, connection: KafkaConnection
                      ) -> bytes | defer.Deferred:
        header, request = self._decode(frame, connection.peer)

        def answer(code: int = 0, message: str | None = None, data: bytes = b"",
                   lifetime_ms: int = 0) -> bytes:
            return encode_response(ApiKey.SASL_AUTHENTICATE, header.api_version,
                                   header.correlation_id,
                                   {"error_code": code, "error_message": message,
                                    "auth_bytes": data, "session_lifetime_ms": lifetime_ms})

        try:
            challenge = self.authenticator.authenticate(request.auth_bytes, connection)
        except SaslAuthenticationError as exc:
            return self._failed(connection, answer(ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                   str(exc)))
        return answer(data=challenge, lifetime_ms=self.authenticator.lifetime_ms)

    def _raw_token(self, frame: bytes, connection: KafkaConnection) -> bytes | defer.Deferred:
        try:
            return self.authenticator.authenticate(frame, connection)
        except SaslAuthenticationError:
            return self._failed(connection, None)  # v0 has no way to say why: just close

    def _failed(self, connection: KafkaConnection, response: bytes | None) -> defer.Deferred:
        delay = self.authenticator.failed(connection)
        return task.deferLater(self.authenticator.settings.clock, delay, CloseAfter, response)


class SaslApis:
    """ILLEGAL_SASL_STATE for the SASL requests outside an authentication."""

    def register(self, dispatcher: RequestDispatcher) -> None:
        dispatcher.register(ApiKey.SASL_HANDSHAKE, self.sasl_handshake)
        dispatcher.register(ApiKey.SASL_AUTHENTICATE, self.sasl_authenticate)

    def sasl_handshake(self, context: RequestContext, request: SaslHandshakeRequest
                       ) -> SaslHandshakeResponse:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}

    def sasl_authenticate(self, context: RequestContext, request: SaslAuthenticateRequest
                          ) -> SaslAuthenticateResponse:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                "error_message": f"no SASL authentication in progress on this connection "
                                 f"(listener {context.listener})",
                "auth_bytes": b"", "session_lifetime_ms": 0}
