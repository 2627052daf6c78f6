"""benchmarks/bench_hostile_clients.py runs to the end in --tiny mode (real processes): a
normal client's p99 produce latency and the broker's RSS, quiet and beside silent,
slow-loris and oversized-frame connections, each line with the load average."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks/bench_hostile_clients.py"


@pytest.mark.integration
def test_bench_hostile_clients_tiny():
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    quiet = [line for line in lines if line.startswith("quiet")]
    hostile = [line for line in lines if line.startswith("hostile")]
    assert len(quiet) == 1 and len(hostile) == 1, done.stdout
    for line in quiet + hostile:
        assert "p99" in line and "broker RSS" in line and "load average" in line
    # The oversized frames were refused by the broker, not read.
    oversized = re.search(r"oversized (\d+) opened/(\d+) closed by the broker", hostile[0])
    assert oversized and int(oversized[1]) > 0 and int(oversized[2]) > 0, hostile[0]
    assert "p99 with hostile clients" in lines[-1]
