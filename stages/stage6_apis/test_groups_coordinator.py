"""The group coordinator on three brokers: failover, wrong-broker requests, bad input.

``__consumer_offsets`` is replicated (factor 3, capped by the live brokers), so
when the coordinator's broker is SIGKILLed while a group commits, the new
leader of the group's partition loads the commits back and the group carries
on there: no acknowledged commit is lost. Requests that break the rules get
Kafka's error code and change nothing.
"""

from __future__ import annotations

import struct
import threading
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.client import KafkaClient
from simplekafka.client.errors import KafkaError
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from stages.stage4_broker._interop import connect, frame, read_frame

pytestmark = pytest.mark.integration

FAST = {"zookeeper.session.timeout.ms": "6000", "group.initial.rebalance.delay.ms": "200"}


@pytest.fixture(scope="module")
def three_brokers(tmp_path_factory):
    with LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("coordinator"),
                      broker_config=FAST) as cluster:
        yield cluster


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def find_coordinator(client: KafkaClient, group: str, timeout: float = 60.0,
                     other_than: int | None = None) -> int:
    """The group's coordinator (once it is not ``other_than``: a killed broker is only
    replaced when its ZooKeeper session expires)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            answer = client.request(client.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                    {"key": group, "key_type": 0}, timeout_ms=5000)
            last = ErrorCode.of(answer.error_code)
            if answer.error_code == 0 and answer.node_id != other_than:
                return answer.node_id
        except KafkaError as exc:
            last = exc
        assert time.monotonic() < deadline, f"no coordinator: {last}"
        time.sleep(0.2)


def joined_member(bootstrap: str, topic: str, group: str) -> Consumer:
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                        auto_offset_reset="earliest", session_timeout_ms=10_000,
                        heartbeat_interval_ms=1000, request_timeout_ms=60_000)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never got its partitions"
        consumer.poll(200)
    return consumer


def test_coordinator_killed_while_the_group_commits(three_brokers):
    bootstrap = three_brokers.bootstrap_servers
    topic, group = unique("failover"), unique("failover")
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=3)
    consumer = joined_member(bootstrap, topic, group)
    client = KafkaClient(bootstrap)
    coordinator = find_coordinator(client, group)
    acknowledged = [0]
    stop = threading.Event()
    errors: list[BaseException] = []

    def commit_forever() -> None:
        offset = 0
        while not stop.is_set():
            offset += 1
            try:
                consumer.commit({(topic, 0): offset})
            except KafkaError as exc:  # a commit that failed was not acknowledged
                errors.append(exc)
                continue
            acknowledged[0] = offset

    committer = threading.Thread(target=commit_forever, daemon=True)
    committer.start()
    try:
        deadline = time.monotonic() + 30
        while acknowledged[0] < 50:
            assert time.monotonic() < deadline, "commits are not being acknowledged"
            time.sleep(0.05)
        three_brokers.kill(coordinator)
        before_kill = acknowledged[0]
        find_coordinator(client, group, timeout=60, other_than=coordinator)
        deadline = time.monotonic() + 60
        while acknowledged[0] < before_kill + 50:
            assert time.monotonic() < deadline, \
                f"commits did not resume on the new coordinator (errors: {errors[-3:]})"
            time.sleep(0.05)
    finally:
        stop.set()
        committer.join(60)
    assert not committer.is_alive()
    checker = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    assert checker.committed((topic, 0)) == acknowledged[0]
    checker.close()
    consumer.close()
    client.close()
    three_brokers.restart(coordinator)
    three_brokers.wait_until_serving([coordinator])


def test_confluent_group_follows_the_killed_coordinator(three_brokers):
    """librdkafka's consumer commits through the failover too, and keeps every ack."""
    from confluent_kafka import Consumer as CkConsumer
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as CkTP

    bootstrap = three_brokers.bootstrap_servers
    three_brokers.wait_until_serving(three_brokers.brokers)
    topic, group = unique("ck-failover"), unique("ck-failover")
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=3)
    consumer = CkConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "enable.auto.commit": False, "session.timeout.ms": 10_000})
    consumer.subscribe([topic])
    client = KafkaClient(bootstrap)
    coordinator = find_coordinator(client, group)
    acknowledged, offset, killed_at = 0, 0, None
    deadline = time.monotonic() + 120
    try:
        while acknowledged < (killed_at or 10**9) + 50:
            assert time.monotonic() < deadline, f"stuck at {acknowledged} (killed at {killed_at})"
            consumer.poll(0.01)
            if not consumer.assignment():
                continue
            offset += 1
            try:
                consumer.commit(offsets=[CkTP(topic, 0, offset)], asynchronous=False)
            except KafkaException:
                time.sleep(0.05)
                continue
            acknowledged = offset
            if killed_at is None and acknowledged >= 50:
                three_brokers.kill(coordinator)
                killed_at = acknowledged
    finally:
        consumer.close()
    find_coordinator(client, group, other_than=coordinator)  # moved, and answering
    checker = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    assert checker.committed((topic, 0)) == acknowledged
    checker.close()
    client.close()
    three_brokers.restart(coordinator)
    three_brokers.wait_until_serving([coordinator])


def raw(client: KafkaClient, node: int, api_key: ApiKey, body: dict):
    return client.request(node, api_key, body)


def test_bad_group_requests_get_kafka_error_codes_and_change_nothing(three_brokers):
    bootstrap = three_brokers.bootstrap_servers
    topic, group = unique("bad"), unique("bad")
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=1)
    consumer = joined_member(bootstrap, topic, group)
    consumer.commit({(topic, 0): 3})
    client = KafkaClient(bootstrap)
    client.refresh_metadata()
    coordinator = find_coordinator(client, group)
    member_id, generation = consumer._group.member_id, consumer._group.generation

    def commit(member: str, gen: int, offset: int = 99) -> int:
        answer = raw(client, coordinator, ApiKey.OFFSET_COMMIT, {
            "group_id": group, "generation_id_or_member_epoch": gen, "member_id": member,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset,
                 "committed_metadata": ""}]}]})
        return answer.topics[0].partitions[0].error_code

    assert commit("no-such-member", generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(member_id, generation - 1) == ErrorCode.ILLEGAL_GENERATION
    assert commit(member_id, generation + 7) == ErrorCode.ILLEGAL_GENERATION
    wrong = next(b for b in three_brokers.running_brokers() if b != coordinator)
    beat = raw(client, wrong, ApiKey.HEARTBEAT, {"group_id": group, "generation_id": generation,
                                                 "member_id": member_id})
    assert beat.error_code == ErrorCode.NOT_COORDINATOR
    join = raw(client, wrong, ApiKey.JOIN_GROUP, {
        "group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
        "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert join.error_code == ErrorCode.NOT_COORDINATOR
    # An id longer than any non-flexible request can carry is refused before it is sent...
    huge = "g" * 300_000
    with pytest.raises((KafkaError, ValueError)):
        raw(client, coordinator, ApiKey.FIND_COORDINATOR, {"key": huge, "key_type": 0})
    # A hand-made frame claiming such an id cannot be decoded: the connection is closed
    # (what Kafka does with a request it cannot parse) and the broker serves on.
    port = three_brokers.broker_ports[coordinator]
    header = struct.pack(">hhih", int(ApiKey.OFFSET_FETCH), 5, 7, 4) + b"test"
    crafted = header + struct.pack(">h", 0x7FFF) + huge.encode()
    with connect(port) as sock:
        sock.sendall(frame(crafted))
        with pytest.raises(ConnectionError):
            read_frame(sock)
    # ...and one at the limit of the format is merely a group nobody has heard of.
    large = "g" * 32_000
    answer = raw(client, coordinator, ApiKey.OFFSET_FETCH, {
        "group_id": large, "topics": [{"name": topic, "partition_indexes": [0]}]})
    assert answer.error_code in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR)
    # Nothing changed: same member, same generation, same committed offset.
    assert consumer.committed((topic, 0)) == 3
    assert consumer._group.heartbeat_once() == ErrorCode.NONE
    assert consumer._group.generation == generation
    consumer.close()
    client.close()
