"""benchmarks/bench_follower_cycle.py runs to the end in a tiny mode (so it never rots) and
prints its figures with the load average. Figures are never asserted."""

from __future__ import annotations

import sys

from benchmarks import bench_follower_cycle


def test_the_follower_cycle_benchmark_runs_in_tiny_mode(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_follower_cycle.py", "--cycles", "5",
                                      "--rounds", "1"])
    bench_follower_cycle.main()
    printed = capsys.readouterr().out
    assert "load average" in printed
    assert printed.count("µs CPU per follower cycle") == 4
