"""benchmarks/bench_quotas.py runs to the end in --tiny mode (so it never rots) and prints
its figures with the load average (never asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def test_bench_quotas_tiny():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks/bench_quotas.py"), "--tiny"],
                            capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for figure in ("throttled client", "  alone", "  beside the throttled client",
                   "throttled consumer"):
        line = next(line for line in lines if line.startswith(figure))
        assert "load average" in line
    assert any(line.startswith("free client, paced at") for line in lines)
