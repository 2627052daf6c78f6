"""Topic IDs (KIP-516) and Kafka 3.9's data-path versions, with real clients on a real broker.

- confluent-kafka, kafka-python and kcat each pick the newest Produce, Fetch and
  Metadata versions they share with the broker (read from the broker's request
  metrics per version, Kafka's ``RequestsPerSec`` with its ``version`` tag);
- a topic's ID is in its znode (version 3, ``"topic_id"``), in each partition
  directory's ``partition.metadata`` and in Metadata v10+; CreateTopics v7
  answers it; Metadata v12 looks topics up by ID;
- a topic deleted and created again has a new ID: the old one answers
  UNKNOWN_TOPIC_ID in Metadata, Fetch and DeleteTopics;
- librdkafka's 0107 scenario: a group that committed for the old topic is told
  the topic is gone and, subscribed again, reads the new topic from its start;
- a restarted broker reads ``partition.metadata`` and refuses a log whose ID is
  not its topic's (INCONSISTENT_TOPIC_ID), serving the others.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
import uuid

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.coordination.processes import wait_until as _poll
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.topic_ids import new_topic_id, topic_id_from_text, topic_id_text
from stages.stage4_broker._interop import connect, kcat, request

pytestmark = pytest.mark.integration

# What each client's newest versions are (from their sources: kafka-python 3's fetcher and
# sender; librdkafka 2.16 in confluent-kafka), capped by what the broker speaks.
KAFKA_PYTHON = {"Produce": 9, "Fetch": 12}
CONFLUENT = {"Produce": 10, "Fetch": 16, "Metadata": 12}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("topic-ids"),
                      broker_config={"group.initial.rebalance.delay.ms": 200,
                                     "auto.create.topics.enable": "false"}) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(condition, timeout: float, what: str) -> None:
    _poll(condition, what, timeout=timeout, interval=0.1, error=AssertionError)


def admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create(cluster, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import NewTopic

    client = admin(cluster)  # kept until the answer: a destroyed client fails its futures
    client.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def delete(cluster, topic: str) -> None:
    client = admin(cluster)
    client.delete_topics([topic])[topic].result(60)
    wait_until(lambda: metadata(cluster, [topic])[0].error_code != ErrorCode.NONE, 30,
               f"{topic} gone")


def port(cluster) -> int:
    return int(cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])


def metadata(cluster, names=None, ids=None, version: int = 12):
    topics = [{"name": n, "topic_id": bytes(16)} for n in names or []]
    topics += [{"name": None, "topic_id": i} for i in ids or []]
    with connect(port(cluster)) as sock:
        return request(sock, ApiKey.METADATA, version, {
            "topics": topics, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}).topics


def znode_of(cluster, topic: str) -> dict:
    data, _stat = cluster.zk.get(f"/brokers/topics/{topic}")
    return json.loads(data)


def versions_used(cluster) -> dict[tuple[str, int], float]:
    url = next(iter(cluster.metrics_urls.values()))
    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    found = {}
    for match in re.finditer(r'^kafka_network_requestmetrics_requests_total\{request="'
                             r'(\w+)",version="(-?\d+)"\} (\S+)$', text, re.M):
        found[(match[1], int(match[2]))] = float(match[3])
    return found


def settled_versions(cluster) -> dict[tuple[str, int], float]:
    """The counts once a second passes without a change: a closed client's last fetches
    (parked up to its max wait) are counted when answered, after it has gone."""
    last = versions_used(cluster)
    for _ in range(30):
        time.sleep(1)
        now = versions_used(cluster)
        if now == last:
            return now
        last = now
    return last


def new_versions(before: dict, after: dict, request_name: str) -> set[int]:
    return {v for (name, v), count in after.items()
            if name == request_name and count > before.get((name, v), 0)}


def test_clients_pick_kafka39_versions(cluster):
    from confluent_kafka import Consumer, Producer
    from kafka import KafkaConsumer, KafkaProducer

    topic = unique("versions")
    create(cluster, topic)
    bootstrap = cluster.bootstrap_servers

    before = settled_versions(cluster)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, b"confluent")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g"),
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    message = None
    deadline = time.monotonic() + 60
    while message is None and time.monotonic() < deadline:
        polled = consumer.poll(1)
        message = polled if polled is not None and not polled.error() else None
    consumer.close()
    assert message is not None and message.value() == b"confluent"
    after = settled_versions(cluster)
    for name, version in CONFLUENT.items():
        assert new_versions(before, after, name) == {version}, (name, after)

    before = after
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(topic, b"kafka-python").get(30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=10_000)
    assert any(m.value == b"kafka-python" for m in consumer)  # stops at it, not 10 s idle later
    consumer.close()
    after = settled_versions(cluster)
    for name, version in KAFKA_PYTHON.items():
        assert new_versions(before, after, name) == {version}, (name, after)

    before = after
    kcat(bootstrap, "-P", "-t", topic, stdin=b"kcat\n")
    assert b"kcat" in kcat(bootstrap, "-C", "-t", topic, "-e", "-q").split()
    after = settled_versions(cluster)
    # kcat links librdkafka 2.0.2: its newest Produce is v7 and Fetch v11, below topic IDs.
    assert new_versions(before, after, "Produce") == {7}
    assert new_versions(before, after, "Fetch") == {11}


def test_topic_id_in_znode_partition_metadata_and_metadata(cluster):
    topic = unique("ids")
    create(cluster, topic, partitions=2)
    znode = znode_of(cluster, topic)
    assert znode["version"] == 3
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    topic_id = topic_id_from_text(znode["topic_id"])
    data = cluster.base_dir / "broker-1" / "data"
    for index in (0, 1):
        text = (data / f"{topic}-{index}" / "partition.metadata").read_text()
        assert text == f"version: 0\ntopic_id: {znode['topic_id']}"
    [answer] = metadata(cluster, [topic])
    assert answer.topic_id == topic_id and answer.error_code == ErrorCode.NONE
    [by_id] = metadata(cluster, ids=[topic_id])
    assert (by_id.name, by_id.topic_id, len(by_id.partitions)) == (topic, topic_id, 2)
    [old] = metadata(cluster, [topic], version=9)  # before v10: no ID on the wire
    assert not hasattr(old, "topic_id")
    # CreateTopics v7 answers the new topic's ID, v5+ its shape and configs.
    second = unique("ids")
    with connect(port(cluster)) as sock:
        [created] = request(sock, ApiKey.CREATE_TOPICS, 7, {
            "topics": [{"name": second, "num_partitions": 3, "replication_factor": 1,
                        "assignments": [], "configs": [{"name": "retention.ms",
                                                        "value": "3600000"}]}],
            "timeout_ms": 30_000, "validate_only": False}).topics
    assert created.error_code == ErrorCode.NONE
    assert topic_id_text(created.topic_id) == znode_of(cluster, second)["topic_id"]
    assert (created.num_partitions, created.replication_factor) == (3, 1)
    configs = {c.name: (c.value, c.config_source) for c in created.configs}
    assert configs["retention.ms"] == ("3600000", 1)  # the topic's own (DYNAMIC_TOPIC_CONFIG)
    assert configs["cleanup.policy"][0] == "delete"


def test_recreated_topic_has_a_new_id_and_the_old_one_is_unknown(cluster):
    topic = unique("recreated")
    create(cluster, topic)
    old_id = topic_id_from_text(znode_of(cluster, topic)["topic_id"])
    delete(cluster, topic)
    create(cluster, topic)
    new_id = topic_id_from_text(znode_of(cluster, topic)["topic_id"])
    assert new_id != old_id
    wait_until(lambda: metadata(cluster, [topic])[0].topic_id == new_id, 30, "the new id")
    [gone] = metadata(cluster, ids=[old_id])
    assert (gone.error_code, gone.name, gone.topic_id) == (ErrorCode.UNKNOWN_TOPIC_ID, None,
                                                           old_id)
    with connect(port(cluster)) as sock:
        fetched = request(sock, ApiKey.FETCH, 13, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic_id": tid, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]} for tid in (old_id, new_id)],
            "forgotten_topics_data": [], "rack_id": ""})
        answers = {t.topic_id: t.partitions[0].error_code for t in fetched.responses}
        assert answers == {old_id: ErrorCode.UNKNOWN_TOPIC_ID, new_id: ErrorCode.NONE}
        deleted = request(sock, ApiKey.DELETE_TOPICS, 6, {
            "topics": [{"name": None, "topic_id": old_id}], "timeout_ms": 10_000})
        [refused] = deleted.responses
        assert (refused.error_code, refused.topic_id) == (ErrorCode.UNKNOWN_TOPIC_ID, old_id)
        [by_id] = request(sock, ApiKey.DELETE_TOPICS, 6, {
            "topics": [{"name": None, "topic_id": new_id}], "timeout_ms": 30_000}).responses
        assert (by_id.error_code, by_id.name, by_id.topic_id) == (ErrorCode.NONE, topic, new_id)


def test_group_of_the_old_topic_reads_the_new_one_from_its_start(cluster):
    """librdkafka's 0107 (auto-creation off): commit on a topic, delete it, create it again."""
    from confluent_kafka import Consumer, KafkaError, Producer

    topic, group = unique("0107"), unique("group")
    bootstrap = cluster.bootstrap_servers
    create(cluster, topic)
    producer = Producer({"bootstrap.servers": bootstrap})

    def produce(values: list[bytes]) -> None:
        for value in values:
            producer.produce(topic, value)
        assert producer.flush(60) == 0

    def consume(consumer, count: int, timeout: float) -> tuple[list, list]:
        values, errors = [], []
        deadline = time.monotonic() + timeout
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                errors.append(message.error().code())
            else:
                values.append((message.offset(), message.value()))
        return values, errors

    config = {"bootstrap.servers": bootstrap, "group.id": group,
              "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "topic.metadata.refresh.interval.ms": 1000}
    produce([b"old-%d" % i for i in range(5)])
    consumer = Consumer(config)
    consumer.subscribe([topic])
    values, _ = consume(consumer, 5, 60)
    assert [v for _, v in values] == [b"old-%d" % i for i in range(5)]
    consumer.commit(asynchronous=False)

    delete(cluster, topic)
    _, errors = consume(consumer, 1, 8)
    assert KafkaError.UNKNOWN_TOPIC_OR_PART in errors  # Kafka's answer to the gone topic

    create(cluster, topic)
    produce([b"new-%d" % i for i in range(3)])
    consumer.unsubscribe()
    consumer.subscribe([topic])
    values, _ = consume(consumer, 3, 60)
    consumer.close()
    # From the new topic's start: the old topic's committed offset 5 is not used.
    assert values == [(i, b"new-%d" % i) for i in range(3)]


def test_restarted_broker_refuses_a_log_of_another_topic_id(cluster):
    kept, tampered = unique("kept"), unique("tampered")
    create(cluster, kept)
    create(cluster, tampered)
    data = cluster.base_dir / "broker-1" / "data"
    wait_until(lambda: (data / f"{tampered}-0" / "partition.metadata").exists(), 30,
               "partition.metadata written")
    cluster.terminate(1)
    other = topic_id_text(new_topic_id())
    (data / f"{tampered}-0" / "partition.metadata").write_text(
        f"version: 0\ntopic_id: {other}")
    cluster.restart(1)

    def served(topic: str) -> int:
        with connect(port(cluster)) as sock:
            [answer] = request(sock, ApiKey.LIST_OFFSETS, 7, {
                "replica_id": -1, "isolation_level": 0, "topics": [{
                    "name": topic, "partitions": [{"partition_index": 0,
                                                    "current_leader_epoch": -1,
                                                    "timestamp": -1}]}]}).topics
        return answer.partitions[0].error_code

    wait_until(lambda: served(kept) == ErrorCode.NONE, 60, "the kept topic served")
    assert served(tampered) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    log_text = (cluster.base_dir / "logs" / "broker-1.log").read_text()
    assert f"belongs to topic id {other}" in log_text
    # The file is left as it was: the operator decides (Kafka neither deletes nor rewrites it).
    assert other in (data / f"{tampered}-0" / "partition.metadata").read_text()
