"""Automatic reassignment's decisions, without processes: when to move, and what.

Nothing moves while a gone broker may still come back (its grace period) or
while a new broker has not been up for its delay; then the minimal-movement
plan is used, on the live brokers only, and partitions that cannot be placed
(replication factor above the brokers left) stay where they are.
"""

from __future__ import annotations

from simplekafka.broker.controller.auto_reassign import (
    AutoReassignSettings,
    Membership,
    plan_automatic_moves,
)
from simplekafka.coordination.reassignment import plan_reassignment

SETTINGS = AutoReassignSettings(enabled=True, grace_ms=10_000, new_broker_delay_ms=5_000)
ASSIGNMENT = {("t", 0): (1, 2), ("t", 1): (2, 3), ("t", 2): (3, 1), ("t", 3): (1, 2)}
NO_RACKS: dict[int, str | None] = {1: None, 2: None, 3: None, 4: None}


def decide(membership: Membership, live: set[int], now: float, assignment=None):
    assignment = assignment or ASSIGNMENT
    holders = {b for r in assignment.values() for b in r}
    membership.observe(live, holders, now)
    return plan_automatic_moves(assignment, live, NO_RACKS, membership, now, SETTINGS)


def test_a_gone_broker_is_replaced_only_after_its_grace_period():
    membership = Membership()
    assert decide(membership, {1, 2, 3}, 0.0) == {}  # all present: nothing to do
    assert decide(membership, {1, 2}, 1.0) == {}  # 3 just went
    assert decide(membership, {1, 2}, 10.9) == {}  # still within 10 s
    moves = decide(membership, {1, 2}, 11.0)
    assert sorted(moves) == [("t", 1), ("t", 2)]  # only the partitions 3 held
    assert all(sorted(r) == [1, 2] for r in moves.values())


def test_a_broker_back_within_its_grace_period_moves_nothing():
    membership = Membership()
    decide(membership, {1, 2, 3}, 0.0)
    assert decide(membership, {1, 2}, 1.0) == {}
    assert decide(membership, {1, 2, 3}, 5.0) == {}
    assert decide(membership, {1, 2}, 12.0) == {}  # gone again: its grace starts over
    assert decide(membership, {1, 2}, 21.0) == {}
    assert decide(membership, {1, 2}, 22.0) != {}


def test_a_new_broker_gets_its_share_once_it_has_been_up_for_a_while():
    membership = Membership()
    assert decide(membership, {1, 2, 3}, 0.0) == {}
    assert decide(membership, {1, 2, 3, 4}, 1.0) == {}
    assert decide(membership, {1, 2, 3, 4}, 5.9) == {}
    moves = decide(membership, {1, 2, 3, 4}, 6.0)
    expected = plan_reassignment(ASSIGNMENT, [1, 2, 3, 4])
    assert moves == {k: r for k, r in expected.items() if set(r) != set(ASSIGNMENT[k])}
    assert moves and all(4 in r for r in moves.values())


def test_no_move_while_another_gone_broker_may_still_return_and_none_that_cannot_fit():
    membership = Membership()
    three = {("t", 0): (1, 2, 3), ("u", 0): (1, 2)}
    decide(membership, {1, 2, 3, 4}, 0.0, three)
    assert decide(membership, {1, 2, 4}, 1.0, three) == {}
    assert decide(membership, {1, 4}, 8.0, three) == {}  # 2 went at 8: wait for it too
    # Both gone for good: RF 3 cannot fit on two brokers and stays; u-0 moves onto 1 and 4.
    assert decide(membership, {1, 4}, 18.0, three) == {("u", 0): [1, 4]}
