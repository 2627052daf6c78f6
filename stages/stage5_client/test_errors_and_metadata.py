"""Named errors, bootstrap parsing and the metadata cache (no sockets)."""

from __future__ import annotations

import pytest

from simplekafka.client import errors
from simplekafka.client.client import Deadline, parse_bootstrap_servers
from simplekafka.client.metadata import ClusterMetadata
from simplekafka.protocol.api import ApiKey, response_schema
from simplekafka.protocol.errors import ErrorCode


def test_every_error_code_has_a_class_named_after_it():
    for code in ErrorCode:
        if code is ErrorCode.NONE:
            continue
        cls = errors.error_class(int(code))
        assert cls.error_code is code
        assert cls.retriable == code.retriable
        assert issubclass(cls, errors.KafkaError)


def test_names_read_like_kafkas():
    assert errors.error_class(6).__name__ == "NotLeaderOrFollowerError"
    assert errors.error_class(17).__name__ == "InvalidTopicError"
    assert errors.error_class(10) is errors.MessageTooLargeError
    assert errors.NotLeaderOrFollowerError().retriable
    assert not errors.TopicAlreadyExistsError().retriable


def test_error_for_carries_the_code_name_and_the_brokers_message():
    exc = errors.error_for(36, "topic 'a'")
    assert isinstance(exc, errors.TopicAlreadyExistsError)
    assert "TOPIC_ALREADY_EXISTS (36)" in str(exc) and "topic 'a'" in str(exc)
    assert isinstance(errors.error_for(12345), errors.UnknownServerError)
    errors.raise_for(0)
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        errors.raise_for(3)


def test_which_errors_mean_stale_metadata():
    assert errors.needs_metadata_refresh(errors.NotLeaderOrFollowerError())
    assert errors.needs_metadata_refresh(errors.LeaderNotAvailableError())
    assert errors.needs_metadata_refresh(errors.UnknownTopicOrPartitionError())
    assert errors.needs_metadata_refresh(errors.KafkaConnectionError("lost"))
    assert not errors.needs_metadata_refresh(errors.MessageTooLargeError())


@pytest.mark.parametrize(
    "text, expected",
    [
        ("localhost:9092", [("localhost", 9092)]),
        ("a:1, b:2", [("a", 1), ("b", 2)]),
        ("onlyhost", [("onlyhost", 9092)]),
        ("[::1]:9093", [("::1", 9093)]),
    ],
)
def test_bootstrap_servers_parse(text, expected):
    assert parse_bootstrap_servers(text) == expected


@pytest.mark.parametrize("bad", ["", "host:notaport", ":9092", "h:0", "h:70000"])
def test_bad_bootstrap_servers_are_a_clear_value_error(bad):
    with pytest.raises(ValueError, match="bootstrap"):
        parse_bootstrap_servers(bad)


def metadata_response(version: int = 8, leader: int = 1, partitions: int = 2, topic="t"):
    schema = response_schema(ApiKey.METADATA, version)
    body = {
        "brokers": [
            {"node_id": 1, "host": "h1", "port": 9001, "rack": None},
            {"node_id": 2, "host": "h2", "port": 9002, "rack": "r2"},
        ],
        "cluster_id": "cid",
        "controller_id": 2,
        "topics": [
            {
                "error_code": 0,
                "name": topic,
                "is_internal": False,
                "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": leader,
                     "leader_epoch": 3, "replica_nodes": [1, 2], "isr_nodes": [1, 2],
                     "offline_replicas": []}
                    for p in range(partitions)
                ],
            }
        ],
    }
    return schema.decode(schema.encode(body))


def test_the_cache_answers_leaders_partitions_and_controller():
    cache = ClusterMetadata()
    assert cache.needs_update()
    cache.replace(metadata_response())
    assert not cache.needs_update()
    assert cache.leader_for("t", 0) == 1
    assert cache.partitions_for("t") == [0, 1]
    assert cache.partitions_for("nope") is None
    assert cache.controller_id == 2 and cache.cluster_id == "cid"
    assert cache.broker(2).address == ("h2", 9002) and cache.broker(2).rack == "r2"
    assert cache.partition("t", 1).leader_epoch == 3


def test_a_leaderless_partition_has_no_leader():
    cache = ClusterMetadata()
    cache.replace(metadata_response(leader=-1))
    assert cache.leader_for("t", 0) is None


def test_errors_mark_the_cache_stale_and_a_full_refresh_forgets_deleted_topics():
    cache = ClusterMetadata()
    cache.replace(metadata_response(topic="old"))
    cache.request_update()
    assert cache.needs_update()
    cache.replace(metadata_response(topic="new", partitions=4))
    assert cache.partitions_for("old") is None
    assert cache.partitions_for("new") == [0, 1, 2, 3]


def test_metadata_older_versions_decode_too():
    cache = ClusterMetadata()
    cache.replace(metadata_response(version=1))
    assert cache.leader_for("t", 1) == 1
    assert cache.partition("t", 0).leader_epoch == -1  # not in v1


def test_a_deadline_counts_down_and_never_goes_negative():
    deadline = Deadline(0.0)
    assert deadline.expired and deadline.remaining() == 0.0
    assert Deadline(None).remaining(cap=2.0) == 2.0
    assert 0 < Deadline(10).remaining(cap=1.0) <= 1.0
