"""The admin APIs Kafka 3.9 serves in ZooKeeper mode that clients call today (issue 28),
through real clients on two real brokers: DescribeCluster (confluent-kafka), DescribeLogDirs
(kafka-python and our Admin), OffsetDelete (kafka-python's ``delete_group_offsets``),
DescribeProducers, ListTransactions and DescribeTransactions (kafka-python), with the
errors Kafka answers.
"""

from __future__ import annotations

import json
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=2, base_dir=tmp_path_factory.mktemp("kip-apis"), metrics=False,
                         broker_config={"auto.leader.rebalance.enable": "false",
                                        "offsets.topic.replication.factor": "1",
                                        "transaction.state.log.replication.factor": "1",
                                        "transaction.state.log.min.isr": "1"})
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def admin(cluster):
    with Admin(cluster.bootstrap_servers) as client:
        yield client


def ask(admin: Admin, broker_id: int, api_key: ApiKey, body):
    """One request to one broker, through our client (the version it negotiated)."""
    admin.client.refresh_metadata(None, 30_000)
    return admin.client.request(broker_id, api_key, body)


# -- DescribeCluster (60) ---------------------------------------------------------------------


def test_describe_cluster_through_confluent_kafka(cluster):
    from confluent_kafka.admin import AclOperation, AdminClient

    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    described = confluent.describe_cluster(include_authorized_operations=True).result(30)
    assert described.cluster_id == json.loads(cluster.zk.get("/cluster/id")[0])["id"]
    assert sorted(node.id for node in described.nodes) == sorted(cluster.brokers)
    assert sorted(node.port for node in described.nodes) == sorted(
        cluster.broker_ports.values())
    assert described.controller.id == cluster.controller_id()
    # No authorizer: every cluster operation is allowed.
    assert AclOperation.DESCRIBE in described.authorized_operations
    assert AclOperation.ALTER in described.authorized_operations


def test_describe_cluster_endpoint_types(cluster, admin):
    broker = min(cluster.brokers)
    answer = ask(admin, broker, ApiKey.DESCRIBE_CLUSTER, {
        "include_cluster_authorized_operations": False, "endpoint_type": 1})
    assert answer.error_code == 0 and len(answer.brokers) == 2
    assert answer.cluster_authorized_operations == -2147483648  # not asked for
    # KIP-919: a ZooKeeper-mode broker has no controller endpoints to describe.
    for endpoint_type, code in ((2, ErrorCode.MISMATCHED_ENDPOINT_TYPE),
                                (7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)):
        answer = ask(admin, broker, ApiKey.DESCRIBE_CLUSTER, {
            "include_cluster_authorized_operations": False, "endpoint_type": endpoint_type})
        assert answer.error_code == code and answer.brokers == []


# -- DescribeLogDirs (35) ---------------------------------------------------------------------


def produce(cluster, topic: str, count: int, partition: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for n in range(count):
        producer.produce(topic, value=b"x" * 100, key=str(n).encode(), partition=partition)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def sized_topic(cluster, admin):
    """A topic with two partitions on both brokers and records in partition 0."""
    topic = unique("sized")
    admin.create_topic(topic, num_partitions=2, replication_factor=2)
    produce(cluster, topic, 50)
    for partition in (0, 1):
        cluster.wait_for_isr(topic, partition, cluster.brokers)
    return topic


def test_describe_log_dirs_through_kafka_python_and_our_admin(cluster, admin, sized_topic):
    from kafka.admin import KafkaAdminClient

    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        answers = kafka_python.describe_log_dirs({sized_topic: [0, 1]})
    finally:
        kafka_python.close()
    assert len(answers) == 2 and all(sized_topic in repr(a) for a in answers), answers
    ours = admin.describe_log_dirs({sized_topic: [0, 1]})
    assert sorted(ours) == sorted(cluster.brokers)
    for broker_id, dirs in ours.items():
        (log_dir,) = dirs
        assert log_dir.error is None and log_dir.path.startswith("/")
        assert log_dir.total_bytes > 0 and 0 < log_dir.usable_bytes <= log_dir.total_bytes
        size, lag = log_dir.partitions[(sized_topic, 0)]
        assert size == sum(f.stat().st_size for f in cluster.partition_dir(
            broker_id, sized_topic, 0).glob("*.log")) and size > 50 * 100
        assert lag == 0
        assert log_dir.partitions[(sized_topic, 1)] == (0, 0)
    # Every partition when none is named (the internal topics included); an unknown one: none.
    everything = admin.describe_log_dirs()
    assert all((sized_topic, 1) in d[0].partitions for d in everything.values())
    assert admin.describe_log_dirs({"no-such-topic": [0]})[min(cluster.brokers)][0] \
        .partitions == {}


# -- OffsetDelete (47) ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka_python(cluster):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        yield client
    finally:
        client.close()


def committed(cluster, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in (0, 1)])
    answer = confluent.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.offset >= 0}


def test_offset_delete_of_an_empty_group_then_of_a_live_one(cluster, sized_topic,
                                                            kafka_python):
    from confluent_kafka import Consumer, TopicPartition
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import GroupIdNotFoundError, GroupSubscribedToTopicError, NoError

    other = unique("other")
    Admin(cluster.bootstrap_servers).create_topic(other, num_partitions=1,
                                                  replication_factor=1)
    group = unique("group")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([sized_topic])
        deadline_polls = 0
        while not consumer.assignment() and deadline_polls < 60:
            consumer.poll(0.5)
            deadline_polls += 1
        assert consumer.assignment()
        consumer.commit(offsets=[TopicPartition(sized_topic, 0, 7),
                                 TopicPartition(sized_topic, 1, 0),
                                 TopicPartition(other, 0, 3)], asynchronous=False)
        # A live member subscribes to sized_topic: its offsets stay; other's go.
        result = kafka_python.delete_group_offsets(group, [
            KTopicPartition(sized_topic, 0), KTopicPartition(other, 0)])
        assert result == {KTopicPartition(sized_topic, 0): GroupSubscribedToTopicError,
                          KTopicPartition(other, 0): NoError}
        assert committed(cluster, group, sized_topic) == {0: 7, 1: 0}
        assert committed(cluster, group, other) == {}
    finally:
        consumer.close()
    # The group is empty now: any offset may go; with the last one, the group itself.
    result = kafka_python.delete_group_offsets(group, [KTopicPartition(sized_topic, 0)])
    assert result == {KTopicPartition(sized_topic, 0): NoError}
    assert committed(cluster, group, sized_topic) == {1: 0}
    result = kafka_python.delete_group_offsets(group, [KTopicPartition(sized_topic, 1)])
    assert result == {KTopicPartition(sized_topic, 1): NoError}
    with pytest.raises(GroupIdNotFoundError):
        kafka_python.delete_group_offsets(group, [KTopicPartition(sized_topic, 1)])


def test_offset_delete_errors(cluster, sized_topic, kafka_python):
    from confluent_kafka import Consumer, TopicPartition
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import GroupIdNotFoundError, UnknownTopicOrPartitionError

    with pytest.raises(GroupIdNotFoundError):
        kafka_python.delete_group_offsets(unique("nobody"), [KTopicPartition(sized_topic, 0)])
    # An unknown topic or partition: per partition.
    group = unique("committed")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[TopicPartition(sized_topic, 0, 1)], asynchronous=False)
    consumer.close()
    result = kafka_python.delete_group_offsets(group, [KTopicPartition(sized_topic, 5),
                                                       KTopicPartition("no-such-topic", 0)])
    assert set(result.values()) == {UnknownTopicOrPartitionError}, result


# -- DescribeProducers (61), ListTransactions (66), DescribeTransactions (65) -----------------


def test_a_hanging_transaction_found_as_kip_664_finds_it(cluster, admin, kafka_python):
    from confluent_kafka import Producer
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import TransactionState
    from kafka.errors import TransactionalIdNotFoundError

    # Its own topic: the transaction's start offset is then 0 on a first try and on a rerun.
    sized_topic = unique("hanging")
    admin.create_topic(sized_topic, num_partitions=2, replication_factor=2)
    for partition in (0, 1):
        cluster.wait_for_isr(sized_topic, partition, cluster.brokers)
    transactional_id = unique("txn")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(sized_topic, b"open", partition=1)
    assert producer.flush(30) == 0
    # The partition's leader: the producer, and where its open transaction starts.
    states = kafka_python.describe_producers([KTopicPartition(sized_topic, 1)])
    (ours,) = [p for p in states[KTopicPartition(sized_topic, 1)].active_producers
               if p.current_transaction_start_offset >= 0]
    assert ours.last_sequence == 0 and ours.last_timestamp > 0
    assert ours.current_transaction_start_offset == 0  # partition 1 had no records before
    # Every coordinator's listing (one per broker), filtered by state and by producer id.
    def listed(**filters):
        return [t for listings in kafka_python.list_transactions(**filters).values()
                for t in listings]

    ongoing = [(t.transactional_id, t.state) for t in listed(state_filters=["Ongoing"])]
    assert (transactional_id, TransactionState.ONGOING) in ongoing
    assert [t.transactional_id for t in listed(producer_id_filters=[ours.producer_id])] == [
        transactional_id]
    assert transactional_id not in [
        t.transactional_id for t in listed(state_filters=["CompleteCommit"])]
    # Its coordinator's description.
    described = kafka_python.describe_transactions([transactional_id])[transactional_id]
    assert described.state == TransactionState.ONGOING
    assert described.producer_id == ours.producer_id
    assert described.producer_epoch == ours.producer_epoch
    assert set(described.topic_partitions) == {KTopicPartition(sized_topic, 1)}
    assert described.transaction_start_time_ms > 0
    producer.commit_transaction(30)

    # EndTxn answers once the decision is stored; the markers follow in the background, as in
    # Kafka, so the partition's leader learns of the commit a moment later.
    def start_offsets() -> list[int]:
        after = kafka_python.describe_producers([KTopicPartition(sized_topic, 1)])
        return [p.current_transaction_start_offset for p in
                after[KTopicPartition(sized_topic, 1)].active_producers
                if p.producer_id == ours.producer_id]

    cluster.wait_for(lambda: start_offsets() == [-1], "the commit marker on partition 1")
    cluster.wait_for(lambda: kafka_python.describe_transactions([transactional_id])[
        transactional_id].state == TransactionState.COMPLETE_COMMIT, "the commit to complete")
    with pytest.raises(TransactionalIdNotFoundError):
        kafka_python.describe_transactions([unique("never-used")])
    del producer  # its connections close now, while the brokers are up


def test_list_transactions_unknown_state_and_duration_filters(cluster, admin):
    broker = min(cluster.brokers)
    answer = ask(admin, broker, ApiKey.LIST_TRANSACTIONS, {
        "state_filters": ["Ongoing", "Hanging"], "producer_id_filters": [],
        "duration_filter": 3_600_000})
    assert answer.error_code == 0 and answer.unknown_state_filters == ["Hanging"]
    assert answer.transaction_states == []  # nothing has run for an hour


def test_describe_producers_where_no_replica_is(cluster, admin, kafka_python):
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import NotLeaderForPartitionError, UnknownTopicOrPartitionError

    topic = unique("single")
    admin.create_topic(topic, num_partitions=1, replication_factor=1)
    leader = cluster.leader_of(topic, 0)
    (elsewhere,) = [b for b in cluster.brokers if b != leader]

    def error_from(broker_id: int) -> int:
        answer = ask(admin, broker_id, ApiKey.DESCRIBE_PRODUCERS,
                     {"topics": [{"name": topic, "partition_indexes": [0]}]})
        return answer.topics[0].partitions[0].error_code

    # Each broker learns of the new partition from the controller a moment after it is
    # created (LeaderAndIsr to its replica, UpdateMetadata to all): wait for both.
    cluster.wait_for(lambda: error_from(leader) == ErrorCode.NONE
                     and error_from(elsewhere) == ErrorCode.NOT_LEADER_OR_FOLLOWER,
                     "the leader to lead the new partition and the other broker to know it",
                     timeout=30)
    with pytest.raises(NotLeaderForPartitionError):
        kafka_python.describe_producers([KTopicPartition(topic, 0)], broker_id=elsewhere)
    with pytest.raises(UnknownTopicOrPartitionError):
        kafka_python.describe_producers([KTopicPartition(topic, 4)], broker_id=leader)
    answer = ask(admin, leader, ApiKey.DESCRIBE_PRODUCERS, {"topics": [
        {"name": "bad/name", "partition_indexes": [0]}, {"name": topic,
                                                          "partition_indexes": [0]}]})
    bad, good = answer.topics
    assert bad.partitions[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert good.partitions[0].error_code == 0 and good.partitions[0].active_producers == []
