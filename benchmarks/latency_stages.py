"""Where a record's end-to-end latency goes, stage by stage, with one histogram per stage.

Runs ``rdkafka_performance -l`` (10,000 records/s of 100 bytes, linger.ms=0,
acks=1, as the latency scenario does) against one broker that
``benchmarks/latency_trace/sitecustomize.py`` instruments, and joins, record
by record, the producer's stamp, the broker's timestamps and the consumer's
delay (all on this machine's wall clock):

  producer -> broker poll   stamp to the broker's epoll return before the read:
                            the producer's queue and I/O thread, loopback, the
                            broker waiting for a CPU to wake up on
  poll -> read              other events of the same reactor turn before this read
  wait for consumer fetch   appended while no fetch was parked: until the
                            consumer's next fetch arrived
  broker handling           read (or that fetch's arrival) to the answer's write
  write -> send             the answer in Twisted's buffer until its send
  send -> consumer          loopback, the consumer's I/O and application threads

Prints percentiles per stage and, for the records at or above the run's p99,
the mean of each stage (what the tail is made of); draws the histograms into
``--out``; prints the load average. Figures, never asserts.

``--python-clients``: the load of the latency scenario's lead table instead
(``benchmarks/suite/latency_clients.py``: confluent-kafka in a producer
process pacing by sleeping, ``linger.ms=1``, and a consumer process), whose
records carry the same stamp.

    .venv/bin/python benchmarks/latency_stages.py [--seconds 5] [--out DIR]
        [--python-clients] [-X librdkafka.key=value ...]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.suite import cpu_share, latency_clients, peers  # noqa: E402
from benchmarks.suite.core import new_topic, percentile  # noqa: E402
from simplekafka.cluster import LocalCluster  # noqa: E402

HOOK = Path(__file__).resolve().parent / "latency_trace"
STAGES = ("producer -> broker poll", "poll -> read", "wait for consumer fetch",
          "broker handling", "write -> send", "send -> consumer", "end to end")


def traced_run(seconds: float, rate: int, settings: dict[str, str], trace: Path,
               python_clients: bool = False) -> tuple[list[float], cpu_share.CpuShare]:
    """One run against a fresh traced broker: the consumer's delays (ms), in order."""
    tool = peers.rdkafka_performance()
    if tool is None and not python_clients:
        sys.exit(peers.missing_rdkafka_note())
    os.environ["SIMPLEKAFKA_STAGE_TRACE"] = str(trace)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HOOK), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        with LocalCluster(brokers=1) as cluster:
            topic = new_topic(cluster.bootstrap_servers, "stages", 1, 1)
            share = cpu_share.CpuShare(cluster.broker_pids[1])
            with share:
                if python_clients:
                    delays, _shares = latency_clients.kafka_run(
                        cluster.bootstrap_servers, topic, "1", rate, seconds)
                else:
                    assert tool is not None
                    delays = peers.c_latency(tool, cluster.bootstrap_servers, topic, rate,
                                             seconds, 100, trace, settings=settings)
    finally:
        del os.environ["SIMPLEKAFKA_STAGE_TRACE"]
    return delays, share


def stages_of(trace: Path, delays: list[float]) -> dict[str, list[float]]:
    """Each record's time (ms) in each stage; records the broker traced whole only."""
    rows = sorted(tuple(float(x) for x in line.split())
                  for f in trace.glob("records-*.txt") for line in f.read_text().splitlines())
    fetches = sorted(float(line) for f in trace.glob("fetches-*.txt")
                     for line in f.read_text().split())
    found: dict[str, list[float]] = {name: [] for name in STAGES}
    if len(rows) != len(delays):  # the consumer's file is in produce order: pair by index
        print(f"note: {len(rows)} records traced, {len(delays)} delays: pairing the first "
              f"{min(len(rows), len(delays))}")
    for (stamp, polled, read, written, sent), delay in zip(rows, delays, strict=False):
        if not (written and sent):
            continue
        produced = stamp / 1e6
        consumed = produced + delay / 1000
        before = bisect.bisect_right(fetches, written) - 1
        fetch_arrival = fetches[before] if before >= 0 else read
        waited = max(0.0, fetch_arrival - read)
        for name, seconds in zip(STAGES, (
                polled - produced, read - polled, waited, written - read - waited,
                sent - written, consumed - sent, consumed - produced), strict=True):
            found[name].append(seconds * 1000)
    return found


def report(found: dict[str, list[float]]) -> dict:
    total = found["end to end"]
    if not total:
        sys.exit("no record was traced end to end")
    print(f"{'stage':26} {'p50':>8} {'p99':>8} {'p99.9':>8} {'max':>8}   ms")
    table = {}
    for name, values in found.items():
        row = {q: percentile(values, f) for q, f in
               (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))}
        table[name] = row
        print(f"{name:26} " + " ".join(f"{row[q]:8.3f}" for q in row))
    threshold = percentile(total, 0.99)
    tail = [i for i, value in enumerate(total) if value >= threshold]
    share = {name: sum(found[name][i] for i in tail) / len(tail) for name in STAGES}
    print(f"the {len(tail)} records at or above p99 ({threshold:.2f} ms), mean ms per stage:")
    for name, mean in share.items():
        print(f"  {name:26} {mean:8.3f}")
    return {"percentiles": table, "tail_mean_ms": share, "tail_records": len(tail),
            "records": len(total)}


def draw(found: dict[str, list[float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy

    # Common log-spaced bins from 1 µs; a stage a record did not wait in counts at 1 µs.
    edges = numpy.geomspace(0.001, max(max(v) for v in found.values()) * 1.05, 70)
    figure, axes = plt.subplots(figsize=(9, 5))
    for name, values in found.items():
        counts, _ = numpy.histogram(numpy.clip(values, 0.001, None), bins=edges)
        axes.stairs(counts, edges, label=name, linewidth=2.5 if name == "end to end" else 1.2)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("ms")
    axes.set_ylabel("records")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--python-clients", action="store_true",
                        help="the latency scenario's lead load: confluent-kafka in two "
                             "processes, pacing by sleeping, linger.ms=1")
    parser.add_argument("-X", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a librdkafka setting for both clients")
    args = parser.parse_args()
    settings = dict(s.split("=", 1) for s in args.settings)
    load = os.getloadavg()
    clients = ("confluent-kafka, two processes, linger.ms=1" if args.python_clients else
               f"rdkafka_performance -l, linger.ms=0 {settings}")
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{args.rate:,} records/s for {args.seconds:g} s, acks=1, {clients}")
    with tempfile.TemporaryDirectory(prefix="simplekafka-stages-") as scratch:
        delays, share = traced_run(args.seconds, args.rate, settings, Path(scratch),
                                   args.python_clients)
        found = stages_of(Path(scratch), delays)
    result = report(found)
    print("who had the CPUs (share of a core; mean wait for a CPU per time slice):")
    for role, times in sorted(share.totals.items()):
        print(f"  {role:40} {100 * times.cpu / share.wall:6.1f} %  "
              f"{times.wait / max(times.slices, 1) * 1e6:8.1f} µs")
    end = os.getloadavg()
    print(f"load average at the end {end[0]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    result.update(load_before=load, load_after=end, settings=settings, seconds=args.seconds,
                  rate=args.rate, python_clients=args.python_clients)
    (args.out / "latency_stages.json").write_text(json.dumps(result, indent=1))
    draw(found, args.out / "latency_stages.png",
         f"{clients.split(',')[0]}, 1 broker, acks=1, {args.rate:,}/s; load {load[0]:.1f}")
    print(f"wrote {args.out / 'latency_stages.png'} and latency_stages.json")


if __name__ == "__main__":
    main()
