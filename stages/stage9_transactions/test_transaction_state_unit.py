"""The transaction coordinator without sockets: its state machine and its decisions.

The coordinator runs on fakes here (a state log that records what is written,
a marker sender that records what is sent, a metadata cache of plain data),
so each rule of Kafka's ``TransactionCoordinator`` is one short test. The same
paths run against real brokers and clients in ``test_interop_transactions.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from simplekafka.broker.group.records import OFFSETS_TOPIC
from simplekafka.broker.transaction.coordinator import (
    InitProducerIdResult,
    TransactionCoordinator,
)
from simplekafka.broker.transaction.records import (
    TRANSACTION_STATE_TOPIC,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from simplekafka.broker.transaction.state import (
    VALID_PREVIOUS_STATES,
    IllegalStateTransition,
    TransactionMetadata,
    TransactionState,
    TxnTransition,
)
from simplekafka.protocol.errors import ErrorCode

S = TransactionState
TXN = "txn-1"

# -- the state machine --------------------------------------------------------------------


def test_transition_table_is_kafkas():
    assert VALID_PREVIOUS_STATES[S.PREPARE_COMMIT] == {S.ONGOING}
    assert VALID_PREVIOUS_STATES[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE}
    assert VALID_PREVIOUS_STATES[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    assert VALID_PREVIOUS_STATES[S.COMPLETE_ABORT] == {S.PREPARE_ABORT}
    assert VALID_PREVIOUS_STATES[S.ONGOING] == {S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT,
                                                S.COMPLETE_ABORT}
    assert S.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"


@pytest.mark.parametrize("start, target", [
    (S.EMPTY, S.PREPARE_COMMIT), (S.EMPTY, S.COMPLETE_COMMIT), (S.ONGOING, S.COMPLETE_ABORT),
    (S.PREPARE_COMMIT, S.PREPARE_ABORT), (S.PREPARE_COMMIT, S.ONGOING),
    (S.COMPLETE_COMMIT, S.PREPARE_COMMIT), (S.PREPARE_ABORT, S.EMPTY)])
def test_illegal_transitions_are_refused(start, target):
    meta = TransactionMetadata(TXN, 7, 0, 60_000, state=start)
    with pytest.raises(IllegalStateTransition):
        meta.prepare(target, 1)
    assert meta.state == start and meta.pending is None


def test_a_transition_is_pending_until_completed():
    meta = TransactionMetadata(TXN, 7, 0, 60_000)
    transition = meta.prepare(S.ONGOING, 5, partitions=frozenset({("t", 0)}), start_ms=5)
    assert meta.state == S.EMPTY and meta.pending == transition
    with pytest.raises(IllegalStateTransition):  # one change at a time
        meta.prepare(S.ONGOING, 6)
    meta.complete(transition)
    assert meta.state == S.ONGOING and meta.partitions == {("t", 0)} and meta.pending is None
    meta.prepare(S.PREPARE_COMMIT, 7)
    meta.abandon()  # the write failed
    assert meta.state == S.ONGOING and meta.pending is None


def test_state_records_round_trip_in_kafkas_layout():
    transition = TxnTransition(42, 3, 60_000, S.PREPARE_COMMIT,
                               frozenset({("a", 0), ("a", 2), ("b", 1)}), 1000, 2000)
    assert decode_key(encode_key("my-id")) == "my-id"
    assert decode_value(encode_value(transition)) == transition
    data = encode_value(transition)
    # int16 version 0, int64 producer id, int16 epoch, int32 timeout, int8 state
    assert data[:17] == bytes.fromhex("0000" "000000000000002a" "0003" "0000ea60" "02")


# -- the coordinator with fakes -------------------------------------------------------------


class FakeStateLog:
    """Stands in for TransactionStateManager: every id in partition 0, which we lead."""

    def __init__(self):
        self.written: list[tuple[str, TxnTransition]] = []
        self.answer = ErrorCode.NONE
        self.hold: defer.Deferred | None = None

    def partition_of(self, transactional_id):
        return 0

    def local_leader(self, index):
        return SimpleNamespace(leader_epoch=4, is_leader=True)

    def store(self, transactional_id, transition):
        self.written.append((transactional_id, transition))
        if self.hold is not None:
            return self.hold.addCallback(lambda _: self.answer)
        return defer.succeed(self.answer)


class FakeMarkers:
    def __init__(self):
        self.sent: list[tuple] = []
        self.waiting: list[defer.Deferred] = []

    def send(self, producer_id, producer_epoch, committed, partitions, coordinator_epoch,
             still_wanted):
        self.sent.append((producer_id, producer_epoch, committed, sorted(partitions),
                          coordinator_epoch))
        done = defer.Deferred()
        self.waiting.append(done)
        return done

    def write_all(self):
        waiting, self.waiting = self.waiting, []
        for done in waiting:
            done.callback(None)


@pytest.fixture
def world():
    clock = task.Clock()
    cache = SimpleNamespace(listeners=[], topics={"out": [0, 1], OFFSETS_TOPIC: [0]},
                            partition=lambda t, p: object() if t in ("out", OFFSETS_TOPIC)
                            else None)
    ids = iter(range(1000, 2000))
    markers = FakeMarkers()
    coordinator = TransactionCoordinator(
        {"transaction.max.timeout.ms": 900_000}, cache, SimpleNamespace(partitions={}),
        clock, lambda: None, lambda: next(ids), markers, lambda group: 0,
        clock=lambda: int(clock.seconds() * 1000))
    coordinator.state_log = FakeStateLog()
    coordinator.ownership.loaded[0] = 4
    return SimpleNamespace(coordinator=coordinator, markers=markers, clock=clock,
                           log=coordinator.state_log)


def result(answer):
    """The value of an answer that is either immediate or an already-fired Deferred."""
    if isinstance(answer, defer.Deferred):
        out = []
        answer.addCallback(out.append)
        assert out, "the answer is still waiting"
        return out[0]
    return answer


def init(world, transactional_id=TXN, timeout_ms=60_000):
    return result(world.coordinator.init_producer_id(transactional_id, timeout_ms))


def test_init_gives_an_id_and_bumps_the_epoch_each_time(world):
    first = init(world)
    assert first == InitProducerIdResult(ErrorCode.NONE, 1000, 0)
    assert init(world) == InitProducerIdResult(ErrorCode.NONE, 1000, 1)
    assert [t.state for _, t in world.log.written] == [S.EMPTY, S.EMPTY]


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_a_timeout_over_the_maximum_is_refused(world, timeout_ms):
    assert init(world, timeout_ms=timeout_ms).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_empty_transactional_id_is_invalid(world):
    assert init(world, "").error_code == ErrorCode.INVALID_REQUEST


def test_not_the_coordinator_and_loading(world):
    world.coordinator.state_log.local_leader = lambda index: None
    world.coordinator.ownership.loaded.clear()
    assert init(world).error_code == ErrorCode.NOT_COORDINATOR


def commit_cycle(world, committed=True):
    pid, epoch = init(world)[1:]
    codes = result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0), ("out", 1)]))
    assert set(codes.values()) == {ErrorCode.NONE}
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, committed)) \
        == ErrorCode.NONE
    return pid, epoch


def test_commit_logs_prepare_then_sends_markers_then_completes(world):
    pid, epoch = commit_cycle(world)
    meta = world.coordinator.transactions[TXN]
    assert meta.state == S.PREPARE_COMMIT
    assert world.markers.sent == [(pid, epoch, True, [("out", 0), ("out", 1)], 4)]
    world.markers.write_all()
    assert meta.state == S.COMPLETE_COMMIT and meta.partitions == set()
    assert [t.state for _, t in world.log.written] == [
        S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    # A retried EndTxn (its answer was lost) is answered the same; the opposite is not.
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, True)) == ErrorCode.NONE
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, False)) \
        == ErrorCode.INVALID_TXN_STATE


def test_requests_while_completing_get_concurrent_transactions(world):
    pid, epoch = commit_cycle(world, committed=False)
    assert result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0)])) == {
        ("out", 0): ErrorCode.CONCURRENT_TRANSACTIONS}
    assert init(world).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, False)) \
        == ErrorCode.CONCURRENT_TRANSACTIONS
    world.markers.write_all()
    assert init(world) == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 1)


def test_a_pending_write_makes_others_wait(world):
    pid, epoch = init(world)[1:]
    world.log.hold = defer.Deferred()
    waiting = world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0)])
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, True)) \
        == ErrorCode.CONCURRENT_TRANSACTIONS
    world.log.hold.callback(None)
    assert result(waiting) == {("out", 0): ErrorCode.NONE}


def test_a_failed_write_keeps_the_old_state(world):
    pid, epoch = init(world)[1:]
    world.log.answer = ErrorCode.NOT_COORDINATOR
    assert result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0)])) == {
        ("out", 0): ErrorCode.NOT_COORDINATOR}
    assert world.coordinator.transactions[TXN].state == S.EMPTY


def test_zombie_with_an_older_epoch_is_fenced(world):
    pid, old = init(world)[1:]
    new = init(world).producer_epoch
    assert new == old + 1
    assert result(world.coordinator.add_partitions(TXN, pid, old, [("out", 0)])) == {
        ("out", 0): ErrorCode.PRODUCER_FENCED}
    assert result(world.coordinator.end_transaction(TXN, pid, old, True)) \
        == ErrorCode.PRODUCER_FENCED
    assert result(world.coordinator.end_transaction(TXN, pid + 1, new, True)) \
        == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_init_during_an_open_transaction_fences_and_aborts_it(world):
    pid, epoch = init(world)[1:]
    result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0)]))
    assert init(world).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    assert world.markers.sent == [(pid, epoch + 1, False, [("out", 0)], 4)]
    assert world.log.written[-1][1].state == S.PREPARE_ABORT
    world.markers.write_all()
    assert init(world) == InitProducerIdResult(ErrorCode.NONE, pid, epoch + 2)


def test_an_expired_transaction_is_aborted_with_a_bumped_epoch(world):
    pid, epoch = init(world, timeout_ms=10_000)[1:]
    result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 1)]))
    world.clock.advance(9)
    world.coordinator.abort_timed_out()
    assert world.markers.sent == []
    world.clock.advance(2)
    world.coordinator.abort_timed_out()
    assert world.markers.sent == [(pid, epoch + 1, False, [("out", 1)], 4)]
    # The producer that let it expire is fenced.
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, True)) \
        == ErrorCode.PRODUCER_FENCED


def test_unknown_partitions_fail_the_request_but_name_the_culprit(world):
    pid, epoch = init(world)[1:]
    assert result(world.coordinator.add_partitions(TXN, pid, epoch, [("out", 0), ("nope", 0)])) \
        == {("out", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_add_offsets_adds_the_groups_offsets_partition(world):
    pid, epoch = init(world)[1:]
    assert result(world.coordinator.add_offsets(TXN, pid, epoch, "g")) == ErrorCode.NONE
    assert world.coordinator.transactions[TXN].partitions == {(OFFSETS_TOPIC, 0)}


def test_end_without_a_transaction_is_invalid(world):
    pid, epoch = init(world)[1:]
    assert result(world.coordinator.end_transaction(TXN, pid, epoch, True)) \
        == ErrorCode.INVALID_TXN_STATE


def test_a_new_coordinator_finishes_what_the_old_one_decided(world):
    """Loading a partition whose log ends at PrepareCommit sends the markers again."""
    coordinator = world.coordinator
    prepared = TxnTransition(77, 2, 60_000, S.PREPARE_COMMIT, frozenset({("out", 0)}), 1, 2)
    coordinator.ownership.loaded.clear()
    coordinator.state_log.read_partition = lambda partition: {"other": prepared}
    coordinator.ownership.run_load(0)
    assert world.markers.sent == [(77, 2, True, [("out", 0)], 4)]
    world.markers.write_all()
    assert coordinator.transactions["other"].state == S.COMPLETE_COMMIT


def test_the_state_topic_is_kafkas():
    assert TRANSACTION_STATE_TOPIC == "__transaction_state"


# -- transactional offset commits in __consumer_offsets, replayed -------------------------


def test_replay_keeps_committed_offsets_drops_aborted_and_holds_open_ones():
    """A broker that becomes the group's coordinator reads __consumer_offsets back:
    offsets of a committed transaction count, an aborted one's never, an open one's wait."""
    from simplekafka.broker.group.metadata_manager import GroupMetadataManager
    from simplekafka.broker.group.records import OffsetKey, encode_offset_key, encode_offset_value
    from simplekafka.broker.group.records import OffsetValue as Value
    from simplekafka.protocol.records import build_batch, build_end_txn_marker

    def offsets(offset):
        return [(encode_offset_key(OffsetKey("g", "in", 0)),
                 encode_offset_value(Value(offset, -1, "", 1)))]

    chunks, position = [], 0

    def add(batch_bytes_of):
        nonlocal position
        data = batch_bytes_of(position)
        chunks.append(data)
        position += 1

    add(lambda at: build_batch(offsets(10), base_offset=at))  # a plain commit
    add(lambda at: build_batch(offsets(20), base_offset=at, producer_id=5, producer_epoch=0,
                               base_sequence=0, is_transactional=True))
    add(lambda at: build_batch(offsets(30), base_offset=at, producer_id=6, producer_epoch=0,
                               base_sequence=0, is_transactional=True))
    add(lambda at: build_end_txn_marker(5, 0, True, 0, base_offset=at))
    add(lambda at: build_end_txn_marker(6, 0, False, 0, base_offset=at))
    add(lambda at: build_batch(offsets(40), base_offset=at, producer_id=7, producer_epoch=0,
                               base_sequence=0, is_transactional=True))
    data = b"".join(chunks)
    log = SimpleNamespace(log_start_offset=0, log_end_offset=position,
                          read=lambda at, size: data if at == 0 else b"")
    contents = GroupMetadataManager.read_partition(SimpleNamespace(log=log))
    assert contents.offsets["g"][("in", 0)].offset == 20  # 10, then the committed 20
    assert contents.pending == {7: {"g": {("in", 0): Value(40, -1, "", 1)}}}


def test_txn_apis_tell_old_clients_invalid_producer_epoch():
    """KIP-588: PRODUCER_FENCED only to versions that know it."""
    from simplekafka.broker.apis.transactions import TransactionApis

    fenced = SimpleNamespace(end_transaction=lambda *a: ErrorCode.PRODUCER_FENCED)
    apis = TransactionApis(fenced, groups=None)
    request = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0,
               "committed": True}
    for version, code in [(1, ErrorCode.INVALID_PRODUCER_EPOCH), (2, ErrorCode.PRODUCER_FENCED)]:
        context = SimpleNamespace(api_version=version, principal=None)
        assert apis.end_txn(context, request)["error_code"] == code


# -- our Producer's transaction states ---------------------------------------------------


def test_producer_transaction_states_refuse_out_of_order_calls():
    from simplekafka.client.errors import ProducerFencedError
    from simplekafka.producer.transactions import (
        TransactionManager,
        TransactionStateError,
    )
    from simplekafka.producer.transactions import (
        TransactionState as ClientState,
    )

    manager = TransactionManager(client=None, transactional_id="t", timeout_ms=1000,
                                 request_timeout_ms=1000)
    with pytest.raises(TransactionStateError, match="Uninitialized"):
        manager.begin()
    manager.state = ClientState.READY
    with pytest.raises(TransactionStateError, match="needs InTransaction"):
        manager.check_can_send()
    manager.begin()
    manager.fail(KafkaTimeoutLike())
    assert manager.state == ClientState.ABORTABLE_ERROR
    with pytest.raises(TransactionStateError):
        manager.check_can_send()  # commit is refused; abort is allowed
    manager.check_can_abort()
    from simplekafka.protocol.errors import error_for

    manager.fail(error_for(ErrorCode.PRODUCER_FENCED, "fenced"))
    with pytest.raises(ProducerFencedError):
        manager.check_can_abort()  # fatal: everything raises it
    with pytest.raises(ValueError):
        TransactionManager(client=None, transactional_id="", timeout_ms=1000,
                           request_timeout_ms=1000)


class KafkaTimeoutLike(Exception):
    """A send that failed for a reason that is not fatal."""


# -- the Spark sink's exactly-once commit, with a fake producer ---------------------------


class FakeTransactionalProducer:
    def __init__(self):
        self.calls: list = []

    def begin_transaction(self):
        self.calls.append("begin")

    def send(self, topic, value=None, key=None, headers=None, partition=None):
        self.calls.append(("send", topic, value))

    def flush(self, timeout=None):
        pass

    def send_offsets_to_transaction(self, offsets, group):
        self.calls.append(("offsets", dict(offsets), group))

    def commit_transaction(self, timeout=None):
        self.calls.append("commit")

    def abort_transaction(self, timeout=None):
        self.calls.append("abort")


@pytest.mark.parametrize("already_committed, expected", [
    (3, ["begin", ("send", "out", b"a"), ("send", "out", b"b"),
         ("offsets", {("out", 0): 4}, "simplekafka-spark-sink-q1"), "commit"]),
    (4, []),  # batch 3 committed before the crash: its replay writes nothing
])
def test_spark_sink_commits_a_batch_once(monkeypatch, already_committed, expected):
    from simplekafka.spark import sink
    from simplekafka.spark.options import parse_sink_options

    producer = FakeTransactionalProducer()
    monkeypatch.setattr(sink, "transactional_producer", lambda options, query: producer)
    monkeypatch.setattr(sink, "committed_batches", lambda p, group, tp: already_committed)
    options = parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "out",
                                  "exactlyOnce": "true"})
    records = [("out", None, b"a", None, ()), ("out", None, b"b", None, ())]
    message = sink.SinkCommitMessage(0, 0, records=records, query_id="q1")
    sink.commit_exactly_once(options, [message, None], 3)
    assert [c if not isinstance(c, tuple) or c[0] != "offsets"
            else ("offsets", {tuple(k): v for k, v in c[1].items()}, c[2])
            for c in producer.calls] == expected


def test_spark_sink_exactly_once_options():
    from simplekafka.spark.options import SparkOptionError, parse_sink_options

    servers = {"kafka.bootstrap.servers": "127.0.0.1:9"}
    assert not parse_sink_options(servers).exactly_once
    named = parse_sink_options({**servers, "kafka.transactional.id": "orders"})
    assert named.exactly_once and named.transactional_id == "orders"
    assert "transactional.id" not in named.client  # not a producer setting
    with pytest.raises(SparkOptionError, match="must not be empty"):
        parse_sink_options({**servers, "kafka.transactional.id": " "})
