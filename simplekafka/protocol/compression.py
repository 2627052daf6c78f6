"""The five compression settings of a RecordBatch v2, through one library (cramjam).

A compressed batch keeps its 61-byte header in the clear and compresses only
the records that follow it, as one block. The codec is bits 0-2 of the batch's
``attributes``. Each codec has a Kafka-specific detail worth knowing:

- gzip: an ordinary gzip stream (RFC 1952).
- snappy: the Java client wraps raw snappy blocks in the *xerial* framing
  (a 16-byte header ``\\x82SNAPPY\\x00`` + version + compatible version, then
  chunks each prefixed by a big-endian int32 length). librdkafka writes raw
  snappy without any framing. Every client reads both, and so do we; we write
  the xerial framing, like the Java client (see docs/design-notes.md).
- lz4: the standard LZ4 *frame* format (magic ``04 22 4D 18``), not bare blocks.
- zstd: a standard zstd frame (the Java client omits the content size, which
  a streaming decoder handles).
"""

from __future__ import annotations

import enum
import struct
from typing import Protocol

import cramjam

from simplekafka.protocol.errors import CorruptBatchError, ErrorCode

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible with 1
XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default block size
_INT32 = struct.Struct(">i")


class Compression(enum.IntEnum):
    """Codec ids as they appear in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def of(cls, codec: int | str | None) -> Compression:
        """Accept an id, a member or a Kafka-style name (``"gzip"``, ``"none"``...).

        Raises CorruptBatchError with UNSUPPORTED_COMPRESSION_TYPE for anything
        else, so a broker can answer a batch with codec 5-7 by that error code.
        """
        if codec is None:
            return cls.NONE
        if isinstance(codec, str):
            try:
                return cls[codec.strip().upper()]
            except KeyError:
                raise CorruptBatchError(
                    f"unknown compression type {codec!r}; "
                    "expected one of none, gzip, snappy, lz4, zstd",
                    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                    expected="none, gzip, snappy, lz4 or zstd",
                ) from None
        try:
            return cls(codec)
        except ValueError:
            raise CorruptBatchError(
                f"unknown compression codec id {codec}; expected 0-4",
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                expected="codec id 0-4",
            ) from None


# What librdkafka uses when the producer sets no level: zlib's default, lz4's
# fast mode (cramjam's own default is a slower high-compression level), zstd 3.
DEFAULT_LEVELS = {"GZIP": 6, "LZ4": 0, "ZSTD": 3}


def compress(
    codec: int | str | Compression,
    data: bytes | bytearray | memoryview,
    level: int | None = None,
) -> bytes:
    """Compress ``data`` the way a Kafka producer would for ``codec``.

    ``level`` is the codec's own compression level (gzip 1-9, lz4 0-12, zstd
    1-22); None picks the default in DEFAULT_LEVELS. Snappy has no levels.
    """
    codec = Compression.of(codec)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.SNAPPY:
        return snappy_xerial_compress(data)
    if level is None:
        level = DEFAULT_LEVELS[codec.name]
    module = {Compression.GZIP: cramjam.gzip, Compression.LZ4: cramjam.lz4}.get(codec, cramjam.zstd)
    try:
        return bytes(module.compress(data, level=level))
    except (OverflowError, TypeError, ValueError) as exc:
        raise ValueError(f"bad {codec.name.lower()} compression level {level!r}: {exc}") from None


# What a broker or consumer lets one batch's records section grow to when decompressed
# (a "decompression bomb" of a few KB can otherwise claim gigabytes).
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
_FIRST_GUESS_RATIO = 16  # first output buffer: 16x the input (most batches fit, no retry)
_OVERFLOW = "failed to write whole buffer"  # cramjam's message when the output buffer is full


class DecompressedTooLargeError(CorruptBatchError):
    """A compressed records section that expands beyond the allowed size."""

    def __init__(self, codec: str, limit: int):
        super().__init__(
            f"{codec} data decompresses to more than {limit} bytes (the cap on one batch)",
            ErrorCode.INVALID_RECORD,
            expected=f"at most {limit} decompressed bytes",
        )
        self.limit = limit


def decompress(codec: int | str | Compression, data: bytes | bytearray | memoryview,
               max_bytes: int | None = None) -> bytes:
    """Undo :func:`compress`; bad input raises CorruptBatchError, nothing else.

    With ``max_bytes`` the output never grows past it: more raises
    DecompressedTooLargeError before that much memory is taken (snappy
    declares its size up front; the others decompress into a bounded buffer).
    """
    codec = Compression.of(codec)
    if codec is Compression.NONE:
        return bytes(data)
    try:
        if codec is Compression.SNAPPY:
            return snappy_decompress(data, max_bytes)
        module = {Compression.GZIP: cramjam.gzip, Compression.LZ4: cramjam.lz4}.get(
            codec, cramjam.zstd)
        if max_bytes is None:
            return bytes(module.decompress(data))
        return _bounded(module, codec.name.lower(), data, max_bytes)
    except CorruptBatchError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError, ValueError...
        raise CorruptBatchError(
            f"{codec.name.lower()} data does not decompress: {exc}",
            expected=f"a valid {codec.name.lower()} stream",
        ) from None


class _DecompressInto(Protocol):
    """What ``_bounded`` uses of a cramjam codec module."""

    def decompress_into(self, data: bytes | bytearray | memoryview, out: bytearray) -> int: ...


def _bounded(module: _DecompressInto, name: str, data: bytes | bytearray | memoryview,
             max_bytes: int) -> bytes:
    """Decompress into a buffer of a first guess, then once more of ``max_bytes + 1`` if needed."""
    size = min(max(len(data) * _FIRST_GUESS_RATIO, 4096), max_bytes + 1)
    while True:
        out = bytearray(size)
        try:
            written = module.decompress_into(data, out)
        except Exception as exc:
            if _OVERFLOW not in str(exc):
                raise
            written = size
        if written < size:
            return bytes(memoryview(out)[:written])
        if size > max_bytes:
            raise DecompressedTooLargeError(name, max_bytes)
        size = max_bytes + 1


def snappy_xerial_compress(
    data: bytes | bytearray | memoryview, block_size: int = XERIAL_BLOCK_SIZE
) -> bytes:
    """Snappy in snappy-java's framing: header, then (int32 length, raw block) chunks."""
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + block_size]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def snappy_raw_compress(data: bytes | bytearray | memoryview) -> bytes:
    """One raw snappy block, as librdkafka writes it."""
    return bytes(cramjam.snappy.compress_raw(data))


def snappy_decompress(data: bytes | bytearray | memoryview, max_bytes: int | None = None) -> bytes:
    """Read snappy either xerial-framed (Java client) or raw (librdkafka), at most ``max_bytes``."""
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        if max_bytes is not None and cramjam.snappy.decompress_raw_len(view) > max_bytes:
            raise DecompressedTooLargeError("snappy", max_bytes)
        return bytes(cramjam.snappy.decompress_raw(view))
    if len(view) < len(XERIAL_HEADER):
        raise CorruptBatchError(
            f"xerial snappy header is {len(XERIAL_HEADER)} bytes, got {len(view)}",
            offset=len(view),
            expected="16-byte xerial header",
        )
    out = []
    total = 0
    pos = len(XERIAL_HEADER)
    end = len(view)
    while pos < end:
        if end - pos < 4:
            raise CorruptBatchError(
                "xerial snappy chunk length cut short", offset=pos, expected="int32 chunk length"
            )
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CorruptBatchError(
                f"xerial snappy chunk of {length} bytes runs past the end ({end - pos} left)",
                offset=pos - 4,
                expected=f"chunk length <= {end - pos}",
            )
        chunk = view[pos : pos + length]
        if max_bytes is not None:
            total += cramjam.snappy.decompress_raw_len(chunk)
            if total > max_bytes:
                raise DecompressedTooLargeError("snappy", max_bytes)
        out.append(bytes(cramjam.snappy.decompress_raw(chunk)))
        pos += length
    return b"".join(out)
