"""benchmarks/bench_transactions.py runs to the end in --tiny mode (so it never rots), prints
its three figures with the load average, and its read_committed consumer saw no aborted record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def test_bench_transactions_tiny():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/bench_transactions.py"), "--tiny"],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for figure in ("idempotent produce", "transactional produce", "read_committed end to end"):
        line = next(line for line in lines if line.startswith(figure))
        assert "load average" in line
    assert "aborted records seen: 0 " in lines[-1]
