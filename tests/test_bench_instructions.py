"""benchmarks/bench_instructions.py runs in a tiny mode (figures printed, never asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def test_the_fetch_cycle_and_the_follower_are_counted_in_instructions():
    result = subprocess.run(
        [sys.executable, "benchmarks/bench_instructions.py", "--paths", "cycle,follower",
         "--requests", "200"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    cycles = dict(re.findall(
        r"parked fetch woken by a produce, +(3\.9|old) versions +([\d,]+)", result.stdout))
    assert set(cycles) == {"3.9", "old"}, result.stdout  # librdkafka's versions and the old
    parts = re.findall(r"(the produce alone|the fetch's part) +([\d,]+)", result.stdout)
    assert [name for name, _ in parts] == ["the produce alone", "the fetch's part"] * 2
    assert all(int(value.replace(",", "")) > 0 for _, value in [*cycles.items(), *parts])
    follower = dict(re.findall(r"follower, +(\d+) batch\(es\) per fetch answer +([\d,]+)",
                               result.stdout))
    assert set(follower) == {"1", "17"}, result.stdout
    assert all(int(value.replace(",", "")) > 0 for value in follower.values())


def test_an_unknown_path_is_one_line():
    result = subprocess.run(
        [sys.executable, "benchmarks/bench_instructions.py", "--paths", "fetch"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "unknown path(s) fetch" in result.stderr


def test_a_real_broker_under_real_clients_is_counted_per_record():
    """The whole broker process, other checkout's code by ``--brokers-from`` (this one
    stands in for it), at both paces."""
    result = subprocess.run(
        [sys.executable, "benchmarks/bench_instructions.py", "--paths", "clients",
         "--seconds", "2", "--brokers-from", str(ROOT)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"the broker of {ROOT}" in result.stdout, result.stdout
    paces = dict(re.findall(r"([\d,]+) records/s, linger\.ms +\d+, broker process +([\d,]+) "
                            r"per record", result.stdout))
    assert set(paces) == {"50", "1,000"}, result.stdout
    assert all(int(value.replace(",", "")) > 10_000 for value in paces.values())
    bad = subprocess.run(
        [sys.executable, "benchmarks/bench_instructions.py", "--paths", "clients",
         "--brokers-from", "/nonexistent"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no simplekafka package there" in bad.stderr
