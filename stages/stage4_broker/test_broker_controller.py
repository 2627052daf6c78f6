"""The controller at work, with three real broker processes and a real ZooKeeper.

Topic creation and deletion go to the controller (others answer NOT_CONTROLLER)
and reach every broker's metadata through UpdateMetadata; Metadata
auto-creates a topic; and when the controller is killed another broker takes
over, its partitions go offline (leader -1, leader epoch + 1, the ISR kept) and
come back, at a higher epoch, when it returns.
"""

from __future__ import annotations

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.coordination.processes import wait_until
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode

from ._interop import connect, request

pytestmark = pytest.mark.integration


def metadata(port: int, topics: list[str] | None = None, auto_create: bool = False):
    with connect(port) as sock:
        return request(sock, ApiKey.METADATA, 8, {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create})


def create(port: int, name: str, partitions: int, timeout_ms: int = 20_000):
    with connect(port, timeout=30) as sock:
        return request(sock, ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
            "timeout_ms": timeout_ms}).topics[0]


def wait_for(condition, timeout: float = 30.0, what: str = "condition"):
    return wait_until(condition, what, timeout, 0.2, error=AssertionError)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("three"),
                         broker_config={"zookeeper.session.timeout.ms": "6000"})
    local.start()
    try:
        yield local
    finally:
        local.stop()


def test_topics_are_created_and_deleted_through_the_controller(three):
    ports = three.broker_ports
    controller = metadata(ports[1]).controller_id
    other = next(b for b in ports if b != controller)
    assert create(ports[other], "ctl-topic", 3).error_code == ErrorCode.NOT_CONTROLLER
    assert create(ports[controller], "ctl-topic", 3).error_code == ErrorCode.NONE
    assert create(ports[controller], "ctl-topic", 3).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    for port in ports.values():  # every broker learned of it through UpdateMetadata
        topic = wait_for(lambda p=port: next(
            (t for t in metadata(p, ["ctl-topic"]).topics if t.partitions), None),
            what="the topic on every broker")
        assert sorted(p.leader_id for p in topic.partitions) == [1, 2, 3]
    with connect(ports[controller]) as sock:
        deleted = request(sock, ApiKey.DELETE_TOPICS, 3, {
            "topic_names": ["ctl-topic"], "timeout_ms": 20_000})
    assert deleted.responses[0].error_code == ErrorCode.NONE
    for port in ports.values():
        wait_for(lambda p=port: metadata(p, ["ctl-topic"]).topics[0].error_code
                 == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, what="the topic gone everywhere")


def test_metadata_auto_creates_a_topic(three):
    port = three.broker_ports[2]
    first = metadata(port, ["auto-made"], auto_create=True).topics[0]
    assert first.error_code in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NONE)
    topic = wait_for(lambda: next((t for t in metadata(port, ["auto-made"]).topics
                                   if t.error_code == 0 and t.partitions), None),
                     what="the auto-created topic")
    assert len(topic.partitions) == 1 and topic.partitions[0].leader_id in (1, 2, 3)


def test_controller_failover_and_offline_partitions(three):
    ports = three.broker_ports
    controller = metadata(ports[1]).controller_id
    assert create(ports[controller], "failover", 3).error_code == ErrorCode.NONE
    survivor = next(b for b in ports if b != controller)
    topic = wait_for(lambda: next((t for t in metadata(ports[survivor], ["failover"]).topics
                                   if t.partitions), None), what="the topic")
    led_by_controller = [p.partition_index for p in topic.partitions
                         if p.leader_id == controller]
    assert led_by_controller

    three.kill(controller)
    wait_for(lambda: (lambda m: m.controller_id not in (controller, -1)
                      and len(m.brokers) == 2)(metadata(ports[survivor])),
             what="a new controller")
    partitions = {p.partition_index: p for t in metadata(ports[survivor], ["failover"]).topics
                  for p in t.partitions}
    for index in led_by_controller:
        offline = partitions[index]
        assert offline.leader_id == -1
        assert offline.error_code == ErrorCode.LEADER_NOT_AVAILABLE
        assert offline.leader_epoch == 1
        assert offline.isr_nodes == [controller]  # never emptied

    three.restart(controller)
    back = wait_for(lambda: (lambda parts: parts if all(p.leader_id == controller for p in parts)
                             else None)([p for t in metadata(ports[survivor], ["failover"]).topics
                                         for p in t.partitions
                                         if p.partition_index in led_by_controller]),
                    what="the returning broker to lead its partitions again")
    assert all(p.leader_epoch == 2 for p in back)


def test_topic_configs_are_checked_and_applied(three):
    from simplekafka.protocol.records import build_batch

    ports = three.broker_ports
    controller = metadata(ports[1]).controller_id
    with connect(ports[controller], timeout=30) as sock:
        bad = request(sock, ApiKey.CREATE_TOPICS, 4, {"topics": [
            {"name": "bad-config", "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "retention.ms", "value": "soon"}]},
            {"name": "bad-key", "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "retention.msec", "value": "1"}]},
            {"name": "strict", "num_partitions": 1, "replication_factor": 1,
             "configs": [{"name": "min.insync.replicas", "value": "2"}]},
        ], "timeout_ms": 20_000})
    codes = {t.name: t.error_code for t in bad.topics}
    assert codes == {"bad-config": ErrorCode.INVALID_CONFIG, "bad-key": ErrorCode.INVALID_CONFIG,
                     "strict": ErrorCode.NONE}
    leader = wait_for(lambda: next((p.leader_id for t in metadata(ports[1], ["strict"]).topics
                                    for p in t.partitions if p.leader_id >= 0), None),
                      what="a leader for the strict topic")

    def produce(acks: int):
        with connect(ports[leader]) as sock:
            return request(sock, ApiKey.PRODUCE, 8, {"acks": acks, "timeout_ms": 5000,
                "topic_data": [{"name": "strict", "partition_data": [
                    {"index": 0, "records": build_batch([(None, b"v")])}]}]},
            ).responses[0].partition_responses[0].error_code

    # Metadata may name the leader a moment before the leader has applied its
    # LeaderAndIsr (different brokers, different queues): retry, as clients do.
    not_yet = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    code = wait_for(lambda: (lambda c: None if c in not_yet else c)(produce(-1)),
                    what="the leader to take the partition")
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS  # one replica, the topic wants two
    assert produce(1) == ErrorCode.NONE
