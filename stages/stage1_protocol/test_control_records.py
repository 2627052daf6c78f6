"""Control records: the commit and abort markers that end a transaction on a partition.

The reference bytes are put together here by hand from Kafka's spec (the
"Control Batches" part of the protocol documentation and
``EndTransactionMarker``), not by our builder: a control batch is a
RecordBatch v2 with the transactional (0x10) and control (0x20) attribute
bits, baseSequence -1, and one record whose key is ``int16 version 0, int16
type`` (0 abort, 1 commit) and whose value is ``int16 version 0, int32
coordinator epoch``. kafka-python, an independent reader, must see the same.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatch

from simplekafka.protocol import batch_header as bh
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import CorruptBatchError
from simplekafka.protocol.messages import decode_request, encode_request
from simplekafka.protocol.records import (
    ControlMarker,
    Record,
    build_batch,
    build_end_txn_marker,
    parse_batch,
    parse_control_marker,
)

T = 1_700_000_000_123


def reference_marker(producer_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                     timestamp: int) -> bytes:
    """A control batch laid out byte by byte from Kafka's spec."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = (b"\x00"            # record attributes
            + b"\x00"          # timestampDelta 0 (zigzag varint)
            + b"\x00"          # offsetDelta 0
            + bytes([len(key) << 1]) + key
            + bytes([len(value) << 1]) + value
            + b"\x00")         # no headers
    record = bytes([len(body) << 1]) + body
    attributes = 0x10 | 0x20  # transactional, control; no compression, CreateTime
    tail = struct.pack(">hiqqqhii", attributes, 0, timestamp, timestamp, producer_id, epoch,
                       -1, 1)
    crc = crc32c.crc32c(tail + record)
    head = struct.pack(">qiibI", 0, 9 + len(tail) + len(record), -1, 2, crc)
    return head + tail + record


@pytest.mark.parametrize("commit", [True, False])
def test_marker_bytes_match_the_spec(commit):
    ours = build_end_txn_marker(4711, 3, commit, coordinator_epoch=7, timestamp=T)
    assert ours == reference_marker(4711, 3, commit, 7, T)


@pytest.mark.parametrize("commit", [True, False])
def test_marker_round_trip(commit):
    batch = parse_batch(build_end_txn_marker(9, 2, commit, 11, timestamp=T, base_offset=40,
                                             partition_leader_epoch=5))
    header = batch.header
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, -1)
    assert (header.base_offset, header.partition_leader_epoch) == (40, 5)
    assert len(batch.records) == 1 and batch.records[0].offset == 40
    assert parse_control_marker(batch.records[0]) == ControlMarker(commit, 11)


@pytest.mark.parametrize("commit", [True, False])
def test_kafka_python_reads_our_marker(commit):
    data = build_end_txn_marker(77, 1, commit, 3, timestamp=T)
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert record.commit is commit and record.abort is not commit
    assert struct.unpack(">hi", record.value) == (0, 3)


def test_unknown_control_type_is_skipped_and_short_keys_are_corrupt():
    assert parse_control_marker(Record(key=struct.pack(">hh", 0, 5), value=b"")) is None
    with pytest.raises(CorruptBatchError):
        parse_control_marker(Record(key=b"\x00", value=b""))
    with pytest.raises(CorruptBatchError):
        parse_control_marker(Record(key=struct.pack(">hh", 0, 1), value=b"\x00\x00"))


def test_transactional_data_batch_carries_the_bit_but_not_the_control_bit():
    header = bh.read_header(build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0,
                                        base_sequence=0, is_transactional=True))
    assert header.is_transactional and not header.is_control


@pytest.mark.parametrize("version", [0, 1])
def test_write_txn_markers_request_round_trip(version):
    body = {"markers": [{"producer_id": 12, "producer_epoch": 4, "transaction_result": True,
                         "topics": [{"name": "orders", "partition_indexes": [0, 2]}],
                         "coordinator_epoch": 6}]}
    frame = encode_request(ApiKey.WRITE_TXN_MARKERS, version, 99, "coordinator", body)
    header, request = decode_request(frame)
    assert (header.api_key, header.api_version) == (ApiKey.WRITE_TXN_MARKERS, version)
    (marker,) = request.markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result,
            marker.coordinator_epoch) == (12, 4, True, 6)
    assert list(marker.topics[0].partition_indexes) == [0, 2]


def test_the_dissector_names_a_marker():
    from simplekafka.protocol.dissect import dissect_records, render

    shown = render(dissect_records(build_end_txn_marker(77, 1, False, 3, timestamp=T)))
    assert "is_control" in shown and "1 (True)" in shown
    assert "control key: version 0, type 0 (ABORT marker)" in shown
    assert "end transaction marker: version 0, coordinator epoch 3" in shown
