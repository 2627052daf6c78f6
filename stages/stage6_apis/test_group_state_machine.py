"""The group state machine: every legal transition is taken, every other one refused."""

from __future__ import annotations

import pytest

from simplekafka.broker.group.state import (
    VALID_PREVIOUS_STATES,
    Group,
    GroupState,
    IllegalStateTransition,
)

LEGAL = {(before, after) for after, befores in VALID_PREVIOUS_STATES.items()
         for before in befores}
ALL = [(before, after) for before in GroupState for after in GroupState]


@pytest.mark.parametrize(("before", "after"), ALL, ids=[f"{b.value}->{a.value}" for b, a in ALL])
def test_transition_to_takes_legal_transitions_and_refuses_the_rest(before, after):
    group = Group("g", before)
    if (before, after) in LEGAL:
        group.transition_to(after)
        assert group.state is after
    else:
        with pytest.raises(IllegalStateTransition, match=f"{before.value} -> {after.value}"):
            group.transition_to(after)
        assert group.state is before


def test_a_rebalance_round_trip_is_legal_and_skipping_the_sync_is_not():
    group = Group("g")
    for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                  GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.EMPTY,
                  GroupState.DEAD):
        group.transition_to(state)
    fresh = Group("h")
    fresh.transition_to(GroupState.PREPARING_REBALANCE)
    with pytest.raises(IllegalStateTransition):
        fresh.transition_to(GroupState.STABLE)  # Stable only after the leader's SyncGroup
    with pytest.raises(IllegalStateTransition):
        Group("i", GroupState.DEAD).transition_to(GroupState.EMPTY)  # the dead stay dead
