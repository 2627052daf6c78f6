"""CPU time of the parked-fetch cycle the latency benchmark repeats, in one process.

At ``rdkafka_performance -l`` load (one broker, acks=1, linger.ms=0) a consumer's
fetch is parked at the log end nearly all the time, and each produce wakes it:
the produce appends, the append wakes the parked fetch, the fetch answer is
read from the log, encoded and written. This script runs that cycle N times
through the broker's own code (a real ``KafkaConnection`` per client, Twisted's
StringTransport for the sockets, the dispatcher, KafkaApis' Fetch and Produce
handlers, ReplicaManager, Partition, the log) and prints CPU microseconds per
cycle next to the produce alone, with the load average. CPU time of this one
process (best of a few rounds) moves far less on a busy machine than the
wall-clock latency does. Prints figures, never passes or fails.

    .venv/bin/python benchmarks/bench_fetch_path.py [--cycles 5000] [--rounds 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twisted.internet.testing import StringTransport

from benchmarks.bench_produce_path import TOPIC_ID, leading_broker
from simplekafka.broker.server import KafkaServerFactory
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.records import build_batch

#: (consumer Fetch, Produce) versions: by name, or as librdkafka 2.x sends them to a broker
#: that offers Kafka 3.9's (Fetch v16 by topic ID, Produce v10: both flexible)
VERSIONS = {"old": (11, 8), "3.9": (16, 10)}


def fetch_frame(offset: int, correlation_id: int, version: int = 11) -> bytes:
    """A Fetch as librdkafka sends it: no session, rack "" (KIP-392), long poll; from v13
    the topic by its ID."""
    topic: dict = {"topic_id": TOPIC_ID} if version >= 13 else {"topic": "t"}
    return encode_frame(encode_request(ApiKey.FETCH, version, correlation_id, "bench", {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{**topic, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""}))


def produce_frame(correlation_id: int, version: int = 8) -> bytes:
    return encode_frame(encode_request(ApiKey.PRODUCE, version, correlation_id, "bench", {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": build_batch([(None, b"x" * 100)])}]}]}))


class CycleBench:
    """One broker leading ``t``, a consumer and a producer connection to it."""

    def __init__(self, data_dir: str, metrics: bool = False, versions: str = "old"):
        self.fetch_version, self.produce_version = VERSIONS[versions]
        self.broker = leading_broker(data_dir, metrics)
        factory = KafkaServerFactory(self.broker.dispatcher, 100 << 20,
                                     replicas=self.broker.replica_manager)
        self.consumer, self.consumer_wire = self._connect(factory)
        self.producer, self.producer_wire = self._connect(factory)
        self.partition = self.broker.replica_manager.get_partition("t", 0)

    @staticmethod
    def _connect(factory: KafkaServerFactory) -> tuple:
        connection = factory.buildProtocol(None)
        wire = StringTransport()
        connection.makeConnection(wire)
        return connection, wire

    def cycles(self, count: int, park: bool = True) -> float:
        """CPU seconds of ``count`` cycles (``park=False``: the produces alone)."""
        start = self.partition.log_end_offset
        fetches = [fetch_frame(start + i, i, self.fetch_version) for i in range(count)]
        produces = [produce_frame(i, self.produce_version) for i in range(count)]
        consumer, producer = self.consumer.dataReceived, self.producer.dataReceived
        self.consumer_wire.clear()
        self.producer_wire.clear()
        began = time.process_time()
        for fetch, produce in zip(fetches, produces):
            if park:
                consumer(fetch)
            producer(produce)
        spent = time.process_time() - began
        if park:  # every fetch was answered with its record (the cycle did happen)
            answered = self.consumer_wire.value()
            assert len(answered) > count * 100, "parked fetches were not answered"
        return spent

    def close(self) -> None:
        self.broker.replica_manager.shutdown()
        self.broker.log_manager.close()


def measure(cycles: int = 5000, rounds: int = 5, profile: bool = False,
            versions: str = "old") -> dict[str, float]:
    """Best-of-``rounds`` CPU µs per cycle and per produce alone, and per cycle with the
    metrics hooks in (request timing, bytes in and out: how a LocalCluster broker runs)."""
    with tempfile.TemporaryDirectory() as data_dir:
        metered = CycleBench(str(Path(data_dir) / "metered"), metrics=True, versions=versions)
        try:
            metered.cycles(min(cycles, 200))
            best_metered = min(metered.cycles(cycles) for _ in range(rounds))
        finally:
            metered.close()
        bench = CycleBench(str(Path(data_dir) / "plain"), versions=versions)
        try:
            bench.cycles(min(cycles, 200))  # warm up
            best_cycle = min(bench.cycles(cycles) for _ in range(rounds))
            best_produce = min(bench.cycles(cycles, park=False) for _ in range(rounds))
            if profile:
                profiler = cProfile.Profile()
                profiler.enable()
                bench.cycles(cycles)
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        finally:
            bench.close()
    return {"cycle_us": best_cycle / cycles * 1e6, "produce_us": best_produce / cycles * 1e6,
            "metered_cycle_us": best_metered / cycles * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one round")
    parser.add_argument("--versions", choices=sorted(VERSIONS), default="old",
                        help="old: Fetch v11 and Produce v8, by name; 3.9: Fetch v16 by topic "
                             "ID and Produce v10, as librdkafka 2.x sends them (default old)")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; best CPU-time round of {args.rounds}")
    fetch, produce = VERSIONS[args.versions]
    print(f"  versions: consumer Fetch v{fetch}, Produce v{produce}")
    figures = measure(args.cycles, args.rounds, args.profile, args.versions)
    print(f"  parked fetch woken by a produce  {figures['cycle_us']:7.1f} µs CPU per cycle")
    print(f"  the produce alone                {figures['produce_us']:7.1f} µs CPU per request")
    print(f"  the fetch wake-up, read, answer  "
          f"{figures['cycle_us'] - figures['produce_us']:7.1f} µs CPU per cycle")
    print(f"  the cycle with the metrics hooks {figures['metered_cycle_us']:7.1f} µs CPU per cycle "
          f"(as a LocalCluster broker runs)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
