"""The dissector and ``simplekafka inspect``: the right tree, and the right byte when it breaks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.protocol import ApiKey, encode_frame, encode_request, encode_response
from simplekafka.protocol.dissect import (
    attribute_bits,
    dissect_frame,
    dissect_records,
    has_length_prefix,
    render,
)
from simplekafka.protocol.legacy_records import build_message_set
from simplekafka.protocol.records import build_batch


def _produce_frame(compression: str = "none") -> bytes:
    batch = build_batch(
        [(b"k", b"hello"), {"key": None, "value": b"v2", "headers": [("h", b"x")]}],
        compression=compression,
    )
    payload = encode_request(ApiKey.PRODUCE, 8, 9, "demo", {
        "acks": -1, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    })
    return encode_frame(payload)


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_request_is_taken_apart_down_to_the_records(compression):
    d = dissect_frame(_produce_frame(compression))
    assert d.ok, render(d)
    assert d.find("length").value == len(d.data) - 4
    assert d.find("header.request_api_key").note == "Produce"
    assert d.find("header.client_id").value == "demo"
    partition = d.find("body.topic_data.0.partition_data.0")
    batch = partition.find("records.batch 0")
    assert batch.find("magic").value == 2
    assert "matches" in batch.find("crc").note
    assert batch.find("attributes.compression").value.endswith(f"({compression})")
    records = batch.find("records")
    assert records.find("record 0.value").value == b"hello"
    assert records.find("record 1.key_length").note == "null"
    assert records.find("record 1.header 0.key").value == "h"
    assert "offset 1" in records.find("record 1").value


def test_offsets_and_lengths_match_the_bytes():
    data = _produce_frame()
    d = dissect_frame(data)
    acks = d.find("body.acks")
    assert data[acks.offset : acks.offset + acks.length] == b"\xff\xff"
    name = d.find("body.topic_data.0.name")
    assert data[name.offset : name.offset + name.length] == b"\x00\x01t"


def test_every_truncation_points_at_the_first_missing_byte():
    data = _produce_frame("gzip")
    for cut in range(5, len(data)):
        d = dissect_frame(data[:cut], prefix=True)
        assert not d.ok, f"cut at {cut} decoded"
        assert d.error.offset == cut, f"cut at {cut}: {d.error}"
        assert "^ (end of data)" in render(d)


def test_truncated_frame_is_detected_as_prefixed():
    data = _produce_frame()
    assert has_length_prefix(data)
    assert has_length_prefix(data[:40])
    assert not has_length_prefix(data[4:])


def test_bad_magic_gets_a_caret_under_the_magic_byte():
    data = bytearray(_produce_frame())
    batch_start = dissect_frame(bytes(data)).find(
        "body.topic_data.0.partition_data.0.records.batch 0").offset
    data[batch_start + 16] = 5  # (0 and 1 would be old message sets: see below)
    d = dissect_frame(bytes(data))
    assert d.error.offset == batch_start + 16
    assert d.error.expected.startswith("magic 2")
    lines = render(d).splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip().startswith("^^"))
    row = lines[caret - 1]
    column = lines[caret].index("^^")
    assert row[column : column + 2] == "05"  # the caret sits under the bad byte itself


def test_crc_mismatch_is_reported():
    data = bytearray(_produce_frame())
    data[-1] ^= 0xFF  # last byte of the last record
    d = dissect_frame(bytes(data))
    crc = d.find("body.topic_data.0.partition_data.0.records.batch 0.crc")
    assert "MISMATCH" in crc.note


def test_response_needs_key_and_version_and_then_decodes():
    payload = encode_response(ApiKey.METADATA, 8, 3, {
        "brokers": [{"node_id": 0, "host": "localhost", "port": 9092}],
        "topics": [{"error_code": 3, "name": "gone"}],
    })
    d = dissect_frame(payload, response=True, api_key=3, api_version=8)
    assert d.ok, render(d)
    assert d.find("body.topics.0.error_code").note == "UNKNOWN_TOPIC_OR_PARTITION"


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_sets_are_taken_apart_wrappers_opened(magic):
    """Produce v0-2 and Fetch v0-3 carry message formats v0/v1 (legacy_records.py)."""
    inner = build_message_set([(0, 7, b"k", b"v0"), (1, 8, None, b"v1")], magic, "gzip")
    payload = encode_request(ApiKey.PRODUCE, 2 if magic else 1, 1, "t", {
        "acks": 1, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": inner}]}]})
    d = dissect_frame(payload)
    assert d.ok, render(d)
    wrapper = d.find("body.topic_data.0.partition_data.0.records.message 0")
    assert wrapper.value == f"offset 1, magic {magic}"
    assert "matches" in wrapper.find("crc").note
    value = wrapper.find("value")
    assert value.note.startswith("wrapper: gzip")
    assert value.find("message 0.key").value == b"k"
    assert value.find("message 1.value").value == b"v1"
    assert (value.find("message 0.timestamp") is None) == (magic == 0)
    broken = bytearray(build_message_set([(0, 7, None, b"abc")], magic))
    broken[-1] ^= 1
    assert "MISMATCH" in dissect_records(bytes(broken)).find("message 0.crc").note


def test_record_set_alone():
    data = build_batch([(None, b"a")]) + build_batch([(None, b"b")], base_offset=1)
    d = dissect_records(data + data[:20])
    assert d.ok
    assert d.find("batch 1.records.record 0.value").value == b"b"
    assert d.find("partial_batch").note.startswith("a partial trailing batch")


def test_attribute_bits():
    bits = attribute_bits(0b0011011)
    assert bits["compression"] == (3, "lz4")
    assert bits["timestamp_type"] == (1, "LogAppendTime")
    assert bits["is_transactional"] == (1, True)
    assert bits["is_control"] == (0, False)
    assert bits["bits"] == "0000000000011011"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([None, True, False]))
def test_any_bytes_give_a_report_never_an_exception(data, prefix):
    d = dissect_frame(data, prefix=prefix)
    assert isinstance(render(d), str)


# --- the command line ------------------------------------------------------------------------


def _inspect(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simplekafka", "inspect", *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )


@pytest.mark.integration
def test_cli_dissects_hex_from_stdin():
    result = _inspect(stdin=_produce_frame().hex(" "))
    assert result.returncode == 0, result.stderr
    assert "request Produce v8, correlation id 9" in result.stdout
    assert "b'hello'" in result.stdout


@pytest.mark.integration
def test_cli_points_at_the_byte_where_a_truncated_frame_ends(tmp_path):
    data = _produce_frame()[:40]
    path = tmp_path / "frame.bin"
    path.write_bytes(data)
    result = _inspect(str(path))
    assert result.returncode == 1
    assert "error at byte 40" in result.stdout
    assert "^ (end of data)" in result.stdout
    assert "partition_data.0.index" in result.stdout


@pytest.mark.integration
def test_cli_response_by_name(tmp_path):
    payload = encode_response(ApiKey.API_VERSIONS, 2, 7, {"api_keys": []})
    result = _inspect("--hex", payload.hex(), "--no-prefix", "--response", "api-versions", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "response ApiVersions v2, correlation id 7" in result.stdout


@pytest.mark.integration
@pytest.mark.parametrize(
    "args",
    [
        ["--hex", "zz"],
        ["--hex", "abc"],
        ["--hex", ""],
        ["--hex", "00", "--response", "nosuchapi", "1"],
        ["--hex", "00", "--response", "metadata", "99"],
        ["--hex", "00", "--response", "metadata", "x"],
        ["--hex", "00", "somefile"],
        ["/no/such/file"],
        ["--records", "--response", "3", "1", "--hex", "00"],
        ["--no-such-flag"],
    ],
)
def test_cli_bad_arguments_are_one_line_and_exit_2(args):
    result = _inspect(*args, stdin="")
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
