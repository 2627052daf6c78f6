"""FindCoordinator (key type 1), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit:
the transaction coordinator's wire side (InitProducerId is in ``apis.producer_ids``).

The coordinator (``broker/transaction``) decides and returns result values,
now or through a Deferred (every change is replicated before it is answered);
these handlers turn them into each version's response. Kafka answers
PRODUCER_FENCED only to clients new enough to know it (KIP-588); older
versions hear INVALID_PRODUCER_EPOCH, as here. With an authorizer, each
request needs Write on its transactional id (Kafka's rule), AddPartitionsToTxn
also Write on each topic, AddOffsetsToTxn and TxnOffsetCommit Read on the group,
and TxnOffsetCommit, as OffsetCommit, Read on each topic (the others are
committed; a refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED).

Versions: v3 of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn is the flexible
encoding; their v4 (and TxnOffsetCommit's) may hear TRANSACTION_ABORTABLE
(KIP-890), which this coordinator never answers. TxnOffsetCommit v3 (KIP-447)
names the consumer's generation, member id and instance id, checked as an
OffsetCommit's (a zombie consumer's producer cannot commit). AddPartitionsToTxn
v4+ is Kafka's broker-to-coordinator batch (KIP-890): not served, so not advertised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.apis.groups import (
    _find_coordinator_answer,
    commit_readable_topics,
    partition_commits,
)
from simplekafka.broker.coordinator.runtime import now_or_later
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.group.coordinator import CommitResult, GroupCoordinator
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.transaction.coordinator import TransactionCoordinator
from simplekafka.protocol.acls import AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import FindCoordinatorResponse

# The first version of each request that may hear PRODUCER_FENCED (Kafka's KIP-588 mapping).
PRODUCER_FENCED_SINCE = {
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
    ApiKey.TXN_OFFSET_COMMIT: 3,
}


def _for_version(code: ErrorCode, api_key: ApiKey, version: int) -> ErrorCode:
    if code == ErrorCode.PRODUCER_FENCED and version < PRODUCER_FENCED_SINCE[api_key]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


class TransactionApis:
    """The transactional requests' handlers, over the two coordinators."""

    def __init__(self, coordinator: TransactionCoordinator, groups: GroupCoordinator,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.coordinator = coordinator
        self.groups = groups
        self.authorizer = authorizer

    def _refused(self, context: RequestContext, transactional_id: str,
                 group_id: str | None = None) -> ErrorCode | None:
        if not self.authorizer.authorize(context, AclOperation.WRITE,
                                         ResourceType.TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if group_id is not None and not self.authorizer.authorize(
                context, AclOperation.READ, ResourceType.GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return None

    def register(self, dispatcher: Any) -> None:
        for key, handler in [
            (ApiKey.ADD_PARTITIONS_TO_TXN, self.add_partitions_to_txn),
            (ApiKey.ADD_OFFSETS_TO_TXN, self.add_offsets_to_txn),
            (ApiKey.END_TXN, self.end_txn),
            (ApiKey.TXN_OFFSET_COMMIT, self.txn_offset_commit),
        ]:
            dispatcher.register(key, handler)

    def find_coordinator(self, context: RequestContext, request: Struct) -> FindCoordinatorResponse:
        """FindCoordinator with key type 1: the leader of the id's __transaction_state
        partition."""
        return _find_coordinator_answer(*self.coordinator.find_coordinator(request.key or ""))

    def add_partitions_to_txn(self, context: RequestContext, request: Struct
                              ) -> dict | defer.Deferred:
        version = context.api_version
        wanted = [(t.name, index) for t in request.v3_and_below_topics for index in t.partitions]
        refused = self._refused(context, request.v3_and_below_transactional_id)
        if refused is None and not all(self.authorizer.authorize(
                context, AclOperation.WRITE, ResourceType.TOPIC, topic) for topic, _ in wanted):
            refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED

        def answer(codes: dict) -> dict:
            by_topic: dict[str, list[dict]] = {}
            for (topic, index), code in codes.items():
                by_topic.setdefault(topic, []).append({
                    "partition_index": index,
                    "partition_error_code": _for_version(
                        code, ApiKey.ADD_PARTITIONS_TO_TXN, version)})
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
                {"name": name, "results_by_partition": parts}
                for name, parts in by_topic.items()]}

        if refused is not None:
            return answer(dict.fromkeys(wanted, refused))
        return now_or_later(self.coordinator.add_partitions(
            request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch, wanted), answer)

    def add_offsets_to_txn(self, context: RequestContext, request: Struct
                           ) -> dict | defer.Deferred:
        refused = self._refused(context, request.transactional_id, request.group_id)
        if refused is not None:
            return self._code_answer(ApiKey.ADD_OFFSETS_TO_TXN, context)(refused)
        return now_or_later(self.coordinator.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch,
            request.group_id), self._code_answer(ApiKey.ADD_OFFSETS_TO_TXN, context))

    def end_txn(self, context: RequestContext, request: Struct) -> dict | defer.Deferred:
        refused = self._refused(context, request.transactional_id)
        if refused is not None:
            return self._code_answer(ApiKey.END_TXN, context)(refused)
        return now_or_later(self.coordinator.end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch,
            request.committed), self._code_answer(ApiKey.END_TXN, context))

    def txn_offset_commit(self, context: RequestContext, request: Struct
                          ) -> dict | defer.Deferred:
        version = context.api_version

        def answer(result: CommitResult) -> dict:
            by_topic: dict[str, list[dict]] = {}
            for topic, index, code in result:
                by_topic.setdefault(topic, []).append({
                    "partition_index": index,
                    "error_code": _for_version(code, ApiKey.TXN_OFFSET_COMMIT, version)})
            return {"throttle_time_ms": 0,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}

        refused = self._refused(context, request.transactional_id, request.group_id)
        if refused is not None:
            return answer([(t.name, p.partition_index, refused)
                           for t in request.topics for p in t.partitions])
        if not self.authorizer.enabled:
            return now_or_later(self._txn_offset_commit(context, request), answer)
        return commit_readable_topics(self.authorizer, context, request,
                                      self._txn_offset_commit, answer)

    def _txn_offset_commit(self, context: RequestContext, request: Struct
                           ) -> CommitResult | defer.Deferred:
        if context.api_version < 3:
            return self.groups.txn_offset_commit(request.group_id, request.producer_id,
                                                 request.producer_epoch,
                                                 partition_commits(request))
        return self.groups.txn_offset_commit(  # v3 (KIP-447): the consumer's member too
            request.group_id, request.producer_id, request.producer_epoch,
            partition_commits(request), request.generation_id, request.member_id,
            request.group_instance_id)

    @staticmethod
    def _code_answer(api_key: ApiKey, context: RequestContext) -> Callable[[ErrorCode], dict]:
        def answer(code: ErrorCode) -> dict:
            return {"throttle_time_ms": 0,
                    "error_code": _for_version(code, api_key, context.api_version)}
        return answer
