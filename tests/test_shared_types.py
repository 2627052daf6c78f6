"""One error family and one set of shared value types, across every layer.

Whatever layer raises it (the codec, the log, the broker's checks, the
client), an error for a Kafka error code is a ``KafkaError`` with an
``error_code``; and a partition, a broker and a committed offset are the same
types on the broker's side and on the client's.
"""

from __future__ import annotations

import pytest

import simplekafka.client as client_api
import simplekafka.consumer as consumer_api
from simplekafka.admin import admin as admin_module
from simplekafka.broker.producer_state import ProducerStateTable
from simplekafka.client import errors as client_errors
from simplekafka.client.metadata import ClusterSnapshot
from simplekafka.protocol import batch_header, errors, structs
from simplekafka.protocol.api import ADVERTISED_VERSIONS, INTER_BROKER_KEYS
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import errors as storage_errors


def test_every_layer_raises_the_one_family_with_an_error_code(tmp_path):
    raised: list[BaseException] = []
    try:
        batch_header.validate_batches(b"\x00" * 70)
    except KafkaError as exc:
        raised.append(exc)
    try:
        raise storage_errors.RecordTooLargeError("too big")
    except KafkaError as exc:
        raised.append(exc)
    try:
        raise client_errors.KafkaTimeoutError("late")
    except KafkaError as exc:
        raised.append(exc)
    table = ProducerStateTable()
    batch = bytearray(build_batch([Record(0, 0, None, b"v")], producer_id=7, producer_epoch=0,
                                  base_sequence=0))
    table.record(batch_header.read_header(bytes(batch)), 0)
    skipped = build_batch([Record(0, 0, None, b"v")], producer_id=7, producer_epoch=0,
                          base_sequence=5)
    with pytest.raises(KafkaError) as refused:  # the broker's refusals are in the family too
        table.check(batch_header.read_header(skipped))
    raised.append(refused.value)
    codes = [exc.error_code for exc in raised]
    assert codes[:2] == [ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE]
    assert codes[2] is None  # a client-side failure has no wire code
    assert codes[3] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert not any(hasattr(exc, "code") for exc in raised)  # one attribute name: error_code


def test_the_family_has_one_base_and_one_class_per_code():
    assert client_errors.KafkaError is errors.KafkaError
    assert issubclass(errors.ProtocolError, KafkaError)
    assert issubclass(storage_errors.StorageError, KafkaError)
    # The log's "offset out of range" is the named error, with the log's bounds added.
    assert issubclass(storage_errors.OffsetOutOfRangeError, errors.OffsetOutOfRangeError)
    assert errors.error_class(ErrorCode.OFFSET_OUT_OF_RANGE) is errors.OffsetOutOfRangeError
    assert client_errors.NotEnoughReplicasError is errors.NotEnoughReplicasError
    names = [cls.__name__ for cls in errors.ERROR_CLASSES.values()]
    assert len(names) == len(set(names)) and not any(n.endswith("ErrorError") for n in names)
    exc = errors.error_for(ErrorCode.NOT_ENOUGH_REPLICAS, "isr 1 < 2")
    assert exc.reason == "isr 1 < 2" and str(exc) == "NOT_ENOUGH_REPLICAS (19): isr 1 < 2"


def test_client_and_broker_share_the_value_types():
    assert client_api.TopicPartition is structs.TopicPartition
    assert client_api.Node is structs.Node
    assert consumer_api.OffsetAndMetadata is structs.OffsetAndMetadata
    assert admin_module.PartitionMetadata is structs.PartitionMetadata
    snapshot = ClusterSnapshot.from_response({
        "brokers": [{"node_id": 1, "host": "h", "port": 9, "rack": None}],
        "topics": [{"name": "t", "error_code": 0, "partitions": [
            {"partition_index": 0, "leader_id": 1, "leader_epoch": 3, "replica_nodes": [1, 2],
             "isr_nodes": [1], "error_code": 0}]}],
    })
    assert snapshot.brokers[1] == structs.Node(1, "h", 9)
    part = snapshot.topics["t"].partitions[0]
    assert isinstance(part, structs.PartitionMetadata)
    # replicas before isr, as in Kafka's Metadata response
    assert part == structs.PartitionMetadata("t", 0, 1, 3, (1, 2), (1,))


def test_one_client_versions_table():
    from simplekafka.client.connection import CLIENT_VERSIONS

    assert not INTER_BROKER_KEYS & ADVERTISED_VERSIONS.keys()
    assert CLIENT_VERSIONS.keys() == ADVERTISED_VERSIONS.keys()
    # Our client speaks within what the broker advertises, capped where its code is written
    # for older layouts (CLIENT_MAX_VERSIONS).
    assert all(ADVERTISED_VERSIONS[k][0] <= lo <= hi <= ADVERTISED_VERSIONS[k][1]
               for k, (lo, hi) in CLIENT_VERSIONS.items())
