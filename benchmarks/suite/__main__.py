"""``python -m benchmarks.suite``: run scenarios, print the table, write JSON and plots.

What ``simplekafka bench`` runs, as a script from the checkout (the suite is not
part of the installed library, so the command starts this module in a
subprocess instead of importing it). Exits 1 if a scenario failed.

    .venv/bin/python -m benchmarks.suite produce latency --mode tiny --out bench-results
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.suite import NAMES, print_table, run
from simplekafka.cluster import checkout_launcher


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", choices=NAMES)
    parser.add_argument("--mode", choices=("tiny", "small", "full"), default="small")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--bootstrap-server", default=None)
    parser.add_argument("--brokers-from", type=Path, default=None)
    parser.add_argument("--noisy", action="store_true")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--latency-seconds", type=float, default=None)
    parser.add_argument("--latency-runs", type=int, default=None)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction,
                        default=sys.stderr.isatty())
    args = parser.parse_args(argv)
    launcher = checkout_launcher(args.brokers_from) if args.brokers_from else None
    record = run(args.scenarios, args.mode, args.out, bootstrap_server=args.bootstrap_server,
                 noisy=args.noisy, plots=not args.no_plots, progress=args.progress,
                 latency_seconds=args.latency_seconds, latency_runs=args.latency_runs,
                 launcher=launcher)
    print_table(record)
    print(f"wrote {args.out / 'bench.json'}" +
          (f" and {len(record.plots)} plots" if record.plots else ""))
    return 1 if record.failures else 0


if __name__ == "__main__":
    sys.exit(main())
