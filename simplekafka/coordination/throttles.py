"""The throttle configs of a reassignment, as Kafka names and writes them.

Rates are dynamic broker configs (``leader.replication.throttled.rate``,
``follower.replication.throttled.rate``, bytes/s); which replicas they apply
to are topic configs (``leader.replication.throttled.replicas``,
``follower.replication.throttled.replicas``: ``partition:broker`` pairs or
``*``). For a reassignment, as Kafka's tool does: the leader side lists every
current replica of a moving partition (whichever leads, it sends to the new
ones), the follower side lists the replicas being added. The broker's quotas
are in ``broker/replication_quota.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kazoo.client import KazooClient


LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATE_KEYS = (LEADER_RATE, FOLLOWER_RATE)
REPLICAS_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
UNLIMITED = 2**63 - 1  # Kafka's default rate: Long.MAX_VALUE, no throttle
ALL_REPLICAS = "*"


class ThrottleConfigError(ValueError):
    """A throttle config value that cannot be used."""


def parse_rate(value: str | int | None) -> int:
    """A throttled rate in bytes/s (UNLIMITED if unset)."""
    if value is None or value == "":
        return UNLIMITED
    try:
        rate = int(str(value).strip())
    except ValueError:
        raise ThrottleConfigError(f"a throttled rate is bytes per second, got {value!r}") from None
    if rate <= 0:
        raise ThrottleConfigError(f"a throttled rate must be positive, got {value!r}")
    return rate


def parse_throttled_replicas(value: str) -> list[tuple[int, int]] | str:
    """``"0:1,0:2"`` as [(0, 1), (0, 2)], ``"*"`` as ALL_REPLICAS, ``""`` as []."""
    text = value.strip()
    if text == ALL_REPLICAS:
        return ALL_REPLICAS
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        partition, sep, broker = item.partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
            raise ThrottleConfigError(
                f"throttled replicas are partition:broker pairs or *, got {item!r}")
        pairs.append((int(partition), int(broker)))
    return pairs


def throttled_replicas_text(pairs: list[tuple[int, int]]) -> str:
    """The config value for ``pairs`` (sorted, distinct)."""
    return ",".join(f"{p}:{b}" for p, b in sorted(set(pairs)))


def reassignment_throttles(current: Mapping[tuple[str, int], Sequence[int]],
                           target: Mapping[tuple[str, int], Sequence[int]]
                           ) -> dict[str, dict[str, str]]:
    """Per topic, the throttled-replicas configs for moving ``current`` to ``target``."""
    leader: dict[str, list[tuple[int, int]]] = {}
    follower: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), replicas in target.items():
        before = list(current.get((topic, partition), ()))
        adding = [b for b in replicas if b not in before]
        if not adding:
            continue
        leader.setdefault(topic, []).extend((partition, b) for b in before)
        follower.setdefault(topic, []).extend((partition, b) for b in adding)
    return {topic: {LEADER_REPLICAS: throttled_replicas_text(leader[topic]),
                    FOLLOWER_REPLICAS: throttled_replicas_text(follower[topic])}
            for topic in sorted(follower)}


def throttled_brokers(current: Mapping[tuple[str, int], Sequence[int]],
                      target: Mapping[tuple[str, int], Sequence[int]]) -> list[int]:
    """The brokers whose rates a reassignment sets: every replica, old or new, of a move."""
    brokers: set[int] = set()
    for key, replicas in target.items():
        before = list(current.get(key, ()))
        if set(replicas) != set(before):
            brokers.update(before)
            brokers.update(replicas)
    return sorted(brokers)


def write_throttles(zk: KazooClient, current: Mapping[tuple[str, int], Sequence[int]],
                    target: Mapping[tuple[str, int], Sequence[int]], rate: int) -> None:
    """Set a reassignment's throttles in ZooKeeper directly (the controller's automatic
    mode, ``reassign --execute --zookeeper``); other overrides are kept."""
    from simplekafka.coordination.configs import (
        BROKERS,
        TOPICS,
        read_entity_config,
        write_entity_config,
    )

    for topic, configs in reassignment_throttles(current, target).items():
        write_entity_config(zk, TOPICS, topic, {**read_entity_config(zk, TOPICS, topic),
                                                **configs})
    for broker in throttled_brokers(current, target):
        own = read_entity_config(zk, BROKERS, str(broker))
        write_entity_config(zk, BROKERS, str(broker),
                            {**own, **dict.fromkeys(RATE_KEYS, str(rate))})


def clear_throttles(zk: KazooClient, topics: Sequence[str], brokers: Sequence[int]) -> None:
    """Remove the throttle configs of ``topics`` and ``brokers`` (what --verify does)."""
    from simplekafka.coordination.configs import (
        BROKERS,
        TOPICS,
        read_entity_config,
        write_entity_config,
    )

    for entity_type, names, keys in ((TOPICS, list(topics), REPLICAS_KEYS),
                                     (BROKERS, [str(b) for b in brokers], RATE_KEYS)):
        for name in names:
            config = read_entity_config(zk, entity_type, name)
            if any(k in config for k in keys):
                write_entity_config(zk, entity_type, name,
                                    {k: v for k, v in config.items() if k not in keys})
