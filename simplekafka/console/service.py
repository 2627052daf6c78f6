"""What the REST API does, as plain blocking calls that return JSON-ready values.

Everything goes through the Kafka protocol (our ``Admin``, ``Producer`` and
``Consumer`` on one shared ``KafkaClient``), never through ZooKeeper or a
broker's files, so the console works against any Kafka-compatible cluster.
Failures leave as ``ApiError`` with the HTTP status the API promises; the HTTP
layer (``simplekafka.console.server``) only turns them into answers.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from simplekafka.admin import Admin
from simplekafka.admin import groups as admin_groups
from simplekafka.client import KafkaClient
from simplekafka.client.errors import (
    ElectionNotNeededError,
    GroupIdNotFoundError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NonEmptyGroupError,
    PolicyViolationError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer
from simplekafka.protocol.structs import TopicPartition

T = TypeVar("T")

#: Kafka's rule for topic names (``org.apache.kafka.common.internals.Topic``).
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
MAX_RECORDS_LIMIT = 1000
DEFAULT_RECORDS_LIMIT = 20
MAX_RECORDS_PER_POST = 1000
MAX_PARTITIONS = 10_000
#: How long one answer may wait for the cluster before it becomes a 503.
REQUEST_TIMEOUT_MS = 10_000


class ApiError(Exception):
    """An answer other than success: an HTTP status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


_STATUS_OF_ERROR: list[tuple[type[KafkaError], int]] = [
    (UnknownTopicOrPartitionError, 404),
    (GroupIdNotFoundError, 404),
    (TopicAlreadyExistsError, 409),
    (NonEmptyGroupError, 409),
    (InvalidPartitionsError, 400),
    (InvalidReplicationFactorError, 400),
    (InvalidTopicError, 400),
    (InvalidConfigError, 400),
    (InvalidRequestError, 400),
    (PolicyViolationError, 400),
    (KafkaConnectionError, 503),
    (KafkaTimeoutError, 503),
]


def status_for(error: KafkaError) -> int:
    """The HTTP status for a Kafka error: 4xx when the request was wrong, else 503."""
    for cls, status in _STATUS_OF_ERROR:
        if isinstance(error, cls):
            return status
    return 503


def text_or_base64(data: bytes | None) -> tuple[str | None, str | None]:
    """(text, None) for UTF-8 bytes, (base64 text, "base64") otherwise; None stays None."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def _field(record: Mapping[str, Any], name: str, index: int) -> bytes | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request(f"records[{index}].{name} must be a string or null")
    if record.get("encoding") == "base64":
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            raise bad_request(f"records[{index}].{name} is not valid base64") from None
    return value.encode("utf-8")


def check_topic_name(name: Any) -> str:
    if not isinstance(name, str) or not TOPIC_NAME.match(name) or name in (".", ".."):
        raise bad_request("a topic name is 1 to 249 of the characters a-z A-Z 0-9 . _ -")
    return name


def check_int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"{what} must be an integer")
    if not low <= value <= high:
        raise bad_request(f"{what} must be between {low} and {high}, not {value}")
    return value


class ConsoleService:
    """The cluster as the REST API sees it, on one ``KafkaClient``."""

    def __init__(self, bootstrap_servers: str, client_id: str = "simplekafka-console") -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client = KafkaClient(bootstrap_servers, client_id=client_id,
                                  request_timeout_ms=REQUEST_TIMEOUT_MS)
        self.admin = Admin(client=self.client, request_timeout_ms=REQUEST_TIMEOUT_MS)
        self._producer: Producer | None = None
        self._producer_lock = threading.Lock()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(timeout=5)
        self.client.close()

    def call(self, operation: Callable[[], T]) -> T:
        """Run ``operation``, turning Kafka errors into ``ApiError`` with their status."""
        try:
            return operation()
        except ApiError:
            raise
        except KafkaError as exc:
            raise ApiError(status_for(exc), str(exc) or type(exc).__name__) from None

    # ----- cluster ------------------------------------------------------------------

    def cluster(self) -> dict[str, Any]:
        described = self.call(self.admin.describe_cluster)
        return {
            "cluster_id": described.cluster_id,
            "controller_id": described.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in described.brokers],
        }

    def overview(self) -> dict[str, Any]:
        """Brokers, controller and every topic's partitions from one Metadata answer."""
        snapshot = self.call(lambda: self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS))
        topics = []
        for name in sorted(snapshot.topics):
            meta = snapshot.topics[name]
            if meta.error_code:
                continue
            topics.append({
                "name": name,
                "internal": meta.is_internal,
                "partitions": [self._partition_json(meta.partitions[p])
                               for p in sorted(meta.partitions)],
            })
        return {
            "cluster_id": snapshot.cluster_id,
            "controller_id": snapshot.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in (snapshot.brokers[n] for n in sorted(snapshot.brokers))],
            "topics": topics,
        }

    # ----- topics -------------------------------------------------------------------

    @staticmethod
    def _partition_json(p: Any) -> dict[str, Any]:
        return {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                "isr": list(p.isr),
                "under_replicated": len(p.isr) < len(p.replicas) or p.leader < 0}

    def list_topics(self) -> list[dict[str, Any]]:
        described = self.call(lambda: self.admin.describe_topics(None))
        return [{
            "name": d.name,
            "internal": d.is_internal,
            "partitions": len(d.partitions),
            "replication_factor": max((len(p.replicas) for p in d.partitions), default=0),
            "under_replicated_partitions": sum(
                1 for p in d.partitions if self._partition_json(p)["under_replicated"]),
        } for d in sorted(described.values(), key=lambda d: d.name)]

    def create_topic(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        unknown = set(body) - {"name", "partitions", "replication_factor", "configs"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        name = check_topic_name(body.get("name"))
        partitions = check_int(body.get("partitions", 1), "partitions", 1, MAX_PARTITIONS)
        replication = check_int(body.get("replication_factor", 1), "replication_factor", 1, 32)
        configs = body.get("configs", {})
        if not isinstance(configs, dict) or not all(
                isinstance(k, str) and isinstance(v, str | int | float | bool)
                and not isinstance(v, dict) for k, v in configs.items()):
            raise bad_request("configs must be an object of name: value (strings or numbers)")
        self.call(lambda: self.admin.create_topic(
            name, partitions, replication, {k: str(v) for k, v in configs.items()},
            timeout_ms=REQUEST_TIMEOUT_MS))
        return self.topic(name)

    def topic(self, name: str) -> dict[str, Any]:
        if not TOPIC_NAME.match(name):
            self._unknown_topic(name)
        described = self.call(lambda: self.admin.describe_topics([name]))[name]
        partitions = [self._partition_json(p) for p in described.partitions]
        earliest, latest = self._offsets(name, described.partitions)
        for p in partitions:
            p["earliest_offset"] = earliest.get(p["partition"])
            p["latest_offset"] = latest.get(p["partition"])
        return {"name": name, "internal": described.is_internal, "partitions": partitions}

    @staticmethod
    def _unknown_topic(name: str) -> None:
        raise ApiError(404, f"unknown topic {name!r}")

    def _offsets(self, topic: str, partitions: list[Any]) -> tuple[dict[int, int], dict[int, int]]:
        """Earliest and latest offsets of the partitions that have a leader (others: none)."""
        led = [TopicPartition(topic, p.partition) for p in partitions if p.leader >= 0]
        if not led:
            return {}, {}
        try:
            # A short budget, so a leader that just died leaves blanks, not a slow answer.
            starts, ends = admin_groups.list_offset_ranges(self.client, led, 3_000)
        except KafkaError:
            return {}, {}
        return ({tp.partition: o for tp, o in starts.items()},
                {tp.partition: o for tp, o in ends.items()})

    def delete_topic(self, name: str) -> None:
        if not TOPIC_NAME.match(name):
            self._unknown_topic(name)
        self.call(lambda: self.admin.delete_topic(name, timeout_ms=REQUEST_TIMEOUT_MS))

    def _partitions_of(self, name: str) -> list[int]:
        if not TOPIC_NAME.match(name):
            self._unknown_topic(name)
        return self.call(lambda: self.admin.describe_topics([name]))[name].partitions

    # ----- records ------------------------------------------------------------------

    def records(self, name: str, partition: int, offset: int | None,
                limit: int) -> dict[str, Any]:
        """Up to ``limit`` records of one partition from ``offset`` (default: the earliest)."""
        known = self._partitions_of(name)
        if partition not in {p.partition for p in known}:
            raise ApiError(404, f"topic {name!r} has no partition {partition}")
        tp = TopicPartition(name, partition)
        earliest, latest = self._offsets(name, [p for p in known if p.partition == partition])
        if partition not in latest:
            raise ApiError(503, f"{name}-{partition} has no leader now")
        start = earliest[partition] if offset is None else max(offset, earliest[partition])
        end = min(latest[partition], start + limit)
        out: list[dict[str, Any]] = []
        if start < end:
            consumer = Consumer(client=self.client, enable_auto_commit=False,
                                max_poll_records=limit, request_timeout_ms=REQUEST_TIMEOUT_MS)
            try:
                consumer.assign([tp])
                consumer.seek(tp, start)
                deadline = time.monotonic() + 5
                while len(out) < end - start and time.monotonic() < deadline:
                    for record in self.call(lambda: consumer.poll(200, limit - len(out))):
                        if start <= record.offset < end and len(out) < limit:
                            out.append(self._record_json(record))
                    if out and out[-1]["offset"] >= end - 1:
                        break
            finally:
                consumer.close(autocommit=False)
        next_offset = out[-1]["offset"] + 1 if out else start
        return {"topic": name, "partition": partition, "earliest_offset": earliest[partition],
                "latest_offset": latest[partition], "next_offset": next_offset, "records": out}

    @staticmethod
    def _record_json(record: Any) -> dict[str, Any]:
        key, key_encoding = text_or_base64(record.key)
        value, value_encoding = text_or_base64(record.value)
        headers = []
        for header_key, header_value in record.headers or []:
            text, encoding = text_or_base64(header_value)
            headers.append({"key": header_key, "value": text, "encoding": encoding})
        encoding = "base64" if "base64" in (key_encoding, value_encoding) else None
        if encoding:  # one encoding for key and value, so a reader decodes both alike
            key = None if record.key is None else base64.b64encode(record.key).decode("ascii")
            value = (None if record.value is None
                     else base64.b64encode(record.value).decode("ascii"))
        return {"offset": record.offset, "timestamp": record.timestamp, "key": key,
                "value": value, "headers": headers, "encoding": encoding}

    def produce(self, name: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("records"), list):
            raise bad_request('the body must be {"records": [{"key", "value", "partition"}]}')
        if set(body) != {"records"}:
            raise bad_request(f"unknown fields: {', '.join(sorted(set(body) - {'records'}))}")
        records = body["records"]
        if not 1 <= len(records) <= MAX_RECORDS_PER_POST:
            raise bad_request(f"send 1 to {MAX_RECORDS_PER_POST} records")
        known = {p.partition for p in self._partitions_of(name)}
        prepared = []
        for index, record in enumerate(records):
            if not isinstance(record, dict):
                raise bad_request(f"records[{index}] must be an object")
            unknown = set(record) - {"key", "value", "partition", "encoding"}
            if unknown:
                raise bad_request(f"records[{index}] has unknown fields: "
                                  f"{', '.join(sorted(unknown))}")
            if record.get("encoding") not in (None, "base64"):
                raise bad_request(f"records[{index}].encoding must be 'base64' or absent")
            partition = record.get("partition")
            if partition is not None:
                check_int(partition, f"records[{index}].partition", 0, MAX_PARTITIONS)
                if partition not in known:
                    raise ApiError(404, f"topic {name!r} has no partition {partition}")
            prepared.append((_field(record, "key", index), _field(record, "value", index),
                             partition))
        producer = self._get_producer()
        futures = [producer.send(name, value, key=key, partition=partition)
                   for key, value, partition in prepared]
        producer.flush(REQUEST_TIMEOUT_MS / 1000)
        answers = [self.call(lambda f=f: f.get(REQUEST_TIMEOUT_MS / 1000)) for f in futures]
        return {"offsets": [{"partition": a.partition, "offset": a.offset} for a in answers]}

    def _get_producer(self) -> Producer:
        with self._producer_lock:
            if self._producer is None:
                self._producer = Producer(client=self.client, acks="all",
                                          client_id="simplekafka-console",
                                          request_timeout_ms=REQUEST_TIMEOUT_MS,
                                          delivery_timeout_ms=REQUEST_TIMEOUT_MS * 2,
                                          max_block_ms=REQUEST_TIMEOUT_MS)
            return self._producer

    # ----- groups -------------------------------------------------------------------

    def list_groups(self) -> list[dict[str, Any]]:
        found = self.call(self.admin.list_groups)
        return [{"group_id": g, "protocol_type": t} for g, t in found]

    def group(self, group_id: str) -> dict[str, Any]:
        described = self._existing_group(group_id)
        partitions = [{"topic": tp.topic, "partition": tp.partition, "committed": o.committed,
                       "latest": o.end, "lag": o.lag}
                      for tp, o in sorted(described.offsets.items())]
        return {
            "group_id": described.group_id,
            "state": described.state,
            "protocol_type": described.protocol_type,
            "protocol": described.protocol,
            "coordinator": described.coordinator,
            "members": [{"member_id": m.member_id, "client_id": m.client_id,
                         "client_host": m.client_host,
                         "partitions": [{"topic": tp.topic, "partition": tp.partition}
                                        for tp in m.assignment]}
                        for m in described.members],
            "partitions": partitions,
            "total_lag": sum(p["lag"] or 0 for p in partitions),
        }

    def _existing_group(self, group_id: str) -> Any:
        if not group_id:
            raise ApiError(404, "unknown group ''")
        described = self.call(lambda: self.admin.describe_group(group_id))
        # DescribeGroups answers "Dead" for a group it does not know, as Kafka does.
        if described.state == "Dead" and not described.offsets:
            raise ApiError(404, f"unknown group {group_id!r}")
        return described

    def reset_offsets(self, group_id: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        unknown = set(body) - {"topic", "to", "partitions"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        topic = check_topic_name(body.get("topic"))
        to = body.get("to")
        if isinstance(to, bool) or not (to in ("earliest", "latest")
                                        or (isinstance(to, int) and to >= 0)):
            raise bad_request("'to' must be \"earliest\", \"latest\" or an offset (0 or more)")
        partitions = body.get("partitions")
        if partitions is not None:
            if not isinstance(partitions, list) or not partitions:
                raise bad_request("partitions must be a non-empty list of partition numbers")
            for p in partitions:
                check_int(p, "a partition", 0, MAX_PARTITIONS)
        self._existing_group(group_id)
        known = {p.partition for p in self._partitions_of(topic)}
        missing = sorted(set(partitions or ()) - known)
        if missing:
            raise ApiError(404, f"topic {topic!r} has no partition {missing[0]}")
        done = self.call(lambda: self.admin.reset_offsets(group_id, topic, to, partitions))
        return {"group_id": group_id, "topic": topic,
                "offsets": [{"partition": tp.partition, "offset": o}
                            for tp, o in sorted(done.items())]}

    def delete_group(self, group_id: str) -> None:
        self._existing_group(group_id)
        self.call(lambda: self.admin.delete_groups([group_id]))

    # ----- leader election ------------------------------------------------------------

    def elect_leaders(self, body: Any) -> dict[str, Any]:
        """Preferred leader election (ElectLeaders) for a topic's partitions, or all.

        Each partition's result: "elected" (its preferred replica leads now),
        "already_preferred", or "not_possible" (the preferred replica is not
        live or not in sync).
        """
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        unknown = set(body) - {"topic", "partitions"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        topic = body.get("topic")
        partitions = body.get("partitions")
        if partitions is not None:
            if topic is None:
                raise bad_request("partitions needs topic")
            if not isinstance(partitions, list) or not partitions:
                raise bad_request("partitions must be a non-empty list of partition numbers")
            for p in partitions:
                check_int(p, "a partition", 0, MAX_PARTITIONS)
        if topic is not None:
            check_topic_name(topic)
            known = {p.partition for p in self._partitions_of(topic)}
            missing = sorted(set(partitions or ()) - known)
            if missing:
                raise ApiError(404, f"topic {topic!r} has no partition {missing[0]}")
            wanted = {topic: sorted(set(partitions) if partitions else known)}
        else:
            wanted = None  # every partition of every topic
        outcomes = self.call(lambda: self.admin.elect_leaders(wanted,
                                                              timeout_ms=REQUEST_TIMEOUT_MS))
        snapshot = self.call(lambda: self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS))
        leaders, preferred = {}, {}
        for name, meta in snapshot.topics.items():
            for index, p in meta.partitions.items():
                leaders[(name, index)] = p.leader
                preferred[(name, index)] = p.replicas[0] if p.replicas else -1
        results = []
        for (topic, partition), error in sorted(outcomes.items()):
            if isinstance(error, KafkaTimeoutError | RequestTimedOutError):
                raise ApiError(503, str(error))
            result = ("elected" if error is None else
                      "already_preferred" if isinstance(error, ElectionNotNeededError) else
                      "not_possible")
            # Metadata may lag the election by a moment; an elected partition's leader
            # is its preferred replica by definition.
            leader = (preferred if error is None else leaders).get((topic, partition), -1)
            results.append({"topic": topic, "partition": partition, "result": result,
                            "leader": leader})
        return {"partitions": results}

    # ----- group lag for Prometheus ---------------------------------------------------

    def group_offsets(self) -> list[tuple[str, Any]]:
        """(group id, description) of every group that answers; for GET /metrics."""
        found = []
        for group_id, _ in self.call(self.admin.list_groups):
            try:
                found.append((group_id, self.admin.describe_group(group_id)))
            except KafkaError:  # deleted or moving meanwhile: left out of this scrape
                continue
        return found
