"""benchmarks/bench_compaction.py runs to the end on a tiny log (figures are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.integration
def test_the_compaction_benchmark_prints_throughput_and_the_load_average(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_compaction.py"), "--records", "3000",
         "--keys", "100", "--compression", "lz4", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MB/s read" in result.stdout and "records/s" in result.stdout
    assert "load average" in result.stdout and "100 records kept" in result.stdout
