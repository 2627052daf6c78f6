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

from simplekafka.protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_SECONDS = 120.0  # Kafka's min.incremental.fetch.session.eviction.ms

PartitionKey = tuple[str, int]


class _Wanted:
    """One partition of a fetch as the handler reads it (a request field's shape)."""

    __slots__ = ("current_leader_epoch", "fetch_offset", "high_watermark",
                 "last_stable_offset", "log_start_offset", "partition", "partition_max_bytes",
                 "response_log_start_offset")

    def __init__(self, partition: int, wanted: Any):
        self.partition = partition
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

    def __init__(self, session_id: int, now: float):
        self.id = session_id
        self.epoch = 1  # the epoch the next (incremental) fetch must carry
        self.last_used = now
        self.partitions: OrderedDict[PartitionKey, _Wanted] = OrderedDict()

    def apply(self, request: Any) -> None:
        """Add or update the partitions the request names; drop the forgotten ones."""
        for topic in request.topics:
            for wanted in topic.partitions:
                key = (topic.topic, wanted.partition)
                cached = self.partitions.get(key)
                if cached is None:
                    self.partitions[key] = _Wanted(wanted.partition, wanted)
                else:
                    cached.update(wanted)
        for forgotten in getattr(request, "forgotten_topics_data", None) or []:
            for index in forgotten.partitions:
                self.partitions.pop((forgotten.topic, index), None)

    def topics(self) -> list[_Topic]:
        grouped: dict[str, list[_Wanted]] = {}
        for (topic, _index), wanted in self.partitions.items():
            grouped.setdefault(topic, []).append(wanted)
        return [_Topic(topic, partitions) for topic, partitions in grouped.items()]


class _ResolvedRequest:
    """The request with the session's whole partition list in place of what it named;
    ``incremental``: the answer names only what changed, so what cannot have changed
    need not be read (the Fetch handler's ``_quiet``)."""

    def __init__(self, request: Any, topics: list[_Topic], incremental: bool):
        self._request = request
        self.topics = topics
        self.incremental = incremental

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)


class FetchContext:
    """One fetch seen through its session: what to read, and how to shape the answer."""

    def __init__(self, request: Any, session: FetchSession | None = None,
                 incremental: bool = False, error: ErrorCode | None = None):
        self.session = session
        self.incremental = incremental
        self.error = error
        self.request = (_ResolvedRequest(request, session.topics(), incremental)
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
        if epoch == FINAL_EPOCH:
            self.sessions.pop(session_id, None)
            return FetchContext(request)
        if epoch == INITIAL_EPOCH:
            self.sessions.pop(session_id, None)
            session = self._new_session(now)
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
        self.sessions.move_to_end(session_id)
        session.apply(request)
        return FetchContext(request, session, incremental=True)

    def _new_session(self, now: float) -> FetchSession | None:
        if self.max_sessions <= 0:
            return None
        if len(self.sessions) >= self.max_sessions:
            oldest_id, oldest = next(iter(self.sessions.items()))
            if now - oldest.last_used < EVICTION_SECONDS:
                return None  # every session is in use: fetch without one
            del self.sessions[oldest_id]
            self.evictions += 1
        session_id = next(self._ids)
        while session_id in self.sessions:
            session_id = next(self._ids)
        session = self.sessions[session_id] = FetchSession(session_id, now)
        return session
