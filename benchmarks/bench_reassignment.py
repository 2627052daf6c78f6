"""Replicas moved when the broker list changes: our plan against two others.

For 3→4, 4→3 and 6→8 brokers with 100 topics of 12 partitions (replication
factor 3), starting from Kafka-style assignments on the old brokers:

- ours: ``plan_reassignment`` (keep what can stay, move only what balance needs);
- from scratch: Kafka's ``--generate`` (rack-aware walk per topic on the new list);
- consistent hashing: each partition's replicas are the first distinct brokers
  clockwise from its hash on a ring with 64 virtual nodes per broker.

Issue 13 aims at the minimum possible and at most half of consistent hashing's.
Pure computation; the load average is printed because the plan times are wall clock.

    .venv/bin/python benchmarks/bench_reassignment.py [--tiny]
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.coordination import assign_replicas
from simplekafka.coordination.reassignment import plan_reassignment, replicas_moved

VIRTUAL_NODES = 64
REPLICATION = 3


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode()).digest()[:8], "big")


def consistent_hashing(keys, brokers: list[int], replication: int) -> dict:
    ring = sorted((_hash(f"broker-{b}-{v}"), b) for b in brokers for v in range(VIRTUAL_NODES))
    points = [point for point, _ in ring]
    plan = {}
    for topic, partition in keys:
        at = bisect.bisect(points, _hash(f"{topic}-{partition}"))
        replicas: list[int] = []
        while len(replicas) < replication:
            broker = ring[at % len(ring)][1]
            if broker not in replicas:
                replicas.append(broker)
            at += 1
        plan[(topic, partition)] = replicas
    return plan


def from_scratch(topics: int, partitions: int, brokers: list[int]) -> dict:
    """Kafka's generate: each topic assigned anew, start and shift from the topic's hash."""
    plan = {}
    for t in range(topics):
        seed = _hash(f"t{t}")
        fresh = assign_replicas(brokers, None, partitions, REPLICATION, seed, seed >> 8)
        plan.update({(f"t{t}", p): rs for p, rs in fresh.items()})
    return plan


def spread(plan: dict, brokers: list[int]) -> int:
    counts = Counter(b for rs in plan.values() for b in rs)
    return max(counts[b] for b in brokers) - min(counts[b] for b in brokers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="10 topics instead of 100")
    args = parser.parse_args()
    topics, partitions = (10, 12) if args.tiny else (100, 12)
    for old_count, new_count in ((3, 4), (4, 3), (6, 8)):
        old = list(range(1, old_count + 1))
        new = list(range(1, new_count + 1))
        current = from_scratch(topics, partitions, old)
        total = sum(len(rs) for rs in current.values())
        started = time.perf_counter()
        ours = plan_reassignment(current, new)
        took = time.perf_counter() - started
        scratch = from_scratch(topics, partitions, new)
        hashed_before = consistent_hashing(current, old, REPLICATION)
        hashed_after = consistent_hashing(current, new, REPLICATION)
        moved = replicas_moved(current, ours)
        print(f"{old_count}->{new_count} brokers, {topics} topics x {partitions} partitions, "
              f"{total} replicas: ours {moved} moved ({moved / total:.1%}, spread "
              f"{spread(ours, new)}, planned in {took:.2f} s), from scratch "
              f"{replicas_moved(current, scratch)} (spread {spread(scratch, new)}), "
              f"consistent hashing {replicas_moved(hashed_before, hashed_after)} "
              f"(spread {spread(hashed_after, new)}); {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
