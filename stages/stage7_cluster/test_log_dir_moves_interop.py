"""AlterReplicaLogDirs through kafka-python's admin client, on two real brokers with two log
directories each: a replica moved while a producer writes keeps every record exactly once,
and Kafka's answers for a directory that is not one, a partition nobody knows (remembered
for when it is created) and the directory a replica is already in."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from simplekafka.cluster import LocalCluster

pytestmark = pytest.mark.integration

WAIT_S = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=2, log_dirs=2, base_dir=tmp_path_factory.mktemp("log-dirs"),
                         metrics=False,
                         broker_config={"auto.leader.rebalance.enable": "false",
                                        "offsets.topic.replication.factor": "1",
                                        "log.segment.bytes": "65536"})
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def kafka_admin(cluster):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


def where(kafka_admin, topic: str, partition: int) -> dict[int, dict[str, bool]]:
    """broker -> {log dir: is_future_key} for every replica of ``topic``-``partition``."""
    found: dict[int, dict[str, bool]] = {}
    for answer in kafka_admin.describe_log_dirs({topic: [partition]}):
        for result in answer["log_dirs"]:
            for entry in result["topics"]:
                for p in entry["partitions"]:
                    if entry["name"] == topic and p["partition_index"] == partition:
                        found.setdefault(answer["broker"], {})[result["log_dir"]] = \
                            p["is_future_key"]
    return found


def log_dirs(cluster, broker_id: int) -> list[str]:
    broker = cluster.brokers[broker_id]
    return [str(d.resolve()) for d in [broker.data_dir, *broker.more_data_dirs]]


def test_a_replica_moves_on_both_brokers_while_a_producer_writes(cluster, kafka_admin):
    from confluent_kafka import Consumer, Producer
    from kafka import TopicPartitionReplica
    from kafka.admin import NewTopic
    from kafka.errors import NoError

    topic = f"moving-{uuid.uuid4().hex[:8]}"
    kafka_admin.create_topics([NewTopic(topic, 1, 2)])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "linger.ms": 5, "batch.size": 16384})  # under segment.bytes
    sent: list[bytes] = []
    failed: list[str] = []

    def delivered(error, message):
        if error is not None:
            failed.append(str(error))

    def produce(count: int) -> None:
        for _ in range(count):
            value = b"record-%06d-" % len(sent) + b"x" * 200
            sent.append(value)
            producer.produce(topic, value, partition=0, on_delivery=delivered)
            producer.poll(0)

    produce(2000)
    producer.flush(60)
    before = where(kafka_admin, topic, 0)
    assert sorted(before) == [1, 2] and all(len(d) == 1 for d in before.values()), before
    targets = {broker: next(d for d in log_dirs(cluster, broker) if d not in dirs)
               for broker, dirs in before.items()}
    stop = threading.Event()

    def keep_producing() -> None:
        while not stop.is_set():
            produce(50)
            time.sleep(0.01)

    writer = threading.Thread(target=keep_producing, daemon=True)
    writer.start()
    try:
        answers = kafka_admin.alter_replica_log_dirs(
            {TopicPartitionReplica(topic, 0, broker): path for broker, path in targets.items()})
        assert set(answers.values()) == {NoError}, answers
        deadline = time.monotonic() + WAIT_S
        while where(kafka_admin, topic, 0) != {b: {path: False} for b, path in targets.items()}:
            assert time.monotonic() < deadline, where(kafka_admin, topic, 0)
            time.sleep(0.2)
        time.sleep(0.5)  # a few more writes to the moved replicas
    finally:
        stop.set()
        writer.join(30)
    producer.flush(60)
    assert not failed, failed[:3]
    for broker, path in targets.items():
        assert (cluster.partition_dir(broker, topic, 0)).parent == \
            cluster.brokers[broker].data_dir.parent / path.rsplit("/", 1)[1]
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": f"check-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while len(got) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == sent  # every record, once, in order, byte for byte
    # Both replicas hold the same bytes (the follower copied the moved leader's batches).
    deadline = time.monotonic() + WAIT_S
    while True:
        logs = [b"".join(p.read_bytes() for p in sorted(
            cluster.partition_dir(broker, topic, 0).glob("*.log"))) for broker in (1, 2)]
        if logs[0] == logs[1] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert logs[0] == logs[1] and len(logs[0]) > len(sent) * 200


def test_kafkas_answers_for_a_bad_dir_an_unknown_partition_and_the_current_dir(
        cluster, kafka_admin):
    from kafka import TopicPartitionReplica
    from kafka.admin import NewTopic
    from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError

    topic = f"later-{uuid.uuid4().hex[:8]}"
    second = log_dirs(cluster, 1)[1]
    answers = kafka_admin.alter_replica_log_dirs({
        TopicPartitionReplica(topic, 0, 1): "/no/such/dir",
        TopicPartitionReplica(topic, 1, 1): second,
    })
    assert answers == {TopicPartitionReplica(topic, 0, 1): LogDirNotFoundError,
                       TopicPartitionReplica(topic, 1, 1): UnknownTopicOrPartitionError}
    # Kafka remembers the wanted directory for the replica created later.
    kafka_admin.create_topics([NewTopic(topic, replica_assignments={0: [1], 1: [1]})])
    deadline = time.monotonic() + WAIT_S
    while 1 not in where(kafka_admin, topic, 1):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert where(kafka_admin, topic, 1) == {1: {second: False}}
    assert kafka_admin.alter_replica_log_dirs(
        {TopicPartitionReplica(topic, 1, 1): second}) == {
            TopicPartitionReplica(topic, 1, 1): NoError}
