"""benchmarks/bench_spark.py runs to the end in --tiny mode (so it never rots) and prints
every figure with the load average; the figures themselves are never asserted.

Its standalone part (``--master``/``--standalone``: the same queries on a Spark standalone
cluster) runs in stages/stage8_spark/test_standalone.py, on that module's cluster, so the
suite starts one standalone cluster, not two; this run is local[2] only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def test_bench_spark_tiny_on_local_spark():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks/bench_spark.py"), "--tiny"],
                            capture_output=True, text=True, timeout=900, check=False, cwd=ROOT,
                            env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    lines = result.stdout.splitlines()
    for figure in ("window count by key (10 s tumbling", "source alone into noop, Arrow",
                   "source alone into noop, tuples", "window count by key, tuples",
                   "memory after the runs", "end-to-end latency", "driver SIGKILL recovery"):
        line = next(line for line in lines if line.startswith(figure))
        assert "load average" in line, line
    assert not any("standalone" in line for line in lines)  # no cluster without --master
