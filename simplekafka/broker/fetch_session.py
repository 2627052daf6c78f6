"""Fetch sessions (KIP-227): a consumer or follower names its partitions once, then only changes.

A fetch of thousands of partitions costs the broker and the network as much
when nothing changed as when everything did, unless both sides remember the
partition list. With a session, Kafka's way:

* ``session_id`` 0, ``session_epoch`` -1: a full fetch without a session (what
  librdkafka and every pre-2.1 client send); nothing is cached.
* epoch 0: a full fetch that opens a session (closing ``session_id``'s, if
  named); the answer names every partition and carries the new session id.
* epoch N > 0 on session ``session_id``: an incremental fetch. The request names
  only partitions that are new or whose fetch position changed, and lists in
  ``forgotten_topics_data`` those to drop; the session supplies the rest. The
  answer names only partitions with something new: records, an error, or a
  changed high watermark, last stable offset or log start offset. An unknown
  session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
  INVALID_FETCH_SESSION_EPOCH; the client then starts over with epoch 0.
* epoch -1 with a ``session_id``: close that session, then a full fetch.

A follower's session goes further, so that an idle follower's fetch costs the
same at 10 partitions as at 10,000. Once a partition was found quiet for it
(in sync, caught up, nothing new: the Fetch handler's ``_quiet``), the session
"settles" it: it listens on the partition (its append listeners, which an
append, a high-watermark move or a log-start move fire) and leaves it out of
later reads until it fires; then the partition is examined again, and a parked
fetch of the session is woken. The follower's fetches of a settled partition
are not recorded one by one: when it fires, the follower was caught up until
its session's last fetch, which is what the leader records then (so an ISR
check after a long idle spell does not count it as lagging). Every
``SWEEP_SECONDS`` (a minute) the session examines all its partitions again, a safety net
for a change no listener reports (a partition object replaced, a leader change).

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions; when it
is full, a session idle for longer than ``EVICTION_SECONDS`` makes room, and
otherwise the fetch goes on without a session (id 0 in the answer), as Kafka's
does.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from simplekafka.broker.isr import now_ms
from simplekafka.protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_SECONDS = 120.0  # Kafka's min.incremental.fetch.session.eviction.ms
SWEEP_SECONDS = 60.0  # a follower session re-examines every partition this often

PartitionKey = tuple[str, int]


class _Wanted:
    """One partition of a fetch as the handler reads it (a request field's shape)."""

    __slots__ = ("current_leader_epoch", "fetch_offset", "high_watermark",
                 "last_stable_offset", "log_start_offset", "partition", "partition_max_bytes",
                 "response_log_start_offset", "watched")

    def __init__(self, partition: int, wanted: Any):
        self.partition = partition
        self.watched: Any = None  # the Partition a follower session listens on (settled)
        self.high_watermark = -1  # what the last answer naming it said (-1: never answered)
        self.last_stable_offset = -1
        self.response_log_start_offset = -1
        self.update(wanted)

    def update(self, wanted: Any) -> None:
        self.fetch_offset = wanted.fetch_offset
        self.partition_max_bytes = wanted.partition_max_bytes
        self.current_leader_epoch = getattr(wanted, "current_leader_epoch", -1)
        self.log_start_offset = getattr(wanted, "log_start_offset", -1)

    def changed_by(self, answer: dict) -> bool:
        """Whether ``answer`` has anything the client has not been told; remembers it."""
        changed = (bool(answer["records"]) or answer["error_code"] != ErrorCode.NONE
                   or answer.get("preferred_read_replica", -1) >= 0
                   or answer["high_watermark"] != self.high_watermark
                   or answer["last_stable_offset"] != self.last_stable_offset
                   or answer["log_start_offset"] != self.response_log_start_offset)
        self.high_watermark = answer["high_watermark"]
        self.last_stable_offset = answer["last_stable_offset"]
        self.response_log_start_offset = answer["log_start_offset"]
        return changed


class _Topic:
    __slots__ = ("partitions", "topic")

    def __init__(self, topic: str, partitions: list[_Wanted]):
        self.topic = topic
        self.partitions = partitions


class FetchSession:
    """The partitions one client fetches, in the order it first named them."""

    def __init__(self, session_id: int, now: float, replica_id: int = -1):
        self.id = session_id
        self.epoch = 1  # the epoch the next (incremental) fetch must carry
        self.last_used = now
        self.partitions: OrderedDict[PartitionKey, _Wanted] = OrderedDict()
        # A follower's session (replica_id >= 0): the partitions its next read examines;
        # the others are settled (see the module docstring).
        self.replica_id = replica_id
        self.unsettled: set[PartitionKey] = set()
        self.swept = now
        self.last_fetch_ms = now_ms()  # when the follower last fetched (monotonic ms)
        self.waiter: Callable[[Any], None] | None = None  # a parked fetch's on_append

    def apply(self, request: Any) -> None:
        """Add or update the partitions the request names; drop the forgotten ones."""
        follower = self.replica_id >= 0
        for topic in request.topics:
            for wanted in topic.partitions:
                key = (topic.topic, wanted.partition)
                cached = self.partitions.get(key)
                if cached is None:
                    self.partitions[key] = _Wanted(wanted.partition, wanted)
                else:
                    cached.update(wanted)
                if follower:
                    self.unsettled.add(key)
        for forgotten in getattr(request, "forgotten_topics_data", None) or []:
            for index in forgotten.partitions:
                key = (forgotten.topic, index)
                dropped = self.partitions.pop(key, None)
                self.unsettled.discard(key)
                if dropped is not None:
                    self._unwatch(dropped)

    def topics(self) -> list[_Topic]:
        return _grouped(self.partitions.items())

    def unsettled_topics(self) -> list[_Topic]:
        """What a follower's next read examines (the settled partitions are left out)."""
        partitions = self.partitions
        return _grouped((key, partitions[key]) for key in self.unsettled if key in partitions)

    def settle(self, topic: str, index: int, partition: Any) -> None:
        """``partition`` was quiet for the follower: leave it out until it changes."""
        key = (topic, index)
        wanted = self.partitions.get(key)
        if wanted is None:
            return
        self.unsettled.discard(key)
        if wanted.watched is not partition:
            self._unwatch(wanted)
            partition.add_append_listener(self._changed)
            wanted.watched = partition

    def _changed(self, partition: Any) -> None:
        """A settled partition fired (append, high watermark, log start): examine it again."""
        key = (partition.topic, partition.index)
        wanted = self.partitions.get(key)
        if wanted is None or wanted.watched is not partition:
            partition.remove_append_listener(self._changed)  # forgotten, or a replaced object
            return
        if key not in self.unsettled:
            self.unsettled.add(key)
            # Quiet until now: the follower was caught up at its last fetch (Kafka's
            # lastCaughtUpTimeMs), although that fetch was not recorded on the partition.
            partition.follower_caught_up_until(self.replica_id, self.last_fetch_ms)
        if self.waiter is not None:
            self.waiter(partition)

    def fetch_offset(self, key: PartitionKey) -> int | None:
        wanted = self.partitions.get(key)
        return None if wanted is None else wanted.fetch_offset

    def _unwatch(self, wanted: _Wanted) -> None:
        if wanted.watched is not None:
            wanted.watched.remove_append_listener(self._changed)
            wanted.watched = None

    def close(self) -> None:
        """Stop listening on the settled partitions (the session is dropped)."""
        for wanted in self.partitions.values():
            self._unwatch(wanted)
        self.waiter = None


def _grouped(items: Any) -> list[_Topic]:
    grouped: dict[str, list[_Wanted]] = {}
    for (topic, _index), wanted in items:
        grouped.setdefault(topic, []).append(wanted)
    return [_Topic(topic, partitions) for topic, partitions in grouped.items()]


class _ResolvedRequest:
    """The request with the session's whole partition list in place of what it named;
    ``incremental``: the answer names only what changed, so what cannot have changed
    need not be read (the Fetch handler's ``_quiet``). A follower's incremental fetch
    stands for its session's unsettled partitions, as they are at each read."""

    def __init__(self, request: Any, session: FetchSession, incremental: bool):
        self._request = request
        self._session = session
        self.incremental = incremental
        self._follower = incremental and session.replica_id >= 0
        self._topics = None if self._follower else session.topics()

    @property
    def topics(self) -> list[_Topic]:
        if self._topics is None:
            return self._session.unsettled_topics()
        return self._topics

    @property
    def names_partitions(self) -> bool:
        """Whether the fetch stands for any partition (settled ones too: it may park)."""
        return bool(self._session.partitions)

    def settle(self, topic: str, index: int, partition: Any) -> None:
        """A quiet partition of a follower's incremental fetch (the Fetch handler's read)."""
        if self._follower:
            self._session.settle(topic, index, partition)

    def wait_on_session(self, waiter: Callable[[Any], None]) -> bool:
        """Let the session wake a parked fetch when a settled partition changes; False
        if this is not a follower's incremental fetch (the caller listens itself)."""
        if self._follower:
            self._session.waiter = waiter
        return self._follower

    def stop_waiting(self, waiter: Callable[[Any], None]) -> None:
        if self._session.waiter == waiter:
            self._session.waiter = None

    def fetch_offset(self, key: PartitionKey) -> int | None:
        return self._session.fetch_offset(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)


class FetchContext:
    """One fetch seen through its session: what to read, and how to shape the answer."""

    def __init__(self, request: Any, session: FetchSession | None = None,
                 incremental: bool = False, error: ErrorCode | None = None):
        self.session = session
        self.incremental = incremental
        self.error = error
        self.request = (_ResolvedRequest(request, session, incremental)
                        if session is not None else request)

    def error_body(self) -> dict:
        assert self.error is not None
        return {"throttle_time_ms": 0, "error_code": self.error,
                "session_id": INVALID_SESSION_ID, "responses": []}

    def finish(self, body: dict) -> dict:
        """Set the session id; an incremental answer keeps only the partitions that changed."""
        session = self.session
        if session is None:
            return body
        body["session_id"] = session.id
        responses = []
        for topic in body["responses"]:
            changed = []
            for answer in topic["partitions"]:
                cached = session.partitions.get((topic["topic"], answer["partition_index"]))
                if cached is None:
                    changed.append(answer)
                elif cached.changed_by(answer) or not self.incremental:
                    changed.append(answer)
            if changed:
                responses.append({**topic, "partitions": changed})
        body["responses"] = responses
        return body


class FetchSessionCache:
    """The broker's sessions by id (Kafka's FetchSessionCache)."""

    def __init__(self, max_sessions: int = 1000, clock: Callable[[], float] = time.monotonic):
        self.max_sessions = max_sessions
        self.clock = clock
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recent first
        self._ids = (random.randint(1, 0x7FFFFFFF) for _ in itertools.count())
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    def context_for(self, request: Any) -> FetchContext:
        """Open, continue or close the request's session; see the module docstring."""
        session_id = getattr(request, "session_id", INVALID_SESSION_ID) or INVALID_SESSION_ID
        epoch = getattr(request, "session_epoch", FINAL_EPOCH)
        now = self.clock()
        self._drop_abandoned_follower_session(now)
        if epoch == FINAL_EPOCH:
            self._drop(session_id)
            return FetchContext(request)
        if epoch == INITIAL_EPOCH:
            self._drop(session_id)
            session = self._new_session(now, getattr(request, "replica_id", -1))
            if session is None:
                return FetchContext(request)
            session.apply(request)
            return FetchContext(request, session)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext(request, error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            return FetchContext(request, error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        session.epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        session.last_used = now
        session.last_fetch_ms = now_ms()
        if session.replica_id >= 0 and now - session.swept >= SWEEP_SECONDS:
            session.swept = now
            session.unsettled = set(session.partitions)
        self.sessions.move_to_end(session_id)
        session.apply(request)
        return FetchContext(request, session, incremental=True)

    def _drop_abandoned_follower_session(self, now: float) -> None:
        """A follower's session listens on its settled partitions: one its follower stopped
        using (a dead broker) is dropped after EVICTION_SECONDS, not left listening."""
        if self.sessions:
            oldest_id, oldest = next(iter(self.sessions.items()))
            if oldest.replica_id >= 0 and now - oldest.last_used >= EVICTION_SECONDS:
                self._drop(oldest_id)
                self.evictions += 1

    def _drop(self, session_id: int) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def _new_session(self, now: float, replica_id: int = -1) -> FetchSession | None:
        if self.max_sessions <= 0:
            return None
        if replica_id >= 0:
            # One fetcher per leader on each follower: a new session of the same follower
            # (it restarted, or lost its session) replaces the old one and its listeners.
            for stale in [i for i, s in self.sessions.items() if s.replica_id == replica_id]:
                self._drop(stale)
        if len(self.sessions) >= self.max_sessions:
            oldest_id, oldest = next(iter(self.sessions.items()))
            if now - oldest.last_used < EVICTION_SECONDS:
                return None  # every session is in use: fetch without one
            self._drop(oldest_id)
            self.evictions += 1
        session_id = next(self._ids)
        while session_id in self.sessions:
            session_id = next(self._ids)
        session = self.sessions[session_id] = FetchSession(session_id, now, replica_id)
        return session
