"""Fetch: whole batches straight from the log, with a long poll woken by appends.

A fetch names partitions and offsets. For each, the leader returns whole record
batches from the one holding the offset (consumers up to the high watermark,
followers up to the log end), always the first batch whole even when it is
larger than the size limits (KIP-74: a client must be able to make progress),
and an empty partition as zero-length records, never null. Every requested
partition is named in the answer, errors included.

When there is less than ``min_bytes`` to return, the fetch waits: it listens on
its partitions and is re-read when any of them gets an append, or answered as
it is when ``max_wait_ms`` runs out. That is what lets a consumer see a record
within milliseconds of its produce without busy polling. The wake-up is a plain
call from the append (or the high-watermark move) to the parked fetch, so the
answer is written in the same reactor turn, with no timer in between. A
follower's parked fetch is also answered when the high watermark passes the
one its last answer carried, within ``HW_NOTICE_SECONDS`` (Kafka's followers
wait for their next fetch, up to replica.fetch.wait.max.ms): its own readers
(KIP-392) and checkpoints need the HW. Not at once: under load the next
append wakes the fetch within that time and its answer carries the HW with
the records, where an answer for the HW alone cost the leader a fetch round
trip more per advance, a quarter of its fetches at three brokers.

A read_committed consumer (isolation_level 1) reads only below the last
stable offset, and gets, with the records, the aborted transactions that
overlap them (from ``.txnindex``), so it can drop their records; every
answer carries the LSO in ``last_stable_offset``.

A consumer needs Read on each topic, a follower (replica_id >= 0) ClusterAction
on the cluster; partitions refused answer TOPIC_AUTHORIZATION_FAILED at once.
A fetch that claims a replica id without ClusterAction is refused before its
session is looked at: it neither opens, continues nor closes one, so it cannot
evict that follower's session (a new session of a follower replaces its old one).

Fetch sessions (KIP-227, ``fetch_session``): a fetch is first seen through
its session, which may stand for partitions the request does not name (an
incremental fetch), and whose answer names only the partitions that changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    DelayedCall,
    FetchSource,
    Flag,
    Reactor,
)
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.fetch_session import FetchContext, FetchSessionCache
from simplekafka.broker.isr import now_ms
from simplekafka.broker.replica_selector import RackAwareReplicaSelector
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import READ_COMMITTED
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.storage import FileRegion

log = logging.getLogger(__name__)

# A parked follower fetch told an old high watermark is answered for the new one after
# this long at most (sooner if records come); see the module docstring.
HW_NOTICE_SECONDS = 0.01


class FetchHandler:
    """ApiKey.FETCH: see the module docstring."""

    def __init__(self, replicas: FetchSource, reactor: Reactor, is_stopping: Flag,
                 selector: RackAwareReplicaSelector | None = None,
                 authorizer: Authorizer = ALLOW_EVERYONE,
                 sessions: FetchSessionCache | None = None):
        self.authorizer = authorizer
        self.sessions = sessions if sessions is not None else FetchSessionCache()
        self.replicas = replicas
        self.reactor = reactor
        self.is_stopping = is_stopping  # true once the broker shuts down
        self.selector = selector  # replica.selector.class (KIP-392); None: leaders serve
        self.waiting = 0  # fetches parked right now (for tests and metrics)
        # Told of each consumer answer as it leaves (the metrics count bytes out); None: off.
        self.on_consumer_answer: Callable[[dict], Any] | None = None

    def __call__(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        if request.replica_id >= 0 and self.authorizer.enabled and not \
                self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                          ResourceType.CLUSTER, CLUSTER_NAME):
            # Not a broker: answered without a session, every partition it names refused.
            body, _bytes, _error = self.read(
                request, frozenset(t.topic for t in request.topics))
            return body
        session = self.sessions.context_for(request)  # KIP-227 (see fetch_session)
        if session.error is not None:
            return session.error_body()
        request = session.request  # every partition of the session, not just those named
        refused = self._refused(context, request) if self.authorizer.enabled else frozenset()
        body, total_bytes, has_error = self.read(request, refused)
        # A follower's session fetch may examine nothing (all settled) and still park.
        asks_nothing = not getattr(request, "names_partitions", request.topics)
        if (request.max_wait_ms <= 0 or total_bytes >= max(request.min_bytes, 1) or has_error
                or asks_nothing):
            return self._leaving(body, session)
        # One callback shapes and counts a parked fetch's answer, the one step between the
        # append that wakes it and the dispatcher's encoding.
        return _DelayedFetch(self, request).start().addCallback(self._leaving, session)

    def _leaving(self, body: dict, session: FetchContext) -> dict:
        """The answer as it leaves: shaped by its session (KIP-227), counted if a consumer's."""
        body = session.finish(body)
        if self.on_consumer_answer is not None and session.request.replica_id < 0:
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

    def read(self, request: Any, refused: frozenset[str] = frozenset()
             ) -> tuple[dict, int, bool]:
        """Read every requested partition once: (response body, bytes, any error?);
        the ``refused`` topics answer TOPIC_AUTHORIZATION_FAILED."""
        remaining = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
        total = 0
        has_error = False
        responses = []
        replicas = self.replicas
        replica_id = request.replica_id
        read_committed = request.isolation_level == READ_COMMITTED and replica_id < 0
        # Replication throttle (replication_quota.py): only for followers' fetches.
        throttle = getattr(replicas, "leader_throttle", None) if request.replica_id >= 0 \
            else None
        # Fetch v11+ from a consumer (it has a rack_id, maybe empty) may be served by any
        # replica, and the leader may point it to one in its rack (replica_selector.py).
        client_rack = getattr(request, "rack_id", None) if request.replica_id < 0 else None
        any_replica = client_rack is not None
        selector = self.selector if client_rack else None
        # An incremental session fetch from a follower leaves out what has nothing new.
        follower = request.replica_id if getattr(request, "incremental", False) else -1
        settle = getattr(request, "settle", None)  # a session leaves quiet ones out next time
        get_partition = replicas.get_partition
        now = now_ms() if follower >= 0 else 0.0  # only _quiet needs the clock
        for topic in request.topics:
            partitions = []
            if topic.topic in refused:
                has_error = True
                responses.append({"topic": topic.topic, "partitions": [
                    _refused_partition(wanted.partition) for wanted in topic.partitions]})
                continue
            for wanted in topic.partitions:
                if follower >= 0:
                    quiet = get_partition(topic.topic, wanted.partition)
                    if _quiet(quiet, wanted, follower, now):
                        if settle is not None:
                            settle(topic.topic, wanted.partition, quiet)
                        continue  # see _quiet
                answer = {"partition_index": wanted.partition, "error_code": ErrorCode.NONE,
                          "high_watermark": -1, "last_stable_offset": -1,
                          "log_start_offset": -1, "aborted_transactions": [],
                          "preferred_read_replica": -1, "records": b""}
                try:
                    if any_replica:
                        partition = replicas.readable_partition(topic.topic, wanted.partition)
                    else:
                        partition = replicas.leader_partition(topic.topic, wanted.partition)
                    partition.check_leader_epoch(getattr(wanted, "current_leader_epoch", -1))
                    preferred = -1
                    if selector is not None and client_rack and partition.is_leader:
                        preferred = selector.preferred_read_replica(
                            partition, client_rack, wanted.fetch_offset)
                    limit = min(wanted.partition_max_bytes, remaining)
                    in_sync = throttle is not None and replica_id in partition.isr
                    if throttle is not None and throttle.holds_back(topic.topic,
                                                                    wanted.partition, in_sync):
                        # A moving replica over its rate: nothing this time, but its
                        # position still counts (it is where its log ends).
                        partition.record_follower_fetch(
                            request.replica_id, wanted.fetch_offset,
                            log_start=getattr(wanted, "log_start_offset", -1))
                        records: bytes | FileRegion = b""  # a region: sent by sendfile
                    elif preferred >= 0:
                        # Read elsewhere (KIP-392): no records, the consumer moves there.
                        answer["preferred_read_replica"] = preferred
                        records = b""
                        has_error = True  # answer now rather than park the fetch
                    elif limit > 0 or total == 0:
                        records = partition.read(wanted.fetch_offset, max(limit, 1),
                                                 replica_id,
                                                 getattr(wanted, "log_start_offset", -1),
                                                 leader_only=not any_replica,
                                                 read_committed=read_committed)
                        if replica_id >= 0:
                            replicas.maybe_expand_isr(partition, replica_id)
                            if throttle is not None:
                                throttle.record(topic.topic, wanted.partition, in_sync,
                                                len(records))
                    else:
                        records = b""
                    answer["records"] = records
                    answer["high_watermark"] = partition.high_watermark_for(replica_id)
                    answer["last_stable_offset"] = partition.last_stable_offset
                    if read_committed:
                        answer["aborted_transactions"] = [
                            {"producer_id": txn.producer_id, "first_offset": txn.first_offset}
                            for txn in partition.aborted_transactions(wanted.fetch_offset,
                                                                      records)]
                    answer["log_start_offset"] = partition.log_start_offset
                    total += len(records)
                    remaining -= len(records)
                except KafkaError as exc:
                    answer["error_code"] = exc.error_code
                    has_error = True
                except Exception:
                    if self.is_stopping():
                        # A fetch parked before shutdown, answered after the logs closed.
                        answer["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                        has_error = True
                        partitions.append(answer)
                        continue
                    log.exception("fetch from %s-%d failed", topic.topic, wanted.partition)
                    answer["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                    has_error = True
                partitions.append(answer)
            responses.append({"topic": topic.topic, "partitions": partitions})
        body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
                "responses": responses}
        return body, total, has_error

    def partitions_of(self, request: Any) -> list[Any]:
        found = []
        for topic in request.topics:
            for wanted in topic.partitions:
                partition = self.replicas.get_partition(topic.topic, wanted.partition)
                if partition is not None:
                    found.append(partition)
        return found


def _quiet(partition: Any, wanted: Any, replica_id: int, now: float) -> bool:
    """A session partition a caught-up, in-sync follower asks about again, where nothing
    moved since its last answer: only its fetch is recorded (it stays caught up in the
    leader's eyes), no answer is built. At 10,000 partitions this is most of an idle
    follower fetch, twice per ``replica.fetch.wait.max.ms``."""
    if (partition is None or not partition.is_leader
            or wanted.fetch_offset != partition.log_end_offset
            # The leader already has this offset for it: recording it moves no HW.
            or partition.follower_end_offsets.get(replica_id) != wanted.fetch_offset
            or wanted.high_watermark != partition.high_watermark
            or wanted.response_log_start_offset != partition.log_start_offset
            or wanted.last_stable_offset != partition.last_stable_offset
            or replica_id not in partition.isr
            or wanted.current_leader_epoch not in (-1, partition.leader_epoch)):
        return False
    if not partition.record_caught_up_fetch(replica_id, wanted.fetch_offset,
                                            wanted.log_start_offset, now):
        partition.record_follower_fetch(replica_id, wanted.fetch_offset, now,
                                        log_start=wanted.log_start_offset)
    return True


def _refused_partition(index: int) -> dict:
    return {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
            "aborted_transactions": [], "preferred_read_replica": -1, "records": b""}


class _DelayedFetch:
    """A parked fetch: re-read on appends to its partitions, answered at max_wait_ms."""

    def __init__(self, handler: FetchHandler, request: Any):
        self.handler = handler
        self.request = request
        self.result: defer.Deferred = defer.Deferred()
        self.partitions = handler.partitions_of(request)
        self.timer: DelayedCall | None = None
        self.offsets = {(topic.topic, wanted.partition): wanted.fetch_offset
                        for topic in request.topics for wanted in topic.partitions}
        self.is_follower = request.replica_id >= 0
        self.read_committed = request.isolation_level == READ_COMMITTED

    def start(self) -> defer.Deferred:
        for partition in self.partitions:
            partition.add_append_listener(self.on_append)
        # A follower's session fetch: the session wakes it when a settled partition changes
        # (fetch_session.py), so it need not listen on each of thousands of partitions.
        wait_on_session = getattr(self.request, "wait_on_session", None)
        if wait_on_session is not None:
            wait_on_session(self.on_append)
        self.handler.waiting += 1
        self.timer = self.handler.reactor.callLater(
            self.request.max_wait_ms / 1000.0, self.complete)
        return self.result

    def on_append(self, partition: Any) -> None:
        if self.result.called:
            return
        throttle = getattr(self.handler.replicas, "leader_throttle", None) \
            if self.is_follower else None
        if throttle is not None and throttle.holds_back(
                partition.topic, partition.index, self.request.replica_id in partition.isr):
            return  # a throttled moving replica: nothing would be sent now, keep waiting
        if self.is_follower and partition.follower_behind_hw(self.request.replica_id):
            # The HW moved past what this follower was told: it learns it from the answer
            # the next append brings, or within HW_NOTICE_SECONDS, not at max_wait.
            self._answer_within(HW_NOTICE_SECONDS)
        if self.request.min_bytes <= 1:
            # Any visible byte will do: answer as soon as this partition has some past the
            # fetch offset, without re-reading every partition of the request on each append.
            visible_end = partition.log_end_offset if self.is_follower \
                else partition.last_stable_offset if self.read_committed \
                else partition.high_watermark
            key = (partition.topic, partition.index)
            offset = self.offsets.get(key)
            if offset is None and hasattr(self.request, "fetch_offset"):
                offset = self.request.fetch_offset(key)  # a settled session partition
            if offset is not None and visible_end > offset:
                self.complete()
            return
        body, total, has_error = self.handler.read(self.request)
        if total >= self.request.min_bytes or has_error:
            self.complete(body)

    def _answer_within(self, seconds: float) -> None:
        """Bring the max_wait timer forward to ``seconds`` from now, if it is later."""
        timer = self.timer
        if timer is not None and timer.active() and (
                timer.getTime() - self.handler.reactor.seconds() > seconds):
            timer.reset(seconds)

    def complete(self, body: dict | None = None) -> None:
        if self.result.called:
            return
        for partition in self.partitions:
            partition.remove_append_listener(self.on_append)
        stop_waiting = getattr(self.request, "stop_waiting", None)
        if stop_waiting is not None:
            stop_waiting(self.on_append)
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.handler.waiting -= 1
        if body is None:
            body = self.handler.read(self.request)[0]
        self.result.callback(body)
