"""The broker's hot path: RecordBatch v2 header reads, checks and in-place patches.

Every rejection must be a CorruptBatchError that names what is wrong and
points at the byte, because a broker turns it into an error code and a
learner reads it to find their bug.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.protocol import batch_header as bh
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, ProtocolError
from simplekafka.protocol.records import Record, build_batch, parse_batch


def make_batch(count: int = 3, **kwargs) -> bytes:
    records = [
        Record(timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"value-%d" % i)
        for i in range(count)
    ]
    return build_batch(records, **kwargs)


def test_crc32c_is_castagnoli():
    # The standard check value of CRC-32C, distinct from zlib's CRC-32 (0xCBF43926).
    assert bh.crc32c(b"123456789") == 0xE3069283


def test_read_header_gives_every_field():
    batch = make_batch(
        4,
        base_offset=100,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        partition_leader_epoch=5,
        compression="gzip",
        is_transactional=True,
    )
    header = bh.read_header(batch)
    assert header.base_offset == 100
    assert header.batch_length == len(batch) - bh.LOG_OVERHEAD
    assert header.size == len(batch)
    assert header.partition_leader_epoch == 5
    assert header.magic == 2
    assert header.last_offset_delta == 3
    assert header.last_offset == 103
    assert header.next_offset == 104
    assert header.base_timestamp == 1_700_000_000_000
    assert header.max_timestamp == 1_700_000_000_003
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.records_count == 4
    assert header.compression == 1
    assert header.is_transactional
    assert not header.is_control
    assert header.last_sequence == 43


def test_accessors_read_single_fields_at_a_position():
    first = make_batch(2, base_offset=10)
    second = make_batch(5, base_offset=12, producer_id=9, producer_epoch=1, base_sequence=3)
    buf = bytearray(first + second)
    pos = len(first)
    assert bh.base_offset(buf, pos) == 12
    assert bh.last_offset_delta(buf, pos) == 4
    assert bh.records_count(buf, pos) == 5
    assert bh.max_timestamp(buf, pos) == 1_700_000_000_004
    assert bh.producer_info(buf, pos) == (9, 1, 3)
    assert bh.batch_size_at(buf, pos) == len(second)
    assert bh.batch_size_at(buf, len(buf) - 11) is None


def test_last_sequence_wraps_like_the_java_client():
    header = bh.read_header(make_batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2))
    assert header.last_sequence == 0
    assert bh.read_header(make_batch(3)).last_sequence == -1


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_validate_accepts_every_buffer_type(kind):
    batch = make_batch(3, compression="lz4")
    header = bh.validate_batch(kind(batch))
    assert header == bh.read_header(batch)


def test_validate_batches_walks_back_to_back_batches():
    batches = [make_batch(n, base_offset=off) for n, off in ((1, 0), (3, 1), (2, 4))]
    headers = bh.validate_batches(b"".join(batches))
    assert [h.base_offset for h in headers] == [0, 1, 4]
    assert [h.records_count for h in headers] == [1, 3, 2]
    assert bh.validate_batches(b"") == []


def test_iter_batch_positions_leaves_out_a_partial_trailing_batch():
    a, b = make_batch(2), make_batch(3)
    buf = a + b + make_batch(1)[:30]
    assert bh.iter_batch_positions(buf) == [(0, len(a)), (len(a), len(b))]
    assert bh.iter_batch_positions(b"") == []


def test_patching_offset_and_epoch_keeps_the_crc_valid():
    buf = bytearray(make_batch(3, partition_leader_epoch=-1))
    crc_before = bh.read_header(buf).crc
    bh.patch_base_offset(buf, 4242)
    bh.patch_leader_epoch(buf, 17)
    header = bh.validate_batch(buf)
    assert header.crc == crc_before
    assert header.base_offset == 4242
    assert header.partition_leader_epoch == 17
    assert [r.offset for r in parse_batch(buf).records] == [4242, 4243, 4244]


def test_patching_at_a_position_touches_only_that_batch():
    first, second = make_batch(1), make_batch(2)
    buf = bytearray(first + second)
    view = memoryview(buf)
    bh.patch_base_offset(view, 99, pos=len(first))
    bh.patch_leader_epoch(view, 3, pos=len(first))
    headers = bh.validate_batches(buf)
    assert (headers[0].base_offset, headers[0].partition_leader_epoch) == (0, -1)
    assert (headers[1].base_offset, headers[1].partition_leader_epoch) == (99, 3)


# ------------------------------------------------------------------ rejections


def rejects(buf, match: str, **kwargs) -> CorruptBatchError:
    with pytest.raises(CorruptBatchError, match=match) as info:
        bh.validate_batch(buf, **kwargs)
    assert isinstance(info.value, ProtocolError)
    return info.value


def test_truncated_header_is_rejected():
    error = rejects(make_batch()[:40], "truncated batch")
    assert error.offset == 40
    assert error.error_code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(CorruptBatchError, match="needs 61 bytes"):
        bh.read_header(b"\x00" * 60)


def test_wrong_magic_is_rejected():
    buf = bytearray(make_batch())
    buf[16] = 1
    error = rejects(buf, "unsupported magic 1")
    assert error.offset == 16
    assert error.expected == "magic 2"


def test_length_shorter_than_a_header_is_rejected():
    buf = bytearray(make_batch())
    struct.pack_into(">i", buf, 8, 10)
    error = rejects(buf, "shorter than the header")
    assert error.offset == 8


def test_length_past_the_end_is_rejected():
    batch = make_batch()
    error = rejects(batch[:-1], "runs past the end")
    assert error.offset == 8
    buf = bytearray(batch)
    struct.pack_into(">i", buf, 8, 2**31 - 1)
    rejects(buf, "runs past the end")


def test_crc_mismatch_is_rejected_with_both_values():
    buf = bytearray(make_batch())
    buf[-1] ^= 0xFF
    error = rejects(buf, "CRC mismatch")
    assert error.offset == 17
    assert error.error_code == ErrorCode.CORRUPT_MESSAGE
    # and skipping the CRC check is possible (e.g. when a follower trusts its leader)
    assert bh.validate_batch(buf, check_crc=False).records_count == 3


def test_negative_counts_are_an_invalid_record():
    buf = bytearray(make_batch())
    struct.pack_into(">i", buf, 57, -5)
    error = rejects(buf, "negative recordsCount", check_crc=False)
    assert error.error_code == ErrorCode.INVALID_RECORD


def test_validate_batches_stops_at_the_first_bad_batch():
    good = make_batch(1)
    bad = bytearray(make_batch(1))
    bad[-1] ^= 1
    with pytest.raises(CorruptBatchError, match="CRC mismatch") as info:
        bh.validate_batches(good + bytes(bad))
    assert info.value.offset == len(good) + 17


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_change_to_crc_covered_bytes_is_caught(data):
    batch = make_batch(3, compression=data.draw(st.sampled_from([0, 1, 2, 3, 4])))
    buf = bytearray(batch)
    index = data.draw(st.integers(bh.CRC_START, len(buf) - 1))
    buf[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptBatchError):
        bh.validate_batch(buf)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_changes_outside_the_crc_never_make_a_batch_invalid(data):
    buf = bytearray(make_batch(2))
    index = data.draw(st.sampled_from([*range(0, 8), *range(12, 16)]))
    buf[index] = data.draw(st.integers(0, 255))
    bh.validate_batch(buf)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_the_codecs_error(buf):
    try:
        bh.validate_batches(buf)
    except CorruptBatchError:
        pass
    bh.iter_batch_positions(buf)  # never raises at all


# ------------------------------------------------------------------ producer-batch rules


def test_a_well_formed_producer_batch_passes_the_client_rules():
    batches = make_batch(3) + make_batch(2, producer_id=4, producer_epoch=0, base_sequence=0)
    headers = bh.validate_client_batches(batches)
    assert [h.records_count for h in headers] == [3, 2]
    bh.check_client_batch(headers[0])


def _patched(field_pos: int, fmt: str, value: int, **kwargs) -> bytes:
    buf = bytearray(make_batch(3, **kwargs))
    struct.pack_into(fmt, buf, field_pos, value)
    struct.pack_into(">I", buf, 17, bh.crc32c(memoryview(buf)[bh.CRC_START :]))
    return bytes(buf)


@pytest.mark.parametrize(
    ("batch", "match", "offset"),
    [
        (lambda: _patched(57, ">i", 0), "must hold records", 57),
        (lambda: _patched(57, ">i", 2), "disagrees with recordsCount 2", 23),
        (lambda: _patched(23, ">i", 7), "lastOffsetDelta 7", 23),
        (lambda: make_batch(3, is_control=True), "control batches", 21),
        (lambda: make_batch(3, producer_id=5, producer_epoch=0), "without a sequence", 53),
    ],
)
def test_client_rules_reject_with_invalid_record(batch, match, offset):
    good = make_batch(1)
    with pytest.raises(CorruptBatchError, match=match) as info:
        bh.validate_client_batches(good + batch())
    assert info.value.error_code == ErrorCode.INVALID_RECORD
    assert info.value.offset == len(good) + offset
    # the plain (replication-side) validation accepts all of these
    assert len(bh.validate_batches(good + batch())) == 2


def test_one_walk_over_whole_batches_and_what_each_caller_makes_of_its_end():
    from simplekafka.protocol.batch_header import (
        batch_spans,
        iter_batch_positions,
        validate_batches,
        whole_batches_length,
    )
    from simplekafka.protocol.errors import CorruptBatchError
    from simplekafka.protocol.records import Record, build_batch, parse_batches

    one = build_batch([Record(value=b"a")], base_offset=0)
    two = build_batch([Record(value=b"b"), Record(value=b"c")], base_offset=1)
    whole = one + two
    assert batch_spans(whole) == [(0, len(one)), (len(one), len(two))]
    cut = whole + two[:30]  # a fetch that ends mid-batch
    assert batch_spans(cut)[-1] == (len(whole), len(two))  # the partial span, for the caller
    assert iter_batch_positions(cut) == batch_spans(whole)
    assert whole_batches_length(cut) == len(whole) == whole_batches_length(whole + b"\x00" * 5)
    assert [b.base_offset for b in parse_batches(cut)] == [0, 1]
    assert len(validate_batches(whole)) == 2
    for damaged in (cut, whole + b"\x00" * 5):
        with pytest.raises(CorruptBatchError):
            validate_batches(damaged)  # validation never skips what it cannot read
    assert batch_spans(b"") == [] and whole_batches_length(b"") == 0
