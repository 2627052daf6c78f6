"""Transactions (KIP-98) are not implemented: say so at the client's first step, for good.

A transactional producer first looks up its transaction coordinator
(FindCoordinator with key type 1), then asks it for a producer id
(InitProducerId with its ``transactional.id``). Answering the lookup with
COORDINATOR_NOT_AVAILABLE, which is retriable, makes every client retry until
its timeout (or forever). Both librdkafka (``rd_kafka_txn_handle_FindCoordinator``)
and kafka-python (``FindCoordinatorHandler``) treat
TRANSACTIONAL_ID_AUTHORIZATION_FAILED in that lookup as a fatal error and fail
``init_transactions()`` at once, showing the ``error_message`` we send, so that
is the answer until a transaction coordinator exists.
"""

from __future__ import annotations

from simplekafka.protocol.errors import ErrorCode

TRANSACTIONS_REFUSED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TRANSACTIONS_REFUSED_MESSAGE = (
    "SimpleKafka does not support transactions; unset transactional.id "
    "(an idempotent producer still writes each record once per partition)")

COORDINATOR_KEY_TRANSACTION = 1


def refuse_transaction_coordinator() -> dict:
    """The FindCoordinator answer for a transactional id (key type 1)."""
    return {"throttle_time_ms": 0, "error_code": TRANSACTIONS_REFUSED,
            "error_message": TRANSACTIONS_REFUSED_MESSAGE,
            "node_id": -1, "host": "", "port": -1}
