"""benchmarks/bench_fetch_path.py runs to the end in a tiny mode (so it never rots) and
prints its figures with the load average. Figures are never asserted."""

from __future__ import annotations

import sys

from benchmarks import bench_fetch_path


def test_the_parked_fetch_cycle_benchmark_runs_in_tiny_mode(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_fetch_path.py", "--cycles", "50", "--rounds", "1"])
    bench_fetch_path.main()
    printed = capsys.readouterr().out
    assert "load average" in printed
    assert "µs CPU per cycle" in printed and "µs CPU per request" in printed
