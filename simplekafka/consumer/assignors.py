"""Partition assignors, and the "consumer" protocol bytes every Kafka client agrees on.

The broker never decides who reads which partition: the group leader (one of
the consumers) does, with an *assignor* that all members support. That is why
a group can mix clients: confluent-kafka, kafka-python, aiokafka and ours all
speak ``roundrobin`` and the same subscription/assignment bytes
(``simplekafka.client.group_protocol``).

Three assignors, each ``assign(subscriptions, partitions_per_topic)`` returning
member id -> sorted list of TopicPartition:

* ``range``: per topic, consecutive partitions to members in member-id order
  (Kafka's default for years; uneven across many topics).
* ``roundrobin``: all partitions of all subscribed topics dealt one by one.
* ``sticky``: balanced like roundrobin, but members keep what they had (their
  subscription's user_data carries their current partitions), so a rebalance
  moves as few partitions as possible.
* ``cooperative-sticky`` (KIP-429): the sticky plan, from the owned partitions
  every member lists in its subscription (version 1), minus any partition that
  would move from one member to another: its owner first gives it up (revokes
  only that, keeps consuming the rest) and rejoins, and the follow-up rebalance
  hands it over. Its ``rebalance_protocol`` is ``"cooperative"``; the others are
  ``"eager"`` (every member gives up everything before each rebalance).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from simplekafka.client.group_protocol import (
    PROTOCOL_TYPE,
    Subscription,
    decode_assignment,
    decode_partitions,
    decode_subscription,
    encode_assignment,
    encode_partitions,
    encode_subscription,
)
from simplekafka.protocol.structs import TopicPartition

__all__ = ["ASSIGNORS", "PROTOCOL_TYPE", "CooperativeStickyAssignor", "RangeAssignor",
           "RoundRobinAssignor", "StickyAssignor", "Subscription", "assignor_for",
           "decode_assignment", "decode_subscription", "encode_assignment",
           "encode_subscription"]


# -- assignors ----------------------------------------------------------------------------

Assignment = dict[str, list[TopicPartition]]


def _all_partitions(topics: Iterable[str], counts: Mapping[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in sorted(set(topics)) if t in counts
            for p in range(counts[t])]


class RangeAssignor:
    name = "range"
    rebalance_protocol = "eager"

    def subscription(self, topics: list[str], owned: list[TopicPartition]) -> Subscription:
        return Subscription(topics)

    def assign(self, subscriptions: Mapping[str, Subscription],
               counts: Mapping[str, int]) -> Assignment:
        result: Assignment = {m: [] for m in subscriptions}
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        for topic in topics:
            if topic not in counts:
                continue
            members = sorted(m for m, s in subscriptions.items() if topic in s.topics)
            per, extra = divmod(counts[topic], len(members))
            start = 0
            for i, member in enumerate(members):
                size = per + (1 if i < extra else 0)
                result[member] += [TopicPartition(topic, p) for p in range(start, start + size)]
                start += size
        return {m: sorted(tps) for m, tps in result.items()}


class RoundRobinAssignor:
    name = "roundrobin"
    rebalance_protocol = "eager"

    def subscription(self, topics: list[str], owned: list[TopicPartition]) -> Subscription:
        return Subscription(topics)

    def assign(self, subscriptions: Mapping[str, Subscription],
               counts: Mapping[str, int]) -> Assignment:
        result: Assignment = {m: [] for m in subscriptions}
        members = sorted(subscriptions)
        if not members:
            return result
        topics = {t for s in subscriptions.values() for t in s.topics}
        turn = 0
        for tp in _all_partitions(topics, counts):
            # Deal to the next member (in a circle) that subscribes to this topic.
            for _ in range(len(members)):
                member = members[turn % len(members)]
                turn += 1
                if tp.topic in subscriptions[member].topics:
                    result[member].append(tp)
                    break
        return {m: sorted(tps) for m, tps in result.items()}


class StickyAssignor:
    """Balanced, and moving as little as possible: members keep what they owned."""

    name = "sticky"
    rebalance_protocol = "eager"

    def subscription(self, topics: list[str], owned: list[TopicPartition]) -> Subscription:
        return Subscription(topics, encode_partitions(owned))

    def assign(self, subscriptions: Mapping[str, Subscription],
               counts: Mapping[str, int]) -> Assignment:
        members = sorted(subscriptions)
        result: Assignment = {m: [] for m in members}
        if not members:
            return result
        topics = {t for s in subscriptions.values() for t in s.topics}
        wanted = set(_all_partitions(topics, counts))
        owned = {m: self._owned(subscriptions[m]) for m in members}
        base, extra = divmod(len(wanted), len(members))
        # Members holding the most keep up to base+1 (as many as there are extras).
        order = sorted(members, key=lambda m: (-len(owned[m]), m))
        taken: set[TopicPartition] = set()
        for rank, member in enumerate(order):
            limit = base + (1 if rank < extra else 0)
            for tp in owned[member]:
                if len(result[member]) >= limit:
                    break
                if tp in wanted and tp not in taken and tp.topic in subscriptions[member].topics:
                    result[member].append(tp)
                    taken.add(tp)
        for tp in sorted(wanted - taken):
            eligible = [m for m in members if tp.topic in subscriptions[m].topics]
            if eligible:
                fewest = min(eligible, key=lambda m: (len(result[m]), m))
                result[fewest].append(tp)
        return {m: sorted(tps) for m, tps in result.items()}

    @staticmethod
    def _owned(subscription: Subscription) -> list[TopicPartition]:
        if not subscription.user_data:
            return []
        try:
            return decode_partitions(subscription.user_data)
        except (struct.error, ValueError):
            return []  # another client's user data: treat as owning nothing


class CooperativeStickyAssignor(StickyAssignor):
    """Sticky, handing a partition over in two rebalances so no member stops (KIP-429)."""

    name = "cooperative-sticky"
    rebalance_protocol = "cooperative"

    def subscription(self, topics: list[str], owned: list[TopicPartition]) -> Subscription:
        return Subscription(topics, b"", tuple(owned))

    def assign(self, subscriptions: Mapping[str, Subscription],
               counts: Mapping[str, int]) -> Assignment:
        plan = super().assign(subscriptions, counts)
        owner: dict[TopicPartition, str] = {}
        for member in sorted(subscriptions):
            for tp in self._owned(subscriptions[member]):
                owner.setdefault(tp, member)
        # A partition still owned by someone else is held back this round: its owner
        # revokes it and rejoins, and the next rebalance gives it to its new member.
        return {m: [tp for tp in tps if owner.get(tp, m) == m] for m, tps in plan.items()}

    @staticmethod
    def _owned(subscription: Subscription) -> list[TopicPartition]:
        return list(subscription.owned_partitions or ())


ASSIGNORS = {a.name: a for a in (RangeAssignor, RoundRobinAssignor, StickyAssignor,
                                 CooperativeStickyAssignor)}
"""Assignor classes by protocol name."""


def assignor_for(name: str) -> RangeAssignor | RoundRobinAssignor | StickyAssignor:
    """An assignor instance by name (ValueError naming the known ones otherwise)."""
    try:
        return ASSIGNORS[name]()
    except KeyError:
        raise ValueError(
            f"unknown partition assignor {name!r} (known: {', '.join(sorted(ASSIGNORS))})"
        ) from None
