"""Stage 4 exercises: a broker of your own, from the socket's bytes up, that kcat uses.

Read stages/stage4_broker/README.md first. You write the server and the four
answers a single-node broker needs: first the framing (cutting Kafka's
length-prefixed frames out of a TCP byte stream) and the request loop (read
each request's header, dispatch it by API key and version, answer with its
correlation id), then ApiVersions, Metadata, Produce and Fetch.

``simplekafka learn check 4`` drives your ``FrameDecoder`` and ``Connection``
with byte streams split at every byte and run together, then serves your
broker on 127.0.0.1 (``simplekafka.learn.serve`` only moves bytes between the
socket and your ``Connection.data_received``) and runs kcat and confluent-kafka
against it. Given: the codec of ``simplekafka.protocol`` (``decode_request``
turns a request payload into its header and a struct with attribute access;
``encode_response`` encodes the dict you return), and the log on disk,
``SegmentLog``: stage 3's ``Segment``, which is yours once your stage 3 passes.

Each handler method gets the request's API version and the decoded request
body, and returns the response body as a dict. Field names are Kafka's
(snake_case); fields a version does not have are ignored, fields you leave out
take their defaults (0, "", empty list), so one dict serves every version
advertised.
"""

from __future__ import annotations

import struct
from pathlib import Path

from simplekafka.learn.segment_log import OffsetOutOfRangeError, SegmentLog
from simplekafka.protocol import (
    ApiKey,
    ErrorCode,
    FrameTooLargeError,
    ProtocolError,
    decode_request,
    encode_response,
)
from simplekafka.protocol.fields import Struct

# The versions this broker speaks, in the order a client uses them (answers list them
# in ascending key order): RecordBatch v2 needs Produce 3+ and Fetch 4+.
VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 2),
    ApiKey.METADATA: (1, 8),
    ApiKey.PRODUCE: (3, 8),
    ApiKey.FETCH: (4, 11),
}
# Which Broker method answers which API key.
HANDLERS: dict[int, str] = {
    ApiKey.API_VERSIONS: "api_versions",
    ApiKey.METADATA: "metadata",
    ApiKey.PRODUCE: "produce",
    ApiKey.FETCH: "fetch",
}
CLUSTER_ID = "my-simplekafka"
MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
SIZE = struct.Struct(">i")  # a frame's length prefix
HEADER_START = struct.Struct(">hhi")  # api_key, api_version, correlation_id


class CloseConnection(Exception):
    """Raised by Connection.answer: the request cannot be answered; close the connection."""


# -- exercise 1: framing --------------------------------------------------------------------


def encode_frame(payload: bytes) -> bytes:
    """A frame: the payload's length as a 4-byte big-endian int32, then the payload."""
    return SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Cut complete frames out of a TCP byte stream, whatever pieces it arrives in."""

    def __init__(self, max_length: int = MAX_FRAME_BYTES):
        self.max_length = max_length
        self.buffer = bytearray()  # bytes received that are not yet a complete frame

    def feed(self, data: bytes) -> list[bytes]:
        """Add the bytes of one read; return the payloads of every frame now complete.

        A read may hold part of a frame, exactly one, or several and a part:
        return every complete one, in order, and keep the rest for the next
        feed. A length prefix that is negative or above ``max_length`` is
        refused as soon as its 4 bytes are in, before any of its body is kept:
        raise ``FrameTooLargeError(message, length, frames)``, where
        ``frames`` are the payloads completed earlier in this same feed (the
        server still answers those before it closes the connection).
        """
        self.buffer += data
        frames: list[bytes] = []
        while len(self.buffer) >= 4:
            (length,) = SIZE.unpack_from(self.buffer, 0)
            if length < 0 or length > self.max_length:
                raise FrameTooLargeError(f"a frame announces {length} bytes; the limit is "
                                         f"{self.max_length}", length, frames)
            if len(self.buffer) < 4 + length:
                return frames  # the rest of this frame comes in a later read
            frames.append(bytes(self.buffer[4 : 4 + length]))
            del self.buffer[: 4 + length]
        return frames


# -- exercise 2: the request loop -----------------------------------------------------------


class Connection:
    """One client's connection: the bytes it sends in, the bytes to send back out."""

    def __init__(self, broker: object, max_frame_bytes: int = MAX_FRAME_BYTES):
        self.broker = broker
        self.frames = FrameDecoder(max_frame_bytes)

    def data_received(self, data: bytes) -> tuple[bytes, bool]:
        """The bytes of one read in; (the framed responses to send, whether to close after).

        Answer every request complete so far, in order, each response framed
        (``encode_frame``); a request answered None gets no response. When
        ``answer`` raises CloseConnection, or a frame is too large, send what
        was answered before it and close: nothing after it is answered.
        """
        out = bytearray()
        try:
            payloads = self.frames.feed(data)
        except FrameTooLargeError as exc:
            payloads, close = exc.frames, True
        else:
            close = False
        for payload in payloads:
            try:
                response = self.answer(payload)
            except CloseConnection:
                return bytes(out), True
            if response is not None:
                out += encode_frame(response)
        return bytes(out), close

    def answer(self, payload: bytes) -> bytes | None:
        """One request payload -> its response payload (unframed), or None for no response.

        The payload starts with int16 api_key, int16 api_version, int32
        correlation_id. An api key not in VERSIONS, or a version outside its
        (min, max), or a payload that does not decode (``decode_request``
        raises ProtocolError; shorter than 8 bytes too): raise CloseConnection,
        as Kafka does, since no answer could be formed that the client would
        read. Except ApiVersions at a version we do not speak (clients open
        with v3 or v4): answer error_code UNSUPPORTED_VERSION (35) in the v0
        layout, which every client reads, listing VERSIONS in ascending key
        order; the client retries with a version from the list. Otherwise
        call the Broker method HANDLERS names with (api_version, request) and
        encode its answer with ``encode_response`` at the request's version
        and with its correlation_id; None stays None (acks=0).
        """
        if len(payload) < HEADER_START.size:
            raise CloseConnection(f"a {len(payload)}-byte request has no header")
        api_key, api_version, correlation_id = HEADER_START.unpack_from(payload, 0)
        if api_key not in VERSIONS:
            raise CloseConnection(f"unknown api key {api_key}")
        low, high = VERSIONS[api_key]
        if not low <= api_version <= high:
            if api_key == ApiKey.API_VERSIONS:
                return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {
                    "error_code": ErrorCode.UNSUPPORTED_VERSION,
                    "api_keys": [{"api_key": int(key), "min_version": first,
                                  "max_version": last}
                                 for key, (first, last) in sorted(VERSIONS.items())]})
            raise CloseConnection(f"api key {api_key} v{api_version} is not supported")
        try:
            _header, request = decode_request(payload)
        except ProtocolError as exc:
            raise CloseConnection(f"the request does not decode: {exc}") from None
        body = getattr(self.broker, HANDLERS[api_key])(api_version, request)
        if body is None:
            return None
        return encode_response(api_key, api_version, correlation_id, body)


class Broker:
    """One node, every topic with one partition, led by this node; logs under ``data_dir``."""

    def __init__(self, data_dir: Path, host: str, port: int, node_id: int = 0):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        self.node_id = node_id
        self.logs: dict[str, SegmentLog] = {}
        for directory in sorted(self.data_dir.glob("*-0")):
            self.logs[directory.name[:-2]] = SegmentLog.open(directory)

    def create_topic(self, name: str) -> SegmentLog:
        """A topic of one partition: the directory ``<name>-0`` holds its log."""
        if name not in self.logs:
            self.logs[name] = SegmentLog.open(self.data_dir / f"{name}-0")
        return self.logs[name]

    def close(self) -> None:
        for log in self.logs.values():
            log.close()

    # -- exercise 3 --------------------------------------------------------------------

    def api_versions(self, version: int, request: Struct) -> dict:
        """ApiVersions: error_code 0, api_keys (api_key, min_version, max_version) from
        VERSIONS in ascending key order, throttle_time_ms 0."""
        return {
            "error_code": ErrorCode.NONE,
            "api_keys": [{"api_key": int(key), "min_version": low, "max_version": high}
                         for key, (low, high) in sorted(VERSIONS.items())],
            "throttle_time_ms": 0,
        }

    # -- exercise 4 --------------------------------------------------------------------

    def metadata(self, version: int, request: Struct) -> dict:
        """Metadata: this broker, and the topics asked for (all of them when
        ``request.topics`` is None), each with partition 0 led by this node.

        A topic asked for by name that does not exist yet is created
        (``create_topic``): clients produce to new topics that way. Response:
        brokers [{node_id, host, port, rack None}], cluster_id, controller_id
        (this node), topics [{error_code, name, is_internal False, partitions
        [{error_code, partition_index, leader_id, leader_epoch 0,
        replica_nodes, isr_nodes, offline_replicas}]}].
        """
        if request.topics is None:
            names = sorted(self.logs)
        else:
            names = [topic.name for topic in request.topics]
        topics = []
        for name in names:
            self.create_topic(name)
            topics.append({
                "error_code": ErrorCode.NONE, "name": name, "is_internal": False,
                "partitions": [{
                    "error_code": ErrorCode.NONE, "partition_index": 0,
                    "leader_id": self.node_id, "leader_epoch": 0,
                    "replica_nodes": [self.node_id], "isr_nodes": [self.node_id],
                    "offline_replicas": [],
                }],
            })
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": self.node_id, "host": self.host, "port": self.port,
                         "rack": None}],
            "cluster_id": CLUSTER_ID,
            "controller_id": self.node_id,
            "topics": topics,
        }

    # -- exercise 5 --------------------------------------------------------------------

    def produce(self, version: int, request: Struct) -> dict | None:
        """Produce: append each partition's ``records`` (RecordBatch bytes) to its log.

        ``SegmentLog.append(records, leader_epoch=0)`` assigns the offsets and
        returns an AppendInfo with ``base_offset``. Per topic (``name``) and
        partition (``index``) answer {index, error_code, base_offset,
        log_append_time_ms -1, log_start_offset}; a partition other than 0 or an
        unknown topic gets UNKNOWN_TOPIC_OR_PARTITION and base_offset -1.
        With ``request.acks == 0`` the client expects no answer: return None.
        Response: {responses [{name, partition_responses [...]}], throttle_time_ms 0}.
        """
        responses = []
        for topic in request.topic_data:
            answers = []
            for data in topic.partition_data:
                answer = {"index": data.index, "error_code": ErrorCode.NONE, "base_offset": -1,
                          "log_append_time_ms": -1, "log_start_offset": -1}
                log = self.logs.get(topic.name) if data.index == 0 else None
                if log is None:
                    answer["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset
                    answer["log_start_offset"] = log.log_start_offset
                answers.append(answer)
            responses.append({"name": topic.name, "partition_responses": answers})
        if request.acks == 0:
            return None
        return {"responses": responses, "throttle_time_ms": 0}

    # -- exercise 6 --------------------------------------------------------------------

    def fetch(self, version: int, request: Struct) -> dict:
        """Fetch: for each topic (``topic``) and partition (``partition``), the batches
        from ``fetch_offset``: ``SegmentLog.read(fetch_offset, partition_max_bytes)``.

        Per partition answer {partition_index, error_code, high_watermark,
        last_stable_offset, log_start_offset, aborted_transactions [],
        preferred_read_replica -1, records}; alone, this broker's high
        watermark is the log end offset. An offset outside the log
        (OffsetOutOfRangeError) answers OFFSET_OUT_OF_RANGE, an unknown topic
        or partition UNKNOWN_TOPIC_OR_PARTITION, both with records b"".
        Response: {throttle_time_ms 0, error_code 0, session_id 0, responses
        [{topic, partitions [...]}]}.
        """
        responses = []
        for topic in request.topics:
            answers = []
            for wanted in topic.partitions:
                answer = {"partition_index": wanted.partition, "error_code": ErrorCode.NONE,
                          "high_watermark": -1, "last_stable_offset": -1,
                          "log_start_offset": -1, "aborted_transactions": [],
                          "preferred_read_replica": -1, "records": b""}
                log = self.logs.get(topic.topic) if wanted.partition == 0 else None
                if log is None:
                    answer["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    try:
                        answer["records"] = log.read(wanted.fetch_offset,
                                                     max(wanted.partition_max_bytes, 1))
                    except OffsetOutOfRangeError:
                        answer["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                    answer["high_watermark"] = log.log_end_offset
                    answer["last_stable_offset"] = log.log_end_offset
                    answer["log_start_offset"] = log.log_start_offset
                answers.append(answer)
            responses.append({"topic": topic.topic, "partitions": answers})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
                "responses": responses}
