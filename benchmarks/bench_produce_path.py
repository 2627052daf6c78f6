"""CPU time of one Produce request through the broker's own code, in one process.

Frames go into a real ``KafkaConnection`` (Twisted's StringTransport stands in
for the socket) and through the dispatcher, the Produce handler,
``ReplicaManager.append_records``, the partition and the log, exactly the
path "the life of a produce request" in the stage 4 chapter follows; no
ZooKeeper, no client. It measures CPU seconds of this process (best of a few
rounds), so a busy machine moves the figures less than a wall-clock benchmark
with several processes does (bench_broker.py). Prints figures, never passes or fails.

    .venv/bin/python benchmarks/bench_produce_path.py [--rounds 5]
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
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.records import build_batch

CASES = [  # (label, records per batch, requests, bytes per read or 0 for whole frames)
    ("1 record per request", 1, 20_000, 0),
    ("1,000 records per request", 1_000, 300, 0),
    ("1,000 records, 16 KB reads", 1_000, 300, 16_384),
]



#: The topic's ID: clients that speak Fetch v13 and later name the topic by it.
TOPIC_ID = bytes(range(1, 17))


def _without_offline(state: dict) -> dict:
    """LeaderAndIsr's partition state: UpdateMetadata's without ``offline_replicas``."""
    return {k: v for k, v in state.items() if k != "offline_replicas"} | {
        "adding_replicas": [], "removing_replicas": []}


def leading_broker(data_dir: str, metrics: bool = False) -> KafkaBroker:
    """A broker that leads topic ``t`` (ID ``TOPIC_ID``; this script plays the controller);
    ``metrics``: with its metrics hooks in, as a LocalCluster broker runs (nothing listens)."""
    properties = {"broker.id": "1", "log.dirs": data_dir, "zookeeper.connect": "127.0.0.1:1",
                  "listeners": "PLAINTEXT://127.0.0.1:9092"}
    if metrics:
        properties["metrics.listener"] = "127.0.0.1:0"
    broker = KafkaBroker(BrokerConfig.from_properties(properties), MemoryReactorClock())
    state = {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0,
             "isr": [1], "zk_version": 0, "replicas": [1], "offline_replicas": []}
    endpoint = {"port": 9092, "host": "127.0.0.1", "listener": "PLAINTEXT",
                "security_protocol": 0}
    for key, version, body in [
            (ApiKey.UPDATE_METADATA, 7, {"live_brokers": [
                {"id": 1, "rack": None, "endpoints": [endpoint]}]}),
            (ApiKey.LEADER_AND_ISR, 5, {"type": 0, "live_leaders": [
                {"broker_id": 1, "host_name": "127.0.0.1", "port": 9092}]})]:
        broker.dispatcher(encode_request(key, version, 0, "bench", {
            "controller_id": 1, "controller_epoch": 1,
            "topic_states": [{"topic_name": "t", "topic_id": TOPIC_ID, "partition_states": [
                state if key == ApiKey.UPDATE_METADATA else _without_offline(state)]}],
            **body}))
    return broker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; best CPU-time round of {args.rounds}")
    with tempfile.TemporaryDirectory() as data_dir:
        broker = leading_broker(data_dir)
        connection = KafkaServerFactory(broker.dispatcher, 100 << 20,
                                        replicas=broker.replica_manager).buildProtocol(None)
        wire = StringTransport()
        connection.makeConnection(wire)
        for label, records, requests, read_size in CASES:
            batch = build_batch([(None, b"x" * 100)] * records)
            frames = [encode_frame(encode_request(ApiKey.PRODUCE, 8, i, "bench", {
                "transactional_id": None, "acks": 1, "timeout_ms": 5000,
                "topic_data": [{"name": "t", "partition_data": [
                    {"index": 0, "records": batch}]}]})) for i in range(requests)]
            best = float("inf")
            for _ in range(args.rounds):
                wire.clear()
                started = time.process_time()
                for frame in frames:
                    if read_size:
                        for start in range(0, len(frame), read_size):
                            connection.dataReceived(frame[start:start + read_size])
                    else:
                        connection.dataReceived(frame)
                best = min(best, time.process_time() - started)
            print(f"  {label:30} {best / requests * 1e6:8.1f} µs CPU per request "
                  f"{requests * records / best:>12,.0f} records/s")
        broker.replica_manager.shutdown()
        broker.log_manager.close()
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
