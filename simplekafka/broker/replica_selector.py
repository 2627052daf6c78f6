"""Fetch from the closest replica (KIP-392): which replica a consumer should read from.

A consumer with ``client.rack`` sends its rack in Fetch (v11 ``rack_id``). With
``replica.selector.class`` set to Kafka's RackAwareReplicaSelector, the
partition's leader answers such a fetch with ``preferred_read_replica``: a
replica in the consumer's rack that has what it asks for (an in-sync follower
whose log reaches the fetch offset), or none (-1, keep reading here) when the
leader itself is in that rack or no replica is. The consumer then fetches from
that follower, which serves consumers up to its high watermark (it learns the
HW in every fetch answer from the leader), so it never shows a record that is
not acknowledged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"  # Kafka's default
KNOWN_SELECTORS = (RACK_AWARE, LEADER_SELECTOR)
NO_PREFERENCE = -1


class RackAwareReplicaSelector:
    """Kafka's RackAwareReplicaSelector: a replica in the client's rack, the leader if it is
    one (or none is), else the one with the longest log."""

    def __init__(self, rack_of: Callable[[int], str | None]):
        self.rack_of = rack_of

    def preferred_read_replica(self, partition: Partition, client_rack: str,
                               fetch_offset: int) -> int:
        """The broker to read from, or NO_PREFERENCE (this leader)."""
        if not client_rack or self.rack_of(partition.local_broker_id) == client_rack:
            return NO_PREFERENCE
        candidates = [
            (partition.follower_end_offsets.get(replica, -1), replica)
            for replica in partition.isr
            if replica != partition.local_broker_id and self.rack_of(replica) == client_rack
            and partition.follower_end_offsets.get(replica, -1) >= fetch_offset]
        if not candidates:
            return NO_PREFERENCE
        return max(candidates)[1]


def replica_selector(class_name: str | None,
                     rack_of: Callable[[int], str | None]) -> RackAwareReplicaSelector | None:
    """The selector ``replica.selector.class`` names (None: consumers read from leaders)."""
    if class_name == RACK_AWARE:
        return RackAwareReplicaSelector(rack_of)
    return None
