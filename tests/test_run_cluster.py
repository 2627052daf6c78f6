"""``./run_cluster.sh``, the README's first command: the three-broker failover demo and Spark."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simplekafka.cluster.demo import Narrator

pytestmark = pytest.mark.integration  # starts real processes

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(1200)
def test_run_cluster_runs_the_failover_demo_to_the_end_with_spark_on_a_standalone_cluster(
        tmp_path):
    """``./run_cluster.sh --spark-master URL`` against ``simplekafka spark up --workers 2``:
    the failover demo to the end, then the Spark step, whose executors run on both
    workers, counts every record once. One run for both: the demo without
    ``--spark-master`` differs only in the master its Spark step gets (local[2],
    test_no_spark_ends_after_the_failover), and each run costs minutes of the suite."""
    import json

    spark_dir = tmp_path / "spark"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up = subprocess.run([sys.executable, "-m", "simplekafka", "spark", "up", "--workers", "2",
                         "--dir", str(spark_dir)], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=300, check=False)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = json.loads((spark_dir / "spark.json").read_text())
        result = subprocess.run([str(ROOT / "run_cluster.sh"), "--spark-master",
                                 state["master_url"]], cwd=ROOT,
                                env={**env, "SIMPLEKAFKA_DEMO_DIR": str(tmp_path / "demo")},
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-4000:]
        assert "new leader of partition 0: broker" in output
        assert "nothing acknowledged was lost" in output
        assert "is back in every ISR" in output
        # The last step: the Spark consumer counts the topic per window, every record once.
        assert "the Spark consumer: 'payments' records per partition and 1 second window" \
            in output
        assert f"(PySpark {state['master_url']}, format 'simplekafka'" in output
        assert "second (UTC)" in output
        assert "Spark counted every record once" in output
        assert "stopping the brokers and ZooKeeper" in output
        # The application's executors ran on both workers (each keeps a directory per app).
        for worker in state["workers"]:
            assert list(Path(worker["work_dir"]).glob("app-*/*/stderr")), worker
    finally:
        down = subprocess.run([sys.executable, "-m", "simplekafka", "spark", "down", "--dir",
                               str(spark_dir)], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert down.returncode == 0, down.stdout + down.stderr
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""


@pytest.mark.timeout(600)
def test_secure_demo_runs_over_sasl_ssl(tmp_path):
    """``./run_cluster.sh --secure``: the same failover, every client and replica over SASL_SSL
    (run through the demo module: run_cluster.sh only adds the bootstrap step above)."""
    env = {**os.environ, "SIMPLEKAFKA_DEMO_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "simplekafka.spark.demo", "--secure"],
                            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=500)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "sasl.mechanism=SCRAM-SHA-512" in output
    assert "nothing acknowledged was lost" in output and "is back in every ISR" in output
    # The ACL step: demo may write and read payments only.
    assert "simplekafka acls add --allow-principal User:demo --operation Write" in output
    assert "User:demo producing to 'audit': TOPIC_AUTHORIZATION_FAILED" in output
    # super.users is the brokers' own login only: a PLAINTEXT client is nobody.
    assert "User:ANONYMOUS (PLAINTEXT) producing to 'payments': TOPIC_AUTHORIZATION_FAILED" \
        in output
    commands = [line for log in (tmp_path / "cluster").glob("**/broker-*.log")
                for line in log.read_text().splitlines() if line.startswith("# ")]
    assert commands and all("--set super.users=User:admin " in c + " " for c in commands)
    logs = list((tmp_path / "cluster").glob("**/broker-*.log"))
    assert logs and all("authenticated as User:admin with PLAIN on listener SASL_SSL"
                        in log.read_text() for log in logs)
    assert any("authenticated as User:demo with SCRAM-SHA-512" in log.read_text()
               for log in logs)


def test_keep_leaves_the_cluster_serving_until_ctrl_c(tmp_path):
    from simplekafka.cluster import probe_broker

    env = {**os.environ, "SIMPLEKAFKA_DEMO_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    output = tmp_path / "demo.out"
    with open(output, "w") as out:
        demo = subprocess.Popen([sys.executable, "-m", "simplekafka.cluster.demo", "--keep"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while "press Ctrl-C" not in output.read_text():
            assert demo.poll() is None, output.read_text()[-4000:]
            assert time.monotonic() < deadline, output.read_text()[-4000:]
            time.sleep(0.5)
        address = output.read_text().split("kcat -b ")[1].split()[0]
        host, port = address.rsplit(":", 1)
        assert len(probe_broker(host, int(port)).broker_ids) == 3
        demo.send_signal(signal.SIGINT)
        assert demo.wait(120) == 0, output.read_text()[-4000:]
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(30)
    leftovers = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""


def test_a_bad_option_is_a_usage_error():
    result = subprocess.run([str(ROOT / "run_cluster.sh"), "--no-such-option"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "unrecognized arguments" in result.stderr
    assert "Traceback" not in result.stderr


def test_interactive_mode_waits_for_enter_before_each_step(monkeypatch):
    asked = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "")
    out = io.StringIO()
    step = Narrator(interactive=True, out=out)
    step("first")
    step("second")
    assert len(asked) == 2 and "step 2: second" in asked[1]
    assert "=== 1. first" in out.getvalue()


def test_no_spark_ends_after_the_failover(monkeypatch):
    from simplekafka.cluster import demo as cluster_demo
    from simplekafka.spark import demo as spark_demo

    asked = []
    monkeypatch.setattr(cluster_demo, "run_demo",
                        lambda *args, **kwargs: asked.append(kwargs["after_failover"]) or 0)
    assert spark_demo.main(["--no-spark"]) == 0
    assert spark_demo.main([]) == 0  # the Spark step on local[2]
    assert spark_demo.main(["--spark-master", "spark://127.0.0.1:7077"]) == 0
    assert asked[:2] == [None, spark_demo.spark_consumer]
    assert asked[2].func is spark_demo.spark_consumer
    assert asked[2].keywords == {"master": "spark://127.0.0.1:7077"}
