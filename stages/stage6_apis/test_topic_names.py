"""Kafka's topic-name rules at the broker: 249 characters, ``[a-zA-Z0-9._-]``, not ``.``
or ``..``, and no two topics differing only by '.' against '_'.

Every refusal is INVALID_TOPIC_EXCEPTION (17), in CreateTopics and in Metadata's
auto-creation alike, decided before anything touches ZooKeeper or the disk.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

import pytest

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import decode_response, encode_request

pytestmark = pytest.mark.integration


def longest(prefix: str, length: int) -> str:
    return (prefix + "-" + uuid.uuid4().hex + "x" * length)[:length]


def metadata_v4(cluster, names: list[str]) -> dict[str, object]:
    """One raw Metadata v4 asking to auto-create ``names``; the topics' answers by name."""
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        payload = encode_request(ApiKey.METADATA, 4, 1, "names-test", {
            "topics": [{"name": n} for n in names], "allow_auto_topic_creation": True})
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (length,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        frame = b""
        while len(frame) < length:
            frame += sock.recv(length - len(frame))
    _, answer = decode_response(ApiKey.METADATA, 4, frame)
    return {t.name: t for t in answer.topics}


def create(cluster, name: str):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    future = admin.create_topics([NewTopic(name, 1, 1)], request_timeout=30)[name]
    return future.exception(timeout=60)


def test_a_249_character_topic_works_end_to_end(cluster):
    from confluent_kafka import Consumer, Producer

    name = longest("ok", 249)
    assert create(cluster, name) is None
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce(name, b"long names are fine")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": name,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([name])
        deadline = time.monotonic() + 60
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1)
        assert message is not None and message.error() is None
        assert message.value() == b"long names are fine"
    finally:
        consumer.close()


@pytest.mark.parametrize("name", [
    "x" * 250, ".", "..", "has space", "slash/inside", "caf\u00e9",
])
def test_create_topics_refuses_illegal_names(cluster, name):
    from confluent_kafka import KafkaError

    error = create(cluster, name)
    assert error is not None and error.args[0].code() == KafkaError.TOPIC_EXCEPTION, error


def test_a_dot_and_underscore_collision_is_refused(cluster):
    from confluent_kafka import KafkaError

    base = uuid.uuid4().hex[:8]
    assert create(cluster, f"collide.{base}") is None
    error = create(cluster, f"collide_{base}")
    assert error is not None and error.args[0].code() == KafkaError.TOPIC_EXCEPTION
    assert "collides" in error.args[0].str()


def test_kafka_python_admin_gets_invalid_topic_error(cluster):
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import InvalidTopicError

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        with pytest.raises(InvalidTopicError):
            admin.create_topics([NewTopic("y" * 250, 1, 1)], timeout_ms=30_000)
    finally:
        admin.close()


def test_auto_creation_follows_the_same_rules(cluster):
    ok = longest("auto", 249)
    too_long = "z" * 250
    base = uuid.uuid4().hex[:8]
    assert create(cluster, f"auto.{base}") is None
    clash = f"auto_{base}"
    answers = metadata_v4(cluster, [ok, too_long, clash, ".."])
    assert answers[too_long].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answers[clash].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answers[".."].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answers[ok].error_code in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NONE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = metadata_v4(cluster, [ok])[ok]
        if answer.error_code == ErrorCode.NONE and answer.partitions and all(
                p.error_code == ErrorCode.NONE for p in answer.partitions):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"auto-created {ok!r} never got a leader")
    assert (cluster.partition_dir(1, ok, 0)).is_dir()
    assert not cluster.zk.exists(f"/brokers/topics/{too_long}")
    assert not cluster.zk.exists(f"/brokers/topics/{clash}")
