"""The simplekafka source on real Spark and a real three-broker cluster: reads, options, schema."""

from __future__ import annotations

import pytest

from stages.stage8_spark.helpers import new_topic, produce, run_stream

pytestmark = pytest.mark.integration


def reader(spark, cluster, **options):
    read = spark.read.format("simplekafka").option(
        "kafka.bootstrap.servers", cluster.bootstrap_servers)
    for key, value in options.items():
        read = read.option(key, value)
    return read


def test_schema_is_sparks_kafka_schema(spark, spark_cluster):
    topic = new_topic(spark_cluster)
    df = reader(spark, spark_cluster, subscribe=topic).load()
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    with_headers = reader(spark, spark_cluster, subscribe=topic, includeHeaders="true").load()
    assert with_headers.schema.simpleString().endswith(
        "headers:array<struct<key:string,value:binary>>>")


def test_batch_read_with_ending_offsets_counts_every_record(spark, spark_cluster):
    topic = new_topic(spark_cluster)
    values = produce(spark_cluster, topic, 3000)
    rows = reader(spark, spark_cluster, subscribe=topic).load().collect()
    assert sorted(r.value for r in rows) == sorted(values)
    assert len({(r.partition, r.offset) for r in rows}) == 3000
    ending = '{"%s":{"0":5,"1":-1,"2":0}}'.replace("%s", topic)
    df = reader(spark, spark_cluster, subscribe=topic, endingOffsets=ending).load()
    per_partition = {r.partition: r for r in df.groupBy("partition").count().collect()}
    latest1 = sum(1 for r in rows if r.partition == 1)
    assert per_partition[0]["count"] == 5
    assert per_partition[1]["count"] == latest1
    assert 2 not in per_partition


def test_stream_with_max_offsets_per_trigger_reads_every_record_once(spark, spark_cluster,
                                                                      tmp_path):
    topic = new_topic(spark_cluster)
    values = produce(spark_cluster, topic, 2000)
    seen = []
    batches = []

    def collect(df, batch_id):
        rows = df.select("value", "partition", "offset").collect()
        batches.append((batch_id, len(rows)))
        seen.extend(rows)

    stream = (spark.readStream.format("simplekafka")
              .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 500)
              .load())
    run_stream(stream.writeStream.foreachBatch(collect)
               .option("checkpointLocation", str(tmp_path / "cp")))
    assert sorted(r.value for r in seen) == sorted(values)
    assert len([b for b in batches if b[1]]) >= 4, batches
    assert all(n <= 503 for _, n in batches), batches
