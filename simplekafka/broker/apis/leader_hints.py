"""KIP-951: an answer that refuses a partition for want of its leader names the leader.

Fetch v12+ and Produce v10+ carry, for a partition refused with
NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH), the leader and leader epoch
this broker's metadata cache knows (``current_leader``); Fetch v16+ and Produce
v10+ add those leaders' endpoints (``node_endpoints``), so a client can go
there without asking Metadata first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.protocol.errors import ErrorCode

LEADER_HINT_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
"""Errors that come with the leader to go to (KIP-951: Fetch v12+ current_leader, v16+
its endpoint; Produce v10+)."""


def current_leaders(cache: MetadataCache | None, topic: str, entries: Sequence[Any]
                    ) -> set[int]:
    """Fill ``current_leader`` of each entry refused for want of the leader; the leaders."""
    leaders: set[int] = set()
    if cache is None:
        return leaders
    for entry in entries:
        if entry["error_code"] in LEADER_HINT_ERRORS:
            state = cache.partition(topic, entry["partition_index"])
            if state is not None and state.leader >= 0:
                entry["current_leader"] = {"leader_id": state.leader,
                                           "leader_epoch": state.leader_epoch}
                leaders.add(state.leader)
    return leaders


def node_endpoints(cache: MetadataCache | None, leaders: set[int],
                   listener: str | None = None) -> list[Any]:
    """The endpoints of ``leaders`` (KIP-951), as Metadata would name them."""
    if cache is None:
        return []
    nodes = cache.brokers_on(listener) if listener else cache.brokers
    return [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for broker_id, n in sorted(nodes.items()) if broker_id in leaders]
