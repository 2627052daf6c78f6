"""benchmarks/replication_stages.py runs to the end on a short, slow run (so it never rots):
the three traced brokers' timestamps pair with every record the C consumer read, and each
stage gets its percentiles. Figures are never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite import peers

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks/replication_stages.py"

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("clients", [[], ["--python-clients"]], ids=["C", "python"])
def test_every_record_is_traced_through_the_three_brokers(tmp_path, clients):
    """The C tool's records, and the lead latency table's (confluent-kafka in two processes,
    their records stamped the same way)."""
    assert clients or peers.rdkafka_performance() is not None, peers.missing_rdkafka_note()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--seconds", "0.5", "--rate", "1000",
         "--out", str(tmp_path), *clients],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "load average" in result.stdout and "note:" not in result.stdout  # all paired
    found = json.loads((tmp_path / "replication_stages.json").read_text())
    assert found["records"] == 500
    assert set(found["percentiles"]) == {
        "producer -> leader read", "read -> append", "append -> followers have it",
        "-> high watermark", "HW -> consumer answer", "answer -> consumed", "end to end"}
    assert set(found["hops"]) == {  # along the follower whose next fetch moved the HW
        "append -> sent to it", "sent -> it read it", "its read -> its next fetch",
        "next fetch -> leader read it", "leader read it -> HW"}
    assert len(found["followers"]) == 2 and all(f["fetches"] > 0 for f in found["followers"])
    assert 0 < found["leader"]["follower_fetches_per_record"]
    assert found["python_clients"] == bool(clients)
    # each broker's CPU time and run-queue wait over the run, from /proc/<pid>/schedstat
    assert sorted(row["role"] for row in found["scheduling"]) == ["follower", "follower", "leader"]
    assert all(row["on_cpu_s"] > 0 and row["runs"] > 0 and row["waiting_s"] >= 0
               for row in found["scheduling"])
    assert "runnable but waiting for a CPU" in result.stdout
