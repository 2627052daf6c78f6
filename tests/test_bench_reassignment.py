"""benchmarks/bench_reassignment.py runs to the end in --tiny mode (pure computation, so
in-process) and prints one line per broker change with the load average."""

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
