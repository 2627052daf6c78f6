"""The leader's CPU per record at three brokers, acks=all, in one process, with its fetch counts.

At ``rdkafka_performance -l`` load with replication factor 3 (acks=all,
linger.ms=0) the leader's reactor is the busiest part: it appends the
producer's one-record requests, answers two followers' fetches (each
follower copies, then says with its next fetch how far it got), moves the
high watermark, answers the acks=all produces and the consumer's parked
fetch. This script plays that cycle through the broker's own code (a real
``KafkaConnection`` per client over Twisted's StringTransport, the
dispatcher, the Fetch and Produce handlers with fetch sessions as our
replica fetchers use them, ReplicaManager, Partition, the log): the producer
delivers ``k`` requests in one read, and the two followers and the consumer
fetch again whenever answered, until all are parked and every produce is
answered. It prints the leader's CPU µs per record (only the broker's calls
are timed, best of a few rounds) and the fetch requests and answers it
handled per read, for a few ``k``: what the latency run's wall-clock figures
hide under the machine's noise. Prints figures, never passes or fails.

``--versions 3.9`` speaks as the latency run's parts do: our followers
(Kafka 3.9's Fetch v17: topics by ID, the follower and its broker epoch in
``replica_state``, the last fetched epoch) and librdkafka 2.x (Fetch v16 by
topic ID, Produce v10), all flexible with tagged fields. The default ``old``
is Fetch v11 and Produce v8 by name, the versions earlier figures were taken
with, so the two can be set side by side.

    .venv/bin/python benchmarks/bench_replication_path.py [--reads 300] [--rounds 3]
        [--versions old|3.9]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twisted.internet.testing import MemoryReactorClock, StringTransport

from simplekafka.broker.broker import KafkaBroker
from simplekafka.broker.config import BrokerConfig
from simplekafka.broker.server import KafkaServerFactory
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import iter_batch_positions, read_header
from simplekafka.protocol.framing import FrameDecoder, encode_frame
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import build_batch

LEADER, FOLLOWERS = 1, (2, 3)
READ_SIZES = (1, 5, 30)  # produce requests per read
TOPIC_ID = bytes(range(1, 17))
#: (follower Fetch, consumer Fetch, Produce) versions: by name, or as Kafka 3.9's follower and
#: librdkafka 2.x send them
VERSIONS = {"old": (11, 11, 8), "3.9": (17, 16, 10)}


def _without_offline(state: dict) -> dict:
    """LeaderAndIsr v2's partition state: UpdateMetadata's without ``offline_replicas``."""
    return {k: v for k, v in state.items() if k != "offline_replicas"} | {
        "adding_replicas": [], "removing_replicas": []}

def leading_broker(data_dir: str) -> KafkaBroker:
    """Broker 1 leading ``t`` with replicas and ISR 1, 2, 3 (this script plays the controller)."""
    broker = KafkaBroker(BrokerConfig.from_properties({
        "broker.id": str(LEADER), "log.dirs": data_dir, "zookeeper.connect": "127.0.0.1:1",
        "listeners": "PLAINTEXT://127.0.0.1:9092"}), MemoryReactorClock())
    brokers = (LEADER, *FOLLOWERS)
    state = {"partition_index": 0, "controller_epoch": 1, "leader": LEADER, "leader_epoch": 0,
             "isr": list(brokers), "zk_version": 0, "replicas": list(brokers),
             "offline_replicas": []}
    for key, version, body in [
            (ApiKey.UPDATE_METADATA, 7, {"live_brokers": [
                {"id": b, "rack": None, "endpoints": [
                    {"port": 9091 + b, "host": "127.0.0.1", "listener": "PLAINTEXT",
                     "security_protocol": 0}]} for b in brokers]}),
            (ApiKey.LEADER_AND_ISR, 5, {"type": 0, "live_leaders": [
                {"broker_id": LEADER, "host_name": "127.0.0.1", "port": 9092}]})]:
        broker.dispatcher(encode_request(key, version, 0, "bench", {
            "controller_id": LEADER, "controller_epoch": 1,
            "topic_states": [{"topic_name": "t", "topic_id": TOPIC_ID, "partition_states": [
                state if key == ApiKey.UPDATE_METADATA else _without_offline(state)]}],
            **body}))
    return broker


class _Client:
    """One connection to the leader: a follower (with a fetch session) or the consumer."""

    def __init__(self, factory: KafkaServerFactory, replica_id: int, version: int = 11):
        self.version = version
        self.connection = factory.buildProtocol(None)
        self.wire = StringTransport()
        self.connection.makeConnection(self.wire)
        self.replica_id = replica_id
        self.offset = 0
        self.session_id, self.epoch = 0, 0
        self.told = -1  # the fetch offset the session knows
        self.frames = FrameDecoder()
        self.correlation = 0

    def fetch_frame(self) -> bytes:
        """The next fetch: a follower's in its session (only a moved position is named, as
        ReplicaFetcher sends it), the consumer's without one (as librdkafka's)."""
        self.correlation += 1
        follower = self.replica_id >= 0
        named = not follower or self.epoch == 0 or self.told != self.offset
        partitions = [{"partition": 0, "current_leader_epoch": 0, "fetch_offset": self.offset,
                       "log_start_offset": 0, "partition_max_bytes": 1 << 20,
                       "last_fetched_epoch": 0 if self.offset else -1}] if named else []
        self.told = self.offset
        body = {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                "session_id": self.session_id if follower else 0,
                "session_epoch": self.epoch if follower else -1,
                "topics": [{"topic": "t", "partitions": partitions}] if partitions else [],
                "forgotten_topics_data": [], "rack_id": ""}
        if self.version >= 13:
            for topic in body["topics"]:
                del topic["topic"]
                topic["topic_id"] = TOPIC_ID
        if self.version >= 15:
            body["replica_state"] = {"replica_id": self.replica_id, "replica_epoch": -1}
        else:
            body["replica_id"] = self.replica_id
        return encode_frame(encode_request(ApiKey.FETCH, self.version, self.correlation,
                                           "bench", body))

    def answered(self) -> bool:
        """Read an answer that arrived (True), moving the offset past its records."""
        data = self.wire.value()
        if not data:
            return False
        self.wire.clear()
        for frame in self.frames.feed(data):
            body = decode_response(ApiKey.FETCH, self.version, frame)[1]
            if self.replica_id >= 0:
                self.session_id = body.session_id
                self.epoch += 1
            for topic in body.responses:
                for answer in topic.partitions:
                    records = bytes(answer.records or b"")
                    spans = iter_batch_positions(records) if records else []
                    if spans:
                        self.offset = read_header(records, spans[-1][0]).next_offset
        return True


def run_reads(k: int, reads: int, data_dir: str, versions: str = "old") -> dict[str, float]:
    """``reads`` reads of ``k`` acks=all produces, each replicated until all are parked."""
    follower_version, consumer_version, produce_version = VERSIONS[versions]
    broker = leading_broker(data_dir)
    factory = KafkaServerFactory(broker.dispatcher, 100 << 20, replicas=broker.replica_manager)
    followers = [_Client(factory, replica, follower_version) for replica in FOLLOWERS]
    consumer = _Client(factory, -1, consumer_version)
    producer = _Client(factory, -1)
    batch = build_batch([(None, b"x" * 100)])
    correlation = 0
    cpu = 0.0
    fetches = answers = 0

    def timed(call, data: bytes) -> None:
        nonlocal cpu
        began = time.process_time()
        call(data)
        cpu += time.process_time() - began

    try:
        for client in (*followers, consumer):  # everyone parked at the (empty) log end
            timed(client.connection.dataReceived, client.fetch_frame())
            fetches += 1
        cpu = 0.0
        fetches = 0
        for _ in range(reads):
            frames = []
            for _ in range(k):
                correlation += 1
                frames.append(encode_frame(encode_request(ApiKey.PRODUCE, produce_version,
                                                          correlation, "bench", {
                    "transactional_id": None, "acks": -1, "timeout_ms": 30_000,
                    "topic_data": [{"name": "t", "partition_data": [
                        {"index": 0, "records": batch}]}]})))
            timed(producer.connection.dataReceived, b"".join(frames))
            moved = True
            while moved:  # whoever was answered fetches again, until all are parked
                moved = False
                for client in (*followers, consumer):
                    if client.answered():
                        answers += 1
                        moved = True
                        timed(client.connection.dataReceived, client.fetch_frame())
                        fetches += 1
            producer.wire.clear()
        partition = broker.replica_manager.get_partition("t", 0)
        assert partition.high_watermark == reads * k, "not every record was committed"
    finally:
        broker.replica_manager.shutdown()
        broker.log_manager.close()
    records = reads * k
    return {"cpu_us": cpu / records * 1e6, "fetches": fetches / reads, "answers": answers / reads}


def measure(reads: int = 300, rounds: int = 3, versions: str = "old"
            ) -> dict[int, dict[str, float]]:
    figures = {}
    for k in READ_SIZES:
        best = None
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as data_dir:
                result = run_reads(k, reads, data_dir, versions)
            if best is None or result["cpu_us"] < best["cpu_us"]:
                best = result
        figures[k] = best
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--versions", choices=sorted(VERSIONS), default="old",
                        help="old: Fetch v11 and Produce v8 by name; 3.9: our followers' "
                             "Fetch v17, librdkafka's Fetch v16 and Produce v10")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; best CPU-time round of {args.rounds}")
    follower, consumer, produce = VERSIONS[args.versions]
    print(f"followers on Fetch v{follower}, the consumer on Fetch v{consumer}, "
          f"the producer on Produce v{produce}")
    for k, figure in measure(args.reads, args.rounds, args.versions).items():
        print(f"  {k:3d} produces per read: {figure['cpu_us']:7.1f} µs CPU per record at the "
              f"leader, {figure['fetches']:4.1f} fetch requests and {figure['answers']:4.1f} "
              f"fetch answers per read")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
