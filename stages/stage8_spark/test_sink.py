"""The simplekafka sink on real Spark: what confluent-kafka reads back, and replays."""

from __future__ import annotations

import pytest

from stages.stage8_spark.helpers import new_topic, produce, wait_until

pytestmark = pytest.mark.integration


def confluent_read(cluster, topic: str, count: int, timeout: float = 60.0) -> list:
    """Every record of ``topic`` as confluent-kafka sees it: (key, value, headers)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": f"check-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    try:
        def enough():
            for message in consumer.consume(500, timeout=1.0):
                assert message.error() is None, message.error()
                got.append((message.key(), message.value(), message.headers() or []))
            return len(got) >= count

        wait_until(enough, f"{count} records in {topic}", timeout)
        for message in consumer.consume(500, timeout=2.0):  # and no more than that
            got.append((message.key(), message.value(), message.headers() or []))
    finally:
        consumer.close()
    return got


def test_batch_write_reads_back_byte_identical_with_keys_and_headers(spark, spark_cluster):
    topic = new_topic(spark_cluster)
    rows = [(bytes([i % 256, 0, 255]) + b"k", bytes(range(i % 50)) + b"\x00value",
             [("h1", b"\x01\x02"), ("trace", bytes([i % 256]))]) for i in range(300)]
    df = spark.createDataFrame(
        rows, "key binary, value binary, headers array<struct<key:string,value:binary>>")
    (df.write.format("simplekafka")
     .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
     .option("kafka.compression.type", "gzip")  # kafka.* reach our Producer
     .option("topic", topic).mode("append").save())
    got = confluent_read(spark_cluster, topic, len(rows))
    assert sorted(got) == sorted((k, v, h) for k, v, h in rows)
    # And our source decodes the compressed batches to the same bytes.
    back = (spark.read.format("simplekafka")
            .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
            .option("subscribe", topic).option("includeHeaders", "true").load().collect())
    assert sorted((r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in back) == (
        sorted((k, v, h) for k, v, h in rows))


def test_string_value_and_topic_column(spark, spark_cluster):
    topic = new_topic(spark_cluster)
    df = spark.createDataFrame([(topic, "ключ", f"значение {i}") for i in range(20)],
                               "topic string, key string, value string")
    (df.write.format("simplekafka")
     .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers).mode("append").save())
    got = confluent_read(spark_cluster, topic, 20)
    assert sorted(v for _, v, _ in got) == sorted((f"значение {i}").encode() for i in range(20))
    assert {k for k, _, _ in got} == {"ключ".encode()}


def _pipe(spark, cluster, source, sink, checkpoint, **sink_options):
    """source -> sink through writeStream, 100 records per batch, until caught up."""
    from stages.stage8_spark.helpers import run_stream

    writer = (spark.readStream.format("simplekafka")
              .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 100).load()
              .selectExpr("key", "value")
              .writeStream.format("simplekafka")
              .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("topic", sink).option("checkpointLocation", str(checkpoint)))
    for key, value in sink_options.items():
        writer = writer.option(key, value)
    return run_stream(writer)


def _values(spark, cluster, topic) -> list[bytes]:
    return [r.value for r in spark.read.format("simplekafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
            .option("subscribe", topic).load().select("value").collect()]


@pytest.mark.parametrize("dedup", ["true", "false"])
def test_replayed_sink_batch(spark, spark_cluster, tmp_path, dedup):
    """Spark replays a batch whose commit is missing: with dedup nothing is written twice."""

    source = new_topic(spark_cluster)
    sink = new_topic(spark_cluster)
    values = produce(spark_cluster, source, 300)
    checkpoint = tmp_path / "cp"
    _pipe(spark, spark_cluster, source, sink, checkpoint, dedup=dedup)
    assert sorted(_values(spark, spark_cluster, sink)) == sorted(values)
    # As after a crash between the sink's writes and Spark's commit of the batch:
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    replayed = (checkpoint / "offsets" / str(last)).exists()
    assert replayed
    _pipe(spark, spark_cluster, source, sink, checkpoint, dedup=dedup)
    assert (checkpoint / "commits" / str(last)).exists()
    got = _values(spark, spark_cluster, sink)
    if dedup == "true":
        assert sorted(got) == sorted(values)  # the replay wrote nothing twice
    else:  # at least once: the replayed batch's records are there twice
        assert set(got) == set(values) and len(got) > len(values)


@pytest.mark.parametrize("columns, options, message", [
    ("key string", {"topic": "t"}, "the simplekafka sink needs a 'value' column"),
    ("value int", {"topic": "t"}, "column 'value' must be string or binary, not int"),
    ("value string", {}, "no topic: give the sink option topic or a 'topic' column"),
    ("value string, partition string", {"topic": "t"}, "column 'partition' must be an int"),
    ("value string", {"topic": "t", "dedup": "maybe"}, "option dedup must be true or false"),
    ("value string", {"topic": "t", "topics": "t"}, "unknown option 'topics' for the simplekafka"),
    ("value string", {"topic": "t", "exactlyOnce": "yes"},
     "option exactlyOnce must be true or false"),
    ("value string", {"topic": "t", "kafka.transactional.id": "x", "exactlyOnce": "false"},
     "option kafka.transactional.id needs exactlyOnce=true"),
    ("value string", {"topic": "t", "exactlyOnce": "true"},
     "option exactlyOnce is for streaming writes (writeStream)"),
])
def test_bad_sink_columns_and_options_fail_with_one_line(spark, columns, options, message):
    df = spark.createDataFrame([], columns)
    writer = df.write.format("simplekafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
    for key, value in options.items():
        writer = writer.option(key, value)
    with pytest.raises(Exception) as caught:
        writer.mode("append").save()
    assert "SparkOptionError: " + message in str(caught.value).splitlines()[0]
    assert "Traceback" not in str(caught.value)


def read_committed(cluster, topic: str, partitions: int = 3) -> list[tuple[bytes, list]]:
    """Every committed value of ``topic`` (read_committed), with its headers, until quiet."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got, quiet_since = [], time.monotonic()
    try:
        while time.monotonic() - quiet_since < 3:
            message = consumer.poll(0.3)
            if message is not None and message.error() is None:
                got.append(message.value())
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return got


# The exactly-once sink through a driver SIGKILLed inside a transaction runs beside the
# source's restart, in one driver: test_source_restart.py's driver_sigkilled_mid_batch.
