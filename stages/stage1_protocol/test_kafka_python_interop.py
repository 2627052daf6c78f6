"""Our requests and responses against kafka-python's, an independent implementation.

kafka-python 3 generates its codec from Apache Kafka's own message JSON files,
so it is the best oracle we have short of a JVM. For every API and version that
both codecs know, with generated values: what we encode, kafka-python decodes
to the same values and re-encodes to the same bytes; what kafka-python encodes,
we decode to the same values.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol import api_message
from kafka.protocol.admin import topics as _admin_topics  # noqa: F401  (registers classes)
from kafka.protocol.consumer import fetch as _fetch  # noqa: F401
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from simplekafka.protocol import (
    ApiKey,
    api_versions_probe_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from simplekafka.protocol.definitions import MESSAGES
from stages.stage1_protocol.strategies import for_schema


def _kafka_python_classes() -> dict[str, type]:
    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    return {c.__name__: c for c in walk(api_message.ApiMessage) if c._class_version is None}


KP = _kafka_python_classes()

PAIRS = [
    pytest.param(message, version, id=f"{message.name}-v{version}")
    for pair in MESSAGES.values()
    for message in pair
    if message.name in KP
    for version in message.valid
    if KP[message.name].min_version <= version <= KP[message.name].max_version
]

CROSS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plain(value):
    """kafka-python's to_dict, with its bytes-likes and structs made comparable."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _common(ours, theirs):
    """Project both sides onto the keys they name alike (kafka-python renames a few)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        pairs = {k: _common(ours[k], theirs[k]) for k in ours if k in theirs}
        return {k: a for k, (a, _) in pairs.items()}, {k: b for k, (_, b) in pairs.items()}
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs = [_common(a, b) for a, b in zip(ours, theirs)]
        return [a for a, _ in pairs], [b for _, b in pairs]
    if isinstance(ours, int) and ours == -(1 << 31) and theirs is None:
        return ours, ours  # kafka-python reads Kafka's "not asked for" sentinel as None
    if isinstance(ours, int) and isinstance(theirs, (list, set, frozenset)):
        # kafka-python unpacks an authorized-operations bit field into the operations it
        # names; pack them back into the signed int32 that was on the wire.
        bits = sum(1 << op for op in theirs)
        return ours, bits - (1 << 32) if bits >= 1 << 31 else bits
    if ours == bytes(16) and theirs is None:
        return ours, ours  # kafka-python reads the all-zero topic id ("none") as None
    if isinstance(ours, bytes) and isinstance(theirs, uuid.UUID):
        return ours, theirs.bytes
    if isinstance(ours, bytes) and isinstance(theirs, str):
        # kafka-python's to_dict turns bytes into text; the byte-exact re-encode covers them.
        return ours, ours
    return ours, theirs


def _without_tags(strategy):
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "tagged_fields"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strategy.map(strip)


@pytest.mark.parametrize(("message", "version"), PAIRS)
def test_both_codecs_agree(message, version):
    schema = message.schema(version)
    kp_class = KP[message.name]
    is_request = message.name.endswith("Request")

    @CROSS
    @given(_without_tags(for_schema(schema)), st.integers(0, 2**31 - 1))
    def agree(values, correlation_id):
        if message.name == "ApiVersionsResponse":
            values["error_code"] = 0  # kafka-python reads any error answer as v0 (the probe)
        if is_request:
            ours = encode_request(message.api_key, version, correlation_id, "cid", values)
        else:
            ours = encode_response(message.api_key, version, correlation_id, values)
        theirs = kp_class.decode(ours, version=version, header=True)
        assert theirs.header.correlation_id == correlation_id
        mine, seen = _common(schema.decode(schema.encode(values)).to_dict(),
                             _plain(theirs.to_dict()))
        assert mine == seen
        assert theirs.encode(header=True) == ours
        if is_request:
            header, body = decode_request(theirs.encode(header=True))
            assert header.client_id == "cid" and header.api_version == version
        else:
            _, body = decode_response(message.api_key, version, theirs.encode(header=True))
        assert body.to_dict() == schema.decode(schema.encode(values)).to_dict()

    agree()


def test_requests_built_by_kafka_python_decode_with_ours():
    request = MetadataRequest[8](
        topics=[MetadataRequest.MetadataRequestTopic(name="orders")],
        allow_auto_topic_creation=False,
    )
    request.with_header(correlation_id=42, client_id="kp")
    header, body = decode_request(request.encode(header=True))
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 8, 42)
    assert header.client_id == "kp"
    assert body.topics[0].name == "orders"
    assert body.allow_auto_topic_creation is False

    produce = ProduceRequest[7](
        acks=-1,
        timeout_ms=1500,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=3, records=b"RB")
                ],
            )
        ],
    )
    produce.with_header(correlation_id=7, client_id=None)
    header, body = decode_request(produce.encode(header=True))
    assert header.client_id is None
    assert body.topic_data[0].partition_data[0].index == 3
    assert body.topic_data[0].partition_data[0].records == b"RB"


def test_kafka_python_probe_decodes_and_our_answer_satisfies_it():
    """kafka-python opens with ApiVersions v4; the answer is error 35 in v0 layout."""
    probe = ApiVersionsRequest[4](client_software_name="kafka-python", client_software_version="3")
    probe.with_header(correlation_id=1, client_id="kp")
    header, body = decode_request(probe.encode(header=True))
    assert (header.api_key, header.api_version, header.header_version) == (18, 4, 2)
    assert body.client_software_name == "kafka-python"

    answer = api_versions_probe_response(header.correlation_id)
    parsed = KP["ApiVersionsResponse"].decode(answer, version=0, header=True)
    assert parsed.error_code == 35
    assert {k.api_key for k in parsed.api_keys} >= {int(ApiKey.API_VERSIONS)}
