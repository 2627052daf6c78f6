"""Stage 3 checks: drive the learner's Segment step by step, against Kafka's rules."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

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
    Mutant("recovery-without-crc", 2,
           "            if (end < position + HEADER_SIZE or end > len(data)\n"
           "                    or crc32c(data[position + CRC_START : end]) != header.crc):",
           "            if end < position + HEADER_SIZE or end > len(data):"),
))
