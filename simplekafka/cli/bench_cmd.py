"""``simplekafka bench [produce|consume|latency|replication|scale|all]``: the benchmark suite.

Runs the scenarios of ``benchmarks/suite`` (from a checkout of the
repository: the suite is not part of the installed library) against a
LocalCluster it starts, or the broker at ``--bootstrap-server`` for the
single-broker scenarios; shows a progress bar, prints a table, writes
``bench.json`` and PNG plots into ``--out``. Above a one-minute load average
of 1 it refuses to run unless told ``--noisy``: such figures measure the
neighbours, and the run is then marked not representative everywhere.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from simplekafka.cli import CliError
from simplekafka.cli.broker_cmd import raise_open_files_limit

SCENARIOS = ("produce", "consume", "latency", "replication", "scale")
QUIET_LOAD = 1.0  # the suite's threshold too (benchmarks.suite.core.QUIET_LOAD)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="run the benchmark suite: table, JSON and plots",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("scenario", nargs="?", default="all", choices=[*SCENARIOS, "all"],
                        help="which scenario to run (default: all)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--tiny", action="store_const", const="tiny", dest="mode",
                      help="every scenario in seconds (checks that they run; figures mean "
                           "nothing)")
    size.add_argument("--full", action="store_const", const="full", dest="mode",
                      help="the sizes the issue names (10,000 partitions, 1,000 connections, "
                           "three runs each: long, needs an idle machine)")
    parser.set_defaults(mode="small")
    parser.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                        help="measure this broker instead of starting one (single-broker "
                             "scenarios; the others always start their own cluster)")
    parser.add_argument("--out", type=Path, default=Path("bench-results"), metavar="DIR",
                        help="where bench.json and the PNG plots go (default: bench-results; "
                             "docs/_static/bench for the docs' figures)")
    parser.add_argument("--noisy", action="store_true",
                        help=f"run even above a load average of {QUIET_LOAD:g}, marking the "
                             "figures not representative")
    parser.add_argument("--no-plots", action="store_true", help="skip drawing the PNG files")
    parser.set_defaults(func=bench)


def _suite():
    """benchmarks.suite, found next to this package in a checkout of the repository."""
    try:
        return importlib.import_module("benchmarks.suite")
    except ImportError:
        checkout = Path(__file__).resolve().parents[2]
        if not (checkout / "benchmarks" / "suite" / "__init__.py").is_file():
            raise CliError("the benchmark suite lives in the repository's benchmarks/ "
                           "directory: run this from a checkout of SimpleKafka") from None
        sys.path.insert(0, str(checkout))
        return importlib.import_module("benchmarks.suite")


def bench(args: argparse.Namespace) -> int:
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if load[0] > QUIET_LOAD and not args.noisy and args.mode != "tiny":
        raise CliError(f"load average {load[0]:.2f} is above {QUIET_LOAD:g}: figures taken "
                       "now would not be representative; wait for an idle machine, or pass "
                       "--noisy to record them marked as such")
    if args.out.exists() and not args.out.is_dir():
        raise CliError(f"--out {args.out} exists and is not a directory")
    suite = _suite()
    # 1,000 idle connections (--full) and the clients' own: more than a soft 1024.
    raise_open_files_limit()
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    record = suite.run(names, args.mode, args.out, bootstrap_server=args.bootstrap_server,
                       noisy=args.noisy, plots=not args.no_plots,
                       progress=sys.stderr.isatty())
    suite.print_table(record)
    print(f"wrote {args.out / 'bench.json'}" +
          (f" and {len(record.plots)} plots" if record.plots else ""))
    return 1 if record.failures else 0
