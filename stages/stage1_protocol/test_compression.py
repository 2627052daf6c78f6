"""The five compression settings, checked against the codecs kafka-python uses.

kafka-python's ``kafka.codec`` (built on python-snappy, lz4 and zstandard) is an
independent implementation: what it compresses we must decompress, and the
other way round. Snappy gets extra care because Kafka has two dialects of it.
"""

from __future__ import annotations

import gzip

import cramjam
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from simplekafka.protocol.compression import (
    XERIAL_HEADER,
    XERIAL_MAGIC,
    Compression,
    DecompressedTooLargeError,
    compress,
    decompress,
    snappy_decompress,
    snappy_raw_compress,
    snappy_xerial_compress,
)
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.records import build_batch, parse_batch

CODECS = list(Compression)
PAYLOAD = b"".join(b"record %d with a fairly repetitive body; " % i for i in range(3000))

KAFKA_PYTHON_ENCODERS = {
    Compression.GZIP: kafka_codec.gzip_encode,
    Compression.SNAPPY: kafka_codec.snappy_encode,
    Compression.LZ4: kafka_codec.lz4_encode,
    Compression.ZSTD: kafka_codec.zstd_encode,
}
KAFKA_PYTHON_DECODERS = {
    Compression.GZIP: kafka_codec.gzip_decode,
    Compression.SNAPPY: kafka_codec.snappy_decode,
    Compression.LZ4: kafka_codec.lz4_decode,
    Compression.ZSTD: kafka_codec.zstd_decode,
}


@pytest.mark.parametrize(
    ("given_name", "codec"),
    [
        (0, Compression.NONE),
        (4, Compression.ZSTD),
        ("gzip", Compression.GZIP),
        ("Snappy", Compression.SNAPPY),
        (" lz4 ", Compression.LZ4),
        ("none", Compression.NONE),
        (None, Compression.NONE),
        (Compression.ZSTD, Compression.ZSTD),
    ],
)
def test_codec_by_id_or_name(given_name, codec):
    assert Compression.of(given_name) is codec


@pytest.mark.parametrize("bad", [5, 7, -1, "brotli", ""])
def test_unknown_codec_is_unsupported_compression_type(bad):
    with pytest.raises(CorruptBatchError, match="unknown compression") as info:
        Compression.of(bad)
    assert info.value.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_round_trip_large_payload(codec):
    packed = compress(codec, PAYLOAD)
    if codec is not Compression.NONE:
        assert len(packed) < len(PAYLOAD) // 3
    assert decompress(codec, packed) == PAYLOAD
    assert decompress(codec, memoryview(packed)) == PAYLOAD
    assert decompress(codec, bytearray(packed)) == PAYLOAD


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=3000))
def test_round_trip_any_bytes(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS[1:], ids=lambda c: c.name)
def test_kafka_python_reads_ours(codec):
    assert KAFKA_PYTHON_DECODERS[codec](compress(codec, PAYLOAD)) == PAYLOAD


@pytest.mark.parametrize("codec", CODECS[1:], ids=lambda c: c.name)
def test_we_read_kafka_pythons(codec):
    assert decompress(codec, KAFKA_PYTHON_ENCODERS[codec](PAYLOAD)) == PAYLOAD


# ------------------------------------------------------------------ snappy dialects


def test_we_write_xerial_framing_in_32k_chunks():
    packed = snappy_xerial_compress(PAYLOAD)
    assert packed.startswith(XERIAL_MAGIC)
    assert packed[:16] == XERIAL_HEADER
    chunks = 0
    pos = 16
    while pos < len(packed):
        length = int.from_bytes(packed[pos : pos + 4], "big")
        assert len(snappy.decompress(packed[pos + 4 : pos + 4 + length])) <= 32 * 1024
        pos += 4 + length
        chunks += 1
    assert pos == len(packed)
    assert chunks == -(-len(PAYLOAD) // (32 * 1024))


def test_we_read_raw_snappy_as_librdkafka_writes_it():
    assert snappy_decompress(snappy.compress(PAYLOAD)) == PAYLOAD
    assert decompress(Compression.SNAPPY, snappy_raw_compress(PAYLOAD)) == PAYLOAD
    assert kafka_codec.snappy_decode(snappy_raw_compress(PAYLOAD)) == PAYLOAD


def test_we_read_xerial_from_kafka_python_with_small_blocks():
    packed = kafka_codec.snappy_encode(PAYLOAD, xerial_compatible=True, xerial_blocksize=1000)
    assert packed.startswith(XERIAL_MAGIC)
    assert snappy_decompress(packed) == PAYLOAD


def test_empty_xerial_stream_is_empty():
    assert snappy_decompress(XERIAL_HEADER) == b""
    assert snappy_decompress(snappy_xerial_compress(b"")) == b""


@pytest.mark.parametrize(
    ("packed", "match"),
    [
        (XERIAL_MAGIC + b"\x00\x00", "xerial snappy header"),
        (XERIAL_HEADER + b"\x00\x00", "chunk length cut short"),
        (XERIAL_HEADER + b"\x00\x00\x01\x00abc", "runs past the end"),
        (XERIAL_HEADER + b"\xff\xff\xff\xff", "runs past the end"),
        (XERIAL_HEADER + b"\x00\x00\x00\x03\xff\xff\xff", "does not decompress"),
    ],
)
def test_broken_xerial_stream_is_named(packed, match):
    with pytest.raises(CorruptBatchError, match=match):
        decompress(Compression.SNAPPY, packed)


# ------------------------------------------------------------------ other producers' variants


def test_zstd_without_content_size_as_the_java_client_writes_it():
    packed = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert decompress(Compression.ZSTD, packed) == PAYLOAD


def test_multi_frame_zstd_stream():
    half = len(PAYLOAD) // 2
    packed = bytes(cramjam.zstd.compress(PAYLOAD[:half])) + bytes(
        cramjam.zstd.compress(PAYLOAD[half:])
    )
    assert decompress(Compression.ZSTD, packed) == PAYLOAD


def test_gzip_from_the_standard_library():
    assert decompress(Compression.GZIP, gzip.compress(PAYLOAD, compresslevel=1)) == PAYLOAD


def test_lz4_frame_with_block_checksums_and_content_size():
    import lz4.frame

    packed = lz4.frame.compress(
        PAYLOAD, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_checksum=True, store_size=True
    )
    assert decompress(Compression.LZ4, packed) == PAYLOAD


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("codec", CODECS[1:], ids=lambda c: c.name)
def test_truncated_stream_is_a_corrupt_batch(codec):
    packed = compress(codec, PAYLOAD)
    with pytest.raises(CorruptBatchError, match=r"does not decompress|runs past|cut short"):
        decompress(codec, packed[: len(packed) // 2])


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=300))
def test_garbage_raises_only_the_codecs_error(codec, data):
    try:
        decompress(codec, data)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None)
@given(codec=st.sampled_from(CODECS[1:]), data=st.data())
def test_damaged_stream_raises_only_the_codecs_error(codec, data):
    packed = bytearray(compress(codec, PAYLOAD[:2000]))
    index = data.draw(st.integers(0, len(packed) - 1))
    packed[index] ^= data.draw(st.integers(1, 255))
    try:
        decompress(codec, packed)
    except ProtocolError:
        pass


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD])
def test_compression_levels(codec):
    fast = compress(codec, PAYLOAD, level=1)
    best = compress(codec, PAYLOAD, level=9)
    assert decompress(codec, fast) == decompress(codec, best) == PAYLOAD
    with pytest.raises(ValueError, match="compression level"):
        compress(codec, PAYLOAD, level=-5 if codec is not Compression.ZSTD else "high")


# -- decompression caps (a batch that expands beyond what a broker or consumer allows) ----

COMPRESSING = [c for c in CODECS if c is not Compression.NONE]


@pytest.mark.parametrize("codec", COMPRESSING)
def test_a_decompression_bomb_is_refused_before_it_is_decompressed(codec):
    bomb = compress(codec, b"\x00" * (20 << 20))  # 20 MB of zeros: a few KB compressed
    assert len(bomb) < 1 << 20
    with pytest.raises(DecompressedTooLargeError) as refused:
        decompress(codec, bomb, max_bytes=1 << 20)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert "decompresses to more than 1048576 bytes" in str(refused.value)
    assert isinstance(refused.value, CorruptBatchError)


@pytest.mark.parametrize("codec", COMPRESSING)
@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 100_000])
def test_data_up_to_the_cap_decompresses_whole(codec, size):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert decompress(codec, compress(codec, data), max_bytes=size) == data
    if size:
        with pytest.raises(DecompressedTooLargeError):
            decompress(codec, compress(codec, data), max_bytes=size - 1)


def test_a_capped_decompression_still_reports_corrupt_data_as_corrupt():
    with pytest.raises(CorruptBatchError) as corrupt:
        decompress(Compression.ZSTD, b"not zstd at all", max_bytes=1 << 20)
    assert not isinstance(corrupt.value, DecompressedTooLargeError)


def test_parse_batch_applies_the_cap():
    batch = build_batch([(b"k", b"\x00" * 200_000)], compression="gzip")
    assert parse_batch(batch, max_decompressed_bytes=300_000).records[0].value == b"\x00" * 200_000
    with pytest.raises(DecompressedTooLargeError):
        parse_batch(batch, max_decompressed_bytes=100_000)


def test_the_spark_source_decoder_applies_the_cap_too():
    from simplekafka.spark.arrow_records import decode_columns

    bomb = build_batch([(b"k", b"\x00" * (70 << 20))], compression="zstd")  # 70 MB > 64 MB
    with pytest.raises(DecompressedTooLargeError):
        decode_columns(bomb, 0, 1)
