"""Record batches against real clients, through a real broker, for all five codecs.

The stage 1 tests cross-check the record codec against kafka-python and
aiokafka in memory. librdkafka (confluent-kafka 2.16, and kcat built on
librdkafka 2.0.2) can only be asked over the wire, so here a one-broker
LocalCluster sits in between:

- batches built by ``build_batch`` are produced with a raw Produce v8 request
  and consumed by confluent-kafka, kcat and kafka-python;
- batches that confluent-kafka produces (librdkafka writes *raw* snappy, not
  the xerial framing) are fetched with a raw Fetch v11 request and parsed with
  ``parse_batches``.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.compression import XERIAL_MAGIC, Compression
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import Record, build_batch, parse_batches

pytestmark = pytest.mark.integration

CODECS = [c.name.lower() for c in Compression]
COUNT = 40


def records_for(codec: str) -> list[Record]:
    """Compressible values (librdkafka never sends a batch that compression made bigger)."""
    return [
        Record(
            key=None if i % 5 == 0 else b"key-%d" % i,
            value=b"%s value %d " % (codec.encode(), i) * 12,
            headers=[("n", str(i).encode()), ("empty", b"")] if i % 2 else [],
        )
        for i in range(COUNT)
    ]


def _exchange(address: tuple[str, int], api_key: ApiKey, version: int, body: dict):
    with socket.create_connection(address, timeout=15) as sock:
        payload = encode_request(api_key, version, 7, "interop-test", body)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _read(sock, 4))[0]
        correlation_id, response = decode_response(api_key, version, _read(sock, size))
    assert correlation_id == 7
    return response


def _read(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        assert chunk, "broker closed the connection"
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def produce_raw(address, topic: str, batch: bytes) -> int:
    """One Produce v8 (acks=1) of ``batch`` to partition 0; returns the base offset."""
    response = _exchange(
        address,
        ApiKey.PRODUCE,
        8,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == 0, answer
    return answer.base_offset


def fetch_raw(address, topic: str, offset: int = 0) -> bytes:
    """The records bytes of one Fetch v11 of partition 0 from ``offset``."""
    response = _exchange(
        address,
        ApiKey.FETCH,
        11,
        {
            "replica_id": -1,
            "max_wait_ms": 100,
            "min_bytes": 1,
            "max_bytes": 10 * 1024 * 1024,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 22}
                    ],
                }
            ],
            "rack_id": "",
        },
    )
    partition = response.responses[0].partitions[0]
    assert partition.error_code == 0, partition
    return partition.records or b""


@pytest.fixture(scope="module")
def broker(cluster):
    """(bootstrap servers, (host, port)) of the shared one-broker cluster, topics created."""
    servers = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    topics = [f"{direction}-{codec}" for direction in ("ours", "theirs") for codec in CODECS]
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    host, port = servers.split(",")[0].rsplit(":", 1)
    address = (host, int(port))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the broker leads every new partition
        try:
            for topic in topics:
                fetch_raw(address, topic)
            break
        except AssertionError:
            time.sleep(0.2)
    return servers, address


def expected(records: list[Record]) -> list[tuple]:
    return [(i, r.key, r.value, list(r.headers)) for i, r in enumerate(records)]


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_kcat_and_kafka_python_read_our_batches(broker, codec):
    servers, address = broker
    topic = f"ours-{codec}"
    records = records_for(codec)
    # two batches, so offsets assigned by the broker are checked too
    assert produce_raw(address, topic, build_batch(records[:15], compression=codec)) == 0
    assert produce_raw(address, topic, build_batch(records[15:], compression=codec)) == 15
    stored = parse_batches(fetch_raw(address, topic))
    assert {b.compression.name.lower() for b in stored} == {codec}
    if codec == "snappy":
        raw = fetch_raw(address, topic)
        assert raw[61:69] == XERIAL_MAGIC  # what we write: the Java client's framing

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": servers, "group.id": f"g-{codec}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append((message.offset(), message.key(), message.value(), message.headers() or []))
    finally:
        consumer.close()
    assert got == expected(records)

    kcat = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            servers,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%o|%k|%S\\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert kcat.returncode == 0, kcat.stderr
    lines = kcat.stdout.splitlines()
    assert lines == [f"{i}|{(r.key or b'').decode()}|{len(r.value)}" for i, r in enumerate(records)]

    from kafka import KafkaConsumer, TopicPartition

    kp = KafkaConsumer(
        bootstrap_servers=servers,
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        kp.assign([TopicPartition(topic, 0)])
        kp.seek(TopicPartition(topic, 0), 0)
        got = []
        for message in kp:
            got.append((message.offset, message.key, message.value, list(message.headers)))
            if len(got) == COUNT:
                break
    finally:
        kp.close()
    assert got == expected(records)


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_what_librdkafka_produces(broker, codec):
    servers, address = broker
    topic = f"theirs-{codec}"
    records = records_for(codec)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": servers, "compression.type": codec, "linger.ms": 50}
    )
    for r in records:
        producer.produce(topic, r.value, r.key, partition=0, headers=list(r.headers) or None)
    assert producer.flush(30) == 0
    raw = fetch_raw(address, topic)
    batches = parse_batches(raw)
    assert {b.compression.name.lower() for b in batches} == {codec}
    if codec == "snappy":
        assert raw[61:69] != XERIAL_MAGIC  # librdkafka writes raw snappy, and we read it
    got = [(r.offset, r.key, r.value, list(r.headers)) for b in batches for r in b]
    assert got == expected(records)
