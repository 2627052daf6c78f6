"""Broker throughput, latency and memory, with confluent-kafka as the client.

Prints figures, never passes or fails. Targets from issue 5, for one broker,
one partition and 100-byte values: produce with acks=1 >= 500,000 msg/s;
consume >= 1,000,000 msg/s; end-to-end latency at 10,000 msg/s with p99 <= 5 ms;
broker RSS <= 80 MB idle. For scale, the same produce requests are also pushed
raw (pipelined, one connection, no client library) through the broker and
through a plain Python socket server that only reads and discards the bytes:
the most a single Python process can take in.

    .venv/bin/python benchmarks/bench_broker.py [--messages 1000000] [--latency-seconds 5]
        [--profile broker.prof]

With ``--profile`` the broker runs under cProfile and writes its profile when it
stops (read it with ``python -m pstats broker.prof``, then ``sort tottime``).

Everything (ZooKeeper, the broker, the discard server) runs on this machine
via LocalCluster; the figures move with whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from simplekafka.cluster import LocalCluster
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.records import build_batch

MB = 1024 * 1024

DISCARD_SERVER = r"""
import socket, sys, time
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(1)
print(server.getsockname()[1], flush=True)
conn, _ = server.accept()
total, buf = 0, bytearray(1 << 20)
started = None
while True:
    n = conn.recv_into(buf)
    if started is None:
        started = time.perf_counter()
    if not n:
        break
    total += n
print(total, time.perf_counter() - started, flush=True)
"""


class ProfiledCluster(LocalCluster):
    """A LocalCluster whose brokers run under cProfile, writing ``profile_path`` on exit."""

    profile_path = "broker.prof"

    def broker_command(self, broker):
        command = super().broker_command(broker)
        return [command[0], "-m", "cProfile", "-o", self.profile_path, *command[1:]]


class RssSampler(threading.Thread):
    """Samples a process's resident memory every 50 ms; keeps the maximum."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.stop_requested = threading.Event()

    def run(self) -> None:
        while True:
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return
            if self.stop_requested.wait(0.05):
                return

    def stop(self) -> int:
        self.stop_requested.set()
        self.join(2)
        return self.peak


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while admin.list_topics(topic, timeout=5).topics[topic].partitions[0].leader < 0:
        if time.monotonic() > deadline:
            raise SystemExit(f"{topic} has no leader after 30 s")
        time.sleep(0.1)


def bench_produce(bootstrap: str, topic: str, messages: int, value: bytes) -> float:
    """msg/s for confluent-kafka producing ``messages`` values with acks=1, until flushed."""
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 10,
        "batch.size": 1_000_000, "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "none",
    })
    produce = producer.produce
    started = time.perf_counter()
    for _ in range(messages):
        try:
            produce(topic, value)
        except BufferError:
            producer.poll(0.01)
            produce(topic, value)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if remaining:
        raise SystemExit(f"{remaining} messages undelivered after 120 s")
    return messages / elapsed


def bench_consume(bootstrap: str, topic: str, messages: int) -> float:
    """msg/s for confluent-kafka reading ``messages`` records from the beginning."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
        "fetch.max.bytes": 50 * MB, "max.partition.fetch.bytes": 50 * MB,
        "queued.max.messages.kbytes": 512 * 1024, "fetch.wait.max.ms": 100,
        "fetch.queue.backoff.ms": 0,  # else it idles 1 s whenever its queue is full
    })
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    received = 0
    started = None
    deadline = time.monotonic() + 120
    while received < messages and time.monotonic() < deadline:
        batch = consumer.consume(10_000, 1.0)
        if batch and started is None:
            started = time.perf_counter()
        received += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    if received < messages:
        raise SystemExit(f"consumed only {received} of {messages} in 120 s")
    return received / elapsed


def paced(rate: float, total: int) -> Iterator[int]:
    """Yield 0..total-1, each when it is due at ``rate`` per second, sleeping in between.

    Never spins: a busy-waiting pacer holds a core and, in a process that also
    consumes, the GIL (a thread waits up to sys.getswitchinterval(), 5 ms, for
    it), which the records' delays would then include. Records that fell due
    during one sleep leave together, as a real producer's would.
    """
    started = time.perf_counter()
    sent = 0
    while sent < total:
        due = min(total, int((time.perf_counter() - started) * rate) + 1)
        while sent < due:
            yield sent
            sent += 1
        if sent < total:
            time.sleep(max(0.0, started + sent / rate - time.perf_counter()))


def bench_latency(bootstrap: str, topic: str, rate: int, seconds: float,
                  value_size: int, linger_ms: float = 0) -> list[float]:
    """End-to-end delays (ms) for records produced at ``rate`` msg/s, consumed as they come."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "fetch.error.backoff.ms": 0})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": linger_ms})
    # Warm up: the consumer's first fetch is parked at the end of the partition.
    producer.produce(topic, b"warm-up")
    producer.flush(10)
    while True:
        message = consumer.poll(5)
        if message is not None and message.error() is None and message.value() == b"warm-up":
            break
    delays: list[float] = []
    total = int(rate * seconds)
    done = threading.Event()

    def consume() -> None:
        # poll() returns as soon as one record is there; consume(n, timeout) would wait
        # for n records or the whole timeout, which would be measured as latency.
        while len(delays) < total and not done.is_set():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                sent_ns = struct.unpack_from(">q", message.value())[0]
                delays.append((time.perf_counter_ns() - sent_ns) / 1e6)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    padding = b"p" * (value_size - 8)
    for _ in paced(rate, total):
        producer.produce(topic, struct.pack(">q", time.perf_counter_ns()) + padding)
        producer.poll(0)
    producer.flush(30)
    reader.join(30)
    done.set()
    consumer.close()
    return delays


def produce_frames(topic: str, messages: int, value: bytes, per_batch: int = 1000) -> list[bytes]:
    """ProduceRequest v8 frames (acks=1), one batch of ``per_batch`` records each."""
    batch = build_batch([(None, value)] * per_batch)
    frames = []
    for correlation_id in range(messages // per_batch):
        payload = encode_request(ApiKey.PRODUCE, 8, correlation_id, "bench", {
            "transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        })
        frames.append(struct.pack(">i", len(payload)) + payload)
    return frames


def raw_to_broker(port: int, frames: list[bytes]) -> float:
    """Seconds to pipeline every frame to the broker and read every answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    answers = {"count": 0}

    def read_answers() -> None:
        pending = b""
        while answers["count"] < len(frames):
            chunk = sock.recv(1 << 20)
            if not chunk:
                return
            pending += chunk
            while len(pending) >= 4:
                (size,) = struct.unpack_from(">i", pending)
                if len(pending) < 4 + size:
                    break
                pending = pending[4 + size:]
                answers["count"] += 1

    reader = threading.Thread(target=read_answers, daemon=True)
    started = time.perf_counter()
    reader.start()
    sock.sendall(b"".join(frames))
    reader.join(120)
    elapsed = time.perf_counter() - started
    sock.close()
    if answers["count"] < len(frames):
        raise SystemExit(f"broker answered {answers['count']} of {len(frames)} raw produces")
    return elapsed


def raw_fetch_all(port: int, topic: str, end_offset: int, max_bytes: int = 8 * MB) -> float:
    """Seconds to fetch a partition from offset 0 to ``end_offset`` with raw Fetch v11 requests.

    Records are counted from batch headers, not decoded: this is the broker's side of
    consuming, without any client library's per-record work.
    """
    from simplekafka.protocol.batch_header import iter_batch_positions, read_header
    from simplekafka.protocol.messages import decode_response

    sock = socket.create_connection(("127.0.0.1", port))
    offset, correlation_id = 0, 0
    started = time.perf_counter()
    while offset < end_offset:
        correlation_id += 1
        payload = encode_request(ApiKey.FETCH, 11, correlation_id, "bench", {
            "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": max_bytes,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "fetch_offset": offset, "partition_max_bytes": max_bytes}]}]})
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _, answer = decode_response(ApiKey.FETCH, 11, sock.recv(size, socket.MSG_WAITALL))
        records = answer.responses[0].partitions[0].records or b""
        for position, _size in iter_batch_positions(records):
            offset = max(offset, read_header(records, position).next_offset)
    elapsed = time.perf_counter() - started
    sock.close()
    return elapsed


def raw_to_discard_server(frames: list[bytes]) -> tuple[float, int]:
    """Seconds for a plain Python server to read and discard the same bytes, and its RSS."""
    server = subprocess.Popen([sys.executable, "-c", DISCARD_SERVER], stdout=subprocess.PIPE,
                              text=True)
    try:
        port = int(server.stdout.readline())
        sock = socket.create_connection(("127.0.0.1", port))
        sampler = RssSampler(server.pid)
        sampler.start()
        sock.sendall(b"".join(frames))
        sock.close()
        total, elapsed = server.stdout.readline().split()
        assert int(total) == sum(map(len, frames))
        return float(elapsed), sampler.stop()
    finally:
        server.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--latency-rate", type=int, default=10_000)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--profile", metavar="FILE", default=None,
                        help="run the broker under cProfile and write its profile here")
    args = parser.parse_args()
    cluster_class = LocalCluster
    if args.profile:
        cluster_class = ProfiledCluster
        ProfiledCluster.profile_path = str(Path(args.profile).resolve())
    value = os.urandom(args.value_size)

    print(f"python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"{args.messages:,} messages of {args.value_size} bytes, one partition")
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as directory, \
            cluster_class(brokers=1, base_dir=Path(directory)) as cluster:
        bootstrap, port = cluster.bootstrap_servers, cluster.broker_ports[1]
        broker = psutil.Process(cluster.broker_pids[1])
        time.sleep(1)
        idle_rss = broker.memory_info().rss

        sampler = RssSampler(broker.pid)
        sampler.start()
        create_topic(bootstrap, "bench")
        produce_rate = bench_produce(bootstrap, "bench", args.messages, value)
        consume_rate = bench_consume(bootstrap, "bench", args.messages)

        latencies = {}
        for linger_ms in (0, 1):
            topic = f"latency-linger-{linger_ms}"
            create_topic(bootstrap, topic)
            latencies[linger_ms] = bench_latency(bootstrap, topic, args.latency_rate,
                                                 args.latency_seconds, args.value_size, linger_ms)

        create_topic(bootstrap, "raw")
        frames = produce_frames("raw", args.messages, value)
        raw_seconds = raw_to_broker(port, frames)
        fetch_seconds = raw_fetch_all(port, "raw", args.messages)
        create_topic(bootstrap, "raw-small")
        small_frames = produce_frames("raw-small", 20_000, value, per_batch=1)
        small_seconds = raw_to_broker(port, small_frames)
        load_rss = sampler.stop()
        after_rss = broker.memory_info().rss
    discard_seconds, discard_rss = raw_to_discard_server(frames)

    sent_mb = sum(map(len, frames)) / MB
    print()
    print("confluent-kafka against the broker")
    print(f"  produce, acks=1            {produce_rate:>12,.0f} msg/s   (aim >= 500,000)")
    print(f"  consume from the beginning {consume_rate:>12,.0f} msg/s   (aim >= 1,000,000)")
    for linger_ms, delays in latencies.items():
        cuts = statistics.quantiles(delays, n=100)
        print(f"  end to end at {args.latency_rate:,} msg/s, linger.ms={linger_ms}: "
              f"p50 {cuts[49]:.2f} ms, p99 {cuts[98]:.2f} ms, max {max(delays):.2f} ms "
              f"over {len(delays):,} records (aim p99 <= 5 ms)")
    print("broker resident memory")
    print(f"  idle after start           {idle_rss / MB:>8.1f} MB        (aim <= 80 MB)")
    print(f"  peak under load            {load_rss / MB:>8.1f} MB")
    print(f"  after the load             {after_rss / MB:>8.1f} MB")
    print(f"same bytes pushed raw ({len(frames):,} ProduceRequests of 1,000 records, "
          f"{sent_mb:.0f} MB, one connection, pipelined)")
    print(f"  broker, acks=1, answers read {args.messages / raw_seconds:>12,.0f} msg/s "
          f"{sent_mb / raw_seconds:>8.0f} MB/s")
    print(f"  plain socket read+discard    {args.messages / discard_seconds:>12,.0f} msg/s "
          f"{sent_mb / discard_seconds:>8.0f} MB/s   (RSS {discard_rss / MB:.1f} MB)")
    print(f"  broker, Fetch v11 of 8 MB, records counted from batch headers "
          f"{args.messages / fetch_seconds:>12,.0f} msg/s {sent_mb / fetch_seconds:>8.0f} MB/s")
    print(f"per-request cost: {len(small_frames):,} ProduceRequests of one record, pipelined: "
          f"{len(small_frames) / small_seconds:,.0f} requests/s "
          f"({small_seconds / len(small_frames) * 1e6:.0f} µs each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
