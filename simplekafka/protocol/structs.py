"""The small value types that the broker, the client and the tools share.

One name, one shape, in the protocol layer that every other layer may import:
a partition is a ``TopicPartition`` on either side of the wire, a broker is a
``Node`` (Kafka's ``org.apache.kafka.common.Node``), and partition metadata
lists ``replicas`` before ``isr``, in the order Kafka's Metadata response and
its ``PartitionInfo`` do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic: the unit of ordering, leadership and offsets."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Node:
    """One broker: its id and where it listens (and its rack, if it has one)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition: who leads it (-1 = nobody now), its replicas and in-sync replicas."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


class OffsetAndMetadata(NamedTuple):
    """A committed offset, its metadata string and (if known) the leader epoch it was read at."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


__all__ = ["Node", "OffsetAndMetadata", "PartitionMetadata", "TopicPartition"]
