"""Operations costs, on real processes. Prints figures with the load average; never fails.

1. Scrape: GET /metrics of one broker holding 1,000 partitions (issue 12 aims
   under 50 ms).
2. Produce path with and without metrics: confluent-kafka writes 100-byte
   values (acks=1) to a broker started with ``metrics.listener`` and to one
   started without; the runs alternate, best of each counts (issue 12 aims at
   a cost under 3 %).
3. REST: GET /api/topics/{name} of a 100-partition topic through the console,
   on one kept-alive connection (issue 12 aims at p99 under 20 ms).

Wall-clock figures on a shared machine follow its load, so each also prints
the CPU time the serving process spent (from /proc), which does not.

    .venv/bin/python benchmarks/bench_ops.py [--tiny]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.console.process import ConsoleProcess


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_thread_cpu_seconds(pid: int) -> float:
    """CPU time of a process's main thread (the broker's reactor), to the nanosecond."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timings_ms(fn, count: int) -> list[float]:
    out = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary(samples: list[float]) -> str:
    return (f"mean {statistics.fmean(samples):.2f} ms, p50 {percentile(samples, 0.5):.2f} ms, "
            f"p99 {percentile(samples, 0.99):.2f} ms over {len(samples)}")


def bench_scrape(base: Path, partitions: int, scrapes: int) -> None:
    with LocalCluster(brokers=1, base_dir=base / "scrape") as cluster:
        with Admin(cluster.bootstrap_servers, request_timeout_ms=120_000) as admin:
            admin.create_topic("many", num_partitions=partitions, replication_factor=1,
                               timeout_ms=120_000)
        url = cluster.metrics_urls[1]

        def scrape() -> None:
            with urllib.request.urlopen(url, timeout=60) as answer:
                answer.read()

        scrape()  # warm-up
        pid = cluster.brokers[1].pid
        cpu = main_thread_cpu_seconds(pid)
        samples = timings_ms(scrape, scrapes)
        cpu_ms = (main_thread_cpu_seconds(pid) - cpu) / scrapes * 1000
        print(f"scrape /metrics, {partitions} partitions: {summary(samples)}; broker reactor CPU "
              f"{cpu_ms:.1f} ms per scrape ({load()})")


def produce_rate(bootstrap: str, messages: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                         "batch.size": 65536, "queue.buffering.max.messages": 2_000_000})
    value = b"x" * 100
    started = time.perf_counter()
    for _ in range(messages):
        while True:
            try:
                producer.produce("load", value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(600)
    return messages / (time.perf_counter() - started)


def hook_cost_us(calls: int) -> float:
    """CPU the metrics add to one produce request: the dispatcher's timing hook and on_append."""
    import struct
    import types

    from simplekafka.broker.metrics import BrokerMetrics

    broker = types.SimpleNamespace(replica_manager=types.SimpleNamespace(partitions={}))
    metrics = BrokerMetrics(broker)
    frame = struct.pack(">hhi", 0, 8, 1) + bytes(100)
    answer = b"x" * 60

    def plain(frame: bytes, connection: object = None) -> bytes:
        return answer

    on_request = metrics.on_request  # what the dispatcher calls as it answers
    on_append = metrics.on_append
    clock = time.perf_counter

    def bare() -> None:
        for _ in range(calls):
            plain(frame, None)

    def hooked() -> None:
        for _ in range(calls):
            started = clock()
            plain(frame, None)
            on_request(0, 8, started)  # Produce v8
            on_append("load", 500, 55_000)

    best = {}
    for name, fn in (("bare", bare), ("hooked", hooked)):
        times = []
        for _ in range(5):
            started = time.process_time()
            fn()
            times.append(time.process_time() - started)
        best[name] = min(times)
    return (best["hooked"] - best["bare"]) / calls * 1e6


def produce_requests(url: str) -> float:
    """Produce requests the broker counted, summed over the versions (one series each)."""
    total = 0.0
    with urllib.request.urlopen(url, timeout=60) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith('kafka_network_requestmetrics_requests_total{request="Produce"'):
                total += float(line.split()[-1])
    return total


def bench_produce(base: Path, messages: int, rounds: int) -> None:
    rates: dict[bool, list[float]] = {True: [], False: []}
    cpu_us: dict[bool, list[float]] = {True: [], False: []}
    per_request_us: list[float] = []
    per_request_messages: list[float] = []
    with LocalCluster(brokers=1, base_dir=base / "on", metrics=True) as on, \
            LocalCluster(brokers=1, base_dir=base / "off", metrics=False) as off:
        for cluster in (on, off):
            with Admin(cluster.bootstrap_servers) as admin:
                admin.create_topic("load", num_partitions=1, replication_factor=1)
            produce_rate(cluster.bootstrap_servers, min(messages, 20_000))  # warm-up
        for _ in range(rounds):
            for metrics, cluster in ((True, on), (False, off)):
                pid = cluster.brokers[1].pid
                requests = produce_requests(on.metrics_urls[1]) if metrics else 0.0
                cpu = main_thread_cpu_seconds(pid)
                rates[metrics].append(produce_rate(cluster.bootstrap_servers, messages))
                spent = main_thread_cpu_seconds(pid) - cpu
                cpu_us[metrics].append(spent / messages * 1e6)
                if metrics:
                    requests = produce_requests(on.metrics_urls[1]) - requests
                    per_request_us.append(spent / requests * 1e6)
                    per_request_messages.append(messages / requests)
    with_metrics, without = max(rates[True]), max(rates[False])
    cost = (without - with_metrics) / without * 100
    cpu_on, cpu_off = min(cpu_us[True]), min(cpu_us[False])
    print(f"produce, 100-byte values, acks=1, best of {rounds}: with metrics "
          f"{with_metrics:,.0f} msg/s, without {without:,.0f} msg/s, cost {cost:+.1f} % "
          f"(all runs: on {[f'{r:,.0f}' for r in rates[True]]}, "
          f"off {[f'{r:,.0f}' for r in rates[False]]}); broker reactor CPU per message "
          f"{cpu_on:.2f} us with metrics, {cpu_off:.2f} us without, cost "
          f"{(cpu_on - cpu_off) / cpu_off * 100:+.1f} % ({load()})")
    hooks = hook_cost_us(200_000)
    request = statistics.median(per_request_us)
    print(f"produce-path metrics cost: the hooks take {hooks:.2f} us per produce request; "
          f"a produce request took the broker's reactor {request:.0f} us "
          f"({statistics.median(per_request_messages):.0f} messages each, median of "
          f"{rounds}): {hooks / request * 100:.1f} % ({load()})")


def bench_rest(base: Path, partitions: int, requests: int) -> None:
    with LocalCluster(brokers=1, base_dir=base / "rest") as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("wide", num_partitions=partitions, replication_factor=1)
        with ConsoleProcess(cluster.bootstrap_servers) as console:
            address = urlparse(console.url)
            connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)

            def get() -> None:
                connection.request("GET", "/api/topics/wide")
                answer = connection.getresponse()
                body = answer.read()
                assert answer.status == 200, body

            for _ in range(10):
                get()  # warm-up
            pids = [console.pid, cluster.brokers[1].pid]
            cpu = sum(cpu_seconds(p) for p in pids)
            samples = timings_ms(get, requests)
            cpu_ms = (sum(cpu_seconds(p) for p in pids) - cpu) / requests * 1000
            connection.close()
    print(f"REST GET /api/topics/wide, {partitions} partitions: {summary(samples)}; console "
          f"+ broker CPU {cpu_ms:.2f} ms per request ({load()})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true",
                        help="seconds, not minutes: checks the script runs, figures mean little")
    args = parser.parse_args(argv)
    if args.tiny:
        scrape_partitions, scrapes, messages, rounds, rest_requests = 50, 5, 2_000, 1, 20
    else:
        scrape_partitions, scrapes, messages, rounds, rest_requests = 1000, 50, 500_000, 5, 500
    print(f"bench_ops{' (tiny)' if args.tiny else ''}: {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-ops-") as directory:
        base = Path(directory)
        bench_scrape(base, scrape_partitions, scrapes)
        bench_produce(base, messages, rounds)
        bench_rest(base, 100, rest_requests)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
