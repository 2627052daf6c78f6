"""benchmarks/bench_fetch_path.py runs to the end in a tiny mode (so it never rots) and
prints its figures with the load average. Figures are never asserted."""

from __future__ import annotations

import sys

import pytest

from benchmarks import bench_fetch_path


@pytest.mark.parametrize(("versions", "spoken"), [
    ([], "consumer Fetch v11, Produce v8"),
    (["--versions", "3.9"], "consumer Fetch v16, Produce v10"),  # librdkafka 2.x's, by ID
])
def test_the_parked_fetch_cycle_benchmark_runs_in_tiny_mode(monkeypatch, capsys, versions,
                                                             spoken):
    monkeypatch.setattr(sys, "argv", ["bench_fetch_path.py", "--cycles", "50", "--rounds", "1",
                                      *versions])
    bench_fetch_path.main()
    printed = capsys.readouterr().out
    assert "load average" in printed
    assert f"versions: {spoken}" in printed
    assert "µs CPU per cycle" in printed and "µs CPU per request" in printed
