"""``simplekafka bench [produce|consume|latency|replication|scale|all]``: the benchmark suite.

Runs the scenarios of ``benchmarks/suite`` (from a checkout of the
repository: the suite is not part of the installed library, so the command
runs it as a script, ``python -m benchmarks.suite`` in the checkout, rather
than importing it) against a
LocalCluster it starts, or the broker at ``--bootstrap-server`` for the
single-broker scenarios; shows a progress bar, prints a table, writes
``bench.json`` and PNG plots into ``--out``. Above a one-minute load average
of 1 it refuses to run unless told ``--noisy``: such figures measure the
neighbours, and the run is then marked not representative everywhere.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from simplekafka.cli import CliError, positive_float, positive_int
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
    parser.add_argument("--latency-seconds", type=positive_float, default=None, metavar="S",
                        help="seconds per run of the lead latency table, Python clients "
                             "against Redis (default 20; 2 with --tiny)")
    parser.add_argument("--latency-runs", type=positive_int, default=None, metavar="N",
                        help="runs of that table, whose medians are printed (default 3; 1 "
                             "with --tiny)")
    parser.add_argument("--brokers-from", type=Path, default=None, metavar="CHECKOUT",
                        help="start the brokers from another checkout's simplekafka package, "
                             "the harness and clients from this one: an A/B of two trees "
                             "through one harness")
    parser.set_defaults(func=bench)


def _checkout() -> Path:
    """The repository checkout this package runs from, which holds benchmarks/suite."""
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "benchmarks" / "suite" / "__main__.py").is_file():
        raise CliError("the benchmark suite lives in the repository's benchmarks/ "
                       "directory: run this from a checkout of SimpleKafka")
    return checkout


def suite_command(args: argparse.Namespace) -> list[str]:
    """``python -m benchmarks.suite ...``: the suite run as a script, from the checkout."""
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    command = [sys.executable, "-m", "benchmarks.suite", *names, "--mode", args.mode,
               "--out", str(args.out.resolve()),
               "--progress" if sys.stderr.isatty() else "--no-progress"]
    if args.bootstrap_server:
        command += ["--bootstrap-server", args.bootstrap_server]
    if args.noisy:
        command.append("--noisy")
    if args.no_plots:
        command.append("--no-plots")
    if args.latency_seconds is not None:
        command += ["--latency-seconds", str(args.latency_seconds)]
    if args.latency_runs is not None:
        command += ["--latency-runs", str(args.latency_runs)]
    if args.brokers_from is not None:
        command += ["--brokers-from", str(args.brokers_from.resolve())]
    return command


def bench(args: argparse.Namespace) -> int:
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if load[0] > QUIET_LOAD and not args.noisy and args.mode != "tiny":
        raise CliError(f"load average {load[0]:.2f} is above {QUIET_LOAD:g}: figures taken "
                       "now would not be representative; wait for an idle machine, or pass "
                       "--noisy to record them marked as such")
    if args.out.exists() and not args.out.is_dir():
        raise CliError(f"--out {args.out} exists and is not a directory")
    checkout = _checkout()
    if args.brokers_from is not None and not (args.brokers_from / "simplekafka" /
                                              "__init__.py").is_file():
        raise CliError(f"--brokers-from {args.brokers_from}: no simplekafka package there "
                       "(give the root of a SimpleKafka checkout)")
    # 1,000 idle connections (--full) and the clients' own: more than a soft 1024
    # (the limit is inherited by the suite's process).
    raise_open_files_limit()
    return subprocess.run(suite_command(args), cwd=checkout, check=False).returncode
