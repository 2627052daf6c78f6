"""Managing groups: Admin list/describe/delete/reset, the ``groups`` CLI, ``consume --group``."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.client.errors import KafkaError
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

PARTITIONS = 2
RECORDS = 20


@pytest.fixture(scope="module")
def admin_cluster(tmp_path_factory):
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("group-admin"),
                      broker_config={"group.initial.rebalance.delay.ms": 100}) as cluster:
        yield cluster


@pytest.fixture
def topic(admin_cluster):
    name = f"admin-{uuid.uuid4().hex[:8]}"
    with Admin(admin_cluster.bootstrap_servers) as admin:
        admin.create_topic(name, num_partitions=PARTITIONS)
    with Producer(bootstrap_servers=admin_cluster.bootstrap_servers) as producer:
        for i in range(RECORDS):
            producer.send(name, f"v{i}".encode(), partition=i % PARTITIONS)
    return name


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_admin_lists_describes_resets_and_deletes_groups(admin_cluster, topic):
    bootstrap = admin_cluster.bootstrap_servers
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False)
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 15 and time.monotonic() < deadline:
        seen += len(consumer.poll(300, max_records=15 - seen))
    consumer.commit()
    with Admin(bootstrap) as admin:
        assert (group, "consumer") in admin.list_groups()
        described = admin.describe_group(group)
        assert described.state == "Stable" and described.protocol == "range"
        assert len(described.members) == 1
        assert sorted(described.members[0].assignment) == [
            TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = sum(o.committed for o in described.offsets.values())
        lag = sum(o.lag for o in described.offsets.values())
        assert committed == 15 and lag == RECORDS - 15
        with pytest.raises(KafkaError, match="NON_EMPTY_GROUP"):
            admin.reset_offsets(group, topic, "earliest")
        with pytest.raises(KafkaError, match="NON_EMPTY_GROUP"):
            admin.delete_groups([group])
        consumer.close()
        assert admin.describe_group(group).state == "Empty"
        assert admin.reset_offsets(group, topic, "earliest") == {
            TopicPartition(topic, p): 0 for p in range(PARTITIONS)}
        assert admin.reset_offsets(group, topic, 3, partitions=[1]) == {
            TopicPartition(topic, 1): 3}
        offsets = admin.describe_group(group).offsets
        assert [offsets[TopicPartition(topic, p)].committed for p in range(PARTITIONS)] == [0, 3]
        admin.delete_groups([group])
        assert group not in [g for g, _ in admin.list_groups()]
        assert admin.describe_group(group).state == "Dead"


def test_groups_cli_and_consume_with_a_group(admin_cluster, topic):
    b = admin_cluster.bootstrap_servers
    group = f"cli-{uuid.uuid4().hex[:8]}"
    first = run("consume", topic, "--group", group, "--from-beginning", "-c", "8", "-b", b)
    assert first.returncode == 0, first.stderr
    rest = run("consume", topic, "--group", group, "--from-beginning",
               "--idle-timeout-ms", "3000", "-b", b)
    assert rest.returncode == 0, rest.stderr
    values = first.stdout.split() + rest.stdout.split()
    assert sorted(values) == sorted(f"v{i}" for i in range(RECORDS))

    listed = run("groups", "list", "-b", b)
    assert listed.returncode == 0 and group in listed.stdout
    described = run("groups", "describe", group, "-b", b)
    assert described.returncode == 0, described.stderr
    assert "Empty" in described.stdout and f"{topic}\t0\t10\t10\t0" in described.stdout

    reset = run("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "4", "-b", b)
    assert reset.returncode == 0, reset.stderr
    assert f"{topic}\t0\t4" in reset.stdout and f"{topic}\t1\t4" in reset.stdout
    again = run("consume", topic, "--group", group, "--idle-timeout-ms", "3000", "-b", b)
    assert len(again.stdout.split()) == RECORDS - 8  # from offset 4 in both partitions
    latest = run("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "-b", b)
    assert f"{topic}\t1\t10" in latest.stdout

    # Mistakes: one line, exit 2 (bad arguments) or 1 (what the cluster refused).
    no_target = run("groups", "reset-offsets", group, "--topic", topic, "-b", b)
    assert no_target.returncode == 2 and len(no_target.stderr.strip().splitlines()) == 1
    negative = run("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "-1",
                   "-b", b)
    assert negative.returncode == 2
    mixed = run("consume", topic, "--group", group, "--partition", "0", "-b", b)
    assert mixed.returncode == 2 and "--group" in mixed.stderr
    unknown = run("groups", "delete", f"nobody-{uuid.uuid4().hex[:6]}", "-b", b)
    assert unknown.returncode == 1 and "GROUP_ID_NOT_FOUND" in unknown.stderr
    assert "Traceback" not in unknown.stderr + negative.stderr + no_target.stderr

    deleted = run("groups", "delete", group, "-b", b)
    assert deleted.returncode == 0, deleted.stderr
    assert group not in run("groups", "list", "-b", b).stdout


def test_other_admin_clients_see_our_groups(admin_cluster, topic):
    """kafka-python's and confluent-kafka's admin clients list and describe our groups."""
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTP

    bootstrap = admin_cluster.bootstrap_servers
    group = f"theirs-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(200)
    consumer.commit({(topic, 0): 4})
    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert {"group_id": group, "protocol_type": "consumer"} in kp.list_groups()
        described = kp.describe_groups([group])[group]
        assert described["group_state"] == "Stable" and described["protocol_data"] == "range"
        [member] = described["members"]
        assert member["member_assignment"]["assigned_partitions"] == [
            {"topic": topic, "partitions": list(range(PARTITIONS))}]
        offsets = kp.list_group_offsets(group)[group]
        assert offsets[KpTP(topic, 0)].offset == 4
    finally:
        kp.close()
    ck = AdminClient({"bootstrap.servers": bootstrap})
    listed = ck.list_consumer_groups(request_timeout=30).result()
    assert group in [g.group_id for g in listed.valid]
    description = ck.describe_consumer_groups([group], request_timeout=30)[group].result()
    assert str(description.state).endswith("STABLE")
    assert sorted(tp.partition for tp in description.members[0].assignment.topic_partitions) \
        == list(range(PARTITIONS))
    consumer.close()
