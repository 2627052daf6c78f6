"""Stage 3 checks: drive the learner's Segment step by step, against Kafka's rules."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Protocol

from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import Steps
from simplekafka.protocol.batch_header import read_header
from simplekafka.protocol.records import build_batch

BASE_OFFSET = 100
INTERVAL = 300
TIMESTAMP = 1_700_000_000_000


def sample_batches(base_offset: int = BASE_OFFSET, count: int = 12) -> list[bytes]:
    """Batches of 1 to 4 records with values of varied sizes, offsets consecutive."""
    batches, offset = [], base_offset
    for n in range(count):
        records = [{"key": b"k%d" % i, "value": b"v" * (20 + 37 * ((n + i) % 5)),
                    "timestamp": TIMESTAMP + n} for i in range(1 + n % 4)]
        batches.append(build_batch(records, base_offset=offset))
        offset += len(records)
    return batches


def expected_index(batches: list[bytes], base_offset: int, interval: int) -> list[tuple[int, int]]:
    """Kafka's rule: an entry (last offset - base, position) once > interval bytes went by."""
    entries, since, position = [], 0, 0
    for batch in batches:
        header = read_header(batch, 0)
        if since > interval:
            entries.append((header.base_offset + header.last_offset_delta - base_offset, position))
            since = 0
        since += len(batch)
        position += len(batch)
    return entries


def _positions(batches: list[bytes]) -> list[tuple[int, int, int]]:
    """(first offset, last offset, position) of each batch."""
    found, position = [], 0
    for batch in batches:
        header = read_header(batch, 0)
        found.append((header.base_offset, header.base_offset + header.last_offset_delta, position))
        position += len(batch)
    return found


UNIFORM_BASE = 7  # small, so offsets run past twice the base offset


def uniform_batches(count: int = 20, base_offset: int = UNIFORM_BASE) -> list[bytes]:
    """One-record batches all of one size (79 bytes): interval boundaries fall exactly on them."""
    return [build_batch([{"key": b"u", "value": b"same size!", "timestamp": TIMESTAMP}],
                        base_offset=base_offset + n) for n in range(count)]


def _fresh_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.iterdir():
        stale.unlink()
    return path


def _boundary_intervals(batches: list[bytes]) -> tuple[int, ...]:
    """index_interval_bytes that the byte counts hit exactly: one batch, two less a byte."""
    size = len(batches[0])
    return size, 2 * size - 1


def check_index_boundaries(learner: ModuleType, workdir: Path) -> None:
    """Appends where the byte count lands exactly on the interval; lookups from every entry."""
    batches = uniform_batches()
    layout = _positions(batches)
    for interval in _boundary_intervals(batches):
        steps = Steps()
        directory = _fresh_dir(workdir / f"segment-interval-{interval}")
        segment = learner.Segment(directory, UNIFORM_BASE, index_interval_bytes=interval)
        steps.step(f"Segment(base_offset={UNIFORM_BASE}, index_interval_bytes={interval}); "
                   f"{len(batches)} one-record batches of {len(batches[0])} bytes each")
        for batch, (first, _last, position) in zip(batches, layout):
            got = segment.append(batch)
            steps.step(f"append(batch of offset {first}) -> {got}")
            steps.expect("append returns the position the batch starts at", position, got)
            steps.expect(f"lookup({first + 1}) past the end (the log is "
                         f"{position + len(batch)} bytes)", None, segment.lookup(first + 1))
            steps.expect(f"read({first}, {1 << 20}): the last batch", batch,
                         segment.read(first, 1 << 20))
        wanted = expected_index(batches, UNIFORM_BASE, interval)
        steps.step("index_entries()")
        steps.expect(f"the index: an entry once MORE than {interval} bytes went by since the "
                     "last (exactly that many is not enough)",
                     wanted, [tuple(entry) for entry in segment.index_entries()])
        for first, _last, position in layout:
            got = segment.lookup(first)
            steps.step(f"lookup({first}) -> {got}")
            steps.expect(f"lookup({first})", position, got)
        # Spoil every batch before an entry's position: only a lookup that starts at that
        # entry (the last one at or below the offset) still finds it.
        log_path = directory / f"{UNIFORM_BASE:020d}.log"
        original = log_path.read_bytes()
        for relative, entry_position in wanted:
            spoiled = bytearray(original)
            for _first, _last, position in layout:
                if position < entry_position:
                    spoiled[position + 8 : position + 12] = b"\xff\xff\xff\xf0"
            log_path.write_bytes(bytes(spoiled))
            try:
                target = UNIFORM_BASE + relative
                steps.step(f"(every batch before byte {entry_position} has a broken "
                           f"batchLength) lookup({target})")
                steps.expect(f"lookup({target}) starts from its index entry "
                             f"({relative}, {entry_position})", entry_position,
                             segment.lookup(target))
            finally:
                log_path.write_bytes(original)
        first = layout[3][0]
        max_bytes = 2 * len(batches[0])
        got = segment.read(first, max_bytes)
        steps.step(f"read({first}, max_bytes={max_bytes}) -> {len(got)} bytes")
        steps.expect("read: two whole batches fit max_bytes exactly", batches[3] + batches[4],
                     got)
        got = segment.read(first, 1 << 20)
        steps.step(f"read({first}, max_bytes={1 << 20}) -> {len(got)} bytes")
        steps.expect("read to the end of the log", b"".join(batches[3:]), got)


def check_append_and_lookup(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    directory = workdir / "segment-append"
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.iterdir():
        stale.unlink()
    segment = learner.Segment(directory, BASE_OFFSET, index_interval_bytes=INTERVAL)
    steps.step(f"Segment({directory.name}, base_offset={BASE_OFFSET}, "
               f"index_interval_bytes={INTERVAL})")
    batches = sample_batches()
    layout = _positions(batches)
    for batch, (first, last, position) in zip(batches, layout):
        got = segment.append(batch)
        steps.step(f"append(batch of offsets {first}-{last}, {len(batch)} bytes) -> {got}")
        steps.expect("append returns the position the batch starts at", position, got)
    log_path = directory / f"{BASE_OFFSET:020d}.log"
    steps.expect(f"{log_path.name} holds the batches back to back",
                 b"".join(batches), log_path.read_bytes())
    wanted = expected_index(batches, BASE_OFFSET, INTERVAL)
    steps.step("index_entries()")
    steps.expect("the sparse index (relative offset, position) after the appends",
                 wanted, [tuple(entry) for entry in segment.index_entries()])
    index_path = directory / f"{BASE_OFFSET:020d}.index"
    steps.expect(f"{index_path.name} size (8 bytes an entry)", 8 * len(wanted),
                 index_path.stat().st_size)
    for first, last, position in layout:
        for offset in (first, last):
            got = segment.lookup(offset)
            steps.step(f"lookup({offset}) -> {got}")
            steps.expect(f"lookup({offset}): the position of the batch holding it", position, got)
    end = layout[-1][1] + 1
    steps.step(f"lookup({end}) (one past the last offset)")
    steps.expect(f"lookup({end}) past the end", None, segment.lookup(end))

    # The lookup must start at an index entry: spoil the first batch's header and look
    # up an offset past the first entry. A scan from byte 0 trips over it; the index does not.
    relative, _position = wanted[-1]
    target = BASE_OFFSET + relative
    original = log_path.read_bytes()
    spoiled = bytearray(original)
    spoiled[8:12] = b"\xff\xff\xff\xf0"  # batchLength -16
    log_path.write_bytes(bytes(spoiled))
    try:
        steps.step(f"(the first batch's batchLength overwritten) lookup({target})")
        holding = next(pos for first, last, pos in layout if first <= target <= last)
        steps.expect(f"lookup({target}) starts from the index entry, not from byte 0",
                     holding, segment.lookup(target))
    finally:
        log_path.write_bytes(original)

    first, _last, position = layout[3]
    max_bytes = len(batches[3]) + len(batches[4]) + 10
    got = segment.read(first, max_bytes)
    steps.step(f"read({first}, max_bytes={max_bytes}) -> {len(got)} bytes")
    steps.expect(f"read({first}, {max_bytes}): whole batches from the one holding it",
                 batches[3] + batches[4], got)
    got = segment.read(first + 0, 1)
    steps.step(f"read({first}, max_bytes=1) -> {len(got)} bytes")
    steps.expect("read returns at least one whole batch", batches[3], got)
    check_index_boundaries(learner, workdir)


def check_recovery(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    directory = workdir / "segment-recovery"
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.iterdir():
        stale.unlink()
    batches = sample_batches(count=8)
    segment = learner.Segment(directory, BASE_OFFSET, index_interval_bytes=INTERVAL)
    for batch in batches:
        segment.append(batch)
    steps.step(f"append {len(batches)} batches ({sum(map(len, batches))} bytes)")
    log_path = directory / f"{BASE_OFFSET:020d}.log"
    valid = log_path.read_bytes()
    next_offset = _positions(batches)[-1][1] + 1
    torn = build_batch([{"key": b"t", "value": b"torn" * 20, "timestamp": TIMESTAMP}],
                       base_offset=next_offset)
    log_path.write_bytes(valid + torn[:30])
    steps.step("a crash mid-write: the first 30 bytes of another batch follow")
    segment = learner.Segment(directory, BASE_OFFSET, index_interval_bytes=INTERVAL)
    got = segment.recover()
    steps.step(f"reopen, recover() -> {got}")
    steps.expect("recover() returns the bytes cut off", 30, got)
    steps.expect("the .log after recovery", valid, log_path.read_bytes())
    wanted = expected_index(batches, BASE_OFFSET, INTERVAL)
    steps.expect("the index after recovery", wanted,
                 [tuple(entry) for entry in segment.index_entries()])
    position = segment.append(torn)
    steps.step(f"append the whole batch again -> {position}")
    steps.expect("a batch appended after recovery starts at the end of the valid bytes",
                 len(valid), position)

    last = len(valid) - len(batches[-1])
    flipped = bytearray(valid)
    flipped[last + len(batches[-1]) - 3] ^= 0x01  # inside the last batch's records
    log_path.write_bytes(bytes(flipped))
    steps.step(f"one bit flipped inside the last batch's records (byte {len(valid) - 3}); "
               "the torn batch gone")
    segment = learner.Segment(directory, BASE_OFFSET, index_interval_bytes=INTERVAL)
    got = segment.recover()
    steps.step(f"reopen, recover() -> {got}")
    steps.expect("recover() cuts the batch whose CRC does not match", len(batches[-1]), got)
    steps.expect("the .log after recovery", valid[:last], log_path.read_bytes())
    lookup = segment.lookup(_positions(batches)[-2][0])
    steps.expect("lookup of the last good batch", _positions(batches)[-2][2], lookup)
    check_recovery_boundaries(learner, workdir)


class LearnerSegment(Protocol):
    """What the checks call on the learner's segment (their class, found at run time)."""

    def append(self, batch: bytes) -> object: ...

    def index_entries(self) -> Iterable[Iterable[int]]: ...


def _recover(learner: ModuleType, directory: Path, interval: int, contents: bytes,
             steps: Steps, what: str) -> tuple[LearnerSegment, int]:
    """Write ``contents`` as the .log, reopen the segment, recover(); (segment, its answer)."""
    for stale in directory.iterdir():
        stale.unlink()
    (directory / f"{UNIFORM_BASE:020d}.log").write_bytes(contents)
    segment = learner.Segment(directory, UNIFORM_BASE, index_interval_bytes=interval)
    got = segment.recover()
    steps.step(f"{what}; reopen, recover() -> {got}")
    return segment, got


def check_recovery_boundaries(learner: ModuleType, workdir: Path) -> None:
    """Recovery of intact logs, zero-filled and torn tails, and corruption early in the log."""
    batches = uniform_batches()
    valid = b"".join(batches)
    log_path = workdir / "segment-recovery-cases" / f"{UNIFORM_BASE:020d}.log"
    directory = _fresh_dir(log_path.parent)
    steps = Steps()
    _segment, got = _recover(learner, directory, INTERVAL, b"".join(batches[:3]), steps,
                             "3 intact batches")
    steps.expect("recover() of an intact log cuts nothing", 0, got)
    for interval in _boundary_intervals(batches):
        steps = Steps()
        segment, got = _recover(learner, directory, interval, valid, steps,
                                f"{len(batches)} intact batches of {len(batches[0])} bytes, "
                                f"index_interval_bytes={interval}")
        steps.expect("recover() of an intact log cuts nothing", 0, got)
        steps.expect("the .log after recovery", valid, log_path.read_bytes())
        steps.expect("the index rebuilt by append's rule", expected_index(
            batches, UNIFORM_BASE, interval), [tuple(e) for e in segment.index_entries()])
        more = uniform_batches(3, UNIFORM_BASE + len(batches))
        for batch in more:
            segment.append(batch)
        steps.step("append 3 more batches")
        steps.expect("the index after appending (recover() left the byte count right)",
                     expected_index(batches + more, UNIFORM_BASE, interval),
                     [tuple(e) for e in segment.index_entries()])
    steps = Steps()
    for tail, what in [(b"\x00" * 200, "200 zero bytes (a crash left zero-filled blocks)"),
                       (batches[0][:1], "1 byte of a torn batch"),
                       (batches[0][:60], "60 bytes of a torn batch"),
                       (batches[0][:61], "61 bytes of a torn batch (its whole header)"),
                       (batches[0][:62], "62 bytes of a torn batch")]:
        _segment, got = _recover(learner, directory, INTERVAL, valid + tail, steps,
                                 f"the intact batches, then {what}")
        steps.expect(f"recover() cuts the {len(tail)} bytes", len(tail), got)
        steps.expect("the .log after recovery", valid, log_path.read_bytes())
    shorter = b"".join(batches[:17])
    _segment, got = _recover(learner, directory, INTERVAL, shorter + b"\x00" * 100, steps,
                             f"17 intact batches ({len(shorter)} bytes), then 100 zero bytes")
    steps.expect("recover() cuts the 100 zero bytes", 100, got)
    size = len(batches[0])
    for index, at in [(0, 30), (5, 40), (5, size - 1), (12, 25)]:
        corrupt = bytearray(valid)
        corrupt[index * size + at] ^= 0x10
        segment, got = _recover(learner, directory, INTERVAL, bytes(corrupt), steps,
                                f"the intact batches with a bit flipped in batch {index} "
                                f"(byte {at} of it)")
        steps.expect(f"recover() cuts from batch {index} on", len(valid) - index * size, got)
        steps.expect("the .log after recovery", valid[: index * size], log_path.read_bytes())
        steps.expect("the index after recovery", expected_index(
            batches[:index], UNIFORM_BASE, INTERVAL), [tuple(e) for e in segment.index_entries()])


STAGE = Stage(3, "The log on disk", "stage3_storage", "stages/stage3_storage/README.md", (
    Exercise(1, "append and lookup",
             "append batches to a segment, keep a sparse index, look offsets up through it",
             ("Segment.append", "Segment.lookup", "Segment.read"), check_append_and_lookup,
             # The served stage 4 broker keeps each partition in one Segment.
             plugs=tuple((name, (f"simplekafka.learn.segment_log:{name}",))
                         for name in ("Segment.append", "Segment.lookup", "Segment.read")),
             hints=("Read the chapter's sections on segments and the sparse offset index.",
                    "An index entry is (last offset of the batch - base offset, position), "
                    "added once more than index_interval_bytes were written since the last; "
                    "lookup is a binary search for the last entry below the offset, then a "
                    "walk of batch headers from its position.")),
    Exercise(2, "recovery",
             "after a crash, cut a torn or corrupt tail off and rebuild the index",
             ("Segment.recover",), check_recovery,
             plugs=(("Segment.recover", ("simplekafka.learn.segment_log:Segment.recover",)),),
             hints=("Read the chapter's section on recovery after a crash.",
                    "Walk the batches from position 0; stop at the first one that is cut "
                    "short or whose CRC-32C is wrong; truncate the file there and rebuild "
                    "the index from what stays.")),
), mutants=(
    Mutant("index-every-batch", 1,
           "        if self.bytes_since_index_entry > self.index_interval_bytes:",
           "        if True:"),
    Mutant("index-the-first-offset", 1,
           "entry = (header.base_offset + header.last_offset_delta - self.base_offset, "
           "position)", "entry = (header.base_offset - self.base_offset, position)"),
    Mutant("lookup-ignores-the-index", 1,
           "position = self.entries[at][1] if at >= 0 else 0", "position = 0"),
    Mutant("index-interval-reached-is-enough", 1,
           "        if self.bytes_since_index_entry > self.index_interval_bytes:",
           "        if self.bytes_since_index_entry >= self.index_interval_bytes:"),
    Mutant("read-max-bytes-exclusive", 1,
           "            if end + size - position > max_bytes and end > position:",
           "            if end + size - position >= max_bytes and end > position:"),
    Mutant("recovery-trusts-a-zero-filled-tail", 2,
           "            if (end < position + HEADER_SIZE or end > len(data)\n",
           "            if (end > len(data)\n"),
    Mutant("recovery-without-crc", 2,
           "            if (end < position + HEADER_SIZE or end > len(data)\n"
           "                    or crc32c(data[position + CRC_START : end]) != header.crc):",
           "            if end < position + HEADER_SIZE or end > len(data):"),
))
