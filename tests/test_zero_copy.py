"""Zero-copy fetches, in parts: the log's file regions, the socket writer's contract, and
the rule that nothing in SimpleKafka reads another library's private attributes.

The whole path (brokers as processes, kcat, confluent-kafka, a follower, TLS) is in
tests/test_zero_copy_cluster.py.
"""

from __future__ import annotations

import os
import random
import re
import socket
from pathlib import Path

import pytest

from simplekafka.broker.server import KafkaConnection
from simplekafka.broker.socket_writer import BRIDGE_BYTES, SendCounts, SocketWriter
from simplekafka.protocol.batch_header import iter_batch_positions, read_header
from simplekafka.protocol.fields import PiecedOutput
from simplekafka.protocol.framing import frame_pieces
from simplekafka.protocol.messages import (
    decode_response,
    encode_response,
    encode_response_pieces,
)
from simplekafka.storage import FileRegion, Log, LogConfig, TruncatedRegionError
from stages.stage3_storage.batches import make_batch
from stages.stage4_broker.test_broker_latency import over_loopback, received


def test_the_platform_has_sendfile():
    """Zero-copy is on by default where os.sendfile exists; the test command's Linux has it."""
    assert hasattr(os, "sendfile")


def filled_log(tmp_path: Path, segment_bytes: int = 64 * 1024) -> Log:
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=segment_bytes))
    rng = random.Random(7)
    for _ in range(120):
        size = rng.choice([10, 300, 3000, 9000])
        log.append(make_batch([bytes([65 + rng.randrange(26)]) * size
                               for _ in range(rng.randrange(1, 4))]), 0)
    return log


# -- storage: a region is exactly the bytes a read gives --------------------------------------

def test_a_region_holds_the_bytes_a_read_returns_and_where_its_records_end(tmp_path):
    log = filled_log(tmp_path)
    rng = random.Random(1)
    end = log.log_end_offset
    regions = 0
    for _ in range(400):
        offset = rng.randrange(0, end)
        max_bytes = rng.choice([1, 5000, 20000, 70000, 1 << 20])
        max_offset = rng.choice([None, rng.randrange(offset, end + 1)])
        copied = log.read(offset, max_bytes, max_offset)
        answer = log.read(offset, max_bytes, max_offset, region_from=0)
        if type(answer) is not FileRegion:
            assert answer == copied  # spans segments (or nothing): bytes, as before
            continue
        regions += 1
        assert answer.read() == copied and len(answer) == len(copied)
        last = read_header(copied, iter_batch_positions(copied)[-1][0])
        following = log.read(last.next_offset, 1) if last.next_offset < log.log_end_offset \
            else b""
        # Past every record in it, and at or before the log's next record.
        assert last.next_offset <= answer.next_offset
        if following:
            assert answer.next_offset <= read_header(following).base_offset
        answer.close()
    assert regions > 100


def test_a_small_read_stays_bytes_and_a_region_is_fixed_at_read_time(tmp_path):
    log = filled_log(tmp_path, segment_bytes=1 << 20)
    assert type(log.read(0, 100, None, region_from=1 << 30)) is bytes
    end = log.log_end_offset
    region = log.read(0, 1 << 30, None, region_from=0)
    assert type(region) is FileRegion
    before = region.read()
    log.append(make_batch([b"appended later"]), 0)  # the active segment grows
    assert region.read() == before and log.log_end_offset == end + 1
    region.close()


def test_a_region_outlives_its_segment_and_says_when_the_file_was_cut(tmp_path):
    log = filled_log(tmp_path)
    region = log.read(0, 20000, None, region_from=0)
    assert type(region) is FileRegion
    expected = region.read()
    first_file = sorted((tmp_path / "t-0").glob("*.log"))[0]
    log.delete_records_before(log.log_end_offset - 1)  # retention deletes the segment
    assert not first_file.exists()
    assert region.read() == expected  # the region's descriptor keeps the file
    region.close()
    log.close()
    log = filled_log(tmp_path / "again")
    tail = log.read(log.log_end_offset - 1, 1 << 20, None, region_from=0)
    assert type(tail) is FileRegion
    log.truncate_to(read_header(tail.read()).base_offset)  # a follower's log cut back
    with pytest.raises(TruncatedRegionError):
        tail.read()
    tail.close()
    log.close()


# -- the codec: a region is held by reference, never read -------------------------------------

class Held:
    """A stand-in record set: a length, no bytes (the codec must not ask for any)."""

    def __init__(self, data: bytes):
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


def fetch_body(records) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [
            {"partition_index": i, "error_code": 0, "high_watermark": 9,
             "last_stable_offset": 9, "log_start_offset": 0, "aborted_transactions": [],
             "preferred_read_replica": -1, "records": r} for i, r in enumerate(records)]}]}


@pytest.mark.parametrize("version", [4, 11])
def test_a_fetch_answer_with_held_records_encodes_as_pieces_that_join_to_the_bytes(version):
    one, two = make_batch([b"x" * 500]), make_batch([b"y" * 90])
    plain = encode_response(1, version, 5, fetch_body([one, b"", two]))
    pieces = encode_response_pieces(1, version, 5, fetch_body([Held(one), b"", Held(two)]))
    assert isinstance(pieces, list) and [type(p) for p in pieces].count(Held) == 2
    joined = b"".join(p.data if isinstance(p, Held) else p for p in pieces)
    assert joined == plain
    framed = frame_pieces(pieces)
    assert b"".join(p.data if isinstance(p, Held) else p for p in framed) == \
        frame_pieces(plain)[0]
    assert decode_response(1, version, joined)[1].responses[0].partitions[2].records == two


def test_held_records_need_an_output_that_keeps_pieces():
    from simplekafka.protocol.fields import EncodeError, Records

    with pytest.raises(EncodeError):
        Records().write(bytearray(), Held(b"abc"))
    out = PiecedOutput(b"h")
    Records().write(out, Held(b"abc"))
    assert out.pieces()[0] == b"h\x00\x00\x00\x03"


# -- the socket writer: order, sendfile, a full socket ----------------------------------------

@pytest.fixture
def pair():
    """A KafkaConnection on Twisted's TCP transport over loopback; (connection, reactor,
    client, transport)."""
    connection = KafkaConnection(lambda payload, _c: b"re:" + payload, 1 << 20)
    transport, reactor, client = over_loopback(connection)
    yield connection, reactor, client, transport
    client.close()
    transport.socket.close()


def region_of(tmp_path: Path, data: bytes) -> FileRegion:
    path = tmp_path / f"r{random.random()}"
    path.write_bytes(b"pad" + data + b"tail")
    fd = os.open(path, os.O_RDWR)
    return FileRegion(fd, 3, len(data), 0)


def test_a_region_leaves_by_sendfile_between_the_bytes_around_it(pair, tmp_path):
    _connection, reactor, client, transport = pair
    counts = SendCounts()
    writer = SocketWriter(transport, counts)
    data = os.urandom(200_000)
    assert writer.write([b"head", region_of(tmp_path, data), b"end"]) is True
    assert received(client, 4 + len(data) + 3) == b"head" + data + b"end"
    assert counts.sendfile_bytes == len(data) and counts.region_copied_bytes == 0
    assert reactor.writers == [] and writer.idle


def test_a_full_socket_bridges_a_little_through_twisted_and_keeps_order(pair, tmp_path):
    _connection, reactor, client, transport = pair
    transport.getHandle().setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
    counts = SendCounts()
    writer = SocketWriter(transport, counts)
    data = os.urandom(3 << 20)
    assert writer.write([b"head", region_of(tmp_path, data)]) is False
    assert writer.write([b"after"]) is False  # behind the region, never before it
    assert reactor.writers == [transport]  # Twisted holds a bridge piece
    expected = b"head" + data + b"after"
    got = b""
    while len(got) < len(expected):
        got += client.recv(1 << 20)
        if reactor.writers:
            transport.doWrite()  # the reactor's poll: Twisted drains, the writer goes on
    assert got == expected and writer.idle
    assert counts.sendfile_bytes + counts.region_copied_bytes == len(data)
    # Each wait for "writable" costs one bridge; the rest left by sendfile.
    assert counts.sendfile_bytes > 0 and counts.region_copied_bytes <= len(data) // 4
    assert counts.region_copied_bytes % BRIDGE_BYTES == 0


def test_a_region_cut_short_closes_the_connection_rather_than_send_a_torn_frame(pair,
                                                                               tmp_path):
    _connection, reactor, _client, transport = pair
    region = region_of(tmp_path, b"x" * 1000)
    os.ftruncate(region.fd, 500)  # hypothetical: the file shrank under the region
    later = []
    reactor.callLater = lambda *args, **kwargs: later.append(args)  # abortConnection's
    writer = SocketWriter(transport, SendCounts())
    writer.write([b"head", region])
    assert region.fd == -1 and later  # aborted: connectionLost is on its way


# -- no private attributes of another library -------------------------------------------------

PRIVATE_TWISTED = ("_tempDataBuffer", "dataBuffer", "_writeDisconnected", "transport.socket",
                   "transport.offset", "transport.TLS", "_tempDataLen", "producerPaused")


def test_nothing_in_simplekafka_reads_twisteds_private_state():
    root = Path(__file__).resolve().parents[1] / "simplekafka"
    found = []
    pattern = re.compile("|".join(re.escape(name) for name in PRIVATE_TWISTED))
    for path in root.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert found == []


def test_the_check_finds_a_planted_private_read(tmp_path):
    line = "pending = transport._tempDataBuffer"
    pattern = re.compile("|".join(re.escape(name) for name in PRIVATE_TWISTED))
    assert pattern.search(line)
