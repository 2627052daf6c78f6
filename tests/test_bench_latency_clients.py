"""The lead table of ``simplekafka bench latency``: Python clients, Redis beside us.

Real processes throughout: LocalCluster brokers (one, and three with RF 3),
Debian's redis-server, and a producer process and a consumer process per
system (confluent-kafka, redis-py). Figures are never asserted; what is: each
system's row is printed first, before the figures' table, its numbers parse,
the ratios and the load average are there, and the pacers sleep. The table
runs in the whole suite's tiny run, which asserts all that with ``rows`` below
(tests/test_bench.py): a run of its own here ran the same brokers, Redis and
clients a second time. This module keeps the pacer's unit test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("Redis Streams (redis-py)", "SimpleKafka, 1 broker, acks=1",
           "SimpleKafka, 1 broker, acks=1, linger.ms=0", "SimpleKafka, 3 brokers RF 3, acks=all")


def rows(printed: str) -> dict[str, list[float]]:
    """Each system's numbers from the printed lead table (they must parse)."""
    found = {}
    for system in SYSTEMS:
        row = re.search(rf"^\| {re.escape(system)} \|(.*)\|\s*$", printed, re.MULTILINE)
        assert row, f"no row for {system}:\n{printed}"
        found[system] = [float(cell) for cell in row.group(1).split("|")]
    return found


def test_the_pacer_sends_each_millisecond_what_fell_due_and_sleeps_between(monkeypatch):
    """Both systems' producers pace with ``ticks``: a group per millisecond, never a spin."""
    from benchmarks.suite import latency_clients

    now = [0.0]
    slept = []
    reads = [0]

    def perf_counter() -> float:
        reads[0] += 1
        now[0] += 1e-6
        return now[0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds + 80e-6  # Linux overshoots a little

    monkeypatch.setattr(latency_clients.time, "perf_counter", perf_counter)
    monkeypatch.setattr(latency_clients.time, "sleep", sleep)
    groups = list(latency_clients.ticks(10_000, 2_000))
    assert sum(groups) == 2_000
    assert 0.19 <= now[0] <= 0.23  # at the rate
    assert max(groups) <= 12 and len(groups) >= 150  # about ten records a millisecond
    assert reads[0] <= 2 * len(slept) + 4  # every clock reading is followed by a sleep


@pytest.mark.integration
@pytest.mark.timeout(360)
def test_the_two_tree_table_runs_both_trees_in_each_run(tmp_path):
    """``benchmarks/latency_ab.py``: Redis and both trees' one-broker and RF 3 rows, their
    ratios, and the load average (tiny: this checkout stands for both trees; two runs, the
    second taking the trees in the other order)."""
    root = ROOT
    done = subprocess.run([sys.executable, "benchmarks/latency_ab.py", "--other", str(root),
                           "--seconds", "1", "--runs", "2", "--rate", "500"], cwd=root,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout
    for tree in ("A (this checkout)", f"B ({root})"):
        for shape in ("1 broker, acks=1", "3 brokers RF 3, acks=all"):
            row = re.search(rf"^{re.escape(f'{tree}: {shape}')}\s+([\d.]+)\s+([\d.]+)\s+"
                            r"([\d.]+)\s+([\d.]+)$", printed, re.MULTILINE)
            assert row, (tree, shape, printed)
        assert re.search(rf"^{re.escape(tree)}: 1 broker p99 [\d.]+x Redis, RF 3 p99 "
                         r"[\d.]+x 1 broker$", printed, re.MULTILINE), printed
    assert re.search(r"^Redis Streams \(redis-py\)\s+[\d.]+", printed, re.MULTILINE)
    assert "load average" in printed
    assert re.search(r"^run 2 of 2 done, load average [\d.]+; p50/p99 \(ms\): Redis", printed,
                     re.MULTILINE), printed
    for shape in ("1 broker, acks=1", "3 brokers RF 3, acks=all"):
        assert re.search(rf"^{re.escape(shape)}: A's p99 below B's in [0-2] of 2 runs$", printed,
                         re.MULTILINE), printed
    bad = subprocess.run([sys.executable, "benchmarks/latency_ab.py", "--other", str(tmp_path)],
                         cwd=root, capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "no simplekafka package" in bad.stderr
