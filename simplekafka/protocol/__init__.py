"""Stage 1: the Kafka wire protocol, sans-I/O.

Bytes in, objects out; objects in, bytes out; no sockets. The broker, the
client, the dissector and the tests all share this codec.
"""

from simplekafka.protocol.api import (
    SUPPORTED_VERSIONS,
    ApiKey,
    request_schema,
    response_schema,
)
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.framing import FrameDecoder, FrameTooLargeError, encode_frame
from simplekafka.protocol.messages import (
    RequestHeader,
    UnsupportedRequestError,
    api_versions_probe_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from simplekafka.protocol.schema import EncodeError, Schema, Struct

__all__ = [
    "SUPPORTED_VERSIONS",
    "ApiKey",
    "CorruptBatchError",
    "EncodeError",
    "ErrorCode",
    "FrameDecoder",
    "FrameTooLargeError",
    "ProtocolError",
    "RequestHeader",
    "Schema",
    "Struct",
    "UnsupportedRequestError",
    "api_versions_probe_response",
    "decode_request",
    "decode_response",
    "encode_frame",
    "encode_request",
    "encode_response",
    "request_schema",
    "response_schema",
]
