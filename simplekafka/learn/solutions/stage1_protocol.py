"""Stage 1 exercises: Kafka's wire protocol by hand, checked byte for byte against our codec.

Read stages/stage1_protocol/README.md first. ``simplekafka learn check 1``
compares what these functions return with ``simplekafka.protocol`` and, on a
difference, prints both hexdumps, a caret under the first wrong byte and the
dissector's field tree.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from simplekafka.protocol.batch_header import crc32c  # CRC-32C (Castagnoli), given

# --- exercise 1: varints ------------------------------------------------------------------


def encode_varint(value: int) -> bytes:
    """A signed varint as Kafka's records write it.

    Zigzag first (0, -1, 1, -2, ... become 0, 1, 2, 3, ...: ``(v << 1) ^ (v >> 63)``),
    then 7 bits a byte, lowest bits first, the high bit of a byte set when
    another byte follows. 300 is ``d8 04``; -1 is ``01``.
    """
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Read the signed varint starting at ``data[pos]``: (its value, the position after it)."""
    zigzag = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        zigzag |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
    return (zigzag >> 1) ^ -(zigzag & 1), pos


# --- exercise 2: the request header and the ApiVersions answer ---------------------------


def encode_request_header(api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None) -> bytes:
    """Request header v1: int16 api_key, int16 api_version, int32 correlation_id, client_id.

    client_id is a nullable string: an int16 byte length (-1 for None), then
    the UTF-8 bytes. Every integer is big-endian.
    """
    if client_id is None:
        tail = struct.pack(">h", -1)
    else:
        raw = client_id.encode("utf-8")
        tail = struct.pack(">h", len(raw)) + raw
    return struct.pack(">hhi", api_key, api_version, correlation_id) + tail


def encode_api_versions_response(correlation_id: int,
                                 versions: Mapping[int, tuple[int, int]]) -> bytes:
    """The ApiVersions v0 answer (no length prefix): what a broker says it speaks.

    int32 correlation_id (the response header), int16 error_code (0), then an
    array: int32 count, and per API key, in ascending key order, int16
    api_key, int16 min_version, int16 max_version.
    """
    out = bytearray(struct.pack(">ihi", correlation_id, 0, len(versions)))
    for key in sorted(versions):
        low, high = versions[key]
        out += struct.pack(">hhh", key, low, high)
    return bytes(out)


# --- exercise 3: a RecordBatch v2 and its CRC ---------------------------------------------


def encode_record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    """One record inside a batch: varint length, then the body it counts.

    Body: int8 attributes (0), varint timestamp delta (0 here: every record
    has the batch's timestamp), varint offset delta, varint key length (-1 for
    None) and key, varint value length (-1 for None) and value, varint header
    count (0).
    """
    body = bytearray(b"\x00")
    body += encode_varint(0)
    body += encode_varint(offset_delta)
    for field in (key, value):
        if field is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(field)) + field
    body += encode_varint(0)
    return encode_varint(len(body)) + bytes(body)


def encode_record_batch(records: Sequence[tuple[bytes | None, bytes | None]],
                        base_offset: int, timestamp_ms: int) -> bytes:
    """A RecordBatch v2, uncompressed, no producer id, every record stamped ``timestamp_ms``.

    Header (big-endian): int64 baseOffset, int32 batchLength (bytes after this
    field), int32 partitionLeaderEpoch (-1), int8 magic (2), uint32 crc,
    int16 attributes (0), int32 lastOffsetDelta, int64 baseTimestamp, int64
    maxTimestamp, int64 producerId (-1), int16 producerEpoch (-1), int32
    baseSequence (-1), int32 recordsCount; then the records. The CRC-32C
    covers everything from attributes to the end.
    """
    payload = b"".join(encode_record(delta, key, value)
                       for delta, (key, value) in enumerate(records))
    after_crc = struct.pack(">hiqqqhii", 0, len(records) - 1, timestamp_ms, timestamp_ms,
                            -1, -1, -1, len(records)) + payload
    crc = crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, the rest
    return struct.pack(">qiibI", base_offset, batch_length, -1, 2, crc) + after_crc


# --- exercise 4: flexible versions: unsigned varints, compact strings, tagged fields ------


def encode_unsigned_varint(value: int) -> bytes:
    """An unsigned varint, as flexible versions write every length and count.

    No zigzag (a length is never negative): 7 bits a byte, lowest bits first,
    the high bit of a byte set when another byte follows. 127 is ``7f``; 128
    is ``80 01``; 300 is ``ac 02``.
    """
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_compact_string(value: str | None) -> bytes:
    """A compact (nullable) string: unsigned varint of its UTF-8 byte length + 1, then the bytes.

    None is the single byte ``00`` (length 0 means null; "" is ``01``).
    """
    if value is None:
        return encode_unsigned_varint(0)
    raw = value.encode("utf-8")
    return encode_unsigned_varint(len(raw) + 1) + raw


def encode_tagged_fields(fields: Mapping[int, bytes]) -> bytes:
    """The tagged-field block that ends every structure of a flexible version.

    Unsigned varint count (the count itself, no + 1), then per field in
    ascending tag order: unsigned varint tag, unsigned varint size in bytes,
    the bytes. No fields is the single byte ``00``.
    """
    out = bytearray(encode_unsigned_varint(len(fields)))
    for tag in sorted(fields):
        out += encode_unsigned_varint(tag)
        out += encode_unsigned_varint(len(fields[tag]))
        out += fields[tag]
    return bytes(out)


# --- exercise 5: ApiVersions v3, the flexible version clients open with -------------------


def encode_api_versions_v3_request(correlation_id: int, client_id: str | None,
                                   software_name: str, software_version: str) -> bytes:
    """An ApiVersions v3 request payload (no length prefix): request header v2, then the body.

    Header v2 is header v1 (exercise 2: client_id stays a classic int16-length
    nullable string, so any broker can read who is asking) followed by a
    tagged-field block (none). Body: compact string client_software_name,
    compact string client_software_version, tagged fields (none).
    """
    header = encode_request_header(18, 3, correlation_id, client_id) + encode_tagged_fields({})
    body = (encode_compact_string(software_name) + encode_compact_string(software_version)
            + encode_tagged_fields({}))
    return header + body


def encode_api_versions_v3_response(correlation_id: int,
                                    versions: Mapping[int, tuple[int, int]]) -> bytes:
    """The ApiVersions v3 answer (no length prefix), error_code 0.

    The response header of ApiVersions is always v0: int32 correlation_id
    alone, no tagged fields (a client must read it before it knows what the
    broker speaks). Body: int16 error_code, compact array api_keys (unsigned
    varint count + 1, then per key in ascending order: int16 api_key, int16
    min_version, int16 max_version, tagged fields), int32 throttle_time_ms
    (0), tagged fields (none).
    """
    out = bytearray(struct.pack(">ih", correlation_id, 0))
    out += encode_unsigned_varint(len(versions) + 1)
    for key in sorted(versions):
        low, high = versions[key]
        out += struct.pack(">hhh", key, low, high) + encode_tagged_fields({})
    out += struct.pack(">i", 0)  # throttle_time_ms
    out += encode_tagged_fields({})  # the body's tagged fields
    return bytes(out)
