"""The leader's side of acks=all replication (issue 19's RF 3 latency), counted, not timed.

A broker built on Twisted's fake reactor (the handler harness) serves real
connections (``KafkaConnection`` over a ``StringTransport``, which counts
writes): a producer that pipelines acks=all requests and a follower whose
fetch commits them.
"""

from __future__ import annotations

import struct

import pytest
from twisted.internet.testing import StringTransport

from simplekafka.broker.server import KafkaConnection
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import build_batch
from stages.stage4_broker.test_broker_handlers import BROKER_ID, Harness
from stages.stage4_broker.test_broker_latency import over_loopback, received

FOLLOWER = BROKER_ID + 1


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path)
    yield h
    h.close()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def connect(harness: Harness) -> tuple[KafkaConnection, StringTransport]:
    connection = KafkaConnection(harness.broker.dispatcher, 1 << 20)
    # The broker's shared queues, as its listeners' factory hands them over.
    connection.actions = harness.broker.replica_manager.actions
    connection.answers = harness.broker.replica_manager.answers
    transport = StringTransport()
    connection.makeConnection(transport)
    return connection, transport


def produce_frame(correlation_id: int) -> bytes:
    return frame(encode_request(ApiKey.PRODUCE, 8, correlation_id, "producer", {
        "acks": -1, "timeout_ms": 30_000, "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": build_batch([(None, b"r%d" % correlation_id)])}]}]}))


def follower_fetch_frame(offset: int) -> bytes:
    return frame(encode_request(ApiKey.FETCH, 11, 1000 + offset, "replica", {
        "replica_id": FOLLOWER, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "topics": [{"topic": "t", "partitions": [{
            "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1,
            "partition_max_bytes": 1 << 20}]}]}))


def answers(data: bytes) -> list[tuple[int, int]]:
    """(correlation id, error code) of each Produce answer in ``data``."""
    found, position = [], 0
    while position < len(data):
        (size,) = struct.unpack_from(">i", data, position)
        correlation_id, body = decode_response(ApiKey.PRODUCE, 8,
                                               data[position + 4:position + 4 + size])
        found.append((correlation_id, body.responses[0].partition_responses[0].error_code))
        position += 4 + size
    return found


def test_a_high_watermark_advance_answers_a_producers_pipelined_requests_in_one_write(harness):
    """The follower's fetch commits 20 pipelined acks=all produces: their answers leave in
    one write to the producer (one send, one wake-up of its client), in order, not 20."""
    harness.lead("t", isr=(BROKER_ID, FOLLOWER))
    producer, to_producer = connect(harness)
    follower, _ = connect(harness)
    producer.dataReceived(b"".join(produce_frame(i) for i in range(20)))
    assert producer.writes == 0  # all 20 wait for the follower
    follower.dataReceived(follower_fetch_frame(0))  # it copies them ...
    assert follower.writes == 1 and producer.writes == 0
    follower.dataReceived(follower_fetch_frame(20))  # ... and says so: the HW moves to 20
    assert producer.writes == 1
    assert answers(to_producer.value()) == [(i, 0) for i in range(20)]
    assert harness.clock.seconds() == 0


def test_a_replica_fetchers_request_is_on_the_socket_when_send_returns():
    """A follower's next fetch (and any inter-broker request) leaves at once: it used to
    wait for the rest of the reactor turn that applied the last answer, and cost the
    follower two epoll_ctl calls and a poll per round trip (two round trips per acks=all
    produce). The reactor is never asked to write."""
    from simplekafka.broker.controller.channel import ResponseReader
    from simplekafka.protocol.framing import encode_frame

    reader = ResponseReader()
    transport, reactor, leader = over_loopback(reader)
    try:
        waiter = reader.send(7, b"fetch request")
        assert reactor.writers == []
        assert received(leader, len(encode_frame(b"fetch request"))) == encode_frame(
            b"fetch request")
        reader.dataReceived(encode_frame(struct.pack(">i", 7) + b"answer"))
        assert waiter.called
    finally:
        leader.close()
        transport.socket.close()


def test_a_producer_is_read_until_1000_requests_or_16_mb_await_their_answers(harness):
    """Back pressure per connection. Every acks=all produce is unanswered for a whole
    replication round trip T, so a cap of N requests lets one producer through at N/T
    requests/s: at the old cap of 200, a round trip of 24 ms already held librdkafka's
    8,300 requests/s (linger.ms=0, 10,000 records/s) in the socket. A byte bound keeps
    large requests from holding much memory meanwhile."""
    harness.lead("t", isr=(BROKER_ID, FOLLOWER))
    producer, to_producer = connect(harness)
    follower, _ = connect(harness)
    producer.dataReceived(b"".join(produce_frame(i) for i in range(999)))
    assert to_producer.producerState == "producing"  # 999 waiting: still read
    producer.dataReceived(produce_frame(999))
    assert to_producer.producerState == "paused"
    follower.dataReceived(follower_fetch_frame(0))
    follower.dataReceived(follower_fetch_frame(1000))  # all committed and answered
    assert to_producer.producerState == "producing"
    assert len(answers(to_producer.value())) == 1000

    big, _ = connect(harness)
    frames = [produce_frame(i) for i in range(4)]
    big.MAX_IN_FLIGHT_BYTES = sum(len(f) - 4 for f in frames)  # their payloads
    big.dataReceived(b"".join(frames[:3]))
    assert big.transport.producerState == "producing"
    big.dataReceived(frames[3])  # four frames' bytes wait: enough
    assert big.transport.producerState == "paused"
