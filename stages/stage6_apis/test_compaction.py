"""Compaction, per-record errors and decompression caps against a real broker process.

One broker for the module (its cleaner wakes every 300 ms); the variations of
the cleaner itself are unit tests in stage 3 (test_cleaner.py). Here:
confluent-kafka and our clients see a compacted topic keep the last value per
key, a consumer reading through a cleaning sees a consistent view, a SIGKILL
at the swap recovers, ``__consumer_offsets`` stays bounded under a stream of
commits, a bad record's error message reaches confluent-kafka (KIP-467), and
a decompression bomb is refused by the broker and by our consumer.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.broker.log_cleaner import HOLD_ENV
from simplekafka.client import KafkaClient
from simplekafka.client.errors import CorruptMessageError
from simplekafka.client.errors import InvalidRecordError as InvalidRecordFailure
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.compression import Compression, compress
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import build_batch
from simplekafka.protocol.structs import TopicPartition
from simplekafka.storage.checkpoints import read_offset_checkpoint
from simplekafka.storage.cleaner import CLEANER_CHECKPOINT

pytestmark = pytest.mark.integration

SEGMENT = "16384"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("compaction"),
                         metrics=False,
                         broker_config={"log.cleaner.backoff.ms": "300",
                                        "offsets.topic.num.partitions": "1",
                                        "offsets.topic.segment.bytes": SEGMENT})
    local.start()
    try:
        yield local
    finally:
        local.stop()


def create(cluster, topic: str, **config: str) -> None:
    with Admin(cluster.bootstrap_servers, request_timeout_ms=30_000) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, {k.replace("_", "."): v
                                                    for k, v in config.items()})])


def confluent_producer(cluster, **extra):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20,
                     "batch.num.messages": 500, **extra})


def produce_all(cluster, topic: str, pairs, **extra) -> None:
    producer = confluent_producer(cluster, **extra)
    failures = []
    for key, value in pairs:
        producer.produce(topic, value, key, on_delivery=lambda e, m: e and failures.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures[:3]


def read_all(cluster, topic: str, **options) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record, read by our Consumer from the beginning up to
    the log end offset (the latest record is never cleaned away: it is in the active
    segment)."""
    seen = []
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                  **options) as consumer:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + 60
        while consumer.position(tp) < end and time.monotonic() < deadline:
            seen += [(r.offset, r.key, r.value) for r in consumer.poll(timeout_ms=500)]
    return seen


def checkpoint_of(cluster, topic: str) -> int | None:
    path = cluster.partition_dir(1, topic, 0).parent / CLEANER_CHECKPOINT
    try:
        return read_offset_checkpoint(path).get((topic, 0))
    except Exception:
        return None  # being replaced


def latest(records) -> dict:
    found = {}
    for _, key, value in records:
        found[key] = value
    return found


def test_a_compacted_topic_keeps_the_last_value_per_key(cluster):
    topic = unique("compacted")
    create(cluster, topic, cleanup_policy="compact", segment_bytes=SEGMENT,
           min_cleanable_dirty_ratio="0.01")
    pairs = [(b"k%d" % (n % 100), b"v%d" % n) for n in range(20_000)]
    produce_all(cluster, topic, pairs)
    # Cleaned up to a segment or two below the log end (the active one is never cleaned).
    cluster.wait_for(lambda: (checkpoint_of(cluster, topic) or 0) > 18_500,
                     "the cleaner's checkpoint", timeout=60)
    records = read_all(cluster, topic)
    assert latest(records) == latest([(0, k, v) for k, v in pairs])
    assert len(records) < 3_000  # one per key, and the segments not cleaned (yet, or ever)
    offsets = [offset for offset, _, _ in records]
    assert offsets == sorted(offsets) and offsets[-1] == 19_999  # offsets kept, gaps between
    theirs = confluent_read_all(cluster, topic)  # librdkafka reads the gaps alike
    assert latest(theirs) == latest(records) and set(theirs) <= set(records)


def confluent_read_all(cluster, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentPartition

    consumer = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                  "group.id": unique("reader"), "enable.auto.commit": False})
    seen: list[tuple[int, bytes, bytes | None]] = []
    try:
        low, high = consumer.get_watermark_offsets(ConfluentPartition(topic, 0), timeout=30)
        consumer.assign([ConfluentPartition(topic, 0, low)])
        deadline = time.monotonic() + 60
        while (not seen or seen[-1][0] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seen.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    return seen


def test_a_consumer_reading_through_a_cleaning_sees_a_consistent_view(cluster):
    """Half read, then the topic turns compacted and is cleaned, then the rest is read:
    for every key the values seen only move forward, and end at the latest."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    topic = unique("consistent")
    create(cluster, topic, segment_bytes=SEGMENT, min_cleanable_dirty_ratio="0.01")
    pairs = [(b"k%d" % (n % 50), b"%d" % n) for n in range(10_000)]
    produce_all(cluster, topic, pairs)
    seen: dict[bytes, int] = {}
    tp = TopicPartition(topic, 0)
    count = 0
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                  max_partition_fetch_bytes=4096, max_poll_records=100) as consumer:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + 90
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500):
                value = int(record.value)
                assert value > seen.get(record.key, -1), "a key went back to an older value"
                seen[record.key] = value
                count += 1
                if count == 2_000:  # a fifth read: now the topic turns compacted
                    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
                    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
                        ConfigEntry("cleanup.policy", "compact",
                                    incremental_operation=AlterConfigOpType.SET)])
                    admin.incremental_alter_configs([resource])[resource].result(30)
                    cluster.wait_for(lambda: checkpoint_of(cluster, topic) is not None,
                                     "the cleaning of the topic", timeout=60)
    assert count > 2_000
    assert seen == {b"k%d" % k: 9_950 + k for k in range(50)}


def test_a_sigkill_at_the_swap_recovers_on_restart(cluster, tmp_path):
    """The cleaner holds at its commit point (``.swap`` files written, old segments
    still there); the broker is SIGKILLed there and restarted: the swap is finished on
    load and a consumer reads the last value of every key.

    Safe to rerun: a fresh topic and hold file per attempt, and whatever way an attempt
    ends, the broker is left running without the hook and the hold file is gone."""
    topic = unique("killed")
    hold = tmp_path / "hold"
    hold.touch()
    # The topic is filled before it turns compacted: the hold blocks the broker's reactor
    # (it is the swap's window), so a round held during the produce would stall it.
    create(cluster, topic, segment_bytes=SEGMENT, min_cleanable_dirty_ratio="0.01")
    directory = cluster.partition_dir(1, topic, 0)
    pairs = [(b"k%d" % (n % 30), b"v%d" % n) for n in range(5_000)]
    produce_all(cluster, topic, pairs)
    hooked = True  # from the restart below until the broker runs without the hook again
    try:
        with pytest.MonkeyPatch.context() as patch:  # armed for this one start only
            patch.setenv(HOLD_ENV, f"swap:{topic}-0:{hold}")
            cluster.restart(1)
        with Admin(cluster.bootstrap_servers, request_timeout_ms=30_000) as admin:
            admin.alter_configs("topic", topic, {"cleanup.policy": "compact"})
        cluster.wait_for(lambda: Path(f"{hold}.reached").exists(), "the cleaner at the swap",
                         timeout=120)
        assert list(directory.glob("*.log.swap")), sorted(p.name for p in directory.iterdir())
        cluster.kill(1)
        hold.unlink()
        cluster.restart(1)
        hooked = False
    finally:
        hold.unlink(missing_ok=True)  # a broker held at the swap goes on (and can stop)
        if hooked:
            cluster.restart(1)  # the module's other tests get a broker without the hook
    finished = "finished the interrupted swap of a cleaned segment"
    assert any(str(directory) in line and finished in line
               for line in broker_log(cluster).splitlines())
    records = read_all(cluster, topic)
    assert latest(records) == latest([(0, k, v) for k, v in pairs])
    offsets = [offset for offset, _, _ in records]
    assert offsets == sorted(offsets) and offsets[-1] == len(pairs) - 1
    # With no checkpoint from the killed round, the restarted cleaner cleans the log once
    # more; once that round is done no .swap or .cleaned file is left.
    cluster.wait_for(lambda: checkpoint_of(cluster, topic) is not None,
                     "the cleaning after the restart", timeout=120)
    cluster.wait_for(lambda: not [p for p in directory.iterdir()
                                  if p.name.endswith((".swap", ".cleaned"))],
                     "no .swap or .cleaned files left", timeout=60)


def broker_log(cluster) -> str:
    return (cluster.base_dir / "logs" / "broker-1.log").read_text(errors="replace")


def test_consumer_offsets_stay_bounded_under_a_stream_of_commits(cluster):
    """About 1,000 commits a second for 10 s (segments of 16 KB, so the bound shows in a
    short run): the group's __consumer_offsets partition stays small."""
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition

    topic = unique("committed")
    create(cluster, topic)
    consumer = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                  "group.id": unique("committer"),
                                  "enable.auto.commit": False})
    sizes = []
    commits = 0
    try:
        offsets_dir = cluster.partition_dir(1, "__consumer_offsets", 0)
        started = time.monotonic()
        while time.monotonic() - started < 10:
            second = time.monotonic()
            for _ in range(100):
                commits += 1
                consumer.commit(offsets=[TopicPartition(topic, 0, commits)],
                                asynchronous=True)
            consumer.poll(0)
            time.sleep(max(0.0, 0.1 - (time.monotonic() - second)))
            if commits % 1000 == 0 and offsets_dir.exists():
                sizes.append(sum(p.stat().st_size for p in offsets_dir.glob("*.log")))
        consumer.commit(offsets=[TopicPartition(topic, 0, commits)], asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
    finally:
        consumer.close()
    assert committed == commits and commits >= 5_000
    written = commits * 100  # at least this many bytes went in (a record and its batch)
    assert max(sizes[len(sizes) // 2 :]) < 20 * int(SEGMENT), sizes
    assert max(sizes) < written / 5, (sizes, written)


def test_a_batch_with_a_keyless_record_in_a_compacted_topic_fails_with_its_message(cluster):
    """KIP-467: the batch is refused whole, and the answer names the bad record. kafka-python
    (like the Java client) fails that record with its message and the other one with
    "part of a batch..."; librdkafka reads the record errors but reports the error code
    only (confluent-kafka 2.16); our Producer reports the error message."""
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    topic = unique("keyless")
    create(cluster, topic, cleanup_policy="compact")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=200,
                             retries=0)
    good = producer.send(topic, b"good", key=b"key")
    bad = producer.send(topic, b"bad", key=None)
    producer.flush(30)
    producer.close(10)
    with pytest.raises(InvalidRecordError,
                       match="Compacted topic cannot accept message without key"):
        bad.get(1)
    with pytest.raises(Exception, match="part of a batch which had one more more invalid"):
        good.get(1)

    confluent = confluent_producer(cluster, **{"linger.ms": 200})
    reports = []
    confluent.produce(topic, b"good", b"key", on_delivery=lambda e, m: reports.append(e))
    confluent.produce(topic, b"bad", None, on_delivery=lambda e, m: reports.append(e))
    confluent.flush(30)
    assert [e.code() if e else None for e in reports] == [ErrorCode.INVALID_RECORD.value] * 2

    with Producer(cluster.bootstrap_servers, retries=0) as ours, \
            pytest.raises(InvalidRecordFailure,
                          match=r"batchIndex=0, message='Compacted topic cannot accept"):
        ours.send(topic, b"bad").result(30)
    assert read_all(cluster, topic) == []  # nothing appended


def test_a_timestamp_out_of_range_is_refused_with_its_message(cluster):
    from kafka import KafkaProducer
    from kafka.errors import InvalidTimestampError

    topic = unique("old-timestamps")
    create(cluster, topic, message_timestamp_difference_max_ms="3600000")
    confluent = confluent_producer(cluster)
    reports = []
    confluent.produce(topic, b"ancient", timestamp=1_000,
                      on_delivery=lambda e, m: reports.append(e))
    confluent.flush(30)
    assert reports[0] is not None and reports[0].code() == ErrorCode.INVALID_TIMESTAMP.value
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=0)
    refused = producer.send(topic, b"ancient", timestamp_ms=1_000)
    producer.flush(30)
    producer.close(10)
    with pytest.raises(InvalidTimestampError,
                       match="Timestamp 1000 of message with offset 0 is out of range"):
        refused.get(1)
    produce_all(cluster, topic, [(b"k", b"now")])  # a current timestamp is fine
    assert [value for _, _, value in read_all(cluster, topic)] == [b"now"]


def bomb(megabytes: int) -> bytes:
    """A zstd batch of a few KB whose one record decompresses to ``megabytes`` MB."""
    honest = build_batch([(b"k", b"v")])
    records = b"\x00" * (megabytes << 20)
    payload = compress(Compression.ZSTD, records)
    body = bytearray(honest[:61]) + payload
    body[21:23] = (int(Compression.ZSTD)).to_bytes(2, "big")  # attributes: zstd
    body[8:12] = (len(body) - 12).to_bytes(4, "big")
    import crc32c

    body[17:21] = crc32c.crc32c(bytes(body[21:])).to_bytes(4, "big")
    return bytes(body)


def produce_raw(cluster, topic: str, batch: bytes):
    with KafkaClient(cluster.bootstrap_servers) as client:
        leader = client.leader_for(topic, 0, timeout_ms=30_000)
        response = client.send(leader, ApiKey.PRODUCE, {
            "transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": batch}]}]}).result(60)
    return response.responses[0].partition_responses[0]


def test_a_decompression_bomb_is_refused_by_the_broker_and_by_our_consumer(cluster):
    payload = bomb(200)
    assert len(payload) < 100_000
    compacted = unique("bomb-compacted")
    create(cluster, compacted, cleanup_policy="compact")
    answer = produce_raw(cluster, compacted, payload)
    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert "decompresses to more than" in (answer.error_message or "")
    # A topic without record checks stores the batch as it came; our consumer refuses it.
    plain = unique("bomb-plain")
    create(cluster, plain)
    assert produce_raw(cluster, plain, payload).error_code == ErrorCode.NONE
    with pytest.raises(CorruptMessageError, match="max_decompressed_bytes"):
        read_all(cluster, plain)
    assert "decompresses to more than" in broker_log(cluster)
