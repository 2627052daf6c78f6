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
