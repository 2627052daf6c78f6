"""The source and sink on a real Spark cluster: a standalone master and two workers.

One cluster for the module, started as a user starts it (``simplekafka spark
up --workers 2``: a master and two workers, each its own JVM with one core),
and the scenarios of test_source_restart.py run unchanged with the cluster's
master URL (its driver restart carries the exactly-once sink's too: one
driver, killed once, for both). Each scenario shows, from Spark's event log,
that tasks ran on executors of both workers: the readers planned on the
driver ran in the workers' Python processes, which imported SimpleKafka from
the zip the session shipped.

A worker's one core is taken by whichever application holds it, so the
drivers started as processes of their own (the restart scenarios) run before
the module's one in-process SparkSession exists; the tiny run of
benchmarks/bench_spark.py's standalone part runs in that session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from stages.stage8_spark.test_source_restart import (
    driver_sigkilled_mid_batch,
    leader_sigkilled_mid_query,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
#: A driver on the cluster waits for two executor JVMs and their Python workers to start:
#: on a loaded two-core machine that took up to three minutes.
PATIENCE = 480
ROOT = Path(__file__).resolve().parents[2]


def simplekafka(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """The ``simplekafka`` command of this tree."""
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "simplekafka", *args], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """``simplekafka spark up --workers 2``; its spark.json; ``spark down`` at the end."""
    directory = tmp_path_factory.mktemp("spark-standalone")
    started = simplekafka("spark", "up", "--workers", "2", "--dir", str(directory))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        state = json.loads((directory / "spark.json").read_text())
        assert started.stdout.splitlines()[0] == state["master_url"]
        yield {**state, "dir": directory}
    finally:
        stopped = simplekafka("spark", "down", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    state = json.loads((directory / "spark.json").read_text())
    from simplekafka.coordination.processes import pid_alive

    assert state["status"] == "stopped"
    assert not any(pid_alive(pid) for pid in
                   [state["master_pid"], *(w["pid"] for w in state["workers"])])


def assert_tasks_on_both_workers(event_log: Path, standalone: dict) -> dict:
    """Every application in ``event_log`` ran tasks on executors of both workers."""
    from simplekafka.spark.session import tasks_by_executor

    workers = {urlsplit(w["web_ui"]).netloc for w in standalone["workers"]}
    apps = tasks_by_executor(event_log)
    assert apps, f"no event log in {event_log}"
    for app, tasks in apps.items():
        used = {name.split("@", 1)[1] for name in tasks}
        assert used == workers, f"application {app}: tasks per executor {tasks}, " \
                                f"workers {sorted(workers)}"
    return apps


def test_spark_status_names_both_workers_alive(standalone):
    result = simplekafka("spark", "status", "--dir", str(standalone["dir"]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "running" in result.stdout.splitlines()[0]
    assert result.stdout.count("  worker 127.0.0.1:") == 2
    again = simplekafka("spark", "up", "--dir", str(standalone["dir"]))
    assert again.returncode == 2 and "already runs" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_driver_sigkilled_mid_batch_on_the_cluster_resumes_files_and_exactly_once_sink(
        standalone, spark_cluster, tmp_path):
    """One driver runs both restart scenarios (files per batch, the exactly-once sink):
    each driver start on the cluster also starts two executor JVMs and their Python
    workers, which is most of the module's time."""
    events = tmp_path / "events"
    driver_sigkilled_mid_batch(spark_cluster, tmp_path, PATIENCE,
                               master=standalone["master_url"], event_log=events)
    assert len(assert_tasks_on_both_workers(events, standalone)) == 2  # killed, then resumed


@pytest.fixture(scope="module")
def standalone_spark(standalone, tmp_path_factory):
    """The module's one SparkSession, on the cluster (a local one of this process stops)."""
    from simplekafka.spark.session import local_spark
    from stages.stage8_spark.conftest import _stop_active_spark

    _stop_active_spark()
    events = tmp_path_factory.mktemp("events")
    session = local_spark("simplekafka-standalone-tests", master=standalone["master_url"],
                          event_log=events)
    session.conf.set("spark.sql.streaming.stopTimeout", "30s")
    session.event_log = events  # for the tests below
    try:
        yield session
    finally:
        _stop_active_spark()


def test_bench_spark_figures_on_the_cluster_in_tiny_mode(standalone, standalone_spark,
                                                        spark_cluster, tmp_path, capsys):
    """benchmarks/bench_spark.py's standalone part (its --master run), tiny, on this module's
    cluster and in its session there (one application, so one pair of executors, for the
    module's in-process tests): tests/test_bench_spark.py runs the rest local only, so the
    suite starts one standalone cluster, not two. Its figures are printed with the load
    average, never asserted; its queries ran tasks on both workers."""
    from benchmarks import bench_spark
    from stages.stage8_spark.helpers import new_topic

    topic = new_topic(spark_cluster, partitions=2, replication=1)
    bench_spark.fill(spark_cluster.bootstrap_servers, topic, bench_spark.TINY_RECORDS)
    bench_spark.on_a_cluster(standalone["master_url"], spark_cluster.bootstrap_servers,
                             bench_spark.TINY_PER_TRIGGER, tmp_path, topic=topic,
                             session=standalone_spark, event_log=standalone_spark.event_log)
    lines = capsys.readouterr().out.splitlines()
    where = f"standalone {standalone['master_url']}"
    for figure in (f"window count by key, Arrow, {where}: median ",
                   f"source alone into noop, Arrow, {where}: median ",
                   f"tasks per executor (id@worker) on {where}: "):
        line = next((line for line in lines if line.startswith(figure)), None)
        assert line is not None, f"no {figure!r} in {lines}"
        assert "load average" in line, line
    assert_tasks_on_both_workers(standalone_spark.event_log, standalone)


def test_executors_import_simplekafka_from_the_shipped_zip(standalone, standalone_spark):
    from simplekafka.spark.session import SparkSetupError, check_executors, ship_simplekafka

    where = ship_simplekafka(standalone_spark)
    assert len(where) == 2
    for worker, found in zip(sorted(w["work_dir"] for w in standalone["workers"]),
                             sorted(where), strict=True):
        assert found.startswith(worker + "/")  # an executor's directory on each worker
        assert ".zip/simplekafka/spark/source.py" in found
    with pytest.raises(SparkSetupError) as caught:
        check_executors(standalone_spark, "simplekafka_no_such_module")
    message = str(caught.value)
    assert message.startswith("Spark executors cannot import simplekafka_no_such_module: "
                              "ModuleNotFoundError")
    assert "\n" not in message


def test_leader_sigkilled_during_the_query_on_the_cluster(standalone, standalone_spark,
                                                          spark_cluster, tmp_path):
    leader_sigkilled_mid_query(standalone_spark, spark_cluster, tmp_path)
    assert_tasks_on_both_workers(standalone_spark.event_log, standalone)
