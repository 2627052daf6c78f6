"""Broker restart at scale: three brokers, N partitions at replication factor 3.

Every broker hosts a replica of every partition. For each size the cluster is
grown to N partitions, then one broker (not the controller) is restarted twice:

- after a SIGKILL: its logs are recovered from the recovery point on, once its
  ZooKeeper session has expired and the controller has elected new leaders;
- after a clean shutdown (SIGTERM): its logs are trusted as they are.

Each prints the wall time until the broker serves (answers Metadata naming
every broker and the controller) and until every broker's metadata shows it
back in every ISR, with the CPU seconds the restarted broker spent until it
served (CPU time holds on a busy machine where wall time does not) and the
load average. Nothing is asserted; ``--tiny`` runs one small size for the test.

    .venv/bin/python benchmarks/bench_restart.py [--partitions 1000,5000,10000] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from benchmarks.suite.core import new_topic
from benchmarks.suite.scale import SCALE_BROKERS, _all_led_elsewhere, _in_every_isr, _leaders
from simplekafka.cluster import LocalCluster

POLL_S = 0.5  # a Metadata of every partition is not free: ask twice a second


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def _wait(condition, what: str, timeout: float) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(POLL_S)
    return time.perf_counter() - started


def _cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def restart(cluster: LocalCluster, topics: list[str], victim: int, how: str,
            timeout: float) -> dict[str, float]:
    """Stop ``victim`` (SIGKILL or SIGTERM), start it again; the phases' times."""
    bootstrap = cluster.bootstrap_servers
    figures: dict[str, float] = {}
    if how == "kill":
        led = [key for key, leader in _leaders(bootstrap, topics).items() if leader == victim]
        cluster.kill(victim)
        cluster.wait_for_znode_gone(victim, timeout)
        others = ",".join(cluster.brokers[b].address for b in cluster.running_brokers())
        _wait(lambda: _all_led_elsewhere(others, topics, led, victim), "new leaders", timeout)
    else:
        started = time.perf_counter()
        cluster.terminate(victim, timeout)
        figures["clean shutdown (s)"] = time.perf_counter() - started
    started = time.perf_counter()
    cluster.restart(victim, wait=False)
    pid = cluster.broker_pids[victim]
    assert pid is not None
    cluster.wait_until_serving([victim], timeout)
    figures["until serving (s)"] = time.perf_counter() - started
    figures["CPU until serving (s)"] = _cpu_seconds(pid)
    _wait(lambda: _in_every_isr(bootstrap, topics, victim), "back in every ISR", timeout)
    figures["until back in every ISR (s)"] = time.perf_counter() - started
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", default="1000,5000,10000",
                        help="comma-separated partition counts (default 1000,5000,10000)")
    parser.add_argument("--tiny", action="store_true", help="one size of 30 (for the test)")
    args = parser.parse_args(argv)
    try:
        sizes = [30] if args.tiny else sorted(int(n) for n in args.partitions.split(","))
    except ValueError:
        parser.error(f"--partitions takes numbers separated by commas, got {args.partitions!r}")
    if any(n < 1 for n in sizes):
        parser.error("--partitions must be positive")
    print(f"broker restart, 3 brokers, RF 3; {load()}", flush=True)
    topics: list[str] = []
    total = 0
    with LocalCluster(3, broker_config=SCALE_BROKERS, start_timeout=900) as cluster:
        bootstrap = cluster.bootstrap_servers
        for count in sizes:
            step = count - total
            topics.append(new_topic(bootstrap, f"restart{count}", step, 3,
                                    timeout_s=60 + step * 0.1))
            total = count
            timeout = 120 + count * 0.1
            _wait(lambda: all(_in_every_isr(bootstrap, topics, b) for b in (1, 2, 3)),
                  "full ISRs", timeout)
            controller = cluster.controller_id()
            victim = next(b for b in cluster.brokers if b != controller)
            for how, label in (("kill", "after SIGKILL"), ("term", "after clean shutdown")):
                figures = restart(cluster, topics, victim, how, timeout)
                shown = ", ".join(f"{name} {value:.1f}" for name, value in figures.items())
                print(f"{count:,} partitions, restart {label}: {shown}; {load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
