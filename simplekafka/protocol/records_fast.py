"""The column-at-a-time decoder for runs of same-shaped records.

Most batches hold long runs of records of one shape: the same key and value
lengths, no headers, timestamp and offset deltas of the same varint width
(every batch our Producer and librdkafka write for fixed-size values). Such
records sit at a fixed stride, so each field is a column ``data[start::stride]``
that C-level ``bytes`` operations check and slice without a Python loop per
record. :func:`decode_run` takes one such run; :mod:`simplekafka.protocol.records`
calls it and decodes everything else with its plain record-by-record loop,
which gives exactly the same records and errors (a hypothesis test holds the
two together). docs/design-notes.md ("Records: fast pure-Python varints") has
the why, docs/benchmarks.md the figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import TypeVar

R = TypeVar("R", bound=tuple)  # the record type: a tuple (offset, timestamp, key, value, headers)

ZIGZAG = tuple((z >> 1) ^ -(z & 1) for z in range(1 << 14))
"""The zigzag-decoded value of every one- and two-byte varint, by its 14 payload bits."""

# A run must be this long to be decoded by columns (a shorter one costs more than it saves).
MIN_RUN = 16
_LOW_BYTES = bytes(range(0x80))  # a varint's last byte
_HIGH_BYTES = bytes(range(0x80, 0x100))  # a varint's byte with more to follow
# Offset deltas 0, 1, 2... as one-byte varints, and as the two bytes of two-byte varints
# (index d is delta d), to recognise consecutive offsets with one comparison.
_DELTAS_1 = bytes(range(0, 0x80, 2))
_DELTAS_2_HIGH = bytes(((d << 1) & 0x7F) | 0x80 for d in range(1 << 13))
_DELTAS_2_LOW = bytes((d << 1) >> 7 for d in range(1 << 13))


def _varint_size(data: bytes, pos: int) -> int:
    """1 or 2 for a one- or two-byte varint at ``pos``; 0 for anything else."""
    if data[pos] < 0x80:
        return 1
    if data[pos + 1] < 0x80:
        return 2
    return 0


def _zigzag_at(data: bytes, pos: int, size: int) -> int:
    if size == 1:
        return ZIGZAG[data[pos]]
    return ZIGZAG[(data[pos] & 0x7F) | (data[pos + 1] << 7)]


def _leading(column: bytes, allowed: bytes) -> int:
    """How many bytes at the start of ``column`` are among ``allowed`` (a C loop, no Python one)."""
    return len(column) - len(column.lstrip(allowed))


def decode_run(
    data: bytes, pos: int, left: int, base_offset: int, base_ts: int, records: list[R],
    record_type: type[R],
) -> tuple[int, int]:
    """Decode the run of same-shaped records at ``pos``; (records taken, new position).

    Producers mostly write batches whose records differ only in their bytes:
    the same key and value lengths, no headers, timestamp and offset deltas of
    the same varint width. Such records sit at a fixed stride, so every field
    is a column, ``data[start::stride]``, that C code can check (``lstrip``)
    and slice without a Python loop per byte. The run ends at the first record
    whose length, varint widths, key or value length or header count differ;
    each record of the run is checked field by field, so it decodes exactly as
    the plain loop (``records._decode_each``) would. Records are made as
    ``record_type`` tuples (offset, timestamp, key, value, headers). Takes
    nothing (returns 0) when the run would be shorter than ``MIN_RUN`` or the
    record at ``pos`` is not of a shape handled here (long varints, headers,
    damage).
    """
    end = len(data)
    try:
        len_size = _varint_size(data, pos)
        if not len_size:
            return 0, pos
        stride = len_size + _zigzag_at(data, pos, len_size)
        ts_at = pos + len_size + 1  # after the attributes byte
        ts_size = _varint_size(data, ts_at)
        offset_at = ts_at + ts_size
        offset_size = _varint_size(data, offset_at)
        key_len_at = offset_at + offset_size
        key_len_size = _varint_size(data, key_len_at)
        if not (ts_size and offset_size and key_len_size):
            return 0, pos
        key_len = _zigzag_at(data, key_len_at, key_len_size)
        key_at = key_len_at + key_len_size
        value_len_at = key_at + max(key_len, 0)
        value_len_size = _varint_size(data, value_len_at)
        if not value_len_size:
            return 0, pos
        value_len = _zigzag_at(data, value_len_at, value_len_size)
        value_at = value_len_at + value_len_size
        headers_at = value_at + max(value_len, 0)
        if headers_at + 1 != pos + stride or data[headers_at] != 0:
            return 0, pos
    except IndexError:
        return 0, pos  # cut short: the plain loop says where
    most = min(left, (end - pos) // stride)
    if most < MIN_RUN:
        return 0, pos
    # Every column must match the first record's shape; the run is the common prefix.
    # A first look at MIN_RUN records only, so that a miss costs little.
    exact = [
        *range(pos, ts_at - 1),  # the length varint, byte for byte
        *range(key_len_at, key_at),
        *range(value_len_at, value_at),
        headers_at,
    ]
    lows = [ts_at + ts_size - 1, offset_at + offset_size - 1]  # last bytes of the varints
    highs = [at for at, size in ((ts_at, ts_size), (offset_at, offset_size)) if size == 2]
    for candidates in (MIN_RUN, most):
        stop = pos + candidates * stride
        run = candidates
        for at in exact:
            run = min(run, _leading(data[at:stop:stride], data[at : at + 1]))
        for at in lows:
            run = min(run, _leading(data[at:stop:stride], _LOW_BYTES))
        for at in highs:
            run = min(run, _leading(data[at:stop:stride], _HIGH_BYTES))
        if run < MIN_RUN:
            return 0, pos
    stop = pos + run * stride
    zz = ZIGZAG

    timestamps: Iterable[int]
    low = data[ts_at + ts_size - 1 : stop : stride]
    if ts_size == 1:
        if not low.lstrip(low[:1]):  # one timestamp for the whole run (the usual case)
            timestamps = repeat(base_ts + zz[low[0]], run)
        else:
            timestamps = [base_ts + zz[b] for b in low]
    else:
        ts_high = data[ts_at:stop:stride]
        timestamps = [base_ts + zz[(h & 0x7F) | (b << 7)] for h, b in zip(ts_high, low)]

    offsets: Iterable[int]
    low = data[offset_at + offset_size - 1 : stop : stride]
    first_delta = _zigzag_at(data, offset_at, offset_size)
    if offset_size == 1:
        consecutive = low == _DELTAS_1[first_delta : first_delta + run]
    else:
        offset_high = data[offset_at:stop:stride]
        consecutive = (
            low == _DELTAS_2_LOW[first_delta : first_delta + run]
            and offset_high == _DELTAS_2_HIGH[first_delta : first_delta + run]
        )
    if consecutive and first_delta >= 0:  # deltas n, n+1, n+2...: what producers write
        offsets = range(base_offset + first_delta, base_offset + first_delta + run)
    elif offset_size == 1:
        offsets = [base_offset + zz[b] for b in low]
    else:
        offsets = [base_offset + zz[(h & 0x7F) | (b << 7)] for h, b in zip(offset_high, low)]

    keys: Iterable[bytes | None]
    if key_len < 0:
        keys = repeat(None, run)
    else:
        keys = [data[at : at + key_len] for at in range(key_at, stop, stride)]
    values: Iterable[bytes | None]
    if value_len < 0:
        values = repeat(None, run)
    else:
        values = [data[at : at + value_len] for at in range(value_at, stop, stride)]
    # Record tuples made by map() in C, each with its own empty headers list, as one by one.
    fresh_lists: Iterator[list[tuple[str, bytes | None]]] = map(list, repeat((), run))
    records += map(
        tuple.__new__, repeat(record_type, run), zip(offsets, timestamps, keys, values, fresh_lists)
    )
    return run, stop


__all__ = ["MIN_RUN", "ZIGZAG", "decode_run"]
