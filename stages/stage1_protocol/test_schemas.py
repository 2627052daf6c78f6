"""Every schema version round-trips, and no input makes the decoder raise anything else.

The round trip runs over every (API, version, direction) the codec knows, with
values generated from the schema itself (see ``strategies.py``). The fuzz
tests feed random and mutated bytes: whatever happens, the only exception
allowed out is ProtocolError, the codec's one error type.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simplekafka.protocol import ProtocolError, Struct, decode_request, decode_response
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey, request_schema, response_schema
from simplekafka.protocol.definitions import MESSAGES
from simplekafka.protocol.fields import plain
from simplekafka.protocol.messages import decode_request_dict, decode_response_dict
from simplekafka.protocol.schema import EncodeError, strict_encoding
from stages.stage1_protocol.strategies import for_schema

EVERY_SCHEMA = [
    pytest.param(message, version, id=f"{message.name}-v{version}")
    for pair in MESSAGES.values()
    for message in pair
    for version in message.valid
]

ROUND_TRIP = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.parametrize(("message", "version"), EVERY_SCHEMA)
def test_every_schema_version_round_trips(message, version):
    schema = message.schema(version)

    @ROUND_TRIP
    @given(for_schema(schema))
    def round_trip(values):
        encoded = schema.encode(values)
        decoded = schema.decode(encoded)
        assert decoded.to_dict() == values
        assert schema.encode(decoded) == encoded
        # The compiled codec agrees with the field-by-field reference path.
        slow = bytearray()
        schema.write_slow(slow, values)
        assert bytes(slow) == encoded
        assert schema.read_slow(encoded, 0)[0].to_dict() == values
        # The dict decoder (the broker's requests) reads the same values, as dicts all
        # the way down, and they encode to the same bytes.
        as_dicts, end = schema.read_dict(encoded, 0)
        assert end == len(encoded)
        assert _only_dicts(as_dicts) and plain(as_dicts) == values
        assert schema.encode(as_dicts) == encoded

    round_trip()


def _only_dicts(value: object) -> bool:
    """Whether a decoded value holds no Struct at any depth."""
    if isinstance(value, Struct):
        return False
    if isinstance(value, dict):
        return all(_only_dicts(v) for v in value.values())
    if isinstance(value, list):
        return all(_only_dicts(v) for v in value)
    return True


def test_every_advertised_version_has_both_schemas():
    for api_key, (low, high) in SUPPORTED_VERSIONS.items():
        for version in range(low, high + 1):
            assert request_schema(api_key, version).version == version
            assert response_schema(api_key, version).version == version


def test_unknown_key_or_version_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="unknown API key"):
        request_schema(7, 0)
    with pytest.raises(ProtocolError, match="no version 99"):
        response_schema(ApiKey.FETCH, 99)


def test_make_fills_defaults_and_rejects_typos():
    schema = response_schema(ApiKey.FETCH, 11)
    partition = schema.fields[3].type.element.schema.fields[1].type.element.schema.make(
        partition_index=2
    )
    assert partition.last_stable_offset == -1
    assert partition.preferred_read_replica == -1
    assert partition.records == b""  # never null: clients choke on a null record set
    assert partition.aborted_transactions == []
    with pytest.raises(TypeError, match="no field"):
        schema.make(sesion_id=0)


def test_fields_of_other_versions_are_accepted_and_dropped():
    """One response object can be encoded at whichever version the client asked for."""
    body = {"throttle_time_ms": 5, "error_code": 0, "session_id": 0, "responses": []}
    v4 = response_schema(ApiKey.FETCH, 4)
    assert v4.decode(v4.encode(body)).to_dict() == {"throttle_time_ms": 5, "responses": []}
    assert Struct(v4, **body).to_dict() == {"throttle_time_ms": 5, "responses": []}


def test_a_misspelt_key_is_an_error_naming_its_path():
    """A key that no version of the message has fails, in the slow and in the strict path."""
    schema = response_schema(ApiKey.PRODUCE, 8)
    body = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "eror_code": 1, "base_offset": 0}]}], "throttle_time_ms": 0}
    expected = "ProduceResponse v8: unknown field responses[0].partition_responses[0].eror_code"
    with pytest.raises(EncodeError) as caught:
        schema.write_slow(bytearray(), body)
    assert str(caught.value) == expected
    previous = strict_encoding(True)
    try:
        with pytest.raises(EncodeError, match=r"responses\[0\]\.partition_responses"):
            schema.encode(body)
        with pytest.raises(EncodeError, match="unknown field throtle_time_ms"):
            schema.encode({"responses": [], "throtle_time_ms": 0})
    finally:
        strict_encoding(previous)


def test_the_compiled_check_is_off_unless_strict():
    """Without strict encoding the compiled path does not look at keys (the hot path's cost)."""
    schema = response_schema(ApiKey.PRODUCE, 8)
    previous = strict_encoding(False)
    try:
        assert schema.encode({"responses": [], "throtle_time_ms": 5}) == schema.encode({})
    finally:
        strict_encoding(previous)


@pytest.mark.parametrize(("message", "version"), EVERY_SCHEMA)
def test_a_missing_field_takes_its_default_in_both_paths(message, version):
    """As in Kafka's generated classes: an absent field is its default, fast or slow."""
    schema = message.schema(version)
    slow = bytearray()
    schema.write_slow(slow, {})
    assert schema.encode({}) == bytes(slow)
    assert schema.encode(schema.make()) == bytes(slow)


def test_struct_access_and_equality():
    schema = request_schema(ApiKey.METADATA, 1)
    decoded = schema.decode(schema.encode({"topics": [{"name": "orders"}]}))
    assert decoded.topics[0].name == "orders"
    assert decoded["topics"][0]["name"] == "orders"
    assert decoded == {"topics": [{"name": "orders"}]}
    assert decoded == schema.make(topics=[{"name": "orders"}])
    assert "MetadataRequest(" in repr(decoded)


def test_defaults_are_not_shared_between_messages():
    schema = request_schema(ApiKey.PRODUCE, 8)
    first, second = schema.make(), schema.make()
    first.topic_data.append({"name": "x", "partition_data": []})
    assert second.topic_data == []


def test_encoding_a_bad_value_names_the_field():
    schema = request_schema(ApiKey.PRODUCE, 8)
    with pytest.raises(EncodeError, match="acks"):
        schema.encode({"acks": 70000, "timeout_ms": 1})
    with pytest.raises(EncodeError, match="name"):
        schema.encode({"topic_data": [{"name": None}]})
    with pytest.raises(ValueError):  # EncodeError is also a ValueError
        schema.encode({"topic_data": [{"name": 5}]})


def test_trailing_bytes_are_reported_with_their_offset():
    schema = request_schema(ApiKey.METADATA, 0)
    data = schema.encode({"topics": []}) + b"\x00"
    with pytest.raises(ProtocolError) as info:
        schema.decode(data)
    assert info.value.offset == 4


def test_truncation_points_at_the_end_of_the_buffer():
    schema = response_schema(ApiKey.METADATA, 8)
    data = schema.encode({"brokers": [{"node_id": 1, "host": "localhost", "port": 9092}]})
    for cut in range(len(data)):
        with pytest.raises(ProtocolError) as info:
            schema.decode(data[:cut])
        assert info.value.offset is not None and info.value.offset <= cut


def test_huge_array_count_is_rejected_before_allocating():
    schema = request_schema(ApiKey.METADATA, 1)
    with pytest.raises(ProtocolError, match="needs at least"):
        schema.decode(b"\x7f\xff\xff\xff")


FUZZ = settings(max_examples=300, deadline=None)
SAMPLE = [(m, v) for pair in MESSAGES.values() for m in pair for v in (m.valid.low, m.valid.high)]


@FUZZ
@given(st.sampled_from(SAMPLE), st.binary(max_size=200))
def test_random_bytes_raise_only_protocol_error(message_version, data):
    message, version = message_version
    schema = message.schema(version)
    try:
        schema.decode(data)
    except ProtocolError:
        pass
    try:
        schema.read_dict(data, 0)
    except ProtocolError:
        pass


@FUZZ
@given(st.data())
def test_mutated_messages_raise_only_protocol_error(data):
    message, version = data.draw(st.sampled_from(SAMPLE))
    schema = message.schema(version)
    encoded = bytearray(schema.encode(data.draw(for_schema(schema))))
    if encoded:
        for _ in range(data.draw(st.integers(1, 4))):
            index = data.draw(st.integers(0, len(encoded) - 1))
            encoded[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    try:
        schema.decode(bytes(encoded[:cut]))
    except ProtocolError:
        pass
    try:
        schema.read_dict(bytes(encoded[:cut]), 0)
    except ProtocolError:
        pass


@FUZZ
@given(st.sampled_from([int(k) for k in ApiKey]), st.integers(-1, 12), st.binary(max_size=120))
def test_random_requests_raise_only_protocol_error(api_key, version, tail):
    payload = api_key.to_bytes(2, "big") + version.to_bytes(2, "big", signed=True) + tail
    for decode in (decode_request, decode_request_dict):
        try:
            decode(payload)
        except ProtocolError:
            pass
    for decode_answer in (decode_response, decode_response_dict):
        try:
            decode_answer(api_key, max(version, 0), tail)
        except ProtocolError:
            pass


def _partition_answer(**tagged: object) -> dict:
    return {"topic_id": bytes(range(16)), "partitions": [{
        "partition_index": 0, "error_code": 0, "high_watermark": 5, "last_stable_offset": 5,
        "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
        "records": b"", **tagged}]}


@pytest.mark.parametrize("diverging", [
    None,  # left out
    {"epoch": -1, "end_offset": -1},  # given, at its default
    {"epoch": -1},  # given in part, the rest at its default
    {"epoch": -1, "end_offset": -1, "tagged_fields": {}},
], ids=["left-out", "default", "part-default", "default-with-tags"])
def test_a_tagged_structure_at_its_default_is_not_written(diverging):
    """Kafka writes a tagged field only when it differs from its default: a Fetch answer's
    diverging epoch at -1/-1 adds no byte, however the encoder is given it."""
    schema = response_schema(ApiKey.FETCH, 17)
    bare = bytearray()
    schema.write(bare, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                        "responses": [_partition_answer()]})
    given = bytearray()
    extra = {} if diverging is None else {"diverging_epoch": diverging}
    schema.write(given, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                         "responses": [_partition_answer(**extra)]})
    assert bytes(given) == bytes(bare)


@pytest.mark.parametrize("diverging", [{"epoch": 3, "end_offset": 42}, {"end_offset": 42}],
                         ids=["whole", "in-part"])
def test_a_tagged_structure_off_its_default_is_written_and_read_back(diverging):
    schema = response_schema(ApiKey.FETCH, 17)
    out = bytearray()
    schema.write(out, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                       "responses": [_partition_answer(diverging_epoch=diverging)]})
    answer = decode_response_dict(ApiKey.FETCH, 17, _with_header(bytes(out)))[1]
    read = answer["responses"][0]["partitions"][0]["diverging_epoch"]
    assert {k: read[k] for k in diverging} == diverging
    assert read["epoch"] == diverging.get("epoch", -1)
    again = bytearray()  # the decoded Struct, encoded again: the same bytes
    schema.write(again, decode_response(ApiKey.FETCH, 17, _with_header(bytes(out)))[1])
    assert bytes(again) == bytes(out)


def test_a_decoded_answer_with_tagged_structures_at_default_encodes_to_the_same_bytes():
    schema = response_schema(ApiKey.FETCH, 17)
    out = bytearray()
    schema.write(out, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                       "responses": [_partition_answer()]})
    again = bytearray()
    schema.write(again, decode_response(ApiKey.FETCH, 17, _with_header(bytes(out)))[1])
    assert bytes(again) == bytes(out)


def _with_header(body: bytes) -> bytes:
    """A flexible response header (correlation id 7, no tags) before ``body``."""
    return (7).to_bytes(4, "big") + b"\x00" + body


@pytest.mark.parametrize("count", [0, 126, 127, 300])
def test_a_compact_array_of_structures_round_trips_at_any_count(count):
    """The count of a compact array is its length plus one as an unsigned varint: one byte
    up to 126 elements, two from 127 (the encoder writes the one-byte case inline)."""
    schema = response_schema(ApiKey.FETCH, 17)
    answer = _partition_answer()
    answer["partitions"] = [dict(answer["partitions"][0], partition_index=i)
                            for i in range(count)]
    out = bytearray()
    schema.write(out, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                       "responses": [answer]})
    read = decode_response_dict(ApiKey.FETCH, 17, _with_header(bytes(out)))[1]
    assert [p["partition_index"] for p in read["responses"][0]["partitions"]] == list(range(count))
    slow = bytearray()
    schema.write_slow(slow, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                             "responses": [answer]})
    assert bytes(slow) == bytes(out)


def _produce_v10(records: bytes | None) -> dict:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": records}]}]}


# Lengths around the one-byte and two-byte varint boundaries of a compact length (n + 1):
# 126 bytes is the last one-byte length, 16,382 the last two-byte one.
@pytest.mark.parametrize("size", [0, 1, 126, 127, 300, 16_382, 16_383, 20_000])
def test_compact_bytes_are_read_and_written_at_every_length_width(size):
    """A compact record set's length is read and written inline when it takes one or two
    bytes, through the varint reader beyond: both give the field-by-field codec's bytes and
    values, and a buffer cut anywhere in the length or the bytes is a ProtocolError."""
    schema = request_schema(ApiKey.PRODUCE, 10)
    records = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    out = bytearray()
    schema.write(out, _produce_v10(records))
    slow = bytearray()
    schema.write_slow(slow, _produce_v10(records))
    assert bytes(out) == bytes(slow)
    as_dict, end = schema.read_dict(bytes(out), 0)
    assert end == len(out)
    assert as_dict["topic_data"][0]["partition_data"][0]["records"] == records
    assert schema.read_slow(bytes(out), 0)[0].topic_data[0].partition_data[0].records == records
    at = bytes(out).index(b"t") + 1 + 1 + 4  # the name, the partitions' count, the index
    for cut in sorted({at, at + 1, at + 2, len(out) - 2}):
        with pytest.raises(ProtocolError):
            schema.read_dict(bytes(out[:cut]), 0)


def test_a_null_compact_record_set_reads_as_null():
    schema = request_schema(ApiKey.PRODUCE, 10)
    out = bytearray()
    schema.write(out, _produce_v10(None))
    assert schema.read_dict(bytes(out), 0)[0]["topic_data"][0]["partition_data"][0][
        "records"] is None


def test_a_uuid_is_written_as_its_16_bytes_and_refused_otherwise():
    schema = response_schema(ApiKey.FETCH, 16)
    answer = _partition_answer()
    answer["topic_id"] = bytes(range(16))
    out = bytearray()
    schema.write(out, {"responses": [answer]})
    assert bytes(range(16)) in bytes(out)
    read = schema.read_dict(bytes(out), 0)[0]
    assert read["responses"][0]["topic_id"] == bytes(range(16))
    answer["topic_id"] = b"short"
    with pytest.raises(EncodeError, match="16 bytes"):
        schema.write(bytearray(), {"responses": [answer]})
    start = bytes(out).index(bytes(range(16)))
    with pytest.raises(ProtocolError):  # cut inside the uuid
        schema.read_dict(bytes(out[:start + 8]), 0)


def test_a_missing_tagged_structure_is_each_decoded_requests_own_default():
    """A request without tagged fields gets each known tagged field's default (set inline by
    the dict decoder): numbers shared, structures a fresh dict per message."""
    schema = request_schema(ApiKey.FETCH, 16)
    data = schema.encode({"max_wait_ms": 500, "topics": []})
    first, second = schema.read_dict(data, 0)[0], schema.read_dict(data, 0)[0]
    assert first["replica_state"] == {"replica_id": -1, "replica_epoch": -1,
                                      "tagged_fields": {}}
    assert first["cluster_id"] is None
    first["replica_state"]["replica_id"] = 3
    first["replica_state"]["tagged_fields"][0] = b"x"
    assert second["replica_state"] == {"replica_id": -1, "replica_epoch": -1,
                                       "tagged_fields": {}}


def test_a_nullable_array_left_null_is_written_as_null():
    schema = response_schema(ApiKey.FETCH, 16)
    answer = _partition_answer()
    answer["partitions"][0]["aborted_transactions"] = None
    out = bytearray()
    schema.write(out, {"responses": [answer]})
    slow = bytearray()
    schema.write_slow(slow, {"responses": [answer]})
    assert bytes(out) == bytes(slow)
    read = schema.read_dict(bytes(out), 0)[0]
    assert read["responses"][0]["partitions"][0]["aborted_transactions"] is None
    old = response_schema(ApiKey.FETCH, 11)
    out, slow = bytearray(), bytearray()
    old.write(out, {"responses": [dict(answer, topic="t")]})
    old.write_slow(slow, {"responses": [dict(answer, topic="t")]})
    assert bytes(out) == bytes(slow)
