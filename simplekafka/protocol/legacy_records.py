"""Message formats v0 and v1: the "message sets" Kafka wrote before RecordBatch v2.

Before Kafka 0.11 a partition's log, a Produce request and a Fetch answer held
a *message set*: messages one after another, each self-contained::

    offset      int64
    size        int32    bytes that follow, to the end of this message
    crc         uint32   plain CRC-32 (zlib's, not CRC-32C) of magic..end
    magic       int8     0 (Kafka 0.8-0.9) or 1 (0.10, KIP-32 timestamps)
    attributes  int8     bits 0-2 codec, bit 3 timestamp type (v1 only)
    timestamp   int64    v1 only
    key         bytes    int32 length, -1 for null
    value       bytes    int32 length, -1 for null

Compression wraps a whole message set: a *wrapper* message whose codec bits
are set, whose key is null and whose value is the compressed inner message
set. In v0 the inner messages carry absolute offsets; in v1 (KIP-31) they
carry offsets relative to the first, and the wrapper carries the absolute
offset of the last, so a broker assigning offsets rewrites only the wrapper.
A v1 wrapper's timestamp is its inner messages' maximum, or the broker's time
when its timestamp-type bit says LogAppendTime (the inner ones then do not count).

v0 LZ4 carries a bug of Kafka 0.8-0.9: the frame descriptor's header checksum
was computed over the frame's magic bytes too. Readers of v0 fix it before
decompressing; writers of v0 reproduce it (and leave out the content size,
which those brokers could not read), as Kafka's own down-conversion does.

Here: :func:`build_message_set` and :func:`parse_message_set`. The broker
converts to and from RecordBatch v2 in :mod:`simplekafka.broker.message_format`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from simplekafka.protocol.compression import Compression, compress, decompress
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode

__all__ = [
    "LegacyMessage",
    "build_message_set",
    "is_message_set",
    "parse_message_set",
]

NO_TIMESTAMP = -1
TIMESTAMP_TYPE_BIT = 0x08
CODEC_MASK = 0x07
LOG_OVERHEAD = 12  # offset + size
_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
CRC_START = 16  # the CRC covers magic onwards
MIN_SIZE = {0: 4 + 1 + 1 + 4 + 4, 1: 4 + 1 + 1 + 8 + 4 + 4}  # crc..value length, no data


class LegacyMessage(NamedTuple):
    """One message of a v0/v1 set, as a reader sees it (compressed ones already unwrapped).

    ``timestamp`` is -1 for v0 (no timestamps) and ``timestamp_type`` 0
    (CreateTime) or 1 (LogAppendTime), taken from the wrapper when there is one.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    magic: int = 1
    timestamp_type: int = 0
    codec: int = 0  # the codec of the message (or of its wrapper) as it arrived


def is_message_set(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` starts with a v0/v1 message rather than a v2 batch (byte 16: magic)."""
    return len(data) > 16 and data[16] in (0, 1)


# ---------------------------------------------------------------- writing


def _message(offset: int, magic: int, attributes: int, timestamp: int,
             key: bytes | None, value: bytes | None) -> bytes:
    """One message, CRC and all."""
    body = [struct.pack(">bb", magic, attributes)]
    if magic == 1:
        body.append(_TIMESTAMP.pack(timestamp))
    for data in (key, value):
        if data is None:
            body.append(_LENGTH.pack(-1))
        else:
            body.append(_LENGTH.pack(len(data)))
            body.append(bytes(data))
    rest = b"".join(body)
    crc = zlib.crc32(rest)
    return struct.pack(">qiI", offset, len(rest) + 4, crc) + rest


def build_message_set(records: Iterable[tuple[int, int | None, bytes | None, bytes | None]],
                      magic: int, compression: int | str = 0, timestamp_type: int = 0,
                      log_append_time: int = NO_TIMESTAMP) -> bytes:
    """Encode ``(offset, timestamp, key, value)`` tuples as one v0/v1 message set.

    Offsets are the records' own (a producer writes 0, 1, 2...; the broker's
    down-conversion writes the log's). With ``compression`` the set becomes one
    wrapper message (offset: the last record's; v1 inner offsets relative to
    the first). ``timestamp_type`` 1 (LogAppendTime, v1 only) stamps
    ``log_append_time`` on the wrapper, or on each message when uncompressed.
    Raises ValueError for a magic or codec the format cannot carry (zstd).
    """
    if magic not in (0, 1):
        raise ValueError(f"a message set has magic 0 or 1, not {magic}")
    codec = Compression.of(compression)
    if codec is Compression.ZSTD:
        raise ValueError("message formats v0 and v1 cannot carry zstd (KIP-110: v2 only)")
    records = list(records)
    if not records:
        return b""
    log_append = magic == 1 and timestamp_type == 1
    ts_bit = TIMESTAMP_TYPE_BIT if log_append else 0

    def stamp(timestamp: int | None) -> int:
        if magic == 0:
            return NO_TIMESTAMP
        if log_append:
            return log_append_time
        return NO_TIMESTAMP if timestamp is None else timestamp

    if codec is Compression.NONE:
        return b"".join(_message(offset, magic, ts_bit, stamp(ts), key, value)
                        for offset, ts, key, value in records)
    first, last = records[0][0], records[-1][0]
    inner = b"".join(
        _message(offset - first if magic == 1 else offset, magic, ts_bit, stamp(ts), key, value)
        for offset, ts, key, value in records)
    packed = _lz4_v0(inner) if codec is Compression.LZ4 and magic == 0 else compress(codec, inner)
    if log_append:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max((stamp(ts) for _, ts, _, _ in records), default=NO_TIMESTAMP)
    return _message(last, magic, int(codec) | ts_bit, wrapper_ts, None, packed)


# ---------------------------------------------------------------- reading


def _read_bytes(buf: bytes | memoryview, pos: int, end: int, what: str
                ) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptBatchError(f"message {what} length cut short", offset=pos,
                                expected="int32 length")
    (length,) = _LENGTH.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptBatchError(f"message {what} of {length} bytes runs past the message",
                                offset=pos, expected=f"at most {end - pos} bytes")
    return bytes(buf[pos:pos + length]), pos + length


def _messages(buf: bytes | memoryview, check_crc: bool
              ) -> Iterator[tuple[int, int, int, int, bytes | None, bytes | None]]:
    """(offset, magic, attributes, timestamp, key, value) of each whole message in ``buf``;
    a partial trailing message (a fetch cut short) is left out, as old clients do."""
    pos, end = 0, len(buf)
    while end - pos >= LOG_OVERHEAD:
        offset, size = struct.unpack_from(">qi", buf, pos)
        if size < MIN_SIZE[0]:
            raise CorruptBatchError(f"message size {size} is smaller than a message",
                                    offset=pos + 8, expected=f"size >= {MIN_SIZE[0]}")
        stop = pos + LOG_OVERHEAD + size
        if stop > end:
            return
        _, _, crc, magic, attributes = _HEAD.unpack_from(buf, pos)
        if magic not in (0, 1):
            raise CorruptBatchError(f"message at byte {pos} has magic {magic}, expected 0 or 1",
                                    offset=pos + 16, expected="magic 0 or 1")
        if size < MIN_SIZE[magic]:
            raise CorruptBatchError(f"message size {size} is smaller than a v{magic} message",
                                    offset=pos + 8, expected=f"size >= {MIN_SIZE[magic]}")
        if check_crc:
            actual = zlib.crc32(buf[pos + CRC_START:stop])
            if actual != crc:
                raise CorruptBatchError(
                    f"message at offset {offset} has crc 0x{crc:08x}, its bytes give "
                    f"0x{actual:08x}", ErrorCode.CORRUPT_MESSAGE, offset=pos + 12,
                    expected=f"crc 0x{actual:08x}")
        at = pos + 18
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = _TIMESTAMP.unpack_from(buf, at)
            at += 8
        key, at = _read_bytes(buf, at, stop, "key")
        value, at = _read_bytes(buf, at, stop, "value")
        if at != stop:
            raise CorruptBatchError(f"message at offset {offset} has {stop - at} bytes past "
                                    "its value", offset=at, expected="end of message")
        yield offset, magic, attributes, timestamp, key, value
        pos = stop


def parse_message_set(buf: bytes | bytearray | memoryview, check_crc: bool = True,
                      max_decompressed_bytes: int | None = None) -> list[LegacyMessage]:
    """Every message of a v0/v1 set, compressed wrappers unwrapped, offsets absolute.

    Raises CorruptBatchError: CORRUPT_MESSAGE for a CRC that does not match,
    and for anything else malformed (a wrapper inside a wrapper included).
    """
    data = buf if isinstance(buf, bytes) else bytes(buf)
    out: list[LegacyMessage] = []
    for offset, magic, attributes, timestamp, key, value in _messages(data, check_crc):
        codec = attributes & CODEC_MASK
        ts_type = 1 if magic == 1 and attributes & TIMESTAMP_TYPE_BIT else 0
        if not codec:
            out.append(LegacyMessage(offset, timestamp, key, value, magic, ts_type))
            continue
        if codec > Compression.LZ4:
            raise CorruptBatchError(f"message at offset {offset} has codec {codec}; v{magic} "
                                    "knows gzip, snappy and lz4",
                                    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                    expected="codec 0-3")
        if value is None:
            raise CorruptBatchError(f"compressed wrapper at offset {offset} has a null value",
                                    expected="a compressed message set")
        if codec == Compression.LZ4 and magic == 0:
            value = fix_lz4_v0(value)
        inner = list(_messages(decompress(codec, value, max_decompressed_bytes), check_crc))
        if not inner:
            continue
        if any(m[2] & CODEC_MASK for m in inner):
            raise CorruptBatchError(f"compressed wrapper at offset {offset} holds a compressed "
                                    "message", expected="uncompressed inner messages")
        shift = offset - inner[-1][0] if magic == 1 else 0  # v1: relative inner offsets
        for inner_offset, inner_magic, _, inner_ts, inner_key, inner_value in inner:
            ts = timestamp if ts_type == 1 else inner_ts if inner_magic == 1 else NO_TIMESTAMP
            out.append(LegacyMessage(inner_offset + shift, ts, inner_key, inner_value,
                                     inner_magic, ts_type, codec))
    return out


# ---------------------------------------------------------------- v0 LZ4


def _lz4_v0(data: bytes) -> bytes:
    """An LZ4 frame as Kafka 0.8-0.9 wrote it: no content size, the buggy header checksum."""
    frame = bytearray(compress(Compression.LZ4, data))
    flags = frame[4]
    if flags & 0x08:  # a content size follows the BD byte: drop it and its flag
        del frame[6:14]
        frame[4] = flags & ~0x08
    frame[6] = (xxh32(bytes(frame[0:6])) >> 8) & 0xFF  # over the magic too: the old bug
    return bytes(frame)


def fix_lz4_v0(data: bytes) -> bytes:
    """The frame with a correct header checksum (over FLG..end of descriptor only)."""
    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        return data  # not a frame: let decompress name the problem
    end = 14 if data[4] & 0x08 else 6
    if len(data) <= end:
        return data
    fixed = bytearray(data)
    fixed[end] = (xxh32(bytes(data[4:end])) >> 8) & 0xFF
    return bytes(fixed)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes: an LZ4 frame descriptor's checksum needs no more."""
    n, pos = len(data), 0
    if n >= 16:
        raise ValueError("xxh32 here covers frame descriptors (under 16 bytes)")
    h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
