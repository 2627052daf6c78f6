"""A streaming job run as its own driver process, so a test can SIGKILL it and start it again.

``python -m stages.stage8_spark.restart_job SERVERS TOPIC CHECKPOINT OUT [--stall-batch N]``
reads TOPIC from the earliest offset with the simplekafka source (100
records per micro-batch, trigger availableNow) and writes each micro-batch's
values to ``OUT/batch-<id>.txt``, replacing the file when a batch is replayed
(an idempotent sink keyed by batch id). With ``--stall-batch N`` it stops in
the middle of batch N (after touching ``OUT/stalled``) until it is killed.

With ``--exactly-once SINK`` a second query runs beside it in the same driver:
it reads TOPIC too and writes the values to the topic SINK through the
simplekafka sink in exactly-once mode (each micro-batch one transaction;
checkpoint ``CHECKPOINT-sink``); ``--sink-stall-batch M`` stops it with batch
M's transaction open (the sink's SIMPLEKAFKA_SPARK_SINK_STALL hook, touching
``OUT/stalled-sink``). One driver, SIGKILLed once, then serves both restart
scenarios: a driver start (and, on a cluster, its executors) costs minutes on
a loaded machine.

``--master URL`` runs the executors on that Spark cluster rather than
``local[2]``; ``--event-log DIR`` keeps Spark's event log there (which
executor ran each task).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("servers")
    parser.add_argument("topic")
    parser.add_argument("checkpoint")
    parser.add_argument("out", type=Path)
    parser.add_argument("--stall-batch", type=int, default=-1)
    parser.add_argument("--exactly-once", metavar="SINK")
    parser.add_argument("--sink-stall-batch", type=int, default=-1)
    parser.add_argument("--master", default=None)
    parser.add_argument("--event-log", default=None)
    args = parser.parse_args()
    if args.exactly_once and args.sink_stall_batch >= 0:
        os.environ["SIMPLEKAFKA_SPARK_SINK_STALL"] = (f"{args.sink_stall_batch}:"
                                                      f"{args.out / 'stalled-sink'}")
    from simplekafka.spark.session import local_spark

    spark = local_spark("simplekafka-restart-job", master=args.master, event_log=args.event_log)
    args.out.mkdir(parents=True, exist_ok=True)

    def write_batch(df, batch_id: int) -> None:
        values = [row.value.decode() for row in df.select("value").collect()]
        if batch_id == args.stall_batch and not (args.out / "stalled").exists():
            (args.out / "stalled").touch()
            time.sleep(600)  # killed here, in the middle of the batch
        tmp = args.out / f".batch-{batch_id}.tmp"
        tmp.write_text("".join(v + "\n" for v in values))
        tmp.replace(args.out / f"batch-{batch_id}.txt")

    stream = (spark.readStream.format("simplekafka")
              .option("kafka.bootstrap.servers", args.servers)
              .option("subscribe", args.topic)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "100")
              .load())
    queries = [stream.writeStream.foreachBatch(write_batch)
               .option("checkpointLocation", args.checkpoint)
               .trigger(availableNow=True).start()]
    if args.exactly_once:
        # Spark gives a query's Python source runner 10 s to connect back to the JVM: two
        # starting at once on a loaded machine missed that, so the second starts once the
        # first has planned a batch.
        deadline = time.monotonic() + 600
        while queries[0].lastProgress is None and queries[0].isActive \
                and not (args.out / "stalled").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        queries.append(stream.select("value").writeStream.format("simplekafka")
                       .option("kafka.bootstrap.servers", args.servers)
                       .option("topic", args.exactly_once).option("exactlyOnce", "true")
                       .option("checkpointLocation", f"{args.checkpoint}-sink")
                       .trigger(availableNow=True).start())
    while any(query.isActive for query in queries):
        spark.streams.awaitAnyTermination()  # raises the first query's failure
        spark.streams.resetTerminated()
    for query in queries:
        query.awaitTermination()
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
