"""benchmarks/bench_old_formats.py runs to the end in --tiny mode (pure computation, so
in-process) and prints its CPU-per-MB figures with the load average."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks/bench_old_formats.py"


def test_bench_old_formats_tiny(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--tiny"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    for figure in ("message set (v1) -> v2 batch", "v2 batches -> message set v0",
                   "gzip batches -> gzip message set v1"):
        assert figure in out
    assert "ms/MB" in out and "load average" in out
