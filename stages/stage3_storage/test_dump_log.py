"""``simplekafka dump-log``: the read-only look at a partition directory."""

from __future__ import annotations

from simplekafka.cli import main
from simplekafka.storage import Log, LogConfig
from stages.stage3_storage.batches import make_batch


def make_log(tmp_path, crash: bool = False):
    log = Log.open(tmp_path / "orders-0", LogConfig(index_interval_bytes=50, max_index_size=800))
    for number in range(6):
        log.append(make_batch([b"value-%d" % number, b"x" * 30]), 2)
    if crash:
        log.abandon()
    else:
        log.close()
    return tmp_path / "orders-0"


def test_a_healthy_partition_is_listed_and_checked(tmp_path, capsys):
    directory = make_log(tmp_path)
    assert main(["dump-log", str(directory), "--records"]) == 0
    out = capsys.readouterr().out
    assert "6 batches, offsets 0..11, all valid" in out
    assert "offsets 2..3 (2 records)" in out and "epoch 2" in out
    assert "value b'value-5'" in out
    assert "MISMATCH" not in out and out.count("  ok") >= 2
    assert out.index(".log") < out.index(".index") < out.index("leader-epoch-checkpoint")


def test_a_torn_tail_is_reported_with_what_recovery_would_cut(tmp_path, capsys):
    directory = make_log(tmp_path)
    segment = directory / f"{0:020d}.log"
    with open(segment, "r+b") as handle:
        handle.truncate(segment.stat().st_size - 7)
    assert main(["dump-log", str(segment)]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" in out and "recovery would cut" in out


def test_an_index_entry_pointing_elsewhere_is_a_mismatch(tmp_path, capsys):
    directory = make_log(tmp_path)
    index = directory / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    data[7] += 1  # first entry's position, off by one
    index.write_bytes(bytes(data))
    assert main(["dump-log", str(index)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_a_preallocated_index_after_a_crash_shows_only_real_entries(tmp_path, capsys):
    directory = make_log(tmp_path, crash=True)
    assert main(["dump-log", str(directory / f"{0:020d}.index")]) == 0
    out = capsys.readouterr().out
    assert "(800 bytes" in out and "preallocated" in out
    assert "offset 0 -> position 0" not in out


def test_command_line_mistakes_are_one_line_errors(tmp_path, capsys):
    assert main(["dump-log", str(tmp_path / "missing")]) == 2
    (tmp_path / "notes.txt").write_text("hello")
    assert main(["dump-log", str(tmp_path / "notes.txt")]) == 2
    assert main(["dump-log", str(tmp_path)]) == 2  # nothing dumpable inside
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and "Traceback" not in err
