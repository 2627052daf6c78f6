"""Topic and broker configs: described, altered, and in effect on the broker without a restart.

confluent-kafka (describe_configs, alter_configs, incremental_alter_configs),
kafka-python's admin client, our Admin and ``simplekafka configs``. Each change
lands in ``/config/topics/<t>`` or ``/config/brokers/...`` with a
``/config/changes`` notification; a new client sees it, and the broker applies
it at once (a refused or accepted batch, segments deleted by retention).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client.errors import MessageTooLargeError, NotEnoughReplicasError
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.processes import wait_until as _poll
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Retention runs every 300 ms here, so a retention change shows within a second or two.
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("configs"), metrics=False,
                         broker_config={"log.retention.check.interval.ms": "300"})
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def admin(cluster):
    with Admin(cluster.bootstrap_servers, request_timeout_ms=30_000) as a:
        yield a


def fresh_value(cluster, topic: str, key: str) -> str | None:
    """What a brand-new client reads."""
    with Admin(cluster.bootstrap_servers) as fresh:
        return fresh.describe_configs("topic", topic)[key].value


def produce(cluster, topic: str, size: int, acks="all"):
    # No retries: a refusal (NOT_ENOUGH_REPLICAS is retriable) is seen at once.
    with Producer(cluster.bootstrap_servers, acks=acks, max_request_size=10_000_000,
                  retries=0) as p:
        return p.send(topic, b"x" * size).result(30)


def wait_until(condition, what: str, timeout: float = 30.0):
    _poll(condition, what, timeout=timeout, interval=0.1, error=AssertionError)


def test_confluent_describe_alter_and_incremental_alter(cluster, admin):
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    topic = unique("cfg-confluent")
    admin.create_topic(topic, config={"retention.ms": "600000"})
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    described = client.describe_configs([resource])[resource].result(30)
    assert described["retention.ms"].value == "600000"
    assert described["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["max.message.bytes"].is_default
    assert described["cleanup.policy"].value == "delete"

    # AlterConfigs replaces the whole set: retention.ms goes back to the default.
    whole = ConfigResource(ResourceType.TOPIC, topic, set_config={"max.message.bytes": "5000"})
    client.alter_configs([whole])[whole].result(30)
    assert fresh_value(cluster, topic, "max.message.bytes") == "5000"
    assert fresh_value(cluster, topic, "retention.ms") == "604800000"

    incremental = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("min.insync.replicas", "1",
                    incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("max.message.bytes", None,
                    incremental_operation=AlterConfigOpType.DELETE)])
    client.incremental_alter_configs([incremental])[incremental].result(30)
    assert fresh_value(cluster, topic, "max.message.bytes") == str(1024 * 1024 + 12)
    assert fresh_value(cluster, topic, "min.insync.replicas") == "1"
    assert json.loads(cluster.zk.get(f"/config/topics/{topic}")[0])["config"] == {
        "min.insync.replicas": "1"}
    changes = cluster.zk.get_children("/config/changes")
    assert any(c.startswith("config_change_") for c in changes)

    bad = ConfigResource(ResourceType.TOPIC, topic, set_config={"no.such.key": "1"})
    assert client.alter_configs([bad])[bad].exception(30) is not None
    broker = ConfigResource(ResourceType.BROKER, "1")
    broker_configs = client.describe_configs([broker])[broker].result(30)
    assert broker_configs["broker.id"].value == "1" and broker_configs["broker.id"].is_read_only
    assert not broker_configs["log.retention.ms"].is_read_only


def test_kafka_python_describe_and_alter(cluster, admin):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    topic = unique("cfg-kp")
    admin.create_topic(topic)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                             configs={"retention.bytes": "123456"})])
        answer = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        # {resource type: {name: {key: {"value": ..., ...}}}}, only the modified keys
        described = answer["topic"][topic]
        assert described["retention.bytes"]["value"] == "123456", described
    finally:
        client.close()
    assert fresh_value(cluster, topic, "retention.bytes") == "123456"


def test_max_message_bytes_change_takes_effect_at_once(cluster, admin):
    topic = unique("cfg-size")
    admin.create_topic(topic)
    produce(cluster, topic, 20_000)
    admin.alter_configs("topic", topic, {"max.message.bytes": "10000"})
    wait_until(lambda: _refused(cluster, topic, 20_000), "the smaller limit to apply")
    produce(cluster, topic, 5_000)
    admin.alter_configs("topic", topic, delete=["max.message.bytes"])
    wait_until(lambda: not _refused(cluster, topic, 20_000), "the limit to be lifted")


def _refused(cluster, topic: str, size: int) -> bool:
    try:
        produce(cluster, topic, size)
    except MessageTooLargeError:
        return True
    return False


def test_min_insync_replicas_change_takes_effect_at_once(cluster, admin):
    topic = unique("cfg-isr")
    admin.create_topic(topic)
    admin.alter_configs("topic", topic, {"min.insync.replicas": "2"})

    def refused() -> bool:
        try:
            produce(cluster, topic, 10)
        except NotEnoughReplicasError:
            return True
        return False

    wait_until(refused, "acks=all to be refused below min.insync.replicas")
    produce(cluster, topic, 10, acks=1)  # acks=1 does not care
    admin.alter_configs("topic", topic, delete=["min.insync.replicas"])
    wait_until(lambda: not refused(), "acks=all to be accepted again")


def test_retention_change_deletes_old_segments(cluster, admin):
    topic = unique("cfg-retention")
    admin.create_topic(topic, config={"segment.bytes": "2000"})
    with Producer(cluster.bootstrap_servers, acks="all", linger_ms=0) as producer:
        for i in range(40):
            producer.send(topic, b"r" * 300, key=b"%d" % i).result(30)
    directory = cluster.partition_dir(1, topic, 0)
    segments = sorted(directory.glob("*.log"))
    assert len(segments) > 3
    time.sleep(1.5)  # nothing is deleted under the default (7 days)
    assert sorted(directory.glob("*.log")) == segments
    admin.alter_configs("topic", topic, {"retention.ms": "1000"})
    wait_until(lambda: len(list(directory.glob("*.log"))) == 1, "old segments deleted")
    with Admin(cluster.bootstrap_servers) as fresh:
        assert fresh.describe_configs("topic", topic)["retention.ms"].value == "1000"


def run_cli(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "configs", *args,
                           "--bootstrap-server", cluster.bootstrap_servers],
                          capture_output=True, text=True, timeout=120)


def test_cli_describe_alter_topics_and_dynamic_broker_defaults(cluster, admin):
    topic = unique("cfg-cli")
    admin.create_topic(topic)
    done = run_cli(cluster, "--alter", "--entity-type", "topics", "--entity-name", topic,
                   "--add-config", "retention.ms=700000,segment.ms=600000")
    assert done.returncode == 0, done.stderr
    shown = run_cli(cluster, "--describe", "--entity-type", "topics", "--entity-name", topic)
    assert "retention.ms=700000 (DYNAMIC_TOPIC_CONFIG)" in shown.stdout
    done = run_cli(cluster, "--alter", "--entity-type", "topics", "--entity-name", topic,
                   "--delete-config", "segment.ms")
    assert done.returncode == 0, done.stderr
    assert fresh_value(cluster, topic, "segment.ms") != "600000"

    # A dynamic cluster-wide default: every topic without its own override follows it.
    done = run_cli(cluster, "--alter", "--entity-type", "brokers", "--entity-default",
                   "--add-config", "message.max.bytes=8000")
    assert done.returncode == 0, done.stderr
    try:
        wait_until(lambda: _refused(cluster, topic, 20_000), "the dynamic default to apply")
        shown = run_cli(cluster, "--describe", "--entity-type", "brokers", "--entity-name", "1")
        assert "message.max.bytes=8000 (DYNAMIC_DEFAULT_BROKER_CONFIG)" in shown.stdout
        assert fresh_value(cluster, topic, "max.message.bytes") == "8000"
    finally:
        done = run_cli(cluster, "--alter", "--entity-type", "brokers", "--entity-default",
                       "--delete-config", "message.max.bytes")
        assert done.returncode == 0, done.stderr
    wait_until(lambda: not _refused(cluster, topic, 20_000), "the default to be lifted")

    for bad in (["--entity-type", "brokers", "--entity-name", "1", "--add-config", "broker.id=7"],
                ["--entity-type", "topics", "--entity-name", topic, "--add-config", "nokey"],
                ["--entity-type", "topics", "--entity-name", topic,
                 "--add-config", "retention.ms=soon"]):
        refused = run_cli(cluster, "--alter", *bad)
        assert refused.returncode != 0, bad
        assert "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_cleanup_policy_change_takes_effect(cluster, admin):
    """A compact-only topic loses nothing to retention (there is no compaction yet);
    switched to ``delete``, its old segments go at the next check."""
    topic = unique("cfg-cleanup")
    admin.create_topic(topic, config={"segment.bytes": "2000", "retention.ms": "1000",
                                      "cleanup.policy": "compact"})
    with Producer(cluster.bootstrap_servers, acks="all", linger_ms=0) as producer:
        for i in range(30):
            producer.send(topic, b"c" * 300, key=b"%d" % i).result(30)
    directory = cluster.partition_dir(1, topic, 0)
    segments = sorted(directory.glob("*.log"))
    assert len(segments) > 3
    time.sleep(2.5)  # retention.ms has passed, several retention checks ran
    assert sorted(directory.glob("*.log")) == segments
    admin.alter_configs("topic", topic, {"cleanup.policy": "compact,delete"})
    wait_until(lambda: len(list(directory.glob("*.log"))) == 1, "old segments deleted")


def test_a_topic_limit_above_the_brokers_is_honoured(cluster, admin):
    topic = unique("cfg-above")
    admin.create_topic(topic, config={"max.message.bytes": "60000"})
    admin.alter_configs("broker", "", {"message.max.bytes": "8000"})
    try:
        other = unique("cfg-below")
        admin.create_topic(other)
        wait_until(lambda: _refused(cluster, other, 20_000), "the broker limit to apply")
        produce(cluster, topic, 20_000)  # the topic's own, larger, limit wins
        with pytest.raises(MessageTooLargeError):
            produce(cluster, topic, 70_000)
    finally:
        admin.alter_configs("broker", "", delete=["message.max.bytes"])


@pytest.mark.parametrize("name", ["bad name!", "a/b", "x" * 250])
def test_illegal_topic_names_get_invalid_topic_and_the_broker_carries_on(cluster, admin, name):
    from simplekafka.client.errors import InvalidTopicError

    with pytest.raises(InvalidTopicError):
        admin.describe_configs("topic", name)
    with pytest.raises(InvalidTopicError):
        admin.alter_configs("topic", name, {"retention.ms": "1000"})
    with pytest.raises(InvalidTopicError):
        admin.create_partitions({name: 3})
    topic = unique("cfg-after")
    admin.create_topic(topic)
    assert admin.describe_configs("topic", topic)["retention.ms"].value == "604800000"
