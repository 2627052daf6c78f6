"""Stage 8: read and write SimpleKafka topics from PySpark, as Spark's Kafka source does.

A PySpark 4.3 Python data source (no JVM jar) with the options, schema and
sink columns of Spark's built-in Kafka source, so that moving a pipeline to
``format("kafka")`` on a real Kafka cluster is a one-word change.

Usage::

    import simplekafka.spark
    simplekafka.spark.register(spark)          # format name "simplekafka"

    events = (spark.readStream.format("simplekafka")
              .option("kafka.bootstrap.servers", "127.0.0.1:9092,127.0.0.1:9093")
              .option("subscribe", "events")
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 100_000)
              .load())
    counts = events.groupBy("partition").count()

    (alerts.selectExpr("CAST(user AS STRING) AS key", "to_json(struct(*)) AS value")
           .writeStream.format("simplekafka")
           .option("kafka.bootstrap.servers", servers)
           .option("topic", "fraud-alerts")
           .option("checkpointLocation", "/tmp/alerts-checkpoint")
           .start())

Spark also finds the format without ``register``: PySpark imports every
top-level module named ``pyspark_*`` and registers its ``DefaultSource``, and
the top-level module ``pyspark_simplekafka`` is one (installed with the
package). ``register`` is still the way to get one-line option errors.

A batch read is ``spark.read.format("simplekafka")`` with the same options and
``endingOffsets``; a batch write is ``df.write.format("simplekafka")...save()``.

Read options (names as Spark's Kafka source; Spark lowercases them)
-------------------------------------------------------------------

``kafka.bootstrap.servers``
    required; ``host:port`` list.
``subscribe`` / ``subscribePattern`` / ``assign``
    exactly one: a comma list of topics, a regex (topics created later that
    match are picked up between micro-batches, as are new partitions), or
    JSON ``{"topic": [0, 1]}``.
``startingOffsets``
    ``earliest``, ``latest`` (streaming default) or JSON
    ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest, -1 latest; partitions left
    out start at the earliest offset). Only used when the query starts without
    a checkpoint: after that the checkpoint decides.
``endingOffsets``
    batch reads only: ``latest`` (default) or JSON as above (-1 latest).
``maxOffsetsPerTrigger``
    streaming only: at most about this many records per micro-batch, split
    across partitions by backlog as Spark does; honoured by
    ``trigger(availableNow=True)`` too.
``minPartitions``
    split big partition ranges so a batch has at least this many tasks.
``failOnDataLoss``
    ``true`` (default): fail with ``DataLossError`` naming the partition and
    offsets when retention removed records the query still needs; ``false``:
    log a warning and go on from the oldest record there is.
``includeHeaders``
    ``true`` adds the ``headers`` column.
``kafka.group.id``
    optional, beyond Spark: after every micro-batch the query's progress is
    committed as this consumer group's offsets, so
    ``simplekafka groups describe GROUP`` shows the job's lag. Progress
    reporting only: the checkpoint, never the group, decides where a query
    resumes.
``kafka.*``
    client settings: ``fetch.max.bytes`` (default 64 MiB),
    ``max.partition.fetch.bytes`` (4 MiB), ``fetch.max.wait.ms`` (200),
    ``request.timeout.ms`` (30000), ``read.timeout.ms`` (120000: how long a
    task keeps retrying a partition without a leader), ``check.crcs``,
    ``client.id``.

A missing, malformed or contradictory option fails ``load()`` (or ``start()``
for streaming-only checks) with :class:`SparkOptionError`, whose message is
one line naming the option.

Schema (Spark's Kafka source)
-----------------------------

``key`` binary, ``value`` binary, ``topic`` string, ``partition`` int,
``offset`` long, ``timestamp`` timestamp, ``timestampType`` int (0 create
time, 1 log append time), and with ``includeHeaders`` ``headers``
array<struct<key string, value binary>>.

Sink
----

Columns: ``value`` (required, string or binary), ``key`` (string or binary),
``topic`` (string; else the ``topic`` option), ``partition`` (int),
``headers`` (array<struct<key string, value binary>>). Options:
``kafka.bootstrap.servers``, ``topic``, ``kafka.*`` for the producer
(``acks`` default ``all``, ``linger.ms``, ``batch.size``,
``compression.type``, ``enable.idempotence``, ...), ``dedup`` (default true)
and ``dedup.scanRecords`` (default 10000).

What is guaranteed
------------------

* Offsets live in Spark's checkpoint. A restarted query (also after the
  driver was killed) resumes exactly after the last committed batch; a batch
  that was planned but not committed is replayed with the very same offset
  ranges. Reads stop at the high watermark (acknowledged records only) and
  go to each partition's current leader; a leader that dies mid-batch costs a
  metadata refresh and a retry, not a lost or repeated record.
* With a replayable, deterministic pipeline and an idempotent sink (such as
  ``foreachBatch`` keyed by batch id, or this sink), every record is processed
  exactly once.
* The sink writes at least once; in streaming, a replayed batch skips the
  records its earlier attempt already wrote (each record carries the header
  ``simplekafka.spark.batch``). It does not deduplicate records written by
  other writers, nor across different queries, and a batch write
  (``df.write``) has no replay to deduplicate.
* ``read()`` yields Arrow record batches decoded column-wise from the fetched
  Kafka record batches (:mod:`simplekafka.spark.arrow_records`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from simplekafka.spark.fetching import DataLossError
from simplekafka.spark.options import SparkOptionError, parse_sink_options, parse_source_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "simplekafka"

__all__ = [
    "FORMAT",
    "DataLossError",
    "SimpleKafkaDataSource",
    "SparkOptionError",
    "kafka_schema",
    "register",
]


def kafka_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema (with ``headers`` when asked for)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


class SimpleKafkaDataSource(DataSource):
    """``format("simplekafka")``: the source (batch and streaming) and the sink."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        # Spark calls this at load(): the one place to reject bad options early.
        options = parse_source_options(self.options, streaming=None)
        return kafka_schema(options.include_headers)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from simplekafka.spark.source import KafkaStreamReader

        # Raising here would hide the message behind a bug of PySpark 4.3's runner
        # (an UnboundLocalError): the reader raises it at its first call instead.
        try:
            return KafkaStreamReader(parse_source_options(self.options, streaming=True))
        except SparkOptionError as exc:
            return KafkaStreamReader(None, error=exc)

    def reader(self, schema: StructType) -> DataSourceReader:
        from simplekafka.spark.source import KafkaBatchReader

        return KafkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from simplekafka.spark.sink import KafkaStreamWriter, check_sink_schema

        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return KafkaStreamWriter(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from simplekafka.spark.sink import KafkaBatchWriter, check_sink_schema

        options = parse_sink_options(self.options)
        if options.exactly_once:
            raise SparkOptionError("option exactlyOnce is for streaming writes (writeStream); "
                                   "a batch write has no batch id to make a transaction of")
        check_sink_schema(schema, options)
        return KafkaBatchWriter(options)


HIDE_TRACEBACK = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"


def register(spark: SparkSession, short_errors: bool = True) -> None:
    """Register the ``simplekafka`` format with a SparkSession (idempotent).

    Spark reports an exception raised in a data source's Python worker with
    the worker's whole traceback. With ``short_errors`` (the default),
    ``register`` turns on Spark's
    ``spark.sql.execution.pyspark.udf.hideTraceback.enabled``, so a bad
    option fails ``load()`` with one line, such as ``[PYTHON_DATA_SOURCE_ERROR]
    Failed to create Python data source instance: simplekafka.spark.options.
    SparkOptionError: option kafka.bootstrap.servers is required``. The
    setting also shortens Python UDF errors in that session: pass
    ``short_errors=False`` to keep tracebacks.
    """
    spark.dataSource.register(SimpleKafkaDataSource)
    if short_errors:
        spark.conf.set(HIDE_TRACEBACK, "true")
