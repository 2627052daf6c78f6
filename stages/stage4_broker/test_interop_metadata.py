"""Metadata tells the truth: once it names a partition's leader, that leader serves it.

Clients route by Metadata. Kafka's controller sends LeaderAndIsr (become
leader) before UpdateMetadata (tell everyone), so a broker that Metadata names
as leader already is one. If the order were reversed, a client would be sent to
a "leader" that answers NOT_LEADER_OR_FOLLOWER; clients retry, so it would only
show as latency, which is why this is checked on the wire, with no retries.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode

from ._interop import connect, list_offsets_error, request, unique_topic

pytestmark = pytest.mark.integration


def create_raw(port: int, topic: str, partitions: int) -> None:
    with connect(port) as sock:
        response = request(sock, ApiKey.CREATE_TOPICS, 4, {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 30_000, "validate_only": False})
    assert response.topics[0].error_code == 0, response.topics[0]


def leaders_in_metadata(port: int, topic: str) -> dict[int, int]:
    with connect(port) as sock:
        metadata = request(sock, ApiKey.METADATA, 8, {"topics": [{"name": topic}],
                                                      "allow_auto_topic_creation": False})
    return {p.partition_index: p.leader_id for p in metadata.topics[0].partitions}


def test_a_leader_named_by_metadata_serves_at_once(cluster):
    port = cluster.broker_ports[1]
    for attempt in range(5):
        topic = unique_topic(f"metadata-truth-{attempt}")
        create_raw(port, topic, partitions=4)
        deadline = time.monotonic() + 30
        leaders = {}
        while not leaders or min(leaders.values()) < 0:
            assert time.monotonic() < deadline, f"no leaders for {topic}: {leaders}"
            leaders = leaders_in_metadata(port, topic)
        assert set(leaders.values()) == {1}
        errors = {p: list_offsets_error(port, topic, p) for p in sorted(leaders)}
        assert all(code == ErrorCode.NONE for code in errors.values()), (
            f"Metadata names broker 1 leader of {topic}, but it answers "
            f"{ {p: ErrorCode.of(c).name for p, c in errors.items()} }: the controller must "
            "send LeaderAndIsr before UpdateMetadata"
        )
