"""benchmarks/bench_ops.py runs to the end in --tiny mode (so it never rots) and prints
its three figures with the load average."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def test_bench_ops_tiny():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks/bench_ops.py"), "--tiny"],
                            capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for figure in ("scrape /metrics", "produce, 100-byte values", "produce-path metrics cost",
                   "REST GET /api/topics/wide"):
        line = next(line for line in lines if line.startswith(figure))
        assert "load average" in line
