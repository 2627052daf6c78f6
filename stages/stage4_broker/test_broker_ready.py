"""A broker answers only once it is ready: its first answer lists itself and a live controller.

Start-up scripts, health checks and admin clients send their first request the
moment the port opens. The broker listens before it has registered in
ZooKeeper (the controller's UpdateMetadata comes in on that listener), so it
holds client requests until the controller has told it the cluster, then
answers them (``simplekafka/broker/readiness.py``).
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import decode_response, encode_request

pytestmark = pytest.mark.integration

STARTS = 20
PORT_WAIT_S = 60.0
ANSWER_WAIT_S = 60.0


def connect_when_open(port: int, process) -> socket.socket:
    """The first connection that the new broker accepts (polled every few ms)."""
    deadline = time.monotonic() + PORT_WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "the broker exited while starting"
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1.0)
        except OSError:
            time.sleep(0.005)
    raise AssertionError(f"port {port} did not open within {PORT_WAIT_S}s")


def read_frame(sock: socket.socket) -> bytes:
    def exactly(size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                raise AssertionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    (length,) = struct.unpack(">i", exactly(4))
    return exactly(length)


def first_metadata(port: int, process) -> object:
    """Metadata v1 as the very first request on the very first connection."""
    with connect_when_open(port, process) as sock:
        sock.settimeout(ANSWER_WAIT_S)
        payload = encode_request(ApiKey.METADATA, 1, 7, "first-connection", {"topics": None})
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        correlation_id, answer = decode_response(ApiKey.METADATA, 1, read_frame(sock))
    assert correlation_id == 7
    return answer


@pytest.fixture
def one_broker(tmp_path):
    cluster = LocalCluster(brokers=1, base_dir=tmp_path, metrics=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_first_metadata_lists_the_broker_and_a_controller_every_start(one_broker):
    broker = one_broker.brokers[1]
    for start in range(STARTS):
        one_broker.terminate(1)
        one_broker.restart(1, wait=False)
        answer = first_metadata(broker.port, broker.process)
        assert [b.node_id for b in answer.brokers] == [1], f"start {start}: {answer}"
        assert answer.controller_id == 1, f"start {start}: {answer}"


def test_create_topics_right_after_the_port_opens(one_broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = one_broker.brokers[1]
    one_broker.terminate(1)
    one_broker.restart(1, wait=False)
    connect_when_open(broker.port, broker.process).close()
    admin = AdminClient({"bootstrap.servers": one_broker.bootstrap_servers})
    started = time.monotonic()
    futures = admin.create_topics([NewTopic("right-after-start", 3, 1)],
                                  operation_timeout=30, request_timeout=60)
    futures["right-after-start"].result(timeout=60)
    elapsed = time.monotonic() - started
    print(f"create_topics right after the port opened: {elapsed:.2f}s")
    # Before the gate it stalled 20-60 s; well under a second is typical, loose for load.
    assert elapsed < 10, f"create_topics took {elapsed:.1f}s"
