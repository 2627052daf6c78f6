"""benchmarks/bench_reassignment.py runs to the end in --tiny mode (pure computation, so
in-process) and prints one line per broker change with the load average;
bench_reassignment_move.py moves a small --size on real processes."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks/bench_reassignment.py"


def test_bench_reassignment_tiny(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--tiny"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for change in ("3->4", "4->3", "6->8"):
        line = next(line for line in lines if line.startswith(change))
        assert "ours" in line and "from scratch" in line and "consistent hashing" in line
        assert "load average" in line


@pytest.mark.integration
def test_bench_reassignment_move_small():
    """The 1 GB move benchmark, at 200 kB (real processes): both moves and the producer."""
    import subprocess

    script = SCRIPT.parent / "bench_reassignment_move.py"
    done = subprocess.run([sys.executable, str(script), "--size", "200000", "--throttle",
                           "1000000", "--partitions", "1"], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    moved = next(line for line in done.stdout.splitlines() if line.startswith("move "))
    assert "unthrottled" in moved and "throttled at 1.0 MB/s" in moved
    assert "load average" in moved
    produced = next(line for line in done.stdout.splitlines() if line.startswith("acks=all"))
    assert "during the throttled one" in produced and "load average" in produced
