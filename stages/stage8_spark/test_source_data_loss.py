"""Retention removed records the checkpoint points at: failOnDataLoss true fails, false skips."""

from __future__ import annotations

import pytest

from simplekafka.admin.groups import list_offsets
from simplekafka.client import KafkaClient
from simplekafka.protocol.structs import TopicPartition
from stages.stage8_spark.helpers import new_topic, produce, run_stream, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def retaining_cluster(tmp_path_factory):
    """One broker keeping about 4 KiB per partition in 1 KiB segments, checked twice a second."""
    from simplekafka.cluster import LocalCluster

    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("retention"), broker_config={
        "log.segment.bytes": 1024, "log.retention.bytes": 4096,
        "log.retention.check.interval.ms": 500})
    local.start()
    try:
        yield local
    finally:
        local.stop()


def _log_start(cluster, topic) -> int:
    with KafkaClient(cluster.bootstrap_servers) as client:
        tp = TopicPartition(topic, 0)
        return list_offsets(client, {tp: -2}, 10_000)[tp]


def _query(spark, cluster, topic, checkpoint, fail_on_data_loss, seen):
    return run_stream(
        spark.readStream.format("simplekafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic).option("startingOffsets", "earliest")
        .option("failOnDataLoss", fail_on_data_loss).load()
        .writeStream.foreachBatch(lambda df, _: seen.extend(
            r.offset for r in df.select("offset").collect()))
        .option("checkpointLocation", str(checkpoint)))


@pytest.mark.parametrize("fail", ["true", "false"])
def test_records_removed_under_the_checkpoint(spark, retaining_cluster, tmp_path, fail):
    topic = new_topic(retaining_cluster, partitions=1, replication=1)
    produce(retaining_cluster, topic, 20)
    seen: list[int] = []
    _query(spark, retaining_cluster, topic, tmp_path / "cp", fail, seen)
    resume_at = max(seen) + 1
    # Enough records, produced in small batches, to roll many segments; then wait for retention.
    for start in range(20, 420, 20):
        produce(retaining_cluster, topic, 20, start=start)
    log_start = wait_until(lambda: (s := _log_start(retaining_cluster, topic)) > resume_at and s,
                           "retention to remove the records after the checkpoint")
    seen.clear()
    if fail == "true":
        with pytest.raises(Exception) as caught:
            _query(spark, retaining_cluster, topic, tmp_path / "cp", fail, seen)
        first_line = str(caught.value).splitlines()[0]
        assert f"data loss in {topic}-0: offsets {resume_at} to " in first_line
        assert "set the option failOnDataLoss to false" in first_line
        assert "Traceback" not in str(caught.value)
        assert seen == []
    else:
        _query(spark, retaining_cluster, topic, tmp_path / "cp", fail, seen)  # warns, goes on
        assert seen and min(seen) >= log_start
        assert sorted(seen) == list(range(min(seen), 420))


def test_a_task_meeting_removed_records(retaining_cluster):
    """Retention striking after planning: a task's range reader fails or skips the same way."""
    from simplekafka.spark.fetching import DataLossError, RangeReader

    topic = new_topic(retaining_cluster, partitions=1, replication=1)
    for start in range(0, 400, 20):
        produce(retaining_cluster, topic, 20, start=start)
    log_start = wait_until(lambda: (s := _log_start(retaining_cluster, topic)) > 0 and s,
                           "retention to remove the first records")
    tp = TopicPartition(topic, 0)
    with KafkaClient(retaining_cluster.bootstrap_servers) as client:
        with pytest.raises(DataLossError, match=f"data loss in {topic}-0: offsets 0 to "):
            list(RangeReader(client, tp, 0, 400, fail_on_data_loss=True))
        offsets = [int(o) for columns in RangeReader(client, tp, 0, 400, fail_on_data_loss=False)
                   for o in columns.arrays["offset"]]
    assert offsets and offsets[0] >= log_start
    assert offsets == list(range(offsets[0], 400))
