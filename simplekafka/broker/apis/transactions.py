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
encoding; AddOffsetsToTxn's and EndTxn's v4 (and TxnOffsetCommit's) may hear
TRANSACTION_ABORTABLE (KIP-890), which this coordinator answers only to the
broker's ``verify_only`` (below). TxnOffsetCommit v3 (KIP-447)
names the consumer's generation, member id and instance id, checked as an
OffsetCommit's (a zombie consumer's producer cannot commit).

AddPartitionsToTxn v4+ is Kafka's broker-to-coordinator batch (KIP-890), served
as Kafka 3.9 serves it: it needs ClusterAction on the cluster (else the whole
answer is CLUSTER_AUTHORIZATION_FAILED), and each transaction of the batch is
answered on its own: an unknown partition fails the transaction's others with
OPERATION_NOT_ATTEMPTED, ``verify_only`` asks whether each partition is in the
ongoing transaction (NONE) or not (TRANSACTION_ABORTABLE) without adding it,
and otherwise the partitions are added as a client's v3 request adds them. v5
is v4 (it tells the coordinator that the sender knows TRANSACTION_ABORTABLE),
as in Kafka 3.9, which answers TRANSACTION_ABORTABLE to a verification of either
version. A leader of SimpleKafka never sends it: its produce path checks
transactions itself. An empty batch is answered empty (Kafka's would never be).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.apis.groups import (
    _find_coordinator_answer,
    commit_readable_topics,
    partition_commits,
)
from simplekafka.broker.coordinator.runtime import now_or_later
from simplekafka.broker.dispatch import Handler, RequestContext, RequestDispatcher
from simplekafka.broker.group.coordinator import CommitResult, GroupCoordinator, PartitionCommit
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.transaction.coordinator import TransactionCoordinator
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTransactions,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByTransaction,
    AddPartitionsToTxnResponseResultsByTransactionTopicResults,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponseTopicsPartitions,
)

# The first version of each request that may hear PRODUCER_FENCED (Kafka's KIP-588 mapping).
PRODUCER_FENCED_SINCE = {
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
    ApiKey.TXN_OFFSET_COMMIT: 3,
}
FIRST_BROKER_ADD_PARTITIONS_VERSION = 4  # KIP-890: batches, from a partition leader

PartitionCodes = dict[tuple[str, int], ErrorCode]
CodeAnswer = AddOffsetsToTxnResponse | EndTxnResponse


def _for_version(code: ErrorCode, api_key: ApiKey, version: int) -> ErrorCode:
    if code == ErrorCode.PRODUCER_FENCED and version < PRODUCER_FENCED_SINCE[api_key]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def _by_topic(codes: PartitionCodes, version: int
              ) -> list[AddPartitionsToTxnResponseResultsByTransactionTopicResults]:
    """AddPartitionsToTxn's per-topic results (one layout in every version)."""
    by_topic: dict[str, list[tuple[int, ErrorCode]]] = {}
    for (topic, index), code in codes.items():
        by_topic.setdefault(topic, []).append((index, code))
    return [{"name": name, "results_by_partition": [
        {"partition_index": index,
         "partition_error_code": _for_version(code, ApiKey.ADD_PARTITIONS_TO_TXN, version)}
        for index, code in parts]} for name, parts in by_topic.items()]


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

    def register(self, dispatcher: RequestDispatcher) -> None:
        handlers: list[tuple[ApiKey, Handler]] = [
            (ApiKey.ADD_PARTITIONS_TO_TXN, self.add_partitions_to_txn),
            (ApiKey.ADD_OFFSETS_TO_TXN, self.add_offsets_to_txn),
            (ApiKey.END_TXN, self.end_txn),
            (ApiKey.TXN_OFFSET_COMMIT, self.txn_offset_commit),
        ]
        for key, handler in handlers:
            dispatcher.register(key, handler)

    def find_coordinator(self, context: RequestContext, request: FindCoordinatorRequest
                         ) -> FindCoordinatorResponse:
        """FindCoordinator with key type 1: the leader of the id's __transaction_state
        partition."""
        return _find_coordinator_answer(
            *self.coordinator.find_coordinator(request["key"] or ""))

    def add_partitions_to_txn(self, context: RequestContext, request: AddPartitionsToTxnRequest
                              ) -> AddPartitionsToTxnResponse | defer.Deferred:
        version = context.api_version
        if version >= FIRST_BROKER_ADD_PARTITIONS_VERSION:
            return self._add_partitions_batch(context, request["transactions"])
        transactional_id = request["v3_and_below_transactional_id"]
        wanted = [(t["name"], index) for t in request["v3_and_below_topics"]
                  for index in t["partitions"]]
        refused = self._refused(context, transactional_id)
        if refused is None and not all(self.authorizer.authorize(
                context, AclOperation.WRITE, ResourceType.TOPIC, topic) for topic, _ in wanted):
            refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED

        def answer(codes: PartitionCodes) -> AddPartitionsToTxnResponse:
            return {"throttle_time_ms": 0,
                    "results_by_topic_v3_and_below": _by_topic(codes, version)}

        if refused is not None:
            return answer(dict.fromkeys(wanted, refused))
        return now_or_later(self.coordinator.add_partitions(
            transactional_id, request["v3_and_below_producer_id"],
            request["v3_and_below_producer_epoch"], wanted), answer)

    def _add_partitions_batch(self, context: RequestContext,
                              transactions: Iterable[AddPartitionsToTxnRequestTransactions]
                              ) -> AddPartitionsToTxnResponse | defer.Deferred:
        """v4+: every transaction of the batch answered on its own, once all are."""
        if not self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                         ResourceType.CLUSTER, CLUSTER_NAME):
            return {"throttle_time_ms": 0, "results_by_transaction": [],
                    "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        version = context.api_version
        waits: list[defer.Deferred] = []
        results: list[AddPartitionsToTxnResponseResultsByTransaction] = []
        for transaction in transactions:
            result: AddPartitionsToTxnResponseResultsByTransaction = {
                "transactional_id": transaction["transactional_id"], "topic_results": []}
            results.append(result)
            outcome = self._one_transaction(transaction)
            if isinstance(outcome, defer.Deferred):
                waits.append(outcome.addCallback(partial(_fill, result, version)))
            else:
                _fill(result, version, outcome)
        body: AddPartitionsToTxnResponse = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                                            "results_by_transaction": results}
        if not waits:
            return body
        return defer.gatherResults(waits).addCallback(lambda _: body)

    def _one_transaction(self, transaction: AddPartitionsToTxnRequestTransactions
                         ) -> PartitionCodes | defer.Deferred:
        wanted = [(t["name"], index) for t in transaction["topics"] for index in t["partitions"]]
        unknown = {tp for tp in wanted if self.coordinator.cache.partition(*tp) is None}
        if unknown:  # Kafka fails the whole transaction, naming the partitions at fault
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in wanted}
        args = (transaction["transactional_id"], transaction["producer_id"],
                transaction["producer_epoch"], wanted)
        if transaction["verify_only"]:
            return self.coordinator.verify_partitions(*args)
        return self.coordinator.add_partitions(*args)

    def add_offsets_to_txn(self, context: RequestContext, request: AddOffsetsToTxnRequest
                           ) -> AddOffsetsToTxnResponse | defer.Deferred:
        answer = self._code_answer(ApiKey.ADD_OFFSETS_TO_TXN, context)
        refused = self._refused(context, request["transactional_id"], request["group_id"])
        if refused is not None:
            return answer(refused)
        return now_or_later(self.coordinator.add_offsets(
            request["transactional_id"], request["producer_id"], request["producer_epoch"],
            request["group_id"]), answer)

    def end_txn(self, context: RequestContext, request: EndTxnRequest
                ) -> EndTxnResponse | defer.Deferred:
        answer = self._code_answer(ApiKey.END_TXN, context)
        refused = self._refused(context, request["transactional_id"])
        if refused is not None:
            return answer(refused)
        return now_or_later(self.coordinator.end_transaction(
            request["transactional_id"], request["producer_id"], request["producer_epoch"],
            request["committed"]), answer)

    def txn_offset_commit(self, context: RequestContext, request: TxnOffsetCommitRequest
                          ) -> TxnOffsetCommitResponse | defer.Deferred:
        version = context.api_version

        def answer(result: CommitResult) -> TxnOffsetCommitResponse:
            by_topic: dict[str, list[TxnOffsetCommitResponseTopicsPartitions]] = {}
            for topic, index, code in result:
                by_topic.setdefault(topic, []).append({
                    "partition_index": index,
                    "error_code": _for_version(code, ApiKey.TXN_OFFSET_COMMIT, version)})
            return {"throttle_time_ms": 0,
                    "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}

        commits = partition_commits(request["topics"], with_epochs=version >= 2)
        refused = self._refused(context, request["transactional_id"], request["group_id"])
        if refused is not None:
            return answer([(c.topic, c.partition, refused) for c in commits])
        commit = partial(self._txn_offset_commit, context, request)
        if not self.authorizer.enabled:
            return now_or_later(commit(commits), answer)
        return commit_readable_topics(self.authorizer, context, commits, commit, answer)

    def _txn_offset_commit(self, context: RequestContext, request: TxnOffsetCommitRequest,
                           commits: list[PartitionCommit]) -> CommitResult | defer.Deferred:
        if context.api_version < 3:
            return self.groups.txn_offset_commit(request["group_id"], request["producer_id"],
                                                 request["producer_epoch"], commits)
        return self.groups.txn_offset_commit(  # v3 (KIP-447): the consumer's member too
            request["group_id"], request["producer_id"], request["producer_epoch"],
            commits, request["generation_id"], request["member_id"],
            request["group_instance_id"])

    @staticmethod
    def _code_answer(api_key: ApiKey, context: RequestContext
                     ) -> Callable[[ErrorCode], CodeAnswer]:
        def answer(code: ErrorCode) -> CodeAnswer:
            return {"throttle_time_ms": 0,
                    "error_code": _for_version(code, api_key, context.api_version)}
        return answer


def _fill(result: AddPartitionsToTxnResponseResultsByTransaction, version: int,
          codes: PartitionCodes) -> None:
    result["topic_results"] = _by_topic(codes, version)
