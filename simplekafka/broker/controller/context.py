"""What the controller knows of the cluster (Kafka's ``ControllerContext``).

Read from ZooKeeper when a broker becomes controller and kept current by the
watches; only the controller's event thread touches it. Elections read it,
the controller's writes update it, and the requests to brokers are built from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simplekafka.coordination.znodes import BrokerInfo, PartitionState

TopicPartitionKey = tuple[str, int]


@dataclass
class ControllerContext:
    """Live brokers, assignments and partition states (with their znode versions)."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)  # id -> registration czxid
    assignments: dict[str, dict[int, tuple[int, ...]]] = field(default_factory=dict)
    states: dict[TopicPartitionKey, tuple[PartitionState, int]] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)  # announced a controlled shutdown
    reassigning: dict[TopicPartitionKey, tuple[int, ...]] = field(default_factory=dict)  # TRS
    # Moving partitions' (adding, removing) replicas, as in the topic znode (version 2).
    moving: dict[TopicPartitionKey, tuple[tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict)
    read: set[TopicPartitionKey] = field(default_factory=set)  # states read from ZooKeeper
    topic_ids: dict[str, bytes] = field(default_factory=dict)  # KIP-516, from the topic znodes

    def states_unread(self, keys: list[TopicPartitionKey]) -> list[TopicPartitionKey]:
        """Those of ``keys`` whose state znode was not read yet (absent ones count as read)."""
        return [key for key in keys if key not in self.read]

    @property
    def live(self) -> set[int]:
        return set(self.brokers)

    def replicas_of(self, key: TopicPartitionKey) -> tuple[int, ...] | None:
        return self.assignments.get(key[0], {}).get(key[1])

    def all_partitions(self) -> list[TopicPartitionKey]:
        return [(t, p) for t, parts in self.assignments.items() for p in parts]

    def replicas_items(self) -> list[tuple[TopicPartitionKey, tuple[int, ...]]]:
        return [((t, p), r) for t, parts in self.assignments.items() for p, r in parts.items()]

    def keys_needing_leaders(self) -> list[TopicPartitionKey]:
        """Partitions with no state yet, or whose leader is not live."""
        live = self.live
        return [(topic, index) for topic, partitions in self.assignments.items()
                for index in partitions
                if (current := self.states.get((topic, index))) is None
                or current[0].leader not in live]
