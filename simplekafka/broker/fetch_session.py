"""Fetch sessions (KIP-227): a consumer or follower names its partitions once, then only changes.

A fetch of thousands of partitions costs the broker and the network as much
when nothing changed as when everything did, unless both sides remember the
partition list. With a session, Kafka's way:

Each kind of fetch has its context (Kafka's ``FetchContext`` kinds), which says
what the fetch reads and which outcomes its answer names:

* ``session_id`` 0, ``session_epoch`` -1: a full fetch without a session (what
  librdkafka and every pre-2.1 client send); nothing is cached
  (``FetchContext``).
* epoch 0: a full fetch that opens a session (closing ``session_id``'s, if
  named); the answer names every partition and carries the new session id
  (``FullFetchContext``).
* epoch N > 0 on session ``session_id``: an incremental fetch. The request names
  only partitions that are new or whose fetch position changed, and lists in
  ``forgotten_topics_data`` those to drop; the session supplies the rest. The
  answer names only partitions with something new: records, an error, or a
  changed high watermark, last stable offset or log start offset
  (``IncrementalFetchContext``; a follower's is ``FollowerSessionContext``,
  below). An unknown session is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
  INVALID_FETCH_SESSION_EPOCH (``SessionErrorContext``); the client then
  starts over with epoch 0.
* epoch -1 with a ``session_id``: close that session, then a full fetch.

A session opened by topic IDs (Fetch v13+) may name an ID this broker's metadata
cache does not know yet (the client learnt it first): the partition is held
under a name no topic can have (``unknown_topic_name``) and answered
UNKNOWN_TOPIC_ID. Each later fetch of the session asks the cache again and,
once it knows the ID, holds the partition under its topic's name, so the
client's session reads it without opening a new one (Kafka's
``maybeResolveUnknownName``).

A follower's session goes further, so that an idle follower's fetch costs the
same at 10 partitions as at 10,000. Once a partition was found quiet for it (in
sync, caught up, nothing new: ``Partition.record_quiet_follower_fetch``), the
session "settles" it: it listens on the partition (its append listeners, which an
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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from simplekafka.broker.fetch_messages import FetchPartition, FetchPartitionData, FetchTopic
from simplekafka.broker.isr import now_ms
from simplekafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_SECONDS = 120.0  # Kafka's min.incremental.fetch.session.eviction.ms
SWEEP_SECONDS = 60.0  # a follower session re-examines every partition this often

PartitionKey = tuple[str, int]
TopicNames = Callable[[bytes], str | None]  # a topic ID's name, None if unknown


def unknown_topic_name(topic_id: bytes) -> str:
    """Where a session holds an ID the cache does not know: a name no topic can have
    (topic names are ASCII letters, digits, '.', '_', '-')."""
    return f"<unknown topic id {topic_id.hex()}>"


class FetchSession:
    """The partitions one client fetches, in the order it first named them."""

    def __init__(self, session_id: int, now: float, replica_id: int = -1):
        self.id = session_id
        self.epoch = 1  # the epoch the next (incremental) fetch must carry
        self.last_used = now
        self.partitions: OrderedDict[PartitionKey, FetchPartition] = OrderedDict()
        # A follower's session (replica_id >= 0): the partitions its next read examines;
        # the others are settled (see the module docstring).
        self.replica_id = replica_id
        self.unsettled: set[PartitionKey] = set()
        self.swept = now
        self.last_fetch_ms = now_ms()  # when the follower last fetched (monotonic ms)
        self.waiter: Callable[[Partition], None] | None = None  # a parked fetch's on_append
        # Opened by topic IDs (Fetch v13+) or by names; the IDs its topics were named by.
        self.uses_topic_ids = False
        self.topic_ids: dict[str, bytes] = {}

    def apply(self, named: list[FetchTopic], forgotten: list[tuple[str, list[int]]]) -> None:
        """Add or update the partitions a fetch names; drop the forgotten ones."""
        follower = self.replica_id >= 0
        for name, partitions in named:
            for wanted in partitions:
                key = (name, wanted.partition)
                cached = self.partitions.get(key)
                if cached is None:
                    self.partitions[key] = wanted
                else:
                    cached.update(wanted)
                if follower:
                    self.unsettled.add(key)
        for name, indexes in forgotten:
            for index in indexes:
                key = (name, index)
                dropped = self.partitions.pop(key, None)
                self.unsettled.discard(key)
                if dropped is not None:
                    self._unwatch(dropped)

    def resolve_unknown_names(self, topic_name: TopicNames) -> None:
        """Hold a partition named by an ID the cache did not know under its topic's name
        once the cache knows it (see the module docstring); the order is kept."""
        renamed: dict[str, str] = {}
        for name, topic_id in list(self.topic_ids.items()):
            if name == unknown_topic_name(topic_id):
                resolved = topic_name(topic_id)
                if resolved is not None:
                    renamed[name] = resolved
                    del self.topic_ids[name]
                    self.topic_ids[resolved] = topic_id
        if not renamed:
            return
        partitions: OrderedDict[PartitionKey, FetchPartition] = OrderedDict()
        for (name, index), wanted in self.partitions.items():
            key = (renamed.get(name, name), index)
            if key in partitions:  # already held by its name: one partition, one entry
                self._unwatch(wanted)
                continue
            partitions[key] = wanted
        self.partitions = partitions
        self.unsettled = {(renamed.get(name, name), index) for name, index in self.unsettled}

    def topics(self) -> list[FetchTopic]:
        return _grouped(self.partitions, self.partitions)

    def unsettled_topics(self) -> list[FetchTopic]:
        """What a follower's next read examines (the settled partitions are left out)."""
        return _grouped(self.partitions, self.unsettled)

    def settle(self, topic: str, index: int, partition: Partition) -> None:
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

    def _changed(self, partition: Partition) -> None:
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

    def _unwatch(self, wanted: FetchPartition) -> None:
        if wanted.watched is not None:
            wanted.watched.remove_append_listener(self._changed)
            wanted.watched = None

    def close(self) -> None:
        """Stop listening on the settled partitions (the session is dropped)."""
        for wanted in self.partitions.values():
            self._unwatch(wanted)
        self.waiter = None


def _grouped(partitions: dict[PartitionKey, FetchPartition], keys: Iterable[PartitionKey]
             ) -> list[FetchTopic]:
    """The session's ``partitions`` of ``keys`` by topic (a loop: a follower's every read)."""
    grouped: dict[str, list[FetchPartition]] = {}
    for key in keys:
        wanted = partitions.get(key)
        if wanted is not None:
            topic = grouped.get(key[0])
            if topic is None:
                grouped[key[0]] = [wanted]
            else:
                topic.append(wanted)
    return list(grouped.items())


class FetchContext:
    """One fetch seen through its session (Kafka's ``FetchContext``): which partitions to
    read, and which of their outcomes the answer names. This kind has no session: the
    fetch reads what it names and is answered in full (Kafka's sessionless context)."""

    session: FetchSession | None = None
    error: ErrorCode | None = None
    incremental = False  # a session's later fetch: the answer names only what changed

    session_id = INVALID_SESSION_ID  # what the answer carries

    def __init__(self, named: list[FetchTopic]):
        self._named = named

    def topics(self) -> list[FetchTopic]:
        return self._named

    def names_partitions(self) -> bool:
        """Whether the fetch stands for any partition (settled ones too: it may park)."""
        return bool(self._named)

    def settle(self, topic: str, index: int, partition: Partition) -> None:
        """A quiet partition of a follower's incremental fetch (see FollowerSessionContext)."""

    def wait_on_session(self, waiter: Callable[[Partition], None]) -> bool:
        """Let the session wake a parked fetch when a settled partition changes; False if
        it has none to (the parked fetch listens on its partitions itself)."""
        return False

    def stop_waiting(self, waiter: Callable[[Partition], None]) -> None:
        """The parked fetch is answered: the session no longer wakes it."""

    def fetch_offset(self, key: PartitionKey) -> int | None:
        """Where the fetch reads ``key`` from, if the session knows it."""
        return None

    def finish(self, responses: list[tuple[str, list[FetchPartitionData]]]
               ) -> list[tuple[str, list[FetchPartitionData]]]:
        """The outcomes the answer names (all, for a fetch without a session)."""
        return responses


class SessionErrorContext(FetchContext):
    """A fetch on an unknown session or with a wrong epoch: answered with ``error`` alone,
    nothing read (Kafka's SessionErrorContext)."""

    def __init__(self, error: ErrorCode):
        super().__init__([])
        self.error = error


class FullFetchContext(FetchContext):
    """A fetch that opened a session (epoch 0): reads and answers every partition of it,
    and the session remembers what each answer said (Kafka's FullFetchContext)."""

    def __init__(self, session: FetchSession):
        super().__init__(session.topics())
        self.session = session
        self.session_id = session.id

    def names_partitions(self) -> bool:
        assert self.session is not None
        return bool(self.session.partitions)

    def stop_waiting(self, waiter: Callable[[Partition], None]) -> None:
        assert self.session is not None
        if self.session.waiter == waiter:
            self.session.waiter = None

    def fetch_offset(self, key: PartitionKey) -> int | None:
        assert self.session is not None
        return self.session.fetch_offset(key)

    def finish(self, responses: list[tuple[str, list[FetchPartitionData]]]
               ) -> list[tuple[str, list[FetchPartitionData]]]:
        """Every outcome, each remembered by the session; an incremental fetch keeps only
        those that changed (or that the session does not hold)."""
        assert self.session is not None
        cached_partitions = self.session.partitions
        incremental = self.incremental
        kept = []
        for topic, answers in responses:
            changed = []
            for answer in answers:
                cached = cached_partitions.get((topic, answer.partition_index))
                if cached is None or _changed(cached, answer) or not incremental:
                    changed.append(answer)
            if changed:
                kept.append((topic, changed))
        return kept


class IncrementalFetchContext(FullFetchContext):
    """A later fetch of a session (epoch N > 0): the session supplies the partitions the
    request did not name, the answer names only those that changed (Kafka's
    IncrementalFetchContext); the Fetch read may skip what cannot have changed."""

    incremental = True


class FollowerSessionContext(IncrementalFetchContext):
    """A follower's incremental fetch: it stands for the session's unsettled partitions as
    they are at each read; quiet ones settle, and a parked fetch is woken by the session
    when a settled partition changes (see the module docstring)."""

    def __init__(self, session: FetchSession):
        # Not the session's every partition (FullFetchContext's): its topics are read from
        # the session's unsettled ones at each read.
        FetchContext.__init__(self, [])
        self.session = session
        self.session_id = session.id

    def topics(self) -> list[FetchTopic]:
        assert self.session is not None
        return self.session.unsettled_topics()

    def settle(self, topic: str, index: int, partition: Partition) -> None:
        assert self.session is not None
        self.session.settle(topic, index, partition)

    def wait_on_session(self, waiter: Callable[[Partition], None]) -> bool:
        assert self.session is not None
        self.session.waiter = waiter
        return True


def _changed(cached: FetchPartition, answer: FetchPartitionData) -> bool:
    """Whether ``answer`` has anything the client has not been told; remembers it."""
    changed = (bool(answer.records) or answer.error_code != ErrorCode.NONE
               or answer.preferred_read_replica >= 0
               or answer.high_watermark != cached.high_watermark
               or answer.last_stable_offset != cached.last_stable_offset
               or answer.log_start_offset != cached.response_log_start_offset)
    cached.high_watermark = answer.high_watermark
    cached.last_stable_offset = answer.last_stable_offset
    cached.response_log_start_offset = answer.log_start_offset
    return changed


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

    def context_for(self, session_id: int, epoch: int, replica_id: int,
                    named: list[FetchTopic], forgotten: list[tuple[str, list[int]]],
                    topic_name: TopicNames | None = None) -> FetchContext:
        """Open, continue or close a fetch's session; see the module docstring.
        ``topic_name`` resolves the IDs a session by topic IDs held as unknown."""
        session_id = session_id or INVALID_SESSION_ID
        if epoch == FINAL_EPOCH and session_id == INVALID_SESSION_ID:
            # No session to close (librdkafka's every fetch): only the housekeeping.
            if self.sessions:
                self._drop_abandoned_follower_session(self.clock())
            return FetchContext(named)
        now = self.clock()
        self._drop_abandoned_follower_session(now)
        if epoch == FINAL_EPOCH:
            self._drop(session_id)
            return FetchContext(named)
        if epoch == INITIAL_EPOCH:
            self._drop(session_id)
            session = self._new_session(now, replica_id)
            if session is None:
                return FetchContext(named)
            session.apply(named, forgotten)
            return FullFetchContext(session)
        session = self.sessions.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        session.epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        session.last_used = now
        session.last_fetch_ms = now_ms()
        if session.replica_id >= 0 and now - session.swept >= SWEEP_SECONDS:
            session.swept = now
            session.unsettled = set(session.partitions)
        self.sessions.move_to_end(session_id)
        if session.uses_topic_ids and topic_name is not None:
            session.resolve_unknown_names(topic_name)  # before the request's names are applied
        session.apply(named, forgotten)
        if session.replica_id >= 0:
            return FollowerSessionContext(session)
        return IncrementalFetchContext(session)

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
