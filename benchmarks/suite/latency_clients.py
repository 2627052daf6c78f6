"""Latency the way a user meets it: Python clients in two processes, with Redis Streams beside.

The lead table of ``simplekafka bench latency``. For each system a producer
process and a consumer process (``multiprocessing``, spawned), the producer
pacing by sleeping to the next millisecond and sending the records that fell
due, never spinning (a spinning pacer takes a core from the broker on a
2-core machine: that is what made ``rdkafka_performance -l``'s tail). Each
record carries its send time (the host's wall clock, one clock for every
process, as ``LATENCY:<µs>``: rdkafka_performance -l's stamp, which the
per-stage traces ``benchmarks/latency_stages.py`` and
``benchmarks/replication_stages.py --python-clients`` find in the brokers);
the consumer subtracts it from the time the record reached it.

- SimpleKafka through confluent-kafka: ``linger.ms=1``, consumers with
  ``fetch.wait.max.ms=100`` and ``fetch.queue.backoff.ms=0``; one broker with
  acks=1, and three brokers, RF 3, acks=all, ``min.insync.replicas=2``.
  And the one broker again with ``linger.ms=0``: the producer then sends each
  millisecond's records at once, as the Redis producer does, so that row's
  ratio to Redis is the broker's hop against Redis's, without the
  millisecond ``linger.ms=1`` holds each record in the producer.
- Redis Streams through redis-py against Debian's ``redis-server`` without
  persistence: each millisecond's records ``XADD``ed in one pipeline,
  ``XREAD BLOCK`` in the consumer.

The systems take turns within each run, so they share the same minutes of
the machine; the figure is the median over runs of each percentile, and the
ratios are taken against Redis in the same run.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.suite import peers
from benchmarks.suite.core import Context, Curve, Figure, load_average, new_topic, percentile
from simplekafka.cluster.local import LOOPBACK

SIZE = 100
REDIS = "Redis Streams (redis-py)"
ONE_BROKER = "SimpleKafka, 1 broker, acks=1"
# The same broker, the producer sending each millisecond's records at once as Redis's does:
# linger.ms=1 holds every record about a millisecond, which the broker is not answerable for.
NO_LINGER = "SimpleKafka, 1 broker, acks=1, linger.ms=0"
RF3 = "SimpleKafka, 3 brokers RF 3, acks=all"
SYSTEMS = (REDIS, ONE_BROKER, NO_LINGER, RF3)
TITLE = "Python clients, two processes"
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))
PRODUCER = {"linger.ms": 1}
CONSUMER = {"fetch.wait.max.ms": 100, **peers.CONSUMER_SETTINGS}
_STAMP = b"LATENCY:%d;"


def ticks(rate: int, total: int, tick: float = 0.001) -> Iterator[int]:
    """How many records fell due, once a ``tick``, sleeping to the next one in between.

    Both systems' producers pace with this, so they send the same groups at
    the same moments. Records due during an overshot sleep leave together, as
    a real producer's would.
    """
    started = time.perf_counter()
    sent = 0
    while sent < total:
        elapsed = time.perf_counter() - started
        due = min(total, int(elapsed * rate) + 1)
        if due > sent:
            yield due - sent
            sent = due
        if sent < total:
            elapsed = time.perf_counter() - started
            time.sleep(max(0.0, (int(elapsed / tick) + 1) * tick - elapsed))


def stamped() -> bytes:
    """A 100-byte record that starts with its send time, ``LATENCY:<µs>;``."""
    return (_STAMP % (time.time_ns() // 1000)).ljust(SIZE, b"p")


def delay_ms(value: bytes, received_ns: int) -> float:
    """Milliseconds from the record's stamp to ``received_ns`` (``time.time_ns()``)."""
    return (received_ns / 1000 - int(value[8:value.index(b";")])) / 1000


# -- the four process bodies (run in spawned children) --------------------------------------


def kafka_producer(bootstrap: str, topic: str, acks: str, linger_ms: float, rate: int,
                   total: int, go: Any, results: Any) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, **PRODUCER,
                         "linger.ms": linger_ms})
    producer.list_topics(topic, timeout=30)  # connected, and the leader is known
    go.wait(120)
    cpu = time.process_time()
    for due in ticks(rate, total):
        for _ in range(due):
            producer.produce(topic, stamped(), partition=0)
        producer.poll(0)
    producer.flush(60)
    results.put(("producer", time.process_time() - cpu, []))


def kafka_consumer(bootstrap: str, topic: str, total: int, seconds: float, ready: Any,
                   results: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}",
                         "enable.auto.commit": False, **CONSUMER})
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumer.poll(1.0)  # connected; its fetch for offset 0 is parked at the empty log's end
    ready.set()
    cpu = time.process_time()
    delays: list[float] = []
    deadline = time.monotonic() + seconds
    while len(delays) < total and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            delays.append(delay_ms(message.value(), time.time_ns()))
    results.put(("consumer", time.process_time() - cpu, delays))
    consumer.close()


def redis_producer(port: int, stream: str, rate: int, total: int, go: Any,
                   results: Any) -> None:
    import redis

    client = redis.Redis(host=LOOPBACK, port=port)
    client.ping()
    go.wait(120)
    cpu = time.process_time()
    for due in ticks(rate, total):
        pipeline = client.pipeline(transaction=False)
        for _ in range(due):
            pipeline.xadd(stream, {b"v": stamped()})
        pipeline.execute()
    client.close()
    results.put(("producer", time.process_time() - cpu, []))


def redis_consumer(port: int, stream: str, total: int, seconds: float, ready: Any,
                   results: Any) -> None:
    import redis

    client = redis.Redis(host=LOOPBACK, port=port)
    client.ping()
    ready.set()
    cpu = time.process_time()
    delays: list[float] = []
    last = b"0-0"
    deadline = time.monotonic() + seconds
    while len(delays) < total and time.monotonic() < deadline:
        for _name, entries in client.xread({stream: last}, count=1000, block=100) or ():
            received = time.time_ns()
            for entry_id, fields in entries:
                delays.append(delay_ms(fields[b"v"], received))
                last = entry_id
    results.put(("consumer", time.process_time() - cpu, delays))
    client.close()


# -- the harness ----------------------------------------------------------------------------


def two_processes(producer: Callable[..., None], producer_args: tuple,
                  consumer: Callable[..., None], consumer_args: tuple,
                  rate: int, seconds: float) -> tuple[list[float], dict[str, float]]:
    """Delays (ms) the consumer process saw, and each process's CPU share of a core.

    The consumer connects and parks first; the producer connects, then waits
    for the word to start, so neither's set-up falls inside the measurement.
    """
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    ready, go, results = spawn.Event(), spawn.Event(), spawn.Queue()
    total = max(1, int(rate * seconds))
    budget = seconds * 5 + 60
    children = [spawn.Process(target=consumer,
                              args=(*consumer_args, total, budget, ready, results),
                              daemon=True),
                spawn.Process(target=producer, args=(*producer_args, rate, total, go, results),
                              daemon=True)]
    found: dict[str, tuple[float, list[float]]] = {}
    try:
        for child in children:
            child.start()
        waited = time.monotonic() + 120
        while not ready.wait(0.5):
            if time.monotonic() > waited or any(c.exitcode is not None for c in children):
                raise RuntimeError("the consumer process did not get ready: exit codes "
                                   f"{[c.exitcode for c in children]}")
        go.set()
        started = time.monotonic()
        deadline = started + budget + 30
        while len(found) < 2 and time.monotonic() < deadline:
            try:
                role, cpu, delays = results.get(timeout=1.0)
            except queue.Empty:
                if any(c.exitcode not in (None, 0) for c in children):
                    raise RuntimeError("a client process failed: exit codes "
                                       f"{[c.exitcode for c in children]}") from None
                continue
            found[role] = (cpu, delays)
        wall = max(time.monotonic() - started, 1e-9)
        for child in children:
            child.join(30)
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join(10)
    if "consumer" not in found:
        raise RuntimeError("the consumer process reported nothing")
    shares = {role: cpu / wall for role, (cpu, _) in found.items()}
    return found["consumer"][1], shares


def kafka_run(bootstrap: str, topic: str, acks: str, rate: int, seconds: float,
              linger_ms: float = PRODUCER["linger.ms"]) -> tuple[list[float], dict[str, float]]:
    return two_processes(kafka_producer, (bootstrap, topic, acks, linger_ms), kafka_consumer,
                         (bootstrap, topic), rate, seconds)


def redis_run(port: int, stream: str, rate: int, seconds: float
              ) -> tuple[list[float], dict[str, float]]:
    return two_processes(redis_producer, (port, stream), redis_consumer, (port, stream),
                         rate, seconds)


def redis_missing() -> str | None:
    """Why the Redis rows cannot be measured here, or None."""
    if shutil.which("redis-server") is None:
        return peers.missing_redis_note()
    try:
        import redis  # noqa: F401
    except ImportError:
        return ("redis-py not installed: Redis rows left out (it is in the bench extra; "
                "tools/bootstrap.sh installs simplekafka[all])")
    return None


def medians(runs: list[list[float]]) -> dict[str, float]:
    """Each percentile's median over the runs (ms)."""
    runs = [run for run in runs if run]
    if not runs:
        return {}
    return {name: statistics.median(percentile(run, f) for run in runs)
            for name, f in PERCENTILES}


def clients(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    """The lead table: Redis, one broker, RF 3, taking turns within each run."""
    from benchmarks.suite import latency
    from benchmarks.suite.replication import THREE_BROKERS

    rate, seconds, runs = ctx.sizes.latency_rate, ctx.sizes.client_seconds, ctx.sizes.client_runs
    load_start = load_average()
    single = ctx.bootstrap()
    three = ctx.cluster(3, THREE_BROKERS)
    missing = redis_missing()
    if missing:
        ctx.note(missing)
    samples: dict[str, list[list[float]]] = {name: [] for name in SYSTEMS}
    shares: dict[str, list[dict[str, float]]] = {name: [] for name in SYSTEMS}

    def measure(name: str, run: int, port: int) -> tuple[list[float], dict[str, float]]:
        if name == REDIS:
            return redis_run(port, f"latency-{run}", rate, seconds)
        if name in (ONE_BROKER, NO_LINGER):
            return kafka_run(single, new_topic(single, "latency-clients"), "1", rate, seconds,
                             linger_ms=0 if name == NO_LINGER else PRODUCER["linger.ms"])
        topic = new_topic(three.bootstrap_servers, "latency-clients-rf3", 1, 3,
                          {"min.insync.replicas": "2"})
        three.wait_for_isr(topic, 0, [1, 2, 3])
        return kafka_run(three.bootstrap_servers, topic, "all", rate, seconds)

    server = shutil.which("redis-server")
    with (peers.redis_server(server) if server and not missing
          else contextlib.nullcontext()) as port:
        for run in range(runs):  # the systems take turns: each run's minutes are shared
            for name in SYSTEMS if port is not None else SYSTEMS[1:]:
                ctx.step(f"latency: {name}, run {run + 1}")
                delays, share = measure(name, run, port)
                samples[name].append(_complete(ctx, name, run, delays, rate, seconds))
                shares[name].append(share)
    load_end = load_average()
    table = {name: medians(runs_) for name, runs_ in samples.items()}
    figures: list[Figure] = []
    curves: list[Curve] = []
    for name in SYSTEMS:
        if not samples[name]:
            continue
        figures += latency.summarize("latency", f"{TITLE}: {name}", samples[name])
        curves.append(latency.histogram("latency_clients", name, samples[name]))
        for role in ("producer", "consumer"):
            values = [share[role] for share in shares[name] if role in share]
            if values:
                figures.append(Figure("latency", f"{TITLE}: {name}, {role} process CPU",
                                      100 * statistics.median(values), "% of a core",
                                      "paced by sleeping: a spinning pacer would show 100"))
    figures += ratios(table)
    how = method(rate, seconds, runs, load_start, load_end)
    figures += [Figure("latency", f"{TITLE}: load average at the start", load_start[0], "",
                       "one minute"),
                Figure("latency", f"{TITLE}: load average at the end", load_end[0], "",
                       "the run's own brokers and clients included")]
    ctx.note(f"{TITLE}: {how}")
    text = markdown(table, how, ctx.mode)
    ctx.tables.append(text)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    (ctx.out_dir / "latency_clients.md").write_text(text)
    return figures, curves


def _complete(ctx: Context, name: str, run: int, delays: list[float], rate: int,
              seconds: float) -> list[float]:
    """The run's delays; a note if records did not all arrive (a percentile over fewer)."""
    total = max(1, int(rate * seconds))
    if len(delays) < total:
        ctx.note(f"{TITLE}: {name}, run {run + 1}: {len(delays):,} of {total:,} records "
                 "arrived in time")
    return delays


def ratios(table: dict[str, dict[str, float]]) -> list[Figure]:
    """SimpleKafka against Redis, and RF 3 against one broker, percentile by percentile."""
    pairs = [(ONE_BROKER, REDIS, "1 broker / Redis"),
             (NO_LINGER, REDIS, "1 broker linger.ms=0 / Redis"), (RF3, REDIS, "RF 3 / Redis"),
             (RF3, ONE_BROKER, "RF 3 / 1 broker")]
    figures = []
    for top, bottom, label in pairs:
        if table.get(top) and table.get(bottom):
            for name in ("p50", "p99", "p99.9"):
                figures.append(Figure("latency", f"{TITLE}: {label} {name}",
                                      table[top][name] / table[bottom][name], "x",
                                      "medians over runs, same run"))
    return figures


def method(rate: int, seconds: float, runs: int, start: tuple[float, float, float],
           end: tuple[float, float, float]) -> str:
    return (f"a producer process and a consumer process per system, the producer "
            f"pacing by sleeping to each millisecond (never spinning), {rate:,} records/s of "
            f"{SIZE} B for {seconds:g} s, median of {runs} run{'s' if runs != 1 else ''}, "
            f"the systems taking turns; {os.cpu_count()} cores; load average "
            f"{start[0]:.2f} at the start, {end[0]:.2f} at the end")


def markdown(table: dict[str, dict[str, float]], how: str, mode: str) -> str:
    """The lead table as the docs show it: one row per system, with the ratio to Redis."""
    redis = table.get(REDIS)
    lines = [f"Latency, {TITLE} (`{mode}` sizes): {how}.", "",
             "| system | p50 ms | p99 ms | p99.9 ms | max ms | p99 / Redis |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in SYSTEMS:
        row = table.get(name)
        if not row:
            lines.append(f"| {name} | not measured | | | | |")
            continue
        ratio = f"{row['p99'] / redis['p99']:.2f}" if redis else "-"
        lines.append(f"| {name} | " + " | ".join(f"{row[q]:.2f}" for q, _ in PERCENTILES)
                     + f" | {ratio} |")
    if table.get(RF3) and table.get(ONE_BROKER):
        lines += ["", f"RF 3 acks=all / 1 broker at p99: "
                  f"{table[RF3]['p99'] / table[ONE_BROKER]['p99']:.2f}"]
    return "\n".join(lines) + "\n"
