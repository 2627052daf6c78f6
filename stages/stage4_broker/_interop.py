"""Helpers for the stage 4 interop, fuzz and crash tests: topics, kcat, raw wire requests.

The raw helpers speak to the broker with the project's own codec over a plain
blocking socket, so a test can send exactly the bytes it means (including bad
ones) and see exactly what comes back.
"""

from __future__ import annotations

import itertools
import shutil
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterable

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import decode_response, encode_request

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
CLIENT_ID = "stage4-tests"
_correlation_ids = itertools.count(1)


def unique_topic(prefix: str) -> str:
    """A topic name no other test uses (tests share a module's broker)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, timeout: float = 30.0) -> None:
    """Create a topic with confluent-kafka's AdminClient; wait until each partition's leader serves.

    "Serves" means Metadata names a leader and that leader answers ListOffsets
    without an error (test_interop_metadata.py checks the two happen together).
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    futures[name].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        metadata = admin.list_topics(name, timeout=5)
        topic = metadata.topics.get(name)
        if (
            topic is not None and topic.error is None and len(topic.partitions) == partitions
            and all(p.leader in metadata.brokers and p.error is None
                    for p in topic.partitions.values())
            and all(list_offsets_error(metadata.brokers[p.leader].port, name, p.id) == 0
                    for p in topic.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"topic {name}: a partition has no serving leader after {timeout} s")


def list_offsets_error(port: int, topic: str, partition: int) -> int:
    """The error code a broker gives to ListOffsets (latest) for one partition."""
    with connect(port) as sock:
        response = request(sock, ApiKey.LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}],
        })
    return response.topics[0].partitions[0].error_code


def kcat(bootstrap: str, *args: str, stdin: bytes | None = None, timeout: float = 60.0) -> bytes:
    """Run kcat against the broker; returns stdout and fails the test with stderr on error."""
    result = subprocess.run(
        [KCAT, "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (
        f"kcat {' '.join(args)} exited {result.returncode}:\n"
        f"{result.stderr.decode(errors='replace')}"
    )
    return result.stdout


# -- raw requests ----------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def read_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from the socket; raises ConnectionError if it closes first."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes:
    (length,) = struct.unpack(">i", read_exactly(sock, 4))
    return read_exactly(sock, length)


def connect(port: int, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def request(sock: socket.socket, api_key: ApiKey, version: int, body: dict):
    """Send one request and return the decoded response body (checks the correlation id)."""
    correlation_id = next(_correlation_ids)
    sock.sendall(frame(encode_request(api_key, version, correlation_id, CLIENT_ID, body)))
    answer_id, answer = decode_response(api_key, version, read_frame(sock))
    assert answer_id == correlation_id, f"correlation id {answer_id}, expected {correlation_id}"
    return answer


def produce_raw(port: int, topic: str, partition: int, records: bytes, acks: int = 1):
    """Produce v8 one records blob; returns the partition response (index, error_code, ...)."""
    with connect(port) as sock:
        response = request(sock, ApiKey.PRODUCE, 8, {
            "transactional_id": None, "acks": acks, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}],
        })
    return response.responses[0].partition_responses[0]


def fetch_raw(port: int, topic: str, partition: int, offset: int = 0,
              max_wait_ms: int = 0, max_bytes: int = 50 * 1024 * 1024):
    """Fetch v11 from one partition; returns the partition response (records are raw bytes)."""
    with connect(port, timeout=max_wait_ms / 1000 + 10) as sock:
        response = request(sock, ApiKey.FETCH, 11, fetch_body(topic, partition, offset,
                                                              max_wait_ms, max_bytes))
    return response.responses[0].partitions[0]


def fetch_body(topic: str, partition: int, offset: int, max_wait_ms: int = 0,
               max_bytes: int = 50 * 1024 * 1024, min_bytes: int = 1) -> dict:
    return {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
        "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
            "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
        "forgotten_topics_data": [], "rack_id": "",
    }


def latest_offset(port: int, topic: str, partition: int) -> int:
    """The partition's log end offset, from ListOffsets v5 (timestamp -1)."""
    with connect(port) as sock:
        response = request(sock, ApiKey.LIST_OFFSETS, 5, {
            "replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}],
        })
    answer = response.topics[0].partitions[0]
    assert answer.error_code == 0, f"ListOffsets error {answer.error_code}"
    return answer.offset


def all_batches(port: int, topic: str, partition: int) -> list:
    """Every record batch in the partition, parsed (fetching until the log end)."""
    from simplekafka.protocol.records import parse_batches

    end = latest_offset(port, topic, partition)
    batches, offset = [], 0
    while offset < end:
        answer = fetch_raw(port, topic, partition, offset)
        assert answer.error_code == 0, f"Fetch error {answer.error_code}"
        new = [b for b in parse_batches(answer.records or b"") if b.header.next_offset > offset]
        assert new, f"fetch at {offset} made no progress (log end {end})"
        batches += new
        offset = new[-1].header.next_offset
    return batches


def records_of(batches: Iterable) -> list:
    """Every record of the batches, in offset order."""
    return [record for batch in batches for record in batch.records]
