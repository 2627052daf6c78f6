"""The broker's connection protocol, tested without sockets (Twisted's StringTransport).

Framing must not care how TCP splits the bytes; oversized or negative lengths
are refused before any body byte is kept; and responses leave in request order
even when a later request is answered first (Kafka's per-connection ordering).
"""

from __future__ import annotations

import struct

import pytest
from twisted.internet import defer
from twisted.internet.testing import StringTransport

from simplekafka.broker.server import CloseConnection, KafkaConnection


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def split_frames(data: bytes) -> list[bytes]:
    frames = []
    while data:
        (length,) = struct.unpack_from(">i", data)
        frames.append(data[4:4 + length])
        data = data[4 + length:]
    return frames


def connect(handler, max_length: int = 1000) -> tuple[KafkaConnection, StringTransport]:
    connection = KafkaConnection(handler, max_length)
    transport = StringTransport()
    connection.makeConnection(transport)
    return connection, transport


def echo(payload: bytes, _connection) -> bytes:
    return b"re:" + payload


def test_frames_split_at_every_byte_boundary_decode_the_same():
    stream = frame(b"first") + frame(b"") + frame(b"third request")
    for cut in range(len(stream) + 1):
        connection, transport = connect(echo)
        connection.dataReceived(stream[:cut])
        connection.dataReceived(stream[cut:])
        assert split_frames(transport.value()) == [b"re:first", b"re:", b"re:third request"]


def test_byte_by_byte_delivery():
    connection, transport = connect(echo)
    for byte in frame(b"hello") * 3:
        connection.dataReceived(bytes([byte]))
    assert split_frames(transport.value()) == [b"re:hello"] * 3


def test_oversized_frame_is_refused_without_buffering_its_body():
    seen = []
    connection, transport = connect(lambda p, c: seen.append(p) or b"ok", max_length=100)
    connection.dataReceived(struct.pack(">i", 101) + b"x" * 50)
    assert transport.disconnecting
    connection.dataReceived(b"x" * 10_000)  # the rest of the huge body keeps arriving
    assert connection._pending_size == 0 and connection._pending == []
    assert seen == []


def test_negative_length_closes_the_connection():
    connection, transport = connect(echo)
    connection.dataReceived(struct.pack(">i", -5) + b"abc")
    assert transport.disconnecting
    assert transport.value() == b""


def test_frame_at_exactly_max_length_is_accepted():
    connection, transport = connect(echo, max_length=10)
    connection.dataReceived(frame(b"0123456789"))
    assert split_frames(transport.value()) == [b"re:0123456789"]
    assert not transport.disconnecting


def test_responses_leave_in_request_order_even_when_answered_out_of_order():
    pending: dict[bytes, defer.Deferred] = {}

    def handler(payload: bytes, _connection):
        if payload.startswith(b"slow"):
            pending[payload] = defer.Deferred()
            return pending[payload]
        return b"re:" + payload

    connection, transport = connect(handler)
    connection.dataReceived(frame(b"slow-1") + frame(b"fast-2") + frame(b"slow-3"))
    assert transport.value() == b""  # fast-2 waits behind slow-1
    pending[b"slow-3"].callback(b"re:slow-3")
    assert transport.value() == b""
    pending[b"slow-1"].callback(b"re:slow-1")
    assert split_frames(transport.value()) == [b"re:slow-1", b"re:fast-2", b"re:slow-3"]


def test_no_response_requests_keep_their_place():
    connection, transport = connect(lambda p, c: None if p == b"acks0" else b"re:" + p)
    connection.dataReceived(frame(b"a") + frame(b"acks0") + frame(b"b"))
    assert split_frames(transport.value()) == [b"re:a", b"re:b"]


def test_close_request_writes_earlier_responses_first():
    slow = defer.Deferred()

    def handler(payload: bytes, _connection):
        if payload == b"slow":
            return slow
        if payload == b"bad":
            raise CloseConnection()
        return b"re:" + payload

    connection, transport = connect(handler)
    connection.dataReceived(frame(b"slow") + frame(b"bad") + frame(b"after"))
    assert not transport.disconnecting
    slow.callback(b"re:slow")
    assert split_frames(transport.value()) == [b"re:slow"]
    assert transport.disconnecting


@pytest.mark.parametrize("failure", [ValueError("boom"), KeyError("k")])
def test_handler_bug_closes_only_that_connection(failure):
    def handler(payload: bytes, _connection):
        raise failure

    connection, transport = connect(handler)
    connection.dataReceived(frame(b"x"))
    assert transport.disconnecting
    other, other_transport = connect(echo)
    other.dataReceived(frame(b"y"))
    assert split_frames(other_transport.value()) == [b"re:y"]


def test_failed_deferred_closes_the_connection():
    failing = defer.Deferred()
    connection, transport = connect(lambda p, c: failing)
    connection.dataReceived(frame(b"x"))
    failing.errback(RuntimeError("lost"))
    assert transport.disconnecting


def test_oversized_length_split_across_reads_is_refused_as_soon_as_it_is_known():
    connection, transport = connect(echo, max_length=100)
    connection.dataReceived(frame(b"ok"))
    prefix = struct.pack(">i", 1_000_000)
    connection.dataReceived(prefix[:2])
    assert not transport.disconnecting
    connection.dataReceived(prefix[2:] + b"x" * 10)
    assert transport.disconnecting
    assert connection._pending_size == 0
    assert split_frames(transport.value()) == [b"re:ok"]


def test_a_big_frame_in_many_small_reads():
    body = bytes(range(256)) * 400
    connection, transport = connect(echo, max_length=len(body))
    data = frame(body)
    for start in range(0, len(data), 1000):
        connection.dataReceived(data[start:start + 1000])
    assert split_frames(transport.value()) == [b"re:" + body]


def test_an_answer_after_the_client_left_is_dropped_quietly():
    late = defer.Deferred()
    connection, transport = connect(lambda p, c: late)
    connection.dataReceived(frame(b"long poll"))
    connection.connectionLost(None)
    late.callback(b"too late")
    assert transport.value() == b""
