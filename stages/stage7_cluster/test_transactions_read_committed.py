"""read_committed against real brokers, with the partition side of transactions driven by hand.

The test plays the transaction coordinator itself: a producer id from
InitProducerId, transactional batches by Produce, then a WriteTxnMarkers
request to the leader, as a coordinator sends it. On one partition of a
two-replica topic it writes plain records, a committed and an aborted
transaction interleaved, and a transaction left open:

    offset  0 p0   1 a1  2 a2 (txn A)  3 p1  4 b1 (txn B)  5 COMMIT A  6 ABORT B
            7 p2   8 c1 (txn C, open)

Real consumers (confluent-kafka, kafka-python, ours) with read_committed see
p0 a1 a2 p1 p2 (the LSO stops at c1; B's record never shows), with
read_uncommitted all seven records and never a marker. The follower holds the
same ``.txnindex``; after the leader's SIGKILL it answers the same, and a
broker restarted mid-transaction comes back with the same LSO and aborted
index, and the open transaction can still be committed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from simplekafka.admin import Admin
from simplekafka.client import KafkaClient
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import TransactionIndex

pytestmark = pytest.mark.integration

TOPIC = "txn"
COMMITTED = [b"p0", b"a1", b"a2", b"p1", b"p2"]
EVERYTHING = [b"p0", b"a1", b"a2", b"p1", b"b1", b"p2", b"c1"]
OPEN_AT = 8  # offset of c1: the LSO while C is open


class Coordinator:
    """Raw requests, as a transaction coordinator and transactional producers send them."""

    def __init__(self, bootstrap: str):
        self.client = KafkaClient(bootstrap, client_id="hand-coordinator")
        self.sequences: dict[int, int] = {}

    def close(self) -> None:
        self.client.close()

    def producer_id(self) -> int:
        answer = self.client.request(self.client.least_loaded_node(), ApiKey.INIT_PRODUCER_ID,
                                     {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert answer.error_code == 0, answer
        self.sequences[answer.producer_id] = 0
        return answer.producer_id

    def produce(self, topic: str, *values: bytes, producer_id: int = -1) -> int:
        """Append one batch (transactional if ``producer_id`` is given); its base offset."""
        sequence = self.sequences.get(producer_id, -1)
        batch = build_batch([Record(value=v) for v in values], producer_id=producer_id,
                            producer_epoch=0 if producer_id >= 0 else -1,
                            base_sequence=sequence, is_transactional=producer_id >= 0)
        if producer_id >= 0:
            self.sequences[producer_id] = sequence + len(values)
        # a transactional batch names its transactional id, as Kafka requires
        transactional_id = f"scenario-{producer_id}" if producer_id >= 0 else None
        answer = self.client.request(self.client.leader_for(topic, 0), ApiKey.PRODUCE, {
            "transactional_id": transactional_id, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == 0, part
        return part.base_offset

    def end(self, topic: str, producer_id: int, commit: bool) -> None:
        answer = self.client.request(self.client.leader_for(topic, 0), ApiKey.WRITE_TXN_MARKERS, {
            "markers": [{"producer_id": producer_id, "producer_epoch": 0,
                         "transaction_result": commit, "coordinator_epoch": 0,
                         "topics": [{"name": topic, "partition_indexes": [0]}]}]})
        codes = [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]
        assert codes == [0], answer


def write_scenario(coordinator: Coordinator, topic: str) -> int:
    """The log of the module docstring; returns the open transaction's producer id."""
    a, b, c = coordinator.producer_id(), coordinator.producer_id(), coordinator.producer_id()
    assert coordinator.produce(topic, b"p0") == 0
    assert coordinator.produce(topic, b"a1", b"a2", producer_id=a) == 1
    assert coordinator.produce(topic, b"p1") == 3
    assert coordinator.produce(topic, b"b1", producer_id=b) == 4
    coordinator.end(topic, a, commit=True)
    coordinator.end(topic, b, commit=False)
    assert coordinator.produce(topic, b"p2") == 7
    assert coordinator.produce(topic, b"c1", producer_id=c) == OPEN_AT
    return c


def confluent_values(bootstrap: str, topic: str, isolation: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer as CKConsumer
    from confluent_kafka import TopicPartition as CKTopicPartition

    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": f"ck-{isolation}",
                           "enable.auto.commit": False, "isolation.level": isolation,
                           "enable.partition.eof": True})
    try:
        consumer.assign([CKTopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
            elif len(values) >= count:  # partition EOF once everything visible was read
                break
        return values
    finally:
        consumer.close()


def kafka_python_values(bootstrap: str, topic: str, isolation: str) -> tuple[list[bytes], int]:
    """Every record below the end (the LSO under read_committed), and that end."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition

    tp = KPTopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                             enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [record.value for record in records]
        return values, end
    finally:
        consumer.close()


def our_values(bootstrap: str, topic: str, isolation: str) -> tuple[list[bytes], int]:
    """Every record below the end (the LSO under read_committed), and that end."""
    with Consumer(bootstrap_servers=bootstrap, isolation_level=isolation,
                  auto_offset_reset="earliest") as consumer:
        tp = (topic, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(timeout_ms=500)]
        return values, end


def txn_index_entries(cluster: LocalCluster, broker_id: int, topic: str) -> list:
    directory = Path(cluster.base_dir) / f"broker-{broker_id}" / "data" / f"{topic}-0"
    return [entry for path in sorted(directory.glob("*.txnindex"))
            for entry in TransactionIndex(path).entries]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(brokers=2, base_dir=tmp_path_factory.mktemp("txn")) as running:
        with Admin(running.bootstrap_servers) as admin:
            admin.create_topic(TOPIC, num_partitions=1, replication_factor=2)
            admin.create_topic("restarted", num_partitions=1, replication_factor=1)
        yield running


def test_read_committed_and_read_uncommitted_with_three_clients(cluster):
    bootstrap = cluster.bootstrap_servers
    coordinator = Coordinator(bootstrap)
    try:
        write_scenario(coordinator, TOPIC)
    finally:
        coordinator.close()
    cluster.wait_for_isr(TOPIC, 0, [1, 2])

    assert confluent_values(bootstrap, TOPIC, "read_committed", 5) == COMMITTED
    assert confluent_values(bootstrap, TOPIC, "read_uncommitted", 7) == EVERYTHING
    assert kafka_python_values(bootstrap, TOPIC, "read_committed") == (COMMITTED, OPEN_AT)
    assert kafka_python_values(bootstrap, TOPIC, "read_uncommitted") == (EVERYTHING, 9)
    assert our_values(bootstrap, TOPIC, "read_committed") == (COMMITTED, OPEN_AT)
    assert our_values(bootstrap, TOPIC, "read_uncommitted") == (EVERYTHING, 9)

    # The aborted transaction is indexed on both replicas, in Kafka's format.
    leader = cluster.leader_of(TOPIC, 0)
    follower = 2 if leader == 1 else 1
    expected = [(txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
                for txn in txn_index_entries(cluster, leader, TOPIC)]
    assert [entry[1:] for entry in expected] == [(4, 6, 7)]  # B: 4..6, nothing else open
    cluster.wait_for(lambda: txn_index_entries(cluster, follower, TOPIC) ==
                     txn_index_entries(cluster, leader, TOPIC), "the follower's .txnindex", 30)

    # The follower built the same producer state: led by it, nothing changes.
    cluster.kill(leader)
    cluster.wait_for_leader(TOPIC, 0, not_=leader)
    try:
        assert our_values(bootstrap, TOPIC, "read_committed") == (COMMITTED, OPEN_AT)
        assert confluent_values(bootstrap, TOPIC, "read_committed", 5) == COMMITTED
    finally:
        cluster.restart(leader)


def test_a_broker_restarted_mid_transaction_recovers_the_lso_and_aborted_index(cluster):
    bootstrap = cluster.bootstrap_servers
    coordinator = Coordinator(bootstrap)
    try:
        open_producer = write_scenario(coordinator, "restarted")
        broker = cluster.leader_of("restarted", 0)
        cluster.kill(broker)  # SIGKILL: no clean shutdown, recovery at start-up
        cluster.restart(broker)
        cluster.wait_for_leader("restarted", 0)
        assert our_values(bootstrap, "restarted", "read_committed") == (COMMITTED, OPEN_AT)
        assert kafka_python_values(bootstrap, "restarted", "read_committed") == (
            COMMITTED, OPEN_AT)
        coordinator.end("restarted", open_producer, commit=True)  # the open one commits now
        assert our_values(bootstrap, "restarted", "read_committed") == (
            [*COMMITTED, b"c1"], 10)
    finally:
        coordinator.close()


def test_real_transactional_and_plain_producers_on_one_partition(cluster):
    """librdkafka's transactional producer and kafka-python's idempotent one, interleaved:
    a plain record written after an open transaction waits for it under read_committed."""
    from confluent_kafka import Producer as CKProducer
    from kafka import KafkaProducer

    bootstrap = cluster.bootstrap_servers
    with Admin(bootstrap) as admin:
        admin.create_topic("mixed", num_partitions=1, replication_factor=2)
    plain = KafkaProducer(bootstrap_servers=bootstrap)
    txn = CKProducer({"bootstrap.servers": bootstrap, "transactional.id": "mixed-txn"})
    try:
        txn.init_transactions(60)

        def send_plain(data: bytes) -> None:
            plain.send("mixed", data, partition=0).get(30)

        def send_txn(data: bytes) -> None:
            txn.produce("mixed", data, partition=0)
            assert txn.flush(30) == 0

        send_plain(b"plain-0")
        txn.begin_transaction()
        send_txn(b"t1-a")
        send_plain(b"plain-1")
        send_txn(b"t1-b")
        txn.commit_transaction(60)
        txn.begin_transaction()
        send_txn(b"t2-aborted")
        send_plain(b"plain-2")
        txn.abort_transaction(60)
        txn.begin_transaction()
        send_txn(b"t3-open")
        send_plain(b"plain-3")

        stable = [b"plain-0", b"t1-a", b"plain-1", b"t1-b", b"plain-2"]
        values, lso = our_values(bootstrap, "mixed", "read_committed")
        assert values == stable
        assert kafka_python_values(bootstrap, "mixed", "read_committed") == (stable, lso)
        everything, _ = our_values(bootstrap, "mixed", "read_uncommitted")
        assert everything == [b"plain-0", b"t1-a", b"plain-1", b"t1-b", b"t2-aborted",
                              b"plain-2", b"t3-open", b"plain-3"]
        txn.commit_transaction(60)
        cluster.wait_for(lambda: our_values(bootstrap, "mixed", "read_committed")[0] ==
                         [*stable, b"t3-open", b"plain-3"], "the open transaction's commit", 30)
    finally:
        plain.close()
