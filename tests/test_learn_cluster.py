"""``simplekafka learn cluster``: three real brokers on the learner's code, the failover checked.

With the reference solution checked (``learn check 7`` records the passed
exercises), the brokers run the learner's functions (listed at the start and
in each broker's log), confluent-kafka writes and kcat reads are served, and
nothing acknowledged is lost. With a broken high-watermark rule (the leader's
own LEO: acks=all answered before any follower has the records), the leader's
SIGKILL while its followers are paused loses what it acknowledged, and the
command says so and fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simplekafka.learn.catalog import STAGES

pytestmark = pytest.mark.integration  # ZooKeeper, brokers, kcat and confluent-kafka

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "simplekafka" / "learn" / "solutions" / "stage7_replication.py"


def simplekafka(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "simplekafka", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def counts(output: str) -> tuple[int, int]:
    found = re.search(r"^(\d+) acknowledged, (\d+) lost$", output, re.MULTILINE)
    assert found, output
    return int(found.group(1)), int(found.group(2))


def test_the_reference_checked_then_run_as_a_cluster_loses_nothing(tmp_path):
    assert simplekafka("learn", "start", "7", "mine", cwd=tmp_path).returncode == 0
    (tmp_path / "mine" / "stage7_replication.py").write_text(SOLUTION.read_text())
    checked = simplekafka("learn", "check", "7", "mine", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    result = simplekafka("learn", "cluster", "mine", "--base-dir", str(tmp_path / "cluster"),
                         cwd=tmp_path)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    for target in ("simplekafka.broker.partition:high_watermark",
                   "simplekafka.broker.partition:out_of_sync_replicas",
                   "simplekafka.broker.partition:may_join_isr",
                   "simplekafka.storage.epochs:end_offset_for_epoch",
                   "simplekafka.broker.replica_fetcher:truncation_offset"):
        assert f"runs as {target}" in out, out
    acknowledged, lost = counts(out)
    assert lost == 0 and acknowledged >= 600, out  # every confluent-kafka write answered
    assert "acknowledged while the followers were paused: 0" in out
    assert re.search(r"new leader of partition 0: broker \d", out)
    kcat = re.search(r"kcat -C read (\d+) records from partition 0 \(exit status 0\)", out)
    assert kcat and int(kcat.group(1)) >= 300, out
    # Each broker process put the learner's functions in place before it started.
    for broker in (1, 2, 3):
        log = (tmp_path / "cluster" / "logs" / f"broker-{broker}.log").read_text()
        assert ("learner code in use: stage 7 exercise 1: your high_watermark runs as "
                "simplekafka.broker.partition:high_watermark") in log


def test_a_high_watermark_at_the_leaders_leo_loses_acknowledged_records(tmp_path):
    stage = STAGES[7]
    mutant = next(m for m in stage.mutants if m.name == "hw-from-the-leaders-leo-alone")
    source = SOLUTION.read_text()
    assert source.count(mutant.old) == 1
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "stage7_replication.py").write_text(source.replace(mutant.old, mutant.new))
    # The check refuses this rule; mark the stage done by hand to run it anyway.
    (mine / ".learn-progress.json").write_text(
        json.dumps({"7": [e.number for e in stage.exercises]}))

    result = simplekafka("learn", "cluster", "mine", cwd=tmp_path)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "your high_watermark runs as simplekafka.broker.partition:high_watermark" in out
    _acknowledged, lost = counts(out)
    assert lost > 0, out
    assert "ACKNOWLEDGED RECORDS WERE LOST" in out
