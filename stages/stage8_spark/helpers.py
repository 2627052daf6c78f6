"""Helpers the stage 8 tests share: topics, producing known records, reading them back."""

from __future__ import annotations

import uuid

from simplekafka.admin import Admin
from simplekafka.coordination import processes
from simplekafka.producer import Producer


def new_topic(cluster, partitions: int = 3, replication: int = 3, config: dict | None = None,
              prefix: str = "t") -> str:
    """A fresh topic with every partition led and in sync."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, replication, config=config)
    for p in range(partitions):
        cluster.wait_for_leader(name, p)
    return name


def produce(cluster, topic: str, count: int, start: int = 0, headers=None,
            partition: int | None = None) -> list[bytes]:
    """``count`` records with values ``v<start>..``, keys ``k<i>``; all acknowledged."""
    values = []
    with Producer(cluster.bootstrap_servers, acks="all") as producer:
        futures = []
        for i in range(start, start + count):
            value = b"v%d" % i
            values.append(value)
            futures.append(producer.send(topic, value=value, key=b"k%d" % (i % 7),
                                         headers=headers, partition=partition))
        producer.flush()
        for future in futures:
            future.result(timeout=60)
    return values


def run_stream(query_builder, timeout: float = 180.0):
    """Start a query, wait until it has processed everything available, stop it."""
    query = query_builder.trigger(availableNow=True).start()
    try:
        finished = query.awaitTermination(timeout)
        assert finished, f"query did not finish within {timeout} s"
    finally:
        if query.isActive:
            query.stop()
    if query.exception() is not None:
        raise query.exception()
    return query


def wait_until(condition, what: str, timeout: float = 120.0, every: float = 0.5):
    """The project's one polling loop, failing as a test assertion."""
    return processes.wait_until(condition, what, timeout=timeout, interval=every,
                                error=AssertionError)


def start_restart_job(cluster, topic: str, checkpoint, out, stall: int = -1,
                      exactly_once: str | None = None, sink_stall: int = -1,
                      master: str | None = None, event_log=None):
    """``restart_job.py`` as its own driver process (a session leader: killpg kills its JVM
    and Python workers too); its output on ``stdout``. ``exactly_once``: a second query
    into that topic, exactly once (``sink_stall``: the batch it stops in). ``master``: on
    that Spark cluster (its executors are the workers' processes, not the driver's)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "stages.stage8_spark.restart_job",
               cluster.bootstrap_servers, topic, str(checkpoint), str(out)]
    if stall >= 0:
        command += ["--stall-batch", str(stall)]
    if exactly_once:
        command += ["--exactly-once", exactly_once]
    if sink_stall >= 0:
        command += ["--sink-stall-batch", str(sink_stall)]
    if master:
        command += ["--master", master]
    if event_log is not None:
        command += ["--event-log", str(event_log)]
    return subprocess.Popen(command, cwd=root, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
