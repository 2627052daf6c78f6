"""Crash recovery: torn writes, garbage, corrupt bytes and broken indexes.

Each test damages the files the way a crash or a bad disk would, reopens the
log without a clean shutdown, and checks that recovery keeps exactly the valid
batches before the damage and nothing after it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from simplekafka.protocol.batch_header import validate_batches
from simplekafka.storage import Log, LogConfig
from stages.stage3_storage.batches import make_batch

CONFIG = LogConfig(index_interval_bytes=100, max_index_size=4096)


def fill(directory: Path, batches: int, config: LogConfig = CONFIG) -> tuple[Log, list[bytes]]:
    """A log with ``batches`` batches of growing size; returns it and each stored batch."""
    log = Log.open(directory, config)
    stored = []
    for number in range(batches):
        info = log.append(make_batch([b"record-%d" % number, b"x" * (10 * number)]), 3)
        stored.append(log.read(info.base_offset, 1))
    return log, stored


def segment_log(directory: Path, base: int = 0) -> Path:
    return directory / f"{base:020d}.log"


def all_batches(log: Log) -> bytes:
    return log.read(log.log_start_offset, 1 << 30)


def test_torn_write_at_every_byte_of_the_last_batch_keeps_exactly_the_batches_before(tmp_path):
    pristine = tmp_path / "pristine" / "t-0"
    log, stored = fill(pristine, 6)
    log.abandon()  # a crash: index files stay preallocated, nothing trimmed
    before = b"".join(stored[:-1])
    last = stored[-1]
    for kept in range(len(last)):
        work = tmp_path / f"cut{kept}" / "t-0"
        shutil.copytree(pristine, work)
        with open(segment_log(work), "r+b") as handle:
            handle.truncate(len(before) + kept)
        recovered = Log.open(work, CONFIG)
        assert recovered.log_end_offset == 10, f"torn after {kept} bytes of the last batch"
        assert all_batches(recovered) == before
        assert recovered.segments[-1].offset_index.entries() == _index_entries_of(before, work)
        recovered.delete()


def _index_entries_of(data: bytes, near: Path) -> list[tuple[int, int]]:
    """The index entries that appending ``data`` batch by batch creates, to compare with."""
    directory = near.parent / "reference-0"
    shutil.rmtree(directory, ignore_errors=True)
    log = Log.open(directory, CONFIG)
    for position, size in _spans(data):
        log.append(data[position : position + size], 3)
    entries = log.segments[-1].offset_index.entries()
    log.abandon()
    return entries


def _spans(data: bytes) -> list[tuple[int, int]]:
    spans, position = [], 0
    for header in validate_batches(data):
        spans.append((position, header.size))
        position += header.size
    return spans


def test_a_torn_write_after_a_roll_keeps_the_older_segments(tmp_path):
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 4)
    log.roll()
    tail = [log.append(make_batch([b"after roll %d" % i]), 3) for i in range(3)]
    log.abandon()
    active = segment_log(directory, tail[0].base_offset)
    with open(active, "r+b") as handle:
        handle.truncate(active.stat().st_size - 5)
    recovered = Log.open(directory, CONFIG)
    assert recovered.log_end_offset == tail[-1].base_offset
    assert recovered.read(0, 1 << 20).startswith(b"".join(stored))
    assert len(validate_batches(all_batches(recovered))) == 4 + 2


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00" * 100,  # preallocated or zero-filled tail
        os.urandom(1000),  # random bytes
        b"\x00" * 8 + b"\x00\x00\x00\x40",  # a plausible length and nothing behind it
        b"\xff" * 12,  # a negative length
    ],
    ids=["zeros", "random", "short-length", "negative-length"],
)
def test_garbage_after_the_last_batch_is_cut(tmp_path, garbage):
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 5)
    log.abandon()
    with open(segment_log(directory), "ab") as handle:
        handle.write(garbage)
    recovered = Log.open(directory, CONFIG)
    assert all_batches(recovered) == b"".join(stored)
    assert segment_log(directory).stat().st_size == len(b"".join(stored))
    assert recovered.append(make_batch([b"next"]), 3).base_offset == 10


def test_a_stale_copy_of_an_old_batch_after_the_end_is_cut(tmp_path):
    """A whole, CRC-valid batch with the wrong offsets is still garbage."""
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 5)
    log.abandon()
    with open(segment_log(directory), "ab") as handle:
        handle.write(stored[1])
    recovered = Log.open(directory, CONFIG)
    assert all_batches(recovered) == b"".join(stored)


def test_a_corrupt_byte_in_the_middle_keeps_everything_before_it(tmp_path):
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 8)
    log.abandon()
    damaged_at = len(b"".join(stored[:4])) + 40  # inside batch 4, covered by its CRC
    with open(segment_log(directory), "r+b") as handle:
        handle.seek(damaged_at)
        original = handle.read(1)
        handle.seek(damaged_at)
        handle.write(bytes([original[0] ^ 0xFF]))
    recovered = Log.open(directory, CONFIG)
    assert all_batches(recovered) == b"".join(stored[:4])
    assert recovered.log_end_offset == 8


def test_corruption_in_an_older_segment_drops_the_later_ones_when_recovering_from_there(tmp_path):
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 3)
    log.roll()
    log.append(make_batch([b"later"]), 3)
    log.abandon()
    with open(segment_log(directory), "r+b") as handle:
        handle.truncate(len(stored[0]) + 10)
    recovered = Log.open(directory, CONFIG, recovery_point=0)
    assert all_batches(recovered) == stored[0]
    assert [s.base_offset for s in recovered.segments] == [0]
    assert not segment_log(directory, 6).exists()


def _closed_cleanly(tmp_path: Path, batches: int = 40) -> tuple[Path, list[bytes], list]:
    directory = tmp_path / "t-0"
    log, stored = fill(directory, batches)
    entries = log.segments[0].offset_index.entries()
    time_entries = log.segments[0].time_index.entries()
    log.close()
    assert len(entries) > 5
    return directory, stored, [entries, time_entries]


def test_a_deleted_index_is_rebuilt_from_the_log(tmp_path):
    directory, stored, (entries, time_entries) = _closed_cleanly(tmp_path)
    (directory / f"{0:020d}.index").unlink()
    (directory / f"{0:020d}.timeindex").unlink()
    reopened = Log.open(directory, CONFIG, clean_shutdown=True)
    assert reopened.segments[0].offset_index.entries() == entries
    assert reopened.segments[0].time_index.entries()[: len(time_entries) - 1] == time_entries[:-1]
    for number, batch in enumerate(stored):
        assert reopened.read(2 * number + 1, 1) == batch


@pytest.mark.parametrize("cut", [3, 8 * 3 + 5, 1])
def test_a_truncated_index_is_rebuilt_or_still_correct(tmp_path, cut):
    directory, stored, (entries, _) = _closed_cleanly(tmp_path)
    index = directory / f"{0:020d}.index"
    with open(index, "r+b") as handle:
        handle.truncate(min(cut, index.stat().st_size))
    reopened = Log.open(directory, CONFIG, clean_shutdown=True)
    if cut % 8:
        assert reopened.segments[0].offset_index.entries() == entries  # rebuilt
    for number, batch in enumerate(stored):
        assert reopened.read(2 * number, 1) == batch


def test_an_index_pointing_at_the_wrong_place_is_rebuilt(tmp_path):
    directory, stored, (entries, _) = _closed_cleanly(tmp_path)
    index = directory / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    data[-4:] = (entries[-1][1] + 7).to_bytes(4, "big")  # last entry's position off by 7
    index.write_bytes(bytes(data))
    reopened = Log.open(directory, CONFIG, clean_shutdown=True)
    assert reopened.segments[0].offset_index.entries() == entries
    assert all_batches(reopened) == b"".join(stored)


def test_after_a_crash_the_preallocated_index_tail_does_not_count(tmp_path):
    directory = tmp_path / "t-0"
    log, _ = fill(directory, 30)
    entries = log.segments[0].offset_index.entries()
    log.abandon()
    assert (directory / f"{0:020d}.index").stat().st_size == 4096  # still preallocated
    recovered = Log.open(directory, CONFIG)
    assert recovered.segments[0].offset_index.entries() == entries
    recovered.close()
    assert (directory / f"{0:020d}.index").stat().st_size == 8 * len(entries)  # trimmed


def _count_io(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count fsyncs, and bytes read from index files, through the os module storage uses."""
    counts = {"fsync": 0, "index bytes read": 0}
    real_pread, real_fsync = os.pread, os.fsync

    def pread(fd: int, length: int, offset: int) -> bytes:
        data = real_pread(fd, length, offset)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(("index", "timeindex")):
            counts["index bytes read"] += len(data)
        return data

    def fsync(fd: int) -> None:
        counts["fsync"] += 1
        real_fsync(fd)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(os, "fsync", fsync)
    return counts


def test_recovery_after_a_crash_does_not_read_the_preallocated_indexes(tmp_path, monkeypatch):
    # A crash leaves the active segment's indexes preallocated (10 MB each by default);
    # recovery rebuilds them from the log, so reading them first was wasted (two 10 MB
    # reads per replica made a restart at 1,000 replicas take minutes).
    config = LogConfig(index_interval_bytes=100, max_index_size=1 << 20)
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 30, config)
    entries = log.segments[-1].offset_index.entries()
    log.abandon()
    counts = _count_io(monkeypatch)
    recovered = Log.open(directory, config)
    assert counts["index bytes read"] == 0
    assert recovered.segments[-1].offset_index.entries() == entries
    assert all_batches(recovered) == b"".join(stored)


def test_recovery_truncating_the_epoch_cache_writes_it_at_the_next_flush(tmp_path, monkeypatch):
    # A leader that wrote nothing in its epoch leaves an entry at the log end; loading
    # after a crash drops it (as Kafka does) but need not fsync it (KAFKA-15046): a lost
    # truncation is redone at the next load. It cost two fsyncs per replica at restart.
    directory = tmp_path / "t-0"
    log, _ = fill(directory, 3)
    log.leader_epochs.assign(4, log.log_end_offset)
    log.abandon()
    checkpoint = (directory / "leader-epoch-checkpoint").read_bytes()
    counts = _count_io(monkeypatch)
    recovered = Log.open(directory, CONFIG)
    assert recovered.leader_epochs.latest_epoch == 3
    assert counts["fsync"] == 0
    assert (directory / "leader-epoch-checkpoint").read_bytes() == checkpoint  # not even written
    recovered.flush()  # the next flush makes the truncation durable
    assert Log.open(directory, CONFIG, clean_shutdown=True).leader_epochs.latest_epoch == 3


def test_a_clean_close_of_a_flushed_log_fsyncs_nothing(tmp_path, monkeypatch):
    # An idle replica's data is on disk since its last flush; its close only writes and
    # trims the indexes. Three fsyncs per replica made a clean shutdown at 10,000
    # replicas outlast the 30 s LocalCluster (and a supervisor) waits before SIGKILL.
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 30)
    log.flush()
    entries = log.segments[-1].offset_index.entries()
    counts = _count_io(monkeypatch)
    log.close()
    assert counts["fsync"] == 0
    assert (directory / f"{0:020d}.index").stat().st_size == 8 * len(entries)  # trimmed
    reopened = Log.open(directory, CONFIG, clean_shutdown=True)
    assert reopened.segments[-1].offset_index.entries() == entries
    assert all_batches(reopened) == b"".join(stored)


def test_a_clean_close_fsyncs_what_came_since_the_last_flush(tmp_path, monkeypatch):
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 30)
    counts = _count_io(monkeypatch)
    log.close()
    assert counts["fsync"] >= 1
    assert all_batches(Log.open(directory, CONFIG, clean_shutdown=True)) == b"".join(stored)


def test_a_checkpoint_taken_while_logs_are_created_does_not_fail(tmp_path):
    # The broker checkpoints on a worker thread while its reactor may be creating logs
    # (a LeaderAndIsr for thousands of partitions at restart): a log created while the
    # checkpoint walks the logs made it fail with "dictionary changed size".
    from simplekafka.storage import LogManager

    manager = LogManager([tmp_path], CONFIG)
    for index in range(3):
        manager.get_or_create("t", index)
    created = []

    def recovery_point_while_a_log_is_created(key, log):
        if not created:
            created.append(manager.get_or_create("t", 99))  # what the reactor does meanwhile
        return log.recovery_point

    assert len(manager._per_dir(recovery_point_while_a_log_is_created)[tmp_path]) == 3
    manager.close()


def test_recovering_a_log_opens_each_file_once_and_creates_nothing(tmp_path, monkeypatch):
    # Loading 10,000 replicas: each index was opened (and closed) once to learn its size
    # and again to be rebuilt, and each existing directory was "created" again.
    directory = tmp_path / "t-0"
    log, stored = fill(directory, 30)
    log.abandon()
    calls: list[str] = []
    real_open, real_mkdir = os.open, os.mkdir
    monkeypatch.setattr(os, "open", lambda path, *a, **k: calls.append(str(path))
                        or real_open(path, *a, **k))
    monkeypatch.setattr(os, "mkdir", lambda path, *a, **k: calls.append(f"mkdir {path}")
                        or real_mkdir(path, *a, **k))
    recovered = Log.open(directory, CONFIG)
    base = f"{0:020d}"
    assert sorted(name.rsplit("/", 1)[-1] for name in calls) == [
        f"{base}.index", f"{base}.log", f"{base}.timeindex"]
    assert all_batches(recovered) == b"".join(stored)
