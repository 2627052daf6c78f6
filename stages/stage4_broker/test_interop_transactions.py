"""Transactions with real clients against a real broker: the coordinator's side.

confluent-kafka (librdkafka) and kafka-python find the transaction coordinator
(FindCoordinator, key type 1), get a producer id and epoch for their
``transactional.id`` (InitProducerId), and a second producer with the same id
fences the first. One single-broker cluster for the module, with a small
``__transaction_state`` and a short timeout check.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.cluster import LocalCluster

pytestmark = pytest.mark.integration

CLIENT_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("txn"), broker_config={
        "transaction.state.log.num.partitions": 3,
        "transaction.max.timeout.ms": 120_000,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    local.start()
    try:
        yield local
    finally:
        local.stop()


def confluent_producer(cluster, transactional_id, **extra):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": cluster.bootstrap_servers,
                     "transactional.id": transactional_id, **extra})


def test_confluent_init_transactions_gets_a_producer_id(txn_cluster):
    producer = confluent_producer(txn_cluster, "init-confluent")
    started = time.monotonic()
    producer.init_transactions(CLIENT_TIMEOUT_S)
    assert time.monotonic() - started < CLIENT_TIMEOUT_S / 2


def test_confluent_timeout_over_the_maximum_is_refused(txn_cluster):
    from confluent_kafka import KafkaError, KafkaException

    producer = confluent_producer(txn_cluster, "too-long", **{
        "transaction.timeout.ms": 600_000})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(CLIENT_TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_kafka_python_init_transactions_gets_a_producer_id(txn_cluster):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=txn_cluster.bootstrap_servers,
                             transactional_id="init-kafka-python",
                             max_block_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        producer.init_transactions()
        assert producer._transaction_manager.producer_id_and_epoch.producer_id >= 0
    finally:
        producer.close(timeout=5)
