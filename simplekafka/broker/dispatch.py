"""From a frame to a handler and back: decode the request, call its handler, encode the answer.

The dispatcher is the broker's only caller of the protocol codec on the request
path. It reads the three header fields every request starts with (api key,
version, correlation id) itself first, so that even a request it cannot decode
gets the right treatment:

* ApiVersions at a version we do not speak (clients probe with v3 or v4): the
  special error-35 answer in v0 format, which every client understands and
  retries from;
* an unknown api key, a version outside what we advertise, or a body that does
  not decode: no answer can be formed that the client would parse, so the
  connection is closed with a log line (what Kafka does), and other connections
  carry on.

Handlers take a RequestContext and the decoded request (a Struct, typed as its
message's TypedDict from ``protocol.message_types`` and read by key) and return
the response's TypedDict (or bytes already encoded), None for "no response"
(acks=0), or a Deferred of either. Register more with
``dispatcher.register(ApiKey.X, handler)``.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.server import ANONYMOUS, CloseConnection, Response, is_deferred
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.messages import (
    api_versions_probe_response,
    decode_request_dict,
    encode_response_pieces,
)

if TYPE_CHECKING:
    from simplekafka.broker.client_quotas import ClientQuotas

log = logging.getLogger(__name__)

_HEADER_START = struct.Struct(">hhi")
_perf_counter = time.perf_counter


class RequestContext(NamedTuple):
    """Who asked what: the request header plus the connection it came on."""

    api_key: ApiKey
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str = "?"
    # Who the connection authenticated as (Kafka's KafkaPrincipal as "type:name"), and
    # the listener it arrived on; the authorizer decides on these two.
    principal: str = ANONYMOUS
    listener: str = "PLAINTEXT"
    # The connection itself (server.KafkaConnection; the broker's own connection for its
    # requests to itself; None in unit tests), for what a request leaves on it: ApiVersions
    # v3's client software name and version.
    connection: object = None


# The one place the API key picks the request's type: each handler takes its own request
# TypedDict (protocol.message_types), which the decoded Struct of that key stands for, and
# answers its response (a dict, bytes already encoded, None, or a Deferred of one).
Handler = Callable[[RequestContext, Any], object]
# The pieces after an answer's header are the body's own record sets: bytes, or the file
# regions the fetch read put there (socket_writer's Piece). Named once at import, so the
# answer path pays no cast call.
_encode_answer = cast("Callable[[int, int, int, object], Response]", encode_response_pieces)


class RequestDispatcher:
    """Routes decoded requests to handlers by api key; see the module docstring."""

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self.requests_handled = 0
        # Told (api key, api version, perf_counter() at arrival) as each request is
        # answered, or fails: the metrics' request counts and latency histogram
        # (metrics.py); None: untimed.
        self.on_answered: Callable[[int, int, float], None] | None = None
        # The broker's ClientQuotas (client_quotas.py): asked only while a quota is set.
        self.quotas: ClientQuotas | None = None

    def register(self, api_key: ApiKey, handler: Handler) -> None:
        self._handlers[int(api_key)] = handler

    def handles(self, api_key: int) -> bool:
        return int(api_key) in self._handlers

    def __call__(self, frame: bytes, connection: object = None
                 ) -> Response | Failure | defer.Deferred | None:
        """Handle one frame; raises CloseConnection when the connection must close."""
        started = _perf_counter()
        peer = getattr(connection, "peer", "?")
        if len(frame) < _HEADER_START.size:
            log.warning("closing %s: %d-byte frame is too short for a request header",
                        peer, len(frame))
            raise CloseConnection()
        api_key, api_version, correlation_id = _HEADER_START.unpack_from(frame, 0)
        low_high = _RANGES.get(api_key)
        if api_key == ApiKey.API_VERSIONS and (
                low_high is None or not low_high[0] <= api_version <= low_high[1]):
            if self.on_answered is not None:
                self.on_answered(api_key, api_version, started)
            return api_versions_probe_response(correlation_id)
        handler = self._handlers.get(api_key)
        if low_high is None or handler is None:
            log.warning("closing %s: unknown or unsupported api key %d (correlation id %d)",
                        peer, api_key, correlation_id)
            raise CloseConnection()
        if not low_high[0] <= api_version <= low_high[1]:
            log.warning("closing %s: %s v%d is not supported (we speak v%d-%d)",
                        peer, ApiKey(api_key).name, api_version, *low_high)
            raise CloseConnection()
        try:
            header, body = decode_request_dict(frame)
        except ProtocolError as exc:
            log.warning("closing %s: cannot decode %s v%d request (correlation id %d): %s",
                        peer, ApiKey(api_key).name, api_version, correlation_id, exc)
            raise CloseConnection() from None
        assert body is not None  # only an ApiVersions probe decodes to None: answered above
        context = _new_context(RequestContext, (
            _KEYS[api_key], api_version, correlation_id, header.client_id, peer,
            getattr(connection, "principal", ANONYMOUS), getattr(connection, "listener",
                                                                 "PLAINTEXT"), connection))
        self.requests_handled += 1
        quotas = self.quotas
        if quotas is not None and quotas.enabled:
            quotas.before(context, body)
            result = quotas.after(handler(context, body), context, body, len(frame), started,
                                  connection)
        else:
            result = handler(context, body)
        if is_deferred(result):
            # One callback encodes and times the answer (a failure passes on, timed).
            return result.addBoth(self._answered, context, started)
        return self._answered(result, context, started)

    def _answered(self, body: object, context: RequestContext, started: float
                  ) -> Response | Failure | None:
        """The handler's answer encoded (None stays None: no response), and timed."""
        answer: Response | Failure | None
        if body is None or isinstance(body, Failure):
            answer = body
        else:
            answer = _encode_answer(context.api_key, context.api_version,
                                    context.correlation_id, body)
        if self.on_answered is not None:
            self.on_answered(context.api_key, context.api_version, started)
        return answer


# Built once per request with every field given: tuple.__new__ skips the NamedTuple's
# generated __new__ (a Python-level call that only passes its arguments on).
_new_context = tuple.__new__
# Looked up on every request: plain dicts keyed by the wire number.
_RANGES: dict[int, tuple[int, int]] = {int(k): v for k, v in SUPPORTED_VERSIONS.items()}
_KEYS: dict[int, ApiKey] = {int(k): k for k in ApiKey}
