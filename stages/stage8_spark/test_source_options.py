"""Every read option on real Spark and brokers, and the one-line errors for bad ones."""

from __future__ import annotations

import json
import time

import pytest

from simplekafka.admin import Admin
from simplekafka.protocol.structs import TopicPartition
from stages.stage8_spark.helpers import new_topic, produce, run_stream, wait_until

pytestmark = pytest.mark.integration


def read(spark, cluster, **options):
    reader = spark.read.format("simplekafka").option(
        "kafka.bootstrap.servers", cluster.bootstrap_servers)
    for key, value in options.items():
        reader = reader.option(key.replace("_", "."), value)
    return reader.load()


def stream(spark, cluster, **options):
    reader = spark.readStream.format("simplekafka").option(
        "kafka.bootstrap.servers", cluster.bootstrap_servers)
    for key, value in options.items():
        reader = reader.option(key.replace("_", "."), value)
    return reader.load()


@pytest.fixture(scope="module")
def filled(spark_cluster):
    """A 3-partition topic with 900 records, 300 per partition."""
    topic = new_topic(spark_cluster)
    for p in range(3):
        produce(spark_cluster, topic, 300, start=p * 300, partition=p)
    return topic


def test_assign_reads_only_the_assigned_partitions(spark, spark_cluster, filled):
    rows = read(spark, spark_cluster, assign=json.dumps({filled: [0, 2]})).collect()
    assert len(rows) == 600
    assert {r.partition for r in rows} == {0, 2}


def test_starting_offsets_json_with_earliest_and_latest_markers(spark, spark_cluster, filled):
    starting = json.dumps({filled: {"0": 250, "1": -2, "2": -1}})
    df = read(spark, spark_cluster, subscribe=filled, startingOffsets=starting)
    counts = {r.partition: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 50, 1: 300}
    first = df.where("partition = 0").agg({"offset": "min"}).collect()[0][0]
    assert first == 250


def test_streaming_starts_at_latest_by_default(spark, spark_cluster, tmp_path):
    topic = new_topic(spark_cluster)
    produce(spark_cluster, topic, 100)  # before the query: not read
    seen = []
    query = (stream(spark, spark_cluster, subscribe=topic).writeStream
             .foreachBatch(lambda df, _: seen.extend(r.value for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="1 second").start())
    try:
        wait_until(lambda: query.lastProgress is not None, "the first batch")
        new = produce(spark_cluster, topic, 50, start=1000)
        wait_until(lambda: len(seen) >= 50, "the new records", timeout=120)
    finally:
        query.stop()
    assert sorted(seen) == sorted(new)


def test_min_partitions_splits_ranges_over_more_tasks(spark, spark_cluster, filled):
    # Shares in proportion to size, as Spark's KafkaOffsetRangeCalculator: 3 x 300 -> 3 x 3.
    df = read(spark, spark_cluster, subscribe=filled, minPartitions="9")
    assert df.rdd.getNumPartitions() == 9
    rows = df.select("partition", "offset").collect()
    assert len(rows) == 900 and len(set(rows)) == 900


def test_include_headers(spark, spark_cluster):
    topic = new_topic(spark_cluster, partitions=1)
    produce(spark_cluster, topic, 5, headers=[("trace", b"\x00\x01"), ("empty", None)])
    produce(spark_cluster, topic, 5, start=5)
    rows = read(spark, spark_cluster, subscribe=topic, includeHeaders="true").orderBy(
        "offset").collect()
    assert [[(h.key, h.value) for h in r.headers] for r in rows[:5]] == [
        [("trace", b"\x00\x01"), ("empty", None)]] * 5
    assert [r.headers for r in rows[5:]] == [[]] * 5
    assert "headers" not in read(spark, spark_cluster, subscribe=topic).columns


def test_kafka_options_reach_the_client(spark, spark_cluster, filled):
    # Fetches of at most 1 KiB per partition: many small fetches, every record once.
    rows = read(spark, spark_cluster, subscribe=filled,
                kafka_max_partition_fetch_bytes="1024", kafka_fetch_max_bytes="2048").collect()
    assert len({(r.partition, r.offset) for r in rows}) == 900


def test_record_fields_match_what_was_produced(spark, spark_cluster):
    topic = new_topic(spark_cluster, partitions=1)
    before = int(time.time() * 1000)
    produce(spark_cluster, topic, 3)
    rows = read(spark, spark_cluster, subscribe=topic).orderBy("offset").collect()
    assert [(r.key, r.value, r.topic, r.partition, r.offset, r.timestampType) for r in rows] == [
        (b"k0", b"v0", topic, 0, 0, 0), (b"k1", b"v1", topic, 0, 1, 0),
        (b"k2", b"v2", topic, 0, 2, 0)]
    for r in rows:
        assert before - 5000 <= r.timestamp.timestamp() * 1000 <= time.time() * 1000 + 5000


def test_subscribe_pattern_picks_up_new_topics_and_the_group_shows_lag(spark, spark_cluster,
                                                                        tmp_path):
    prefix = f"pat{int(time.time() * 1000) % 10**8}"
    first = new_topic(spark_cluster, partitions=2, prefix=prefix)
    produce(spark_cluster, first, 40)
    group = f"{prefix}-group"
    seen = []
    query = (stream(spark, spark_cluster, subscribePattern=f"{prefix}-.*",
                    startingOffsets="earliest", kafka_group_id=group)
             .writeStream.foreachBatch(
                 lambda df, _: seen.extend((r.topic, r.value) for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="1 second").start())
    try:
        wait_until(lambda: len(seen) >= 40, "the first topic's records")
        second = new_topic(spark_cluster, partitions=3, prefix=prefix)
        produce(spark_cluster, second, 60)
        wait_until(lambda: len(seen) >= 100, "the new topic's records", timeout=120)

        def group_caught_up():
            with Admin(spark_cluster.bootstrap_servers) as admin:
                offsets = admin.describe_group(group).offsets
            return sum(o.committed or 0 for tp, o in offsets.items()
                       if tp.topic in (first, second)) == 100 and offsets
        offsets = wait_until(group_caught_up, "the group's committed offsets", timeout=60)
    finally:
        query.stop()
    assert sorted(seen) == sorted([(first, b"v%d" % i) for i in range(40)]
                                  + [(second, b"v%d" % i) for i in range(60)])
    assert offsets[TopicPartition(first, 0)].lag == 0


def test_new_partitions_are_picked_up_between_batches(spark, spark_cluster, tmp_path):
    topic = new_topic(spark_cluster, partitions=2)
    produce(spark_cluster, topic, 30)
    seen = []
    query = (stream(spark, spark_cluster, subscribe=topic, startingOffsets="earliest")
             .writeStream.foreachBatch(
                 lambda df, _: seen.extend((r.partition, r.value) for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="1 second").start())
    try:
        wait_until(lambda: len(seen) >= 30, "the first records")
        with Admin(spark_cluster.bootstrap_servers) as admin:
            admin.create_partitions({topic: 4})
        for p in (2, 3):
            spark_cluster.wait_for_leader(topic, p)
        added = produce(spark_cluster, topic, 20, start=100, partition=3)
        wait_until(lambda: len(seen) >= 50, "the new partition's records", timeout=120)
    finally:
        query.stop()
    assert sorted(v for p, v in seen if p == 3) == sorted(added)
    assert len(seen) == 50


def test_available_now_honours_max_offsets_per_trigger(spark, spark_cluster, filled, tmp_path):
    sizes = []
    run_stream(stream(spark, spark_cluster, subscribe=filled, startingOffsets="earliest",
                      maxOffsetsPerTrigger="200")
               .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
               .option("checkpointLocation", str(tmp_path / "cp")))
    assert sum(sizes) == 900
    assert max(sizes) <= 202 and len([s for s in sizes if s]) >= 5


# ----- bad options: one line, at load() ---------------------------------------------------

BAD_OPTIONS = [
    ({"subscribe": "t"}, "option kafka.bootstrap.servers is required"),
    ({"kafka.bootstrap.servers": "localhost", "subscribe": "t"},
     "option kafka.bootstrap.servers: 'localhost' is not host:port"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9"},
     "one of the options subscribe, subscribePattern or assign is required"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "subscribePattern": "t.*"},
     "give only one of subscribe, subscribePattern and assign, not subscribe and "
     "subscribePattern"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "assign": "[0, 1]"},
     "option assign must be JSON like"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribePattern": "(unclosed"},
     "option subscribePattern is not a regex"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "startingOffsets": "first"},
     "option startingOffsets must be 'earliest', 'latest' or JSON"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
      "startingOffsets": '{"t": {"0": -3}}'},
     "option startingOffsets: offset of t-0 must be an integer >= -2"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "endingOffsets": "earliest"},
     "option endingOffsets cannot be 'earliest'"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "maxOffsetsPerTrigger": "0"},
     "option maxOffsetsPerTrigger must be a positive integer"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "minPartitions": "x"},
     "option minPartitions must be a positive integer"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "failOnDataLoss": "yes"},
     "option failOnDataLoss must be true or false"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "includeHeaders": "1"},
     "option includeHeaders must be true or false"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.fetch.max.bytes": "lots"},
     "option kafka.fetch.max.bytes must be a positive integer"),
    ({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "startingOffset": "earliest"},
     "unknown option 'startingoffset' for format simplekafka"),
]


@pytest.mark.parametrize("options, message", BAD_OPTIONS,
                         ids=[m.split(":")[0][:40] for _, m in BAD_OPTIONS])
def test_bad_options_fail_load_with_one_line(spark, options, message):
    reader = spark.read.format("simplekafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as caught:
        reader.load()
    first_line = str(caught.value).splitlines()[0]
    assert "SparkOptionError: " + message in first_line
    assert "Traceback" not in str(caught.value)


def test_streaming_only_checks_fail_at_start(spark, tmp_path):
    df = (spark.readStream.format("simplekafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
          .option("subscribe", "t").option("endingOffsets", "latest").load())
    with pytest.raises(Exception) as caught:
        query = df.writeStream.format("noop").option(
            "checkpointLocation", str(tmp_path / "cp")).start()
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
    assert "option endingOffsets is for batch reads only" in str(caught.value).splitlines()[0]


def test_spark_finds_the_format_without_register(tmp_path):
    """A fresh Spark (no register call) resolves format("simplekafka") via pyspark_simplekafka."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "discover.py"
    script.write_text(
        "import os, sys\n"
        "os.environ['PYSPARK_PYTHON'] = sys.executable\n"
        "from pyspark.sql import SparkSession\n"
        "spark = (SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\n"
        "         .getOrCreate())\n"
        "try:\n"
        "    spark.read.format('simplekafka').option('subscribe', 't').load()\n"
        "except Exception as exc:\n"
        "    print('ERROR', str(exc).replace(chr(10), ' '))\n"
        "spark.stop()\n")
    env = {**os.environ, "PYTHONPATH": str(root), "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    # Our option check ran: Spark found the source by itself.
    assert "SparkOptionError: option kafka.bootstrap.servers is required" in result.stdout, (
        result.stdout + result.stderr[-3000:])
