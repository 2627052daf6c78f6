"""One consumer group as its coordinator holds it: members, generation, state, offsets.

The states are Kafka's::

    Empty --join--> PreparingRebalance --all joined--> CompletingRebalance
      ^                  ^                                    | leader's SyncGroup
      |                  +-------- join, leave, expiry -------+--> Stable
      +-- last member gone (PreparingRebalance completes with nobody)

``Dead`` is a group that was deleted, or whose partition this broker no longer
leads. A *generation* is one completed rebalance: every JoinGroup round that
completes bumps it, and commits or heartbeats from an older generation are
refused (ILLEGAL_GENERATION). This module holds the data and the small pure
decisions (which protocol, who leads); the coordinator drives the transitions,
and ``Group.transition_to`` refuses any the diagram above does not have
(``VALID_PREVIOUS_STATES``, Kafka's ``GroupState.validPreviousStates``): a
coordinator bug then fails loudly instead of leaving a group in a state no
client can get out of.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simplekafka.broker.coordinator.runtime import IllegalStateTransition
from simplekafka.broker.group.records import OffsetValue
from simplekafka.protocol.definitions import F, build_struct

CONSUMER_PROTOCOL_TYPE = "consumer"
# The prefix every version of a "consumer" member's subscription starts with (the consumer
# protocol's v0): what the coordinator reads to know the topics a group consumes.
_SUBSCRIPTION_PREFIX = build_struct("ConsumerProtocolSubscription", [
    F("version", "int16"), F("topics", "[]string")], 0, False)

if TYPE_CHECKING:
    from twisted.internet import defer

    from simplekafka.broker.collaborators import DelayedCall


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# The states a group may enter each state from (the diagram in the module docstring).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@dataclass
class Member:
    """A consumer in the group, with what it asked for and what it was given."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    assignment: bytes = b""
    join_waiter: defer.Deferred | None = None  # while a JoinGroup waits
    sync_waiter: defer.Deferred | None = None  # while a SyncGroup waits
    expiry: DelayedCall | None = None  # the session timer

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass
class Group:
    """A group's coordinator-side state (one per group id on the coordinator)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, DelayedCall] = field(default_factory=dict)  # id -> expiry
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    state_timestamp: int = -1
    join_timer: DelayedCall | None = None  # the delayed completion of PreparingRebalance
    new_member_joined: bool = False
    initial_delay: bool = False  # True while a new group waits group.initial.rebalance.delay.ms

    def transition_to(self, state: GroupState) -> None:
        """Move to ``state``; raises IllegalStateTransition if it may not follow the current."""
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(
                f"group {self.group_id!r}: {self.state.value} -> {state.value} is not a "
                f"transition of the group state machine")
        self.state = state

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def all_rejoined(self) -> bool:
        return all(m.join_waiter is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports(self, protocol_type: str, protocols: list[str]) -> bool:
        """Could a member with these protocols join (same type, one protocol in common)?"""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        return bool(self.candidate_protocols() & set(protocols))

    def candidate_protocols(self) -> set[str]:
        """Protocols every current member supports."""
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes its most preferred common protocol; most votes win."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(n for n in member.protocol_names() if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(sorted(votes), key=lambda name: votes[name])

    def static_member(self, instance_id: str | None) -> Member | None:
        """The member that holds ``group.instance.id`` ``instance_id`` (KIP-345), if any."""
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.group_instance_id == instance_id),
                    None)

    def is_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """Is ``member_id`` an old incarnation of a static member that has since rejoined?"""
        holder = self.static_member(instance_id)
        return holder is not None and holder.member_id != member_id

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members of a "consumer" group subscribe to; None when that is not
        known (another protocol type, no protocol chosen yet, metadata that does not parse),
        Kafka's ``computeSubscribedTopics``."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or not self.members \
                or self.protocol is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                prefix, _ = _SUBSCRIPTION_PREFIX.read(member.metadata_for(self.protocol), 0)
            except Exception:  # any malformed metadata: unknown, as in Kafka
                return None
            topics.update(prefix.topics or ())
        return topics

    def summary(self) -> str:
        return (f"group {self.group_id!r} {self.state.value} generation {self.generation} "
                f"members {sorted(self.members)}")
