"""Zero-copy fetches on a real three-broker cluster: the bytes that leave by sendfile are
the bytes of the log, to kcat, confluent-kafka and followers, with zero-copy on and off,
and on a TLS listener (which always copies) as well.

One cluster for the module (PLAINTEXT and SSL listeners), restarted with the setting
changed between the phases; the tests run in order and share what they read.
"""

from __future__ import annotations

import socket
import ssl
import time
import uuid

import pytest

from simplekafka.broker.security.certs import make_certificates
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import iter_batch_positions, read_header
from stages.stage4_broker._interop import connect, fetch_body, kcat, request
from tests.test_broker_metrics import scrape, value

# The test command runs on Linux, where os.sendfile exists: no skip, a missing one fails.
pytestmark = pytest.mark.integration

ZERO_COPY = "kafka_network_fetch_record_bytes_total"
# Values of three sizes, so reads are small (copied), big (regions) and one batch apiece.
VALUES = ([f"small-{i:04d}-".encode() * 8 for i in range(400)]
          + [f"medium-{i:03d}-".encode() * 1000 for i in range(40)]
          + [f"large-{i:02d}-".encode() * 20000 for i in range(6)])


class Phase:
    """What the module's tests share: the cluster, its certificates, what was read."""

    def __init__(self, cluster: LocalCluster, certs):
        self.cluster, self.certs = cluster, certs
        self.topic = f"zc-{uuid.uuid4().hex[:8]}"
        self.read: dict[str, object] = {}


@pytest.fixture(scope="module")
def phase(tmp_path_factory):
    base = tmp_path_factory.mktemp("zero-copy")
    certs = make_certificates(base / "certs", clients=["client"])
    config = secure_broker_config(certs, {}, ("SSL",))
    config.update({"group.initial.rebalance.delay.ms": "0", "fetch.zero.copy.enable": "true",
                   "replica.fetch.max.bytes": str(4 << 20)})
    with LocalCluster(3, base_dir=base / "cluster", listeners=["SSL"],
                      broker_config=config) as cluster:
        yield Phase(cluster, certs)


def produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})])[
        topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "compression.type": "none", "message.max.bytes": 2 << 20})
    for number, data in enumerate(VALUES):
        while True:
            try:
                producer.produce(topic, data, key=str(number).encode())
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def segment_bytes(cluster: LocalCluster, broker_id: int, topic: str) -> bytes:
    directory = cluster.partition_dir(broker_id, topic, 0)
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def replicas_agree(cluster: LocalCluster, topic: str) -> bytes:
    """Every replica's segment files byte for byte the same (waits for the followers)."""
    found: list[bytes] = []

    def same() -> bool:
        found[:] = [segment_bytes(cluster, b, topic) for b in (1, 2, 3)]
        return found[0] != b"" and found[0] == found[1] == found[2]

    cluster.wait_for(same, f"three identical replicas of {topic}", timeout=90)
    return found[0]


def fetch_all(sock: socket.socket, topic: str, end_bytes: int) -> bytes:
    """Raw record bytes of the whole partition, fetch after fetch (1 MB a partition)."""
    out = b""
    offset = 0
    while len(out) < end_bytes:
        answer = request(sock, ApiKey.FETCH, 11, fetch_body(topic, 0, offset,
                                                            max_bytes=1 << 20)
                         ).responses[0].partitions[0]
        assert answer.error_code == 0 and answer.records
        records = bytes(answer.records)
        out += records
        offset = read_header(records, iter_batch_positions(records)[-1][0]).next_offset
    return out


def tls_socket(phase: Phase, port: int) -> socket.socket:
    context = ssl.create_default_context(cafile=str(phase.certs.ca))
    context.check_hostname = False
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30))


def leader_port(phase: Phase, listener: str = "PLAINTEXT") -> int:
    leader = phase.cluster.leader_of(phase.topic, 0)
    broker = phase.cluster.brokers[leader]
    return broker.port if listener == "PLAINTEXT" else broker.listener_ports[listener]


def consumed(phase: Phase, listener: str) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": phase.cluster.bootstrap(listener),
                         "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.max.bytes": 4 << 20,
                         **client_config(listener, phase.certs)})
    consumer.subscribe([phase.topic])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(got) < len(VALUES) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got.append((message.offset(), message.value()))
    consumer.close()
    return got


def metric(phase: Phase, path: str) -> float:
    return sum(value(scrape(url), ZERO_COPY, path=path)
               for url in phase.cluster.metrics_urls.values())


def kcat_values(phase: Phase) -> bytes:
    return kcat(phase.cluster.bootstrap(), "-C", "-t", phase.topic, "-o", "beginning", "-e",
                "-c", str(len(VALUES)), "-f", "%o %k %S %s\n", "-X", "fetch.max.bytes=4194304")


def read_everything(phase: Phase) -> dict[str, object]:
    log_bytes = replicas_agree(phase.cluster, phase.topic)
    with connect(leader_port(phase)) as sock:
        plain = fetch_all(sock, phase.topic, len(log_bytes))
    with tls_socket(phase, leader_port(phase, "SSL")) as sock:
        over_tls = fetch_all(sock, phase.topic, len(log_bytes))
    return {"log": log_bytes, "plain": plain, "tls": over_tls, "kcat": kcat_values(phase),
            "confluent": consumed(phase, "PLAINTEXT"), "confluent_tls": consumed(phase, "SSL")}


def test_with_zero_copy_followers_and_consumers_get_the_log_bytes_by_sendfile(phase):
    produce(phase.cluster.bootstrap(), phase.topic)
    before = metric(phase, "zero_copy")
    read = phase.read["on"] = read_everything(phase)
    assert read["plain"] == read["log"] == read["tls"]  # byte for byte, both listeners
    assert read["confluent"] == read["confluent_tls"] == list(enumerate(VALUES))
    assert read["kcat"].count(b"\n") == len(VALUES)
    # The followers' and consumers' big reads left by sendfile; TLS read them into Python.
    # (The followers' reads as records arrived were mostly small: copied, as bytes.)
    assert metric(phase, "zero_copy") - before >= len(read["log"])
    assert metric(phase, "copied") >= len(read["log"])


def test_without_zero_copy_every_client_reads_the_same_bytes(phase):
    cluster = phase.cluster
    cluster.broker_config["fetch.zero.copy.enable"] = "false"
    for broker_id in (1, 2, 3):
        cluster.restart(broker_id)
    cluster.wait_for_leader(phase.topic, 0)
    read = phase.read["off"] = read_everything(phase)
    on = phase.read["on"]
    for what in ("log", "plain", "tls", "kcat", "confluent", "confluent_tls"):
        assert read[what] == on[what], what
    assert metric(phase, "zero_copy") == 0 and metric(phase, "copied") == 0


def test_a_follower_on_a_tls_listener_replicates_the_same_bytes(phase):
    cluster = phase.cluster
    cluster.broker_config.update({"fetch.zero.copy.enable": "true",
                                  "inter.broker.listener.name": "SSL"})
    for broker_id in (1, 2, 3):
        cluster.restart(broker_id)
    phase.topic = f"zc-tls-{uuid.uuid4().hex[:8]}"
    produce(cluster.bootstrap(), phase.topic)
    read = read_everything(phase)  # the followers fetched over TLS: copied
    assert read["plain"] == read["log"] == read["tls"]
    assert read["confluent"] == read["confluent_tls"] == list(enumerate(VALUES))
    assert read["kcat"] == phase.read["on"]["kcat"]
    assert metric(phase, "copied") >= len(read["log"])
