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

Kafka 3.9's versions: v12 is flexible and carries each partition's last
fetched epoch (a log that left the leader's gets a diverging epoch and no
records); v13+ names topics by ID (KIP-516): an ID no topic has now answers
UNKNOWN_TOPIC_ID (in a session, until the broker learns the ID: then the session
reads it, ``fetch_session.py``), a session opened by names cannot go on by IDs or back
(FETCH_SESSION_TOPIC_ID_ERROR), and a partition whose topic was re-created
under the same name since the session learnt its ID answers UNKNOWN_TOPIC_ID
too; v15+ says who a follower is in ``replica_state``; v16+ (KIP-951) names
the leader a refused partition should go to, with its endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, Flag, Reactor
from simplekafka.broker.apis.leader_hints import (
    LEADER_HINT_ERRORS,
    current_leader,
    node_endpoints,
)
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
    fetch_replica_id,
)
from simplekafka.broker.fetch_session import (
    FetchContext,
    FetchSessionCache,
    unknown_topic_name,
)
from simplekafka.broker.message_format import FIRST_V2_FETCH, down_convert_answers
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.replica_selector import RackAwareReplicaSelector
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    FetchRequest,
    FetchRequestForgottenTopicsData,
    FetchRequestTopics,
    FetchResponse,
    FetchResponseResponses,
    FetchResponseResponsesPartitions,
)
from simplekafka.protocol.topic_ids import ZERO_ID

__all__ = ["HW_NOTICE_SECONDS", "FetchHandler"]

SESSIONS_VERSION = 7  # KIP-227: session id and epoch, forgotten topics


class FetchHandler:
    """ApiKey.FETCH: see the module docstring."""

    def __init__(self, replicas: FetchSource, reactor: Reactor, is_stopping: Flag,
                 selector: RackAwareReplicaSelector | None = None,
                 authorizer: Authorizer = ALLOW_EVERYONE,
                 sessions: FetchSessionCache | None = None,
                 cache: MetadataCache | None = None):
        self.authorizer = authorizer
        # Topic IDs and leaders (the ReplicaManager's cache unless given): None in unit
        # tests without one, where a topic has no ID.
        self.cache = cache if cache is not None else getattr(replicas, "metadata_cache", None)
        self.sessions = sessions if sessions is not None else FetchSessionCache()
        self.reactor = reactor
        self.fetches = FetchMessages(replicas, reactor, is_stopping, selector)
        # What a session by topic IDs resolves an unknown ID with (one bound method, not
        # one per fetch).
        self._topic_name = self.cache.topic_name if self.cache is not None else None
        # Told of each consumer answer as it leaves (the metrics count bytes out); None: off.
        self.on_consumer_answer: Callable[[FetchResponse], object] | None = None

    @property
    def waiting(self) -> int:
        """Fetches parked right now (for tests and metrics)."""
        return self.fetches.waiting

    def __call__(self, context: RequestContext, request: FetchRequest
                 ) -> FetchResponse | defer.Deferred:
        if context is not None:
            version, listener = context.api_version, context.listener
        else:  # a unit test's direct call
            version, listener = _version(None, request), None
        ids = _TopicIds(self.cache, request, version, listener)
        replica_id = fetch_replica_id(request)
        if replica_id >= 0 and self.authorizer.enabled and not \
                self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                          ResourceType.CLUSTER, CLUSTER_NAME):
            # Not a broker: answered without a session, every partition it names refused.
            return self.read(request, frozenset(ids.names), version)[0]
        sessions = version >= SESSIONS_VERSION
        forgotten = request["forgotten_topics_data"] if sessions else None
        session = self.sessions.context_for(
            request["session_id"] if sessions else 0,
            request["session_epoch"] if sessions else -1,
            replica_id, ids.named(request),
            ids.forgotten(forgotten) if forgotten else [], self._topic_name)
        if session.error is None and session.session is not None:
            session.error = ids.check_session(session)
        if session.error is not None:
            return {"throttle_time_ms": 0, "error_code": session.error, "session_id": 0,
                    "responses": []}
        refused = self._refused(context, replica_id, ids) if self.authorizer.enabled \
            else frozenset()
        # What the answer is made of the result, now or when a parked fetch completes (the
        # one step between the append that wakes it and the dispatcher's encoding): a bound
        # method of the fetch's _TopicIds, which a partial would cost twice as much as.
        ids.session = session
        ids.counted = self if replica_id < 0 else None
        respond: Callable[[FetchResult], FetchResponse] = ids.leaving
        if context is not None and version < FIRST_V2_FETCH:  # message sets v0/v1
            respond = partial(self._down_converted, respond, version, request)
        return self.fetches.fetch_messages(
            _params(request, version, session, refused, replica_id), respond)

    def read(self, request: FetchRequest, refused: frozenset[str] = frozenset(),
             version: int | None = None) -> tuple[FetchResponse, int, bool]:
        """Read the request's partitions once, without a session: (response body, bytes,
        any error?); the ``refused`` topics answer TOPIC_AUTHORIZATION_FAILED."""
        if version is None:
            version = _version(None, request)
        ids = _TopicIds(self.cache, request, version)
        responses, total_bytes, has_error = self.fetches.read_from_log(_params(
            request, version, FetchContext(ids.named(request)), refused,
            fetch_replica_id(request)))
        return ids.body(responses, 0), total_bytes, has_error

    def _down_converted(self, respond: Callable[[FetchResult], FetchResponse], version: int,
                        request: FetchRequest, result: FetchResult) -> FetchResponse:
        return respond(down_convert_answers(result, version, request, self.fetches.replicas))

    def _refused(self, context: RequestContext, replica_id: int,
                 ids: _TopicIds) -> frozenset[str]:
        """The requested topics this principal may not fetch from."""
        authorize = self.authorizer.authorize
        if replica_id >= 0:
            if authorize(context, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                         CLUSTER_NAME):
                return frozenset()
            return frozenset(ids.names)
        return frozenset(name for name in ids.names
                         if not authorize(context, AclOperation.READ, ResourceType.TOPIC,
                                          name))


def _version(context: RequestContext | None, request: FetchRequest) -> int:
    """The request's version (from the struct's schema when a unit test gives no context)."""
    if context is not None:
        return context.api_version
    schema = getattr(request, "schema", None)
    return getattr(schema, "version", None) or 11


class _TopicIds:
    """A fetch's topics as names inside the broker and as the request named them outside
    (v13+: by ID, KIP-516). An ID no topic has now is kept under a name no topic can
    have, so that it is read as unknown and answered UNKNOWN_TOPIC_ID. It also makes
    the fetch's answer as it leaves (``leaving``, the fetch's response callback)."""

    session: FetchContext  # the fetch's session, set once the handler has it
    counted: FetchHandler | None = None  # a consumer's fetch: its handler counts its answer

    def __init__(self, cache: MetadataCache | None, request: FetchRequest, version: int,
                 listener: str | None = None):
        self.cache = cache
        self.version = version
        self.listener = listener  # the endpoints named (v16+) are those of this listener
        self.by_id = version >= 13
        self.ids: dict[str, bytes] = {}  # name used inside -> the ID the request gave
        # Loops, not comprehensions: each of those is a call (a fetch names one topic).
        self.names: list[str] = []
        if self.by_id:
            for topic in request["topics"]:
                self.names.append(self._name(topic))
        else:
            for topic in request["topics"]:
                self.names.append(topic["topic"])

    def _name(self, topic: FetchRequestTopics | FetchRequestForgottenTopicsData) -> str:
        if not self.by_id:
            return topic["topic"]
        topic_id = topic["topic_id"]
        name = self.cache.topic_name(topic_id) if self.cache is not None else None
        if name is None:
            name = unknown_topic_name(topic_id)
        self.ids[name] = topic_id
        return name

    def named(self, request: FetchRequest) -> list[FetchTopic]:
        """The partitions the request names, with the fields older versions lack defaulted."""
        version = self.version
        named = []
        for name, topic in zip(self.names, request["topics"]):
            partitions = []
            for wanted in topic["partitions"]:
                partitions.append(FetchPartition(
                    wanted["partition"], wanted["fetch_offset"], wanted["partition_max_bytes"],
                    wanted["current_leader_epoch"] if version >= 9 else -1,
                    wanted["log_start_offset"] if version >= 5 else -1,
                    wanted["last_fetched_epoch"] if version >= 12 else -1))
            named.append((name, partitions))
        return named

    def forgotten(self, forgotten: Sequence[FetchRequestForgottenTopicsData]
                  ) -> list[tuple[str, list[int]]]:
        if not self.by_id:
            return [(f["topic"], list(f["partitions"])) for f in forgotten]
        return [(self._name(f), list(f["partitions"])) for f in forgotten]

    def check_session(self, session: FetchContext) -> ErrorCode | None:
        """A session keeps to the way it was opened: by names (v12 and older) or by IDs."""
        held = session.session
        if held is None:
            return None
        if not session.incremental:
            held.uses_topic_ids = self.by_id
            held.topic_ids = dict(self.ids)
            return None
        if getattr(held, "uses_topic_ids", False) != self.by_id:
            return ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        held.topic_ids.update(self.ids)
        return None

    def leaving(self, result: FetchResult) -> FetchResponse:
        """The answer as it leaves: shaped by its session (KIP-227), counted if a consumer's."""
        session = self.session
        body = self.body(session.finish(result[0]), session.session_id, session)
        if self.counted is not None and self.counted.on_consumer_answer is not None:
            self.counted.on_consumer_answer(body)
        return body

    def body(self, responses: list[tuple[str, list[FetchPartitionData]]], session_id: int,
             session: FetchContext | None = None) -> FetchResponse:
        topics: list[FetchResponseResponses] = []
        leaders: set[int] = set()
        for name, answers in responses:
            partitions = []
            for answer in answers:
                partitions.append(_partition(answer))
            topic: FetchResponseResponses = {"topic": name, "partitions": partitions}
            if self.by_id:
                cache = self.cache  # the topic's ID now (_id_of, inline)
                known = cache.topic_id(name) if cache is not None else ZERO_ID
                topic_id = self.ids.get(name)  # as this request named it, else its session
                if topic_id is None:
                    remembered = getattr(session.session if session is not None else None,
                                         "topic_ids", None)
                    topic_id = (remembered.get(name) if remembered else None) or known
                topic["topic_id"] = topic_id
                if cache is not None and known != topic_id:
                    # The session's topic was deleted (and maybe created again) since.
                    for entry in partitions:
                        entry.update({"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "records": b"",
                                      "high_watermark": -1})
            if self.version >= 12:
                for entry in partitions:
                    if entry["error_code"] not in LEADER_HINT_ERRORS:
                        continue  # nearly every partition: no hint to look up
                    leader = current_leader(self.cache, name, entry["partition_index"],
                                            entry["error_code"])
                    if leader is not None:
                        entry["current_leader"] = leader
                        leaders.add(leader["leader_id"])
            topics.append(topic)
        body: FetchResponse = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                               "session_id": session_id, "responses": topics}
        if leaders and self.version >= 16:
            body["node_endpoints"] = node_endpoints(self.cache, leaders, self.listener)
        return body

    def _id_of(self, name: str) -> bytes:
        return self.cache.topic_id(name) if self.cache is not None else ZERO_ID


def _params(request: FetchRequest, version: int, partitions: FetchContext,
            refused: frozenset[str], replica_id: int) -> FetchParams:
    return FetchParams(replica_id, request["max_wait_ms"], request["min_bytes"],
                       request["max_bytes"] if version >= 3 else 0x7FFFFFFF,
                       request["isolation_level"] if version >= 4 else 0, partitions,
                       request["rack_id"] if version >= 11 else None, refused)


def _partition(p: FetchPartitionData) -> FetchResponseResponsesPartitions:
    entry: FetchResponseResponsesPartitions = {
        "partition_index": p.partition_index,
        # None: a KafkaError without a code, which Kafka answers as UNKNOWN_SERVER_ERROR
        "error_code": ErrorCode.UNKNOWN_SERVER_ERROR if p.error_code is None else p.error_code,
        "high_watermark": p.high_watermark, "last_stable_offset": p.last_stable_offset,
        "log_start_offset": p.log_start_offset,
        "aborted_transactions": [
            {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
            for txn in p.aborted_transactions] if p.aborted_transactions else [],
        "preferred_read_replica": p.preferred_read_replica, "records": p.records}
    if p.diverging_epoch is not None:
        entry["diverging_epoch"] = {"epoch": p.diverging_epoch[0],
                                    "end_offset": p.diverging_epoch[1]}
    return entry
