"""The client's picture of the cluster: brokers, controller, topics, partition leaders.

Filled from Metadata responses and nothing else. It is a cache, so it can be
wrong: errors such as NOT_LEADER_OR_FOLLOWER or a lost connection mark it stale
(``request_update()``), and the client refreshes it before the next retry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.structs import Node, PartitionMetadata


@dataclass(frozen=True)
class TopicMetadata:
    """One topic and its partitions, or the error the broker gave for it."""

    name: str
    error_code: int
    is_internal: bool
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)


# A Metadata response: the decoded Struct, or the same shape as dicts (MetadataResponse).
MetadataBody = Struct | Mapping[str, object]


@dataclass(frozen=True)
class ClusterSnapshot:
    """An immutable view of one Metadata response (safe to share between threads)."""

    cluster_id: str | None
    controller_id: int
    brokers: dict[int, Node]
    topics: dict[str, TopicMetadata]

    @classmethod
    def from_response(cls, body: MetadataBody) -> ClusterSnapshot:
        """Build from a decoded MetadataResponse Struct (or the same shape as dicts)."""
        get = _getter(body)
        brokers = {}
        for b in get(body, "brokers") or []:
            broker = Node(
                int(get(b, "node_id")), get(b, "host"), int(get(b, "port")), get(b, "rack")
            )
            brokers[broker.node_id] = broker
        topics = {}
        for t in get(body, "topics") or []:
            name = get(t, "name")
            partitions = {}
            for p in get(t, "partitions") or []:
                part = PartitionMetadata(
                    topic=name,
                    partition=int(get(p, "partition_index")),
                    leader=int(get(p, "leader_id")),
                    leader_epoch=int(get(p, "leader_epoch", -1)),
                    replicas=tuple(get(p, "replica_nodes") or ()),
                    isr=tuple(get(p, "isr_nodes") or ()),
                    offline_replicas=tuple(get(p, "offline_replicas", ()) or ()),
                    error_code=int(get(p, "error_code")),
                )
                partitions[part.partition] = part
            topics[name] = TopicMetadata(
                name, int(get(t, "error_code")), bool(get(t, "is_internal", False)), partitions
            )
        controller = get(body, "controller_id", -1)
        return cls(get(body, "cluster_id", None), int(controller), brokers, topics)


def _getter(body: MetadataBody):  # -> a reader of the body's (dynamic) fields
    if isinstance(body, dict):
        return lambda obj, name, default=None: obj.get(name, default)
    return lambda obj, name, default=None: getattr(obj, name, default)


class ClusterMetadata:
    """The cached snapshot, plus when and whether it needs refreshing (thread-safe)."""

    def __init__(self, max_age_ms: int = 300_000) -> None:
        self.max_age_ms = max_age_ms
        self._lock = threading.Lock()
        # The latest snapshot: replaced whole on every update, never changed in place,
        # so readers need no lock (and a hot path can compare it by identity).
        self.snapshot = ClusterSnapshot(None, -1, {}, {})
        self._updated_at = 0.0
        self._stale = True
        self._topics_wanted: set[str] = set()

    @property
    def brokers(self) -> dict[int, Node]:
        return self.snapshot.brokers

    @property
    def controller_id(self) -> int:
        return self.snapshot.controller_id

    @property
    def cluster_id(self) -> str | None:
        return self.snapshot.cluster_id

    def update(self, body: MetadataBody) -> ClusterSnapshot:
        """Take in a Metadata response; a partial response (some topics) is merged."""
        fresh = ClusterSnapshot.from_response(body)
        with self._lock:
            topics = dict(self.snapshot.topics)
            topics.update(fresh.topics)
            # A topic the broker says does not exist is dropped from the cache.
            for name, topic in fresh.topics.items():
                if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    topics.pop(name, None)
            self.snapshot = ClusterSnapshot(
                fresh.cluster_id, fresh.controller_id, fresh.brokers, topics
            )
            self._updated_at = time.monotonic()
            self._stale = False
        return self.snapshot

    def replace(self, body: MetadataBody) -> ClusterSnapshot:
        """Take in a full (all topics) Metadata response: topics not in it are forgotten."""
        fresh = ClusterSnapshot.from_response(body)
        with self._lock:
            self.snapshot = fresh
            self._updated_at = time.monotonic()
            self._stale = False
        return fresh

    def request_update(self) -> None:
        """Mark the cache stale: the next user refreshes it before trusting it."""
        self._stale = True

    def needs_update(self) -> bool:
        age_ms = (time.monotonic() - self._updated_at) * 1000
        return self._stale or age_ms > self.max_age_ms

    def want_topics(self, topics: list[str] | set[str]) -> None:
        """Remember topics the client uses, so refreshes ask for them."""
        with self._lock:
            self._topics_wanted.update(topics)

    @property
    def topics_wanted(self) -> set[str]:
        return set(self._topics_wanted)

    def topic(self, name: str) -> TopicMetadata | None:
        return self.snapshot.topics.get(name)

    def partitions_for(self, topic: str) -> list[int] | None:
        """Partition numbers of ``topic``, or None if the cache does not know it."""
        meta = self.snapshot.topics.get(topic)
        if meta is None or meta.error_code:
            return None
        return sorted(meta.partitions)

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        meta = self.snapshot.topics.get(topic)
        return None if meta is None else meta.partitions.get(partition)

    def leader_for(self, topic: str, partition: int) -> int | None:
        """The leader's node id, or None if unknown or leaderless right now."""
        part = self.partition(topic, partition)
        if part is None or part.leader < 0:
            return None
        return part.leader

    def broker(self, node_id: int) -> Node | None:
        return self.snapshot.brokers.get(node_id)
