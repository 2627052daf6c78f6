"""The topic znode as Kafka 2.8+ writes it: version 3 with ``topic_id`` (KIP-516)."""

from __future__ import annotations

import json

import pytest

from simplekafka.coordination.znodes import TopicAssignment, ZnodeFormatError
from simplekafka.protocol.topic_ids import new_topic_id, topic_id_text


def test_a_topic_with_an_id_is_written_as_version_3():
    topic_id = new_topic_id()
    written = json.loads(TopicAssignment({0: (1, 2)}, topic_id=topic_id).to_json())
    assert written == {"version": 3, "partitions": {"0": [1, 2]}, "adding_replicas": {},
                       "removing_replicas": {}, "topic_id": topic_id_text(topic_id)}
    assert TopicAssignment.from_json(json.dumps(written).encode()).topic_id == topic_id


def test_a_topic_from_before_ids_reads_without_one():
    old = b'{"version":1,"partitions":{"0":[1]}}'
    assert TopicAssignment.from_json(old).topic_id is None
    assert json.loads(TopicAssignment({0: (1,)}).to_json())["version"] == 1


def test_a_garbled_topic_id_is_a_format_error():
    with pytest.raises(ZnodeFormatError, match="topic_id"):
        TopicAssignment.from_json(b'{"version":3,"partitions":{"0":[1]},"topic_id":"nope"}')
