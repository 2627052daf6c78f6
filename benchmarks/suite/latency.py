"""latency: end to end, produce to consume, 100-byte records at a steady rate.

It leads with the figure a user meets (``latency_clients``): Python clients
in two processes that pace by sleeping, one broker and three brokers RF 3
acks=all, Redis Streams in the same harness and the same minutes, and the
ratios between them. The second table comes from librdkafka's C
``rdkafka_performance -l`` (a paced producer and a consumer, two processes,
``linger.ms=0``), first with its spinning pacing thread at SCHED_IDLE, then
at normal priority; every delay is kept and drawn as a histogram. Beside
it, the same load through confluent-kafka's Python binding twice: producer
and consumer in one Python process (the old ``bench_broker.py`` way: two
clients and a pacing loop share one GIL) and in two processes. The difference between
those two is the benchmark's own share of the tail, not the broker's. The
broker's garbage collections during the C client's runs (its
``python_gc_pause_seconds`` metric, scraped before and after) say how much of
the tail the collector could be. A probe that sleeps 1 ms again and again
(``wakeup``), on the idle machine and during the C client's runs, gives the
floor: how late any thread here wakes, whatever the broker does.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import statistics
import subprocess
import time

from benchmarks import bench_broker
from benchmarks.suite import cpu_share, latency_clients, peers, wakeup
from benchmarks.suite.core import (
    Context,
    Curve,
    Figure,
    histogram_bins,
    new_topic,
    percentile,
)

SIZE = 100
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))


def summarize(scenario: str, label: str, runs: list[list[float]]) -> list[Figure]:
    """Median over runs of each percentile (ms), as the issue's figures are taken."""
    runs = [run for run in runs if run]
    if not runs:
        return [Figure(scenario, f"{label}: no records arrived", float("nan"), "ms")]
    figures = []
    for name, fraction in PERCENTILES:
        values = [percentile(run, fraction) for run in runs]
        note = f"median of {len(runs)} runs" if len(runs) > 1 else "one run"
        if len(runs) > 1:
            note += f" (range {min(values):.2f}-{max(values):.2f})"
        figures.append(Figure(scenario, f"{label} {name}", statistics.median(values), "ms",
                              note))
    return figures


def histogram(plot: str, label: str, runs: list[list[float]]) -> Curve:
    """Every run's delays together, binned (the JSON keeps counts, not samples)."""
    edges, counts = histogram_bins([delay for run in runs for delay in run])
    return Curve(plot, label, edges, counts, "end-to-end latency (ms)", "records",
                 log_x=True, log_y=True, kind="hist")


def c_runs(ctx: Context, bootstrap: str, replication: int, acks: str,
           settings: dict[str, str] | None = None,
           share: cpu_share.CpuShare | None = None,
           idle_pacer: bool = False) -> list[list[float]]:
    tool = peers.rdkafka_performance()
    if tool is None:
        ctx.note(peers.missing_rdkafka_note())
        return []
    runs = []
    for run in range(ctx.sizes.runs):
        ctx.step(f"latency: rdkafka_performance -l, RF {replication}, run {run + 1}")
        topic = new_topic(bootstrap, f"latency-rf{replication}", 1, replication,
                          {"min.insync.replicas": "2"} if replication > 1 else {})
        with share if share is not None else contextlib.nullcontext():
            runs.append(peers.c_latency(tool, bootstrap, topic, ctx.sizes.latency_rate,
                                        ctx.sizes.latency_seconds, SIZE, ctx.scratch(),
                                        acks=acks, settings=settings,
                                        idle_pacer=idle_pacer))
    return runs


def broker_syscalls(ctx: Context, pid: int, bootstrap: str) -> list[Figure]:
    """System calls the broker makes per produce request at the latency load (strace -c -f).

    Counts, not times: how many requests one read brings and how many responses
    one write carries (many, once requests queue up: Twisted joins buffered
    writes), how often the reactor re-arms epoll, whether anything fsyncs in
    the request path. Per produce request, because how many records a request
    carries depends on the machine's speed.
    """
    tool = peers.rdkafka_performance()
    strace = shutil.which("strace")
    if tool is None or strace is None:
        ctx.note("strace or rdkafka_performance missing: no system-call counts")
        return []
    ctx.step("latency: counting the broker's system calls (strace -c)")
    topic = new_topic(bootstrap, "latency-strace")
    report = ctx.scratch() / "strace.txt"
    tracer = subprocess.Popen([strace, "-f", "-c", "-o", str(report), "-p", str(pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # attached to every thread
        delays = peers.c_latency(tool, bootstrap, topic, ctx.sizes.latency_rate,
                                 ctx.sizes.latency_seconds, SIZE, ctx.scratch())
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
    counts = {}
    for line in report.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1].isidentifier() and parts[3].isdigit():
            counts[parts[-1]] = int(parts[3])
    # One log write per produce request (a request carries one batch per partition, and
    # the latency load has one partition): pwritev2 counts the produce requests.
    requests = max(counts.get("pwritev2", 0), 1)
    return [Figure("latency", f"broker {name} calls per produce request",
                   counts[name] / requests, "calls",
                   f"{counts[name]:,} calls, {requests:,} produce requests, "
                   f"{len(delays):,} records (strace -c)")
            for name in ("recvfrom", "sendto", "epoll_wait", "epoll_ctl", "pread64",
                         "fsync", "futex") if name in counts]



def gc_pauses(metrics_url: str) -> dict[str, float]:
    """The broker's garbage collections so far (python_gc_pause_seconds, all generations)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(metrics_url, timeout=10) as answer:
        text = answer.read().decode()
    found = {"count": 0.0, "over 1 ms": 0.0, "seconds": 0.0, "longest": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "python_gc_pause_seconds_count":
                found["count"] += sample.value
            elif sample.name == "python_gc_pause_seconds_sum":
                found["seconds"] += sample.value
            elif sample.name == "python_gc_pause_seconds_bucket":
                if sample.labels["le"] == "0.001":
                    found["over 1 ms"] -= sample.value
                elif sample.labels["le"] == "+Inf":
                    found["over 1 ms"] += sample.value
            elif sample.name == "python_gc_pause_max_seconds":
                found["longest"] = sample.value
    return found


def gc_figures(before: dict[str, float], after: dict[str, float], records: int) -> list[Figure]:
    """What the collector cost the broker while the C client's records went through."""
    note = f"broker, during the C client runs ({records:,} records)"
    return [Figure("latency", "broker GC pauses", after["count"] - before["count"], "pauses",
                   note),
            Figure("latency", "broker GC pauses over 1 ms",
                   after["over 1 ms"] - before["over 1 ms"], "pauses", note),
            Figure("latency", "broker GC time", (after["seconds"] - before["seconds"]) * 1000,
                   "ms", note),
            Figure("latency", "broker longest GC pause since start", after["longest"] * 1000,
                   "ms", "python_gc_pause_max_seconds")]


def latency(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    bootstrap = ctx.bootstrap()
    sizes = ctx.sizes
    figures: list[Figure] = []
    curves: list[Curve] = []
    metrics_url = (ctx.cluster(1).metrics_urls.get(1) if ctx.bootstrap_server is None
                   else None)
    before = gc_pauses(metrics_url) if metrics_url else None
    broker_pid = ctx.cluster(1).broker_pids[1] if ctx.bootstrap_server is None else None
    share = cpu_share.CpuShare(broker_pid) if broker_pid is not None else None
    # The lead table: Python clients in two processes, Redis Streams beside (latency_clients).
    lead_figures, lead_curves = latency_clients.clients(ctx)
    figures += lead_figures
    curves += lead_curves
    ctx.step("latency: wake-up lateness on the idle machine")
    figures += wakeup.figures("idle machine", wakeup.idle_floor(sizes.latency_seconds))
    with wakeup.wakeups() as late:
        runs = c_runs(ctx, bootstrap, 1, "1", share=share)
    figures += wakeup.figures("during the C client's runs", late)
    if before is not None and metrics_url and runs:
        figures += gc_figures(before, gc_pauses(metrics_url), sum(len(r) for r in runs))
    if share is not None and runs:
        figures += cpu_share.figures(share, sum(len(r) for r in runs),
                                     "C client, 1 broker, acks=1")
    if runs:
        # The second table, the C tool's: first with its pacing loop, which spins a core
        # (peers.idle_priority), at SCHED_IDLE, so the broker and the clients' I/O threads
        # never wait behind it for a CPU; then at normal priority, how much of the tail that is.
        idle = c_runs(ctx, bootstrap, 1, "1", idle_pacer=True)
        label = "C client, pacing thread at SCHED_IDLE"
        figures += summarize("latency", label, idle)
        curves.append(histogram("latency_pacer", label, idle))
        curves.append(histogram("latency_pacer", "C client, pacing thread at normal priority",
                                runs))
        figures += summarize("latency", "C client, 1 broker, acks=1", runs)
        curves.append(histogram("latency_histogram", "C client, 1 broker, acks=1", runs))
        # librdkafka leaves Nagle on by default; the broker sets TCP_NODELAY on its side.
        nodelay = c_runs(ctx, bootstrap, 1, "1", {"socket.nagle.disable": "true"})
        label = "C client, socket.nagle.disable=true"
        figures += summarize("latency", label, nodelay)
        curves.append(histogram("latency_nagle", label, nodelay))
        curves.append(histogram("latency_nagle", "C client, librdkafka default (Nagle on)",
                                runs))
    if ctx.bootstrap_server is None:
        pid = ctx.cluster(1).broker_pids[1]
        if pid is not None:
            figures += broker_syscalls(ctx, pid, bootstrap)
    for linger_ms in (0, 1):
        ctx.step(f"latency: confluent-kafka, one process, linger.ms={linger_ms}")
        topic = new_topic(bootstrap, "latency-py1")
        one = bench_broker.bench_latency(bootstrap, topic, sizes.latency_rate,
                                         sizes.latency_seconds, SIZE, linger_ms=linger_ms)
        ctx.step(f"latency: confluent-kafka, two processes, linger.ms={linger_ms}")
        topic = new_topic(bootstrap, "latency-py2")
        two, _shares = latency_clients.kafka_run(bootstrap, topic, "1", sizes.latency_rate,
                                                 sizes.latency_seconds, linger_ms)
        label = f"confluent-kafka linger.ms={linger_ms}"
        figures += summarize("latency", f"{label}, one process", [one])
        figures += summarize("latency", f"{label}, two processes", [two])
        curves.append(histogram("latency_python", f"{label}, one process", [one]))
        curves.append(histogram("latency_python", f"{label}, two processes", [two]))
    return figures, curves
