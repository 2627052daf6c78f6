"""``run_cluster.sh``: the three-broker failover demo, ending with the Spark consumer.

The failover walk-through is ``simplekafka.cluster.demo``; this module adds
its last step, which only the Spark layer can: on the cluster that just
survived the failover, a streaming query (``format("simplekafka")``,
``trigger(availableNow=True)``) counts the demo topic's records per partition
and 1-second window of their timestamp behind a 1-second watermark, prints them,
and checks that every record in the topic was counted once. ``--no-spark``
skips it; ``--spark-master URL`` runs it on a Spark cluster (``simplekafka spark
up``) instead of ``local[2]``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from simplekafka.cluster import demo as cluster_demo
from simplekafka.cluster.local import LocalCluster

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

WINDOW = "1 second"
WATERMARK = "1 second"


def topic_size(cluster: LocalCluster, topic: str) -> dict[int, int]:
    """Records per partition (end offset minus start offset)."""
    from simplekafka.consumer import Consumer
    from simplekafka.protocol.structs import TopicPartition

    with Consumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for(topic)]
        starts = consumer.beginning_offsets(tps)
        return {tp.partition: end - starts[tp]
                for tp, end in consumer.end_offsets(tps).items()}


def windowed_counts(spark: SparkSession, bootstrap_servers: str, topic: str,
                    checkpoint: Path) -> tuple[dict, StreamingQuery]:
    """Records per (window of record time, partition), over everything the topic holds now."""
    from pyspark.sql import functions as F

    records = (spark.readStream.format("simplekafka")
               .option("kafka.bootstrap.servers", bootstrap_servers)
               .option("subscribe", topic)
               .option("startingOffsets", "earliest")
               .load())
    per_window = (records.withWatermark("timestamp", WATERMARK)
                  .groupBy(F.window("timestamp", WINDOW), "partition")
                  .agg(F.count("*").alias("records"))
                  .select(F.date_format("window.start", "HH:mm:ss").alias("start"),
                          "partition", "records"))
    counts: dict[tuple[str, int], int] = {}

    def keep(batch: DataFrame, _batch_id: int) -> None:  # update mode: changed windows only
        for row in batch.collect():
            counts[(row["start"], row["partition"])] = row["records"]

    query = (per_window.writeStream.outputMode("update").foreachBatch(keep)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    if not query.awaitTermination(300):
        query.stop()
        raise TimeoutError("the Spark query did not finish within 300 s")
    return counts, query


def spark_consumer(cluster: LocalCluster, step: cluster_demo.Narrator,
                   master: str | None = None) -> bool:
    """The demo's last step; True when Spark counted every record of the topic once."""
    from simplekafka.spark.session import local_spark

    topic = cluster_demo.TOPIC
    step(f"the Spark consumer: {topic!r} records per partition and {WINDOW} window of their "
         f"timestamp (PySpark {master or 'local[2]'}, format 'simplekafka', "
         f"watermark {WATERMARK})")
    say = step.say
    started = time.monotonic()
    spark = local_spark("run-cluster-demo", master=master)
    try:
        say(f"Spark {spark.version} started in {time.monotonic() - started:.0f} s")
        counts, query = windowed_counts(spark, cluster.bootstrap_servers, topic,
                                        cluster.base_dir / "spark-checkpoint")
        batches = len(query.recentProgress)
        read = sum(p.numInputRows for p in query.recentProgress)
        sizes = topic_size(cluster, topic)
        partitions = sorted(sizes)
        say("second (UTC)  " + "".join(f"{f'p{p}':>6}" for p in partitions) + "   total")
        for second in sorted({start for start, _ in counts}):
            row = [counts.get((second, p), 0) for p in partitions]
            say(f"{second:<12}  " + "".join(f"{n:6d}" for n in row) + f"  {sum(row):6d}")
        total = sum(counts.values())
        say(f"{batches} micro-batches read {read} records; the windows hold {total}; "
            f"the topic holds {sum(sizes.values())} "
            f"({' + '.join(str(sizes[p]) for p in sorted(sizes))} per partition)")
        ok = total == read == sum(sizes.values())
        say("Spark counted every record once" if ok else "SPARK'S COUNT DIFFERS FROM THE TOPIC")
        return ok
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = cluster_demo.build_parser()
    parser.add_argument("--no-spark", action="store_true",
                        help="end after the failover, without the Spark consumer step")
    parser.add_argument("--spark-master", type=_master, default=None, metavar="URL",
                        help="run the Spark step on this Spark cluster, spark://HOST:PORT "
                             "('simplekafka spark up' prints it; default local[2])")
    args = parser.parse_args(argv)
    step = None if args.no_spark else spark_consumer
    if step is not None and args.spark_master:
        step = functools.partial(spark_consumer, master=args.spark_master)
    return cluster_demo.main(argv, after_failover=step, parser=parser)


def _master(text: str) -> str:
    from simplekafka.spark.session import check_master_url

    try:
        return check_master_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


if __name__ == "__main__":
    sys.exit(main())
