"""The standalone-cluster helpers without processes: URLs, the event log, recorded pids.

The cluster itself runs in stages/stage8_spark/test_standalone.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import pytest

from simplekafka.cluster.spark_standalone import SparkClusterError, SparkStandalone
from simplekafka.coordination.processes import stop_recorded_pid
from simplekafka.spark.session import check_master_url, tasks_by_executor


@pytest.mark.parametrize("url", ["spark://127.0.0.1:7077", "local[2]", "local[*]"])
def test_master_urls_that_are_taken(url):
    assert check_master_url(url) == url


@pytest.mark.parametrize("url", ["127.0.0.1:7077", "spark://host", "spark://:7077",
                                 "spark://h:99999", "yarn"])
def test_master_urls_that_are_refused(url):
    with pytest.raises(ValueError, match="is not a Spark master URL"):
        check_master_url(url)


def test_tasks_per_executor_named_by_worker(tmp_path):
    def added(executor, worker_port):
        return {"Event": "SparkListenerExecutorAdded", "Executor ID": executor,
                "Executor Info": {"Log Urls": {
                    "stdout": f"http://127.0.0.1:{worker_port}/logPage/?executorId={executor}"}}}

    def ended(executor):
        return {"Event": "SparkListenerTaskEnd", "Task Info": {"Executor ID": executor}}

    events = [added("0", 4001), added("1", 4002), ended("0"), ended("1"), ended("1")]
    lines = [json.dumps(e) for e in events]
    (tmp_path / "app-1").write_text("\n".join(lines) + "\n")
    # A driver SIGKILLed mid-write leaves a log in progress with a cut-off last line.
    (tmp_path / "app-2.inprogress").write_text(lines[0] + "\n" + lines[2] + "\n" + '{"Ev')
    assert tasks_by_executor(tmp_path) == {
        "app-1": {"0@127.0.0.1:4001": 1, "1@127.0.0.1:4002": 2},
        "app-2": {"0@127.0.0.1:4001": 1}}


def test_a_recorded_pid_running_something_else_is_left_alone():
    assert stop_recorded_pid(os.getpid(), "org.apache.spark.deploy.worker.Worker") is False
    assert stop_recorded_pid(None, "anything") is False


def test_a_cluster_needs_a_worker_and_a_record(tmp_path):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        SparkStandalone(workers=0, base_dir=tmp_path)
    assert SparkStandalone.recorded(tmp_path) is None
    with pytest.raises(SparkClusterError, match="no Spark cluster recorded"):
        SparkStandalone.stop_recorded(tmp_path)


def test_the_daemons_take_more_jvm_options_from_the_environment(tmp_path, monkeypatch):
    """SIMPLEKAFKA_SPARK_DAEMON_JVM_OPTIONS (the suite's class archive) joins the daemons'
    own options; without it they start with their own alone."""
    from simplekafka.cluster import spark_standalone

    spawned: list[dict[str, str]] = []

    class Recorded:  # what Popen was asked for; nothing starts
        def __init__(self, args: list[str], **kwargs) -> None:
            spawned.append(kwargs["env"])
            self.pid = 0

    # The module's name for subprocess, not subprocess.Popen itself (conftest guards that).
    monkeypatch.setattr(spark_standalone, "subprocess", SimpleNamespace(
        Popen=Recorded, DEVNULL=subprocess.DEVNULL, STDOUT=subprocess.STDOUT))
    cluster = SparkStandalone(workers=1, base_dir=tmp_path, detach=True)
    monkeypatch.delenv(spark_standalone.DAEMON_JVM_OPTIONS_ENV, raising=False)
    cluster._spawn(cluster.master, [spark_standalone.MASTER_CLASS])
    monkeypatch.setenv(spark_standalone.DAEMON_JVM_OPTIONS_ENV,
                       " -XX:SharedArchiveFile=/x/spark.jsa  -Xlog:cds=off ")
    cluster._spawn(cluster.workers[0], [spark_standalone.WORKER_CLASS])
    assert spawned[0]["SPARK_DAEMON_JAVA_OPTS"] == spark_standalone.DAEMON_JAVA_OPTS
    assert spawned[1]["SPARK_DAEMON_JAVA_OPTS"] == (
        spark_standalone.DAEMON_JAVA_OPTS + " -XX:SharedArchiveFile=/x/spark.jsa -Xlog:cds=off")
