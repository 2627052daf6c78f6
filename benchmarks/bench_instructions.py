"""Instructions per request on the broker's hot paths, counted by callgrind: figures a busy
machine does not move.

The CPU-time benchmarks (``bench_fetch_path.py``, ``bench_replication_path.py``,
``bench_broker.py``) move by 10-40 % from run to run on a shared two-core
machine; the number of instructions the interpreter executes does not (the
same code on the same input gives the same count, to a few parts in a
thousand). So a before/after comparison of the request path is made here:
run the script in each tree and compare. Three figures:

- ``produce``: a broker process (LocalCluster, under callgrind with
  instrumentation off until the load starts) answering pipelined one-record
  ProduceRequests v8, acks=1; instructions of the broker process per request.
- ``fetch cycle``: ``bench_fetch_path``'s cycle in one process (a parked
  consumer fetch woken by a produce), and the produce alone; the difference
  is the fetch's part; at librdkafka 2.x's versions against a Kafka 3.9
  broker (``3.9``: Fetch v16 by topic ID, Produce v10) and the ``old`` ones.
- ``replication``: ``bench_replication_path``'s leader at RF 3, acks=all,
  instructions of the leader's calls per record, 1 and 8 produces per read,
  with the versions the latency run's parts speak (``3.9``: our followers'
  Fetch v17, librdkafka's Fetch v16 and Produce v10) and the ``old`` ones by
  name (Fetch v11, Produce v8) that earlier figures were taken with.
- ``follower``: ``bench_follower_cycle``'s follower (Fetch v17 by topic ID, as
  in a cluster), instructions per fetch cycle (an answer read, its batches
  appended, the next fetch sent) with 1 and 17 one-record batches per answer.
- ``clients``: the whole broker process (reactor, sockets, fetch sessions,
  timers: everything the paths above leave out) serving the latency table's
  real clients (``benchmarks/suite/latency_clients.py``: a confluent-kafka
  producer process pacing by sleeping and a consumer process, acks=1),
  instructions per record at two paces callgrind's slowdown lets the broker
  keep: 50 records/s with ``linger.ms`` 1 (a produce request and a fetch
  answer per record) and 1,000 records/s with ``linger.ms`` 20 (some twenty
  records per request, the shape of the 10,000 records/s run at one
  millisecond). Batching depends on timing, so these counts move by about
  1 %, not the few parts in a thousand of the others. ``--brokers-from
  CHECKOUT`` runs another checkout's broker under the same clients: the
  before/after of a change in one script.

Needs valgrind (``callgrind_control``); takes a few minutes (the interpreter
runs some 50 times slower under it). Prints figures, never passes or fails.

    .venv/bin/python benchmarks/bench_instructions.py [--requests 5000]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _totals(path: str) -> int:
    with open(path) as dump:
        return next(int(line.split()[1]) for line in dump if line.startswith("totals:"))


def _valgrind(out: str, *args: str, toggle: str | None = None) -> list[str]:
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    command += [f"--toggle-collect={toggle}"] if toggle else ["--instr-atstart=no"]
    return [*command, sys.executable, *args]


def produce(requests: int, workdir: str) -> float:
    """Broker-process instructions per pipelined one-record ProduceRequest."""
    out = os.path.join(workdir, "produce.out")
    child = _CHILD_PRODUCE.format(root=str(ROOT), requests=requests, out=out,
                                  launcher=_valgrind(out, "-m", "simplekafka"))
    subprocess.run([sys.executable, "-c", child], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    return _totals(sorted(glob.glob(out + ".*"))[-1]) / requests


def fetch_cycle(cycles: int, workdir: str, versions: str = "3.9") -> tuple[float, float]:
    """Instructions per parked-fetch cycle and per produce alone (one process)."""
    out = os.path.join(workdir, f"cycle-{versions}.out")
    subprocess.run(_valgrind(out, "-c", _CHILD_CYCLE.format(root=str(ROOT), cycles=cycles,
                                                            versions=versions)),
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=1800)
    cycle, alone = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))[-2:]
    return _totals(cycle) / cycles, _totals(alone) / cycles


def follower(cycles: int, workdir: str) -> dict[int, float]:
    """Instructions of the follower's calls per fetch cycle, by batches per answer
    (collected inside functools.reduce only, as for the leader; one process, a dump per
    batch count)."""
    out = os.path.join(workdir, "follower.out")
    subprocess.run(_valgrind(out, "-c", _CHILD_FOLLOWER.format(
        root=str(ROOT), batch_counts=FOLLOWER_BATCHES, cycles=cycles),
        toggle="functools_reduce"),
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=1800)
    dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    return {batches: _totals(dump) / cycles
            for batches, dump in zip(FOLLOWER_BATCHES, dumps[-len(FOLLOWER_BATCHES):],
                                     strict=True)}


FOLLOWER_BATCHES = (1, 17)


def replication(per_read: int, reads: int, workdir: str, versions: str = "3.9") -> float:
    """Instructions of the leader's calls per record (only calls inside functools.reduce
    are collected: the script routes each broker call through it)."""
    out = os.path.join(workdir, f"replication-{per_read}-{versions}.out")
    subprocess.run(_valgrind(out, "-c", _CHILD_REPLICATION.format(
        root=str(ROOT), per_read=per_read, reads=reads, versions=versions),
        toggle="functools_reduce"),
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=1800)
    return _totals(out) / (per_read * reads)


def clients(rate: int, seconds: float, linger_ms: float, workdir: str,
            brokers_from: Path | None = None) -> float:
    """Broker-process instructions per record the real clients sent through it."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import latency_clients
    from benchmarks.suite.core import new_topic
    from simplekafka.cluster import LocalCluster, checkout_launcher

    out = os.path.join(workdir, f"clients-{rate}.out")
    base = (checkout_launcher(brokers_from) if brokers_from is not None
            else [sys.executable, "-m", "simplekafka"])
    # both launchers start with this interpreter, as _valgrind's command does
    with LocalCluster(brokers=1, base_dir=Path(workdir) / f"cluster-{rate}", metrics=False,
                      launcher=_valgrind(out, *base[1:]), start_timeout=300) as cluster:
        boot, pid = cluster.bootstrap_servers, str(cluster.broker_pids[1])
        # first uses (coders compiled per message and version, the consumer's session)
        latency_clients.kafka_run(boot, new_topic(boot, "instructions-warm"), "1", rate,
                                  min(seconds, 3), linger_ms=linger_ms)
        topic = new_topic(boot, "instructions")
        subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True)
        delays, _ = latency_clients.kafka_run(boot, topic, "1", rate, seconds,
                                              linger_ms=linger_ms)
        subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True)
        subprocess.run(["callgrind_control", "-d", pid], capture_output=True)
    return _totals(sorted(glob.glob(out + ".*"))[-1]) / max(len(delays), 1)


_CHILD_PRODUCE = """
import subprocess, sys, tempfile
sys.path.insert(0, {root!r}); sys.path.insert(0, {root!r} + "/benchmarks")
from pathlib import Path
import bench_broker
from simplekafka.cluster import LocalCluster
with tempfile.TemporaryDirectory() as d, LocalCluster(brokers=1, base_dir=Path(d),
                                                      launcher={launcher!r}) as cluster:
    bench_broker.create_topic(cluster.bootstrap_servers, "raw-small")
    port, pid = cluster.broker_ports[1], str(cluster.broker_pids[1])
    frames = bench_broker.produce_frames("raw-small", {requests}, b"x" * 100, per_batch=1)
    bench_broker.raw_to_broker(port, frames[:500])
    subprocess.run(["callgrind_control", "-i", "on", pid], capture_output=True)
    bench_broker.raw_to_broker(port, frames)
    subprocess.run(["callgrind_control", "-i", "off", pid], capture_output=True)
    subprocess.run(["callgrind_control", "-d", pid], capture_output=True)
"""

_CHILD_CYCLE = """
import inspect, os, subprocess, sys, tempfile
sys.path.insert(0, {root!r})
from benchmarks.bench_fetch_path import CycleBench
pid = str(os.getpid())
def ctl(*a): subprocess.run(["callgrind_control", *a, pid], capture_output=True)
# a tree whose script predates --versions speaks the old versions only
given = dict(versions={versions!r}) if "versions" in inspect.signature(CycleBench).parameters \
    else dict()
with tempfile.TemporaryDirectory() as d:
    bench = CycleBench(d, **given)
    bench.cycles(300)
    for park in (True, False):
        ctl("-z"); ctl("-i", "on"); bench.cycles({cycles}, park=park); ctl("-d"); ctl("-i", "off")
    bench.close()
"""

_CHILD_REPLICATION = """
import functools, inspect, sys, tempfile
sys.path.insert(0, {root!r})
import benchmarks.bench_replication_path as path
source = inspect.getsource(path.run_reads).replace(
    "        call(data)\\n", "        functools.reduce(lambda _a, _b: call(data), (0, 0))\\n")
namespace = dict(vars(path), functools=functools)
exec(source, namespace)
# a tree whose script predates --versions speaks the old versions only
given = [{versions!r}] if "versions" in inspect.signature(path.run_reads).parameters else []
with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as d:
    # first uses (the coders compiled for each message and version): run, not counted
    path.run_reads({per_read}, 3, warm, *given)
    namespace["run_reads"]({per_read}, {reads}, d, *given)
"""

_CHILD_FOLLOWER = """
import functools, inspect, os, subprocess, sys, tempfile
sys.path.insert(0, {root!r})
import benchmarks.bench_follower_cycle as cycle
source = inspect.getsource(cycle.measure).replace(
    "connection.dataReceived(frame)",
    "functools.reduce(lambda _a, _b: connection.dataReceived(frame), (0, 0))")
assert "functools.reduce" in source
namespace = dict(vars(cycle), functools=functools)
exec(source, namespace)
pid = str(os.getpid())
def ctl(*a): subprocess.run(["callgrind_control", *a, pid], capture_output=True)
for batches in {batch_counts!r}:
    with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as d:
        cycle.measure(batches, 10, 1, warm)  # first uses (lazily compiled coders): not counted
        ctl("-z")
        namespace["measure"](batches, {cycles}, 1, d)
        ctl("-d")
"""


PATHS = ("produce", "cycle", "replication", "follower", "clients")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000,
                        help="produce requests and fetch cycles counted (default 5000)")
    parser.add_argument("--paths", default=",".join(PATHS),
                        help=f"which of {', '.join(PATHS)} (default: all)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="how long the clients path's clients run at each pace (default 20)")
    parser.add_argument("--brokers-from", type=Path, default=None, metavar="CHECKOUT",
                        help="the clients path runs this checkout's broker (default: this one)")
    args = parser.parse_args()
    paths = set(args.paths.split(","))
    unknown = paths - set(PATHS)
    if unknown:
        print(f"bench_instructions: unknown path(s) {', '.join(sorted(unknown))}; "
              f"choose from {', '.join(PATHS)}", file=sys.stderr)
        return 2
    if args.brokers_from is not None and not (args.brokers_from / "simplekafka").is_dir():
        print(f"bench_instructions: --brokers-from {args.brokers_from}: no simplekafka "
              "package there", file=sys.stderr)
        return 2
    if shutil.which("callgrind_control") is None:
        print("bench_instructions: needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as workdir:
        print(f"tree {ROOT} at {_head()}, instructions counted by callgrind")
        if "produce" in paths:
            per_request = produce(args.requests, workdir)
            print(f"  produce, one record, pipelined, broker process  {per_request:>11,.0f}"
                  " per request")
        if "cycle" in paths:
            for versions in ("3.9", "old"):
                cycle, alone = fetch_cycle(max(args.requests // 2, 100), workdir, versions)
                print(f"  parked fetch woken by a produce, {versions:>3} versions {cycle:>11,.0f}"
                      " per cycle")
                print(f"    the produce alone                              {alone:>11,.0f}")
                print(f"    the fetch's part                               "
                      f"{cycle - alone:>11,.0f}")
        if "replication" in paths:
            for versions in ("3.9", "old"):
                for per_read, reads in ((1, max(args.requests // 25, 20)),
                                        (8, max(args.requests // 100, 5))):
                    figure = replication(per_read, reads, workdir, versions)
                    print(f"  RF 3 leader, {per_read} produce(s) per read, {versions:>3} "
                          f"versions {figure:>11,.0f} per record")
        if "follower" in paths:
            for batches, per_cycle in follower(max(args.requests // 25, 20), workdir).items():
                print(f"  follower, {batches:2d} batch(es) per fetch answer         "
                      f"{per_cycle:>11,.0f} per cycle")
        if "clients" in paths:
            brokers = args.brokers_from.resolve() if args.brokers_from else ROOT
            print(f"  real clients, acks=1, the broker of {brokers}:")
            for rate, linger_ms in ((50, 1.0), (1000, 20.0)):
                per_record = clients(rate, args.seconds, linger_ms, workdir,
                                     args.brokers_from and args.brokers_from.resolve())
                print(f"    {rate:>5,} records/s, linger.ms {linger_ms:>2.0f}, broker process "
                      f"{per_record:>11,.0f} per record")
    return 0


def _head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
