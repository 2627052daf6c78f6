"""Stage 4 exercises: a broker of your own that kcat and confluent-kafka use.

Read stages/stage4_broker/README.md first. You write the four answers a
single-node broker needs; the rest is given: ``simplekafka learn check 4``
serves your ``Broker`` on 127.0.0.1 (the socket, the framing and the codec of
``simplekafka.protocol`` decode each request into a struct with attribute
access, and encode the dict you return), and the log on disk is stage 3's
``simplekafka.storage.Log``. The check calls your methods directly first, then
runs kcat and confluent-kafka against your broker.

Each method gets the request's API version and the decoded request body, and
returns the response body as a dict. Field names are Kafka's (snake_case);
fields a version does not have are ignored, fields you leave out take their
defaults (0, "", empty list), so one dict serves every version advertised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simplekafka.protocol import ApiKey, ErrorCode
from simplekafka.storage import Log, OffsetOutOfRangeError

# The versions this broker speaks: RecordBatch v2 needs Produce 3+ and Fetch 4+.
VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 8),
    ApiKey.FETCH: (4, 11),
    ApiKey.METADATA: (1, 8),
    ApiKey.API_VERSIONS: (0, 2),
}
CLUSTER_ID = "my-simplekafka"


class Broker:
    """One node, every topic with one partition, led by this node; logs under ``data_dir``."""

    def __init__(self, data_dir: Path, host: str, port: int, node_id: int = 0):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        self.node_id = node_id
        self.logs: dict[str, Log] = {}
        for directory in sorted(self.data_dir.glob("*-0")):
            self.logs[directory.name[:-2]] = Log.open(directory)

    def create_topic(self, name: str) -> Log:
        """A topic of one partition: the directory ``<name>-0`` holds its log."""
        if name not in self.logs:
            self.logs[name] = Log.open(self.data_dir / f"{name}-0")
        return self.logs[name]

    def close(self) -> None:
        for log in self.logs.values():
            log.close()

    # -- exercise 1 --------------------------------------------------------------------

    def api_versions(self, version: int, request: Any) -> dict:
        """ApiVersions: error_code 0, api_keys (api_key, min_version, max_version) from
        VERSIONS in ascending key order, throttle_time_ms 0."""
        return {
            "error_code": ErrorCode.NONE,
            "api_keys": [{"api_key": int(key), "min_version": low, "max_version": high}
                         for key, (low, high) in sorted(VERSIONS.items())],
            "throttle_time_ms": 0,
        }

    # -- exercise 2 --------------------------------------------------------------------

    def metadata(self, version: int, request: Any) -> dict:
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

    # -- exercise 3 --------------------------------------------------------------------

    def produce(self, version: int, request: Any) -> dict | None:
        """Produce: append each partition's ``records`` (RecordBatch bytes) to its log.

        ``Log.append(records, leader_epoch=0)`` assigns the offsets and
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

    # -- exercise 4 --------------------------------------------------------------------

    def fetch(self, version: int, request: Any) -> dict:
        """Fetch: for each topic (``topic``) and partition (``partition``), the batches
        from ``fetch_offset``: ``Log.read(fetch_offset, partition_max_bytes)``.

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
