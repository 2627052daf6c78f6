"""The log cleaner: last value per key, tombstones, dirty ratio, lag, offsets kept, crash safety.

Unit tests on real files in tmp_path, with the clock passed in (``now_ms``);
the broker's use of the cleaner (a thread, real clients, a SIGKILL) is tested
in stage 6 (test_compaction.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simplekafka.protocol.batch_header import ATTR_DELETE_HORIZON, read_header
from simplekafka.protocol.records import build_batch, parse_batches
from simplekafka.storage import Log, LogConfig, LogManager
from simplekafka.storage.checkpoints import read_offset_checkpoint
from simplekafka.storage.cleaner import CLEANER_CHECKPOINT, Cleaner, OffsetMap

T0 = 1_700_000_000_000
DAY = 86_400_000
COMPACT = LogConfig(segment_bytes=16 * 1024, cleanup_policy="compact", index_interval_bytes=512)


def manager(tmp_path: Path, config: LogConfig = COMPACT) -> tuple[LogManager, Log]:
    logs = LogManager([tmp_path], config, clock_ms=lambda: T0)
    return logs, logs.get_or_create("t", 0, config)


def produce(log: Log, pairs: list[tuple[bytes | None, bytes | None]], per_batch: int = 10,
            timestamp: int = T0, compression: str = "none") -> None:
    for start in range(0, len(pairs), per_batch):
        records = [{"key": k, "value": v, "timestamp": timestamp}
                   for k, v in pairs[start : start + per_batch]]
        log.append(build_batch(records, compression=compression), 0)


def read_all(log: Log, start: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from ``start``, as a consumer sees them."""
    position = log.log_start_offset if start is None else start
    seen = []
    while position < log.log_end_offset:
        data = log.read(position, 1 << 20)
        if not data:
            break  # a gap the cleaner left at the end: nothing more to read
        for batch in parse_batches(data):
            seen += [(r.offset, r.key, r.value) for r in batch if r.offset >= position]
            position = batch.next_offset
    return seen


def latest_by_key(records) -> dict:
    latest = {}
    for _, key, value in records:
        latest[key] = value
    return latest


def test_100000_records_on_1000_keys_compact_to_the_last_value_per_key(tmp_path):
    config = COMPACT.replace(segment_bytes=256 * 1024)
    logs, log = manager(tmp_path, config)
    pairs = [(b"key-%d" % (n % 1000), b"value-%d" % n) for n in range(100_000)]
    produce(log, pairs, per_batch=100, compression="lz4")
    log.roll()  # everything in closed segments: all of it cleanable
    before = read_all(log)
    result = logs.clean_once(now_ms=T0 + 1)
    assert result is not None and result.stats.records_read == 100_000
    after = read_all(log)
    assert len(after) == 1000
    assert latest_by_key(after) == latest_by_key(before)
    assert {key: value for _, key, value in after} == {
        b"key-%d" % k: b"value-%d" % (99_000 + k) for k in range(1000)}
    # Offsets are kept: every record is where it was, the log end did not move.
    assert [offset for offset, _, _ in after] == list(range(99_000, 100_000))
    assert log.log_end_offset == 100_000 and log.log_start_offset == 0
    assert log.size < 100_000
    # The checkpoint says where the next round's dirty part begins.
    assert read_offset_checkpoint(tmp_path / CLEANER_CHECKPOINT) == {("t", 0): 100_000}
    logs.close()
    reopened = LogManager([tmp_path], config)
    assert read_all(reopened.get("t", 0)) == after
    reopened.close()


def test_the_active_segment_is_never_touched_and_the_dirty_ratio_decides(tmp_path):
    logs, log = manager(tmp_path, COMPACT.replace(min_cleanable_dirty_ratio=0.9))
    produce(log, [(b"k", b"v%d" % n) for n in range(2000)])
    active = log.active_segment
    active_bytes = Path(active.log_path).read_bytes()
    assert logs.clean_once(now_ms=T0) is not None  # all dirty: ratio 1.0
    assert log.active_segment is active
    assert Path(active.log_path).read_bytes() == active_bytes
    assert read_all(log)[-1] == (1999, b"k", b"v1999")
    log.roll()
    assert logs.clean_once(now_ms=T0) is not None  # what was active is cleaned too
    # Now clean bytes dominate: a little new dirt is below the 0.9 ratio.
    produce(log, [(b"k", b"again")])
    log.roll()
    assert logs.clean_once(now_ms=T0) is None
    config = COMPACT.replace(min_cleanable_dirty_ratio=0.01)
    log.update_config(config)
    assert logs.clean_once(now_ms=T0) is not None
    assert [value for _, _, value in read_all(log)] == [b"again"]


def test_min_compaction_lag_keeps_young_segments_as_they_are(tmp_path):
    logs, log = manager(tmp_path, COMPACT.replace(min_compaction_lag_ms=60_000))
    produce(log, [(b"k", b"old-%d" % n) for n in range(1000)], timestamp=T0)
    log.roll()
    produce(log, [(b"k", b"young-%d" % n) for n in range(1000)], timestamp=T0 + 50_000)
    log.roll()
    logs.clean_once(now_ms=T0 + 70_000)  # the old part is 70 s old, the young one 20 s
    values = [value for _, _, value in read_all(log)]
    assert values[0] == b"old-999"  # the old records were cleaned against each other...
    assert values[1:] == [b"young-%d" % n for n in range(1000)]  # ...the young kept whole


def test_tombstones_stay_for_delete_retention_ms_then_vanish(tmp_path):
    logs, log = manager(tmp_path, COMPACT.replace(delete_retention_ms=DAY))
    produce(log, [(b"k%d" % n, b"v") for n in range(100)])
    produce(log, [(b"k%d" % n, None) for n in range(50)])  # delete half of the keys
    log.roll()
    logs.clean_once(now_ms=T0)
    after_first = read_all(log)
    assert [v for _, k, v in after_first if k == b"k0"] == [None]  # the tombstone is kept
    assert len(after_first) == 100
    marked = [read_header(log.read(o, 1)) for o, _, v in after_first if v is None]
    assert all(h.attributes & ATTR_DELETE_HORIZON and h.base_timestamp == T0 + DAY
               for h in marked)
    # Before the horizon a new round keeps them; after it they are gone. No new dirt
    # is needed: a passed horizon is reason enough to clean.
    assert logs.clean_once(now_ms=T0 + DAY - 1) is None
    result = logs.clean_once(now_ms=T0 + DAY + 1)
    assert result is not None and result.stats.tombstones_removed == 50
    assert latest_by_key(read_all(log)) == {b"k%d" % n: b"v" for n in range(50, 100)}


def test_a_reader_part_way_through_sees_each_keys_latest_value_at_or_after_what_it_saw(tmp_path):
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 20), b"%d" % n) for n in range(3000)])
    log.roll()
    first_half = read_all(log)[:1500]
    position = first_half[-1][0] + 1
    logs.clean_once(now_ms=T0)
    rest = read_all(log, position)
    seen = latest_by_key(first_half + rest)
    assert seen == {b"k%d" % k: b"%d" % (2980 + k) for k in range(20)}


def test_a_full_offset_map_cleans_up_to_where_it_stopped_and_the_next_round_goes_on(tmp_path):
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 300), b"%d" % n) for n in range(1200)])
    log.roll()
    small = Cleaner(dedupe_buffer_bytes=100 * 24)  # 90 keys per round
    rounds = 0
    while logs.clean_once(small, now_ms=T0) is not None:
        rounds += 1
    assert rounds > 1
    records = read_all(log)
    assert latest_by_key(records) == {b"k%d" % k: b"%d" % (900 + k) for k in range(300)}
    assert len(records) == 300


def test_the_offset_map_is_bounded():
    offsets = OffsetMap(memory_bytes=24 * 10)
    assert offsets.capacity == 9
    assert all(offsets.put(b"%d" % n, n) for n in range(9))
    assert not offsets.put(b"new", 9) and offsets.put(b"3", 10)
    assert offsets.get(b"3") == 10 and offsets.get(b"new") is None


def test_a_follower_copies_a_compacted_log_with_its_gaps(tmp_path):
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 5), b"%d" % n) for n in range(500)])
    log.roll()
    logs.clean_once(now_ms=T0)
    follower = Log.open(tmp_path / "follower" / "t-0", COMPACT)
    while data := log.read(follower.log_end_offset, 1 << 20):
        follower.append_as_follower(data)
    assert read_all(follower) == read_all(log)
    follower.close()
    reopened = Log.open(tmp_path / "follower" / "t-0", COMPACT)  # gaps survive loading
    assert read_all(reopened) == read_all(log)


def test_a_truncation_while_cleaning_voids_the_round(tmp_path):
    logs, log = manager(tmp_path)
    produce(log, [(b"k", b"%d" % n) for n in range(1000)])
    log.roll()
    plan = logs.cleaner_manager.grab_filthiest(logs.logs, T0)
    result = Cleaner().clean(plan)
    log.truncate_to(500)  # a follower's truncation arrives meanwhile
    assert log.replace_segments(result.groups, plan.generation) == 0
    logs.cleaner_manager.done(None, plan)
    assert not [p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".cleaned")]
    assert read_all(log)[-1][0] == 499 and len(read_all(log)) == 500


class Crash(Exception):
    pass


def _crash_at_swap(directory: Path) -> None:
    raise Crash(directory)


def test_a_crash_before_the_swap_leaves_the_old_segments(tmp_path):
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 10), b"%d" % n) for n in range(2000)])
    log.roll()
    before = read_all(log)
    plan = logs.cleaner_manager.grab_filthiest(logs.logs, T0)
    Cleaner().clean(plan)  # .cleaned files written, then the process dies
    assert any(p.name.endswith(".log.cleaned") for p in (tmp_path / "t-0").iterdir())
    logs.abandon()
    reopened = LogManager([tmp_path], COMPACT)
    assert read_all(reopened.get("t", 0)) == before
    assert not [p for p in (tmp_path / "t-0").iterdir() if ".cleaned" in p.name]


@pytest.mark.parametrize("step", ["committed", "old deleted", "indexes renamed"])
def test_a_crash_after_the_swap_commit_point_finishes_the_swap_on_load(tmp_path, step,
                                                                       monkeypatch):
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 10), b"%d" % n) for n in range(2000)])
    log.roll()
    expected = latest_by_key(read_all(log))
    directory = tmp_path / "t-0"
    log.update_config(COMPACT.replace(segment_bytes=1 << 20))  # one group of all segments
    plan = logs.cleaner_manager.grab_filthiest(logs.logs, T0)
    result = Cleaner().clean(plan)
    assert len(result.groups) == 1 and len(result.groups[0].old) > 1
    monkeypatch.setattr(Log, "swap_hook", staticmethod(_crash_at_swap))
    with pytest.raises(Crash):
        log.replace_segments(result.groups, plan.generation)
    base = result.groups[0].base_offset
    if step in ("old deleted", "indexes renamed"):
        for segment in result.groups[0].old:
            segment.delete()
    if step == "indexes renamed":
        for suffix in (".index", ".timeindex"):
            os.replace(directory / f"{base:020d}{suffix}.swap", directory / f"{base:020d}{suffix}")
    logs.abandon()
    reopened = LogManager([tmp_path], COMPACT)
    recovered = reopened.get("t", 0)
    records = read_all(recovered)
    assert latest_by_key(records) == expected and len(records) == 10
    assert len(recovered.segments) == 2  # the cleaned group and the (empty) active one
    assert not [p for p in directory.iterdir() if p.name.endswith((".swap", ".cleaned"))]


def test_a_truncation_below_the_clean_part_makes_that_part_dirty_again(tmp_path):
    """A follower that truncates and fetches anew holds new records where the cleaner
    had cleaned (Kafka's maybeTruncateCheckpoint): the next round maps them."""
    logs, log = manager(tmp_path)
    produce(log, [(b"k%d" % (n % 10), b"old-%d" % n) for n in range(1000)], per_batch=1)
    log.roll()
    logs.clean_once(now_ms=T0)
    assert logs.cleaner_manager.first_dirty[("t", 0)] == 1000
    log.truncate_to(995)  # offsets 995-999 go: k5..k9 lose their latest values
    produce(log, [(b"k%d" % n, b"new-%d" % n) for n in range(10)])
    log.roll()
    plan = logs.cleaner_manager.grab_filthiest(logs.logs, T0)
    assert plan is not None and plan.first_dirty == 995
    logs.cleaner_manager.done(None, plan)
    logs.clean_once(now_ms=T0)
    assert latest_by_key(read_all(log)) == {b"k%d" % n: b"new-%d" % n for n in range(10)}


def test_a_log_of_many_small_batches_all_kept_is_rewritten_whole(tmp_path):
    """Thousands of one-record batches, every key distinct: nothing to drop, and the
    rewrite writes them in bounded pwritev calls (IOV_MAX)."""
    logs, log = manager(tmp_path, COMPACT.replace(segment_bytes=1 << 20))
    produce(log, [(b"unique-%d" % n, b"v") for n in range(5000)], per_batch=1)
    log.roll()
    before = read_all(log)
    result = logs.clean_once(now_ms=T0)
    assert result is not None and result.stats.records_kept == 5000
    assert read_all(log) == before
