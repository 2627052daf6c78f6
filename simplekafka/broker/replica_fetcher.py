"""Followers copy their leaders' logs: one replica fetcher per leader broker, on the reactor.

A follower partition first truncates by leader epoch (KIP-101, replication rule 4): it asks
the leader, with OffsetForLeaderEpoch, where its own latest epoch ended in the
leader's log, and cuts its log there (if the leader answers an earlier epoch,
it cuts to its own end of that epoch and asks again). It never truncates to its
local high watermark, which may be stale. Then it fetches in a loop: Fetch with
``replica_id`` = this broker, ``fetch_offset`` = its log end offset,
``current_leader_epoch`` = the epoch it follows, a ~500 ms long poll, in a
fetch session (KIP-227): after the first full fetch only partitions whose log
end moved are named, and the leader answers only partitions with news. The
leader's answer is appended exactly at the log end (``append_as_follower``) and
the follower's high watermark becomes min(leader HW, own LEO). Each fetch is
also how the leader learns the follower's log end offset.

An idle fetcher's work does not grow with its partitions: only partitions that
may have moved (answered, added, truncated) are looked at when an incremental
fetch is built, with a look at all of them every ``SWEEP_SECONDS`` (a change the
fetcher did not make, such as retention moving a log start), and only
partitions waiting for truncation are looked for before each fetch.

A leader that fences the follower (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER)
or does not know its epoch yet (UNKNOWN_LEADER_EPOCH) is asked again after a
short back-off; the controller's next LeaderAndIsr settles who leads.

The versions are a Kafka 3.9 follower's (its inter-broker protocol 3.9): Fetch
v17, topics named by their IDs (which LeaderAndIsr brought, KIP-516), the
follower and its broker epoch in ``replica_state`` (KIP-903), each partition's
last fetched epoch checked by the leader (a log that left the leader's is
answered with the diverging epoch, where the follower truncates, as after an
OffsetForLeaderEpoch answer: Kafka's truncation on fetch); Fetch v12, by name,
while a partition has no topic ID (a topic from before topic IDs), as Kafka
falls back; a session opened one way is not continued the other (a full fetch
opens a new one). OffsetForLeaderEpoch v4, ListOffsets v9.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, cast

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.collaborators import DelayedCall, Reactor
from simplekafka.broker.controller.channel import ResponseReader, connect_reader
from simplekafka.broker.partition import Partition
from simplekafka.broker.replication_quota import ReplicationThrottle
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import (
    FetchRequest,
    FetchRequestForgottenTopicsData,
    FetchRequestTopics,
    FetchRequestTopicsPartitions,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsRequestTopicsPartitions,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestTopicsPartitions,
)
from simplekafka.protocol.messages import decode_response, decode_response_dict, encode_request
from simplekafka.protocol.primitives import Buffer
from simplekafka.storage import UnexpectedAppendOffsetError
from simplekafka.storage.epochs import end_offset_for_epoch

log = logging.getLogger(__name__)

FETCH_VERSION = 17  # Kafka 3.9's follower: topics by ID, the follower in replica_state
FETCH_VERSION_BY_NAME = 12  # ... and its fallback while a partition has no topic ID
FIRST_FETCH_BY_ID = 13
FIRST_FETCH_REPLICA_STATE = 15
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
LIST_OFFSETS_VERSION = 9
CLIENT_ID = "simplekafka-replica-fetcher"
BACKOFF = 0.2  # seconds after an error before trying again
REQUEST_TIMEOUT = 10.0  # seconds beyond the long poll before a silent leader is dropped
SWEEP_SECONDS = 60.0  # an incremental fetch looks at every partition's position this often

_RETRIABLE = {ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
              ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_ID,
              ErrorCode.INCONSISTENT_TOPIC_ID}
_SESSION_LOST = {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                 ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR}
# A partition answered so may be held by the leader's session under a topic ID it no
# longer stands for: the next fetch opens a new session. A SimpleKafka or Kafka leader
# resolves an ID it learns later within the session (Kafka's follower does not reopen);
# the reopen is what recovers a topic re-created between two fetches, whose new ID this
# follower does not send unless the partition's position changed (Kafka's follower
# replaces the old ID in its session instead).
_STALE_IN_SESSION = {ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INCONSISTENT_TOPIC_ID,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
Key = tuple[str, int]
T = TypeVar("T")
# An inlineCallbacks body: each step yields a Deferred of its own result type, which is
# why Twisted's inlineCallbacks takes Deferred[Any] (the one Any here); it returns a T.
Steps: TypeAlias = Generator[defer.Deferred[Any], object, T]
Position = tuple[int, int, int]  # log end offset, log start offset, leader epoch followed


def _no_broker_epoch() -> int:
    return -1


def _pause(reactor: Reactor, seconds: float) -> defer.Deferred[None]:
    """Fires after ``seconds`` on ``reactor`` (a back-off in the fetch loop)."""
    waiter: defer.Deferred[None] = defer.Deferred()
    reactor.callLater(seconds, waiter.callback, None)
    return waiter


@dataclass
class FetchSettings:
    """replica.fetch.* settings of this broker."""

    broker_id: int
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1 << 20
    # This broker's epoch (its registration znode's czxid), for Fetch v15+'s replica_state;
    # -1 before it registered, as Kafka's supplier answers.
    broker_epoch: Callable[[], int] = field(default=_no_broker_epoch)


@dataclass
class _FollowerState:
    partition: Partition
    truncated: bool = False  # truncation by epoch done for the epoch it follows
    epoch: int = -1
    caught_up: bool = False  # our LEO reached the leader's HW in the last answer
    # Send our last fetched epoch for the leader to check (Fetch v12+); off once the
    # leader could not say where we diverge (then OffsetForLeaderEpoch settles it).
    check_epoch: bool = True



class ReplicaFetcher:
    """Fetches, for this broker, every partition led by one leader broker."""

    def __init__(self, reactor: Reactor, leader_id: int, settings: FetchSettings,
                 endpoint_of: Callable[[int], tuple[str, int] | None],
                 throttle: ReplicationThrottle | None = None):
        self.reactor = reactor
        self.throttle = throttle  # follower.replication.throttled.* (None: never held back)
        self.leader_id = leader_id
        self.settings = settings
        self.endpoint_of = endpoint_of
        self.states: dict[tuple[str, int], _FollowerState] = {}
        self.running = False
        self.fetches = 0  # answered fetch requests (for tests)
        self._connection: ResponseReader | None = None
        self._correlation = itertools.count(1)
        self._loop_done: defer.Deferred | None = None
        self._timer: DelayedCall | None = None  # the request timer, see _watch
        self._waiting: defer.Deferred | None = None
        self._generation = 0
        # The fetch session with this leader (KIP-227): its id and next epoch (0: the next
        # fetch is full and opens one), and what the session holds per partition.
        self.session_id = 0
        self.session_epoch = 0
        self._session_knows: dict[Key, Position] = {}
        self._session_by_id = False  # the session names topics by ID (Fetch v13+)
        self._topic_ids: dict[str, bytes] = {}  # of the topics followed (and just removed)
        # What an incremental fetch looks at: partitions whose position may have moved, and
        # removed ones the session must forget; and those waiting for truncation by epoch.
        self._moved: set[tuple[str, int]] = set()
        self._removed: set[tuple[str, int]] = set()
        self._swept = 0.0
        self._to_truncate: set[tuple[str, int]] = set()

    # -- partitions ---------------------------------------------------------------------

    def add(self, partition: Partition) -> None:
        """Follow ``partition`` (again): truncation by epoch comes first."""
        key = (partition.topic, partition.index)
        self.states[key] = _FollowerState(partition, truncated=False,
                                          epoch=partition.leader_epoch)
        topic_id = partition.log.topic_id
        if topic_id:
            self._topic_ids[partition.topic] = topic_id
        self._to_truncate.add(key)
        self._moved.add(key)
        self._removed.discard(key)
        self.start()

    def remove(self, key: tuple[str, int]) -> None:
        if self.states.pop(key, None) is not None:
            self._removed.add(key)
        if not self.states:
            self.stop()

    def _truncate_again(self, key: tuple[str, int], state: _FollowerState) -> None:
        state.truncated = False
        self._to_truncate.add(key)
        self._moved.add(key)

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> None:
        if not self.running:
            self.running = True
            self._generation += 1  # a loop of an earlier start ends at its next step
            self._loop_done = self._run(self._generation)

    def stop(self) -> None:
        self.running = False
        self._drop_connection()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = self._waiting = None

    def _reset_session(self) -> None:
        """The next fetch is full and opens a new session."""
        self.session_id = 0
        self.session_epoch = 0
        self._session_knows = {}
        self._removed = set()
        self._topic_ids = {topic: topic_id for topic, topic_id in self._topic_ids.items()
                           if any(key[0] == topic for key in self.states)}

    def _drop_connection(self) -> None:
        self._reset_session()
        connection, self._connection = self._connection, None
        if connection is not None and connection.transport is not None:
            connection.transport.loseConnection()

    @defer.inlineCallbacks
    def _run(self, generation: int) -> Steps[None]:
        failures = 0
        while self.running and self.states and generation == self._generation:
            try:
                pending = self._pending_truncation()
                if pending:
                    yield self._truncate(pending)
                else:
                    yield self._fetch_once()
                failures = 0
            except Exception as exc:
                if self.running:
                    failures += 1
                    # The first failure in a row is worth a line; a dead leader is retried
                    # quietly until the controller names a new one.
                    (log.info if failures == 1 else log.debug)(
                        "replica fetcher for leader %d: %s; retrying", self.leader_id,
                        exc or type(exc).__name__)
                self._drop_connection()
                if self.running:
                    yield _pause(self.reactor, BACKOFF)

    def _pending_truncation(self) -> list[_FollowerState]:
        pending = []
        for key in list(self._to_truncate):
            state = self.states.get(key)
            if state is None or state.truncated:
                self._to_truncate.discard(key)
            else:
                pending.append(state)
        return pending

    # -- requests -----------------------------------------------------------------------

    @defer.inlineCallbacks
    def _request(self, api_key: ApiKey, version: int,
                 body: FetchRequest | OffsetForLeaderEpochRequest | ListOffsetsRequest,
                 timeout: float) -> Steps[Struct]:
        frame = yield self._exchange(api_key, version, body, timeout)
        assert isinstance(frame, bytes)
        return decode_response(api_key, version, frame)[1]

    def _exchange(self, api_key: ApiKey, version: int,
                  body: FetchRequest | OffsetForLeaderEpochRequest | ListOffsetsRequest,
                  timeout: float) -> defer.Deferred[bytes]:
        """The answer's frame; a plain Deferred, not a generator, since the fetch loop
        waits on it hundreds of times a second (each inlineCallbacks level is a
        generator and Deferreds more per fetch)."""
        connection = self._connection
        if connection is not None and connection.transport is not None \
                and connection.connected:
            return self._send(connection, api_key, version, body, timeout)
        return self._connect().addCallback(self._send, api_key, version, body, timeout)

    @defer.inlineCallbacks
    def _connect(self) -> Steps[ResponseReader]:
        address = self.endpoint_of(self.leader_id)
        if address is None:
            raise ConnectionError(f"leader {self.leader_id} has no known address")
        connection = yield connect_reader(self.reactor, *address)
        assert isinstance(connection, ResponseReader)
        if not self.running:
            connection.transport.loseConnection()
            raise ConnectionError("fetcher stopped")
        self._connection = connection
        return connection

    def _send(self, connection: ResponseReader, api_key: ApiKey, version: int,
              body: FetchRequest | OffsetForLeaderEpochRequest | ListOffsetsRequest,
              timeout: float) -> defer.Deferred[bytes]:
        correlation_id = next(self._correlation)
        payload = encode_request(api_key, version, correlation_id, CLIENT_ID, body)
        waiter = connection.send(correlation_id, payload)
        self._watch(waiter, timeout)
        return waiter.addErrback(self._no_answer, timeout)

    def _no_answer(self, failure: Failure, timeout: float) -> Failure:
        """A request the timer cancelled fails as a TimeoutError naming the leader."""
        if failure.check(defer.CancelledError):
            raise TimeoutError(f"no answer from leader {self.leader_id} "
                               f"within {timeout:g} s")
        return failure

    def _watch(self, waiter: defer.Deferred, timeout: float) -> None:
        """Cancel ``waiter`` if it is still unanswered after ``timeout`` seconds.

        One timer per fetcher, pushed later with each request (a reset that only moves
        its time), not a new timer per request: a follower sends hundreds of fetches a
        second under load, and scheduling and cancelling a timer for each was part of
        its CPU per fetch cycle.
        """
        self._waiting = waiter
        timer = self._timer
        if timer is not None and timer.active():
            timer.reset(timeout)
        else:
            self._timer = self.reactor.callLater(timeout, self._timed_out)

    def _timed_out(self) -> None:
        waiter, self._waiting = self._waiting, None
        if waiter is not None and not waiter.called:
            waiter.cancel()  # the fetch loop drops the connection and starts over

    # -- truncation by leader epoch (KIP-101) -------------------------------------------

    @defer.inlineCallbacks
    def _truncate(self, states: list[_FollowerState]
                  ) -> Steps[None]:
        """One OffsetForLeaderEpoch round for ``states``; done ones are marked truncated."""
        asking = {}
        for state in states:
            latest = state.partition.log.leader_epochs.latest_epoch
            if latest < 0:
                state.truncated = True  # nothing written under any epoch: nothing to undo
                continue
            asking[(state.partition.topic, state.partition.index)] = (state, latest)
        if not asking:
            return
        topics: dict[str, list[OffsetForLeaderEpochRequestTopicsPartitions]] = {}
        for (topic, index), (state, latest) in asking.items():
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": state.epoch, "leader_epoch": latest})
        body: OffsetForLeaderEpochRequest = {
            "replica_id": self.settings.broker_id,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}
        response = yield self._request(ApiKey.OFFSET_FOR_LEADER_EPOCH,
                                       OFFSET_FOR_LEADER_EPOCH_VERSION, body, REQUEST_TIMEOUT)
        assert isinstance(response, Struct)
        retry_later = False
        for topic in response.topics:
            for answer in topic.partitions:
                found = asking.get((topic.topic, answer.partition))
                if found is None or self.states.get((topic.topic, answer.partition)) \
                        is not found[0]:
                    continue  # no longer followed (or followed anew) meanwhile
                state, latest = found
                if answer.error_code != ErrorCode.NONE:
                    retry_later = True
                    continue
                truncate_by_epoch(state.partition, latest, answer.leader_epoch,
                                  answer.end_offset)
                self._moved.add((topic.topic, answer.partition))
                now_latest = state.partition.log.leader_epochs.latest_epoch
                # Done when the leader's epoch is our latest; else ask again about the
                # earlier epoch we now end with (unless nothing changed: no progress).
                if now_latest <= answer.leader_epoch or answer.leader_epoch < 0 \
                        or now_latest == latest:
                    state.truncated = True
        if retry_later:
            yield _pause(self.reactor, BACKOFF)

    # -- fetching -----------------------------------------------------------------------

    @defer.inlineCallbacks
    def _fetch_once(self) -> Steps[None]:
        """One fetch in the session with the leader (KIP-227): after the first (full) one,
        only partitions whose position changed are named and removed ones forgotten; the
        answer names only partitions with news. A round in which the replication throttle
        holds partitions back is a full fetch without a session (a session would go on
        fetching what the request leaves out)."""
        positions: dict[Key, Position] = {}
        throttle = self.throttle
        held_back = False
        now = self.reactor.seconds()
        sent: dict[Key, _FollowerState]
        if throttle is not None and throttle.quota.limited:
            sent = {}
            for key, state in self.states.items():
                if throttle.holds_back(*key, state.caught_up):
                    held_back = True
                    continue  # a moving replica over the follower rate: not this round
                sent[key] = state
        else:
            sent = dict(self.states)
        if not sent:  # every partition is held back: wait for the quota to refill
            wait = throttle.quota.seconds_until_available() if throttle is not None else BACKOFF
            yield _pause(self.reactor, min(max(wait, 0.01), 1.0))
            return
        # Kafka's choice: by topic ID (v17) when every partition has one, else by name (v12).
        by_id = all(state.partition.log.topic_id for state in sent.values())
        version = FETCH_VERSION if by_id else FETCH_VERSION_BY_NAME
        if self.session_epoch > 0 and by_id != self._session_by_id:
            self._reset_session()  # a session goes on the way it was opened: a new one
        looked_at: set[Key] | dict[Key, _FollowerState] = sent
        if not held_back and self.session_epoch > 0 and now - self._swept < SWEEP_SECONDS:
            looked_at = self._moved  # the session knows where the others are
        if looked_at is sent:
            self._swept = now
        for key in looked_at:
            followed = sent.get(key)
            if followed is not None:
                partition = followed.partition
                positions[key] = (partition.log_end_offset, partition.log_start_offset,
                                  followed.epoch)
        self._moved = set()  # a failed fetch resets the session: the next one is full
        if held_back and self.session_id:
            self._reset_session()  # the leader evicts the idle session in time
        session_id, epoch = (0, -1) if held_back else (self.session_id, self.session_epoch)
        incremental = epoch > 0
        last_epochs: dict[Key, int] = {}  # what each partition named says it fetched last
        topics: dict[str, list[FetchRequestTopicsPartitions]] = {}
        for key, position in positions.items():
            if incremental and self._session_knows.get(key) == position:
                continue  # the session has it where it is
            state = sent[key]
            last = state.partition.log.leader_epochs.latest_epoch if state.check_epoch else -1
            last_epochs[key] = last
            topics.setdefault(key[0], []).append({
                "partition": key[1], "current_leader_epoch": position[2],
                "fetch_offset": position[0], "last_fetched_epoch": last,
                "log_start_offset": position[1],
                "partition_max_bytes": self.settings.max_bytes})
        forgotten: dict[str, list[int]] = {}
        removed, self._removed = self._removed, set()
        if incremental:
            if held_back:
                removed = self._session_knows.keys() - positions.keys()
            for topic, index in removed:
                if (topic, index) not in sent:
                    forgotten.setdefault(topic, []).append(index)
        body = self._fetch_body(version, session_id, epoch, topics, forgotten)
        frame = yield self._exchange(ApiKey.FETCH, version, body,
                                     self.settings.max_wait_ms / 1000.0 + REQUEST_TIMEOUT)
        assert isinstance(frame, bytes)
        response: FetchResponse = decode_response_dict(ApiKey.FETCH, version, frame)[1]
        self.fetches += 1
        if response["error_code"] in _SESSION_LOST:
            log.info("fetch session with leader %d lost (%s); starting a new one",
                     self.leader_id, ErrorCode(response["error_code"]).name)
            self._reset_session()
            return
        if held_back or response["session_id"] == 0:
            self._reset_session()  # no session this round (or the leader keeps none)
        else:
            self.session_id = response["session_id"]
            self.session_epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
            self._session_by_id = by_id
            if incremental:
                for key in removed:
                    self._session_knows.pop(key, None)
                self._session_knows.update(positions)
            else:
                self._session_knows = positions
        names = {topic_id: name for name, topic_id in self._topic_ids.items()}
        back_off = stale = False
        out_of_range: list[_FollowerState] = []
        for answered in response["responses"]:
            name = names.get(answered["topic_id"], "") if version >= FIRST_FETCH_BY_ID \
                else answered["topic"]
            for answer in answered["partitions"]:
                key = (name, answer["partition_index"])
                found = sent.get(key)
                if found is None or self.states.get(key) is not found:
                    continue  # removed or re-added while the fetch was out
                state = found
                self._moved.add(key)  # its log end or start may move now
                code = answer["error_code"]
                diverging = answer["diverging_epoch"]
                if code == ErrorCode.NONE and (diverging["epoch"] >= 0
                                               or diverging["end_offset"] >= 0):
                    self._diverged(key, state, last_epochs.get(key, -1), diverging["epoch"],
                                   diverging["end_offset"])
                elif code == ErrorCode.NONE:
                    records = bytes(cast("Buffer", answer["records"] or b""))
                    if throttle is not None:
                        throttle.record(*key, state.caught_up, len(records))
                    try:
                        state.partition.append_as_follower(records, answer["high_watermark"],
                                                           answer["log_start_offset"])
                        state.caught_up = \
                            state.partition.log_end_offset >= answer["high_watermark"]
                    except UnexpectedAppendOffsetError as exc:
                        # Our log and the leader's disagree on where batches start:
                        # truncate by epoch again rather than retry the same append.
                        log.warning("%s: %s; truncating by epoch again", state.partition, exc)
                        self._truncate_again(key, state)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    out_of_range.append(state)
                else:
                    if code not in _RETRIABLE:
                        log.warning("fetch of %s-%d from leader %d: error %d", *key,
                                    self.leader_id, code)
                    back_off = True
                    stale = stale or code in _STALE_IN_SESSION
        if stale:
            self._reset_session()
        if out_of_range:
            yield self._handle_out_of_range(out_of_range)
        if back_off:
            yield _pause(self.reactor, BACKOFF)

    def _fetch_body(self, version: int, session_id: int, session_epoch: int,
                    topics: dict[str, list[FetchRequestTopicsPartitions]],
                    forgotten: dict[str, list[int]]) -> FetchRequest:
        """The Fetch request at ``version``: topics by ID from v13, the follower in
        ``replica_state`` from v15 (with its broker epoch), in ``replica_id`` before."""
        by_id = version >= FIRST_FETCH_BY_ID
        body: FetchRequest = {
            "max_wait_ms": self.settings.max_wait_ms, "min_bytes": self.settings.min_bytes,
            "max_bytes": self.settings.max_bytes, "isolation_level": 0,
            "session_id": session_id, "session_epoch": session_epoch, "rack_id": "",
            "topics": [self._topic_entry(by_id, t, p) for t, p in topics.items()],
            "forgotten_topics_data": [self._forgotten_entry(by_id, t, p)
                                      for t, p in forgotten.items()]}
        if version >= FIRST_FETCH_REPLICA_STATE:
            body["replica_state"] = {"replica_id": self.settings.broker_id,
                                     "replica_epoch": self.settings.broker_epoch()}
        else:
            body["replica_id"] = self.settings.broker_id
        return body

    def _topic_entry(self, by_id: bool, topic: str,
                     partitions: list[FetchRequestTopicsPartitions]) -> FetchRequestTopics:
        if by_id:
            return {"topic_id": self._topic_ids[topic], "partitions": partitions}
        return {"topic": topic, "partitions": partitions}

    def _forgotten_entry(self, by_id: bool, topic: str, partitions: list[int]
                         ) -> FetchRequestForgottenTopicsData:
        if by_id:
            return {"topic_id": self._topic_ids[topic], "partitions": partitions}
        return {"topic": topic, "partitions": partitions}

    def _diverged(self, key: Key, state: _FollowerState, sent_epoch: int, leader_epoch: int,
                  leader_end_offset: int) -> None:
        """The leader says our log left its own (Fetch v12+'s diverging epoch): truncate as
        after an OffsetForLeaderEpoch answer (Kafka's truncation on fetch). An answer that
        moves nothing hands the partition to OffsetForLeaderEpoch, without the check."""
        partition = state.partition
        before = (partition.log_end_offset, partition.log.leader_epochs.latest_epoch)
        log.info("%s: diverges from leader %d's log at epoch %d, end offset %d; truncating",
                 partition, self.leader_id, leader_epoch, leader_end_offset)
        truncate_by_epoch(partition, sent_epoch, leader_epoch, leader_end_offset)
        if (partition.log_end_offset, partition.log.leader_epochs.latest_epoch) == before:
            state.check_epoch = False
            self._truncate_again(key, state)

    @defer.inlineCallbacks
    def _handle_out_of_range(self, states: list[_FollowerState]
                             ) -> Steps[None]:
        """Our LEO is outside the leader's log: ahead (truncate by epoch again) or behind
        its start (retention moved it: start over empty at the leader's log start)."""
        topics: dict[str, list[ListOffsetsRequestTopicsPartitions]] = {}
        for state in states:
            topics.setdefault(state.partition.topic, []).append({
                "partition_index": state.partition.index, "current_leader_epoch": state.epoch,
                "timestamp": EARLIEST_TIMESTAMP})
        body: ListOffsetsRequest = {
            "replica_id": self.settings.broker_id, "isolation_level": 0,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
        response = yield self._request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body,
                                       REQUEST_TIMEOUT)
        assert isinstance(response, Struct)
        by_key = {(s.partition.topic, s.partition.index): s for s in states}
        for topic in response["topics"]:
            for answer in topic["partitions"]:
                key = (topic["name"], answer["partition_index"])
                found = by_key.get(key)
                if found is None or answer["error_code"] != ErrorCode.NONE:
                    continue
                state = found
                partition = state.partition
                if partition.log_end_offset < answer["offset"]:
                    log.info("%s: behind the leader's log start %d: starting over there",
                             partition, answer["offset"])
                    partition.start_over_at(answer["offset"])
                    self._moved.add(key)
                else:
                    self._truncate_again(key, state)


def truncation_offset(epochs: Sequence[tuple[int, int]], log_end_offset: int,
                      asked_epoch: int, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower cuts its log after one OffsetForLeaderEpoch answer (replication rule 4).

    The follower asked about ``asked_epoch`` (its latest; ``epochs`` are its
    (epoch, start offset) entries) and the leader answered (``leader_epoch``,
    ``leader_end_offset``). Never the follower's own high watermark (KIP-101):

    * the leader knows our epoch: its end of that epoch;
    * it answers an earlier epoch: the smaller of its end and our own end of
      that epoch (our entries after it are another leader's), and the caller
      asks again with our (now earlier) latest epoch;
    * it knows no epoch at or before ours (-1): our log holds nothing it has,
      cut to its end offset if one is given, else keep everything.

    Never beyond ``log_end_offset``. A plain function of numbers, so that it
    can be checked, and replaced by a learner's (``simplekafka learn``), alone.
    """
    if leader_epoch < 0 or leader_end_offset < 0:
        cut = leader_end_offset if leader_end_offset >= 0 else log_end_offset
    elif leader_epoch == asked_epoch:
        cut = leader_end_offset
    else:
        own_epoch, own_end = end_offset_for_epoch(epochs, log_end_offset, leader_epoch)
        if own_epoch < 0 or own_end < 0:
            own_end = leader_end_offset
        cut = min(leader_end_offset, own_end)
    return min(cut, log_end_offset)


def truncate_by_epoch(partition: Partition, asked_epoch: int, leader_epoch: int,
                      leader_end_offset: int) -> None:
    """Apply one OffsetForLeaderEpoch answer to a follower: cut at :func:`truncation_offset`.

    (-1, -1) leaves the partition untouched: the leader knows nothing to compare.
    """
    if leader_epoch < 0 and leader_end_offset < 0:
        return
    partition.truncate_to(truncation_offset(
        partition.log.leader_epochs.entries, partition.log_end_offset, asked_epoch,
        leader_epoch, leader_end_offset))


class ReplicaFetcherManager:
    """One ReplicaFetcher per leader broker; partitions move between them on LeaderAndIsr."""

    def __init__(self, reactor: Reactor, settings: FetchSettings,
                 endpoint_of: Callable[[int], tuple[str, int] | None],
                 throttle: ReplicationThrottle | None = None):
        self.reactor = reactor
        self.settings = settings
        self.endpoint_of = endpoint_of
        self.throttle = throttle  # shared by every fetcher: one follower rate per broker
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[tuple[str, int], int] = {}

    def follow(self, partition: Partition) -> None:
        """Fetch ``partition`` from its leader (after truncating by epoch); -1: from nobody."""
        key = (partition.topic, partition.index)
        self.unfollow(key)
        leader = partition.leader_id
        if leader < 0 or leader == self.settings.broker_id:
            return
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = self.fetchers[leader] = ReplicaFetcher(
                self.reactor, leader, self.settings, self.endpoint_of, self.throttle)
        self._leader_of[key] = leader
        fetcher.add(partition)

    def is_following(self, key: tuple[str, int]) -> bool:
        return key in self._leader_of

    def unfollow(self, key: tuple[str, int]) -> None:
        leader = self._leader_of.pop(key, None)
        if leader is not None and leader in self.fetchers:
            self.fetchers[leader].remove(key)

    def shutdown(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()
        self._leader_of.clear()
