"""Writes tools/test_durations.json from a full run's junit XML: seconds per scheduling unit.

    ./run_tests.sh --junitxml=/tmp/run.xml
    python tools/test_durations.py /tmp/run.xml

conftest.py hands the units (conftest.worker_group: a module, all local Spark, a learner
stage) to the pytest-xdist workers longest first, by these seconds; a stale file only
makes the order worse, never a result different. ``--top N`` prints the N longest units.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conftest import DURATIONS, worker_group  # noqa: E402


def node_id(classname: str, name: str) -> str:
    """The pytest node id of a junit testcase (``a.b.test_m.TestC`` + ``name``)."""
    parts = classname.split(".")
    first_class = next((i for i, part in enumerate(parts) if part.startswith("Test")),
                       len(parts))
    module = "/".join(parts[:first_class]) + ".py"
    return "::".join([module, *parts[first_class:], name])


def unit_seconds(junit: Path) -> dict[str, float]:
    """Seconds per unit, summed over its testcases (a rerun counts: it took that time)."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        nodeid = node_id(case.get("classname", ""), case.get("name", ""))
        seconds[worker_group(nodeid)] += float(case.get("time") or 0)
    return dict(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path, help="a full run's junit XML (--junitxml)")
    parser.add_argument("--top", type=int, default=0, help="print the N longest units")
    args = parser.parse_args()
    try:
        seconds = unit_seconds(args.junit)
    except (OSError, ET.ParseError) as exc:
        sys.exit(f"test_durations: cannot read {args.junit}: {exc}")
    ordered = dict(sorted(seconds.items(), key=lambda unit: (-unit[1], unit[0])))
    DURATIONS.write_text(json.dumps({k: round(v, 1) for k, v in ordered.items()},
                                    indent=0) + "\n")
    total = sum(seconds.values())
    print(f"test_durations: {len(seconds)} units, {total:.0f} s of tests -> {DURATIONS}")
    for unit, took in list(ordered.items())[:args.top]:
        print(f"{took:8.1f}  {unit}")


if __name__ == "__main__":
    main()
