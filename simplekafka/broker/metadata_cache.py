"""What this broker knows about the cluster: live brokers, the controller, every partition.

Every broker answers Metadata from this cache, and the cache changes only when
the controller says so with an UpdateMetadata request (as in ZooKeeper-mode
Kafka: brokers do not read topic state from ZooKeeper themselves). A request
from a controller with an older epoch than one already seen is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import Node, PartitionMetadata
from simplekafka.protocol.topic_ids import ZERO_ID

if TYPE_CHECKING:
    from simplekafka.protocol.message_types import (
        UpdateMetadataRequest,
        UpdateMetadataRequestTopicStatesPartitionStates,
        UpdateMetadataRequestUngroupedPartitionStates,
    )

    _PartitionState = (UpdateMetadataRequestTopicStatesPartitionStates
                       | UpdateMetadataRequestUngroupedPartitionStates)


@dataclass(frozen=True)
class CachedPartitionState(PartitionMetadata):
    """A partition as the last UpdateMetadata described it (Kafka's
    UpdateMetadataPartitionState): the PartitionMetadata a client makes of the
    Metadata answer, plus the versions the controller wrote it with."""

    zk_version: int = 0
    controller_epoch: int = 0


@dataclass
class MetadataCache:
    """The last UpdateMetadata applied, in a shape Metadata and the handlers can read."""

    controller_id: int = -1
    controller_epoch: int = -1
    brokers: dict[int, Node] = field(default_factory=dict)  # at each broker's first listener
    # broker id -> listener name -> Node: where each broker serves each listener.
    listener_nodes: dict[int, dict[str, Node]] = field(default_factory=dict)
    topics: dict[str, dict[int, CachedPartitionState]] = field(default_factory=dict)
    # KIP-516: each topic's ID (UpdateMetadata v7+), and the way back from an ID to its name.
    topic_ids: dict[str, bytes] = field(default_factory=dict)
    topic_names_by_id: dict[bytes, str] = field(default_factory=dict)
    listeners: list[Callable[[], None]] = field(default_factory=list)
    # Told which (topic, partition)s an UpdateMetadata deleted (Kafka's
    # maybeUpdateMetadataCache returns them for the group coordinator).
    deletion_listeners: list[Callable[[list[tuple[str, int]]], None]] = field(
        default_factory=list)

    def apply_update_metadata(self, request: UpdateMetadataRequest) -> ErrorCode:
        """Apply an UpdateMetadata (v5+ shape: topic_states; v0-4: ungrouped_partition_states)."""
        if request["controller_epoch"] < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.controller_epoch = request["controller_epoch"]
        self.controller_id = request["controller_id"]
        brokers, listener_nodes = {}, {}
        for live in request["live_brokers"]:
            endpoints = live.get("endpoints") or []
            rack = live.get("rack")
            node_id = live["id"]
            if endpoints:
                host, port = endpoints[0]["host"], endpoints[0]["port"]
            else:
                host, port = live.get("v0_host") or "", live.get("v0_port", -1)
            brokers[node_id] = Node(node_id, host, port, rack)
            listener_nodes[node_id] = {
                e.get("listener") or "PLAINTEXT": Node(node_id, e["host"], e["port"], rack)
                for e in endpoints} or {"PLAINTEXT": brokers[node_id]}
        self.brokers = brokers
        self.listener_nodes = listener_nodes
        states: list[tuple[str, _PartitionState]] = []
        for topic_state in request.get("topic_states") or []:
            name = topic_state["topic_name"]
            states += [(name, p) for p in topic_state["partition_states"]]
            topic_id = topic_state.get("topic_id", ZERO_ID)
            if topic_id != ZERO_ID and self.topic_ids.get(name) != topic_id:
                self._forget_id(name)
                self.topic_ids[name] = topic_id
                self.topic_names_by_id[topic_id] = name
        for ungrouped in request.get("ungrouped_partition_states") or []:
            states.append((ungrouped["topic_name"], ungrouped))
        deleted: list[tuple[str, int]] = []
        for topic, p in states:
            index = p["partition_index"]
            if p["leader"] == LEADER_DURING_DELETE:
                partitions = self.topics.get(topic)
                if partitions is not None:
                    if partitions.pop(index, None) is not None:
                        deleted.append((topic, index))
                    if not partitions:
                        del self.topics[topic]
                        self._forget_id(topic)
                continue
            self.topics.setdefault(topic, {})[index] = CachedPartitionState(
                topic, index, p["leader"], p["leader_epoch"], tuple(p["replicas"]),
                tuple(p["isr"]), tuple(p.get("offline_replicas") or ()),
                zk_version=p["zk_version"], controller_epoch=p["controller_epoch"],
            )
        self._changed()
        if deleted:
            for listener in list(self.deletion_listeners):
                listener(deleted)
        return ErrorCode.NONE

    def remove_topic(self, topic: str) -> None:
        self._forget_id(topic)
        if self.topics.pop(topic, None) is not None:
            self._changed()

    def _forget_id(self, topic: str) -> None:
        old = self.topic_ids.pop(topic, None)
        if old is not None and self.topic_names_by_id.get(old) == topic:
            del self.topic_names_by_id[old]

    def topic_id(self, topic: str) -> bytes:
        """The topic's ID (all zeros if unknown: a topic from before IDs, or none at all)."""
        return self.topic_ids.get(topic, ZERO_ID)

    def topic_name(self, topic_id: bytes) -> str | None:
        """The name of the topic with this ID now; None if no such topic (deleted, or never)."""
        return self.topic_names_by_id.get(topic_id)

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener()

    # -- queries --------------------------------------------------------------------------

    def has_topic(self, topic: str) -> bool:
        return topic in self.topics

    def partition(self, topic: str, partition: int) -> CachedPartitionState | None:
        return self.topics.get(topic, {}).get(partition)

    def topic_names(self) -> list[str]:
        return sorted(self.topics)

    def brokers_on(self, listener: str) -> dict[int, Node]:
        """Every live broker's endpoint on ``listener`` (brokers without it are left out,
        as Kafka leaves them out of a Metadata answer on that listener)."""
        found = {}
        for broker_id, nodes in self.listener_nodes.items():
            node = nodes.get(listener)
            if node is not None:
                found[broker_id] = node
        return found if found or not self.brokers or self.listener_nodes else dict(self.brokers)

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def all_leaders_known(self, topic: str) -> bool:
        partitions = self.topics.get(topic)
        return partitions is not None and bool(partitions) and all(
            p.leader >= 0 and p.leader in self.brokers for p in partitions.values()
        )


# The controller marks a partition of a topic being deleted with this leader (as Kafka
# does with LeaderAndIsr.LeaderDuringDelete) so that brokers drop it from their caches.
LEADER_DURING_DELETE = -2
