"""The controller's elections as pure functions: state in, state (or None) out."""

from __future__ import annotations

from simplekafka.broker.controller.elections import (
    elect_for_controlled_shutdown,
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    elect_preferred_leader,
    remove_dead_from_isr,
)
from simplekafka.coordination.znodes import PartitionState

EPOCH = 7


def state(leader: int, isr: tuple[int, ...], leader_epoch: int = 3) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=leader_epoch, isr=isr,
                          controller_epoch=EPOCH - 1)


def test_all_four_algorithms_are_here():
    new = elect_leader_for_new_partition((2, 1), live={1, 2}, controller_epoch=EPOCH)
    assert (new.leader, new.isr) == (2, (2, 1))
    offline = elect_leader_for_offline_partition((1, 2, 3), state(1, (1, 2, 3)), {2, 3}, EPOCH)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (2, (2, 3), 4)


def test_dead_brokers_leave_the_isr_of_a_leader_that_stays():
    shrunk = remove_dead_from_isr(state(1, (1, 2, 3)), live={1, 3}, controller_epoch=EPOCH)
    assert shrunk == PartitionState(1, 4, (1, 3), EPOCH)
    assert remove_dead_from_isr(state(1, (1, 3)), {1, 3}, EPOCH) is None  # nothing to do
    assert remove_dead_from_isr(state(1, (2,)), {1}, EPOCH) is None  # never emptied


def test_preferred_leader_only_when_live_in_sync_and_staying():
    moved = elect_preferred_leader(state(2, (1, 2)), (1, 2), {1, 2}, set(), EPOCH)
    assert moved == PartitionState(1, 4, (1, 2), EPOCH)
    assert elect_preferred_leader(state(1, (1, 2)), (1, 2), {1, 2}, set(), EPOCH) is None
    assert elect_preferred_leader(state(2, (2,)), (1, 2), {1, 2}, set(), EPOCH) is None
    assert elect_preferred_leader(state(2, (1, 2)), (1, 2), {2}, set(), EPOCH) is None
    assert elect_preferred_leader(state(2, (1, 2)), (1, 2), {1, 2}, {1}, EPOCH) is None


def test_controlled_shutdown_hands_leadership_to_the_first_staying_isr_member():
    moved = elect_for_controlled_shutdown(state(1, (1, 3, 2)), (1, 2, 3), {1, 2, 3}, {1}, EPOCH)
    assert moved == PartitionState(2, 4, (3, 2), EPOCH)  # assignment order picks 2
    # Alone in sync: it keeps leading until it goes.
    assert elect_for_controlled_shutdown(state(1, (1,)), (1, 2), {1, 2}, {1}, EPOCH) is None
    # A follower that leaves drops out of the ISR; the leader stays.
    follower = elect_for_controlled_shutdown(state(1, (1, 2)), (1, 2), {1, 2}, {2}, EPOCH)
    assert follower == PartitionState(1, 4, (1,), EPOCH)
