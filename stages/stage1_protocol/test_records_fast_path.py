"""The column-at-a-time decoder for runs of same-shaped records gives what the plain loop gives.

``parse_batch`` decodes runs of records that share one shape (same lengths,
same varint widths, no headers) a column at a time, and everything else one
record at a time. These tests hold the two to the same answer: for batches made
of runs of every length and shape, for records sections written by hand (gaps
in offset deltas, negative deltas, two-byte varints), and for damaged bytes,
where both must raise the same error at the same place.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.protocol import records as records_module
from simplekafka.protocol.batch_header import HEADER_SIZE
from simplekafka.protocol.errors import CorruptBatchError
from simplekafka.protocol.records import Record, build_batch, parse_batch

T0 = 1_700_000_000_000


def _one_by_one(data: bytes, count: int, base_offset: int, base_ts: int) -> list[Record]:
    """The reference: every record through the general loop, then the same end check."""
    records: list[Record] = []
    pos = records_module._decode_each(data, 0, count, base_offset, base_ts, records)
    if pos != len(data):
        raise CorruptBatchError(f"{len(data) - pos} bytes left over after {count} records",
                                offset=pos)
    return records


def _outcome(decode, data: bytes, count: int, base_offset: int, base_ts: int):
    try:
        return "records", decode(data, count, base_offset, base_ts)
    except CorruptBatchError as exc:
        return "error", str(exc), exc.offset


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _raw_record(ts_delta: int, offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"".join((
        b"\x00",
        _zigzag(ts_delta),
        _zigzag(offset_delta),
        _zigzag(-1) if key is None else _zigzag(len(key)) + key,
        _zigzag(-1) if value is None else _zigzag(len(value)) + value,
        b"\x00",
    ))
    return _zigzag(len(body)) + body


runs_st = st.lists(
    st.tuples(
        st.integers(1, 90),  # records in the run
        st.none() | st.integers(0, 70),  # key length
        st.none() | st.integers(0, 200),  # value length
        st.sampled_from([0, 1, 3, 100, 70_000]),  # timestamp step between records
        st.booleans(),  # headers on the run's records
    ),
    min_size=1,
    max_size=5,
)


def _records_of(runs) -> list[Record]:
    records = []
    ts = T0
    for count, key_len, value_len, step, with_headers in runs:
        for i in range(count):
            key = None if key_len is None else bytes([i % 251]) * key_len
            value = None if value_len is None else bytes([(i * 7) % 256]) * value_len
            headers = [("h", b"%d" % i)] if with_headers else ()
            records.append(Record(timestamp=ts, key=key, value=value, headers=headers))
            ts += step
    return records


@settings(max_examples=150, deadline=None)
@given(runs_st, st.integers(0, 2**40))
def test_runs_parse_to_the_records_built(runs, base_offset):
    records = _records_of(runs)
    batch = parse_batch(build_batch(records, base_offset=base_offset))
    assert [r.offset for r in batch] == list(range(base_offset, base_offset + len(records)))
    assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == [
        (r.timestamp, r.key, r.value, list(r.headers)) for r in records
    ]
    assert all(type(r.headers) is list for r in batch)
    assert len({id(r.headers) for r in batch}) == len(batch)  # no list shared between records


@settings(max_examples=150, deadline=None)
@given(runs_st, st.data())
def test_fast_path_matches_the_plain_loop_on_damaged_bytes(runs, data):
    records = _records_of(runs)
    section = bytearray(build_batch(records)[HEADER_SIZE:])
    for _ in range(data.draw(st.integers(0, 3))):
        where = data.draw(st.integers(0, len(section) - 1))
        section[where] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        section = section[: data.draw(st.integers(0, len(section)))]
    count = data.draw(st.sampled_from([len(records), len(records) - 1, len(records) + 1]))
    section = bytes(section)
    assert _outcome(records_module._decode_records, section, count, 5, T0) == _outcome(
        _one_by_one, section, count, 5, T0
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-70, 9000), min_size=1, max_size=120),  # offset deltas, any order
    st.lists(st.integers(-9000, 9000), min_size=1, max_size=3),  # timestamp deltas
    st.none() | st.integers(0, 10),
    st.integers(0, 150),
)
def test_hand_written_sections_match_the_plain_loop(offset_deltas, ts_deltas, key_len, value_len):
    key = None if key_len is None else b"k" * key_len
    value = b"v" * value_len
    section = b"".join(
        _raw_record(ts_deltas[i % len(ts_deltas)], delta, key, value)
        for i, delta in enumerate(offset_deltas)
    )
    count = len(offset_deltas)
    fast = _outcome(records_module._decode_records, section, count, 1000, T0)
    assert fast == _outcome(_one_by_one, section, count, 1000, T0)
    assert fast[0] == "records"
    assert [r.offset - 1000 for r in fast[1]] == offset_deltas


def test_a_long_uniform_batch_is_decoded_in_runs(monkeypatch):
    """The fast path is really taken for what producers write (and gives the same records)."""
    taken = []
    decode_run = records_module._decode_run

    def spy(*args):
        result = decode_run(*args)
        taken.append(result[0])
        return result

    monkeypatch.setattr(records_module, "_decode_run", spy)
    records = [Record(timestamp=T0 + i // 100, value=b"x" * 100) for i in range(1000)]
    batch = parse_batch(build_batch(records, base_offset=7))
    assert sum(taken) == 1000
    assert [r.offset for r in batch] == list(range(7, 1007))
    assert [r.timestamp for r in batch] == [r.timestamp for r in records]
