"""The controller's leader elections, as pure functions of what it knows.

Kafka's ``PartitionLeaderElectionAlgorithms``: each takes a partition's state
(leader, leader epoch, ISR), its assignment and the brokers that count, and
returns the state to write, or None when nothing should change. They never
touch ZooKeeper; the controller writes what they decide, conditional on the
state znode's version, and decides again when that write finds the znode moved.

* a new partition, and an offline one (its leader is gone): stage 2 teaches
  these two, so they live in ``simplekafka.coordination.topics`` and are
  re-exported here;
* a leader that stays while dead brokers leave its ISR;
* the preferred replica (the first of the assignment) taking leadership back;
* a broker shutting down cleanly handing its leaderships to another ISR member.

Every change of leader or ISR bumps the leader epoch; an ISR is never emptied.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from simplekafka.coordination.topics import (
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
)
from simplekafka.coordination.znodes import PartitionState

__all__ = [
    "elect_for_controlled_shutdown",
    "elect_leader_for_new_partition",
    "elect_leader_for_offline_partition",
    "elect_preferred_leader",
    "finish_reassignment",
    "remove_dead_from_isr",
    "revert_reassignment",
]


def remove_dead_from_isr(state: PartitionState, live: Collection[int],
                         controller_epoch: int) -> PartitionState | None:
    """The leader stays; replicas not in ``live`` leave its ISR (never emptied)."""
    isr = tuple(r for r in state.isr if r in live)
    if isr == state.isr or not isr:
        return None
    return PartitionState(state.leader, state.leader_epoch + 1, isr, controller_epoch)


def elect_preferred_leader(state: PartitionState, replicas: Sequence[int],
                           live: Collection[int], shutting_down: Collection[int],
                           controller_epoch: int) -> PartitionState | None:
    """Give leadership back to the first replica of the assignment, if it is live,
    in the ISR and not shutting down (and does not lead already)."""
    preferred = replicas[0] if replicas else -1
    if (state.leader == preferred or preferred not in live
            or preferred not in state.isr or preferred in shutting_down):
        return None
    return PartitionState(preferred, state.leader_epoch + 1, state.isr, controller_epoch)


def elect_for_controlled_shutdown(state: PartitionState, replicas: Sequence[int],
                                  live: Collection[int], shutting_down: Collection[int],
                                  controller_epoch: int) -> PartitionState | None:
    """Move leadership off brokers shutting down and drop them from the ISR.

    The new leader is the first replica (assignment order) in the ISR that is
    live and staying; with none, the leaving broker keeps leading until it goes
    (the partition then goes offline, as in Kafka). A follower that leaves is
    dropped from the ISR unless it is the last member.
    """
    staying = [r for r in state.isr if r not in shutting_down and r in live]
    if state.leader in shutting_down:
        candidates = [r for r in replicas if r in staying]
        if not candidates:
            return None
        return PartitionState(candidates[0], state.leader_epoch + 1, tuple(staying),
                              controller_epoch)
    isr = tuple(r for r in state.isr if r not in shutting_down)
    if isr == state.isr or not isr:
        return None
    return PartitionState(state.leader, state.leader_epoch + 1, isr, controller_epoch)


def finish_reassignment(state: PartitionState, target: Sequence[int], live: Collection[int],
                        controller_epoch: int) -> PartitionState | None:
    """The state once every target replica is in the ISR: the leaving replicas leave the
    ISR, and leadership moves to the first target replica in it if the leader leaves
    (or is dead). None while a target replica is not in sync yet."""
    if not set(target) <= set(state.isr):
        return None
    isr = tuple(r for r in state.isr if r in target)
    leader = state.leader
    if leader not in target or leader not in live:
        candidates = [r for r in target if r in isr and r in live]
        if not candidates:
            return None
        leader = candidates[0]
    return PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)


def revert_reassignment(state: PartitionState, original: Sequence[int], live: Collection[int],
                        controller_epoch: int) -> PartitionState:
    """A cancelled move: back to the original replicas. The ISR keeps only them (never
    emptied), and an adding replica that leads hands over to the first original one in
    the ISR and live (with none, the partition has no leader until one returns)."""
    isr = tuple(r for r in state.isr if r in original) or state.isr
    leader = state.leader
    if leader not in original or leader not in live:
        candidates = [r for r in original if r in isr and r in live]
        leader = candidates[0] if candidates else -1
    return PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)
