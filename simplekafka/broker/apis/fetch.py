"""Fetch: the wire side of a read the ReplicaManager does (``fetch_messages.py``).

The request is decoded into ``FetchParams`` (fields older versions lack take
their defaults) and seen through its fetch session first (KIP-227,
``fetch_session.py``): a session may stand for partitions the request does not
name (an incremental fetch), and its answer names only those that changed.
``FetchMessages.fetch_messages`` reads, now or, with less than ``min_bytes``
to return, when the parked fetch completes (``delayed_fetch.py``); the answer
is built from its ``FetchResult``. Every partition read is named, errors
included, and an empty one has zero-length records, never null.

A consumer needs Read on each topic, a follower (replica_id >= 0) ClusterAction
on the cluster; partitions refused answer TOPIC_AUTHORIZATION_FAILED at once.
A fetch that claims a replica id without ClusterAction is refused before its
session is looked at: it neither opens, continues nor closes one, so it cannot
evict that follower's session (a new session of a follower replaces its old one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, Flag, Reactor
from simplekafka.broker.delayed_fetch import HW_NOTICE_SECONDS
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.fetch_messages import (
    FetchMessages,
    FetchParams,
    FetchPartition,
    FetchPartitionData,
    FetchResult,
    FetchSource,
    FetchTopic,
)
from simplekafka.broker.fetch_session import FetchContext, FetchSessionCache
from simplekafka.broker.message_format import FIRST_V2_FETCH, down_convert_fetched
from simplekafka.broker.replica_selector import RackAwareReplicaSelector
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode

__all__ = ["HW_NOTICE_SECONDS", "FetchHandler"]


class FetchHandler:
    """ApiKey.FETCH: see the module docstring."""

    def __init__(self, replicas: FetchSource, reactor: Reactor, is_stopping: Flag,
                 selector: RackAwareReplicaSelector | None = None,
                 authorizer: Authorizer = ALLOW_EVERYONE,
                 sessions: FetchSessionCache | None = None):
        self.authorizer = authorizer
        self.sessions = sessions if sessions is not None else FetchSessionCache()
        self.reactor = reactor
        self.fetches = FetchMessages(replicas, reactor, is_stopping, selector)
        # Told of each consumer answer as it leaves (the metrics count bytes out); None: off.
        self.on_consumer_answer: Callable[[dict], Any] | None = None

    @property
    def waiting(self) -> int:
        """Fetches parked right now (for tests and metrics)."""
        return self.fetches.waiting

    def __call__(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        if request.replica_id >= 0 and self.authorizer.enabled and not \
                self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                          ResourceType.CLUSTER, CLUSTER_NAME):
            # Not a broker: answered without a session, every partition it names refused.
            return self.read(request, frozenset(t.topic for t in request.topics))[0]
        forgotten = getattr(request, "forgotten_topics_data", None)  # v7+ (sessions)
        session = self.sessions.context_for(
            getattr(request, "session_id", 0), getattr(request, "session_epoch", -1),
            request.replica_id, _named(request),
            [(f.topic, f.partitions) for f in forgotten] if forgotten else [])
        if session.error is not None:
            return {"throttle_time_ms": 0, "error_code": session.error, "session_id": 0,
                    "responses": []}
        refused = self._refused(context, request) if self.authorizer.enabled else frozenset()
        fetched = self.fetches.fetch_messages(_params(request, session, refused))
        version = getattr(context, "api_version", FIRST_V2_FETCH)  # None: a direct call
        if version < FIRST_V2_FETCH:  # message sets v0/v1 (message_format.py)
            fetched = down_convert_fetched(fetched, version, request, self.fetches.replicas)
        if isinstance(fetched, FetchResult):
            return self._leaving(fetched, session, request.replica_id)
        # One callback shapes and counts a parked fetch's answer, the one step between the
        # append that wakes it and the dispatcher's encoding.
        return fetched.addCallback(self._leaving, session, request.replica_id)

    def read(self, request: Any, refused: frozenset[str] = frozenset()
             ) -> tuple[dict, int, bool]:
        """Read the request's partitions once, without a session: (response body, bytes,
        any error?); the ``refused`` topics answer TOPIC_AUTHORIZATION_FAILED."""
        result = self.fetches.read_from_log(
            _params(request, FetchContext(_named(request)), refused))
        return _body(result.responses, 0), result.total_bytes, result.has_error

    def _leaving(self, result: FetchResult, session: FetchContext, replica_id: int) -> dict:
        """The answer as it leaves: shaped by its session (KIP-227), counted if a consumer's."""
        body = _body(session.finish(result.responses), session.session_id)
        if self.on_consumer_answer is not None and replica_id < 0:
            self.on_consumer_answer(body)
        return body

    def _refused(self, context: RequestContext, request: Any) -> frozenset[str]:
        """The requested topics this principal may not fetch from."""
        authorize = self.authorizer.authorize
        if request.replica_id >= 0:
            if authorize(context, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                         CLUSTER_NAME):
                return frozenset()
            return frozenset(t.topic for t in request.topics)
        return frozenset(t.topic for t in request.topics
                         if not authorize(context, AclOperation.READ, ResourceType.TOPIC,
                                          t.topic))


def _named(request: Any) -> list[FetchTopic]:
    """The partitions the request names, with the fields older versions lack defaulted."""
    return [FetchTopic(topic.topic, [
        FetchPartition(wanted.partition, wanted.fetch_offset, wanted.partition_max_bytes,
                       getattr(wanted, "current_leader_epoch", -1),  # v9+
                       getattr(wanted, "log_start_offset", -1))  # v5+
        for wanted in topic.partitions]) for topic in request.topics]


def _params(request: Any, partitions: FetchContext, refused: frozenset[str]) -> FetchParams:
    return FetchParams(request.replica_id, request.max_wait_ms, request.min_bytes,
                       getattr(request, "max_bytes", 0x7FFFFFFF),  # v3+
                       getattr(request, "isolation_level", 0), partitions,  # v4+
                       getattr(request, "rack_id", None), refused)  # rack_id: v11+


def _body(responses: list[tuple[str, list[FetchPartitionData]]], session_id: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": session_id,
            "responses": [{"topic": topic, "partitions": [{
                "partition_index": p.partition_index, "error_code": p.error_code,
                "high_watermark": p.high_watermark, "last_stable_offset": p.last_stable_offset,
                "log_start_offset": p.log_start_offset,
                "aborted_transactions": [
                    {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                    for txn in p.aborted_transactions] if p.aborted_transactions else [],
                "preferred_read_replica": p.preferred_read_replica, "records": p.records}
                for p in answers]} for topic, answers in responses]}
