"""The four example pipelines: streaming queries over SimpleKafka topics on real Spark.

Each pipeline is a transformation from the Kafka-shaped rows the source gives
(``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``, ...)
to its result, plus the output mode that suits it. ``read_topic`` builds the
source, and its ``source_format`` is the one word to change for Spark's own
Kafka source (``"kafka"``) on a real Kafka cluster.

Event time comes from the JSON payload (``event_time``), not from the record
timestamp: the time a thing happened, not the time it reached the broker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from stages.stage8_spark import events

#: The format name ``simplekafka.spark.register`` gives our source and sink.
SOURCE_FORMAT = "simplekafka"

PAGE_VIEW = "user STRING, url STRING, referrer STRING, event_time TIMESTAMP"
SENSOR_READING = "sensor STRING, temperature DOUBLE, unit STRING, event_time TIMESTAMP"
CLICK = "user STRING, element STRING, url STRING, event_time TIMESTAMP"
#: The fraud check needs no event time arithmetic: the time passes through as written.
TRANSACTION = ("transaction_id STRING, user STRING, amount DOUBLE, currency STRING, "
               "merchant STRING, event_time STRING")


@dataclass(frozen=True)
class Pipeline:
    """One example: its input topic, how it transforms rows, how results are written."""

    name: str
    topic: str
    summary: str
    output_mode: str
    transform: Callable[[Any], Any]
    #: How far behind the newest event time the watermark trails (None: stateless).
    watermark: timedelta | None = None
    #: Extra options for the source (none of the examples needs any).
    options: dict[str, str] = field(default_factory=dict)


def _parse(raw: Any, schema: str) -> Any:
    """The JSON in ``value`` as columns (a record that is not JSON gives nulls and is dropped)."""
    from pyspark.sql import functions as F

    parsed = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("event"))
    return parsed.select("event.*").where(F.col("event_time").isNotNull())


def _delay(delta: timedelta) -> str:
    return f"{int(delta.total_seconds())} seconds"


PRODUCT_VIEWS_WATERMARK = timedelta(minutes=2)
SENSOR_WATERMARK = timedelta(minutes=2)
SESSION_WATERMARK = timedelta(minutes=2)
SESSION_GAP = timedelta(minutes=5)


def product_views_per_minute(raw: Any) -> Any:
    """Views of ``/product/...`` pages per minute of event time (tumbling window)."""
    from pyspark.sql import functions as F

    views = _parse(raw, PAGE_VIEW).where(F.col("url").startswith("/product/"))
    counted = (views.withWatermark("event_time", _delay(PRODUCT_VIEWS_WATERMARK))
               .groupBy(F.window("event_time", "1 minute"))
               .agg(F.count("*").alias("views")))
    return counted.select(F.col("window.start").alias("window_start"),
                          F.col("window.end").alias("window_end"), "views")


def sensor_moving_average(raw: Any) -> Any:
    """Each sensor's mean temperature over 5 minutes, a new window every minute (sliding)."""
    from pyspark.sql import functions as F

    readings = _parse(raw, SENSOR_READING)
    averaged = (readings.withWatermark("event_time", _delay(SENSOR_WATERMARK))
                .groupBy("sensor", F.window("event_time", "5 minutes", "1 minute"))
                .agg(F.avg("temperature").alias("avg_temperature"),
                     F.count("*").alias("readings")))
    return averaged.select("sensor", F.col("window.start").alias("window_start"),
                           F.col("window.end").alias("window_end"), "avg_temperature", "readings")


def user_sessions(raw: Any) -> Any:
    """Each user's sessions: clicks until 5 minutes pass without one (session_window)."""
    from pyspark.sql import functions as F

    clicks = _parse(raw, CLICK)
    sessions = (clicks.withWatermark("event_time", _delay(SESSION_WATERMARK))
                .groupBy("user", F.session_window("event_time", _delay(SESSION_GAP)))
                .agg(F.count("*").alias("clicks"), F.max("event_time").alias("last_click")))
    return sessions.select("user", F.col("session_window.start").alias("session_start"),
                           F.col("session_window.end").alias("session_end"), "clicks",
                           "last_click")


def fraud_alerts(raw: Any) -> Any:
    """Payments over 10,000 as alert records (key: the user; value: JSON) for ``fraud-alerts``."""
    from pyspark.sql import functions as F

    payments = _parse(raw, TRANSACTION)
    flagged = payments.where(F.col("amount") > events.FRAUD_THRESHOLD)
    alert = F.struct(
        "transaction_id", "user", "amount", "currency", "merchant", "event_time",
        F.lit(f"amount over {events.FRAUD_THRESHOLD:,}").alias("reason"),
    )
    return flagged.select(F.col("user").alias("key"), F.to_json(alert).alias("value"))


PIPELINES: dict[str, Pipeline] = {
    pipeline.name: pipeline for pipeline in (
        Pipeline("product-views", events.PAGE_VIEWS,
                 "page views per minute of /product pages (tumbling window, watermark 2 min)",
                 "update", product_views_per_minute, PRODUCT_VIEWS_WATERMARK),
        Pipeline("sensor-averages", events.SENSOR_READINGS,
                 "5-minute moving average of temperatures, sliding every minute "
                 "(watermark 2 min)", "update", sensor_moving_average, SENSOR_WATERMARK),
        Pipeline("sessions", events.USER_CLICKS,
                 "user sessions closed by 5 minutes without a click (session_window, "
                 "watermark 2 min)", "append", user_sessions, SESSION_WATERMARK),
        Pipeline("fraud-alerts", events.TRANSACTIONS,
                 f"payments over {events.FRAUD_THRESHOLD:,} written to the "
                 f"{events.FRAUD_ALERTS!r} topic through the simplekafka sink",
                 "append", fraud_alerts),
    )
}


def read_topic(spark: Any, bootstrap_servers: str, topic: str,
               starting_offsets: str | dict = "earliest", source_format: str = SOURCE_FORMAT,
               **options: str) -> Any:
    """A streaming DataFrame over ``topic``: Spark's Kafka source options, our source.

    ``starting_offsets`` is ``earliest``, ``latest`` or ``{"topic": {"0": offset}}``.
    """
    if isinstance(starting_offsets, dict):
        starting_offsets = json.dumps(starting_offsets)
    reader = (spark.readStream.format(source_format)
              .option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", topic)
              .option("startingOffsets", starting_offsets))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


@dataclass
class RunResult:
    """What one ``availableNow`` run produced: result rows per batch and Spark's progress."""

    rows: list[dict] = field(default_factory=list)
    progress: list[dict] = field(default_factory=list)

    @property
    def input_rows(self) -> int:
        return sum(p["numInputRows"] for p in self.progress)

    @property
    def dropped_by_watermark(self) -> int:
        """Rows the stateful operator dropped as too late (Spark's own count)."""
        return sum(op.get("numRowsDroppedByWatermark", 0)
                   for p in self.progress for op in p.get("stateOperators", []))

    @property
    def watermark(self) -> str | None:
        """The watermark after the last batch (ISO-8601, as Spark reports it)."""
        marks = [p.get("eventTime", {}).get("watermark") for p in self.progress]
        marks = [mark for mark in marks if mark]
        return marks[-1] if marks else None


def run_available(pipeline: Pipeline, spark: Any, bootstrap_servers: str, checkpoint: Path,
                  starting_offsets: str | dict = "earliest",
                  source_format: str = SOURCE_FORMAT, timeout: float = 300.0) -> RunResult:
    """Run ``pipeline`` over everything its topic holds now, then stop (trigger availableNow).

    Restarted with the same ``checkpoint`` it carries on where it stopped,
    with its watermark and state. Aggregates are collected per batch on the
    driver; fraud alerts go to the ``fraud-alerts`` topic through the sink.
    """
    source = read_topic(spark, bootstrap_servers, pipeline.topic, starting_offsets,
                        source_format, **pipeline.options)
    result = RunResult()
    writer = (pipeline.transform(source).writeStream
              .outputMode(pipeline.output_mode)
              .option("checkpointLocation", str(checkpoint))
              .trigger(availableNow=True))
    if pipeline.name == "fraud-alerts":
        writer = (writer.format(source_format)
                  .option("kafka.bootstrap.servers", bootstrap_servers)
                  .option("topic", events.FRAUD_ALERTS))
    else:
        def collect(batch: Any, batch_id: int) -> None:
            result.rows.extend(dict(row.asDict(), batch=batch_id) for row in batch.collect())

        writer = writer.foreachBatch(collect)
    query = writer.start()
    try:
        if not query.awaitTermination(timeout):
            raise TimeoutError(f"{pipeline.name}: the query did not finish in {timeout:.0f} s")
    finally:
        if query.isActive:
            query.stop()
    result.progress = [json.loads(p.json) if hasattr(p, "json") else dict(p)
                       for p in query.recentProgress]
    return result
