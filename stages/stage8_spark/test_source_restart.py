"""Offsets in the checkpoint: restarts, a SIGKILLed driver, and a SIGKILLed partition leader."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from simplekafka.producer import Producer
from stages.stage8_spark.helpers import (
    new_topic,
    produce,
    run_stream,
    start_restart_job,
    wait_until,
)

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_restart_from_the_checkpoint_reads_exactly_the_new_records(spark, spark_cluster,
                                                                    tmp_path):
    topic = new_topic(spark_cluster)
    first = produce(spark_cluster, topic, 600)
    seen: list[bytes] = []

    def start():
        return run_stream(
            spark.readStream.format("simplekafka")
            .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", 250).load()
            .writeStream.foreachBatch(lambda df, _: seen.extend(
                r.value for r in df.select("value").collect()))
            .option("checkpointLocation", str(tmp_path / "cp")))

    start()
    assert sorted(seen) == sorted(first)
    seen.clear()
    second = produce(spark_cluster, topic, 400, start=600)
    start()
    assert sorted(seen) == sorted(second)


def _read_batches(out: Path) -> list[str]:
    return [line for f in sorted(out.glob("batch-*.txt")) for line in f.read_text().split()]


def driver_sigkilled_mid_batch(cluster, tmp_path: Path, patience: float = 240,
                               **driver) -> None:
    """The driver (its own process) is SIGKILLed mid-batch and started again from the
    checkpoints: every record is read once. It runs two queries over one topic, so one
    driver (and one kill) serves both restart scenarios:

    * into files, one per batch id, SIGKILLed in batch 2: the restarted driver replays
      batch 2, and every record is in the files once;
    * into a topic through the exactly-once sink, each micro-batch one transaction,
      SIGKILLed with batch 1's records written but not committed: the restarted driver
      aborts that open transaction (its ``init_transactions`` fences the old one) and
      replays batch 1; read_committed readers see every record once.

    300 records at the job's 100 per batch make batch 2 the first driver's last; the 50
    produced while no driver runs make one batch more after the replays (each batch a
    driver runs is CPU on a loaded machine, so no more than these).

    ``driver``: ``master``/``event_log`` for ``start_restart_job`` (test_standalone.py runs
    it on a Spark cluster); ``patience``: seconds a driver may take to start and reach the
    batches."""
    from stages.stage8_spark.test_sink import read_committed

    topic, sink = new_topic(cluster), new_topic(cluster)
    produced = [v.decode() for v in produce(cluster, topic, 300)]
    out = tmp_path / "out"
    checkpoint = tmp_path / "cp"
    sink_checkpoint = tmp_path / "cp-sink"
    job = start_restart_job(cluster, topic, checkpoint, out, stall=2, exactly_once=sink,
                            sink_stall=1, **driver)
    try:
        try:
            wait_until(lambda: ((out / "stalled").exists() and (out / "stalled-sink").exists())
                       or job.poll() is not None,
                       "the job to reach batch 2, and batch 1's transaction", timeout=patience)
        except AssertionError as timed_out:
            reached = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                             if p.parent.name in ("out", "offsets", "commits"))
            raise AssertionError(f"{timed_out}; written: {reached}") from None
        assert job.poll() is None, job.stdout.read()
        os.killpg(job.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        job.wait(30)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert not (out / "batch-2.txt").exists()
    assert (checkpoint / "offsets" / "2").exists() and not (checkpoint / "commits" / "2").exists()
    assert (sink_checkpoint / "offsets" / "1").exists()
    assert not (sink_checkpoint / "commits" / "1").exists()
    more = [v.decode() for v in produce(cluster, topic, 50, start=300)]
    job = start_restart_job(cluster, topic, checkpoint, out, exactly_once=sink, **driver)
    try:
        output, _ = job.communicate(timeout=patience + 60)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == 0, output[-3000:]
    got = _read_batches(out)
    assert sorted(got) == sorted(produced + more)  # every record, once
    committed = [v.decode() for v in read_committed(cluster, sink)]
    assert sorted(committed) == sorted(produced + more)  # once, the open transaction aborted


@pytest.mark.timeout(900)  # two Spark drivers, one after the other, on a loaded machine
def test_driver_sigkilled_mid_batch_resumes_every_record_once_in_files_and_exactly_once_sink(
        spark_cluster, tmp_path):
    driver_sigkilled_mid_batch(spark_cluster, tmp_path)


def leader_sigkilled_mid_query(spark, cluster, tmp_path: Path) -> None:
    """A streaming query reads on while the leader of partition 0 is SIGKILLed under a
    producer: every acknowledged record arrives, none twice."""
    topic = new_topic(cluster)
    seen: list[tuple[int, int, bytes]] = []
    query = (spark.readStream.format("simplekafka")
             .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.foreachBatch(lambda df, _: seen.extend(
                 (r.partition, r.offset, r.value)
                 for r in df.select("partition", "offset", "value").collect()))
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="1 second").start())
    acked: list[bytes] = []
    stop = threading.Event()

    def keep_producing():
        with Producer(cluster.bootstrap_servers, acks="all", linger_ms=2) as producer:
            i = 0
            while not stop.is_set():
                futures = [(b"r%d" % n, producer.send(topic, value=b"r%d" % n))
                           for n in range(i, i + 20)]
                i += 20
                for value, future in futures:
                    try:
                        future.result(timeout=60)
                        acked.append(value)
                    except Exception:  # not acknowledged: may or may not be in the log
                        pass
                time.sleep(0.05)

    producer = threading.Thread(target=keep_producing, daemon=True)
    producer.start()
    victim = None
    try:
        wait_until(lambda: len(seen) >= 200, "records flowing", timeout=120)
        victim = cluster.leader_of(topic, 0)
        cluster.kill(victim)
        wait_until(lambda: cluster.leader_of(topic, 0) not in (victim, -1, None),
                   "a new leader", timeout=60)
        time.sleep(3)
        stop.set()
        producer.join(120)
        wanted = set(acked)
        wait_until(lambda: wanted <= {v for _, _, v in seen}, "every acknowledged record",
                   timeout=120)
        assert query.isActive and query.exception() is None
    finally:
        stop.set()
        query.stop()
        if victim is not None:
            cluster.restart(victim)
    positions = [(p, o) for p, o, _ in seen]
    assert len(positions) == len(set(positions)), "a record was delivered twice"
    assert len(acked) > 200


def test_leader_sigkilled_while_the_query_runs(spark, spark_cluster, tmp_path):
    leader_sigkilled_mid_query(spark, spark_cluster, tmp_path)


def test_a_task_reads_on_through_a_leader_change_mid_range(spark_cluster):
    """The leader dies between two fetches of a range: refresh, retry, no gap, no repeat."""
    from simplekafka.client import KafkaClient
    from simplekafka.protocol.structs import TopicPartition
    from simplekafka.spark.fetching import RangeReader

    topic = new_topic(spark_cluster, partitions=1)
    produce(spark_cluster, topic, 3000)
    victim = spark_cluster.leader_of(topic, 0)
    offsets: list[int] = []
    try:
        with KafkaClient(spark_cluster.bootstrap_servers) as client:
            reader = RangeReader(client, TopicPartition(topic, 0), 0, 3000,
                                 partition_max_bytes=4096)  # many small fetches
            for columns in reader:
                offsets += [int(o) for o in columns.arrays["offset"]]
                if victim in spark_cluster.running_brokers():
                    spark_cluster.kill(victim)
    finally:
        spark_cluster.restart(victim)
    assert offsets == list(range(3000))
