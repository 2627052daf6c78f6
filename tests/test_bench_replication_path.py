"""benchmarks/bench_replication_path.py runs to the end in a tiny mode (so it never rots) and
prints its figures with the load average. Figures are never asserted."""

from __future__ import annotations

import sys

import pytest

from benchmarks import bench_replication_path


def test_the_replication_cycle_benchmark_runs_in_tiny_mode(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_replication_path.py", "--reads", "5",
                                      "--rounds", "1"])
    bench_replication_path.main()
    printed = capsys.readouterr().out
    assert "load average" in printed
    assert printed.count("µs CPU per record at the leader") == 3


def test_the_3_9_versions_are_answered_by_topic_id_and_commit_every_record(tmp_path):
    """Our followers' Fetch v17 (topic ID, replica_state, last fetched epoch), librdkafka's
    Fetch v16 and Produce v10: the leader answers them all and every acks=all record is
    committed (run_reads checks the high watermark)."""
    figures = bench_replication_path.run_reads(2, 4, str(tmp_path), versions="3.9")
    assert figures["answers"] > 0 and figures["fetches"] > 0


def test_versions_other_than_the_two_sets_are_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_replication_path.py", "--versions", "3.8"])
    with pytest.raises(SystemExit) as exited:
        bench_replication_path.main()
    assert exited.value.code == 2
    assert "--versions" in capsys.readouterr().err
