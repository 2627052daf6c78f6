"""The lead latency table for two trees' brokers at once, taking turns within each run.

``simplekafka bench latency`` measures one tree against Redis. Whether a change
to the broker made latency worse is a question about two trees, and on a
shared two-core machine the minutes matter more than the code: two runs of the
same tree ten minutes apart differ by more than most changes. So this script
runs the lead table's harness (``benchmarks/suite/latency_clients.py``: a
producer process pacing by sleeping, ``linger.ms=1``, and a consumer process,
10,000 records/s of 100 B) against both trees' brokers *in the same run*:
each run measures Redis, one broker of tree A, one of tree B, three brokers
RF 3 of A and of B, so each pair shares the same minutes; every other run
takes the trees in the other order (B before A), so that neither tree is
always the one measured first. Tree
B's brokers are another checkout's code (``checkout_launcher``); the clients,
the harness and ZooKeeper are this checkout's. Medians over runs of each
percentile, and each tree's ratios, as the lead table takes them; each run's p50/p99 as
it ends, and in how many runs tree A's p99 was below B's (the medians of a few runs
can hide that one tree loses every pairing). Prints figures with the load average,
never asserts.

    .venv/bin/python benchmarks/latency_ab.py --other CHECKOUT [--seconds 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.suite import latency_clients as lead
from benchmarks.suite import peers
from benchmarks.suite.core import load_average, new_topic, percentile
from benchmarks.suite.replication import THREE_BROKERS
from simplekafka.cluster import LocalCluster, checkout_launcher


def measure(other: Path, seconds: float, runs: int, rate: int) -> dict[str, list[list[float]]]:
    """Delays (ms) per system per run; the systems take turns within each run."""
    samples: dict[str, list[list[float]]] = {}
    with ExitStack() as stack:
        launchers = {"A (this checkout)": None, f"B ({other})": checkout_launcher(other)}
        singles, threes = {}, {}
        for tree, launcher in launchers.items():
            singles[tree] = stack.enter_context(LocalCluster(brokers=1, launcher=launcher,
                                                             metrics=False))
            threes[tree] = stack.enter_context(LocalCluster(
                brokers=3, broker_config=THREE_BROKERS, launcher=launcher, metrics=False))
        server = shutil.which("redis-server")
        port = stack.enter_context(peers.redis_server(server)) if server else None
        for run in range(runs):
            if port is not None:
                delays, _ = lead.redis_run(port, f"latency-ab-{run}", rate, seconds)
                samples.setdefault(lead.REDIS, []).append(delays)
            turn = 1 if run % 2 == 0 else -1  # A first, then B first, ...
            for tree, cluster in list(singles.items())[::turn]:
                boot = cluster.bootstrap_servers
                delays, _ = lead.kafka_run(boot, new_topic(boot, "latency-ab"), "1", rate,
                                           seconds)
                samples.setdefault(f"{tree}: 1 broker, acks=1", []).append(delays)
            for tree, cluster in list(threes.items())[::turn]:
                boot = cluster.bootstrap_servers
                topic = new_topic(boot, "latency-ab-rf3", 1, 3, {"min.insync.replicas": "2"})
                cluster.wait_for_isr(topic, 0, [1, 2, 3])
                delays, _ = lead.kafka_run(boot, topic, "all", rate, seconds)
                samples.setdefault(f"{tree}: 3 brokers RF 3, acks=all", []).append(delays)
            print(f"run {run + 1} of {runs} done, load average {load_average()[0]:.2f}; p50/p99 "
                  "(ms): " + "; ".join(f"{system} {percentile(delays[-1], 0.5):.2f}/"
                                      f"{percentile(delays[-1], 0.99):.2f}"
                                      for system, delays in samples.items()), flush=True)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, metavar="CHECKOUT",
                        help="the root of the other SimpleKafka checkout (tree B)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=10_000)
    args = parser.parse_args(argv)
    if not (args.other / "simplekafka" / "__init__.py").is_file():
        parser.error(f"--other {args.other}: no simplekafka package there")
    start = load_average()
    samples = measure(args.other.resolve(), args.seconds, args.runs, args.rate)
    end = load_average()
    print(f"{os.cpu_count()} CPUs; {args.rate:,} records/s of {lead.SIZE} B for "
          f"{args.seconds:g} s, median of {args.runs} runs, the systems taking turns; load "
          f"average {start[0]:.2f} at the start, {end[0]:.2f} at the end")
    names = [name for name, _ in lead.PERCENTILES]
    print(f"{'system':58}" + "".join(f"{name:>9}" for name in names) + "  (ms)")
    table = {}
    for system, runs in samples.items():
        table[system] = lead.medians(runs)
        print(f"{system:58}" + "".join(f"{table[system][name]:9.2f}" for name in names))
    trees = [s.split(":")[0] for s in samples if s.endswith("acks=1")]
    for tree in trees:
        one, three = table[f"{tree}: 1 broker, acks=1"], table[f"{tree}: 3 brokers RF 3, acks=all"]
        redis = table.get(lead.REDIS)
        against = f"p99 {one['p99'] / redis['p99']:.2f}x Redis, " if redis else ""
        print(f"{tree}: 1 broker {against}RF 3 p99 {three['p99'] / one['p99']:.2f}x 1 broker")
    for shape in ("1 broker, acks=1", "3 brokers RF 3, acks=all"):
        a, b = (samples[f"{tree}: {shape}"] for tree in trees)
        lower = sum(percentile(x, 0.99) < percentile(y, 0.99) for x, y in zip(a, b))
        print(f"{shape}: A's p99 below B's in {lower} of {len(a)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
