"""Client quotas on a real broker: a producer held to its byte rate, another not slowed.

One broker; ``producer_byte_rate`` set for client id ``throttled`` (through
AlterClientQuotas). Every client is a process of its own (confluent-kafka,
1,000-byte values, 16 kB batches, acks=1), so no two clients share a Python
interpreter, and each writes to a topic of its own on the same broker.

* ``throttled`` produces as fast as the broker lets it (when its queue is full it
  sleeps in ``poll``, so the loop does not eat a core). Printed: its delivered
  rate over 20 s after one quota window of warm-up (quota.window.num x
  quota.window.size.seconds = 11 s: Kafka lets a new client send that window's
  worth at once) against the quota, and the throttle times its ``throttle_cb``
  was told.
* ``free`` (no quota) produces at a fixed rate (``--free-rate``, 5 MB/s), paced by
  sleeping, first alone and then beside the throttled one: its achieved rate
  and its produce latency (``Message.latency()``: from ``produce()`` to the
  delivery report), p50 and p99. A fixed rate the broker can take, rather than
  flat out, is what makes this a measure of the broker: flat out, the free
  client and the broker compete for the machine's cores, and whatever else
  runs takes its share from both (see docs/further/client-quotas.md).

* last, ``throttled`` reads back what ``free`` wrote, as a consumer (the same quota as
  ``consumer_byte_rate``): its rate over 20 s after warm-up against the quota.

The broker's CPU time over each phase is printed too (from /proc), with the load
average. The quota counts request bytes; delivered values are ~2 % fewer bytes
(record and batch headers), so a rate a little under the quota is the quota held.

    .venv/bin/python benchmarks/bench_quotas.py [--tiny] [--quota B/s] [--free-rate B/s]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

VALUE = b"v" * 1000
TICK = 0.01  # the free client's pacing step, seconds


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process so far (0 if it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- one client, in a process of its own ----------------------------------------------------


def client(bootstrap: str, client_id: str, topic: str, seconds: float, rate: float) -> dict:
    """Produce for ``seconds``: flat out if ``rate`` is 0, else ``rate`` bytes/s paced by
    sleeping. Delivery times (s from start), latencies (ms) and throttles reported."""
    from confluent_kafka import Producer

    delivered: list[float] = []
    latencies: list[float] = []
    throttles: list[float] = []
    start = time.monotonic()

    def on_delivery(err, msg) -> None:
        if err is None:
            delivered.append(time.monotonic() - start)
            latencies.append(msg.latency() * 1000)

    producer = Producer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
        "batch.size": 16384, "linger.ms": 5, "queue.buffering.max.kbytes": 1024,
        "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    producer.list_topics(topic, timeout=10)  # connected before the clock starts
    start = time.monotonic()
    produced = full = 0
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(elapsed * rate / len(VALUE)) if rate else produced + 1
        while produced < due:
            try:
                producer.produce(topic, VALUE, on_delivery=on_delivery)
                produced += 1
            except BufferError:
                full += 1
                producer.poll(0.02)  # queue full: sleep until deliveries free it
                break
        producer.poll(0)
        if rate:
            time.sleep(max(0.0, TICK - (time.monotonic() - start - elapsed)))
    if not rate:
        producer.purge()  # flat out: what is still queued is not part of the run
    producer.flush(10)
    return {"delivered": delivered, "latencies": latencies, "throttles": throttles,
            "produced": produced, "queue_full": full}


def consumer(bootstrap: str, client_id: str, topic: str, seconds: float) -> dict:
    """Read ``topic`` from its start as fast as the broker lets ``client_id``, for
    ``seconds``: when each record arrived (s from the first poll), throttles reported."""
    from confluent_kafka import Consumer

    delivered: list[float] = []
    throttles: list[float] = []
    reader = Consumer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    reader.subscribe([topic])
    while not reader.assignment():  # joined before the clock starts
        reader.poll(0.1)
    start = time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        for msg in reader.consume(500, 0.2):
            if msg.error() is None:
                delivered.append(now - start)
    reader.close()
    return {"delivered": delivered, "latencies": [], "throttles": throttles,
            "produced": 0, "queue_full": 0}


def spawn(bootstrap: str, client_id: str, topic: str, seconds: float,
          rate: float, consume: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, "--client", client_id, "--bootstrap", bootstrap,
         "--topic", topic, "--seconds", str(seconds), "--rate", str(rate),
         *(["--consume"] if consume else [])],
        stdout=subprocess.PIPE, text=True)


def result_of(process: subprocess.Popen, timeout: float) -> dict:
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    if process.returncode != 0:
        raise SystemExit(f"a client process failed (exit {process.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def rate_between(result: dict, start: float, end: float) -> float:
    """Delivered value bytes per second between two times of a client's run."""
    count = sum(1 for t in result["delivered"] if start <= t < end)
    return count * len(VALUE) / (end - start)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def free_line(label: str, result: dict, seconds: float, broker_cpu: float) -> str:
    lat = result["latencies"]
    return (f"  {label:<30} {rate_between(result, 0, seconds) / 1e6:5.2f} MB/s, latency "
            f"p50 {percentile(lat, 50):6.1f} ms p99 {percentile(lat, 99):6.1f} ms, "
            f"queue full {result['queue_full']} times, throttled "
            f"{len(result['throttles'])} times; broker CPU {broker_cpu / seconds:.2f} s/s; "
            f"{load()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true",
                        help="a few seconds, for the suite (figures not meaningful)")
    parser.add_argument("--quota", type=int, default=500_000, help="producer_byte_rate")
    parser.add_argument("--free-rate", type=float, default=5e6,
                        help="the free client's fixed rate, bytes/s")
    parser.add_argument("--client", help=argparse.SUPPRESS)  # one client's process
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--consume", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        if args.consume:
            print(json.dumps(consumer(args.bootstrap, args.client, args.topic, args.seconds)))
        else:
            print(json.dumps(client(args.bootstrap, args.client, args.topic, args.seconds,
                                    args.rate)))
        return 0
    warmup, measured, free_seconds = (0.0, 3.0, 1.0) if args.tiny else (11.0, 20.0, 10.0)
    quota = 200_000 if args.tiny else args.quota
    free_rate = 1e6 if args.tiny else args.free_rate
    print(f"bench_quotas{' (tiny)' if args.tiny else ''}: one broker, each client a process "
          f"of its own; {load()}")
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(brokers=1, base_dir=Path(tmp)) as cluster:
        bootstrap = cluster.bootstrap_servers
        broker_pid = next(iter(cluster.broker_pids.values()))
        with Admin(bootstrap) as admin:
            for topic in ("quota-throttled", "quota-free"):
                admin.create_topic(topic, num_partitions=1, replication_factor=1)
            admin.alter_client_quotas({"client-id": "throttled"},
                                      {"producer_byte_rate": quota, "consumer_byte_rate": quota})
        time.sleep(1)  # every broker follows /config/changes

        cpu = cpu_seconds(broker_pid)
        alone = result_of(spawn(bootstrap, "free", "quota-free", free_seconds, free_rate),
                          free_seconds + 60)
        cpu_alone, cpu = cpu_seconds(broker_pid) - cpu, cpu_seconds(broker_pid)

        throttled_process = spawn(bootstrap, "throttled", "quota-throttled",
                                  warmup + measured, 0)
        try:
            time.sleep(max(0.0, warmup + measured / 2 - free_seconds / 2))
            cpu = cpu_seconds(broker_pid)
            beside = result_of(spawn(bootstrap, "free", "quota-free", free_seconds,
                                     free_rate), free_seconds + 60)
            cpu_beside = cpu_seconds(broker_pid) - cpu
        finally:
            throttled = result_of(throttled_process, warmup + measured + 60)
        held = rate_between(throttled, warmup, warmup + measured)
        waits = sorted(throttled["throttles"]) or [0.0]
        print(f"throttled client (flat out), {measured:.0f} s after {warmup:.0f} s warm-up: "
              f"{held / 1000:.1f} kB/s against a quota of {quota / 1000:.1f} kB/s "
              f"({(held / quota - 1) * 100:+.1f} %); whole run "
              f"{rate_between(throttled, 0, warmup + measured) / 1000:.1f} kB/s; "
              f"throttle_time_ms reported {len(throttled['throttles'])} times, median "
              f"{waits[len(waits) // 2] * 1000:.0f} ms; {load()}")
        print(f"free client, paced at {free_rate / 1e6:.2f} MB/s for {free_seconds:.0f} s:")
        print(free_line("alone", alone, free_seconds, cpu_alone))
        print(free_line("beside the throttled client", beside, free_seconds, cpu_beside))

        # The same quota on Fetch: the throttled client id reads back what the free one
        # wrote (more than it may read in the run), as a consumer of a group of its own.
        read = result_of(spawn(bootstrap, "throttled", "quota-free", warmup + measured, 0,
                               consume=True), warmup + measured + 60)
        got = rate_between(read, warmup, warmup + measured)
        waits = sorted(read["throttles"]) or [0.0]
        print(f"throttled consumer, {measured:.0f} s after {warmup:.0f} s warm-up: "
              f"{got / 1000:.1f} kB/s against a quota of {quota / 1000:.1f} kB/s "
              f"({(got / quota - 1) * 100:+.1f} %); throttle_time_ms reported "
              f"{len(read['throttles'])} times, median {waits[len(waits) // 2] * 1000:.0f} ms; "
              f"{load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
