"""KIP-951: an answer that refuses a partition for want of its leader names the leader.

Fetch v12+ and Produce v10+ carry, for a partition refused with
NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH), the leader and leader epoch
this broker's metadata cache knows (``current_leader``); Fetch v16+ and Produce
v10+ add those leaders' endpoints (``node_endpoints``), so a client can go
there without asking Metadata first.
"""

from __future__ import annotations

from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    FetchResponseNodeEndpoints,
    FetchResponseResponsesPartitionsCurrentLeader,
)

LEADER_HINT_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
"""Errors that come with the leader to go to (KIP-951: Fetch v12+ current_leader, v16+
its endpoint; Produce v10+)."""

# Fetch's and Produce's CurrentLeader and NodeEndpoint have the same fields: one type each.
CurrentLeader = FetchResponseResponsesPartitionsCurrentLeader
NodeEndpoint = FetchResponseNodeEndpoints


def current_leader(cache: MetadataCache | None, topic: str, partition: int, error_code: int
                   ) -> CurrentLeader | None:
    """The leader a partition refused for want of the leader should go to (None: no hint)."""
    if cache is None or error_code not in LEADER_HINT_ERRORS:
        return None
    state = cache.partition(topic, partition)
    if state is None or state.leader < 0:
        return None
    return {"leader_id": state.leader, "leader_epoch": state.leader_epoch}


def node_endpoints(cache: MetadataCache | None, leaders: set[int],
                   listener: str | None = None) -> list[NodeEndpoint]:
    """The endpoints of ``leaders`` (KIP-951), as Metadata would name them."""
    if cache is None:
        return []
    nodes = cache.brokers_on(listener) if listener else cache.brokers
    return [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for broker_id, n in sorted(nodes.items()) if broker_id in leaders]
