"""Where a record's latency goes at three brokers, replication factor 3, acks=all, stage by stage.

Runs ``rdkafka_performance -l`` (10,000 records/s of 100 bytes, linger.ms=0,
acks=all, min.insync.replicas 2) against three brokers that
``benchmarks/replication_trace/sitecustomize.py`` instruments, and joins, record
by record, the producer's stamp, the three brokers' timestamps and the
consumer's delay (all on this machine's wall clock):

  producer -> leader read      stamp to the leader reading the produce: the
                               producer's threads, and the leader busy elsewhere
  read -> append               the other requests of the same read before it
  append -> followers have it  until the later of the two followers read it
                               (a fetch parked, or the next one to arrive)
  -> high watermark            until the later follower's next fetch reached the
                               leader and moved the HW past it
  HW -> consumer answer        the consumer's parked fetch answered
  answer -> consumed           loopback, the consumer's threads

The two follower stages are split along the follower whose next fetch moved
the high watermark (each follower is told apart by its connection's port):

  append -> sent to it           the leader's send of the record to it (its fetch
                                 parked: the same turn; else its next fetch's read)
  sent -> it read it             the follower's wake-up
  its read -> its next fetch     the follower's append and next request
  next fetch -> leader read it   the leader's wake-up for that fetch
  leader read it -> HW           recording its log end moves the HW

Then the round trip of each follower's fetches (its answer read to its next
fetch sent, the gaps between its fetches), the fetches the leader answered per
record, and the leader's reactor: the share of the wall time it spent in turns
and the CPU it used in them (the difference is time it waited for a CPU), and
for each broker's reactor thread the time it ran and the time it sat runnable
waiting for a CPU over the run (``benchmarks/suite/cpu_share.py``'s reading of
the kernel's schedstat): on two cores the follower woken second waits behind
the leader's turn. The stages are p50s and p99s over records; for the records at or above the
end-to-end p99, the mean of each stage. Prints the load average; writes
``replication_stages.json`` to ``--out``. Figures, never asserts.

``--python-clients``: the load of the latency scenario's lead table instead
(``benchmarks/suite/latency_clients.py``: confluent-kafka in a producer
process pacing by sleeping, ``linger.ms=1``, and a consumer process), whose
records carry the same stamp.

    .venv/bin/python benchmarks/replication_stages.py [--seconds 5] [--out DIR]
        [--idle-pacer | --python-clients] [-X librdkafka.key=value ...]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.suite import latency_clients, peers  # noqa: E402
from benchmarks.suite.core import new_topic, percentile  # noqa: E402
from benchmarks.suite.cpu_share import ThreadTimes, thread_times  # noqa: E402
from simplekafka.cluster import LocalCluster  # noqa: E402

HOOK = Path(__file__).resolve().parent / "replication_trace"
STAGES = ("producer -> leader read", "read -> append", "append -> followers have it",
          "-> high watermark", "HW -> consumer answer", "answer -> consumed", "end to end")
# From the append to the HW along the follower whose next fetch moved the HW (the later one).
HOPS = ("append -> sent to it", "sent -> it read it", "its read -> its next fetch",
        "next fetch -> leader read it", "leader read it -> HW")


def scheduling(before: dict[int, ThreadTimes | None], after: dict[int, ThreadTimes | None],
               leader: int) -> list[dict]:
    """Each broker's reactor thread: CPU time and run-queue wait between two readings."""
    rows = []
    for broker, last in sorted(after.items()):
        first = before.get(broker) or ThreadTimes()
        last = last or first
        rows.append({"broker": broker, "role": "leader" if broker == leader else "follower",
                     "on_cpu_s": last.cpu - first.cpu, "waiting_s": last.wait - first.wait,
                     "runs": last.slices - first.slices})
    return rows


def traced_run(seconds: float, rate: int, settings: dict[str, str], trace: Path,
               idle_pacer: bool = False, python_clients: bool = False
               ) -> tuple[list[float], list[dict]]:
    """One run against three fresh traced brokers: the consumer's delays (ms), in order, and
    each broker's reactor thread's CPU time and run-queue wait over the run."""
    tool = peers.rdkafka_performance()
    if tool is None and not python_clients:
        sys.exit(peers.missing_rdkafka_note())
    os.environ["SIMPLEKAFKA_REPLICATION_TRACE"] = str(trace)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HOOK), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        with LocalCluster(brokers=3) as cluster:
            topic = new_topic(cluster.bootstrap_servers, "rf3stages", 1, 3,
                              {"min.insync.replicas": "2"})
            cluster.wait_for_isr(topic, 0, [1, 2, 3])
            pids = cluster.broker_pids
            before = {broker: thread_times(pid, pid) for broker, pid in pids.items() if pid}
            if python_clients:
                delays, _shares = latency_clients.kafka_run(cluster.bootstrap_servers, topic,
                                                            "all", rate, seconds)
            else:
                assert tool is not None
                delays = peers.c_latency(tool, cluster.bootstrap_servers, topic, rate,
                                         seconds, 100, trace, acks="all", settings=settings,
                                         idle_pacer=idle_pacer)
            after = {broker: thread_times(pid, pid) for broker, pid in pids.items() if pid}
            shares = scheduling(before, after, cluster.leader_of(topic, 0))
    finally:
        del os.environ["SIMPLEKAFKA_REPLICATION_TRACE"]
    return delays, shares


def _first_times(rows, stamp_field: int = 1) -> dict[int, float]:
    found: dict[int, float] = {}
    for row in rows:
        for stamp in row[stamp_field]:
            found.setdefault(stamp, row[0])
    return found


def _ms(values: list[float]) -> list[float]:
    return [v * 1000 for v in values]


def analyse(trace: Path, delays: list[float]) -> dict:
    """Each record's stages (ms), the followers' fetch cycles and the leader's turns."""
    brokers = [json.loads(p.read_text()) for p in sorted(trace.glob("broker-*.json"))]
    if len(brokers) != 3:
        sys.exit(f"{len(brokers)} traced brokers, 3 expected")
    leader = max(brokers, key=lambda b: len(b["append"]))
    followers = [b for b in brokers if b is not leader]
    read = _first_times(leader["read"])
    appended = {stamp: (t, offset) for t, offset, stamps in leader["append"]
                for stamp in stamps}
    to_client = _first_times([(t, stamps) for t, kind, stamps, *_ in leader["sent"]
                              if kind == "client"])
    follower_reads = [_first_times(f["follower_read"]) for f in followers]
    # Each follower by the port of its fetcher's connection (both ends note it).
    ports = [next((row[2] for row in f["follower_read"] if row[1]), None) for f in followers]
    sent_to = [_first_times([(t, stamps) for t, kind, stamps, *port in leader["sent"]
                             if kind == "follower" and port and port[0] == p]) for p in ports]
    fetch_sent = [sorted(t for t, *port in f["follower_fetch_sent"] if port and port[0] == p)
                  for f, p in zip(followers, ports, strict=True)]
    arrived = [sorted(t for t, kind, *port in leader["fetch_arrived"]
                      if kind == "follower" and port and port[0] == p) for p in ports]
    hops: dict[str, list[float]] = {name: [] for name in HOPS}
    hop_total: list[float] = []
    hw_times = [t for t, _ in leader["high_watermark"]]
    hw_values = [hw for _, hw in leader["high_watermark"]]
    stamps = sorted(appended, key=lambda stamp: appended[stamp][1])  # offset order
    if len(stamps) != len(delays):  # the consumer's file is in offset order: pair by index
        print(f"note: {len(stamps)} records traced, {len(delays)} delays: pairing the first "
              f"{min(len(stamps), len(delays))}")
    found: dict[str, list[float]] = {name: [] for name in STAGES}
    for stamp, delay in zip(stamps, delays, strict=False):
        appended_at, offset = appended[stamp]
        copied = [reads.get(stamp) for reads in follower_reads]
        index = bisect.bisect_left(hw_values, offset + 1)
        if stamp not in read or None in copied or stamp not in to_client \
                or index == len(hw_times):
            continue
        produced = stamp / 1e6
        consumed = produced + delay / 1000
        have_it = max(copied)  # type: ignore[type-var]
        committed = max(hw_times[index], have_it)
        answered = max(to_client[stamp], committed)
        for name, seconds in zip(STAGES, (
                read[stamp] - produced, appended_at - read[stamp], have_it - appended_at,
                committed - have_it, answered - committed, consumed - answered,
                consumed - produced), strict=True):
            found[name].append(seconds * 1000)
        path = _later_follower(stamp, copied, sent_to, fetch_sent, arrived)
        if path is not None:
            sent, got, next_fetch, read_it = path
            for name, seconds in zip(HOPS, (sent - appended_at, got - sent, next_fetch - got,
                                            read_it - next_fetch,
                                            max(committed, read_it) - read_it), strict=True):
                hops[name].append(seconds * 1000)
            hop_total.append((consumed - produced) * 1000)
    cycles = []
    for follower in followers:
        sends = sorted(t for t, *_ in follower["follower_fetch_sent"])
        answers = sorted(t for t, *_ in follower["follower_read"])
        to_next = []
        for answered_at in answers:
            after = bisect.bisect_left(sends, answered_at)
            if after < len(sends):
                to_next.append(sends[after] - answered_at)
        cycles.append({"fetches": len(sends),
                       "gap_ms": _ms([b - a for a, b in itertools.pairwise(sends)]),
                       "answer_to_next_fetch_ms": _ms(to_next)})
    start, end = (min(t for t, _ in leader["read"]), max(t for t, _ in leader["read"])) \
        if leader["read"] else (0.0, 0.0)
    turns = [(t, wall, cpu) for t, wall, _events, cpu in leader["turn"] if start <= t <= end]
    span = max(end - start, 1e-9)
    arrivals = [kind for t, kind, *_ in leader["fetch_arrived"] if start <= t <= end]
    return {"stages": found, "hops": hops, "hop_total": hop_total, "cycles": cycles,
            "leader": {
        "busy_share": sum(w for _, w, _ in turns) / span,
        "cpu_share": sum(c for _, _, c in turns) / span,
        "turn_ms": _ms([w for _, w, _ in turns]),
        "follower_fetches_per_record": arrivals.count("follower") / max(len(stamps), 1),
        "consumer_fetches_per_record": arrivals.count("client") / max(len(stamps), 1)}}


def _later_follower(stamp: int, copied: list, sent_to: list[dict[int, float]],
                    fetch_sent: list[list[float]], arrived: list[list[float]]
                    ) -> tuple[float, float, float, float] | None:
    """Along the follower whose next fetch reached the leader last (the one that moved the
    HW): the leader's send of ``stamp`` to it, its read, its next fetch, the leader's read."""
    best = None
    for number, got in enumerate(copied):
        sent = sent_to[number].get(stamp)
        if got is None or sent is None:
            return None
        after = bisect.bisect_left(fetch_sent[number], got)
        if after == len(fetch_sent[number]):
            return None
        next_fetch = fetch_sent[number][after]
        at = bisect.bisect_left(arrived[number], next_fetch)
        if at == len(arrived[number]):
            return None
        path = (sent, got, next_fetch, arrived[number][at])
        if best is None or path[3] > best[3]:
            best = path
    return best


def _quantiles(values: list[float]) -> dict[str, float]:
    return {q: percentile(values, f) for q, f in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))}


def report(analysis: dict) -> dict:
    found = analysis["stages"]
    total = found["end to end"]
    if not total:
        sys.exit("no record was traced end to end")
    print(f"{'stage':30} {'p50':>8} {'p99':>8} {'max':>8}   ms")
    table = {}
    for name, values in found.items():
        table[name] = row = _quantiles(values)
        print(f"{name:30} " + " ".join(f"{row[q]:8.3f}" for q in row))
    threshold = percentile(total, 0.99)
    tail = [i for i, value in enumerate(total) if value >= threshold]
    share = {name: sum(found[name][i] for i in tail) / len(tail) for name in STAGES}
    print(f"the {len(tail)} records at or above p99 ({threshold:.2f} ms), mean ms per stage:")
    for name, mean in share.items():
        print(f"  {name:30} {mean:8.3f}")
    hops, hop_total = analysis["hops"], analysis["hop_total"]
    hop_table: dict[str, dict] = {}
    if hop_total:
        print("append -> HW along the follower whose next fetch moved it:")
        high = percentile(hop_total, 0.99)
        hop_tail = [i for i, value in enumerate(hop_total) if value >= high]
        for name, values in hops.items():
            hop_table[name] = row = {**_quantiles(values), "tail_mean": sum(
                values[i] for i in hop_tail) / len(hop_tail)}
            print(f"  {name:28} " + " ".join(f"{row[q]:8.3f}" for q in ("p50", "p99", "max"))
                  + f"   tail mean {row['tail_mean']:8.3f}")
    cycles = []
    for number, cycle in enumerate(analysis["cycles"], 1):
        gap, turn = _quantiles(cycle["gap_ms"]), _quantiles(cycle["answer_to_next_fetch_ms"])
        cycles.append({"fetches": cycle["fetches"], "gap": gap, "answer_to_next_fetch": turn})
        print(f"follower {number}: {cycle['fetches']} fetches, p50/p99 ms between them "
              f"{gap['p50']:.3f}/{gap['p99']:.3f}, from an answer to its next fetch "
              f"{turn['p50']:.3f}/{turn['p99']:.3f}")
    leader = analysis["leader"]
    turns = _quantiles(leader["turn_ms"])
    print(f"leader: {leader['follower_fetches_per_record']:.3f} follower and "
          f"{leader['consumer_fetches_per_record']:.3f} consumer fetches per record; its "
          f"reactor in turns {100 * leader['busy_share']:.0f} % of the wall time, on a CPU "
          f"{100 * leader['cpu_share']:.0f} %; turns p50/p99 {turns['p50']:.3f}/"
          f"{turns['p99']:.3f} ms")
    return {"percentiles": table, "tail_mean_ms": share, "tail_records": len(tail),
            "hops": hop_table,
            "records": len(total), "followers": cycles,
            "leader": {**{k: v for k, v in leader.items() if k != "turn_ms"}, "turn": turns}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    clients = parser.add_mutually_exclusive_group()
    clients.add_argument("--idle-pacer", action="store_true",
                         help="the C producer's spinning pacing thread at SCHED_IDLE")
    clients.add_argument("--python-clients", action="store_true",
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
          f"{args.rate:,} records/s for {args.seconds:g} s, 3 brokers, acks=all, {clients}")
    with tempfile.TemporaryDirectory(prefix="simplekafka-rf3-stages-") as scratch:
        delays, shares = traced_run(args.seconds, args.rate, settings, Path(scratch),
                                    args.idle_pacer, args.python_clients)
        result = report(analyse(Path(scratch), delays))
    for row in shares:
        mean = 1e6 * row["waiting_s"] / row["runs"] if row["runs"] else 0.0
        print(f"broker {row['broker']} ({row['role']}), reactor thread: on a CPU "
              f"{row['on_cpu_s']:.2f} s, "
              f"runnable but waiting for a CPU {row['waiting_s']:.2f} s over {row['runs']:,} "
              f"runs ({mean:.0f} us a run)")
    end = os.getloadavg()
    print(f"load average at the end {end[0]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    result.update(load_before=load, load_after=end, scheduling=shares,
                  settings=settings, seconds=args.seconds,
                  rate=args.rate, idle_pacer=args.idle_pacer,
                  python_clients=args.python_clients)
    (args.out / "replication_stages.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out / 'replication_stages.json'}")


if __name__ == "__main__":
    main()
