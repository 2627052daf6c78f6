"""Where a record's latency could hide in the broker, each path tested on Twisted's clock.

No sockets and no wall time: a ``task.Clock`` that is never advanced proves
that an answer left in the same reactor turn as the event that allowed it
(an append, a high-watermark move), with no timer in between; a
``StringTransport`` that counts writes proves that answers are coalesced; Twisted's
real TCP transport on a 127.0.0.1 socket pair, with a reactor that only records
what it is asked, proves that an answer is sent before its handler returns.
"""

from __future__ import annotations

import socket
import struct
from types import SimpleNamespace

import pytest
from twisted.internet import task, tcp
from twisted.internet.testing import StringTransport

from simplekafka.broker.apis.fetch import HW_NOTICE_SECONDS, FetchHandler
from simplekafka.broker.partition import Partition
from simplekafka.broker.server import KafkaConnection
from simplekafka.protocol.api import ApiKey, request_schema
from simplekafka.protocol.batch_header import iter_batch_positions
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig

LEADER, F1, F2 = 1, 2, 3
BIG = 1 << 20


class Leaders:
    """The FetchSource a handler needs, over real Partitions on real logs."""

    def __init__(self, *partitions: Partition):
        self.partitions = {(p.topic, p.index): p for p in partitions}

    def leader_partition(self, topic: str, index: int) -> Partition:
        return self.partitions[(topic, index)]

    def get_partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def maybe_expand_isr(self, partition: Partition, replica_id: int) -> None:
        pass


def leader(tmp_path, isr: list[int]) -> Partition:
    partition = Partition("t", 0, LEADER, Log.open(tmp_path / "t-0", LogConfig()))
    assert partition.make_leader(0, isr, [LEADER, F1, F2], 0, 1)
    return partition


def fetch_request(offset: int, replica_id: int = -1, max_wait_ms: int = 500):
    wanted = dict(partition=0, fetch_offset=offset, partition_max_bytes=BIG,
                  current_leader_epoch=-1, log_start_offset=-1)
    return request_schema(ApiKey.FETCH, 10).make(  # v10: no rack_id, the leader reads
        replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=1, isolation_level=0,
        max_bytes=BIG, topics=[dict(topic="t", partitions=[wanted])])


def produce(partition: Partition, acks: int = 1):
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"v")])
    return partition.append_as_leader(batch, acks, 1, BIG, 8)


def answer_of(answer) -> dict:
    """The partition's answer of a fetch answered at once (a dict) or after parking."""
    if not isinstance(answer, dict):
        assert answer.called, "still parked"
        answer = answer.result
    return answer["responses"][0]["partitions"][0]


def test_a_parked_fetch_is_answered_in_the_same_reactor_turn_as_the_append(tmp_path):
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER])
    handler = FetchHandler(Leaders(partition), clock, lambda: False)
    parked = handler(None, fetch_request(0))
    assert not parked.called and handler.waiting == 1
    produce(partition)
    # The clock never moved: no timer, no poll interval stood between append and answer.
    assert clock.seconds() == 0 and answer_of(parked)["records"]
    assert handler.waiting == 0 and not clock.getDelayedCalls()  # max_wait timer cancelled


def test_a_consumer_fetch_is_answered_when_the_follower_fetch_commits_the_batch(tmp_path):
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER, F1])
    handler = FetchHandler(Leaders(partition), clock, lambda: False)
    consumer = handler(None, fetch_request(0))
    result = produce(partition, acks=-1)
    acked = partition.wait_for_high_watermark(result.last_offset + 1)
    assert not consumer.called and not acked.called  # not committed yet
    follower = handler(None, fetch_request(0, replica_id=F1))
    assert answer_of(follower)["records"]  # the follower copies it
    handler(None, fetch_request(1, replica_id=F1))  # ... and says so with its next fetch
    assert clock.seconds() == 0
    assert acked.called and acked.result == ErrorCode.NONE  # acks=all answered at once
    assert answer_of(consumer)["high_watermark"] == 1 and answer_of(consumer)["records"]


def test_a_high_watermark_advance_answers_the_consumer_before_the_acks_all_produces(tmp_path):
    """As Kafka's checkAndCompleteAll (fetches, then produces): the consumer's answer does
    not wait while a read's worth of produce answers is built and sent (0.4 ms p50 at
    three brokers, 10,000 records/s, in benchmarks/replication_stages.py)."""
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER, F1])
    handler = FetchHandler(Leaders(partition), clock, lambda: False)
    answered = []
    consumer = handler(None, fetch_request(0))
    consumer.addCallback(lambda body: answered.append("consumer") or body)
    result = produce(partition, acks=-1)
    acked = partition.wait_for_high_watermark(result.last_offset + 1)
    acked.addCallback(lambda code: answered.append("produce") or code)
    handler(None, fetch_request(0, replica_id=F1))
    handler(None, fetch_request(1, replica_id=F1))  # the HW moves to 1
    assert answered == ["consumer", "produce"] and clock.seconds() == 0


def test_a_parked_follower_fetch_learns_the_new_high_watermark_within_10_ms(tmp_path):
    """Without the notice, F1 would learn HW 1 only at max_wait (500 ms) later."""
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER, F1, F2])
    handler = FetchHandler(Leaders(partition), clock, lambda: False)
    produce(partition, acks=-1)
    for follower in (F1, F2):
        assert answer_of(handler(None, fetch_request(0, replica_id=follower)))["records"]
    f1_parked = handler(None, fetch_request(1, replica_id=F1))
    assert not f1_parked.called and partition.high_watermark == 0  # F2 has not said yet
    handler(None, fetch_request(1, replica_id=F2))  # F2 at 1: the HW moves to 1
    assert partition.high_watermark == 1 and not f1_parked.called
    clock.advance(HW_NOTICE_SECONDS)
    assert answer_of(f1_parked)["high_watermark"] == 1
    assert answer_of(f1_parked)["records"] == b""
    # Told now: F1's next fetch parks again until something new happens.
    again = handler(None, fetch_request(1, replica_id=F1))
    assert not again.called
    clock.advance(0.5)
    assert answer_of(again)["high_watermark"] == 1


def test_a_follower_learns_the_high_watermark_with_the_next_records(tmp_path):
    """Under load the next append comes before the notice is due: one answer carries the
    records and the new HW. Answered for the HW alone at once, F1 cost the leader a fetch
    round trip more per advance (a quarter of its fetches at three brokers, acks=all:
    benchmarks/bench_replication_path.py)."""
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER, F1, F2])
    handler = FetchHandler(Leaders(partition), clock, lambda: False)
    produce(partition, acks=-1)
    for follower in (F1, F2):
        handler(None, fetch_request(0, replica_id=follower))
    f1_parked = handler(None, fetch_request(1, replica_id=F1))
    handler(None, fetch_request(1, replica_id=F2))  # the HW moves to 1
    clock.advance(HW_NOTICE_SECONDS / 2)
    assert not f1_parked.called
    produce(partition, acks=-1)  # the next record
    answer = answer_of(f1_parked)
    assert answer["records"] and answer["high_watermark"] == 1
    assert not clock.getDelayedCalls()  # its timer went with it


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_answers_to_pipelined_requests_leave_in_one_transport_write():
    connection = KafkaConnection(lambda payload, _c: b"re:" + payload, 1000)
    transport = StringTransport()
    connection.makeConnection(transport)
    connection.dataReceived(b"".join(frame(b"r%d" % i) for i in range(5)))
    assert connection.writes == 1
    assert transport.value() == b"".join(frame(b"re:r%d" % i) for i in range(5))


def test_answers_released_together_from_the_queue_leave_in_one_write():
    from twisted.internet import defer

    waiting = defer.Deferred()
    answers = iter([waiting, b"second", b"third"])
    connection = KafkaConnection(lambda payload, _c: next(answers), 1000)
    transport = StringTransport()
    connection.makeConnection(transport)
    for name in (b"a", b"b", b"c"):
        connection.dataReceived(frame(name))  # three reads: the first answer is awaited
    assert connection.writes == 0
    waiting.callback(b"first")
    assert connection.writes == 1
    assert transport.value() == frame(b"first") + frame(b"second") + frame(b"third")


def test_a_parked_follower_fetch_copies_every_append_of_one_read(tmp_path):
    """Pipelined produce requests that arrive in one read are appended, and only then is
    the parked follower fetch woken (action_queue): it copies all five in one answer.
    Woken at the first append, it answered with one record, and the other four waited for
    the follower's next fetch: a replication round trip more, and twice the fetches."""
    clock = task.Clock()
    partition = leader(tmp_path, isr=[LEADER, F1, F2])
    fetches = FetchHandler(Leaders(partition), clock, lambda: False)
    parked = fetches(None, fetch_request(0, replica_id=F1))
    assert not parked.called

    def produce_request(_payload, _connection):
        produce(partition, acks=-1)
        return b"appended"

    connection = KafkaConnection(produce_request, 1000)
    connection.actions = partition.actions  # one ActionQueue, as the broker shares its own
    connection.makeConnection(StringTransport())
    connection.dataReceived(b"".join(frame(b"produce %d" % i) for i in range(5)))
    assert clock.seconds() == 0 and parked.called  # in the read's own turn, no timer
    assert len(iter_batch_positions(answer_of(parked)["records"])) == 5
    assert connection.writes == 1  # the read's answers still leave together


def test_a_produce_to_several_partitions_wakes_a_parked_fetch_once_all_are_appended(tmp_path):
    """As Kafka's appendRecords (its ActionQueue): a follower fetching both partitions is
    answered with both appends, not with the first partition's alone."""
    from simplekafka.broker.replica_manager import ReplicaManager

    clock = task.Clock()
    first = leader(tmp_path, isr=[LEADER, F1])
    second = Partition("t", 1, LEADER, Log.open(tmp_path / "t-1", LogConfig()))
    assert second.make_leader(0, [LEADER, F1], [LEADER, F1, F2], 0, 1)
    manager = ReplicaManager(LEADER, log_manager=SimpleNamespace(read_high_watermarks=dict),
                             metadata_cache=None, reactor=clock)
    manager.partitions = {("t", 0): first, ("t", 1): second}
    first.actions = second.actions = manager.actions  # as the manager hands its queue over
    fetches = FetchHandler(Leaders(first, second), clock, lambda: False)
    request = fetch_request(0, replica_id=F1)
    request.topics[0]["partitions"].append(dict(
        partition=1, fetch_offset=0, partition_max_bytes=BIG, current_leader_epoch=-1,
        log_start_offset=-1))
    parked = fetches(None, request)
    assert not parked.called
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"v")])
    manager.append_records({("t", 0): batch, ("t", 1): batch}, acks=1, timeout_ms=1000)
    answers = parked.result["responses"][0]["partitions"]
    assert [bool(a["records"]) for a in answers] == [True, True]


def test_a_failing_listener_does_not_keep_other_partitions_asleep(tmp_path, caplog):
    """The wake-ups a bulk append gathered run one partition at a time: one listener that
    raises is logged, and the next partition's parked fetch is still answered."""
    from simplekafka.broker.action_queue import ActionQueue

    clock = task.Clock()
    first = leader(tmp_path, isr=[LEADER])
    second = Partition("t", 1, LEADER, Log.open(tmp_path / "t-1", LogConfig()))
    assert second.make_leader(0, [LEADER], [LEADER], 0, 1)
    actions = first.actions = second.actions = ActionQueue()  # as a ReplicaManager shares one

    def broken(_partition):
        raise RuntimeError("a listener bug")

    first.add_append_listener(broken)
    woken = []
    second.add_append_listener(woken.append)
    with actions.wakeups_after():
        produce(first)
        produce(second)
        assert woken == []  # not before the block closes
    assert woken == [second] and "a listener bug" in caplog.text
    assert clock.seconds() == 0


def test_every_broker_socket_turns_nagle_off():
    """Client connections and the broker's own (controller channel, replica fetchers)."""
    from simplekafka.broker.controller.channel import ResponseReader

    for protocol_ in (KafkaConnection(lambda *_: None, 1000), ResponseReader()):
        transport = StringTransport()
        calls = []
        transport.setTcpNoDelay = calls.append  # type: ignore[attr-defined]
        protocol_.makeConnection(transport)
        assert calls == [True], type(protocol_).__name__


def test_creating_replicas_waits_for_no_disk_until_their_first_flush(tmp_path, monkeypatch):
    """LeaderAndIsr for thousands of partitions: two or three fsyncs per replica (its
    directory, its leader epoch file) made each take ~30 ms on a busy disk. They are made
    durable by the log's first flush instead (as Kafka 3.7 does for the epoch file)."""
    import os

    from simplekafka.broker.metadata_cache import MetadataCache
    from simplekafka.broker.replica_manager import ReplicaManager
    from simplekafka.storage import LogManager

    manager = ReplicaManager(LEADER, LogManager([tmp_path]), MetadataCache())
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    states = [dict(topic_name="t", partition_index=i, leader=LEADER, leader_epoch=0,
                              isr=[LEADER], replicas=[LEADER], zk_version=0, controller_epoch=1)
              for i in range(20)]
    outcome = manager.become_leader_or_follower(dict(
        controller_epoch=1, controller_id=1, topic_states=[], ungrouped_partition_states=states))
    assert set(outcome.partitions.values()) == {ErrorCode.NONE}
    assert synced == []
    log = manager.partitions[("t", 0)].log
    assert log.leader_epochs.entries  # written (a crash of the process keeps it) ...
    log.flush()  # ... and durable from the first flush: the segment, epochs, directories
    assert len(synced) >= 4
    synced.clear()
    log.flush()
    assert len(synced) == 1  # later flushes sync the segment alone


def test_garbage_collections_are_timed_by_generation():
    """GC pauses stop the reactor: each one is in python_gc_pause_seconds (issue 19)."""
    import gc
    from types import SimpleNamespace

    from simplekafka.broker.metrics import BrokerMetrics

    metrics = BrokerMetrics(SimpleNamespace())
    try:
        gc.collect(0)
        gc.collect(2)
        samples = {(s.name, s.labels.get("generation"), s.labels.get("le")): s.value
                   for metric in metrics._gc_pauses() for s in metric.samples}
        assert samples[("python_gc_pause_seconds_count", "0", None)] >= 1
        assert samples[("python_gc_pause_seconds_count", "2", None)] >= 1
        assert samples[("python_gc_pause_seconds_bucket", "2", "+Inf")] >= 1
        assert samples[("python_gc_pause_seconds_sum", "2", None)] > 0
        assert samples[("python_gc_pause_max_seconds", None, None)] > 0
    finally:
        metrics.stop()
    assert metrics.gc_pauses._callback not in gc.callbacks


def test_a_rolled_segment_is_synced_off_the_append_path(tmp_path, monkeypatch):
    """A roll used to fsync the full segment (up to segment.bytes, 1 GB) inside the produce
    that rolled it, stopping every request behind it; Kafka flushes it on its scheduler."""
    import os

    from simplekafka.storage import LogManager

    manager = LogManager([tmp_path], LogConfig(segment_bytes=2000))
    queued: list = []
    manager.use_background(queued.append)  # the broker passes reactor.callInThread
    log = manager.get_or_create("t", 0)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"x" * 300)])
    for _ in range(10):
        log.append(batch, 0)
    assert len(log.segments) > 1 and queued
    assert synced == []  # no fsync in the appends, rolls included
    assert log.recovery_point == 0  # not durable yet: recovery would re-check them
    for job in queued:
        job()  # what the worker thread runs
    assert len(synced) >= 3 * len(queued)  # each rolled segment's log and indexes, the dir
    assert log.recovery_point == log.segments[-1].base_offset
    manager.close()


class RecordingReactor:
    """The reactor a real Twisted TCP transport talks to, recording what it asks for.

    ``writers`` are the transports that asked to be told when their socket is
    writable: each is a write left for the reactor's next poll.
    """

    def __init__(self) -> None:
        self.readers: list = []
        self.writers: list = []

    def addReader(self, reader) -> None:
        if reader not in self.readers:  # a set, as in a real reactor, but ordered
            self.readers.append(reader)

    def removeReader(self, reader) -> None:
        if reader in self.readers:
            self.readers.remove(reader)

    def addWriter(self, writer) -> None:
        if writer not in self.writers:
            self.writers.append(writer)

    def removeWriter(self, writer) -> None:
        if writer in self.writers:
            self.writers.remove(writer)


def over_loopback(protocol) -> tuple[tcp.Server, RecordingReactor, socket.socket]:
    """``protocol`` on Twisted's real TCP transport over a 127.0.0.1 socket pair, with a
    recording reactor (no reactor runs); returns (transport, reactor, the other end)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    peer = socket.create_connection(listener.getsockname())
    accepted, address = listener.accept()
    listener.close()
    reactor = RecordingReactor()
    transport = tcp.Server(accepted, protocol, address, None, 1, reactor)
    protocol.makeConnection(transport)
    peer.settimeout(10)
    return transport, reactor, peer


@pytest.fixture
def served():
    """A KafkaConnection over a loopback pair; yields (connection, reactor, client)."""
    connection = KafkaConnection(lambda payload, _c: b"re:" + payload, 1 << 20)
    transport, reactor, client = over_loopback(connection)
    yield connection, reactor, client
    client.close()
    transport.socket.close()


def received(client: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += client.recv(size - len(data))
    return data


def test_an_answer_is_on_the_socket_before_the_request_handler_returns(served):
    """No reactor turn between the answer and its send: the reactor is never asked."""
    connection, reactor, client = served
    connection.dataReceived(frame(b"r1"))
    assert reactor.writers == []  # not left for the next poll (nor 2 epoll_ctl calls)
    assert received(client, len(frame(b"re:r1"))) == frame(b"re:r1")
    connection.dataReceived(frame(b"r2") + frame(b"r3"))  # pipelined: still one send
    assert reactor.writers == [] and connection.writes == 2
    assert connection.sends.direct == 2 and connection.sends.buffered == 0
    assert received(client, 2 * len(frame(b"re:r2"))) == frame(b"re:r2") + frame(b"re:r3")


def test_an_answer_queues_behind_what_twisted_still_holds(served):
    """Order is kept: with bytes in Twisted's buffer, the answer goes behind them."""
    from simplekafka.broker.socket_writer import SocketWriter

    connection, reactor, client = served
    # As if an earlier send had not gone through: the writer left it to Twisted.
    connection._writer = SocketWriter(connection.transport, connection.sends)
    connection._writer._hand_over(b"held")
    connection.dataReceived(frame(b"r1"))
    assert reactor.writers == [connection.transport]  # the reactor sends, in order
    assert connection.sends.buffered == 1 and connection.sends.direct == 0
    connection.transport.doWrite()  # the reactor's next poll found the socket writable
    assert received(client, 4 + len(frame(b"re:r1"))) == b"held" + frame(b"re:r1")


def test_what_a_full_socket_does_not_take_is_left_to_twisted_in_order(served):
    connection, reactor, client = served
    connection.transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    big = b"x" * (512 << 10)  # more than the socket buffers hold
    connection.dataReceived(frame(big[:100]))  # fits: sent at once
    connection.handler = lambda payload, _c: big
    connection.dataReceived(frame(b"big"))
    assert connection.sends.direct == 1 and connection.sends.buffered == 1
    assert reactor.writers == [connection.transport]
    expected = frame(b"re:" + big[:100]) + frame(big)
    data = b""
    while len(data) < len(expected):  # the client reads; the "reactor" sends the rest
        data += client.recv(1 << 20)
        if reactor.writers:
            connection.transport.doWrite()
    assert data == expected and reactor.writers == []


def test_a_tls_transport_keeps_twisted_buffered_path():
    """Bytes on a TLS connection must be encrypted: never sent raw to the socket."""
    from simplekafka.broker.socket_writer import SocketWriter, is_plain_tcp

    transport = StringTransport()
    writer = SocketWriter(transport)
    assert not writer.direct and writer.write([b"answer"]) is False  # Twisted's path
    assert transport.value() == b"answer"
    from twisted.internet.interfaces import ISSLTransport, ITCPTransport
    from zope.interface import directlyProvides
    tls = SimpleNamespace()
    directlyProvides(tls, ITCPTransport, ISSLTransport)
    assert not is_plain_tcp(tls)
# -- the acks=all wait (delayed_produce.py) --------------------------------------------------


def _lines_run_in(directory: str, action) -> int:
    """How many lines of the modules under ``directory`` ``action()`` executes: a count of
    work that does not depend on the machine's speed or load."""
    import sys

    count = 0

    def tracer(frame, event, _arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(directory):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        action()
    finally:
        sys.settrace(None)
    return count


def test_an_acks_all_wait_costs_the_same_however_many_are_waiting(tmp_path):
    """Registering an acks=all waiter, and a HW advance that completes one, used to walk
    every waiter (a list rebuilt per produce): a leader that fell behind got slower the
    further it fell. Now both cost the same with 10 or 3,000 waiting (lines executed)."""
    import functools
    from pathlib import Path

    import simplekafka.broker

    broker_code = str(Path(simplekafka.broker.__file__).parent)
    costs = []
    for waiting in (10, 3000):
        partition = leader(tmp_path / str(waiting), isr=[LEADER, F1])
        partition.record_follower_fetch(F1, 0)
        for _ in range(waiting):
            produce(partition, acks=-1)
            partition.wait_for_high_watermark(partition.log_end_offset, 2)
        offset = partition.log_end_offset + 1
        produce(partition, acks=-1)
        register = _lines_run_in(broker_code, functools.partial(
            partition.wait_for_high_watermark, offset, 2))
        # F1 reaches offset 1: the HW moves to 1, completing exactly one waiter.
        advance = _lines_run_in(broker_code, functools.partial(
            partition.record_follower_fetch, F1, 1))
        assert partition.high_watermark == 1
        costs.append((register, advance))
    assert costs[0] == costs[1]


def test_acks_all_waiters_share_one_timer_per_partition(tmp_path):
    """One reactor timer per partition for the request timeouts, not one per produce (a
    heap insertion and a cancel each); every waiter still times out at its own deadline,
    an earlier deadline behind a later one included."""
    clock = task.Clock()
    partition = Partition("t", 0, LEADER, Log.open(tmp_path / "t-0", LogConfig()), clock=clock)
    assert partition.make_leader(0, [LEADER, F1], [LEADER, F1, F2], 0, 1)
    waits = []
    for _ in range(100):
        produce(partition, acks=-1)
        waits.append(partition.wait_for_high_watermark(partition.log_end_offset, 1, 30.0))
    assert len(clock.getDelayedCalls()) == 1
    produce(partition, acks=-1)
    hurried = partition.wait_for_high_watermark(partition.log_end_offset, 1, 5.0)
    assert len(clock.getDelayedCalls()) == 1  # moved earlier, not added
    partition.record_follower_fetch(F1, 50)  # the first 50 are committed
    assert all(w.result == ErrorCode.NONE for w in waits[:50])
    clock.advance(5.0)
    assert hurried.result == ErrorCode.REQUEST_TIMED_OUT
    assert not any(w.called for w in waits[50:])
    assert len(clock.getDelayedCalls()) == 1  # now for the next deadline
    clock.advance(25.0)
    assert all(w.result == ErrorCode.REQUEST_TIMED_OUT for w in waits[50:])
    assert not clock.getDelayedCalls() and not partition._hw_waiters
