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


def rows(table: str) -> list[list[str]]:
    """The cells of an aligned table's lines (no cell holds a space)."""
    return [line.split() for line in table.splitlines()]


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
    # The rest and no more (a record read again would take a new one's place, and the
    # sorted check below would miss the new one), rather than idling 3 s after the last.
    rest = run("consume", topic, "--group", group, "--from-beginning", "-c", str(RECORDS - 8),
               "--idle-timeout-ms", "30000", "-b", b)
    assert rest.returncode == 0, rest.stderr
    values = first.stdout.split() + rest.stdout.split()
    assert sorted(values) == sorted(f"v{i}" for i in range(RECORDS))

    listed = run("groups", "list", "-b", b)
    assert listed.returncode == 0 and group in listed.stdout
    described = run("groups", "describe", group, "-b", b)
    assert described.returncode == 0, described.stderr
    assert f"Consumer group '{group}' has no active members." in described.stdout
    assert [group, topic, "0", "10", "10", "0", "-", "-", "-"] in rows(described.stdout)
    assert "\t" not in described.stdout + listed.stdout

    reset = run("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "4",
                "--execute", "-b", b)
    assert reset.returncode == 0, reset.stderr
    assert [group, topic, "0", "4"] in rows(reset.stdout)
    assert [group, topic, "1", "4"] in rows(reset.stdout)
    again = run("consume", topic, "--group", group, "--idle-timeout-ms", "3000", "-b", b)
    assert len(again.stdout.split()) == RECORDS - 8  # from offset 4 in both partitions
    latest = run("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "-b", b)
    assert [group, topic, "1", "10"] in rows(latest.stdout)

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
        assert {"group_id": group, "protocol_type": "consumer"} in [
            {k: g[k] for k in ("group_id", "protocol_type")} for g in kp.list_groups()]
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


def test_describe_an_unknown_group_is_an_error(admin_cluster):
    b = admin_cluster.bootstrap_servers
    result = run("groups", "describe", f"nosuchgroup-{uuid.uuid4().hex[:6]}", "-b", b)
    assert result.returncode == 1
    [message] = result.stderr.strip().splitlines()
    assert "does not exist" in message and "Traceback" not in message
    assert result.stdout == "" and "Dead" not in result.stderr


def test_describe_shows_members_in_kafkas_layout(admin_cluster, topic):
    b = admin_cluster.bootstrap_servers
    group = f"members-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(bootstrap_servers=b, group_id=group, client_id="reader-1",
                        enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
        consumer.poll(200)
    consumer.commit({(topic, 0): 3})
    try:
        offsets = run("groups", "describe", group, "-b", b)
        assert offsets.returncode == 0, offsets.stderr
        header, *lines = rows(offsets.stdout)
        assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                          "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        member = lines[0][6]
        assert lines == [[group, topic, "0", "3", "10", "7", member, "127.0.0.1", "reader-1"],
                         [group, topic, "1", "-", "10", "-", member, "127.0.0.1", "reader-1"]]
        members = run("groups", "describe", group, "--members", "--verbose", "-b", b)
        assert rows(members.stdout) == [
            ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
             "ASSIGNMENT"],
            [group, member, "-", "127.0.0.1", "reader-1", "2", f"{topic}(0,1)"]]
        state = run("groups", "describe", group, "--state", "-b", b)
        assert rows(state.stdout)[1][-3:] == ["range", "Stable", "1"]
        # The columns line up: every cell starts where its header does.
        table = offsets.stdout.splitlines()
        starts = [table[0].index(name) for name in ("TOPIC", "LAG", "CLIENT-ID")]
        for line, cells in zip(table[1:], lines):
            assert [line.index(cells[i], start) for i, start in
                    zip((1, 5, 8), starts)] == starts
    finally:
        consumer.close()


def test_reset_offsets_shows_a_plan_and_changes_nothing_without_execute(admin_cluster,
                                                                      tmp_path):
    """Kafka's tool: a plan by default, --execute applies it; committed offsets read back
    with confluent-kafka."""
    from confluent_kafka import Consumer as CkConsumer
    from confluent_kafka import TopicPartition as CkTP

    b = admin_cluster.bootstrap_servers
    topic = f"reset-{uuid.uuid4().hex[:8]}"
    base = 1_000_000_000_000  # 2001-09-09T01:46:40Z; record i is i minutes later
    with Admin(b) as admin:
        admin.create_topic(topic, num_partitions=PARTITIONS)
    with Producer(bootstrap_servers=b) as producer:
        for p in range(PARTITIONS):
            for i in range(10):
                producer.send(topic, f"v{i}".encode(), partition=p, timestamp=base + i * 60_000)
    group = f"reset-{uuid.uuid4().hex[:8]}"
    with Consumer(bootstrap_servers=b, group_id=group, enable_auto_commit=False) as consumer:
        consumer.commit({(topic, 0): 5, (topic, 1): 5})
    checker = CkConsumer({"bootstrap.servers": b, "group.id": group})

    def committed() -> list[int]:
        found = checker.committed([CkTP(topic, p) for p in range(PARTITIONS)], timeout=20)
        return [tp.offset for tp in found]

    def reset(*args: str) -> subprocess.CompletedProcess:
        return run("groups", "reset-offsets", group, *args, "-b", b)

    try:
        plan = reset("--topic", topic, "--to-earliest")
        assert plan.returncode == 0, plan.stderr
        assert rows(plan.stdout) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                     [group, topic, "0", "0"], [group, topic, "1", "0"]]
        assert "--execute" in plan.stderr
        dry = reset("--all-topics", "--to-earliest", "--dry-run")
        assert dry.returncode == 0 and rows(dry.stdout) == rows(plan.stdout)
        assert committed() == [5, 5]  # nothing changed

        done = reset("--topic", topic, "--to-earliest", "--execute")
        assert done.returncode == 0 and rows(done.stdout) == rows(plan.stdout)
        assert committed() == [0, 0]

        def applied(*args: str) -> list[int]:
            result = reset(*args, "--execute")
            assert result.returncode == 0, result.stderr
            return committed()

        assert applied("--all-topics", "--shift-by", "3") == [3, 3]
        assert applied("--topic", f"{topic}:1", "--shift-by", "-5") == [3, 0]  # clamped
        assert applied("--topic", f"{topic}:1", "--to-offset", "99") == [3, 10]  # clamped
        assert applied("--topic", topic, "--to-datetime", "2001-09-09T01:50:40.000Z") == [4, 4]
        assert applied("--topic", f"{topic}:0", "--to-datetime",
                       "2001-09-09T03:52:40+02:00") == [6, 4]
        assert applied("--all-topics", "--by-duration", "PT1H") == [10, 10]  # all older
        assert applied("--topic", topic, "--to-latest") == [10, 10]
        plan_file = tmp_path / "plan.csv"
        plan_file.write_text(f"{topic},0,2\n{topic},1,7\n")
        assert applied("--from-file", str(plan_file)) == [2, 7]
        exported = reset("--all-topics", "--to-current", "--export")
        assert exported.stdout.splitlines() == [f"{topic},0,2", f"{topic},1,7"]
        assert committed() == [2, 7]

        # An active group is refused, plan or not, as Kafka's tool refuses it.
        member = Consumer(bootstrap_servers=b, group_id=group, enable_auto_commit=False)
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(200)
        try:
            refused = reset("--topic", topic, "--to-earliest", "--execute")
            assert refused.returncode == 1
            [message] = refused.stderr.strip().splitlines()
            assert "inactive" in message and "Stable" in message
        finally:
            member.close(autocommit=False)
        assert committed() == [2, 7]

        for mistake in (["--to-earliest"],  # no scope
                        ["--topic", topic, "--by-duration", "1h"],
                        ["--topic", topic, "--to-datetime", "yesterday"],
                        ["--topic", f"{topic}:x", "--to-latest"],
                        ["--topic", topic, "--to-latest", "--execute", "--dry-run"]):
            wrong = reset(*mistake)
            assert wrong.returncode == 2, (mistake, wrong.stderr)
            assert len(wrong.stderr.strip().splitlines()) == 1 and "Traceback" not in wrong.stderr
    finally:
        checker.close()
