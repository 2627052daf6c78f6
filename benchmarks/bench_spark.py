"""The Spark source and sink on real Spark (local[2]) and one broker: issue 18's figures.

Prints figures, never passes or fails; every line carries the load average.

* the aim: a 10-second tumbling-window count by key on the record timestamp,
  5-second watermark, update mode, noop sink, ``maxOffsetsPerTrigger``
  500,000, trigger availableNow, warm JVM, over a 2-partition topic of
  2,000,000 small records: the median of Spark's own progress reports'
  ``processedRowsPerSecond`` (aim: >= 400,000 events/s);
* the source alone into the noop sink;
* the tuple path (records decoded one by one, rows as tuples) against the
  Arrow path (columns, :mod:`simplekafka.spark.arrow_records`);
* end-to-end latency from produce to sink with a 0-second trigger;
* time to recover after the driver is SIGKILLed mid-batch;
* the JVM's and the Python processes' resident memory;
* with ``--standalone`` (or ``--master URL``), the window count and the
  source alone again on a Spark standalone cluster of two workers with one
  core each (``SparkStandalone``, as ``simplekafka spark up`` starts it), in
  the same run as ``local[2]``, with the tasks each executor ran.

    .venv/bin/python benchmarks/bench_spark.py [--records 2000000] [--tiny]
        [--standalone | --master spark://HOST:PORT]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simplekafka.admin import Admin  # noqa: E402
from simplekafka.cluster import LocalCluster  # noqa: E402
from simplekafka.producer import Producer  # noqa: E402


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def report(figure: str) -> None:
    print(f"{figure}  [{load()}]", flush=True)


def fill(bootstrap: str, topic: str, count: int) -> float:
    """``count`` small records (4-byte keys of 100 kinds, 10-byte values); records/s."""
    start = time.perf_counter()
    with Producer(bootstrap, acks=1, linger_ms=20, batch_size=256 * 1024,
                  buffer_memory=64 * 1024 * 1024) as producer:
        send = producer.send
        for i in range(count):
            send(topic, b"%010d" % i, b"k%03d" % (i % 100))
        producer.flush(600)
    return count / (time.perf_counter() - start)


def spark_session(master: str | None = None, event_log: Path | None = None):
    from simplekafka.spark.session import local_spark

    return local_spark("bench_spark", master=master, event_log=event_log)


def rates_of(query) -> list[float]:
    return [p["processedRowsPerSecond"] for p in query.recentProgress
            if p.get("numInputRows") and p.get("processedRowsPerSecond")]


def run_available_now(df, checkpoint: Path, aggregate: bool) -> list[float]:
    from pyspark.sql import functions as F

    if aggregate:
        df = (df.withWatermark("timestamp", "5 seconds")
              .groupBy(F.window("timestamp", "10 seconds"), "key").count())
    query = (df.writeStream.format("noop").outputMode("update" if aggregate else "append")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return rates_of(query)


def stream(spark, bootstrap: str, topic: str, per_trigger: int, name: str = "simplekafka"):
    return (spark.readStream.format(name).option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", per_trigger).load())


def describe(rates: list[float]) -> str:
    if not rates:
        return "no batches"
    return (f"median {statistics.median(rates):,.0f} events/s over {len(rates)} batches "
            f"(min {min(rates):,.0f}, max {max(rates):,.0f})")


def register_tuple_source(spark) -> str:
    """A variant of the source whose read() decodes record by record and yields tuples."""
    from simplekafka.spark import SimpleKafkaDataSource
    from simplekafka.spark.source import KafkaStreamReader

    def raw_batches(client, topic, index, start, end):
        """Fetch ``[start, end)`` and decode record by record (protocol.records)."""
        from simplekafka.protocol.api import ApiKey
        from simplekafka.protocol.records import parse_batches
        from simplekafka.protocol.structs import TopicPartition
        from simplekafka.spark.fetching import fetch_body

        offset = start
        while offset < end:
            leader = client.leader_for(topic, index)
            answer = client.request(leader, ApiKey.FETCH, fetch_body(
                TopicPartition(topic, index), offset, 100, 64 << 20, 16 << 20))
            found = parse_batches(answer.responses[0].partitions[0].records or b"")
            if not found:
                return
            yield from found
            offset = found[-1].next_offset

    class TupleReader(KafkaStreamReader):
        def read(self, partition):
            from simplekafka.spark.source import shared_client

            client = shared_client(self.options)
            utc = timezone.utc
            topic, index = partition.topic, partition.partition
            start, end = partition.start, partition.end
            for batch in raw_batches(client, topic, index, start, end):
                ts_type = batch.timestamp_type
                for r in batch.records:
                    if start <= r.offset < end:
                        yield (r.key, r.value, topic, index, r.offset,
                               datetime.fromtimestamp(r.timestamp / 1000, utc), ts_type)

    class TupleSource(SimpleKafkaDataSource):
        @classmethod
        def name(cls) -> str:
            return "simplekafka_tuples"

        def streamReader(self, schema):
            from simplekafka.spark.options import parse_source_options

            return TupleReader(parse_source_options(self.options, streaming=True))

    spark.dataSource.register(TupleSource)
    return TupleSource.name()


def latency(spark, bootstrap: str, topic: str, seconds: float, rate: int, work: Path) -> str:
    """Produce ``rate`` records/s for ``seconds``; sink-side delay after each record's timestamp."""
    delays: list[float] = []

    def sink(df, _batch_id):
        arrived = time.time()
        delays.extend(arrived - r.timestamp.timestamp() for r in df.select("timestamp").collect())

    query = (spark.readStream.format("simplekafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).load()
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(work / "lat"))
             .trigger(processingTime="0 seconds").start())
    try:
        deadline = time.time() + 120
        while query.lastProgress is None and time.time() < deadline:
            time.sleep(0.2)
        with Producer(bootstrap, acks=1, linger_ms=0) as producer:
            end = time.time() + seconds
            sent = 0
            while time.time() < end:
                producer.send(topic, b"x" * 10, b"k001")
                sent += 1
                time.sleep(max(0.0, 1 / rate - 0.00005))
            producer.flush(60)
        deadline = time.time() + 60
        while len(delays) < sent and time.time() < deadline:
            time.sleep(0.2)
    finally:
        query.stop()
    if not delays:
        return "no records arrived"
    ordered = sorted(delays)
    return (f"{len(delays)} records at ~{rate}/s: median {statistics.median(ordered) * 1000:.0f} "
            f"ms, p99 {ordered[int(len(ordered) * 0.99) - 1] * 1000:.0f} ms, "
            f"max {ordered[-1] * 1000:.0f} ms")


def recovery(bootstrap: str, topic: str, work: Path) -> str:
    """SIGKILL a driver mid-batch; seconds from restarting it to the replayed batch done."""
    out, checkpoint = work / "rec-out", work / "rec-cp"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "stages.stage8_spark.restart_job", bootstrap, topic,
               str(checkpoint), str(out)]
    job = subprocess.Popen([*command, "--stall-batch", "1"], cwd=ROOT, env=env,
                           start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while not (out / "stalled").exists() and time.time() < deadline and job.poll() is None:
            time.sleep(0.2)
        if not (out / "stalled").exists():
            return "the job never reached batch 1"
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
        start = time.perf_counter()
        job = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        while not (out / "batch-1.txt").exists() and time.time() < deadline:
            time.sleep(0.1)
        took = time.perf_counter() - start
        return (f"{took:.1f} s from the restart to the replayed batch done "
                "(a cold JVM start included)")
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)


def memory() -> str:
    """Resident memory of this driver, its JVM and the Python workers (from /proc)."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry)
        children.setdefault(int(fields["PPid"].strip()), []).append(pid)
        names[pid] = fields["Name"].strip()
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) // 1024
    family, todo = [], [me]
    while todo:
        pid = todo.pop()
        family.append(pid)
        todo += children.get(pid, [])
    jvm = sum(rss[p] for p in family if names.get(p) == "java")
    workers = [rss[p] for p in family if p != me and names.get(p, "").startswith("python")]
    return (f"JVM {jvm} MB; driver Python {rss[me]} MB; {len(workers)} Python workers "
            f"{sum(workers)} MB")


#: --tiny's records and maxOffsetsPerTrigger (the suite runs the standalone part so too).
TINY_RECORDS, TINY_PER_TRIGGER = 20_000, 5_000


def on_a_cluster(master: str | None, bootstrap: str, per_trigger: int, work: Path,
                 topic: str = "events", session=None, event_log: Path | None = None) -> None:
    """The window count and the source alone on a standalone cluster (two workers if ours).

    stages/stage8_spark/test_standalone.py runs it against that module's cluster, in
    the module's session on it (``session``, whose Spark event log is ``event_log``):
    each application on the cluster starts its own executors, so one application
    fewer is two executor JVMs fewer. Without ``session``, it runs in one of its own.
    """
    from simplekafka.cluster.spark_standalone import SparkStandalone
    from simplekafka.spark.session import tasks_by_executor

    started = None
    if master is None:
        started = SparkStandalone(workers=2, base_dir=work / "spark").start()
        master = started.master_url
    try:
        events = event_log if session is not None and event_log is not None \
            else work / "events"
        spark = session if session is not None else spark_session(master, events)
        where = f"standalone {master}"
        run_available_now(stream(spark, bootstrap, topic, per_trigger), work / "swarm",
                          aggregate=True)
        report(f"window count by key, Arrow, {where}: " + describe(run_available_now(
            stream(spark, bootstrap, topic, per_trigger), work / "sagg", aggregate=True)))
        report(f"source alone into noop, Arrow, {where}: " + describe(run_available_now(
            stream(spark, bootstrap, topic, per_trigger), work / "salone", aggregate=False)))
        if session is None:
            spark.stop()  # its event log is complete once the application ends
        tasks = next(iter(tasks_by_executor(events).values()), {})
        report(f"tasks per executor (id@worker) on {where}: "
               + ", ".join(f"{name} {count}" for name, count in sorted(tasks.items())))
    finally:
        if started is not None:
            started.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--per-trigger", type=int, default=500_000)
    parser.add_argument("--tiny", action="store_true", help="seconds, not minutes (for tests)")
    parser.add_argument("--recovery-only", action="store_true",
                        help="only the driver SIGKILL recovery figure")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--standalone", action="store_true",
                         help="also on a Spark standalone cluster of two workers it starts")
    cluster.add_argument("--master", default=None, metavar="URL",
                         help="also on this Spark cluster (spark://HOST:PORT)")
    args = parser.parse_args()
    if args.tiny:
        args.records, args.per_trigger = TINY_RECORDS, TINY_PER_TRIGGER
    print(f"bench_spark{' (tiny)' if args.tiny else ''}: {args.records:,} records, "
          f"maxOffsetsPerTrigger {args.per_trigger:,}; {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        work = Path(tmp)
        with LocalCluster(brokers=1, base_dir=work / "cluster") as cluster:
            bootstrap = cluster.bootstrap_servers
            with Admin(bootstrap) as admin:
                for name, parts in (("events", 2), ("latency", 1), ("recovery", 2)):
                    admin.create_topic(name, parts, 1)
            rate = 0.0 if args.recovery_only else fill(bootstrap, "events", args.records)
            if args.recovery_only:
                fill(bootstrap, "recovery", 1_000)
                report("driver SIGKILL recovery: " + recovery(bootstrap, "recovery", work))
                return
            report(f"produce {args.records:,} records: {rate:,.0f} records/s")
            if not args.tiny:
                fill(bootstrap, "recovery", 1_000)  # 100 records per batch in the job
            spark = spark_session()
            # Warm the JVM: the same query over the whole topic once.
            run_available_now(stream(spark, bootstrap, "events", args.per_trigger),
                              work / "warm", aggregate=True)
            report("window count by key (10 s tumbling, 5 s watermark, update, noop), Arrow: "
                   + describe(run_available_now(stream(spark, bootstrap, "events",
                                                       args.per_trigger),
                                                work / "agg", aggregate=True)))
            report("source alone into noop, Arrow: " + describe(run_available_now(
                stream(spark, bootstrap, "events", args.per_trigger), work / "alone",
                aggregate=False)))
            tuples = register_tuple_source(spark)
            report("source alone into noop, tuples: " + describe(run_available_now(
                stream(spark, bootstrap, "events", args.per_trigger, tuples), work / "tuples",
                aggregate=False)))
            report("window count by key, tuples: " + describe(run_available_now(
                stream(spark, bootstrap, "events", args.per_trigger, tuples), work / "tagg",
                aggregate=True)))
            report("memory after the runs: " + memory())
            report("end-to-end latency, produce -> foreachBatch sink, 0 s trigger: " + latency(
                spark, bootstrap, "latency", 3 if args.tiny else 15, 200, work))
            spark.stop()
            if args.standalone or args.master:
                on_a_cluster(args.master, bootstrap, args.per_trigger, work)
            if args.tiny:  # two cold JVM starts: minutes, not seconds
                report("driver SIGKILL recovery: not measured in --tiny mode")
            else:
                report("driver SIGKILL recovery: " + recovery(bootstrap, "recovery", work))


if __name__ == "__main__":
    main()
