"""What real clients' own test suites expect of a ZooKeeper-mode Kafka 3.9 (issue 28's
"seen with real clients"), on three real brokers:

- broker configs altered as Kafka's ``DynamicBrokerConfig`` takes them (confluent-kafka's
  AdminClient, as librdkafka's 0081 test and KafkaJS's suite do): a dynamic key Kafka knows
  (``sasl.kerberos.min.time.before.relogin``, per broker only) and a key Kafka does not know
  (``cleanup.policy`` on a broker) are stored; a static key is refused INVALID_REQUEST;
- DescribeConfigs synonyms of a topic key named by the broker key (``log.retention.ms``
  for ``retention.ms``), in Kafka's order of sources (kafka-python, which keeps the list);
- ``max.compaction.lag.ms``, ``message.downconversion.enable``, ``segment.jitter.ms``;
- ListOffsets v0 (kafka-python's own v0 encoding, over a socket);
- ListPartitionReassignments right after AlterPartitionReassignments: the full replica set;
- Kafka 3.9's whole broker config set described (types, documentation, passwords null) and
  altered as Kafka alters it (types checked, static keys refused, per-listener keys stored).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import struct
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client import KafkaClient
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.reassignment import replicas_during
from simplekafka.coordination.topics import create_topic
from simplekafka.producer import Producer
from simplekafka.protocol.api import ADVERTISED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.errors import KafkaError as ProtocolKafkaError

pytestmark = pytest.mark.integration

STATIC_SEGMENT_BYTES = "536870912"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("kafka39"), metrics=False,
                         broker_config={"log.segment.bytes": STATIC_SEGMENT_BYTES,
                                        "zookeeper.session.timeout.ms": "30000",
                                        "auto.leader.rebalance.enable": "false"})
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def confluent(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def broker_znode(cluster, name: str) -> dict:
    data, _stat = cluster.zk.get(f"/config/brokers/{name}")
    return json.loads(data)["config"]


def error_of(future):
    """The Kafka error code and message a confluent-kafka future failed with (None: ok)."""
    exc = future.exception(30)
    if exc is None:
        return None
    error = exc.args[0]
    return error.code(), error.str()


# -- 1. broker configs as Kafka's DynamicBrokerConfig takes them ------------------------------


def test_broker_alter_configs_store_what_kafka_stores_and_refuse_static_keys(cluster,
                                                                             confluent):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    broker = str(min(cluster.brokers))
    # librdkafka's 0081: AlterConfigs with a per-broker SASL setting, NO_ERROR since Kafka 2.7.
    whole = ConfigResource(ResourceType.BROKER, broker,
                           set_config={"sasl.kerberos.min.time.before.relogin": "58000"})
    assert error_of(confluent.alter_configs([whole])[whole]) is None
    assert broker_znode(cluster, broker) == {"sasl.kerberos.min.time.before.relogin": "58000"}

    # KafkaJS: a topic key on a broker is a key Kafka does not know there; stored as it is.
    incremental = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("log.roll.jitter.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("sasl.kerberos.min.time.before.relogin", "59000",
                    incremental_operation=AlterConfigOpType.SET)])
    assert error_of(confluent.incremental_alter_configs([incremental])[incremental]) is None
    assert broker_znode(cluster, broker) == {
        "sasl.kerberos.min.time.before.relogin": "59000", "cleanup.policy": "compact",
        "log.roll.jitter.ms": "1000"}

    # Described as Kafka describes them: a known key with its value, an unknown one hidden.
    resource = ConfigResource(ResourceType.BROKER, broker)

    def described():
        return confluent.describe_configs([resource])[resource].result(30)

    cluster.wait_for(lambda: "cleanup.policy" in described(), "the change to reach the broker")
    entries = described()
    relogin = entries["sasl.kerberos.min.time.before.relogin"]
    assert relogin.value == "59000" and not relogin.is_read_only
    assert relogin.source == 2  # DYNAMIC_BROKER_CONFIG
    assert entries["cleanup.policy"].is_sensitive and entries["cleanup.policy"].value is None
    assert entries["log.roll.jitter.ms"].value == "1000"
    assert entries["log.retention.hours"].is_read_only

    # Refused as Kafka refuses them: INVALID_REQUEST, nothing written.
    for name, configs, message in (
            (broker, {"log.retention.hours": "1"}, "Cannot update these configs dynamically"),
            (broker, {"log.dirs": "/elsewhere"}, "Cannot update these configs dynamically"),
            (broker, {"ssl.keystore.location": "/k.pem"}, "only per-listener"),
            (broker, {"log.retention.ms": "soon"}, "retention.ms")):
        bad = ConfigResource(ResourceType.BROKER, name, set_config=configs)
        code, text = error_of(confluent.alter_configs([bad])[bad])
        assert code == KafkaError.INVALID_REQUEST, (configs, text)
        assert message in text and f"name='{name}'" in text, text
    assert "log.retention.hours" not in broker_znode(cluster, broker)
    # The cluster-wide default (confluent-kafka cannot name it): per-broker keys refused.
    with Admin(cluster.bootstrap_servers) as admin:
        with pytest.raises(ProtocolKafkaError, match="broker id must be specified") as refused:
            admin.alter_configs("broker", "", {"sasl.kerberos.min.time.before.relogin": "1"})
        assert refused.value.error_code == ErrorCode.INVALID_REQUEST
        admin.alter_configs("broker", broker, delete=[
            "sasl.kerberos.min.time.before.relogin", "cleanup.policy", "log.roll.jitter.ms"])
    assert broker_znode(cluster, broker) == {}


# -- 2. synonyms named by the broker key, in Kafka's order of sources -------------------------


def test_topic_synonyms_carry_the_broker_keys_name(cluster, confluent):
    from confluent_kafka.admin import ConfigResource, ResourceType
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    topic = unique("synonyms")
    broker = str(min(cluster.brokers))
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, config={"retention.ms": "600000"})
        admin.alter_configs("broker", "", {"log.retention.ms": "700000",
                                           "log.segment.bytes": "400000000"})
        admin.alter_configs("broker", broker, {"log.segment.bytes": "300000000"})
    try:
        resource = ConfigResource(ResourceType.TOPIC, topic)

        def described():
            return confluent.describe_configs([resource])[resource].result(30)

        def both_arrived() -> bool:
            now = described()
            retention = now["retention.ms"].synonyms.get("log.retention.ms")
            return (retention is not None and retention.value == "700000"
                    and now["segment.bytes"].value in ("300000000", "400000000"))

        cluster.wait_for(both_arrived, "the dynamic defaults to reach the brokers")
        retention = described()["retention.ms"]
        assert set(retention.synonyms) == {"retention.ms", "log.retention.ms",
                                           "log.retention.hours"}
        assert retention.synonyms["log.retention.ms"].value == "700000"

        def kafka_python_describe() -> dict:
            client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            try:
                answer = client.describe_configs([KpResource(ConfigResourceType.TOPIC, topic)],
                                                 include_synonyms=True, config_filter="all")
            finally:
                client.close()
            return answer["topic"][topic]

        def chain(key):
            return [(s["name"], s["value"], s["source"]) for s in configs[key]["synonyms"]]

        # kafka-python may ask another broker: wait until the cluster default reached it too
        deadline = time.monotonic() + 30
        while True:
            configs = kafka_python_describe()
            if chain("retention.ms")[1:2] == [("log.retention.ms", "700000",
                                                "DYNAMIC_DEFAULT_BROKER_CONFIG")] \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.2)

        assert chain("retention.ms") == [
            ("retention.ms", "600000", "DYNAMIC_TOPIC_CONFIG"),
            ("log.retention.ms", "700000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
            ("log.retention.hours", "168", "DEFAULT_CONFIG")]
        # Whichever broker answered: its own override (broker 1's), else none; then the
        # cluster default, the static setting and Kafka's default, all as log.segment.bytes.
        tail = [("log.segment.bytes", "400000000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                ("log.segment.bytes", STATIC_SEGMENT_BYTES, "STATIC_BROKER_CONFIG"),
                ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")]
        assert chain("segment.bytes") in (
            [("log.segment.bytes", "300000000", "DYNAMIC_BROKER_CONFIG"), *tail], tail)
        assert configs["segment.bytes"]["config_source"] in (
            "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        # Kafka drops the hours default of log.retention.ms' synonyms when nothing names .ms.
        assert chain("segment.ms") == []
        assert chain("max.message.bytes") == [("message.max.bytes", "1048588",
                                               "DEFAULT_CONFIG")]
    finally:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.alter_configs("broker", "", delete=["log.retention.ms", "log.segment.bytes"])
            admin.alter_configs("broker", broker, delete=["log.segment.bytes"])


# -- 3. three more topic configs --------------------------------------------------------------


def test_max_compaction_lag_downconversion_and_segment_jitter(cluster, confluent):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import ConfigResource, NewTopic, ResourceType

    topic = unique("three")
    created = confluent.create_topics([NewTopic(topic, 1, 1, config={
        "max.compaction.lag.ms": "3600000", "message.downconversion.enable": "false",
        "segment.jitter.ms": "5000"})])
    created[topic].result(30)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = confluent.describe_configs([resource])[resource].result(30)
    assert entries["max.compaction.lag.ms"].value == "3600000"
    assert entries["message.downconversion.enable"].value == "false"
    assert entries["segment.jitter.ms"].value == "5000"
    assert entries["segment.jitter.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG

    plain = unique("defaults")
    confluent.create_topics([NewTopic(plain, 1, 1)])[plain].result(30)
    other = ConfigResource(ResourceType.TOPIC, plain)
    defaults = confluent.describe_configs([other])[other].result(30)
    assert defaults["max.compaction.lag.ms"].value == str(2**63 - 1)
    assert defaults["message.downconversion.enable"].value == "true"
    assert defaults["segment.jitter.ms"].value == "0"
    assert defaults["max.compaction.lag.ms"].synonyms["log.cleaner.max.compaction.lag.ms"]

    for bad in ({"max.compaction.lag.ms": "0"}, {"segment.jitter.ms": "-1"},
                {"message.downconversion.enable": "maybe"},
                {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}):
        wrong = ConfigResource(ResourceType.TOPIC, topic, set_config=bad)
        code, text = error_of(confluent.alter_configs([wrong])[wrong])
        assert code == KafkaError.INVALID_CONFIG, (bad, text)
    assert confluent.describe_configs([resource])[resource].result(30)[
        "segment.jitter.ms"].value == "5000"


# -- 4. ListOffsets v0 ------------------------------------------------------------------------


def _exchange(address: str, payload: bytes) -> bytes:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(payload)
        size = b""
        while len(size) < 4:
            size += sock.recv(4 - len(size))
        (length,) = struct.unpack(">i", size)
        body = b""
        while len(body) < length:
            chunk = sock.recv(length - len(body))
            assert chunk, "connection closed"
            body += chunk
        return size + body


def test_list_offsets_v0_answers_segment_boundaries(cluster):
    from kafka.protocol.old.list_offsets import ListOffsetsRequest_v0, ListOffsetsResponse_v0

    assert ADVERTISED_VERSIONS[ApiKey.LIST_OFFSETS][0] == 0
    topic = unique("v0")
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=1,
                           config={"segment.bytes": "2000"})
    with Producer(cluster.bootstrap_servers, acks="all", linger_ms=0) as producer:
        for i in range(20):
            producer.send(topic, b"v" * 300, key=b"%d" % i).result(30)
    with KafkaClient(cluster.bootstrap_servers) as client:
        leader = client.leader_for(topic, 0)
    directory = cluster.partition_dir(leader, topic, 0)
    bases = sorted(int(p.stem) for p in directory.glob("*.log"))
    assert len(bases) > 3

    def ask(timestamp: int, max_num_offsets: int, correlation: int) -> list:
        request = ListOffsetsRequest_v0(replica_id=-1, topics=[
            (topic, [(0, timestamp, max_num_offsets)])])
        request.with_header(correlation_id=correlation)
        raw = _exchange(cluster.brokers[leader].address,
                        request.encode(header=True, framed=True))
        answer = ListOffsetsResponse_v0.decode(raw, header=True, framed=True)
        assert answer.header.correlation_id == correlation
        (name, partitions), = answer.topics
        (index, error, offsets), = partitions
        assert (name, index, error) == (topic, 0, 0)
        return list(offsets)

    # Latest: the log end, then each segment's base offset, newest first, as many as asked.
    assert ask(-1, 100, 1) == [20, *reversed(bases)]
    assert ask(-1, 2, 2) == [20, bases[-1]]
    assert ask(-2, 100, 3) == [0]  # earliest: the first segment's base only
    assert ask(-1, 1, 4) == [20]
    assert ask(0, 10, 5) == []  # every segment is younger than 1970


# -- 5. ListPartitionReassignments right after AlterPartitionReassignments ------------------


def test_list_right_after_alter_answers_the_full_replica_set(cluster):
    """KafkaJS's case, made certain: the controller, paused, cannot start the move between
    the two requests, which another broker answers (any broker takes them here)."""
    from kafka.admin import KafkaAdminClient

    first, second, third = sorted(cluster.brokers)
    controller = cluster.controller_id()
    answering = next(b for b in (first, second, third) if b != controller)
    topic = unique("moving")
    original, target = [first, third], [third, second]  # 0,2 -> 2,1 in KafkaJS's ids
    create_topic(cluster.zk, topic, 1, 2, replica_assignment={0: original})
    cluster.wait_for_isr(topic, 0, original, timeout=60)

    os.kill(cluster.brokers[controller].pid, signal.SIGSTOP)
    try:
        with KafkaClient(cluster.brokers[answering].address) as client:
            client.refresh_metadata([topic])
            altered = client.request(answering, ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
                "timeout_ms": 30000, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "replicas": target}]}]})
            assert altered.error_code == 0
            assert altered.responses[0].partitions[0].error_code == 0
            listed = client.request(answering, ApiKey.LIST_PARTITION_REASSIGNMENTS, {
                "timeout_ms": 30000, "topics": None})
        assert cluster.replicas_of(topic, 0) == tuple(original)  # the controller has not acted
        (answer,), = [t.partitions for t in listed.topics if t.name == topic]
        assert sorted(answer.replicas) == sorted({first, second, third})
        assert list(answer.replicas) == list(replicas_during(original, target))
        assert list(answer.adding_replicas) == [second]
        assert list(answer.removing_replicas) == [first]
    finally:
        os.kill(cluster.brokers[controller].pid, signal.SIGCONT)

    # The controller writes that same set (or has already finished the move), and the
    # move completes; then nothing is listed (kafka-python's admin, sent to the controller).
    cluster.wait_for(lambda: cluster.replicas_of(topic, 0) in (
        tuple(replicas_during(original, target)), tuple(target)), "the move to start", 60)
    cluster.wait_for(lambda: cluster.replicas_of(topic, 0) == tuple(target),
                     "the move to finish", 90)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        cluster.wait_for(lambda: not any(tp.topic == topic
                                         for tp in admin.list_partition_reassignments()),
                         "the move to leave the listing", 30)
    finally:
        admin.close()


# -- 6. Kafka 3.9's whole broker config set ---------------------------------------------------


def test_describe_answers_every_kafka_broker_config_typed_and_documented(cluster, confluent):
    """confluent-kafka (DescribeConfigs v1, synonyms) sees every key of Kafka 3.9's broker
    config set and SimpleKafka's own, passwords null; kafka-python's v4 request with
    include_documentation gets each key's type and documentation, which says whether
    SimpleKafka acts on it."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin.configs import DescribeConfigsRequest

    from simplekafka.broker.config import KEYS
    from simplekafka.broker.kafka_configs import CONFIG_TYPES, KAFKA_BROKER_CONFIGS

    broker = str(min(cluster.brokers))
    everything = set(KEYS) | set(KAFKA_BROKER_CONFIGS)
    resource = ConfigResource(ResourceType.BROKER, broker)
    entries = confluent.describe_configs([resource], request_timeout=30)[resource].result(30)
    # every key; beyond them only per-listener settings and keys Kafka does not know
    assert everything <= set(entries)
    assert len(everything) == 314 + len(set(KEYS) - set(KAFKA_BROKER_CONFIGS))
    # Kafka's default, source DEFAULT_CONFIG (5), read-only or not as Kafka decides
    relogin = entries["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.source, relogin.is_read_only) == ("60000", 5, False)
    inflight = entries["zookeeper.max.in.flight.requests"]
    assert (inflight.value, inflight.is_read_only) == ("10", True)
    # the broker's configuration sets log.segment.bytes: STATIC_BROKER_CONFIG (4), then Kafka's
    segment = entries["log.segment.bytes"]
    assert segment.source == 4 and segment.value == STATIC_SEGMENT_BYTES
    # confluent-kafka keys synonyms by name: the last one named so is Kafka's default
    assert segment.synonyms["log.segment.bytes"].source == 5
    for name, spec in KAFKA_BROKER_CONFIGS.items():
        if spec.sensitive:
            assert entries[name].is_sensitive and entries[name].value is None, name

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        request = DescribeConfigsRequest(resources=[(4, broker, None)], include_synonyms=True,
                                         include_documentation=True, min_version=3)
        answer = client._manager.run(functools.partial(client._manager.send, request,
                                                       node_id=int(broker)))
    finally:
        client.close()
    assert answer.API_VERSION == 4  # flexible
    (result,) = answer.results
    configs = {c.name: c for c in result.configs}
    assert everything <= set(configs)
    relogin = configs["sasl.kerberos.min.time.before.relogin"]
    assert relogin.config_type == CONFIG_TYPES["LONG"]
    assert "SimpleKafka ignores it" in relogin.documentation
    assert "per-broker, per listener" in relogin.documentation
    retention = configs["log.retention.ms"]
    assert retention.config_type == CONFIG_TYPES["LONG"]
    assert "ignores" not in retention.documentation and "cluster-wide" in retention.documentation
    assert configs["ssl.keystore.password"].config_type == CONFIG_TYPES["PASSWORD"]
    assert configs["ssl.keystore.password"].value is None
    assert "own key" in configs["metrics.listener"].documentation
    assert all(c.documentation for c in result.configs if c.name in everything)


def test_kafka_keys_altered_as_kafka_39_alters_them(cluster, confluent):
    """The librdkafka case (a dynamic Kafka key SimpleKafka does not act on is stored and
    described), a dynamic per-listener key, Kafka's type checks, and a static Kafka key
    refused read-only with Kafka's error."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    broker = str(max(cluster.brokers))

    def alter(configs: dict[str, str]):
        resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in configs.items()])
        return error_of(confluent.incremental_alter_configs([resource])[resource])

    listener_key = "listener.name.plaintext.max.connections"
    assert alter({"sasl.kerberos.min.time.before.relogin": "61000", listener_key: "500",
                  "num.io.threads": "4"}) is None
    assert broker_znode(cluster, broker) == {
        "sasl.kerberos.min.time.before.relogin": "61000", listener_key: "500",
        "num.io.threads": "4"}
    resource = ConfigResource(ResourceType.BROKER, broker)

    def described():
        return confluent.describe_configs([resource])[resource].result(30)

    cluster.wait_for(lambda: listener_key in described(), "the change to reach the broker")
    entries = described()
    assert entries["num.io.threads"].value == "4" and entries["num.io.threads"].source == 2
    # read_only as Kafka answers it: its dynamic set names the base key, not the prefixed one
    assert entries[listener_key].value == "500" and entries[listener_key].source == 2
    assert entries[listener_key].is_read_only

    for configs, message in (
            ({"zookeeper.max.in.flight.requests": "5"},
             "Cannot update these configs dynamically: Set(zookeeper.max.in.flight.requests)"),
            ({"num.io.threads": "many"},
             "Invalid value many for configuration num.io.threads: Not a number of type INT"),
            ({listener_key: "x"}, f"Invalid value x for configuration {listener_key}"),
            ({"background.threads": "0"}, "Value must be at least 1"),
            ({"compression.type": "lz5"}, "String must be one of")):
        code, text = alter(configs)
        assert code == KafkaError.INVALID_REQUEST, (configs, text)
        assert message in text and f"name='{broker}'" in text, text
    assert "zookeeper.max.in.flight.requests" not in broker_znode(cluster, broker)
    with Admin(cluster.bootstrap_servers) as admin:
        admin.alter_configs("broker", broker, delete=[
            "sasl.kerberos.min.time.before.relogin", listener_key, "num.io.threads"])
    assert broker_znode(cluster, broker) == {}
