"""Request and response headers, and whole messages: header plus body.

A request payload (the frame without its 4-byte length) is a request header
then the body::

    header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable string
    header v2: the same, then a tagged-field block (for flexible request versions)

A response payload is a response header (v0: correlation_id int32; v1 adds a
tagged-field block for flexible versions, except ApiVersions, whose response
header is always v0) then the body.

Clients open with ApiVersions v3 or v4, which a broker without flexible
versions cannot fully support. :func:`decode_request` still returns the header
of such a probe, and :func:`api_versions_probe_response` is the answer real
clients expect: error 35 in the exact v0 layout, listing what we support, so
they retry with a version we speak.
"""

from __future__ import annotations

import struct
from collections.abc import Sized
from typing import Any, NamedTuple

from simplekafka.protocol import primitives as p
from simplekafka.protocol.api import (
    ADVERTISED_VERSIONS,
    SUPPORTED_VERSIONS,
    ApiKey,
    is_flexible,
    known_versions,
    request_schema,
    response_schema,
)
from simplekafka.protocol.errors import ErrorCode, ProtocolError
from simplekafka.protocol.fields import PiecedOutput
from simplekafka.protocol.message_types import ApiVersionsResponse
from simplekafka.protocol.schema import Schema, Struct

Buffer = bytes | bytearray | memoryview
_FIRST_THREE = struct.Struct(">hhi")


class RequestHeader(NamedTuple):
    """The fields every request starts with (header v2's tagged fields are read and dropped)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None

    @property
    def header_version(self) -> int:
        """1, or 2 for flexible request versions."""
        return request_header_version(self.api_key, self.api_version)


class UnsupportedRequestError(ProtocolError):
    """A request whose header decoded but whose API key or version this codec lacks.

    ``header`` is the decoded header, so a broker can still answer (or log) it.
    """

    def __init__(self, message: str, header: RequestHeader, offset: int | None = None):
        super().__init__(message, offset=offset, expected="a known API key and version")
        self.header = header


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible request versions, 1 otherwise (ApiVersions v3+ is flexible)."""
    if api_key == ApiKey.API_VERSIONS and api_version >= 3:
        return 2
    try:
        return 2 if is_flexible(api_key, api_version) else 1
    except ProtocolError:
        return 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible response versions, 0 otherwise; ApiVersions responses are always v0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def decode_request_header(payload: Buffer) -> tuple[RequestHeader, int]:
    """The request header and the offset where the body starts."""
    if len(payload) < 8:
        raise ProtocolError(
            f"a request header needs at least 8 bytes (api_key, api_version, correlation_id), "
            f"got {len(payload)}",
            offset=len(payload),
            expected="int16 api_key, int16 api_version, int32 correlation_id",
        )
    api_key, api_version, correlation_id = _FIRST_THREE.unpack_from(payload, 0)
    client_id, pos = p.read_string(payload, 8, nullable=True)
    if request_header_version(api_key, api_version) >= 2:
        _, pos = p.read_tagged_fields(payload, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


# Requests whose bytes after the last field are ignored, as Kafka's parser ignores them:
# librdkafka (confluent-kafka 2.x) ends AlterUserScramCredentials with one tagged-field
# byte too many, and its flexible Metadata request for every topic (v9+, its admin
# client's list_topics) with three (`00 00 00 00 01 00 00` where the schema reads four
# bytes). Every other request must end where its schema ends.
TRAILING_BYTES_TOLERATED = frozenset({ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.METADATA})


def decode_request(payload: Buffer) -> tuple[RequestHeader, Struct | None]:
    """Decode a request payload into its header and body.

    Raises :class:`ProtocolError` for bytes that do not decode, and
    :class:`UnsupportedRequestError` (carrying ``.header``) for an unknown API
    key or version. An ApiVersions request at a version outside
    ``SUPPORTED_VERSIONS`` never raises once its first 8 bytes are there: it
    comes back as ``(header, body_or_None)`` so the broker can send the probe
    answer.
    """
    return _decode_request(payload, False)


# A request body as the broker decodes it: the request's TypedDict (protocol.message_types)
# at run time, read by key.
DecodedRequest = dict[str, object]


def decode_request_dict(payload: Buffer) -> tuple[RequestHeader, DecodedRequest | None]:
    """``decode_request`` with the body as plain dicts (nested ones too), the shape of the
    request's TypedDict in ``message_types``: what the broker's handlers take and read by
    key. The same bytes, checks and errors as ``decode_request``; the ApiVersions probe
    (a version outside ``SUPPORTED_VERSIONS``) still comes back as a Struct or None."""
    return _decode_request(payload, True)


# The body is a Struct or a dict, as the caller asked: the two public functions say which
# (a cast there would be a call on every request the broker reads).
def _decode_request(payload: Buffer, as_dict: bool) -> tuple[RequestHeader, Any]:
    if len(payload) < 8:
        decode_request_header(payload)  # raises the "too short" error
    api_key, api_version, correlation_id = _FIRST_THREE.unpack_from(payload, 0)
    layout = _REQUEST_LAYOUTS.get((api_key, api_version))
    if layout is None:
        if api_key == ApiKey.API_VERSIONS:
            low, high = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
            if not low <= api_version <= high:
                return _decode_probe(payload)
        try:
            layout = request_layout(api_key, api_version)
        except ProtocolError as exc:
            raise UnsupportedRequestError(str(exc), _best_effort_header(payload),
                                          offset=0) from None
    schema, tagged_header = layout
    # The client id, read inline when whole and valid UTF-8 (nearly always); null, short
    # or bad bytes go through the reader that names the error.
    n = _INT16_AT(payload, 8)[0] if len(payload) >= 10 else -2
    if n == -1:
        client_id, pos = None, 10
    elif 0 <= n <= len(payload) - 10:
        try:
            client_id, pos = str(payload[10:10 + n], "utf-8"), 10 + n
        except UnicodeDecodeError:
            client_id, pos = p.read_string(payload, 8, nullable=True)
    else:
        client_id, pos = p.read_string(payload, 8, nullable=True)
    if tagged_header:  # nearly always no tagged fields: one zero byte
        if pos < len(payload) and payload[pos] == 0:
            pos += 1
        else:
            _, pos = p.read_tagged_fields(payload, pos)
    header = _new_header(RequestHeader, (api_key, api_version, correlation_id, client_id))
    body, end = (schema.read_dict if as_dict else schema.read)(payload, pos)
    if end != len(payload) and api_key not in TRAILING_BYTES_TOLERATED:
        raise ProtocolError(
            f"{schema.name} v{api_version} ends at offset {end} but the request has "
            f"{len(payload) - end} more bytes",
            offset=end,
            expected="end of request",
        )
    return header, body


# Built with every field given: tuple.__new__ skips the NamedTuple's generated __new__.
_new_header = tuple.__new__
_INT16_AT = struct.Struct(">h").unpack_from


class MessageLayout(NamedTuple):
    """What coding one message of an API key and version needs besides the bytes: its
    body schema, and whether its header ends with a tagged-field block (flexible)."""

    schema: Schema
    tagged_header: bool


# Every request and response on the broker's path needs its layout: looked up once per
# (api key, version), then one dict probe (was a schema lookup, a flexibility check and a
# header-version check per message).
_REQUEST_LAYOUTS: dict[tuple[int, int], MessageLayout] = {}
_RESPONSE_LAYOUTS: dict[tuple[int, int], MessageLayout] = {}


def request_layout(api_key: int, api_version: int) -> MessageLayout:
    """The request schema and header shape of a version (ProtocolError if unknown)."""
    layout = _REQUEST_LAYOUTS.get((api_key, api_version))
    if layout is None:
        layout = MessageLayout(request_schema(api_key, api_version),
                               request_header_version(api_key, api_version) >= 2)
        _REQUEST_LAYOUTS[(api_key, api_version)] = layout
    return layout


def response_layout(api_key: int, api_version: int) -> MessageLayout:
    """The response schema and header shape of a version (ProtocolError if unknown)."""
    layout = _RESPONSE_LAYOUTS.get((api_key, api_version))
    if layout is None:
        layout = MessageLayout(response_schema(api_key, api_version),
                               response_header_version(api_key, api_version) >= 1)
        _RESPONSE_LAYOUTS[(api_key, api_version)] = layout
    return layout


def _best_effort_header(payload: Buffer) -> RequestHeader:
    """The header of a request we cannot fully decode: at least its first three fields."""
    try:
        return decode_request_header(payload)[0]
    except ProtocolError:
        api_key, api_version, correlation_id = _FIRST_THREE.unpack_from(payload, 0)
        return RequestHeader(api_key, api_version, correlation_id, None)


def _decode_probe(payload: Buffer) -> tuple[RequestHeader, Struct | None]:
    """An ApiVersions request at a version we do not advertise: header always, body if we can."""
    try:
        header, pos = decode_request_header(payload)
    except ProtocolError:
        return _best_effort_header(payload), None
    try:
        return header, request_schema(header.api_key, header.api_version).decode(payload[pos:])
    except ProtocolError:
        return header, None


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: object
) -> bytes:
    """A request payload (header + body, without the 4-byte length prefix); ``body`` is a
    Struct, a dict (its TypedDict in ``protocol.message_types``) or any object with the
    fields as attributes."""
    out = bytearray(p.INT16.pack(api_key))
    out += p.INT16.pack(api_version)
    out += p.INT32.pack(correlation_id)
    p.write_string(out, client_id)
    if request_header_version(api_key, api_version) >= 2:
        out.append(0)  # no tagged fields in the header
    request_schema(api_key, api_version).write(out, body)
    return bytes(out)


# An answer already encoded; a tuple, named once (``bytes | bytearray`` written in the call
# would build a union object on every response).
_ENCODED = (bytes, bytearray)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: object) -> bytes:
    """A response payload (header + body, without the 4-byte length prefix); ``body`` may
    be already encoded (bytes from ``encode_response_body``, e.g. a cached answer)."""
    out = bytearray(p.INT32.pack(correlation_id))
    if isinstance(body, _ENCODED):
        if response_header_version(api_key, api_version) >= 1:
            out.append(0)
        out += body
        return bytes(out)
    layout = _RESPONSE_LAYOUTS.get((api_key, api_version)) or response_layout(api_key,
                                                                              api_version)
    if layout.tagged_header:
        out.append(0)
    layout.schema.write(out, body)
    return bytes(out)


def encode_response_pieces(api_key: int, api_version: int, correlation_id: int, body: object
                           ) -> bytes | list[Sized]:
    """``encode_response``, where a Fetch answer may hold record sets that are not bytes
    (the broker's file regions): such an answer comes as a list of pieces
    (``PiecedOutput.pieces``), to be framed with ``framing.frame_pieces``."""
    if api_key != ApiKey.FETCH or isinstance(body, _ENCODED):
        return encode_response(api_key, api_version, correlation_id, body)
    out = PiecedOutput(p.INT32.pack(correlation_id))
    layout = _RESPONSE_LAYOUTS.get((api_key, api_version)) or response_layout(api_key,
                                                                              api_version)
    if layout.tagged_header:
        out.append(0)
    layout.schema.write(out, body)
    return out.pieces() if out.held else bytes(out)


def encode_response_body(api_key: int, api_version: int, body: object) -> bytes:
    """A response body alone, to keep and answer many requests with (no header)."""
    out = bytearray()
    response_schema(api_key, api_version).write(out, body)
    return bytes(out)


def decode_response(api_key: int, api_version: int, payload: Buffer) -> tuple[int, Struct]:
    """Decode a response payload to ``(correlation_id, body)``.

    An ApiVersions response that does not decode at the version asked for is
    retried as v0: that is how a broker answers a version it does not support.
    """
    correlation_id, pos = p.read_int32(payload, 0)
    if response_header_version(api_key, api_version) >= 1:
        _, pos = p.read_tagged_fields(payload, pos)
    try:
        return correlation_id, response_schema(api_key, api_version).decode(payload[pos:])
    except ProtocolError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        return correlation_id, response_schema(api_key, 0).decode(payload[pos:])


def decode_response_dict(api_key: int, api_version: int, payload: Buffer) -> tuple[int, Any]:
    """``decode_response`` with the body as plain dicts (its TypedDict in
    ``message_types``), read in place (no copy of the payload): what the replica fetcher
    reads its Fetch answers with, a key read being one dictionary lookup. The same checks
    and errors; no ApiVersions fallback (it is for Fetch-like answers)."""
    correlation_id, pos = p.read_int32(payload, 0)
    layout = _RESPONSE_LAYOUTS.get((api_key, api_version)) or response_layout(api_key,
                                                                              api_version)
    if layout.tagged_header:
        _, pos = p.read_tagged_fields(payload, pos)
    body, end = layout.schema.read_dict(payload, pos)
    if end != len(payload):
        raise ProtocolError(
            f"{layout.schema.name} ends at offset {end} but the response has "
            f"{len(payload) - end} more bytes", offset=end)
    return correlation_id, body


def api_versions_body(error_code: int = ErrorCode.NONE) -> ApiVersionsResponse:
    """The ApiVersions response body listing what clients may use (inter-broker keys left out)."""
    return {
        "error_code": int(error_code),
        "api_keys": [
            {"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in sorted(ADVERTISED_VERSIONS.items())
        ],
        "throttle_time_ms": 0,
    }


def api_versions_probe_response(correlation_id: int) -> bytes:
    """The answer to an ApiVersions request at a version we do not support.

    Error 35 (UNSUPPORTED_VERSION) in the exact v0 layout: correlation id, int16
    error code, int32-count array of (api_key, min, max) including key 18, no
    throttle time, no tagged fields. librdkafka then retries with v0,
    kafka-python with v2. Returned without the length prefix, like every
    ``encode_*`` here.
    """
    return encode_response(
        ApiKey.API_VERSIONS, 0, correlation_id, api_versions_body(ErrorCode.UNSUPPORTED_VERSION)
    )


__all__ = [
    "MessageLayout",
    "RequestHeader",
    "UnsupportedRequestError",
    "api_versions_body",
    "api_versions_probe_response",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "decode_response_dict",
    "encode_request",
    "encode_response",
    "known_versions",
    "request_header_version",
    "request_layout",
    "response_header_version",
    "response_layout",
]
