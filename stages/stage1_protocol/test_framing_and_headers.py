"""Framing at every split, request/response headers, and the ApiVersions probe answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.protocol import (
    ApiKey,
    FrameDecoder,
    FrameTooLargeError,
    ProtocolError,
    UnsupportedRequestError,
    api_versions_probe_response,
    decode_request,
    decode_response,
    encode_frame,
    encode_request,
    encode_response,
)
from simplekafka.protocol.messages import decode_request_header, request_header_version


def _stream() -> tuple[bytes, list[bytes]]:
    payloads = [
        encode_request(ApiKey.API_VERSIONS, 0, 1, "a", {}),
        encode_request(ApiKey.METADATA, 8, 2, None, {"topics": [{"name": "orders"}]}),
        b"",
        encode_request(ApiKey.PRODUCE, 8, 3, "p", {"acks": -1, "timeout_ms": 10}),
    ]
    return b"".join(encode_frame(p) for p in payloads), payloads


def test_every_single_split_gives_the_same_frames():
    stream, payloads = _stream()
    for cut in range(len(stream) + 1):
        decoder = FrameDecoder()
        frames = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert frames == payloads, f"split at {cut}"
        assert decoder.buffered == 0


def test_byte_at_a_time():
    stream, payloads = _stream()
    decoder = FrameDecoder()
    frames = []
    for i in range(len(stream)):
        frames += decoder.feed(stream[i : i + 1])
    assert frames == payloads


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 200), max_size=8))
def test_any_chunking_gives_the_same_decoded_requests(cuts):
    stream, payloads = _stream()
    points = sorted({min(c, len(stream)) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    decoder = FrameDecoder()
    frames = [f for chunk in chunks for f in decoder.feed(chunk)]
    assert frames == payloads
    decoded = [decode_request(f) for f in frames if f]
    assert [h.correlation_id for h, _ in decoded] == [1, 2, 3]


def test_oversized_length_is_rejected_before_buffering_the_body():
    decoder = FrameDecoder(max_length=1000)
    with pytest.raises(FrameTooLargeError) as info:
        decoder.feed(b"\x00\x00\x03\xe9")  # 1001, with no body sent at all
    assert info.value.offset == 0
    assert isinstance(info.value, ProtocolError)
    with pytest.raises(FrameTooLargeError):
        FrameDecoder().feed(b"\xff\xff\xff\xfe")  # negative


def test_request_header_versions():
    assert request_header_version(ApiKey.METADATA, 8) == 1
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert request_header_version(ApiKey.LEADER_AND_ISR, 4) == 2  # flexible in Kafka
    header, body = decode_request(encode_request(ApiKey.LEADER_AND_ISR, 4, 9, "ctl", {}))
    assert header.header_version == 2 and body.controller_id == 0


def test_request_round_trip_with_null_client_id():
    payload = encode_request(ApiKey.FETCH, 11, 123, None, {"max_wait_ms": 500})
    header, body = decode_request(payload)
    assert (header.api_key, header.api_version, header.correlation_id) == (1, 11, 123)
    assert header.client_id is None
    assert body.max_wait_ms == 500 and body.max_bytes == 0x7FFFFFFF


def test_response_round_trip():
    body = {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 0}
    payload = encode_response(ApiKey.INIT_PRODUCER_ID, 1, 55, body)
    assert payload[:4] == b"\x00\x00\x00\x37"
    correlation_id, decoded = decode_response(ApiKey.INIT_PRODUCER_ID, 1, payload)
    assert correlation_id == 55 and decoded.producer_id == 1000


@pytest.mark.parametrize("version", [4, 12, 17])
def test_a_response_decodes_to_dicts_in_place_as_to_structs(version):
    """``decode_response_dict`` (the replica fetcher's Fetch answers): the values of
    ``decode_response``, as plain dicts, past a flexible header; trailing bytes refused."""
    from simplekafka.protocol.fields import plain
    from simplekafka.protocol.messages import decode_response_dict

    partition = {"partition_index": 3, "error_code": 0, "high_watermark": 10,
                 "last_stable_offset": 10, "log_start_offset": 0, "aborted_transactions": [],
                 "preferred_read_replica": -1, "records": b"\x01\x02"}
    topic = {"topic_id": bytes(range(16))} if version >= 13 else {"topic": "t"}
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 7,
            "responses": [{**topic, "partitions": [partition]}]}
    payload = encode_response(ApiKey.FETCH, version, 41, body)
    correlation_id, as_dict = decode_response_dict(ApiKey.FETCH, version, payload)
    assert correlation_id == 41 and isinstance(as_dict, dict)
    assert as_dict == plain(decode_response(ApiKey.FETCH, version, payload)[1])
    assert as_dict["responses"][0]["partitions"][0]["high_watermark"] == 10
    assert bytes(as_dict["responses"][0]["partitions"][0]["records"]) == b"\x01\x02"
    with pytest.raises(ProtocolError, match="more bytes"):
        decode_response_dict(ApiKey.FETCH, version, payload + b"\x00")
    if version >= 12:  # a missing tagged structure gets its default, each answer its own copy
        again = decode_response_dict(ApiKey.FETCH, version, payload)[1]
        first, second = (a["responses"][0]["partitions"][0] for a in (as_dict, again))
        assert first["diverging_epoch"] == {"epoch": -1, "end_offset": -1, "tagged_fields": {}}
        assert first["diverging_epoch"] is not second["diverging_epoch"]
        assert first["diverging_epoch"]["tagged_fields"] is not \
            second["diverging_epoch"]["tagged_fields"]


def test_flexible_response_header_carries_tags_except_api_versions():
    flexible = encode_response(ApiKey.LEADER_AND_ISR, 4, 1, {})
    assert flexible[4] == 0  # the empty tagged-field block of response header v1
    api_versions_v3 = encode_response(ApiKey.API_VERSIONS, 3, 1, {"api_keys": []})
    # header v0 (no tag byte), then error_code int16 0
    assert api_versions_v3[:6] == b"\x00\x00\x00\x01\x00\x00"


def test_unknown_api_key_keeps_the_header():
    payload = b"\x00\x07\x00\x00\x00\x00\x00\x09\xff\xff"  # api key 7, v0, correlation 9
    with pytest.raises(UnsupportedRequestError) as info:
        decode_request(payload)
    assert info.value.header.correlation_id == 9


def test_unsupported_version_keeps_the_header():
    payload = b"\x00\x01\x00\x63\x00\x00\x00\x05\x00\x00"  # Fetch v99
    with pytest.raises(UnsupportedRequestError) as info:
        decode_request(payload)
    assert info.value.header.api_version == 99


def test_too_short_for_a_header():
    with pytest.raises(ProtocolError) as info:
        decode_request_header(b"\x00\x03\x00")
    assert info.value.offset == 3


def test_probe_is_answered_even_when_its_body_is_gibberish():
    payload = bytes.fromhex("00120005" "0000002a" "0003616263" "00" "ff")  # bad compact string
    header, body = decode_request(payload)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 5, 42)
    assert header.client_id == "abc"
    assert body is None
    header, body = decode_request(bytes.fromhex("0012000900000007"))  # v9, nothing else
    assert header.correlation_id == 7 and body is None


def test_probe_v3_body_decodes():
    payload = encode_request(ApiKey.API_VERSIONS, 3, 1, "rdkafka", {
        "client_software_name": "confluent-kafka-python", "client_software_version": "2.16.1"})
    header, body = decode_request(payload)
    assert header.header_version == 2
    assert body.client_software_name == "confluent-kafka-python"


PROBE_ANSWER_HEX = (
    "0000002a"  # correlation id 42 (response header v0)
    "0023"  # error code 35 UNSUPPORTED_VERSION
    "00000030"  # 48 api keys
    "00000000000b"  # Produce 0-11
    "000100000011"  # Fetch 0-17
    "000200000009"  # ListOffsets 0-9
    "00030000000c"  # Metadata 0-12
    "000800000009"  # OffsetCommit 0-9
    "000900000009"  # OffsetFetch 0-9
    "000a00000006"  # FindCoordinator 0-6
    "000b00000009"  # JoinGroup 0-9
    "000c00000004"  # Heartbeat 0-4
    "000d00000005"  # LeaveGroup 0-5
    "000e00000005"  # SyncGroup 0-5
    "000f00000005"  # DescribeGroups 0-5
    "001000000005"  # ListGroups 0-5
    "001100000001"  # SaslHandshake 0-1
    "001200000004"  # ApiVersions 0-4
    "001300000007"  # CreateTopics 0-7
    "001400000006"  # DeleteTopics 0-6
    "001500000002"  # DeleteRecords 0-2
    "001600000005"  # InitProducerId 0-5
    "001700000004"  # OffsetForLeaderEpoch 0-4
    "001800000005"  # AddPartitionsToTxn 0-5
    "001900000004"  # AddOffsetsToTxn 0-4
    "001a00000004"  # EndTxn 0-4
    "001b00000001"  # WriteTxnMarkers 0-1
    "001c00000004"  # TxnOffsetCommit 0-4
    "001d00000003"  # DescribeAcls 0-3
    "001e00000003"  # CreateAcls 0-3
    "001f00000003"  # DeleteAcls 0-3
    "002000000004"  # DescribeConfigs 0-4
    "002100000002"  # AlterConfigs 0-2
    "002200000002"  # AlterReplicaLogDirs 0-2
    "002300000004"  # DescribeLogDirs 0-4
    "002400000002"  # SaslAuthenticate 0-2
    "002500000003"  # CreatePartitions 0-3
    "002a00000002"  # DeleteGroups 0-2
    "002b00000002"  # ElectLeaders 0-2
    "002c00000001"  # IncrementalAlterConfigs 0-1
    "002d00000000"  # AlterPartitionReassignments 0
    "002e00000000"  # ListPartitionReassignments 0
    "002f00000000"  # OffsetDelete 0
    "003000000001"  # DescribeClientQuotas 0-1
    "003100000001"  # AlterClientQuotas 0-1
    "003200000000"  # DescribeUserScramCredentials 0
    "003300000000"  # AlterUserScramCredentials 0
    "003c00000001"  # DescribeCluster 0-1
    "003d00000000"  # DescribeProducers 0
    "004100000000"  # DescribeTransactions 0
    "004200000001"  # ListTransactions 0-1
)  # and nothing after: no throttle time, no tagged fields


def test_probe_answer_bytes_exactly():
    assert api_versions_probe_response(42).hex() == PROBE_ANSWER_HEX


def test_probe_answer_decodes_when_the_client_asked_for_v3():
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 3, api_versions_probe_response(3))
    assert correlation_id == 3 and body.error_code == 35
    assert body.schema.version == 0
