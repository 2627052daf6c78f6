"""A streaming job run as its own driver process, so a test can SIGKILL it and start it again.

``python -m stages.stage8_spark.restart_job SERVERS TOPIC CHECKPOINT OUT [--stall-batch N]``
reads TOPIC from the earliest offset with the simplekafka source (100
records per micro-batch, trigger availableNow) and writes each micro-batch's
values to ``OUT/batch-<id>.txt``, replacing the file when a batch is replayed
(an idempotent sink keyed by batch id). With ``--stall-batch N`` it stops in
the middle of batch N (after touching ``OUT/stalled``) until it is killed.

With ``--exactly-once SINK`` the values go to the topic SINK through the
simplekafka sink in exactly-once mode instead (each micro-batch one
transaction); ``--stall-batch N`` then stops with batch N's transaction open
(the sink's SIMPLEKAFKA_SPARK_SINK_STALL hook).

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
    parser.add_argument("--master", default=None)
    parser.add_argument("--event-log", default=None)
    args = parser.parse_args()
    if args.exactly_once and args.stall_batch >= 0:
        os.environ["SIMPLEKAFKA_SPARK_SINK_STALL"] = f"{args.stall_batch}:{args.out / 'stalled'}"
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
    if args.exactly_once:
        writer = (stream.select("value").writeStream.format("simplekafka")
                  .option("kafka.bootstrap.servers", args.servers)
                  .option("topic", args.exactly_once).option("exactlyOnce", "true"))
    else:
        writer = stream.writeStream.foreachBatch(write_batch)
    query = (writer.option("checkpointLocation", args.checkpoint)
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
