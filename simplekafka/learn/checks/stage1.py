"""Stage 1 checks: the learner's bytes against SimpleKafka's codec, byte for byte."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, byte_diff
from simplekafka.protocol import ApiKey, encode_request, encode_response
from simplekafka.protocol.api import ADVERTISED_VERSIONS
from simplekafka.protocol.dissect import dissect_frame, dissect_records
from simplekafka.protocol.primitives import (
    encode_unsigned_varint,
    write_compact_string,
    write_tagged_fields,
    write_varlong,
)
from simplekafka.protocol.records import build_batch

VARINTS = [0, 1, -1, 2, -2, 63, -64, 64, -65, 300, -300, 8191, 8192, 2**31 - 1, -(2**31),
           2**40 + 5, -(2**63)]


def _varint(value: int) -> bytes:
    """Records use 32-bit varints and 64-bit varlongs; within 32 bits the two agree."""
    out = bytearray()
    write_varlong(out, value)
    return bytes(out)


def check_varints(learner: ModuleType, _workdir: Path) -> None:
    for value in VARINTS:
        expected = _varint(value)
        failure = byte_diff(f"encode_varint({value})", expected, learner.encode_varint(value))
        if failure:
            raise failure
        padded = b"\xaa" + expected + b"\xbb"
        got = learner.decode_varint(padded, 1)
        if tuple(got) != (value, 1 + len(expected)):
            raise ExerciseFailed(
                f"decode_varint({padded.hex(' ')!r}, 1)",
                [f"expected: ({value}, {1 + len(expected)})  (value, position after it)",
                 f"got:      {got!r}"])


def _request_dissector(data: bytes):
    return dissect_frame(data, prefix=False)


def check_header_and_api_versions(learner: ModuleType, _workdir: Path) -> None:
    for correlation_id, client_id in [(7, "me"), (2**31 - 1, None), (-5, ""),
                                      (1234, "prodücer-1")]:
        expected = encode_request(ApiKey.API_VERSIONS, 0, correlation_id, client_id, {})
        got = learner.encode_request_header(int(ApiKey.API_VERSIONS), 0, correlation_id,
                                            client_id)
        failure = byte_diff(f"encode_request_header(18, 0, {correlation_id}, {client_id!r})",
                            expected, got, _request_dissector)
        if failure:
            raise failure
    versions = {int(key): value for key, value in ADVERTISED_VERSIONS.items()}
    body = {"error_code": 0, "throttle_time_ms": 0,
            "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                         for key, (low, high) in sorted(versions.items())]}
    expected = encode_response(ApiKey.API_VERSIONS, 0, 42, body)
    shuffled = dict(sorted(versions.items(), reverse=True))

    def dissect(data: bytes):
        return dissect_frame(data, prefix=False, response=True, api_key=18, api_version=0)

    failure = byte_diff("encode_api_versions_response(42, versions)", expected,
                        learner.encode_api_versions_response(42, shuffled), dissect)
    if failure:
        raise failure


BATCHES: list[tuple[list[tuple[bytes | None, bytes | None]], int, int]] = [
    ([(b"k", b"hello")], 0, 1_700_000_000_000),
    ([(b"k", b"hi")], 7, 1_700_000_000_001),  # batchLength 59: a length's low bits vary
    ([(None, b"v1"), (b"key-2", None), (b"", b"x" * 200)], 41, 1_700_000_123_456),
    ([(b"k%d" % i, b"value %d" % i) for i in range(70)], 2**33, 1_600_000_000_000),
]


def check_record_batch(learner: ModuleType, _workdir: Path) -> None:
    for records, base_offset, timestamp in BATCHES:
        expected = build_batch([{"key": k, "value": v, "timestamp": timestamp} for k, v in records],
                               base_offset=base_offset)
        got = learner.encode_record_batch(records, base_offset, timestamp)
        failure = byte_diff(
            f"encode_record_batch({len(records)} records, base_offset={base_offset})",
            expected, got, dissect_records)
        if failure:
            raise failure


UNSIGNED = [0, 1, 63, 64, 127, 128, 129, 255, 300, 16383, 16384, 2**21 - 1, 2**21, 2**28,
            2**31 - 1, 2**32 - 1]
COMPACT_STRINGS = [None, "", "a", "me", "x" * 126, "x" * 127, "x" * 128, "é" * 70, "prodücer",
                   "y" * 20000]
TAGGED = [{}, {0: b""}, {0: b"\x01"}, {5: b"ab", 1: b"xyz"}, {200: b"z" * 130},
          {tag: bytes([tag % 256]) for tag in range(129, -1, -1)}]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_compact_types(learner: ModuleType, _workdir: Path) -> None:
    for value in UNSIGNED:
        failure = byte_diff(f"encode_unsigned_varint({value})", encode_unsigned_varint(value),
                            learner.encode_unsigned_varint(value))
        if failure:
            raise failure
    for text in COMPACT_STRINGS:
        expected = bytearray()
        write_compact_string(expected, text)
        failure = byte_diff(f"encode_compact_string({_shown(text)})", bytes(expected),
                            learner.encode_compact_string(text))
        if failure:
            raise failure
    for fields in TAGGED:
        expected = bytearray()
        write_tagged_fields(expected, fields)
        shown = _shown(fields) if len(fields) < 5 else f"{{{len(fields)} fields, tags 129 to 0}}"
        failure = byte_diff(f"encode_tagged_fields({shown})", bytes(expected),
                            learner.encode_tagged_fields(dict(fields)))
        if failure:
            raise failure


def check_api_versions_v3(learner: ModuleType, _workdir: Path) -> None:
    for correlation_id, client_id, name, version in [
            (7, "me", "learn", "1.0"),
            (2**31 - 1, None, "confluent-kafka-python", "2.3.0-rdkafka-2.3.0"),
            (-3, "", "x" * 130, "é")]:
        expected = encode_request(ApiKey.API_VERSIONS, 3, correlation_id, client_id, {
            "client_software_name": name, "client_software_version": version})
        got = learner.encode_api_versions_v3_request(correlation_id, client_id, name, version)
        failure = byte_diff(f"encode_api_versions_v3_request({correlation_id}, {client_id!r}, "
                            f"{_shown(name)}, {version!r})", expected, got, _request_dissector)
        if failure:
            raise failure

    def dissect(data: bytes):
        return dissect_frame(data, prefix=False, response=True, api_key=18, api_version=3)

    advertised = {int(key): value for key, value in ADVERTISED_VERSIONS.items()}
    many = {key: (key % 3, key % 3 + key % 5) for key in range(130)}
    for correlation_id, versions in [(42, advertised), (-1, {18: (0, 3)}), (9, many)]:
        body = {"error_code": 0, "throttle_time_ms": 0,
                "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                             for key, (low, high) in sorted(versions.items())]}
        expected = encode_response(ApiKey.API_VERSIONS, 3, correlation_id, body)
        shuffled = dict(sorted(versions.items(), reverse=True))
        failure = byte_diff(f"encode_api_versions_v3_response({correlation_id}, "
                            f"{len(versions)} API keys)", expected,
                            learner.encode_api_versions_v3_response(correlation_id, shuffled),
                            dissect)
        if failure:
            raise failure


STAGE = Stage(1, "The wire protocol", "stage1_protocol", "stages/stage1_protocol/README.md", (
    Exercise(1, "varints",
             "encode and decode the zigzag varints of Kafka's records",
             ("encode_varint", "decode_varint"), check_varints,
             # A produced batch's records are walked by their varint lengths before the
             # served stage 4 broker appends it.
             plugs=(("decode_varint", ("simplekafka.learn.segment_log:decode_varint",)),),
             hints=("Read the chapter's section on records: a record's fields are varints.",
                    "Zigzag maps signed to unsigned ((n << 1) ^ (n >> 63)); then 7 bits a "
                    "byte, low bits first, the high bit set on every byte but the last.")),
    Exercise(2, "request header and ApiVersions",
             "write a request header v1 and the ApiVersions v0 answer, byte for byte",
             ("encode_request_header", "encode_api_versions_response"),
             check_header_and_api_versions,
             hints=("Read the chapter's sections on the request header and ApiVersions.",
                    "Every integer is big-endian; a string is an int16 length in bytes "
                    "(not characters) then UTF-8; an array is an int32 count then its items.")),
    Exercise(3, "RecordBatch v2",
             "encode records and a RecordBatch v2 with its CRC-32C",
             ("encode_record", "encode_record_batch"), check_record_batch,
             hints=("Read the chapter's RecordBatch layout, field by field.",
                    "batchLength counts from partitionLeaderEpoch to the end; the CRC-32C "
                    "covers from attributes (byte 21) to the end; lastOffsetDelta is count-1.")),
    Exercise(4, "compact types and tagged fields",
             "write the unsigned varints, compact strings and tagged fields of flexible "
             "versions",
             ("encode_unsigned_varint", "encode_compact_string", "encode_tagged_fields"),
             check_compact_types,
             hints=("Read the chapter's section on primitives: compact strings and tagged "
                    "fields.",
                    "Lengths and counts are unsigned varints (no zigzag); a compact length is "
                    "n + 1 so that 0 can mean null; a tagged-field count is the count itself.")),
    Exercise(5, "ApiVersions v3",
             "write the flexible ApiVersions v3 request (header v2) and its answer, byte for "
             "byte",
             ("encode_api_versions_v3_request", "encode_api_versions_v3_response"),
             check_api_versions_v3,
             hints=("Read the chapter's sections on headers and on ApiVersions.",
                    "Header v2 keeps the classic client_id string and adds a tagged-field "
                    "block; the ApiVersions response header stays v0; every structure of the "
                    "body, each array entry too, ends with tagged fields.")),
), mutants=(
    Mutant("varint-off-by-one-continuation", 1, "    while zigzag >= 0x80:",
           "    while zigzag > 0x80:"),
    Mutant("varint-decode-8-bit-groups", 1, "        shift += 7", "        shift += 8"),
    Mutant("client-id-length-in-characters", 2, 'tail = struct.pack(">h", len(raw)) + raw',
           'tail = struct.pack(">h", len(client_id)) + raw'),
    Mutant("api-versions-unsorted", 2,
           "len(versions)))\n    for key in sorted(versions):",
           "len(versions)))\n    for key in versions:"),
    Mutant("crc-over-the-wrong-range", 3, "crc = crc32c(after_crc)",
           "crc = crc32c(after_crc[2:])"),
    Mutant("batch-length-counts-the-log-overhead", 3,
           "batch_length = 4 + 1 + 4 + len(after_crc)",
           "batch_length = 4 + 1 + 4 + len(after_crc) + 12"),
    Mutant("last-offset-delta-is-the-count", 3, "0, len(records) - 1, timestamp_ms",
           "0, len(records), timestamp_ms"),
    Mutant("unsigned-varint-continuation-off-by-one", 4, "    while value >= 0x80:",
           "    while value > 0x80:"),
    Mutant("compact-string-length-without-plus-one", 4,
           "return encode_unsigned_varint(len(raw) + 1) + raw",
           "return encode_unsigned_varint(len(raw)) + raw"),
    Mutant("compact-string-length-in-characters", 4,
           "return encode_unsigned_varint(len(raw) + 1) + raw",
           "return encode_unsigned_varint(len(value) + 1) + raw"),
    Mutant("compact-string-length-zigzagged", 4,
           "return encode_unsigned_varint(len(raw) + 1) + raw",
           "return encode_varint(len(raw) + 1) + raw"),
    Mutant("compact-null-as-classic-minus-one", 4, "        return encode_unsigned_varint(0)\n",
           '        return b"\\xff\\xff"\n'),
    Mutant("tagged-field-count-plus-one", 4,
           "out = bytearray(encode_unsigned_varint(len(fields)))",
           "out = bytearray(encode_unsigned_varint(len(fields) + 1))"),
    Mutant("tagged-fields-unsorted", 4, "    for tag in sorted(fields):", "    for tag in fields:"),
    Mutant("tagged-field-without-size", 4,
           "        out += encode_unsigned_varint(len(fields[tag]))\n", ""),
    Mutant("header-v2-client-id-compact", 5,
           "header = encode_request_header(18, 3, correlation_id, client_id) + "
           "encode_tagged_fields({})",
           'header = struct.pack(">hhi", 18, 3, correlation_id) + '
           "encode_compact_string(client_id) + encode_tagged_fields({})"),
    Mutant("header-v2-tagged-fields-missing", 5,
           "header = encode_request_header(18, 3, correlation_id, client_id) + "
           "encode_tagged_fields({})",
           "header = encode_request_header(18, 3, correlation_id, client_id)"),
    Mutant("request-body-tagged-fields-missing", 5,
           "encode_compact_string(software_version)\n            + encode_tagged_fields({}))",
           "encode_compact_string(software_version))"),
    Mutant("response-header-with-tagged-fields", 5,
           'out = bytearray(struct.pack(">ih", correlation_id, 0))',
           'out = bytearray(struct.pack(">ibh", correlation_id, 0, 0))'),
    Mutant("api-keys-count-without-plus-one", 5,
           "out += encode_unsigned_varint(len(versions) + 1)",
           "out += encode_unsigned_varint(len(versions))"),
    Mutant("api-keys-entry-tagged-fields-missing", 5,
           'out += struct.pack(">hhh", key, low, high) + encode_tagged_fields({})',
           'out += struct.pack(">hhh", key, low, high)'),
    Mutant("api-keys-unsorted-v3", 5,
           "    out += encode_unsigned_varint(len(versions) + 1)\n    for key in sorted(versions):",
           "    out += encode_unsigned_varint(len(versions) + 1)\n    for key in versions:"),
    Mutant("throttle-time-missing", 5, '    out += struct.pack(">i", 0)  # throttle_time_ms\n',
           ""),
    Mutant("response-body-tagged-fields-missing", 5,
           "    out += encode_tagged_fields({})  # the body's tagged fields\n", ""),
))
