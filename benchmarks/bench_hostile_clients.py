"""A normal client's produce latency and the broker's memory, with and without hostile clients.

Prints figures, never passes or fails. One broker (LocalCluster) serves
PLAINTEXT and SASL_PLAINTEXT with Kafka's default limits on the unauthenticated
path (``sasl.server.max.receive.size`` 512 KiB) unless told otherwise. A
confluent-kafka producer on PLAINTEXT sends one record every ``--interval-ms``
(acks=1, linger.ms=0) for ``--seconds`` and its delivery latencies give p50
and p99; the broker's RSS (``/proc/<pid>/status`` VmRSS) is sampled every
0.2 s. The same run is made twice: quiet, then with ``--hostile`` clients of
each kind on the SASL listener, none of which ever logs in:

* silent: connects and sends nothing (``connections.max.idle.ms`` closes it);
* slow-loris: announces a 64 KiB frame and sends one byte of it a second;
* oversized: announces a 1 MiB frame and pushes it (a new connection each time
  the broker closes the last one, paced by sleeping).

The producer waits between sends in ``poll``, so each delivery report is
served, and its latency taken, when it arrives.

    .venv/bin/python benchmarks/bench_hostile_clients.py [--hostile 100] [--seconds 20]
        [--idle-ms 600000] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer

from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import secure_broker_config

LISTENER = "SASL_PLAINTEXT"


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)[1]) / 1024


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


class Hostile:
    """``count`` clients of each kind against ``port`` until ``stop`` is set."""

    def __init__(self, port: int, count: int, stop: threading.Event):
        self.port, self.count, self.stop = port, count, stop
        self.closed_by_broker = {"silent": 0, "slow-loris": 0, "oversized": 0}
        self.connections = {"silent": 0, "slow-loris": 0, "oversized": 0}

    def _connect(self, kind: str) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return None
        self.connections[kind] += 1
        return sock

    def _gone(self, sock: socket.socket) -> bool:
        """Whether the broker closed ``sock`` (read without waiting)."""
        sock.setblocking(False)
        try:
            return sock.recv(4096) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True
        finally:
            sock.setblocking(True)

    def silent(self) -> None:
        socks = [s for s in (self._connect("silent") for _ in range(self.count)) if s]
        while not self.stop.wait(0.5):
            for sock in list(socks):
                if self._gone(sock):
                    self.closed_by_broker["silent"] += 1
                    socks.remove(sock)
                    sock.close()
        for sock in socks:
            sock.close()

    def slow_loris(self) -> None:
        socks: list[socket.socket] = []
        while not self.stop.is_set():
            while len(socks) < self.count and not self.stop.is_set():
                sock = self._connect("slow-loris")
                if sock is None:
                    break
                try:
                    sock.sendall(struct.pack(">i", 64 * 1024) + b"\x00")
                    socks.append(sock)
                except OSError:
                    sock.close()
            for sock in list(socks):
                try:
                    sock.send(b"\x00")
                except OSError:
                    self.closed_by_broker["slow-loris"] += 1
                    socks.remove(sock)
                    sock.close()
                    continue
                if self._gone(sock):
                    self.closed_by_broker["slow-loris"] += 1
                    socks.remove(sock)
                    sock.close()
            self.stop.wait(1.0)
        for sock in socks:
            sock.close()

    def oversized(self) -> None:
        announced = 1 << 20
        body = b"\x00\x12\x00\x00" + b"x" * (announced - 4)
        while not self.stop.is_set():
            socks = [s for s in (self._connect("oversized") for _ in range(self.count)) if s]
            for sock in socks:
                sock.settimeout(1.0)
                try:
                    sock.sendall(struct.pack(">i", announced) + body)
                    sock.recv(4096)  # b"": closed; a timeout: the broker still reads it
                    self.closed_by_broker["oversized"] += 1
                except TimeoutError:
                    pass
                except OSError:
                    self.closed_by_broker["oversized"] += 1  # closed part-way, as it must be
            for sock in socks:
                sock.close()
            self.stop.wait(0.5)

    def run(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=work, daemon=True)
                   for work in (self.silent, self.slow_loris, self.oversized)]
        for thread in threads:
            thread.start()
        return threads


def measure(cluster: LocalCluster, pid: int, seconds: float, interval: float,
            hostile: int) -> dict:
    """One run: the producer's latencies and the broker's RSS, with ``hostile`` of each kind."""
    stop = threading.Event()
    attackers = Hostile(cluster.brokers[1].listener_ports[LISTENER], hostile, stop)
    threads = attackers.run() if hostile else []
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": 1, "linger.ms": 0})
    topic = f"bench-hostile-{hostile}-{int(time.time() * 1000)}"
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    latencies: list[float] = []
    failures = [0]

    def delivered(error, message):
        if error is not None:
            failures[0] += 1
        else:  # librdkafka's own produce() to delivery time, not our poll's pace
            latencies.append(message.latency())

    rss = [rss_mb(pid)]
    started = time.monotonic()
    next_sample = started
    sent = 0
    while time.monotonic() - started < seconds:
        producer.produce(topic, b"x" * 100, on_delivery=delivered)
        sent += 1
        producer.poll(0)
        if time.monotonic() >= next_sample:
            rss.append(rss_mb(pid))
            next_sample += 0.2
        # Wait in poll, not sleep: a delivery report is served (and its latency taken)
        # when it arrives, not at the next send; poll sleeps, so the pace costs no CPU.
        while (remaining := started + sent * interval - time.monotonic()) > 0:
            producer.poll(remaining)
    producer.flush(30)
    rss.append(rss_mb(pid))
    stop.set()
    for thread in threads:
        thread.join(10)
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 \
            if latencies else float("nan")

    return {"p50": pct(0.50), "p99": pct(0.99), "count": len(latencies),
            "failures": failures[0], "rss_end": rss[-1], "rss_max": max(rss),
            "rss_start": rss[0], "attackers": attackers}


def report(name: str, result: dict, hostile: int) -> None:
    attackers = result["attackers"]
    line = (f"{name:<8} p50 {result['p50']:6.2f} ms  p99 {result['p99']:7.2f} ms "
            f"({result['count']} records, {result['failures']} failed)  broker RSS "
            f"{result['rss_start']:.0f} -> max {result['rss_max']:.0f} -> "
            f"{result['rss_end']:.0f} MB")
    if hostile:
        kinds = ", ".join(f"{kind} {attackers.connections[kind]} opened/"
                          f"{attackers.closed_by_broker[kind]} closed by the broker"
                          for kind in attackers.connections)
        line += f"  [{kinds}]"
    print(f"{line}  ({load()})", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile", type=int, default=100,
                        help="clients of each hostile kind (silent, slow-loris, oversized)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval-ms", type=float, default=10.0)
    parser.add_argument("--idle-ms", type=int, default=600000,
                        help="the broker's connections.max.idle.ms")
    parser.add_argument("--tiny", action="store_true", help="a quick run (tests)")
    args = parser.parse_args(argv)
    if args.tiny:
        args.hostile, args.seconds, args.idle_ms = 5, 2.0, 1000
    print(f"{load()} before; {args.hostile} hostile clients of each kind, "
          f"{args.seconds:g} s per run, a record every {args.interval_ms:g} ms", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        config = secure_broker_config(None, {}, (LISTENER,))
        config.update({"connections.max.idle.ms": str(args.idle_ms),
                       "offsets.topic.replication.factor": "1"})
        with LocalCluster(1, base_dir=Path(tmp) / "cluster", listeners=[LISTENER],
                          broker_config=config) as cluster:
            pid = cluster.brokers[1].pid
            assert pid is not None
            quiet = measure(cluster, pid, args.seconds, args.interval_ms / 1000, 0)
            report("quiet", quiet, 0)
            hostile = measure(cluster, pid, args.seconds, args.interval_ms / 1000, args.hostile)
            report("hostile", hostile, args.hostile)
    print(f"p99 with hostile clients: {hostile['p99']:.2f} ms against {quiet['p99']:.2f} ms "
          f"quiet; broker RSS grew by at most {hostile['rss_max'] - hostile['rss_start']:.0f} MB "
          f"under them ({load()})")


if __name__ == "__main__":
    main()
