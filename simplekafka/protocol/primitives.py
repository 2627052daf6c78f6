"""The protocol's primitive types: how one number, string or byte string looks on the wire.

Every Kafka message is built from a handful of primitives. Fixed-width integers
are big-endian. Classic strings carry an int16 length, byte strings an int32
length, and ``-1`` means null. Flexible ("compact") versions replace those
lengths with an unsigned varint holding ``length + 1`` so that ``0`` can mean
null, and end every structure with a block of tagged fields. Records use zigzag
varints, where small negative numbers stay small.

Each reader takes ``(buf, pos)`` and returns ``(value, new_pos)``; each writer
appends to a ``bytearray``. Readers check bounds themselves and raise
:class:`~simplekafka.protocol.errors.ProtocolError` with the offset of the bad
byte, never ``struct.error`` or ``IndexError``. The ``struct.Struct`` objects
are compiled once, at import, as kazoo does.
"""

from __future__ import annotations

import struct
from typing import Any

from simplekafka.protocol.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
_INT16_UNPACK = INT16.unpack_from
_INT32_UNPACK = INT32.unpack_from

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def short_read(pos: int, needed: int, available: int, what: str) -> ProtocolError:
    """The error for a buffer that ends before ``what`` does."""
    size = "" if "bytes" in what else f" ({needed} bytes)"
    return ProtocolError(
        f"expected {what}{size} at offset {pos}, but only {max(available, 0)} bytes remain",
        offset=pos + max(available, 0),
        expected=what,
    )


def read_fixed(st: struct.Struct, buf: Buffer, pos: int, what: str) -> tuple[Any, int]:
    """Read one fixed-width value with a precompiled ``struct.Struct``."""
    end = pos + st.size
    if end > len(buf):
        raise short_read(pos, st.size, len(buf) - pos, what)
    return st.unpack_from(buf, pos)[0], end


def read_int8(buf: Buffer, pos: int) -> tuple[int, int]:
    return read_fixed(INT8, buf, pos, "int8")


def read_int16(buf: Buffer, pos: int) -> tuple[int, int]:
    return read_fixed(INT16, buf, pos, "int16")


def read_int32(buf: Buffer, pos: int) -> tuple[int, int]:
    return read_fixed(INT32, buf, pos, "int32")


def read_int64(buf: Buffer, pos: int) -> tuple[int, int]:
    return read_fixed(INT64, buf, pos, "int64")


def read_uint32(buf: Buffer, pos: int) -> tuple[int, int]:
    return read_fixed(UINT32, buf, pos, "uint32")


# --- varints -------------------------------------------------------------------------


VARINT_MAX_BYTES = 5
"""Kafka's bound for a varint holding an int32 (``ByteUtils.readVarint``)."""
VARLONG_MAX_BYTES = 10
"""Kafka's bound for a varlong holding an int64 (``ByteUtils.readVarlong``)."""


def read_unsigned_varint(
    buf: Buffer, pos: int, max_bytes: int = VARINT_MAX_BYTES
) -> tuple[int, int]:
    """An unsigned LEB128 varint (7 bits a byte, low bits first, high bit = more).

    The one varint reader of the code base: records, the dissector, the Spark
    source and the codec all call it (or, on a hot path, read one- and
    two-byte varints inline and call it for the rest; tests hold those inlined
    copies to this one). At most ``max_bytes`` bytes, as Kafka: 5 for a
    varint, 10 for a varlong; a longer or cut-off varint raises
    :class:`ProtocolError` naming its offset.
    """
    try:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
        result = byte & 0x7F
        shift = 7
        at = pos + 1
        stop = pos + max_bytes
        while at < stop:
            byte = buf[at]
            at += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, at
            shift += 7
    except IndexError:
        end = len(buf)
        raise ProtocolError(
            f"varint starting at offset {pos} is cut off at offset {end}",
            offset=end,
            expected="another varint byte",
        ) from None
    raise ProtocolError(
        f"varint starting at offset {pos} is longer than {max_bytes} bytes",
        offset=pos + max_bytes,
        expected=f"a varint of at most {max_bytes} bytes",
    )


def write_unsigned_varint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_unsigned_varint(value: int) -> bytes:
    out = bytearray()
    write_unsigned_varint(out, value)
    return bytes(out)


def zigzag_encode(value: int, bits: int = 64) -> int:
    """Map signed to unsigned so that small magnitudes stay small: 0,-1,1,-2 -> 0,1,2,3."""
    return (value << 1) ^ (value >> (bits - 1))


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint (records use these): at most 5 bytes.

    Bits past the 32nd (the top of a fifth byte) are dropped, as Kafka's
    ``ByteUtils.readVarint`` drops them, so the value is always an int32.
    """
    raw, pos = read_unsigned_varint(buf, pos, VARINT_MAX_BYTES)
    return zigzag_decode(raw & 0xFFFFFFFF), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint: at most 10 bytes, always an int64."""
    raw, pos = read_unsigned_varint(buf, pos, VARLONG_MAX_BYTES)
    return zigzag_decode(raw & 0xFFFFFFFFFFFFFFFF), pos


def write_varint(out: bytearray, value: int) -> None:
    write_unsigned_varint(out, zigzag_encode(value, 32) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    write_unsigned_varint(out, zigzag_encode(value, 64) & 0xFFFFFFFFFFFFFFFF)


# --- strings and bytes ---------------------------------------------------------------


def _take(buf: Buffer, pos: int, length: int, what: str) -> tuple[bytes, int]:
    end = pos + length
    if end > len(buf):
        raise short_read(pos, length, len(buf) - pos, what)
    return bytes(buf[pos:end]), end


def _utf8(raw: bytes, pos: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(
            f"string at offset {pos} is not valid UTF-8 ({exc.reason})",
            offset=pos + exc.start,
            expected="UTF-8 text",
        ) from None


def read_string(buf: Buffer, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    """int16 length then UTF-8; length -1 is null (only where the field is nullable)."""
    body = pos + 2
    if body > len(buf):
        raise short_read(pos, 2, len(buf) - pos, "int16 string length")
    (length,) = _INT16_UNPACK(buf, pos)
    if length >= 0:
        end = body + length
        if end <= len(buf):
            return _utf8(bytes(buf[body:end]), body), end
    elif length == -1 and nullable:
        return None, body
    if length < 0:
        raise ProtocolError(
            f"string length {length} at offset {pos} is negative",
            offset=pos,
            expected="a string length >= 0" + (" or -1" if nullable else ""),
        )
    raw, end = _take(buf, body, length, f"{length} bytes of string")
    return _utf8(raw, body), end


def read_bytes(buf: Buffer, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    """int32 length then raw bytes; length -1 is null (only where nullable)."""
    body = pos + 4
    if body > len(buf):
        raise short_read(pos, 4, len(buf) - pos, "int32 bytes length")
    (length,) = _INT32_UNPACK(buf, pos)
    if length >= 0:
        end = body + length
        if end <= len(buf):
            return bytes(buf[body:end]), end
    elif length == -1 and nullable:
        return None, body
    if length < 0:
        raise ProtocolError(
            f"bytes length {length} at offset {pos} is negative",
            offset=pos,
            expected="a bytes length >= 0" + (" or -1" if nullable else ""),
        )
    return _take(buf, body, length, f"{length} bytes")


def read_compact_length(buf: Buffer, pos: int, nullable: bool, what: str) -> tuple[int, int]:
    """A compact length: unsigned varint ``n + 1``; returns -1 for null."""
    raw, body = read_unsigned_varint(buf, pos)
    if raw == 0:
        if nullable:
            return -1, body
        raise ProtocolError(
            f"compact {what} at offset {pos} is null but the field is not nullable",
            offset=pos,
            expected=f"a non-null compact {what} length",
        )
    return raw - 1, body


def read_compact_string(buf: Buffer, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    length, body = read_compact_length(buf, pos, nullable, "string")
    if length < 0:
        return None, body
    raw, end = _take(buf, body, length, f"{length} bytes of string")
    return _utf8(raw, body), end


def read_compact_bytes(buf: Buffer, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    length, body = read_compact_length(buf, pos, nullable, "bytes")
    if length < 0:
        return None, body
    return _take(buf, body, length, f"{length} bytes")


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode("utf-8")
    if len(raw) > INT16_MAX:
        raise ValueError(f"string of {len(raw)} bytes is too long for an int16 length")
    out += INT16.pack(len(raw))
    out += raw


def write_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    raw = value.encode("utf-8")
    write_unsigned_varint(out, len(raw) + 1)
    out += raw


def write_compact_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out.append(0)
        return
    write_unsigned_varint(out, len(value) + 1)
    out += value


# --- tagged fields -------------------------------------------------------------------


def read_tagged_fields(buf: Buffer, pos: int) -> tuple[dict[int, bytes], int]:
    """The tagged-field block that ends every structure in a flexible version.

    Unknown tags are kept as raw bytes, so a decoder can skip what it does not
    understand, which is the point of tagged fields.
    """
    start = pos
    count, pos = read_unsigned_varint(buf, pos)
    if count > len(buf) - pos:
        raise ProtocolError(
            f"{count} tagged fields cannot fit in the {len(buf) - pos} bytes left",
            offset=start,
            expected="a tagged field count that fits the buffer",
        )
    fields: dict[int, bytes] = {}
    last_tag = -1
    for _ in range(count):
        tag_pos = pos
        tag, pos = read_unsigned_varint(buf, pos)
        if tag <= last_tag:
            raise ProtocolError(
                f"tag {tag} at offset {tag_pos} is not above the previous tag {last_tag}",
                offset=tag_pos,
                expected="tags in strictly increasing order",
            )
        last_tag = tag
        size, pos = read_unsigned_varint(buf, pos)
        fields[tag], pos = _take(buf, pos, size, f"{size} bytes of tagged field {tag}")
    return fields, pos


def write_tagged_fields(out: bytearray, fields: dict[int, bytes] | None) -> None:
    if not fields:
        out.append(0)
        return
    write_unsigned_varint(out, len(fields))
    for tag in sorted(fields):
        write_unsigned_varint(out, tag)
        write_unsigned_varint(out, len(fields[tag]))
        out += fields[tag]
