"""DescribeProducers, DescribeTransactions, ListTransactions: KIP-664's tools for finding a
hanging transaction.

A transaction left open on a partition (its producer gone, its coordinator never told)
holds that partition's last stable offset, and every read_committed consumer of it
waits. An operator finds it in three steps, one API each:

* DescribeProducers, sent to a partition's leader: every producer the partition
  remembers, with the start offset of its open transaction there (-1: none);
* ListTransactions, sent to every broker: the transactional ids each coordinator
  holds, filtered by state, producer id, or running longer than a duration;
* DescribeTransactions, sent to an id's coordinator: its state, producer id and
  epoch, timeout, start time and partitions.

The lookups are the domain's (the partition's producer state through the
ReplicaManager, the TransactionCoordinator's metadata); this module checks
Kafka's ACLs and shapes the answers: Read on each topic for DescribeProducers
(TOPIC_AUTHORIZATION_FAILED), Describe on each transactional id (listed ids the
principal may not Describe are left out; a described one answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and Describe on each topic of a described
transaction (the others are left out).
"""

from __future__ import annotations

from typing import Protocol

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.dispatch import RequestContext, RequestDispatcher
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.producer_state import ActiveProducer
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.transaction.coordinator import TransactionListing
from simplekafka.broker.transaction.state import TransactionMetadata
from simplekafka.coordination.topics import TopicError, validate_topic_name
from simplekafka.protocol.acls import AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersResponseTopics,
    DescribeProducersResponseTopicsPartitions,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsResponseTransactionStates,
    ListTransactionsRequest,
    ListTransactionsResponse,
)


class ProducerStates(Protocol):
    """The producers each local replica remembers (``ReplicaManager``)."""

    def active_producers(self, topic: str, partition: int
                         ) -> tuple[ErrorCode, list[ActiveProducer]]: ...


class TransactionStates(Protocol):
    """What a transaction coordinator holds (``TransactionCoordinator``)."""

    def list_transactions(self, producer_ids: set[int], state_names: set[str],
                          older_than_ms: int = -1) -> TransactionListing: ...

    def describe_transaction(self, transactional_id: str
                             ) -> tuple[ErrorCode, TransactionMetadata | None]: ...


class TransactionToolApis:
    """The three handlers; see the module docstring."""

    def __init__(self, producers: ProducerStates, transactions: TransactionStates,
                 cache: MetadataCache, authorizer: Authorizer = ALLOW_EVERYONE):
        self.producers = producers
        self.transactions = transactions
        self.cache = cache
        self.authorizer = authorizer

    def register(self, dispatcher: RequestDispatcher) -> None:
        dispatcher.register(ApiKey.DESCRIBE_PRODUCERS, self.describe_producers)
        dispatcher.register(ApiKey.DESCRIBE_TRANSACTIONS, self.describe_transactions)
        dispatcher.register(ApiKey.LIST_TRANSACTIONS, self.list_transactions)

    def describe_producers(self, context: RequestContext, request: DescribeProducersRequest
                           ) -> DescribeProducersResponse:
        topics: list[DescribeProducersResponseTopics] = []
        for topic in request["topics"]:
            name = topic["name"]
            code, message = self._topic_error(context, name)
            partitions: list[DescribeProducersResponseTopicsPartitions] = []
            for index in topic["partition_indexes"]:
                if code != ErrorCode.NONE:
                    partitions.append({"partition_index": index, "error_code": code,
                                       "error_message": message})
                    continue
                found, producers = self.producers.active_producers(name, index)
                partitions.append({
                    "partition_index": index, "error_code": found,
                    "active_producers": [
                        {"producer_id": p.producer_id, "producer_epoch": p.producer_epoch,
                         "last_sequence": p.last_sequence, "last_timestamp": p.last_timestamp,
                         "coordinator_epoch": p.coordinator_epoch,
                         "current_txn_start_offset": p.current_txn_start_offset}
                        for p in producers]})
            topics.append({"name": name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    def _topic_error(self, context: RequestContext, name: str) -> tuple[ErrorCode, str | None]:
        try:
            validate_topic_name(name)
        except TopicError as exc:
            return exc.error_code, str(exc)
        if not self.authorizer.authorize(context, AclOperation.READ, ResourceType.TOPIC, name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
        if not self.cache.has_topic(name):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        return ErrorCode.NONE, None

    def list_transactions(self, context: RequestContext, request: ListTransactionsRequest
                          ) -> ListTransactionsResponse:
        listing = self.transactions.list_transactions(
            set(request["producer_id_filters"]), set(request["state_filters"]),
            request["duration_filter"] if context.api_version >= 1 else -1)
        authorize = self.authorizer.authorize
        return {"throttle_time_ms": 0, "error_code": listing.error_code,
                "unknown_state_filters": listing.unknown_states,
                "transaction_states": [
                    {"transactional_id": tid, "producer_id": pid, "transaction_state": state}
                    for tid, pid, state in listing.transactions
                    if authorize(context, AclOperation.DESCRIBE,
                                 ResourceType.TRANSACTIONAL_ID, tid)]}

    def describe_transactions(self, context: RequestContext,
                              request: DescribeTransactionsRequest
                              ) -> DescribeTransactionsResponse:
        return {"throttle_time_ms": 0, "transaction_states": [
            self._describe(context, tid) for tid in request["transactional_ids"]]}

    def _describe(self, context: RequestContext, transactional_id: str
                  ) -> DescribeTransactionsResponseTransactionStates:
        authorize = self.authorizer.authorize
        if not authorize(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                         transactional_id):
            return {"transactional_id": transactional_id,
                    "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        if not transactional_id:
            return {"transactional_id": transactional_id,
                    "error_code": ErrorCode.INVALID_REQUEST}
        code, meta = self.transactions.describe_transaction(transactional_id)
        if meta is None:
            return {"transactional_id": transactional_id, "error_code": code}
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(index)
        return {"error_code": ErrorCode.NONE, "transactional_id": transactional_id,
                "transaction_state": meta.state.kafka_name,
                "transaction_timeout_ms": meta.timeout_ms,
                "transaction_start_time_ms": meta.start_ms,
                "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
                "topics": [{"topic": topic, "partitions": indexes}
                           for topic, indexes in by_topic.items()
                           if authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                        topic)]}
