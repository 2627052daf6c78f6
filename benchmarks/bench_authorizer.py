"""The authorizer's cost per check, with 1,000 ACLs (aim: under 5 µs).

Prints figures, never passes or fails. The ACLs: literal topic ACLs, prefixed
topic ACLs of several prefix lengths, group ACLs, a literal ``*`` and deny
entries, for 50 principals. Three figures per check:

* remembered: the same (principal, host, operation, resource) asked again, as
  every Produce or Fetch of a busy client is (the decision is kept until an ACL
  changes);
* decided: a decision worked out from the index each time (the first request
  of a client, or the first after an ACL change);
* the check as a handler makes it, through ``authorize`` with a fresh
  RequestContext-like object per call.

    .venv/bin/python benchmarks/bench_authorizer.py [--acls 1000] [--seconds 2] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.broker.security.authorizer import AclAuthorizer
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

OPERATIONS = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL]


class Context(NamedTuple):
    principal: str
    peer: str


def build(acl_count: int, seed: int = 7) -> tuple[AclAuthorizer, list[tuple]]:
    """An authorizer holding ``acl_count`` ACLs, and checks that hit and miss them."""
    rng = random.Random(seed)
    authorizer = AclAuthorizer(super_users=["User:admin"])
    principals = [f"User:user{i}" for i in range(50)]
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    count = 0
    while count < acl_count:
        roll = rng.random()
        if roll < 0.6:
            pattern = ResourcePattern(ResourceType.TOPIC, f"team{rng.randrange(40)}.topic"
                                      f"{rng.randrange(30)}")
        elif roll < 0.9:
            team = f"team{rng.randrange(40)}"
            pattern = ResourcePattern(ResourceType.TOPIC, rng.choice([team, team + ".",
                                                                      team + ".topic1"]),
                                      PatternType.PREFIXED)
        else:
            pattern = ResourcePattern(ResourceType.GROUP, f"group{rng.randrange(100)}")
        permission = AclPermissionType.DENY if rng.random() < 0.1 else AclPermissionType.ALLOW
        entry = AccessControlEntry(rng.choice(principals), rng.choice(["*", "10.0.0.1"]),
                                   rng.choice(OPERATIONS), permission)
        entries = by_pattern.setdefault(pattern, set())
        if entry not in entries:
            entries.add(entry)
            count += 1
    by_pattern.setdefault(ResourcePattern(ResourceType.TOPIC, "*"), set()).add(
        AccessControlEntry("User:auditor", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW))
    authorizer.replace_all(by_pattern)
    checks = [(Context(rng.choice(principals), "10.0.0.1:50000"),
               rng.choice([AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE]),
               ResourceType.TOPIC, f"team{rng.randrange(45)}.topic{rng.randrange(35)}")
              for _ in range(2000)]
    return authorizer, checks


def per_call_us(fn: Callable[[int], object], count: int, seconds: float) -> float:
    """CPU microseconds per call (process time: a loaded machine's waiting is not counted),
    best of five rounds, batches of 1,000 calls between clock readings."""
    best = float("inf")
    for _ in range(5):
        calls = 0
        start = time.process_time()
        while (elapsed := time.process_time() - start) < seconds / 5 or calls == 0:
            for i in range(1000):
                fn(i % count)
            calls += 1000
        best = min(best, elapsed / calls * 1e6)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--acls", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--tiny", action="store_true", help="a quick run that only shows it works")
    args = parser.parse_args()
    seconds = 0.05 if args.tiny else args.seconds
    load = os.getloadavg()
    authorizer, checks = build(args.acls)
    stored = sum(len(e) for e in authorizer.acls.values())
    allowed = sum(authorizer.authorize(*c) for c in checks)

    def remembered(i: int) -> bool:
        return authorizer.authorize(*checks[i])

    def decided(i: int) -> bool:
        context, operation, kind, name = checks[i]
        return authorizer.decide(context.principal, "10.0.0.1", operation, kind, name)

    def handler_like(i: int) -> bool:
        context, operation, kind, name = checks[i]
        return authorizer.authorize(Context(context.principal, context.peer), operation, kind,
                                    name)

    def nothing(i: int) -> bool:
        return checks[i] is None

    figures = {
        "the loop alone (baseline)": per_call_us(nothing, len(checks), seconds),
        "remembered decision": per_call_us(remembered, len(checks), seconds),
        "decided from the index": per_call_us(decided, len(checks), seconds),
        "as a handler asks it": per_call_us(handler_like, len(checks), seconds),
    }
    print(f"authorizer with {stored} ACLs on {len(authorizer.acls)} patterns; "
          f"{allowed}/{len(checks)} sample checks allowed")
    for name, micros in figures.items():
        print(f"  {name:26s} {micros:7.2f} µs per check (CPU time; aim < 5 µs)")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
          + ("  (tiny run: not representative)" if args.tiny else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
