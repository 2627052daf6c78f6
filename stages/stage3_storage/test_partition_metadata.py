"""partition.metadata (KIP-516): a log knows which topic ID it belongs to, as Kafka's does."""

from __future__ import annotations

import pytest

from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.topic_ids import new_topic_id, topic_id_from_text, topic_id_text
from simplekafka.storage import InconsistentTopicIdError, Log
from simplekafka.storage.checkpoints import read_partition_metadata
from simplekafka.storage.errors import CheckpointError


def test_the_id_is_written_as_kafka_writes_it_and_read_back_on_open(tmp_path):
    topic_id = new_topic_id()
    log = Log.open(tmp_path / "orders-0")
    assert log.topic_id is None  # a new log: not known until LeaderAndIsr names it
    log.assign_topic_id(topic_id)
    text = (tmp_path / "orders-0" / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {topic_id_text(topic_id)}"
    log.close()
    assert Log.open(tmp_path / "orders-0").topic_id == topic_id


def test_a_log_of_another_topic_id_is_refused(tmp_path):
    log = Log.open(tmp_path / "orders-0")
    first = new_topic_id()
    log.assign_topic_id(first)
    log.assign_topic_id(first)  # the same ID again: nothing to do
    with pytest.raises(InconsistentTopicIdError) as refused:
        log.assign_topic_id(new_topic_id())
    assert refused.value.error_code == ErrorCode.INCONSISTENT_TOPIC_ID
    assert log.topic_id == first


def test_ids_print_as_kafka_prints_them():
    raw = bytes(range(16))
    assert topic_id_text(raw) == "AAECAwQFBgcICQoLDA0ODw"
    assert topic_id_from_text("AAECAwQFBgcICQoLDA0ODw") == raw
    for bad in ("", "AAECAwQFBgcICQoLDA0OD", "!!ECAwQFBgcICQoLDA0ODw"):
        with pytest.raises(ValueError):
            topic_id_from_text(bad)
    made = {new_topic_id() for _ in range(200)}
    assert len(made) == 200 and not any(topic_id_text(i).startswith("-") for i in made)


def test_a_garbled_file_is_a_checkpoint_error(tmp_path):
    (tmp_path / "partition.metadata").write_text("version: 1\ntopic_id: x")
    with pytest.raises(CheckpointError):
        read_partition_metadata(tmp_path)
    assert read_partition_metadata(tmp_path / "missing") is None
