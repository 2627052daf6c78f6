"""benchmarks/bench_replication_path.py runs to the end in a tiny mode (so it never rots) and
prints its figures with the load average. Figures are never asserted."""

from __future__ import annotations

import sys

from benchmarks import bench_replication_path


def test_the_replication_cycle_benchmark_runs_in_tiny_mode(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_replication_path.py", "--reads", "5",
                                      "--rounds", "1"])
    bench_replication_path.main()
    printed = capsys.readouterr().out
    assert "load average" in printed
    assert printed.count("µs CPU per record at the leader") == 3
