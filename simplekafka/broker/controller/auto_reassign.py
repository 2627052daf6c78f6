"""Automatic reassignment on membership change (``auto.reassign.on.membership.change``).

Off by default, as Kafka has no such thing: operators run
``kafka-reassign-partitions``. When it is on, the controller checks now and
then (a fraction of the shorter delay below) whether the brokers have changed
for good:

* a broker that holds replicas has been gone longer than
  ``auto.reassign.grace.ms`` (a restart or a short outage must not move data);
* a broker with no replicas has been up for ``auto.reassign.new.broker.delay.ms``
  (a broker that flaps while joining gets nothing yet).

Then it plans with the same minimal-movement generator as ``reassign
--generate`` (``coordination.reassignment``) onto the live brokers (new ones
only once settled), sets the replication throttle
(``auto.reassign.throttle.bytes``) for the moving replicas, and writes
``/admin/reassign_partitions`` as an operator would; the ordinary reassignment
machinery carries it out. At most one is in flight: nothing is planned while
the znode exists or a move is unfinished, and while any gone broker is still
within its grace period (it may come back). The throttle is cleared when the
move is done. Partitions whose replication factor exceeds the brokers left
stay as they are (under-replicated) until enough brokers are back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from simplekafka.coordination.reassignment import plan_reassignment

Key = tuple[str, int]


@dataclass(frozen=True)
class AutoReassignSettings:
    enabled: bool = False
    grace_ms: int = 600_000
    new_broker_delay_ms: int = 300_000
    throttle: int = 10_485_760

    @property
    def check_seconds(self) -> float:
        """How often the controller looks: often enough to act within ~1/4 of a delay."""
        shortest = min(self.grace_ms, self.new_broker_delay_ms) / 1000.0
        return min(max(shortest / 4, 0.5), 30.0)


@dataclass
class Membership:
    """Since when each live broker has been up, and each missing replica holder gone,
    as the controller observed it (a new controller starts counting afresh)."""

    up_since: dict[int, float] = field(default_factory=dict)
    gone_since: dict[int, float] = field(default_factory=dict)

    def observe(self, live: set[int], holders: set[int], now: float) -> None:
        for broker in live:
            self.up_since.setdefault(broker, now)
            self.gone_since.pop(broker, None)
        for broker in holders - live:
            self.gone_since.setdefault(broker, now)
        for broker in list(self.up_since):
            if broker not in live:
                del self.up_since[broker]
        for broker in list(self.gone_since):
            if broker not in holders:
                del self.gone_since[broker]


def plan_automatic_moves(assignments: Mapping[Key, tuple[int, ...]], live: set[int],
                         racks: Mapping[int, str | None], membership: Membership, now: float,
                         settings: AutoReassignSettings) -> dict[Key, list[int]]:
    """The partitions to move now, and where ({} when there is nothing to do yet)."""
    holders = {b for replicas in assignments.values() for b in replicas}
    gone = holders - live
    if any(now - membership.gone_since.get(b, now) < settings.grace_ms / 1000.0
           for b in gone):
        return {}  # it may come back: wait until its grace period is over
    settled_new = {b for b in live - holders
                   if now - membership.up_since.get(b, now) >= settings.new_broker_delay_ms
                   / 1000.0}
    if not gone and not settled_new:
        return {}
    targets = (live & holders) | settled_new
    movable = {k: r for k, r in assignments.items() if len(r) <= len(targets)}
    if not movable:
        return {}
    plan = plan_reassignment(movable, sorted(targets), {b: racks.get(b) for b in targets})
    # Only partitions whose replicas change: a reordering alone moves no data, only a
    # leadership, and is left to the preferred leader election.
    return {k: list(r) for k, r in plan.items() if set(r) != set(assignments[k])}
