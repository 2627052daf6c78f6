"""Transactions are refused at once, not retried: ``init_transactions()`` fails fast.

The broker has no transaction coordinator yet. A transactional producer must
learn that from its first request (FindCoordinator, key type 1) as a fatal,
non-retriable error naming the reason, not wait out a timeout.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.broker.apis.transactions import TRANSACTIONS_REFUSED_MESSAGE

pytestmark = pytest.mark.integration

# init_transactions() is given this long; a retriable answer would use all of it.
CLIENT_TIMEOUT_S = 60.0
# A fatal first answer ends it in well under this, even on a loaded machine.
FAST_S = 20.0


def test_confluent_init_transactions_fails_fast_and_fatally(cluster):
    from confluent_kafka import KafkaError, KafkaException, Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "transactional.id": "refused-txn"})
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(CLIENT_TIMEOUT_S)
    elapsed = time.monotonic() - started
    error = raised.value.args[0]
    assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, error
    assert error.fatal() and not error.retriable()
    assert "does not support transactions" in error.str()
    assert elapsed < FAST_S, f"init_transactions took {elapsed:.1f}s"


def test_kafka_python_init_transactions_fails_fast_and_fatally(cluster):
    from kafka import KafkaProducer
    from kafka.errors import TransactionalIdAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             transactional_id="refused-txn-kp",
                             max_block_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        started = time.monotonic()
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            producer.init_transactions()
        assert time.monotonic() - started < FAST_S
    finally:
        producer.close(timeout=5)


def test_the_answer_names_the_reason():
    assert "transactional.id" in TRANSACTIONS_REFUSED_MESSAGE
