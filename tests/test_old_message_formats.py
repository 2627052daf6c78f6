"""Old clients through a real broker: message formats v0/v1, Produce v0-2, Fetch v0-3.

Kafka 3.9 still served the clients of Kafka 0.9 and 0.10, converting their
message sets to v2 batches on the way in and back on the way out
(broker/message_format.py here). The clients are real and forced old:
kafka-python with ``api_version=(0, 9)`` (Produce v1, Fetch v1, ListOffsets v0:
format v0) and ``(0, 10)`` (Produce v2, Fetch v2: format v1), and librdkafka
with ``api.version.request=false`` and ``broker.version.fallback`` 0.9.0.0 or
0.10.0.0 (the scenario of librdkafka's test 0052). What they write is read by
today's clients and the other way round, byte for byte.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_NOT_AVAILABLE, Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.legacy_records import build_message_set, parse_message_set
from stages.stage4_broker._interop import connect, request

pytestmark = pytest.mark.integration

COUNT = 30
WAIT_S = 60  # the machine is shared and loaded: generous, never a timing assertion


def _messages(tag: str) -> list[tuple[bytes | None, bytes]]:
    """Keys (some null) and values (compressible, some binary) that must come back exact."""
    return [(None if i % 4 == 0 else f"{tag}-key-{i}".encode(),
             f"{tag} value {i} ".encode() * 8 + bytes([i, 0, 255])) for i in range(COUNT)]


def _topic(admin: AdminClient, config: dict | None = None) -> str:
    name = f"old-{uuid.uuid4().hex[:10]}"
    future = admin.create_topics([NewTopic(name, 1, 1, config=config or {})])[name]
    future.result(timeout=WAIT_S)
    return name


@pytest.fixture(scope="module")
def servers(cluster) -> str:
    return cluster.bootstrap_servers


@pytest.fixture(scope="module")
def admin(servers) -> AdminClient:
    return AdminClient({"bootstrap.servers": servers})


def _port(servers: str) -> int:
    return int(servers.split(",")[0].rsplit(":", 1)[1])


# -- clients ------------------------------------------------------------------------------


def _kafka_python_produce(servers: str, topic: str, api_version: tuple, messages,
                          compression: str | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=servers, api_version=api_version,
                             enable_idempotence=False, compression_type=compression,
                             linger_ms=5, request_timeout_ms=WAIT_S * 1000)
    try:
        for key, value in messages:
            producer.send(topic, value=value, key=key, partition=0)
        producer.flush(timeout=WAIT_S)
    finally:
        producer.close(timeout=10)


def _kafka_python_read(servers: str, topic: str, api_version: tuple, count: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=servers, api_version=api_version,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             consumer_timeout_ms=2000, request_timeout_ms=WAIT_S * 1000 + 5000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()  # ListOffsets v0 for (0, 9) and (0, 10)
        got: list = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                got += [(r.offset, r.timestamp, r.key, r.value) for r in records]
        return got
    finally:
        consumer.close()


def _old_librdkafka(fallback: str) -> dict:
    return {"api.version.request": False, "broker.version.fallback": fallback}


def _confluent_produce(servers: str, topic: str, messages, extra: dict | None = None,
                       timestamp: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 5, **(extra or {})})
    errors: list = []
    for key, value in messages:
        kwargs = {"timestamp": timestamp} if timestamp is not None else {}
        producer.produce(topic, value=value, key=key, partition=0,
                         on_delivery=lambda err, _msg: err and errors.append(err), **kwargs)
    assert producer.flush(WAIT_S) == 0
    assert not errors, errors


def _confluent_read(servers: str, topic: str, count: int, extra: dict | None = None) -> list:
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         **(extra or {})})
    try:
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        got: list = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            got.append((message.offset(), message.timestamp(), message.key(), message.value()))
        return got
    finally:
        consumer.close()


# -- the tests -------------------------------------------------------------------------


@pytest.mark.parametrize("api_version", [(0, 9), (0, 10)])
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_kafka_python_forced_old_produces_and_consumes(servers, admin, api_version,
                                                       compression):
    topic = _topic(admin)
    sent = _messages(f"kp{api_version[1]}")
    _kafka_python_produce(servers, topic, api_version, sent, compression)
    got = _kafka_python_read(servers, topic, api_version, COUNT)
    assert [(key, value) for _, _, key, value in got] == sent
    assert [offset for offset, *_ in got] == list(range(COUNT))
    if api_version == (0, 9):  # format v0: no timestamps
        assert {ts for _, ts, _, _ in got} in ({None}, {-1})
    else:
        assert all(ts > 0 for _, ts, _, _ in got)


@pytest.mark.parametrize("fallback", ["0.9.0.0", "0.10.0.0"])
def test_librdkafka_with_an_old_fallback_produces_and_consumes(servers, admin, fallback):
    """librdkafka's 0052: no ApiVersions, the versions of ``broker.version.fallback``."""
    topic = _topic(admin)
    sent = _messages("rd")
    stamp = 1_600_000_000_000
    old = _old_librdkafka(fallback)
    _confluent_produce(servers, topic, sent[:COUNT // 2], {**old, "compression.codec": "gzip"},
                       timestamp=stamp)
    _confluent_produce(servers, topic, sent[COUNT // 2:], old, timestamp=stamp)
    got = _confluent_read(servers, topic, COUNT, old)
    assert [(key, value) for _, _, key, value in got] == sent
    if fallback == "0.9.0.0":  # format v0 carries no timestamp
        assert {kind for _, (kind, _), _, _ in got} == {TIMESTAMP_NOT_AVAILABLE}
    else:
        assert {ts for _, ts, _, _ in got} == {(TIMESTAMP_CREATE_TIME, stamp)}
    # Today's consumer reads the same records from the v2 batches they became.
    assert [(k, v) for _, _, k, v in _confluent_read(servers, topic, COUNT)] == sent


def test_v2_producers_records_read_by_old_fetchers(servers, admin):
    """Down-converted per stored batch, codec kept. v0 LZ4 is read by librdkafka only:
    kafka-python needs the xxhash package to undo Kafka 0.9's LZ4 header checksum."""
    topic, lz4_free = _topic(admin), _topic(admin)
    sent = _messages("new")
    for name, codecs in ((topic, ("lz4", "snappy")), (lz4_free, ("gzip", "snappy"))):
        _confluent_produce(servers, name, sent[:10], {"compression.codec": codecs[0]})
        _confluent_produce(servers, name, sent[10:], {"compression.codec": codecs[1]})
    for name, api_version in ((topic, (0, 10)), (lz4_free, (0, 9))):
        got = _kafka_python_read(servers, name, api_version, COUNT)
        assert [(key, value) for _, _, key, value in got] == sent, api_version
    got = _confluent_read(servers, topic, COUNT, _old_librdkafka("0.9.0.0"))
    assert [(key, value) for _, _, key, value in got] == sent


def test_old_producers_records_read_by_a_v2_consumer(servers, admin):
    topic = _topic(admin)
    sent = _messages("old")
    _kafka_python_produce(servers, topic, (0, 10), sent[:15], "gzip")
    _kafka_python_produce(servers, topic, (0, 9), sent[15:])
    got = _confluent_read(servers, topic, COUNT)
    assert [(key, value) for _, _, key, value in got] == sent
    kinds = [ts for _, ts, _, _ in got]
    assert all(kind == TIMESTAMP_CREATE_TIME and ts > 0 for kind, ts in kinds[:15])
    assert all(ts == -1 for _, ts in kinds[15:])  # v0 messages: no timestamp
    modern = _kafka_python_read(servers, topic, None, COUNT)  # kafka-python at its newest
    assert [(key, value) for _, _, key, value in modern] == sent


def _fetch(port: int, topic: str, version: int, offset: int = 0):
    with connect(port) as sock:
        response = request(sock, ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]})
    return response.responses[0].partitions[0]


def test_downconversion_disabled_gives_old_fetchers_unsupported_version(servers, admin):
    topic = _topic(admin, {"message.downconversion.enable": "false"})
    _confluent_produce(servers, topic, _messages("off")[:3])
    port = _port(servers)
    for version in (0, 1, 2, 3):
        assert _fetch(port, topic, version).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert _fetch(port, topic, 4).error_code == ErrorCode.NONE  # v2 as stored, no conversion


def test_a_corrupt_crc_is_refused_and_nothing_lands(servers, admin):
    topic = _topic(admin)
    message_set = bytearray(build_message_set([(0, 1, b"k", b"v1"), (1, 2, b"k", b"v2")], 1))
    message_set[-1] ^= 0x20
    with connect(_port(servers)) as sock:
        response = request(sock, ApiKey.PRODUCE, 2, {
            "acks": 1, "timeout_ms": 10_000, "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": bytes(message_set)}]}]})
        answer = response.responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.CORRUPT_MESSAGE
        latest = request(sock, ApiKey.LIST_OFFSETS, 0, {  # v0: Kafka 3.9 still serves it
            "replica_id": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}]})
    assert latest.topics[0].partitions[0].old_style_offsets == [0]


def test_old_fetchers_get_no_control_batches_and_read_uncommitted(servers, admin):
    """Transactions are a v2 feature: an old fetcher sees every data record, aborted ones
    too (it cannot ask for read_committed), and never a commit or abort marker."""
    topic = _topic(admin)
    producer = Producer({"bootstrap.servers": servers, "transactional.id": f"t-{topic}"})
    producer.init_transactions(WAIT_S)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(2):
            producer.produce(topic, value=f"{outcome}-{i}".encode(), partition=0)
        producer.flush(WAIT_S)
        if outcome == "commit":
            producer.commit_transaction(WAIT_S)
        else:
            producer.abort_transaction(WAIT_S)
    # Data at 0-1, marker 2, data 3-4, marker 5, data 6-7, marker 8.
    answer = _fetch(_port(servers), topic, 3)
    assert answer.error_code == ErrorCode.NONE and answer.high_watermark == 9
    assert [(m.offset, m.value) for m in parse_message_set(answer.records)] == [
        (0, b"commit-0"), (1, b"commit-1"), (3, b"abort-0"), (4, b"abort-1"),
        (6, b"commit-0"), (7, b"commit-1")]
    got = _kafka_python_read(servers, topic, (0, 10), 6)
    assert [value for _, _, _, value in got] == [
        b"commit-0", b"commit-1", b"abort-0", b"abort-1", b"commit-0", b"commit-1"]
