"""``python -m stages.stage8_spark``: its arguments, and one pipeline against a running cluster.

The demo without arguments (all four pipelines on a cluster it starts) is run by
tests/test_repository.py::test_stage_demo_runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stages.stage8_spark.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def demo(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stages.stage8_spark", *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize(("args", "says"), [
    (["no-such-pipeline"], "invalid choice: 'no-such-pipeline'"),
    (["sessions", "--bootstrap-server", "localhost"], "'localhost' is not host:port"),
    (["sessions", "--bootstrap-server", "127.0.0.1:99999"], "is not host:port"),
    (["sessions", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["sessions", "extra"], "unrecognized arguments: extra"),
    (["sessions", "--master", "127.0.0.1:7077"], "'127.0.0.1:7077' is not a Spark master URL"),
    (["sessions", "--master", "spark://host"], "is not a Spark master URL (spark://HOST:PORT"),
])
def test_bad_arguments_are_one_line_errors(args, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert says in err and out == ""
    assert len(err.strip().splitlines()) == 1, err


def test_a_cluster_that_does_not_answer_is_a_one_line_error(capsys):
    from simplekafka.cluster import free_port

    with pytest.raises(SystemExit) as exit_:
        main(["fraud-alerts", "--bootstrap-server", f"127.0.0.1:{free_port()}"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "no broker answers at 127.0.0.1:" in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_pipeline_runs_against_a_running_cluster(cluster, tmp_path):
    result = demo("fraud-alerts", "--bootstrap-server", cluster.bootstrap_servers,
                  "--dir", str(tmp_path), timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "=== fraud-alerts" in out and "act 2: produced 15 events" in out
    assert "the same aggregate computed in Python from the topic: identical (9 groups" in out
    assert "starting ZooKeeper" not in out  # it used the cluster it was given
    assert list(tmp_path.iterdir()) == []  # its checkpoints were temporary
