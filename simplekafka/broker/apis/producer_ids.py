"""InitProducerId: hand out producer ids to idempotent producers; a transactional id's
request goes to the transaction coordinator.

From v3 (KIP-360) a transactional producer names the id and epoch it holds, so one
that is no longer the holder is fenced; v4 hears PRODUCER_FENCED where older versions
hear INVALID_PRODUCER_EPOCH (KIP-588); v5 may hear TRANSACTION_ABORTABLE (KIP-890),
which this coordinator never answers.

The ids come from this broker's block (``transaction.producer_ids``, reserved
in ZooKeeper as Kafka's ``ProducerIdManager``); the authorizer decides first
(IdempotentWrite on the cluster, or Write on any topic; Write on a
transactional id).
"""

from __future__ import annotations

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.coordinator.runtime import now_or_later
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.transaction.coordinator import (
    InitProducerIdResult,
    TransactionCoordinator,
)
from simplekafka.broker.transaction.producer_ids import ProducerIdManager
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.message_types import InitProducerIdRequest, InitProducerIdResponse

PRODUCER_FENCED_SINCE = 4
"""The first InitProducerId version that may hear PRODUCER_FENCED (KIP-588)."""


class InitProducerIdHandler:
    """ApiKey.INIT_PRODUCER_ID: a fresh id for an idempotent producer; a transactional
    id's request goes to the transaction coordinator."""

    def __init__(self, producer_ids: ProducerIdManager, transactions: TransactionCoordinator,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.producer_ids = producer_ids
        self.transactions = transactions
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: InitProducerIdRequest
                 ) -> InitProducerIdResponse | defer.Deferred:
        transactional_id = request["transactional_id"]
        refused = self._refused(context, transactional_id)
        if refused is not None:
            return _answer(InitProducerIdResult(refused))
        answer = _answer if context.api_version >= PRODUCER_FENCED_SINCE else _answer_old
        if transactional_id is not None:
            return now_or_later(self.transactions.init_producer_id(
                transactional_id, request["transaction_timeout_ms"],
                (request["producer_id"], request["producer_epoch"])
                if context.api_version >= 3 else (-1, -1)), answer)
        try:
            producer_id = self.producer_ids()
        except KafkaError as exc:
            return _answer(InitProducerIdResult(exc.error_code or ErrorCode.UNKNOWN_SERVER_ERROR))
        if isinstance(producer_id, defer.Deferred):
            return producer_id.addCallbacks(
                lambda pid: _answer(InitProducerIdResult(ErrorCode.NONE, pid, 0)),
                lambda failure: _answer(InitProducerIdResult(
                    getattr(failure.value, "error_code", None)
                    or ErrorCode.COORDINATOR_NOT_AVAILABLE)))
        return _answer(InitProducerIdResult(ErrorCode.NONE, producer_id, 0))


    def _refused(self, context: RequestContext, transactional_id: str | None
                 ) -> ErrorCode | None:
        authorizer = self.authorizer
        if transactional_id is not None:
            if authorizer.authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                    transactional_id):
                return None
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if (authorizer.authorize(context, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                                 CLUSTER_NAME)
                or authorizer.authorize_any(context, AclOperation.WRITE, ResourceType.TOPIC)):
            return None
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _answer_old(result: InitProducerIdResult) -> InitProducerIdResponse:
    """Before v4 a client knows no PRODUCER_FENCED: INVALID_PRODUCER_EPOCH (KIP-588)."""
    if result.error_code == ErrorCode.PRODUCER_FENCED:
        result = result._replace(error_code=ErrorCode.INVALID_PRODUCER_EPOCH)
    return _answer(result)


def _answer(result: InitProducerIdResult) -> InitProducerIdResponse:
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "producer_id": result.producer_id, "producer_epoch": result.producer_epoch}
