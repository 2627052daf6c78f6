"""Transactions with real clients against a real broker.

confluent-kafka (librdkafka) and kafka-python find the transaction coordinator
(FindCoordinator, key type 1), get a producer id and epoch for their
``transactional.id`` (InitProducerId), add partitions, write, and commit or
abort (EndTxn); the coordinator has the leaders write the markers
(WriteTxnMarkers). read_committed consumers see committed records only,
read_uncommitted ones everything but the markers. A second producer with the
same id fences the first; a transaction left open past its timeout is aborted
by the coordinator. One single-broker cluster for the module.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.cluster import LocalCluster

pytestmark = pytest.mark.integration

CLIENT_TIMEOUT_S = 60.0
PARTITIONS = 2  # of every topic here (auto-created)


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("txn"), broker_config={
        "num.partitions": PARTITIONS, "transaction.state.log.num.partitions": 3,
        "transaction.max.timeout.ms": 120_000,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 300})
    local.start()
    try:
        yield local
    finally:
        local.stop()


def confluent_producer(cluster, transactional_id, **extra):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": cluster.bootstrap_servers,
                     "transactional.id": transactional_id, **extra})


def read_values(cluster, topic, isolation, expected, timeout_s=30.0, settle_s=0.5):
    """Every value in ``topic`` from the start: read until all of ``expected`` are there,
    then ``settle_s`` more for anything that should not be."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    settled = None
    try:
        while settled is None or time.monotonic() < settled:
            assert time.monotonic() < deadline, f"{expected} not all read; got {values}"
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
            if settled is None and set(expected) <= set(values):
                settled = time.monotonic() + settle_s
    finally:
        consumer.close()
    return sorted(values)


def create_topics(bootstrap, *names):
    from simplekafka.admin import Admin

    with Admin(bootstrap) as admin:
        for name in names:
            admin.create_topic(name, num_partitions=PARTITIONS)


def test_confluent_commit_is_visible_and_abort_never_to_read_committed(txn_cluster):
    producer = confluent_producer(txn_cluster, "confluent-commit-abort")
    started = time.monotonic()
    producer.init_transactions(CLIENT_TIMEOUT_S)
    assert time.monotonic() - started < CLIENT_TIMEOUT_S / 2
    producer.begin_transaction()
    for i in range(3):
        producer.produce("cc-out", b"committed-%d" % i, partition=i % 2)
    producer.commit_transaction(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("cc-out", b"aborted-%d" % i, partition=i % 2)
    producer.flush(CLIENT_TIMEOUT_S)  # written to the log, then aborted
    producer.abort_transaction(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("cc-out", b"last", partition=0)
    producer.commit_transaction(CLIENT_TIMEOUT_S)

    committed = [b"committed-0", b"committed-1", b"committed-2", b"last"]
    aborted = [b"aborted-0", b"aborted-1", b"aborted-2"]
    assert read_values(txn_cluster, "cc-out", "read_committed", committed) == committed
    assert read_values(txn_cluster, "cc-out", "read_uncommitted", committed + aborted) \
        == sorted(committed + aborted)


def test_confluent_timeout_over_the_maximum_is_refused(txn_cluster):
    from confluent_kafka import KafkaError, KafkaException

    producer = confluent_producer(txn_cluster, "too-long", **{
        "transaction.timeout.ms": 600_000})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(CLIENT_TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_a_zombie_with_the_same_transactional_id_is_fenced(txn_cluster):
    from confluent_kafka import KafkaException

    zombie = confluent_producer(txn_cluster, "fenced-id")
    zombie.init_transactions(CLIENT_TIMEOUT_S)
    zombie.begin_transaction()
    zombie.produce("zombie-out", b"from-the-zombie")
    zombie.flush(CLIENT_TIMEOUT_S)

    successor = confluent_producer(txn_cluster, "fenced-id")
    successor.init_transactions(CLIENT_TIMEOUT_S)  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("zombie-out", b"from-the-successor")
    successor.commit_transaction(CLIENT_TIMEOUT_S)

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(CLIENT_TIMEOUT_S)
    assert raised.value.args[0].fatal(), raised.value.args[0]
    assert read_values(txn_cluster, "zombie-out", "read_committed", [b"from-the-successor"]) \
        == [b"from-the-successor"]


def test_a_transaction_left_open_is_aborted_after_its_timeout(txn_cluster):
    from confluent_kafka import KafkaException

    producer = confluent_producer(txn_cluster, "sleepy", **{
        "transaction.timeout.ms": 2_000, "message.timeout.ms": 2_000})
    producer.init_transactions(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("sleepy-out", b"never-committed")
    producer.flush(CLIENT_TIMEOUT_S)
    time.sleep(4)  # the coordinator's check runs every 0.3 s
    with pytest.raises(KafkaException):
        producer.commit_transaction(CLIENT_TIMEOUT_S)

    other = confluent_producer(txn_cluster, "after-sleepy")
    other.init_transactions(CLIENT_TIMEOUT_S)
    other.begin_transaction()
    other.produce("sleepy-out", b"after")
    other.commit_transaction(CLIENT_TIMEOUT_S)
    # read_committed reaches "after" only if the LSO moved past the expired transaction.
    assert read_values(txn_cluster, "sleepy-out", "read_committed", [b"after"]) == [b"after"]


def test_kafka_python_commits_and_aborts(txn_cluster):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=txn_cluster.bootstrap_servers,
                             transactional_id="kafka-python-txn",
                             max_block_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp-out", b"kp-committed")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("kp-out", b"kp-aborted")
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("kp-out", b"kp-last")
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    committed = [b"kp-committed", b"kp-last"]
    assert read_values(txn_cluster, "kp-out", "read_committed", committed) == committed
    assert read_values(txn_cluster, "kp-out", "read_uncommitted", [*committed, b"kp-aborted"]) \
        == [b"kp-aborted", b"kp-committed", b"kp-last"]


def test_our_producer_read_process_write_with_offsets_in_the_transaction(txn_cluster):
    """Our Producer's transactional API: a committed transaction's records and the group's
    offsets appear together; an aborted one's records never, and its offsets are not
    committed."""
    from simplekafka.consumer import Consumer
    from simplekafka.producer import Producer
    from simplekafka.protocol.structs import TopicPartition

    bootstrap = txn_cluster.bootstrap_servers
    create_topics(bootstrap, "ours-in", "ours-out")
    with Producer(bootstrap, linger_ms=0) as seed:
        for i in range(4):
            seed.send("ours-in", b"in-%d" % i, partition=0)
    producer = Producer(bootstrap, transactional_id="ours-rpw", linger_ms=0)
    try:
        producer.init_transactions()
        for value, commit in [(b"out-committed", True), (b"out-aborted", False)]:
            producer.begin_transaction()
            producer.send("ours-out", value, partition=1)
            producer.send_offsets_to_transaction({TopicPartition("ours-in", 0): 2 if commit
                                                  else 4}, "ours-group")
            if commit:
                producer.commit_transaction()
            else:
                producer.flush()
                producer.abort_transaction()
        producer.begin_transaction()
        producer.send("ours-out", b"out-last", partition=0)
        producer.commit_transaction()
    finally:
        producer.close()
    assert read_values(txn_cluster, "ours-out", "read_committed",
                       [b"out-committed", b"out-last"]) == [b"out-committed", b"out-last"]
    with Consumer(bootstrap_servers=bootstrap, group_id="ours-group") as consumer:
        assert consumer.committed(TopicPartition("ours-in", 0)) == 2
    ours = Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    try:
        ours.assign([TopicPartition("ours-out", p) for p in range(PARTITIONS)])
        ours.seek_to_beginning()
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 2 and time.monotonic() < deadline:
            values += [r.value for r in ours.poll(timeout_ms=500)]
        assert sorted(values) == [b"out-committed", b"out-last"]
    finally:
        ours.close()


def test_our_producer_is_fenced_by_a_newer_one(txn_cluster):
    from simplekafka.client.errors import ProducerFencedError
    from simplekafka.producer import Producer

    bootstrap = txn_cluster.bootstrap_servers
    create_topics(bootstrap, "ours-zombie")
    with Producer(bootstrap, transactional_id="ours-zombie", linger_ms=0) as zombie, \
            Producer(bootstrap, transactional_id="ours-zombie", linger_ms=0) as successor:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send("ours-zombie", b"zombie").result(timeout=30)
        successor.init_transactions()
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
        with pytest.raises(ProducerFencedError):  # fatal: every later call says so
            zombie.begin_transaction()


def test_a_stable_offset_fetch_waits_for_the_transaction(txn_cluster):
    """KIP-447's require_stable (OffsetFetch v7+), as Kafka 3.9 answers it: while a
    transaction holds offsets for the group, a stable fetch of that partition gets -1
    and UNSTABLE_OFFSET_COMMIT (librdkafka, read_committed by default, asks again); an
    unstable one the last committed offset. Once the transaction commits, both see it."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    from simplekafka.protocol.api import ApiKey
    from simplekafka.protocol.errors import ErrorCode
    from tests.test_interop_record_batches import _exchange

    bootstrap = txn_cluster.bootstrap_servers
    create_topics(bootstrap, "stable-in", "stable-out")
    group = "stable-group"
    host, port = bootstrap.split(",")[0].rsplit(":", 1)

    def fetched(version: int, stable: bool) -> tuple[int, int]:
        """(offset, error) of stable-in/0 in our own OffsetFetch at ``version``."""
        topics = [{"name": "stable-in", "partition_indexes": [0]}]
        if version < 8:
            body = {"group_id": group, "topics": topics, "require_stable": stable}
        else:
            body = {"require_stable": stable, "groups": [
                {"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}]}
        answer = _exchange((host, int(port)), ApiKey.OFFSET_FETCH, version, body)
        if version >= 8:
            (answer,) = answer.groups
        assert answer.error_code == ErrorCode.NONE
        (part,) = answer.topics[0].partitions
        return part.committed_offset, part.error_code

    def consumer(**extra):
        return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, **extra})

    first = consumer()
    try:
        first.commit(offsets=[TopicPartition("stable-in", 0, 1)], asynchronous=False)
        metadata = first.consumer_group_metadata()
    finally:
        first.close()
    producer = confluent_producer(txn_cluster, "stable-offsets")
    producer.init_transactions(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("stable-out", b"processed", partition=0)
    producer.send_offsets_to_transaction([TopicPartition("stable-in", 0, 7)], metadata,
                                         CLIENT_TIMEOUT_S)
    unstable = (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    for version in (7, 8):
        assert fetched(version, True) == unstable
        assert fetched(version, False) == (1, ErrorCode.NONE)
    # librdkafka asks with require_stable under read_committed only: that consumer keeps
    # asking while the offset is unstable (here until its timeout); the other is answered.
    waiting = consumer(**{"isolation.level": "read_committed"})
    try:
        with pytest.raises(KafkaException) as refused:
            waiting.committed([TopicPartition("stable-in", 0)], timeout=2)
        assert refused.value.args[0].code() == KafkaError._TIMED_OUT
    finally:
        waiting.close()
    uncommitted = consumer(**{"isolation.level": "read_uncommitted"})
    try:
        assert uncommitted.committed([TopicPartition("stable-in", 0)], timeout=30)[0].offset == 1
    finally:
        uncommitted.close()
    producer.commit_transaction(CLIENT_TIMEOUT_S)
    deadline = time.monotonic() + 30  # the marker reaches __consumer_offsets after EndTxn
    while fetched(7, True) != (7, ErrorCode.NONE):
        assert time.monotonic() < deadline, "the transaction's offsets never became stable"
        time.sleep(0.2)
    for version in (7, 8):
        assert fetched(version, True) == fetched(version, False) == (7, ErrorCode.NONE)
    reader = consumer(**{"isolation.level": "read_committed"})
    try:
        (tp,) = reader.committed([TopicPartition("stable-in", 0)], timeout=30)
        assert (tp.offset, tp.error) == (7, None)
    finally:
        reader.close()
