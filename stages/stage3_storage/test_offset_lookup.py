"""Finding an offset's batch in a segment: every fetch does it (a consumer's twice)."""

from __future__ import annotations

from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig
from simplekafka.storage import segment as segment_module


def test_finding_an_offset_builds_one_header_not_one_per_batch_scanned(tmp_path, monkeypatch):
    """Between two index entries (index.interval.bytes apart) lie about 24 batches of one
    100-byte record; the scan used to build a full header for each it stepped over. It
    reads three fields per batch and builds the header of the batch it finds only."""
    log = Log.open(tmp_path / "t-0", LogConfig())
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"x" * 100)])
    for _ in range(200):
        log.append(batch, 0)
    segment = log.segments[-1]
    built = []
    real = segment_module.read_header
    monkeypatch.setattr(segment_module, "read_header",
                        lambda *args: built.append(args) or real(*args))
    for offset in range(200):
        position, header = segment.translate_offset(offset)
        assert header.base_offset == offset and position == offset * len(batch)
    assert len(built) == 200  # one header per lookup, however far from its index entry
    assert segment.translate_offset(200) is None  # past the end
    assert len(log.read(150, 1 << 20, 160)) == 10 * len(batch)  # a consumer's read, cut at its HW


def _log_of(tmp_path, batches: int, config: LogConfig | None = None) -> tuple[Log, bytes]:
    log = Log.open(tmp_path / "t-0", config or LogConfig())
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"x" * 100)])
    for _ in range(batches):
        log.append(batch, 0)
    return log, batch


def _scans(segment, monkeypatch) -> list:
    """Counts the index searches translate_offset starts (each is followed by a scan)."""
    searches: list = []
    real = segment.offset_index.lookup
    monkeypatch.setattr(segment.offset_index, "lookup",
                        lambda offset: searches.append(offset) or real(offset))
    return searches


def test_the_batch_just_appended_is_found_without_index_search_or_scan(tmp_path, monkeypatch):
    """A consumer parked at the log end is woken by each append and asks for the batch just
    appended (at 10,000 records/s, about 8,000 times a second). That batch is answered from
    what the append remembered: no index search, no scan of about 24 headers."""
    log, batch = _log_of(tmp_path, 200)
    segment = log.segments[-1]
    searches = _scans(segment, monkeypatch)
    for offset in range(200, 230):
        log.append(batch, 0)
        read = log.read(offset, 1 << 20, offset + 1)  # the woken fetch's read
        assert len(read) == len(batch) and int.from_bytes(read[:8], "big") == offset
    assert searches == []
    assert segment.translate_offset(150)[0] == 150 * len(batch)  # elsewhere: searched as before
    assert searches == [150]


def test_the_remembered_last_batch_follows_truncation_recovery_and_reopening(tmp_path):
    """Whatever changes the segment's end (truncation, recovery, a reopen) changes what
    translate_offset answers for the last batch: always what the scan would find."""
    log, batch = _log_of(tmp_path, 100)
    segment = log.segments[-1]
    log.truncate_to(60)
    assert segment.translate_offset(59)[1].base_offset == 59
    assert segment.translate_offset(60) is None and segment.translate_offset(99) is None
    log.append(batch, 0)
    assert segment.translate_offset(60)[1].base_offset == 60
    segment.recover()
    assert segment.translate_offset(60)[1].base_offset == 60
    log.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig())
    assert [reopened.segments[-1].translate_offset(o)[1].base_offset for o in (0, 59, 60)] \
        == [0, 59, 60]
    assert reopened.segments[-1].translate_offset(61) is None


def test_an_offset_in_a_gap_before_the_last_batch_finds_that_batch(tmp_path):
    """The cleaner leaves gaps: an offset between the previous batch and the last one
    belongs to the last one (the first batch whose last offset is at or after it)."""
    from simplekafka.storage.segment import LogSegment
    segment = LogSegment(tmp_path, 0, LogConfig(), active=True, created_ms=0)
    for base in (0, 10):
        data = build_batch([Record(timestamp=1, key=None, value=b"v")], base_offset=base)
        segment.append([data], len(data), [(len(data), base, 1)])
    assert segment.translate_offset(5)[1].base_offset == 10
    assert segment.translate_offset(0)[1].base_offset == 0
    assert segment.translate_offset(11) is None
    segment.close()


def test_a_read_up_to_a_high_watermark_below_the_log_end_needs_no_index_search(tmp_path,
                                                                              monkeypatch):
    """With acks=all the high watermark trails the log end by the batches appended while
    the followers fetch: a consumer woken by the HW reads from a batch that is no longer
    the last, up to another (the HW), on the leader's reactor before its answer leaves.
    Both ends are among the latest batches, found from memory (Kafka keeps the HW's file
    position for this): no index search, no scan."""
    log, batch = _log_of(tmp_path, 200)
    segment = log.segments[-1]
    searches = _scans(segment, monkeypatch)
    for offset in range(200, 260):
        log.append(batch, 0)
        log.append(batch, 0)  # appended while the followers fetch: the HW trails by two
        high_watermark = offset - 1
        read = log.read(offset - 3, 1 << 20, high_watermark)
        assert len(read) == 2 * len(batch) and int.from_bytes(read[:8], "big") == offset - 3
    assert searches == []


def test_the_remembered_batches_answer_what_the_scan_answers(tmp_path):
    """``batch_position`` agrees with ``translate_offset`` for every offset, as batches come
    and the oldest remembered ones are dropped, with cleaner gaps, after a truncation and
    after recovery; offsets it does not hold are searched as before."""
    from simplekafka.storage.segment import RECENT_BATCHES, LogSegment
    segment = LogSegment(tmp_path, 0, LogConfig(), active=True, created_ms=0)
    base = 0
    for number in range(3 * RECENT_BATCHES):
        count = 1 + number % 3
        data = build_batch([Record(timestamp=1, key=None, value=b"v")] * count,
                           base_offset=base)
        segment.append([data], len(data), [(len(data), base + count - 1, 1)])
        base += count + (2 if number % 5 == 0 else 0)  # a gap, as the cleaner leaves

    def agree() -> None:
        for offset in range(segment.base_offset, segment.next_offset + 2):
            found = segment.translate_offset(offset)
            assert segment.batch_position(offset) == (
                None if found is None else (found[0], found[1].size)), offset

    agree()
    segment.truncate_to(base // 2)
    agree()
    data = build_batch([Record(timestamp=1, key=None, value=b"v")],
                       base_offset=segment.next_offset)
    segment.append([data], len(data), [(len(data), segment.next_offset, 1)])
    agree()
    segment.recover()
    agree()
    segment.close()


def test_batches_appended_together_are_indexed_as_one_by_one(tmp_path):
    """A follower appends a fetch answer's batches in one call, indexed in one loop: the
    segment ends as one fed the same batches one call each (offset and time index
    entries, remembered positions, the newest timestamp, sizes and reads), across the
    index interval and the trimming of the remembered batches."""
    from simplekafka.storage.segment import RECENT_BATCHES, LogSegment
    config = LogConfig(index_interval_bytes=500)
    (tmp_path / "alone").mkdir()
    (tmp_path / "together").mkdir()
    alone = LogSegment(tmp_path / "alone", 0, config, active=True, created_ms=0)
    together = LogSegment(tmp_path / "together", 0, config, active=True, created_ms=0)
    base, group, every = 0, [], []
    for number in range(5 * RECENT_BATCHES):
        count = 1 + number % 3
        timestamp = 1_000 + (number * 37) % 101  # not in order: the newest is a maximum
        data = build_batch([Record(timestamp=timestamp, key=None, value=b"v" * 40)] * count,
                           base_offset=base)
        entry = (len(data), base + count - 1, timestamp)
        alone.append([data], len(data), [entry])
        group.append((data, entry))
        every.append(entry)
        if len(group) == 1 + number % 41:  # groups of 1 to 41 batches
            together.append([d for d, _ in group], sum(len(d) for d, _ in group),
                            [e for _, e in group])
            group = []
        base += count + (1 if number % 7 == 0 else 0)  # a gap now and then
    if group:
        together.append([d for d, _ in group], sum(len(d) for d, _ in group),
                        [e for _, e in group])
    assert together.offset_index.entries() == alone.offset_index.entries()
    assert together.time_index.entries() == alone.time_index.entries()
    for timestamp, offset in together.time_index.entries():  # the newest so far, not the batch's
        assert timestamp == max(t for _, last, t in every if last <= offset), offset
    assert (together.size, together.next_offset, together.max_timestamp) == (
        alone.size, alone.next_offset, alone.max_timestamp)
    for offset in range(0, together.next_offset + 2):
        assert together.batch_position(offset) == alone.batch_position(offset), offset
        assert together.translate_offset(offset) == alone.translate_offset(offset), offset
    assert RECENT_BATCHES <= len(together._recent.lasts) < 2 * RECENT_BATCHES
    assert together.read(0, together.size) == alone.read(0, alone.size)
    alone.close()
    together.close()
