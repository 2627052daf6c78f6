"""benchmarks/bench_authorizer.py runs to the end in --tiny mode (pure computation, so
in-process) and prints its per-check figures with the load average."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks/bench_authorizer.py"


def test_bench_authorizer_tiny(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--tiny"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "1001 ACLs" in out
    for figure in ("remembered decision", "decided from the index", "as a handler asks it"):
        assert figure in out
    assert "load average" in out
