"""The replica fetcher on Twisted's test doubles: no sockets, the test plays the leader.

A MemoryReactor records the fetcher's connection attempt; the test connects it
to a StringTransport, reads the requests the fetcher wrote and answers them
with encoded responses. So each step of the follower's protocol can be checked:
truncation by epoch first (OffsetForLeaderEpoch), then fetches from its log end
with ``replica_id`` and ``current_leader_epoch``, appends at the log end, and
HW = min(leader HW, own LEO).
"""

from __future__ import annotations

import struct

from twisted.internet.testing import MemoryReactorClock, StringTransport

from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_fetcher import (
    BACKOFF,
    REQUEST_TIMEOUT,
    FetchSettings,
    ReplicaFetcherManager,
)
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import decode_request, encode_response
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig

FOLLOWER, LEADER = 2, 1
BIG = 1 << 20


def batch(*values: bytes) -> bytes:
    return build_batch([Record(timestamp=1_700_000_000_000, key=None, value=v) for v in values])


class PlayedLeader:
    """The leader's side of one connection, driven by the test."""

    def __init__(self, reactor: MemoryReactorClock) -> None:
        host, port, factory, _timeout, _bind = reactor.tcpClients[-1]
        assert (host, port) == ("127.0.0.1", 9001)
        self.protocol = factory.buildProtocol(None)
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)

    def request(self):
        """The one request the fetcher wrote (header, body)."""
        data = self.transport.value()
        self.transport.clear()
        (length,) = struct.unpack_from(">i", data, 0)
        assert len(data) == 4 + length, "expected exactly one request"
        return decode_request(data[4:])

    def answer(self, header, body: dict) -> None:
        payload = encode_response(header.api_key, header.api_version, header.correlation_id,
                                  body)
        self.protocol.dataReceived(struct.pack(">i", len(payload)) + payload)


def follower_partition(tmp_path, leader_epoch: int) -> Partition:
    log = Log.open(tmp_path / "t-0", LogConfig())
    partition = Partition("t", 0, FOLLOWER, log)
    assert partition.make_follower(LEADER, leader_epoch, [LEADER, FOLLOWER],
                                   [LEADER, FOLLOWER], 0, 1)
    return partition


def fetch_answer(records: bytes, high_watermark: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [{
            "partition_index": 0, "error_code": ErrorCode.NONE,
            "high_watermark": high_watermark, "last_stable_offset": high_watermark,
            "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
            "records": records}]}]}


def test_a_new_follower_truncates_by_epoch_then_fetches_from_its_log_end(tmp_path):
    partition = follower_partition(tmp_path, leader_epoch=2)
    # What this replica wrote as leader at epoch 1, which the new leader never got.
    partition.log.append(batch(b"kept"), 0)
    partition.log.append(batch(b"diverged"), 1)
    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER, max_wait_ms=500),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    manager.follow(partition)
    leader = PlayedLeader(reactor)

    header, asked = leader.request()
    assert header.api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH
    assert asked.replica_id == FOLLOWER
    wanted = asked.topics[0].partitions[0]
    assert (wanted.leader_epoch, wanted.current_leader_epoch) == (1, 2)
    # The leader never had epoch 1: it answers epoch 0, which ended at offset 1 there.
    leader.answer(header, {"throttle_time_ms": 0, "topics": [{"topic": "t", "partitions": [
        {"error_code": 0, "partition": 0, "leader_epoch": 0, "end_offset": 1}]}]})
    assert partition.log_end_offset == 1  # "diverged" is gone; the local HW played no part

    header, fetch = leader.request()
    assert header.api_key == ApiKey.FETCH
    assert (fetch.replica_id, fetch.max_wait_ms) == (FOLLOWER, 500)
    wanted = fetch.topics[0].partitions[0]
    assert (wanted.fetch_offset, wanted.current_leader_epoch) == (1, 2)
    # The leader's batch at offset 1 (epoch 2); its HW is 1: ours becomes min(1, LEO 2).
    leaders_batch = bytearray(batch(b"new"))
    struct.pack_into(">q", leaders_batch, 0, 1)
    struct.pack_into(">i", leaders_batch, 12, 2)
    leader.answer(header, fetch_answer(bytes(leaders_batch), high_watermark=1))
    assert partition.log_end_offset == 2 and partition.high_watermark == 1
    assert partition.log.leader_epochs.latest_epoch == 2

    header, fetch = leader.request()  # the next fetch asks from the new log end
    assert fetch.topics[0].partitions[0].fetch_offset == 2
    leader.answer(header, fetch_answer(b"", high_watermark=2))
    assert partition.high_watermark == 2

    manager.shutdown()
    assert leader.transport.disconnecting


def test_a_fenced_follower_backs_off_and_asks_again(tmp_path):
    partition = follower_partition(tmp_path, leader_epoch=0)
    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    manager.follow(partition)  # an empty log: nothing to truncate, fetch at once
    leader = PlayedLeader(reactor)
    header, _fetch = leader.request()
    answer = fetch_answer(b"", -1)
    answer["responses"][0]["partitions"][0]["error_code"] = ErrorCode.FENCED_LEADER_EPOCH
    leader.answer(header, answer)
    assert leader.transport.value() == b""  # backing off, not hammering the leader
    reactor.advance(1.0)
    header, fetch = leader.request()
    assert header.api_key == ApiKey.FETCH
    assert fetch.topics[0].partitions[0].current_leader_epoch == 0
    manager.shutdown()


def test_the_controller_retries_a_registered_broker_until_it_answers_or_goes():
    from twisted.internet.error import ConnectionRefusedError
    from twisted.python.failure import Failure

    from simplekafka.broker.controller.channel import MAX_ATTEMPTS, ControllerChannel

    reactor = MemoryReactorClock()
    registered = {2: ("127.0.0.1", 9002)}
    channel = ControllerChannel(reactor, 1, lambda payload, context: None, registered.get)
    outcome: list = []
    sent = channel.send(2, ApiKey.UPDATE_METADATA, 5, {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "topic_states": [],
        "live_brokers": []})
    sent.addBoth(outcome.append)
    for _ in range(MAX_ATTEMPTS + 10):  # a paused broker: refused again and again
        factory = reactor.tcpClients.pop()[2]
        factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
        reactor.advance(1.0)
        assert outcome == []  # still registered: still trying
    del registered[2]  # its session ended: now the request is dropped
    reactor.tcpClients.pop()[2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    assert len(outcome) == 1 and isinstance(outcome[0], Failure)


def test_followers_fetch_in_a_session_naming_only_what_moved(tmp_path):
    """KIP-227 on the follower side: a full fetch opens the session; then only partitions
    whose log end moved are named; a lost session starts over with a full fetch."""
    partitions = []
    for index in range(3):
        partition = Partition("t", index, FOLLOWER, Log.open(tmp_path / f"t-{index}",
                                                             LogConfig()))
        assert partition.make_follower(LEADER, 0, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0, 1)
        partitions.append(partition)
    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    for partition in partitions:
        manager.follow(partition)  # empty logs: nothing to truncate
    leader = PlayedLeader(reactor)

    def named(fetch) -> dict[int, int]:
        return {p.partition: p.fetch_offset for t in fetch.topics for p in t.partitions}

    header, fetch = leader.request()  # built when the first partition was followed
    assert (fetch.session_id, fetch.session_epoch) == (0, 0)  # full: open a session
    assert named(fetch) == {0: 0}
    answer = fetch_answer(batch(b"one"), high_watermark=0)  # partition 0 gets a record
    answer["session_id"] = 77
    leader.answer(header, answer)
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch) == (77, 1)
    assert named(fetch) == {0: 1, 1: 0, 2: 0}  # 0 moved, 1 and 2 are new to the session
    nothing_new = {"throttle_time_ms": 0, "error_code": 0, "session_id": 77, "responses": []}
    leader.answer(header, nothing_new)
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch, named(fetch)) == (77, 2, {})
    manager.unfollow(("t", 2))
    leader.answer(header, nothing_new)
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch, named(fetch)) == (77, 3, {})
    assert [(f.topic, f.partitions) for f in fetch.forgotten_topics_data] == [("t", [2])]
    leader.answer(header, {"throttle_time_ms": 0, "error_code":
                           ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0,
                           "responses": []})
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch) == (0, 0)
    assert named(fetch) == {0: 1, 1: 0}
    manager.shutdown()


class CountedPartition(Partition):
    """Counts every look at its log end: the work of building a fetch."""

    looks = 0

    @property
    def log_end_offset(self) -> int:
        CountedPartition.looks += 1
        return self.log.log_end_offset


def test_an_idle_follower_builds_its_fetch_without_looking_at_every_partition(tmp_path):
    """At 10,000 partitions each idle fetch looked at every followed partition's position
    (and for any waiting for truncation) twice per replica.fetch.wait.max.ms; now only at
    those that may have moved, with a look at all every SWEEP_SECONDS."""
    from simplekafka.broker.replica_fetcher import SWEEP_SECONDS

    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    partitions = []
    for index in range(40):
        partition = CountedPartition("t", index, FOLLOWER,
                                     Log.open(tmp_path / f"t-{index}", LogConfig()))
        assert partition.make_follower(LEADER, 0, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0, 1)
        partitions.append(partition)
        manager.follow(partition)
    leader = PlayedLeader(reactor)
    nothing_new = {"throttle_time_ms": 0, "error_code": 0, "session_id": 77, "responses": []}
    header, _fetch = leader.request()  # full, opens the session
    leader.answer(header, nothing_new)
    header, _fetch = leader.request()  # names the partitions added after the first
    CountedPartition.looks = 0
    for epoch in (2, 3, 4):
        leader.answer(header, nothing_new)
        header, fetch = leader.request()
        assert fetch.session_epoch == epoch and not fetch.topics
    assert CountedPartition.looks == 0
    for _ in range(int(SWEEP_SECONDS // 5)):  # a minute of idle fetches, 5 s apart
        reactor.advance(5)
        leader.answer(header, nothing_new)
        header, fetch = leader.request()
        assert not fetch.topics
    assert CountedPartition.looks == len(partitions)  # one sweep
    manager.shutdown()


def test_one_request_timer_per_fetcher_pushed_later_with_each_fetch(tmp_path, caplog):
    """A fetch that gets no answer within max_wait + REQUEST_TIMEOUT drops the connection;
    the fetcher keeps one timer for that and moves it with each request instead of
    scheduling (and cancelling) a timer per fetch."""
    partition = follower_partition(tmp_path, leader_epoch=0)
    reactor = MemoryReactorClock()
    scheduled = []
    real_call_later = reactor.callLater
    reactor.callLater = lambda delay, f, *a, **kw: (  # type: ignore[method-assign]
        scheduled.append(delay) or real_call_later(delay, f, *a, **kw))
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER, max_wait_ms=500),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    manager.follow(partition)  # an empty log: nothing to truncate, it fetches at once
    leader = PlayedLeader(reactor)
    limit = 0.5 + REQUEST_TIMEOUT
    for offset in range(10):
        header, fetch = leader.request()
        assert fetch.topics[0].partitions[0].fetch_offset == offset
        reactor.advance(limit * 0.6)  # answered in time, though ten of them take longer
        records = bytearray(batch(b"r"))
        struct.pack_into(">q", records, 0, offset)
        leader.answer(header, fetch_answer(bytes(records), high_watermark=offset))
    assert scheduled == [limit]  # one timer for ten fetches
    assert not leader.transport.disconnecting
    leader.request()  # the eleventh fetch is never answered
    reactor.advance(limit - 0.01)
    assert not leader.transport.disconnecting
    with caplog.at_level("INFO", logger="simplekafka.broker.replica_fetcher"):
        reactor.advance(0.02)
    assert leader.transport.disconnecting  # dropped; the fetcher backs off and reconnects
    assert f"no answer from leader {LEADER} within {limit:g} s" in caplog.text
    reactor.advance(BACKOFF)
    assert len(reactor.tcpClients) == 2
    manager.shutdown()
    assert not [call for call in reactor.getDelayedCalls() if call.func.__name__ == "_timed_out"]


# -- Kafka 3.9's follower versions: Fetch v17 by topic ID, v12 by name without one ----------

TOPIC_ID = bytes(range(1, 17))


def fetch_answer_by_id(records: bytes, high_watermark: int, **partition: object) -> dict:
    answer = fetch_answer(records, high_watermark)
    answer["responses"][0]["topic_id"] = TOPIC_ID
    answer["responses"][0]["partitions"][0].update(partition)
    return answer


def following(partition: Partition, settings: FetchSettings | None = None
              ) -> tuple[MemoryReactorClock, ReplicaFetcherManager, PlayedLeader]:
    """A fetcher manager following ``partition`` from leader 1, and that leader's side."""
    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, settings or FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    manager.follow(partition)
    return reactor, manager, PlayedLeader(reactor)


def test_a_follower_fetches_by_topic_id_at_v17_with_its_broker_epoch(tmp_path):
    partition = follower_partition(tmp_path, leader_epoch=0)
    partition.log.assign_topic_id(TOPIC_ID)  # LeaderAndIsr v5+ brought it
    _reactor, manager, leader = following(
        partition, FetchSettings(FOLLOWER, broker_epoch=lambda: 4242))

    header, fetch = leader.request()  # nothing written yet: no truncation, a fetch
    assert (header.api_key, header.api_version) == (ApiKey.FETCH, 17)
    assert (fetch.replica_state.replica_id, fetch.replica_state.replica_epoch) == (FOLLOWER,
                                                                                   4242)
    assert fetch.topics[0].topic_id == TOPIC_ID
    wanted = fetch.topics[0].partitions[0]
    assert (wanted.fetch_offset, wanted.last_fetched_epoch) == (0, -1)  # no epoch yet
    leaders_batch = bytearray(batch(b"one"))
    struct.pack_into(">i", leaders_batch, 12, 0)
    leader.answer(header, fetch_answer_by_id(bytes(leaders_batch), high_watermark=1))
    assert partition.log_end_offset == 1 and partition.high_watermark == 1

    header, fetch = leader.request()  # the next names the epoch of what it holds
    wanted = fetch.topics[0].partitions[0]
    assert (wanted.fetch_offset, wanted.last_fetched_epoch) == (1, 0)
    leader.answer(header, fetch_answer_by_id(b"", high_watermark=1))
    manager.shutdown()


def test_a_follower_without_a_topic_id_fetches_by_name_at_v12(tmp_path):
    partition = follower_partition(tmp_path, leader_epoch=0)  # a topic from before IDs
    _reactor, manager, leader = following(partition)
    header, fetch = leader.request()
    assert (header.api_key, header.api_version) == (ApiKey.FETCH, 12)
    assert (fetch.replica_id, fetch.topics[0].topic) == (FOLLOWER, "t")
    manager.shutdown()


def test_a_diverging_epoch_in_the_answer_truncates_the_follower(tmp_path):
    """Truncation on fetch (Fetch v12+): the leader checks the follower's last fetched
    epoch and answers where that epoch ends in its own log; the follower cuts there."""
    partition = follower_partition(tmp_path, leader_epoch=3)
    partition.log.assign_topic_id(TOPIC_ID)
    partition.log.append(batch(b"a", b"b"), 1)  # offsets 0-1 at epoch 1
    partition.log.append(batch(b"c", b"d"), 2)  # offsets 2-3 at epoch 2, never the leader's
    _reactor, manager, leader = following(partition)
    header, _ = leader.request()  # OffsetForLeaderEpoch first, at Kafka 3.9's v4
    assert (header.api_key, header.api_version) == (ApiKey.OFFSET_FOR_LEADER_EPOCH, 4)
    # A leader that does not know yet (an old answer): it keeps our log as it is.
    leader.answer(header, {"throttle_time_ms": 0, "topics": [{"topic": "t", "partitions": [
        {"error_code": 0, "partition": 0, "leader_epoch": 2, "end_offset": 4}]}]})
    assert partition.log_end_offset == 4

    header, fetch = leader.request()
    wanted = fetch.topics[0].partitions[0]
    assert (wanted.fetch_offset, wanted.last_fetched_epoch) == (4, 2)
    # The leader's log has epoch 1 up to offset 2 and no epoch 2: diverged, no records.
    leader.answer(header, fetch_answer_by_id(
        b"", high_watermark=2, diverging_epoch={"epoch": 1, "end_offset": 2}))
    assert partition.log_end_offset == 2
    assert partition.log.leader_epochs.latest_epoch == 1

    header, fetch = leader.request()  # fetching again from the cut
    wanted = fetch.topics[0].partitions[0]
    assert (wanted.fetch_offset, wanted.last_fetched_epoch) == (2, 1)
    manager.shutdown()


def test_a_topic_id_the_leader_did_not_know_yet_opens_a_new_session(tmp_path):
    """The follower learnt the ID (LeaderAndIsr) before the leader's cache did: the leader's
    session holds the partition as unknown and answers UNKNOWN_TOPIC_ID; the follower's
    next fetch is a full one that opens a new session (where the ID is known now)."""
    partition = follower_partition(tmp_path, leader_epoch=0)
    partition.log.assign_topic_id(TOPIC_ID)
    reactor, manager, leader = following(partition)
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch) == (0, 0)  # a full fetch opens a session
    unknown = fetch_answer_by_id(b"", high_watermark=-1,
                                 error_code=ErrorCode.UNKNOWN_TOPIC_ID)
    unknown["session_id"] = 55
    leader.answer(header, unknown)
    reactor.advance(BACKOFF)
    header, fetch = leader.request()
    assert (fetch.session_id, fetch.session_epoch) == (0, 0)  # not 55's next epoch
    assert fetch.topics[0].topic_id == TOPIC_ID
    manager.shutdown()
