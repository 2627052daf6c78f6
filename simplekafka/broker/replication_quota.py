"""Replication throttles: moving replicas copy at a set rate, so producers are not starved.

Kafka's ReplicationQuotaManager, on each broker, twice: the leader side caps
the bytes it sends to throttled followers (``leader.replication.throttled.rate``),
the follower side caps what it fetches for throttled replicas
(``follower.replication.throttled.rate``); both rates are dynamic broker
configs (``/config/brokers/<id>``). Which replicas are throttled is said per
topic, by ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas``: ``partition:broker`` pairs (a
broker applies the pairs that name it) or ``*`` for every replica.
``simplekafka reassign --execute --throttle`` sets them for the moving
partitions and ``--verify`` removes them when the moves are done.

As in Kafka, only replicas outside the ISR are held back: a throttled
partition's in-sync followers (and so acks=all producers) are never slowed.
The quota is a token bucket of one second's worth of bytes: a read may take it
below zero (a batch is never split), and nothing more goes out until it has
refilled, so the average rate stays at the bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from simplekafka.coordination.throttles import (
    ALL_REPLICAS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    RATE_KEYS,
    REPLICAS_KEYS,
    UNLIMITED,
    ThrottleConfigError,
    parse_rate,
    parse_throttled_replicas,
    throttled_replicas_text,
)

__all__ = ["ALL_REPLICAS", "FOLLOWER_RATE", "FOLLOWER_REPLICAS", "LEADER_RATE",
           "LEADER_REPLICAS", "RATE_KEYS", "REPLICAS_KEYS", "UNLIMITED", "ReplicationQuota",
           "ReplicationThrottle", "ThrottleConfigError", "parse_rate",
           "parse_throttled_replicas", "throttled_replicas_text"]


class ReplicationQuota:
    """One broker's byte rate for one side of throttled replication (a token bucket)."""

    def __init__(self, clock: Callable[[], float], rate: int = UNLIMITED,
                 burst_seconds: float = 1.0):
        self.clock = clock
        self.burst_seconds = burst_seconds
        self.rate = rate
        self.tokens = float(rate) * burst_seconds
        self.last = clock()
        self.recorded = 0  # bytes recorded in all (for tests and metrics)

    def set_rate(self, rate: int) -> None:
        if rate != self.rate:
            self._refill()
            self.rate = rate
            self.tokens = min(self.tokens, float(rate) * self.burst_seconds)

    @property
    def limited(self) -> bool:
        return self.rate < UNLIMITED

    def _refill(self) -> None:
        now = self.clock()
        if now > self.last:
            self.tokens = min(float(self.rate) * self.burst_seconds,
                              self.tokens + (now - self.last) * self.rate)
        self.last = now

    def record(self, size: int) -> None:
        """``size`` bytes of throttled replication went out (or came in)."""
        self.recorded += size
        if self.limited:
            self._refill()
            self.tokens -= size

    def is_quota_exceeded(self) -> bool:
        if not self.limited:
            return False
        self._refill()
        return self.tokens <= 0

    def seconds_until_available(self) -> float:
        """How long until ``is_quota_exceeded`` turns false (0 if it is already)."""
        if not self.is_quota_exceeded():
            return 0.0
        return (1.0 - self.tokens) / self.rate


class ReplicationThrottle:
    """A quota plus which of this broker's replicas it applies to (one topic config key)."""

    def __init__(self, replicas_key: str, broker_id: int,
                 topic_configs: Mapping[str, Mapping[str, str]], clock: Callable[[], float]):
        self.replicas_key = replicas_key
        self.broker_id = broker_id
        self.topic_configs = topic_configs  # the broker's, kept current by config changes
        self.quota = ReplicationQuota(clock)
        self._parsed: dict[str, tuple[str, frozenset[int] | str]] = {}

    def is_throttled(self, topic: str, partition: int) -> bool:
        """Whether this broker's replica of topic-partition is listed for this side."""
        value = self.topic_configs.get(topic, {}).get(self.replicas_key)
        if not value:
            return False
        cached = self._parsed.get(topic)
        if cached is None or cached[0] != value:
            try:
                parsed = parse_throttled_replicas(value)
            except ThrottleConfigError:
                parsed = []
            listed: frozenset[int] | str = ALL_REPLICAS
            if not isinstance(parsed, str):
                listed = frozenset(p for p, b in parsed if b == self.broker_id)
            cached = self._parsed[topic] = (value, listed)
        listed = cached[1]
        return listed == ALL_REPLICAS or partition in listed

    def holds_back(self, topic: str, partition: int, in_sync: bool) -> bool:
        """Whether traffic of this (out-of-sync, throttled) replica must wait now."""
        return (not in_sync and self.quota.limited and self.is_throttled(topic, partition)
                and self.quota.is_quota_exceeded())

    def record(self, topic: str, partition: int, in_sync: bool, size: int) -> None:
        """Count ``size`` bytes against the quota if this replica's traffic is throttled."""
        if size and not in_sync and self.is_throttled(topic, partition):
            self.quota.record(size)
