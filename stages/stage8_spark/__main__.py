"""Stage 8 demo: the example pipelines on real Spark, reading SimpleKafka topics.

    python -m stages.stage8_spark                      # all four, on a cluster it starts
    python -m stages.stage8_spark PIPELINE [--bootstrap-server HOST:PORT,...]
    python -m stages.stage8_spark --master spark://HOST:PORT   # on a Spark cluster

PIPELINE is one of product-views, sensor-averages, sessions, fraud-alerts or
all. Without ``--bootstrap-server`` a LocalCluster (ZooKeeper and three
brokers) is started and stopped again. For each pipeline the event generator
writes act one (on-time events) with our Producer, the query runs with
``trigger(availableNow=True)``, then act two brings newer events and some late
ones, and the query runs again from its checkpoint; the output shows Spark's
result, the watermark, the late rows Spark dropped, and whether the result
equals the same aggregate computed in Python straight from the topic. Files
(checkpoints, broker data) go to $SIMPLEKAFKA_DEMO_DIR if set, else a
temporary directory. About a minute for one pipeline, two for all; without
arguments it starts no new pipeline after two and a half minutes. With
``--master`` the executors run on that Spark cluster (``simplekafka spark up``)
instead of ``local[2]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NoReturn

from stages.stage8_spark import events, scenarios
from stages.stage8_spark.pipelines import PIPELINES

CHOICES = [*PIPELINES, "all"]


class _OneLineParser(argparse.ArgumentParser):
    """Bad arguments end in one line on stderr (and exit status 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _clock(moment: Any) -> str:
    if isinstance(moment, datetime):
        return moment.astimezone(timezone.utc).strftime("%H:%M:%S")
    return str(moment)


def _result_lines(name: str, result: dict, limit: int = 12) -> list[str]:
    """A few lines of a pipeline's result, ordered by time."""
    if name == "product-views":
        lines = [f"  {_clock(start)[:5]}-{_clock(start + timedelta(minutes=1))[:5]}  "
                 f"{views:3d} views" for start, views in sorted(result.items())]
    elif name == "sensor-averages":
        lines = [f"  {sensor}  {_clock(start)[:5]}+5min  {avg:6.2f} C over {count:2d} readings"
                 for (sensor, start), (avg, count) in sorted(result.items(),
                                                             key=lambda kv: (kv[0][1], kv[0][0]))]
    elif name == "sessions":
        lines = [f"  {user}  {_clock(start)}-{_clock(end)}  {clicks} clicks"
                 for (user, start, end), clicks in sorted(result.items(),
                                                          key=lambda kv: (kv[0][1], kv[0][0]))]
    else:
        lines = [f"  {tx}  {alert['user']}  {alert['amount']:>10,.2f} {alert['currency']}  "
                 f"{alert['event_time']}" for tx, alert in sorted(result.items())]
    if len(lines) > limit:
        lines = [*lines[: limit // 2], f"  ... ({len(lines) - limit} more)",
                 *lines[-(limit - limit // 2):]]
    return lines or ["  (nothing yet)"]


def show(name: str, spark: Any, bootstrap_servers: str, workdir: Path, out: Any = None) -> bool:
    """Play one pipeline's two acts and print what happened; True when Spark matches Python."""
    out = out or sys.stdout
    pipeline = PIPELINES[name]

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    say(f"\n=== {name}: {pipeline.summary}")
    say(f"    reads topic {pipeline.topic!r}, output mode {pipeline.output_mode}")

    def after_act(play: scenarios.Play, number: int, run: Any) -> None:
        act = play.scenario.acts[number - 1]
        late = [e for e in act if e in play.scenario.late]
        times = sorted(e.time for e in act)
        say(f"act {number}: produced {len(act)} events, event time "
            f"{_clock(times[0])}-{_clock(times[-1])}"
            + (f"; {len(late)} late ones from {', '.join(_clock(e.time) for e in late)}"
               if late else ""))
        if play.pipeline.watermark is None:
            say(f"  Spark: {len(run.progress)} micro-batch(es), {run.input_rows} rows in, "
                f"alerts written through the sink")
            return
        say(f"  Spark: {len(run.progress)} micro-batches, {run.input_rows} rows in, "
            f"{len(run.rows)} result rows out; watermark now "
            f"{run.watermark[11:19] if run.watermark else '-'}; "
            f"late rows dropped: {run.dropped_by_watermark}")

    done = scenarios.play(name, spark, bootstrap_servers, workdir / f"checkpoint-{name}",
                          after_act=after_act)
    got = scenarios.spark_outcome(done, bootstrap_servers)
    expected = scenarios.reference_outcome(done, bootstrap_servers)
    where = (f"topic {events.FRAUD_ALERTS!r} (read back with our Consumer)"
             if name == "fraud-alerts" else "Spark")
    say(f"result in {where}:")
    for line in _result_lines(name, got.result):
        say(line)
    same = got.result == expected.result and got.dropped == expected.dropped
    say(f"the same aggregate computed in Python from the topic: "
        f"{'identical' if same else 'DIFFERENT'} ({len(expected.result)} groups, "
        f"{expected.dropped} late rows dropped)")
    if not same:
        missing = set(expected.result) - set(got.result)
        extra = set(got.result) - set(expected.result)
        say(f"  only in Python: {sorted(missing)[:5]}; only in Spark: {sorted(extra)[:5]}")
    return same


#: The demo without arguments starts no new pipeline after this many seconds, so it
#: stays bounded on a slow or busy machine (the ones left are named, not run).
DEMO_BUDGET = 150.0


def run(names: Iterable[str], bootstrap_servers: str | None, workdir: Path,
        budget: float | None = None, master: str | None = None) -> int:
    """Start what is missing (cluster, Spark), show each pipeline, stop what it started."""
    from simplekafka.cluster import LocalCluster
    from simplekafka.spark.session import local_spark

    cluster = None
    if bootstrap_servers is None:
        print("starting ZooKeeper and three brokers (LocalCluster) ...", flush=True)
        cluster = LocalCluster(brokers=3, base_dir=workdir / "cluster").start()
        bootstrap_servers = cluster.bootstrap_servers
    spark = None
    try:
        print(f"bootstrap servers: {bootstrap_servers}", flush=True)
        created = events.create_topics(bootstrap_servers, partitions=2,
                                       replication_factor=min(3, len(cluster.brokers))
                                       if cluster else 1)
        if created:
            print(f"created topics: {', '.join(created)}", flush=True)
        print(f"starting Spark ({master or 'local[2]'}) ...", flush=True)
        spark = local_spark(master=master)
        started = time.monotonic()
        results, names = [], list(names)
        for number, name in enumerate(names):
            if budget is not None and results and time.monotonic() - started > budget:
                print(f"\n(time budget of {budget:.0f} s spent: not running "
                      f"{', '.join(names[number:])}; run them by name)", flush=True)
                break
            results.append(show(name, spark, bootstrap_servers, workdir))
        return 0 if all(results) else 1
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            print("\nstopping the brokers and ZooKeeper", flush=True)
            cluster.stop()


def _bootstrap(text: str) -> str:
    """``host:port[,host:port...]``, checked before anything starts."""
    for address in text.split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"{address!r} is not host:port")
    return text


def _master(text: str) -> str:
    """``spark://HOST:PORT``, checked before anything starts."""
    from simplekafka.spark.session import check_master_url

    try:
        return check_master_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(prog="python -m stages.stage8_spark",
                            description=__doc__.splitlines()[0])
    parser.add_argument("pipeline", nargs="?", choices=CHOICES, metavar="PIPELINE",
                        help=f"one of {', '.join(CHOICES)} (default: the demo, all of them)")
    parser.add_argument("--bootstrap-server", type=_bootstrap, default=None,
                        help="a running cluster (default: start a LocalCluster)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where checkpoints (and a started cluster) live "
                             "(default: $SIMPLEKAFKA_DEMO_DIR or a temporary directory)")
    parser.add_argument("--master", type=_master, default=None, metavar="URL",
                        help="a Spark cluster's master, spark://HOST:PORT "
                             "(default: local[2] in this process)")
    args = parser.parse_args(argv)
    names = list(PIPELINES) if args.pipeline in (None, "all") else [args.pipeline]
    if args.bootstrap_server:
        from simplekafka.cluster import probe_broker

        host, _, port = args.bootstrap_server.split(",")[0].strip().rpartition(":")
        try:
            probe_broker(host, int(port), timeout=5.0)
        except Exception as exc:  # say which address, in one line
            parser.exit(1, f"{parser.prog}: error: no broker answers at {host}:{port} "
                           f"({type(exc).__name__}: {exc})\n")
    base = args.dir or (Path(os.environ["SIMPLEKAFKA_DEMO_DIR"])
                        if os.environ.get("SIMPLEKAFKA_DEMO_DIR") else None)
    try:
        with tempfile.TemporaryDirectory(prefix="stage8-", dir=base) as workdir:
            return run(names, args.bootstrap_server, Path(workdir),
                       budget=DEMO_BUDGET if args.pipeline is None else None,
                       master=args.master)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a demo ends with one clear sentence, not a traceback
        print(f"demo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
