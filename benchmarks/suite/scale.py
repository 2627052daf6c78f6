"""scale: partitions, connections, message sizes and consumer groups, each as a curve.

* partitions: one 3-broker cluster; topics of RF 3 are added (sizes from the
  mode: 1,000 / 5,000 / 10,000 partitions in ``full``), and after each the
  curve gets a point against the replicas each broker hosts: topic creation
  time, Metadata answer time, broker memory and file descriptors, idle CPU of
  the replica fetchers, controller failover after a SIGKILL (until every
  partition the dead broker led has a new leader) and the killed broker's
  restart and recovery (until it serves, until it is back in every ISR).
* connections: idle client connections held open, plus active C producers
  (``-l``: per-record delivery latency) and consumers; p99 produce latency and
  broker memory.
* message sizes: 10 B to 1 MB through rdkafka_performance (or confluent-kafka),
  records/s and MB/s, beside this machine's loopback TCP and file-append rates
  measured in the same run.
* groups: rebalance time when a member joins N, and commits/s sync and async
  (``bench_groups.py``).
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks import bench_client, bench_groups
from benchmarks.suite import peers
from benchmarks.suite.core import Context, Curve, Figure, new_topic, percentile
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.local import LOOPBACK
from simplekafka.coordination.znodes import ZkPaths

MB = 1_000_000
SCALE_BROKERS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "30000"}


def _processes(cluster: LocalCluster) -> dict[int, psutil.Process]:
    return {broker_id: psutil.Process(pid) for broker_id, pid in cluster.broker_pids.items()
            if pid is not None}


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _leaders(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    metadata = admin.list_topics(timeout=60)
    return {(name, index): p.leader for name in topics if name in metadata.topics
            for index, p in metadata.topics[name].partitions.items()}


def _all_led_elsewhere(bootstrap: str, topics: list[str], keys: list[tuple[str, int]],
                       victim: int) -> bool:
    """Whether each of ``keys`` has a leader other than ``victim``: one Metadata request
    (asking once per partition made each check of 3,333 partitions take minutes)."""
    leaders = _leaders(bootstrap, topics)
    return all(leaders.get(key, victim) not in (victim, -1) for key in keys)


def _in_every_isr(bootstrap: str, topics: list[str], broker_id: int) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    metadata = admin.list_topics(timeout=60)
    if any(name not in metadata.topics for name in topics):
        return False  # the broker asked has not heard of every new topic yet
    return all(broker_id in p.isrs for name in topics
               for p in metadata.topics[name].partitions.values())


def _metadata_ms(bootstrap: str, rounds: int = 5) -> float:
    """Median time of a full Metadata round trip (every topic), through confluent-kafka."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.list_topics(timeout=60)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        admin.list_topics(timeout=60)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _wait(condition, what: str, timeout: float) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter() - started


def descriptor_budget_note(replicas_per_broker: int) -> str | None:
    """Say so before a broker would run out of descriptors (about one per replica)."""
    import resource
    import sys

    per_replica = 1
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = replicas_per_broker * per_replica + 200
    if hard != resource.RLIM_INFINITY and needed > hard:
        return (f"{replicas_per_broker:,} replicas per broker need about {needed:,} descriptors "
                f"({per_replica} each on Python {sys.version_info[0]}.{sys.version_info[1]}), "
                f"above the hard limit {hard:,}: raise it (ulimit -Hn) before the run")
    return None


def partitions(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    note = descriptor_budget_note(max(ctx.sizes.partitions))
    if note:
        ctx.note(note)
    points: dict[str, list[float]] = {}
    hosted: list[float] = []
    topics: list[str] = []
    with ctx.own_cluster(3, SCALE_BROKERS) as cluster:
        bootstrap = cluster.bootstrap_servers
        total = 0
        for count in ctx.sizes.partitions:
            step = count - total
            ctx.step(f"scale: creating {step} partitions (RF 3), {count} in all")
            started = time.perf_counter()
            # Thousands of replicas at tens of ms each: allow for it (issue 19 saw 30 ms).
            topics.append(new_topic(bootstrap, f"scale{count}", step, 3,
                                    timeout_s=60 + step * 0.1))
            created = time.perf_counter() - started
            total = count
            _wait(lambda: all(_in_every_isr(bootstrap, topics, b) for b in (1, 2, 3)),
                  "full ISRs", 600)
            processes = _processes(cluster)
            # Idle means after the new partitions settled: the followers' first fetches of
            # them (read in full once, then left out while nothing moves; see
            # fetch_session.py) cost a few seconds of CPU that is not idle cost.
            time.sleep(ctx.sizes.seconds)
            before = {b: _cpu_seconds(p) for b, p in processes.items()}
            time.sleep(ctx.sizes.seconds * 2)
            cpu = max((_cpu_seconds(p) - before[b]) / (ctx.sizes.seconds * 2)
                      for b, p in processes.items())
            point = {
                "creation (ms per partition)": created * 1000 / step,
                "Metadata answer (ms)": _metadata_ms(bootstrap),
                "broker memory (MB)": max(p.memory_info().rss for p in processes.values()) / MB,
                "file descriptors per broker": max(p.num_fds() for p in processes.values()),
                "idle CPU (% of a core)": cpu * 100,
            }
            ctx.step(f"scale: controller failover at {count} partitions")
            point.update(_failover(cluster, topics))
            hosted.append(count)
            for name, value in point.items():
                points.setdefault(name, []).append(value)
    session_s = int(SCALE_BROKERS["zookeeper.session.timeout.ms"]) / 1000
    figures = [Figure("scale", f"{name} at {int(x):,} partitions RF 3", y, "",
                      f"session timeout {session_s:g} s" if "failover" in name else "")
               for name, ys in points.items() for x, y in zip(hosted, ys)]
    curves = [Curve(_plot_of(name), name, hosted, ys, "partitions (RF 3, 3 brokers)",
                    "seconds after the SIGKILL" if "failover" in name else name,
                    log_x=len(hosted) > 2) for name, ys in points.items()]
    return figures, curves


def _failover(cluster: LocalCluster, topics: list[str]) -> dict[str, float]:
    """SIGKILL the controller: time to new leaders; then its restart and recovery."""
    bootstrap = cluster.bootstrap_servers
    victim = cluster.controller_id() or 1
    led = [key for key, leader in _leaders(bootstrap, topics).items() if leader == victim]
    killed_at = time.time()
    cluster.kill(victim)
    others = ",".join(cluster.brokers[b].address for b in cluster.running_brokers())
    times = {"controller failover (s)": _wait(
        lambda: _all_led_elsewhere(others, topics, led, victim), "new leaders", 600)}
    times.update(failover_phases(cluster.zk, led, killed_at))
    started = time.perf_counter()
    cluster.restart(victim)
    times["broker restart until serving (s)"] = time.perf_counter() - started
    _wait(lambda: _in_every_isr(bootstrap, topics, victim), "ISR rejoin", 600)
    times["restart until back in every ISR (s)"] = time.perf_counter() - started
    return times


def failover_phases(zk: Any, led: list[tuple[str, int]], killed_at: float
                    ) -> dict[str, float]:
    """Where a failover's time went, from ZooKeeper's own timestamps (seconds after the
    kill): the new ``/controller`` znode's creation (the dead session expired and a
    survivor won the election) and the last write of a new leader to the state znode
    of a partition the victim led. The rest, up to the failover figure, is the
    brokers applying LeaderAndIsr and UpdateMetadata (and the polling)."""
    _data, controller = zk.get(ZkPaths.CONTROLLER)
    sent = [zk.get_async(ZkPaths.partition_state(topic, index)) for topic, index in led]
    written = max((answer.get()[1].mtime for answer in sent), default=controller.ctime)
    return {"failover: new controller elected (s)": controller.ctime / 1000 - killed_at,
            "failover: last new leader in ZooKeeper (s)": written / 1000 - killed_at}


def _plot_of(name: str) -> str:
    """The failover's phases share its plot."""
    return "scale_controller_failover" if "failover" in name else f"scale_{_stem(name)}"


def _stem(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.split(" (")[0]).strip("_").lower()


def connections(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    cluster = ctx.cluster(1)
    bootstrap = cluster.bootstrap_servers
    broker = next(iter(_processes(cluster).values()))
    rss_before = broker.memory_info().rss
    idle = []
    ctx.step(f"connections: opening {ctx.sizes.idle_connections} idle connections")
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    for _ in range(ctx.sizes.idle_connections):
        idle.append(socket.create_connection((host, int(port)), timeout=30))
    time.sleep(0.5)
    rss_idle = broker.memory_info().rss
    figures = [Figure("connections", f"broker memory with {len(idle)} idle connections",
                      rss_idle / MB, "MB", f"{(rss_idle - rss_before) / 1024 / len(idle):.1f} KB "
                      "per connection")]
    tool = peers.rdkafka_performance()
    try:
        if tool is None:
            ctx.note(peers.missing_rdkafka_note())
            return figures, []
        clients = ctx.sizes.active_clients
        ctx.step(f"connections: {clients} producers and {clients} consumers")
        topic = new_topic(bootstrap, "connections", clients)
        rate = max(100, ctx.sizes.latency_rate // clients)
        count = int(rate * ctx.sizes.latency_seconds)
        consumers = [subprocess.Popen(
            [str(tool), "-C", "-t", topic, "-p", str(i), "-b", bootstrap, "-o", "end", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(clients)]
        files = [ctx.scratch() / f"produce-latency-{i}.txt" for i in range(clients)]
        producers = [subprocess.Popen(
            [str(tool), "-P", "-t", topic, "-p", str(i), "-b", bootstrap, "-s", "100",
             "-r", str(rate), "-c", str(count), "-a", "1", "-l", "-A", str(files[i]), "-q",
             "-X", "linger.ms=0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(clients)]
        peak = 0
        while any(p.poll() is None for p in producers):
            peak = max(peak, broker.memory_info().rss)
            time.sleep(0.1)
        for consumer in consumers:
            consumer.send_signal(signal.SIGINT)
        for consumer in consumers:
            try:
                consumer.wait(10)
            except subprocess.TimeoutExpired:
                consumer.kill()
                consumer.wait()
        delays = [int(v) / 1000 for f in files if f.exists() for v in f.read_text().split()]
        figures += [
            Figure("connections", f"produce p99 ({clients} producers + {clients} consumers "
                   f"+ {len(idle)} idle)", percentile(delays, 0.99), "ms",
                   f"delivery report latency, acks=1, {rate}/s each"),
            Figure("connections", "broker peak memory", peak / MB, "MB"),
        ]
        return figures, []
    finally:
        for sock in idle:
            sock.close()


def loopback_mb_s(total: int) -> float:
    """MB/s one TCP connection on 127.0.0.1 carries (1 MB writes), this machine, now."""
    server = socket.socket()
    server.bind((LOOPBACK, 0))
    server.listen(1)
    chunk = b"\0" * 1_048_576

    def send() -> None:
        with socket.create_connection(server.getsockname()) as out:
            left = total
            while left > 0:  # exactly ``total``: a byte more would meet a closed socket
                out.sendall(chunk[:left] if left < len(chunk) else chunk)
                left -= len(chunk)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    conn, _ = server.accept()
    buffer = bytearray(1_048_576)
    received, started = 0, time.perf_counter()
    while received < total:
        n = conn.recv_into(buffer)
        if not n:
            break
        received += n
    elapsed = time.perf_counter() - started
    conn.close()
    server.close()
    sender.join(10)
    return received / elapsed / MB


def file_append_mb_s(directory: Path, total: int) -> float:
    """MB/s of 1 MB appends to one file (page cache, one fsync at the end), this machine, now."""
    path = directory / "append-limit.bin"
    chunk = b"\0" * 1_048_576
    started = time.perf_counter()
    with open(path, "ab") as out:
        written = 0
        while written < total:
            out.write(chunk)
            written += len(chunk)
        out.flush()
        os.fsync(out.fileno())
    elapsed = time.perf_counter() - started
    path.unlink()
    return written / elapsed / MB


def message_sizes(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    bootstrap = ctx.bootstrap()
    tool = peers.rdkafka_performance()
    budget = ctx.sizes.messages * 100 * 4  # bytes per size point
    sizes, rates = [], []
    client = "rdkafka_performance" if tool else "confluent-kafka"
    large = {"message.max.bytes": "2000000"}
    for size in ctx.sizes.message_sizes:
        count = max(20, min(ctx.sizes.messages, budget // size))
        ctx.step(f"message sizes: {count:,} x {size:,} B through {client}")
        topic = new_topic(bootstrap, f"size{size}")
        if tool is not None:
            rate = peers.c_produce(tool, bootstrap, topic, count, size, settings=large)
        else:
            rate = bench_client.ck_produce(bootstrap, topic, count, b"v" * size, 1_000_000)[0]
        sizes.append(size)
        rates.append(rate)
    ctx.step("message sizes: loopback and file-append limits")
    loopback = loopback_mb_s(max(budget, 64 * MB))
    append = file_append_mb_s(ctx.scratch(), max(budget, 64 * MB))
    mb_s = [r * s / MB for r, s in zip(rates, sizes)]
    figures = [Figure("message sizes", f"{s:,} B records", r, "records/s", f"{m:,.1f} MB/s")
               for s, r, m in zip(sizes, rates, mb_s)]
    figures += [Figure("message sizes", "loopback TCP limit", loopback, "MB/s"),
                Figure("message sizes", "file append limit", append, "MB/s")]
    x_label = "record size (bytes)"
    curves = [
        Curve("message_sizes_records", f"{client}, acks=1", sizes, rates, x_label, "records/s",
              log_x=True, log_y=True),
        Curve("message_sizes_mb", f"{client}, acks=1", sizes, mb_s, x_label, "MB/s",
              log_x=True),
        Curve("message_sizes_mb", "loopback TCP limit", sizes, [loopback] * len(sizes),
              x_label, "MB/s", log_x=True),
        Curve("message_sizes_mb", "file append limit", sizes, [append] * len(sizes),
              x_label, "MB/s", log_x=True),
    ]
    return figures, curves


def groups(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    members = ctx.sizes.group_members
    with ctx.own_cluster(1, {"group.initial.rebalance.delay.ms": "500"}) as cluster:
        ctx.step(f"groups: rebalance, 1 member joins {members}")
        took = bench_groups.rebalance(cluster.bootstrap_servers, members, members * 3)
        ctx.step("groups: commits")
        sync_rate, async_rate = bench_groups.commits(cluster.bootstrap_servers,
                                                     ctx.sizes.seconds)
    return [Figure("groups", f"rebalance when 1 member joins {members}", took * 1000, "ms"),
            Figure("groups", "commits, synchronous", sync_rate, "commits/s"),
            Figure("groups", "commits, asynchronous (64 in flight)", async_rate,
                   "commits/s")], []


def scale(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    figures: list[Figure] = []
    curves: list[Curve] = []
    for part in (partitions, connections, message_sizes, groups):
        more_figures, more_curves = part(ctx)
        figures += more_figures
        curves += more_curves
    return figures, curves
