"""OffsetFetch bodies and answers, shared by the consumer and the admin (no sockets)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from simplekafka.client.errors import NotCoordinatorError, UnknownTopicOrPartitionError
from simplekafka.client.offsets import committed_offsets, offset_fetch_request
from simplekafka.protocol.api import ApiKey, request_schema
from simplekafka.protocol.structs import OffsetAndMetadata, TopicPartition


def test_an_offset_fetch_request_groups_partitions_by_topic():
    body = offset_fetch_request("g", [TopicPartition("a", 0), TopicPartition("b", 1),
                                     TopicPartition("a", 2)])
    assert body["topics"] == [{"name": "a", "partition_indexes": [0, 2]},
                              {"name": "b", "partition_indexes": [1]}]
    assert offset_fetch_request("g", None)["topics"] is None  # every partition committed
    for version in (1, 5):
        request_schema(ApiKey.OFFSET_FETCH, version).encode(body)  # encodes at any version


def test_committed_offsets_read_an_answer_and_raise_its_errors():
    part = lambda index, offset, error=0: NS(  # noqa: E731
        partition_index=index, committed_offset=offset, metadata="m", error_code=error,
        committed_leader_epoch=4)
    answer = NS(error_code=0, topics=[NS(name="t", partitions=[part(0, 7), part(1, -1)])])
    assert committed_offsets(answer, "g") == {
        TopicPartition("t", 0): OffsetAndMetadata(7, "m", 4), TopicPartition("t", 1): None}
    with pytest.raises(NotCoordinatorError, match="group 'g'"):
        committed_offsets(NS(error_code=16, topics=[]), "g")
    with pytest.raises(UnknownTopicOrPartitionError, match="t-1"):
        committed_offsets(NS(error_code=0, topics=[NS(name="t", partitions=[part(1, 0, 3)])]),
                          "g")
