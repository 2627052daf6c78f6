"""Fetch sessions (KIP-227) on the Fetch handler, with real partitions and Twisted's clock.

A session remembers which partitions a client fetches: incremental fetches name
only what changed on the client's side, answers only what changed on ours.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import task

from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.fetch_session import EVICTION_SECONDS, FetchSessionCache
from simplekafka.broker.partition import Partition
from simplekafka.protocol.api import ApiKey, request_schema
from simplekafka.protocol.errors import ErrorCode, error_for
from simplekafka.protocol.records import Record, build_batch
from simplekafka.protocol.topic_ids import ZERO_ID
from simplekafka.storage import Log, LogConfig

BIG = 1 << 20


class Leaders:
    def __init__(self, partitions):
        self.partitions = {(p.topic, p.index): p for p in partitions}

    def leader_partition(self, topic, index):
        if (topic, index) not in self.partitions:
            raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return self.partitions[(topic, index)]

    readable_partition = leader_partition  # Fetch v11+ reads from any replica; all lead here

    def get_partition(self, topic, index):
        return self.partitions.get((topic, index))

    def maybe_expand_isr(self, partition, replica_id):
        pass


@pytest.fixture
def world(tmp_path):
    clock = task.Clock()
    partitions = []
    for index in range(3):
        partition = Partition("t", index, 1, Log.open(tmp_path / f"t-{index}", LogConfig()))
        partition.make_leader(0, [1], [1], 0, 1)
        partitions.append(partition)
    sessions = FetchSessionCache(max_sessions=2, clock=clock.seconds)
    handler = FetchHandler(Leaders(partitions), clock, lambda: False, sessions=sessions)
    return clock, partitions, handler


def produce(partition: Partition) -> None:
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"v")])
    partition.append_as_leader(batch, 1, 1, BIG, 8)


def fetch(handler, offsets: dict[int, int], session_id: int = 0, epoch: int = -1,
          forgotten: tuple[int, ...] = (), max_wait_ms: int = 500):
    partitions = [dict(partition=p, fetch_offset=o, partition_max_bytes=BIG,
                       current_leader_epoch=-1, log_start_offset=-1)
                  for p, o in offsets.items()]
    request = request_schema(ApiKey.FETCH, 10).make(  # v10: no rack_id, the leader reads
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=BIG, isolation_level=0,
        session_id=session_id, session_epoch=epoch,
        topics=[dict(topic="t", partitions=partitions)] if partitions else [],
        forgotten_topics_data=[dict(topic="t", partitions=list(forgotten))]
        if forgotten else [])
    answer = handler(None, request)
    if not isinstance(answer, dict):
        if not answer.called:
            handler.reactor.advance(max_wait_ms / 1000)  # parked: answered at max_wait
        answer = answer.result
    return answer


def named(answer) -> dict[int, dict]:
    return {p["partition_index"]: p for topic in answer["responses"]
            for p in topic["partitions"]}


def test_without_a_session_every_partition_is_named_and_nothing_is_kept(world):
    _clock, partitions, handler = world
    produce(partitions[0])
    answer = fetch(handler, {0: 0, 1: 0, 2: 0})
    assert answer["session_id"] == 0 and set(named(answer)) == {0, 1, 2}
    assert len(handler.sessions) == 0


def test_an_incremental_fetch_names_and_answers_only_what_changed(world):
    clock, partitions, handler = world
    for partition in partitions:
        produce(partition)
    full = fetch(handler, {0: 0, 1: 0, 2: 0}, epoch=0)
    session = full["session_id"]
    assert session != 0 and set(named(full)) == {0, 1, 2}
    # The client read one record of each: it names all three at their new offsets.
    quiet = fetch(handler, {0: 1, 1: 1, 2: 1}, session, epoch=1)
    assert named(quiet) == {}  # parked for max_wait, then answered: nothing changed
    assert clock.seconds() == 0.5
    produce(partitions[2])
    answer = fetch(handler, {}, session, epoch=2)  # names nothing: the session knows
    assert set(named(answer)) == {2} and named(answer)[2]["records"]
    assert named(answer)[2]["high_watermark"] == 2


def test_forgotten_partitions_leave_the_session(world):
    _clock, partitions, handler = world
    session = fetch(handler, {0: 0, 1: 0, 2: 0}, epoch=0)["session_id"]
    fetch(handler, {}, session, epoch=1, forgotten=(1,), max_wait_ms=0)
    produce(partitions[1])
    assert named(fetch(handler, {}, session, epoch=2, max_wait_ms=0)) == {}
    assert set(handler.sessions.sessions[session].partitions) == {("t", 0), ("t", 2)}


class TopicIds:
    """The leader's metadata cache as the Fetch handler sees it: topic IDs and leaders."""

    def __init__(self):
        self.known: dict[str, bytes] = {}

    def topic_id(self, name):
        return self.known.get(name, ZERO_ID)

    def topic_name(self, topic_id):
        return next((name for name, known in self.known.items() if known == topic_id), None)

    def partition(self, _topic, _index):
        return None


def fetch_by_id(handler, topic_id: bytes, offsets: dict[int, int], session_id: int = 0,
                epoch: int = -1, forgotten: tuple[int, ...] = ()):
    """A Fetch v13 (topics by ID, KIP-516) that does not wait."""
    partitions = [dict(partition=p, fetch_offset=o, partition_max_bytes=BIG,
                       current_leader_epoch=-1, log_start_offset=-1, last_fetched_epoch=-1)
                  for p, o in offsets.items()]
    request = request_schema(ApiKey.FETCH, 13).make(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=BIG, isolation_level=0,
        session_id=session_id, session_epoch=epoch, rack_id="",
        topics=[dict(topic_id=topic_id, partitions=partitions)] if partitions else [],
        forgotten_topics_data=[dict(topic_id=topic_id, partitions=list(forgotten))]
        if forgotten else [])
    answer = handler(None, request)
    return answer if isinstance(answer, dict) else answer.result


def test_a_session_reads_a_topic_id_once_the_broker_learns_it(world, tmp_path):
    """The client knew the topic ID before this broker did: the session holds the
    partition as unknown, then, once the cache knows the ID, reads it (as Kafka resolves
    a session's unknown names on each later fetch) without a new session."""
    clock, partitions, _handler = world
    cache = TopicIds()
    handler = FetchHandler(Leaders(partitions), clock, lambda: False,
                           sessions=FetchSessionCache(clock=clock.seconds), cache=cache)
    produce(partitions[0])
    topic_id = bytes(range(1, 17))
    full = fetch_by_id(handler, topic_id, {0: 0}, epoch=0)
    session = full["session_id"]
    assert session != 0 and named(full)[0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert named(fetch_by_id(handler, topic_id, {}, session, epoch=1))[0]["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_ID  # still unknown: still answered so
    cache.known["t"] = topic_id  # the broker learns the ID (UpdateMetadata)
    answer = fetch_by_id(handler, topic_id, {}, session, epoch=2)  # names nothing
    assert answer["session_id"] == session
    assert answer["responses"][0]["topic_id"] == topic_id
    assert named(answer)[0]["error_code"] == ErrorCode.NONE and named(answer)[0]["records"]
    assert list(handler.sessions.sessions[session].partitions) == [("t", 0)]
    # Named by its ID from now on, it is the same partition: forgetting it empties the session.
    fetch_by_id(handler, topic_id, {}, session, epoch=3, forgotten=(0,))
    assert not handler.sessions.sessions[session].partitions


def test_unknown_sessions_and_wrong_epochs_are_refused(world):
    _clock, _partitions, handler = world
    assert fetch(handler, {0: 0}, 12345, epoch=1)["error_code"] == \
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    session = fetch(handler, {0: 0}, epoch=0, max_wait_ms=0)["session_id"]
    answer = fetch(handler, {0: 0}, session, epoch=5)
    assert answer["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert answer["responses"] == []
    assert fetch(handler, {0: 0}, session, epoch=1, max_wait_ms=0)["error_code"] == \
        ErrorCode.NONE
    # Epoch -1 closes it: a full fetch without a session.
    assert fetch(handler, {0: 0}, session, epoch=-1, max_wait_ms=0)["session_id"] == 0
    assert session not in handler.sessions.sessions


def test_a_full_cache_makes_room_only_from_an_idle_session(world):
    clock, _partitions, handler = world
    first = fetch(handler, {0: 0}, epoch=0, max_wait_ms=0)["session_id"]
    second = fetch(handler, {0: 0}, epoch=0, max_wait_ms=0)["session_id"]
    assert first and second and first != second
    assert fetch(handler, {0: 0}, epoch=0, max_wait_ms=0)["session_id"] == 0  # full, all busy
    clock.advance(EVICTION_SECONDS + 1)
    fetch(handler, {0: 0}, second, epoch=1, max_wait_ms=0)  # the second is used again
    third = fetch(handler, {0: 0}, epoch=0, max_wait_ms=0)["session_id"]
    assert third not in (0, first, second)
    assert set(handler.sessions.sessions) == {second, third}  # the idle first went


def test_sessions_are_counted_in_the_metrics(world):
    from simplekafka.broker.metrics import BrokerMetrics

    _clock, _partitions, handler = world
    fetch(handler, {0: 0, 1: 0}, epoch=0, max_wait_ms=0)
    metrics = BrokerMetrics(SimpleNamespace(fetch_handler=handler))
    try:
        samples = {s.name: s.value for metric in metrics._fetch_sessions()
                   for s in metric.samples}
    finally:
        metrics.stop()
    assert samples["kafka_server_fetchsessioncache_numincrementalfetchsessions"] == 1
    assert samples["kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"] == 2
    assert samples["kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"] == 0


class CountingLeaders(Leaders):
    """Counts every partition a fetch looks up: the work an idle fetch does."""

    looked_up = 0

    def leader_partition(self, topic, index):
        self.looked_up += 1
        return super().leader_partition(topic, index)

    def get_partition(self, topic, index):
        self.looked_up += 1
        return super().get_partition(topic, index)


@pytest.fixture
def followed(tmp_path):
    """50 partitions led here (broker 1), followed by broker 2 in sync, in a session."""
    clock = task.Clock()
    partitions = []
    for index in range(50):
        partition = Partition("t", index, 1, Log.open(tmp_path / f"t-{index}", LogConfig()))
        partition.make_leader(0, [1, 2], [1, 2], 0, 1)
        partitions.append(partition)
    leaders = CountingLeaders(partitions)
    handler = FetchHandler(leaders, clock, lambda: False,
                           sessions=FetchSessionCache(clock=clock.seconds))

    def follower_fetch(offsets, session_id=0, epoch=0, max_wait_ms=0):
        request = request_schema(ApiKey.FETCH, 10).make(  # v10: no rack_id, the leader reads
            replica_id=2, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=BIG,
            isolation_level=0, session_id=session_id, session_epoch=epoch,
            forgotten_topics_data=[],
            topics=[dict(topic="t", partitions=[
                dict(partition=p, fetch_offset=o, partition_max_bytes=BIG,
                     current_leader_epoch=0, log_start_offset=0)
                for p, o in offsets.items()])] if offsets else [])
        return handler(None, request)

    produce(partitions[0])
    session = follower_fetch({p.index: 0 for p in partitions})["session_id"]
    assert named(follower_fetch({0: 1}, session, 1))[0]["high_watermark"] == 1
    return SimpleNamespace(clock=clock, partitions=partitions, leaders=leaders,
                           handler=handler, fetch=follower_fetch, session=session)


def test_an_idle_follower_fetch_looks_at_no_partition(followed):
    """At 10,000 partitions an idle follower's fetch, twice per replica.fetch.wait.max.ms,
    looked at every partition of its session (22 ms of CPU at 3,333): now a partition found
    quiet is settled, and left out until it fires (fetch_session.py)."""
    followed.fetch({}, followed.session, 2)  # partition 0 (named at 1 last time) settles too
    followed.leaders.looked_up = 0
    for partition in followed.partitions:
        partition.read = None  # reading would fail: nothing may be read now
    for epoch in range(3, 8):
        answer = followed.fetch({}, followed.session, epoch)
        assert answer["error_code"] == ErrorCode.NONE and named(answer) == {}
    assert followed.leaders.looked_up == 0


def test_a_settled_partition_wakes_a_parked_follower_fetch_and_it_stays_in_sync(followed):
    import time

    from simplekafka.broker.isr import now_ms

    followed.fetch({}, followed.session, 2)
    lag_max_ms = 50.0
    time.sleep(0.06)  # longer than lag_max_ms since any fetch was recorded on a partition
    before_idle_fetch = now_ms()
    parked = followed.fetch({}, followed.session, 3, max_wait_ms=500)
    assert not parked.called
    quiet, busy = followed.partitions[7], followed.partitions[3]
    produce(busy)
    # Answered in the same reactor turn as the append, with the record.
    assert parked.called and followed.clock.seconds() == 0
    assert set(named(parked.result)) == {3} and named(parked.result)[3]["records"]
    # Its last fetch was at the log end: caught up then, so not out of the ISR now.
    assert busy.follower_caught_up_ms[2] >= before_idle_fetch
    assert busy.isr_to_shrink(lag_max_ms) is None
    assert quiet.isr_to_shrink(lag_max_ms) is None  # at the log end: never lagging


def test_a_closed_follower_session_stops_listening(followed):
    assert any(p._append_listeners for p in followed.partitions)
    followed.fetch({}, followed.session, 2)
    answer = followed.fetch({0: 1}, followed.session, -1)  # epoch -1: close, full fetch
    assert answer["session_id"] == 0
    assert not any(p._append_listeners for p in followed.partitions)


def test_a_follower_session_examines_everything_again_after_a_sweep(followed):
    from simplekafka.broker.fetch_session import SWEEP_SECONDS

    followed.fetch({}, followed.session, 2)
    followed.leaders.looked_up = 0
    followed.clock.advance(SWEEP_SECONDS)
    followed.fetch({}, followed.session, 3)
    assert followed.leaders.looked_up == len(followed.partitions)
    followed.leaders.looked_up = 0
    followed.fetch({}, followed.session, 4)
    assert followed.leaders.looked_up == 0


def test_a_follower_s_new_session_replaces_its_old_one_and_its_listeners(followed):
    """A restarted follower opens a new session: the old one, listening on every settled
    partition, goes at once (and an abandoned one after EVICTION_SECONDS)."""
    followed.fetch({}, followed.session, 2)
    assert all(len(p._append_listeners) == 1 for p in followed.partitions)
    fresh = followed.fetch({p.index: 1 if p.index == 0 else 0 for p in followed.partitions})
    assert fresh["session_id"] not in (0, followed.session)
    assert list(followed.handler.sessions.sessions) == [fresh["session_id"]]
    followed.fetch({}, fresh["session_id"], 1)  # settles them for the new session
    assert all(len(p._append_listeners) == 1 for p in followed.partitions)
    followed.clock.advance(EVICTION_SECONDS)  # the follower is gone; a consumer fetches
    fetch(followed.handler, {0: 0}, max_wait_ms=0)
    assert not followed.handler.sessions.sessions
    assert not any(p._append_listeners for p in followed.partitions)
