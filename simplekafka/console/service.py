"""What the REST API does, as plain blocking calls that return JSON-ready values.

Everything goes through the Kafka protocol (our ``Admin``, ``Producer`` and
``Consumer`` on one shared ``KafkaClient``), never through ZooKeeper or a
broker's files, so the console works against any Kafka-compatible cluster.
Failures leave as ``ApiError`` with the HTTP status the API promises; the HTTP
layer (``simplekafka.console.server``) only turns them into answers.
"""

from __future__ import annotations

import base64
import heapq
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from functools import partial
from typing import TypedDict, TypeVar

from simplekafka.admin import Admin
from simplekafka.admin import configs as admin_configs
from simplekafka.admin import groups as admin_groups
from simplekafka.client import KafkaClient
from simplekafka.client.errors import (
    DuplicateResourceError,
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
    ResourceNotFoundError,
    SecurityDisabledError,
    TopicAlreadyExistsError,
    UnacceptableCredentialError,
    UnknownTopicOrPartitionError,
    UnsupportedSaslMechanismError,
)
from simplekafka.client.metadata import ClusterSnapshot
from simplekafka.client.offsets import list_offsets
from simplekafka.console.brokers import (
    BrokerMetrics,
    BrokerWatch,
    ThroughputSampler,
    ThroughputSeries,
)
from simplekafka.consumer import Consumer, ConsumerRecord
from simplekafka.json_values import JsonArray, JsonObject, JsonValue
from simplekafka.producer import Producer
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from simplekafka.protocol.structs import PartitionMetadata, TopicPartition

T = TypeVar("T")
E = TypeVar("E", bound=Enum)


# How long a config change's answer waits for the broker to describe it.
CHANGE_SHOWN_WITHIN_SECONDS = 10.0


def shows_change(entries: Mapping[str, admin_configs.ConfigEntry], set_configs: Mapping[str, str],
                 delete: Iterable[str], source: str) -> bool:
    """Whether described ``entries`` show each set key's value (a sensitive one: set at
    ``source``) and no deleted key still set at ``source``."""
    for key, value in set_configs.items():
        entry = entries.get(key)
        if entry is None or entry.source != source or \
                (entry.value != value and not entry.is_sensitive):
            return False
    return all(key not in entries or entries[key].source != source for key in delete)


class HeaderJson(TypedDict):
    key: str
    value: str | None
    encoding: str | None


class RecordJson(TypedDict):
    """One record in ``GET /api/topics/{name}/records`` (the OpenAPI ``Record``)."""

    partition: int
    offset: int
    timestamp: int
    key: str | None
    value: str | None
    headers: list[HeaderJson]
    encoding: str | None
    value_json: JsonValue


class PartitionPosition(TypedDict):
    partition: int
    earliest_offset: int
    latest_offset: int
    next_offset: int


class RecordsPage(TypedDict):
    """``GET /api/topics/{name}/records``: the records and where each partition stands."""

    topic: str
    partition: int | None
    earliest_offset: int | None
    latest_offset: int | None
    next_offset: int | None
    records: list[RecordJson]
    partitions: list[PartitionPosition]
    complete: bool

#: Kafka's rule for topic names (``org.apache.kafka.common.internals.Topic``).
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
MAX_RECORDS_LIMIT = 1000
DEFAULT_RECORDS_LIMIT = 20
MAX_RECORDS_PER_POST = 1000
MAX_PARTITIONS = 10_000
#: How long one answer may wait for the cluster before it becomes a 503.
REQUEST_TIMEOUT_MS = 10_000
#: How often the console scrapes the brokers' metrics for the throughput charts.
THROUGHPUT_INTERVAL_S = 2.0
#: The most records one all-partitions read looks at in each partition (filters scan).
MAX_SCAN_PER_PARTITION = 10_000


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
    (SecurityDisabledError, 400),
    (UnacceptableCredentialError, 400),
    (UnsupportedSaslMechanismError, 400),
    (DuplicateResourceError, 400),
    (ResourceNotFoundError, 404),
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


def _field(record: Mapping[str, JsonValue], name: str, index: int) -> bytes | None:
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


def _headers(record: Mapping[str, JsonValue], index: int) -> list[tuple[str, bytes | None]]:
    """A new record's headers: ``[{"key", "value"}]``, values as the record's encoding."""
    headers = record.get("headers")
    if headers is None:
        return []
    if not isinstance(headers, list):
        raise bad_request(f"records[{index}].headers must be a list of {{key, value}}")
    found = []
    for number, header in enumerate(headers):
        where = f"records[{index}].headers[{number}]"
        key = header.get("key") if isinstance(header, dict) else None
        if not isinstance(header, dict) or set(header) - {"key", "value"} \
                or not isinstance(key, str):
            raise bad_request(f"{where} must be {{\"key\": string, \"value\": string or null}}")
        value = _field({**header, "encoding": record.get("encoding")}, "value", index)
        found.append((key, value))
    return found


def check_topic_name(name: object) -> str:
    if not isinstance(name, str) or not TOPIC_NAME.match(name) or name in (".", ".."):
        raise bad_request("a topic name is 1 to 249 of the characters a-z A-Z 0-9 . _ -")
    return name


def check_int(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"{what} must be an integer")
    if not low <= value <= high:
        raise bad_request(f"{what} must be between {low} and {high}, not {value}")
    return value


def _reset_target(to: JsonValue) -> admin_groups.ResetTarget:
    """"earliest", "latest", "current", an offset, {"datetime": ISO 8601},
    {"shift_by": N} or {"duration": ISO 8601 duration back from now}."""
    if isinstance(to, str) and to in ("earliest", "latest", "current"):
        return admin_groups.ResetTarget(to)
    if isinstance(to, int) and not isinstance(to, bool) and to >= 0:
        return admin_groups.ResetTarget("offset", to)
    if isinstance(to, dict) and len(to) == 1:
        [(kind, value)] = to.items()
        if kind == "datetime" and isinstance(value, str):
            try:
                return admin_groups.ResetTarget("timestamp", admin_groups.parse_datetime(value))
            except ValueError as exc:
                raise bad_request(f"to.datetime: {exc}") from None
        if kind == "duration" and isinstance(value, str):
            try:
                ago = admin_groups.parse_duration(value)
            except ValueError as exc:
                raise bad_request(f"to.duration: {exc}") from None
            return admin_groups.ResetTarget("timestamp", int(time.time() * 1000) - ago)
        if kind == "shift_by" and isinstance(value, int) and not isinstance(value, bool) \
                and abs(value) <= 2**62:
            return admin_groups.ResetTarget("shift", value)
    raise bad_request('to must be "earliest", "latest", "current", an offset (0 or more), '
                      '{"datetime": "2024-05-01T12:00:00Z"}, {"shift_by": N} or '
                      '{"duration": "PT1H"}')


ACL_FIELDS = {"principal", "host", "operation", "permission_type", "resource_type",
              "resource_name", "pattern_type"}
SCRAM_MECHANISM_NAMES = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _enum(enum_type: type[E], value: JsonValue, what: str, allowed: Iterable[E]) -> E:
    """A Kafka enum from its exact upper-case name (READ, TOPIC, ALLOW, LITERAL)."""
    names = [m.name for m in allowed]
    if not isinstance(value, str) or value not in names:
        raise bad_request(f"{what} must be one of {', '.join(names)}, not {value!r}")
    return enum_type[value]


def _acl_filter(fields: Mapping[str, JsonValue], what: str) -> AclBindingFilter:
    unknown = set(fields) - ACL_FIELDS
    if unknown:
        raise bad_request(f"unknown {what}s: {', '.join(sorted(unknown))}")
    values = dict(fields)
    texts: dict[str, str | None] = {}
    for key in ("principal", "host", "resource_name"):
        text = values.get(key)
        if key in values and not isinstance(text, str):
            raise bad_request(f"{key} must be a string")
        texts[key] = text if isinstance(text, str) else None
    return AclBindingFilter(
        resource_type=_enum(ResourceType, values.get("resource_type", "ANY"), "resource_type",
                            [m for m in ResourceType if m.value >= 1]),
        name=texts["resource_name"],
        pattern_type=_enum(PatternType, values.get("pattern_type", "ANY"), "pattern_type",
                           [m for m in PatternType if m.value >= 1]),
        principal=texts["principal"], host=texts["host"],
        operation=_enum(AclOperation, values.get("operation", "ANY"), "operation",
                        [m for m in AclOperation if m.value >= 1]),
        permission=_enum(AclPermissionType, values.get("permission_type", "ANY"),
                         "permission_type", [m for m in AclPermissionType if m.value >= 1]))


def _acl_binding(body: JsonValue) -> AclBinding:
    if not isinstance(body, dict):
        raise bad_request("the body must be one ACL binding (a JSON object)")
    unknown = set(body) - ACL_FIELDS
    if unknown:
        raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
    texts: dict[str, str] = {}
    for key in ("principal", "resource_name"):
        text = body.get(key)
        if not isinstance(text, str) or not text or _has_control(text):
            raise bad_request(f"{key} must be a non-empty string without characters "
                              "ZooKeeper refuses (controls, non-BMP)")
        texts[key] = text
    principal, resource_name = texts["principal"], texts["resource_name"]
    if ":" not in principal:
        raise bad_request("principal is TYPE:NAME, e.g. User:alice")
    host = body.get("host", "*")
    if not isinstance(host, str) or not host or _has_control(host):
        raise bad_request("host must be a non-empty string (* for any host)")
    return AclBinding(
        ResourcePattern(
            _enum(ResourceType, body.get("resource_type"), "resource_type",
                  [ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                   ResourceType.TRANSACTIONAL_ID]),
            resource_name,
            _enum(PatternType, body.get("pattern_type", "LITERAL"), "pattern_type",
                  [PatternType.LITERAL, PatternType.PREFIXED])),
        AccessControlEntry(
            principal, host,
            _enum(AclOperation, body.get("operation"), "operation",
                  [m for m in AclOperation if m.value >= 2]),
            _enum(AclPermissionType, body.get("permission_type", "ALLOW"), "permission_type",
                  [AclPermissionType.ALLOW, AclPermissionType.DENY])))


def _acl_json(binding: AclBinding) -> JsonObject:
    return {"principal": binding.entry.principal, "host": binding.entry.host,
            "operation": binding.entry.operation.name,
            "permission_type": binding.entry.permission.name,
            "resource_type": binding.pattern.resource_type.name,
            "resource_name": binding.pattern.name,
            "pattern_type": binding.pattern.pattern_type.name}


def _partition_numbers(body: Mapping[str, JsonValue], has_topic: bool) -> list[int] | None:
    """The body's "partitions": absent, every partition (None); present, a non-empty list
    of partition numbers (never null), which needs a topic."""
    if "partitions" not in body:
        return None
    partitions = body["partitions"]
    if not has_topic:
        raise bad_request("partitions needs topic")
    if not isinstance(partitions, list) or not partitions:
        raise bad_request("partitions must be a non-empty list of partition numbers")
    return [check_int(p, "a partition", 0, MAX_PARTITIONS) for p in partitions]


def _under_replicated(p: PartitionMetadata) -> bool:
    return len(p.isr) < len(p.replicas) or p.leader < 0


def _has_control(text: str) -> bool:
    """Characters ZooKeeper refuses in a znode path (controls, surrogates and what Java
    writes as surrogate pairs, private use, U+FFF0..): brokers store these names there."""
    return any(o < 0x20 or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xF8FF or o >= 0xFFF0
               for o in map(ord, text))


def _check_user_name(name: str) -> None:
    # Brokers keep any name (URL-encoded in its znode, as Kafka does) but . and ..
    if not name or name in (".", ".."):
        raise bad_request("a user name is not empty, . or ..")


def _check_mechanism(mechanism: JsonValue) -> str:
    if not isinstance(mechanism, str) or mechanism not in SCRAM_MECHANISM_NAMES:
        raise bad_request(f"mechanism must be {' or '.join(SCRAM_MECHANISM_NAMES)}, "
                          f"not {mechanism!r}")
    return mechanism


def _record_order(record: RecordJson) -> tuple[int, int, int]:
    return record["timestamp"], record["partition"], record["offset"]


def _json_value(data: bytes | None) -> JsonValue:
    """The parsed value if it is a JSON object or array (what is worth pretty-printing),
    else None."""
    if not data or data.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


class ConsoleService:
    """The cluster as the REST API sees it, on one ``KafkaClient``."""

    def __init__(self, bootstrap_servers: str, client_id: str = "simplekafka-console") -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client = KafkaClient(bootstrap_servers, client_id=client_id,
                                  request_timeout_ms=REQUEST_TIMEOUT_MS)
        self.admin = Admin(client=self.client, request_timeout_ms=REQUEST_TIMEOUT_MS)
        self._producer: Producer | None = None
        self._producer_lock = threading.Lock()
        self.watch = BrokerWatch()
        self.broker_metrics = BrokerMetrics(self.watch, self._metrics_listener)
        self.throughput_sampler = ThroughputSampler(
            self.broker_metrics, interval=THROUGHPUT_INTERVAL_S, refresh=self._refresh_brokers)

    def start_background(self) -> None:
        """Start sampling the brokers' metrics (the throughput charts)."""
        self.throughput_sampler.start()

    def close(self) -> None:
        self.throughput_sampler.stop()
        self.watch.close()
        if self._producer is not None:
            self._producer.close(timeout=5)
        self.client.close()

    def _metrics_listener(self, broker_id: int) -> str | None:
        entries = admin_configs.describe_configs(self.client, "broker", str(broker_id), 3_000)
        entry = entries.get("metrics.listener")
        return None if entry is None else entry.value

    def _refresh_brokers(self) -> None:
        snapshot = self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS)
        self.watch.saw(snapshot.brokers.values())

    def call(self, operation: Callable[[], T]) -> T:
        """Run ``operation``, turning Kafka errors into ``ApiError`` with their status."""
        try:
            return operation()
        except ApiError:
            raise
        except KafkaError as exc:
            raise ApiError(status_for(exc), str(exc) or type(exc).__name__) from None

    # ----- cluster ------------------------------------------------------------------

    def cluster(self) -> JsonObject:
        described = self.call(self.admin.describe_cluster)
        return {
            "cluster_id": described.cluster_id,
            "controller_id": described.controller_id,
            "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in described.brokers],
        }

    def overview(self) -> JsonObject:
        """Brokers (with reachability), controller and every topic's partitions."""
        snapshot = self.call(lambda: self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS))
        topics: JsonArray = []
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
            "brokers": self._brokers_json(snapshot),
            "topics": topics,
        }

    def _brokers_json(self, snapshot: ClusterSnapshot) -> JsonArray:
        """Every broker ever seen: in Metadata now (``registered``) and answering now.

        A stopped broker stays in Metadata until its ZooKeeper session expires; the
        probe (ApiVersions, under a second) says it is down at once.
        """
        self.watch.saw(snapshot.brokers.values())
        answering = self.watch.reachable()
        return [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack,
                 "controller": b.node_id == snapshot.controller_id,
                 "registered": b.node_id in snapshot.brokers,
                 "reachable": b.node_id in snapshot.brokers and answering.get(b.node_id, False)}
                for b in self.watch.seen()]

    def brokers(self) -> JsonArray:
        snapshot = self.call(lambda: self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS))
        return self._brokers_json(snapshot)

    # ----- configs ------------------------------------------------------------------

    @staticmethod
    def _configs_json(entries: Mapping[str, admin_configs.ConfigEntry]) -> JsonObject:
        return {"configs": [{"name": e.name, "value": e.value, "source": e.source,
                             "read_only": e.read_only, "sensitive": e.is_sensitive,
                             "is_default": e.is_default}
                            for e in sorted(entries.values(), key=lambda e: e.name)]}

    def _broker_resource(self, broker: str) -> str:
        """"default" (the cluster-wide dynamic default: resource name "") or a known id."""
        if broker == "default":
            return ""
        if not broker.isdigit() or len(broker) > 9:
            raise ApiError(404, f"unknown broker {broker!r} (an id, or \"default\")")
        snapshot = self.call(lambda: self.client.refresh_metadata(None, REQUEST_TIMEOUT_MS))
        if int(broker) not in snapshot.brokers:
            raise ApiError(404, f"unknown broker {broker!r} (or it is down)")
        return str(int(broker))

    def topic_configs(self, name: str) -> JsonObject:
        self._partitions_of(name)  # 404 for an unknown topic
        return self._configs_json(self.call(lambda: self.admin.describe_configs("topic", name)))

    def alter_topic_configs(self, name: str, body: JsonValue) -> JsonObject:
        changes = self._config_changes(body)
        self._partitions_of(name)
        self.call(lambda: self.admin.alter_configs("topic", name, *changes))
        return self.topic_configs(name)

    def broker_configs(self, broker: str) -> JsonObject:
        resource = self._broker_resource(broker)
        return self._configs_json(
            self.call(lambda: self.admin.describe_configs("broker", resource)))

    def alter_broker_configs(self, broker: str, body: JsonValue) -> JsonObject:
        set_configs, delete = changes = self._config_changes(body)
        resource = self._broker_resource(broker)
        self.call(lambda: self.admin.alter_configs("broker", resource, *changes))
        # The broker that answers (the controller for the default, else the broker itself)
        # takes the change from ZooKeeper's notification, as Kafka's brokers do, a moment
        # after the write: answer with its configs once they show it, so the caller reads
        # its own write (bounded: past it, what the broker describes then).
        source = "DYNAMIC_DEFAULT_BROKER_CONFIG" if resource == "" else "DYNAMIC_BROKER_CONFIG"
        deadline = time.monotonic() + CHANGE_SHOWN_WITHIN_SECONDS
        while True:
            entries = self.call(lambda: self.admin.describe_configs("broker", resource))
            if shows_change(entries, set_configs, delete, source) \
                    or time.monotonic() > deadline:
                return self._configs_json(entries)
            time.sleep(0.05)

    @staticmethod
    def _config_changes(body: JsonValue) -> tuple[dict[str, str], list[str]]:
        """{"set": {k: v}, "delete": [k]} -> (set, delete), checked before anything is sent."""
        if not isinstance(body, dict):
            raise bad_request('the body must be {"set": {name: value}, "delete": [name]}')
        unknown = set(body) - {"set", "delete"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        set_configs = body.get("set", {})
        delete = body.get("delete", [])
        if not isinstance(set_configs, dict) or not all(
                isinstance(v, str | int | float | bool) for v in set_configs.values()):
            raise bad_request("set must be an object of name: value (strings or numbers)")
        if not isinstance(delete, list) or not all(isinstance(k, str) for k in delete):
            raise bad_request("delete must be a list of config names")
        names = [*set_configs, *delete]
        if any(not k for k in names):
            raise bad_request("a config name is not empty")
        if len(set(names)) != len(names):
            raise bad_request("each config name once: in set or in delete")
        return ({k: (str(v).lower() if isinstance(v, bool) else str(v))
                 for k, v in set_configs.items()}, [k for k in delete if isinstance(k, str)])

    # ----- topics -------------------------------------------------------------------

    @staticmethod
    def _partition_json(p: PartitionMetadata) -> JsonObject:
        return {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                "isr": list(p.isr), "under_replicated": _under_replicated(p)}

    def list_topics(self) -> JsonArray:
        described = self.call(lambda: self.admin.describe_topics(None))
        return [{
            "name": d.name,
            "internal": d.is_internal,
            "partitions": len(d.partitions),
            "replication_factor": max((len(p.replicas) for p in d.partitions), default=0),
            "under_replicated_partitions": sum(
                1 for p in d.partitions if _under_replicated(p)),
        } for d in sorted(described.values(), key=lambda d: d.name)]

    def create_topic(self, body: JsonValue) -> JsonObject:
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

    def topic(self, name: str) -> JsonObject:
        """Partitions with leader, replicas, ISR, log start and end offsets and size.

        The size is the leader replica's log in bytes, from DescribeLogDirs asked of
        the leaders (as Kafka's tools ask); None where the leader did not answer.
        """
        if not TOPIC_NAME.match(name):
            self._unknown_topic(name)
        described = self.call(lambda: self.admin.describe_topics([name]))[name]
        earliest, latest = self._offsets(name, described.partitions)
        sizes = self._log_sizes(name, described.partitions)
        partitions: JsonArray = []
        for p in described.partitions:
            partition = self._partition_json(p)
            partition["earliest_offset"] = partition["log_start_offset"] = earliest.get(p.partition)
            partition["latest_offset"] = partition["log_end_offset"] = latest.get(p.partition)
            partition["size_bytes"] = sizes.get((p.leader, name, p.partition))
            partitions.append(partition)
        return {"name": name, "internal": described.is_internal, "partitions": partitions}

    def _log_sizes(self, name: str, partitions: list[PartitionMetadata]
                   ) -> dict[tuple[int, str, int], int]:
        """``(leader, topic, partition): bytes`` from each leader's DescribeLogDirs."""
        leaders = sorted({p.leader for p in partitions if p.leader >= 0})
        if not leaders:
            return {}
        try:
            described = self.call(lambda: self.admin.describe_log_dirs({name: [
                p.partition for p in partitions]}, brokers=leaders))
        except ApiError:
            return {}
        return {(broker, topic, partition): size
                for broker, dirs in described.items() for d in dirs
                for (topic, partition), (size, _lag) in d.partitions.items()}

    @staticmethod
    def _unknown_topic(name: str) -> None:
        raise ApiError(404, f"unknown topic {name!r}")

    def _offsets(self, topic: str, partitions: list[PartitionMetadata]
                 ) -> tuple[dict[int, int], dict[int, int]]:
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

    def _partitions_of(self, name: str) -> list[PartitionMetadata]:
        if not TOPIC_NAME.match(name):
            self._unknown_topic(name)
        return self.call(lambda: self.admin.describe_topics([name]))[name].partitions

    # ----- records ------------------------------------------------------------------

    def records(self, name: str, partition: int | None, offset: int | None, limit: int,
                since_ms: int | None = None, until_ms: int | None = None,
                contains: str | None = None) -> RecordsPage:
        """One partition's records from ``offset`` (``partition`` given, no filters), or
        every partition's, merged by timestamp and filtered."""
        filtered = since_ms is not None or until_ms is not None or contains is not None
        if partition is not None and not filtered:
            return self._partition_records(name, partition, offset, limit)
        if offset is not None:
            raise bad_request("offset goes with one partition and no time or text filter")
        return self._filtered_records(name, partition, limit, since_ms, until_ms, contains)

    def _partition_records(self, name: str, partition: int, offset: int | None,
                           limit: int) -> RecordsPage:
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
        out: list[RecordJson] = []
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
                            out.append(self._record_json(record, partition))
                    if out and out[-1]["offset"] >= end - 1:
                        break
            finally:
                consumer.close(autocommit=False)
        next_offset = out[-1]["offset"] + 1 if out else start
        return {"topic": name, "partition": partition, "earliest_offset": earliest[partition],
                "latest_offset": latest[partition], "next_offset": next_offset, "records": out,
                "partitions": [{"partition": partition, "earliest_offset": earliest[partition],
                                "latest_offset": latest[partition],
                                "next_offset": next_offset}],
                "complete": next_offset >= latest[partition] or len(out) == limit}

    def _filtered_records(self, name: str, partition: int | None, limit: int,
                          since_ms: int | None, until_ms: int | None,
                          contains: str | None) -> RecordsPage:
        """The first ``limit`` records by timestamp at or after ``since_ms`` (ListOffsets by
        time finds where to start in each partition), before ``until_ms``, whose key or
        value contains ``contains``; each partition is read to its end as it was when
        asked, at most MAX_SCAN_PER_PARTITION records of it."""
        known = self._partitions_of(name)
        if partition is not None and partition not in {p.partition for p in known}:
            raise ApiError(404, f"topic {name!r} has no partition {partition}")
        chosen = [p for p in known if partition is None or p.partition == partition]
        earliest, latest = self._offsets(name, chosen)
        tps = [TopicPartition(name, p) for p in sorted(latest)]
        starts = dict(earliest)
        if since_ms is not None and tps:
            found = self.call(lambda: list_offsets(
                self.client, dict.fromkeys(tps, since_ms), REQUEST_TIMEOUT_MS))
            starts = {tp.partition: latest[tp.partition] if found.get(tp, -1) < 0
                      else max(found[tp], earliest[tp.partition]) for tp in tps}
        positions = dict(starts)
        matches: dict[int, list[RecordJson]] = {p: [] for p in latest}
        scanned = dict.fromkeys(latest, 0)

        def done(p: int) -> bool:
            return (positions[p] >= latest[p] or len(matches[p]) >= limit
                    or scanned[p] >= MAX_SCAN_PER_PARTITION)

        reading = [tp for tp in tps if not done(tp.partition)]
        if reading:
            consumer = Consumer(client=self.client, enable_auto_commit=False,
                                max_poll_records=500, request_timeout_ms=REQUEST_TIMEOUT_MS)
            try:
                consumer.assign(reading)
                for tp in reading:
                    consumer.seek(tp, positions[tp.partition])
                deadline = time.monotonic() + 8
                while reading and time.monotonic() < deadline:
                    for record in self.call(lambda: consumer.poll(200, 500)):
                        p = record.partition
                        if done(p) or record.offset < positions[p]:
                            continue
                        positions[p] = record.offset + 1
                        scanned[p] += 1
                        if record.offset >= latest[p]:
                            continue
                        if self._wanted(record, since_ms, until_ms, contains):
                            matches[p].append(self._record_json(record, p))
                    still = [tp for tp in reading if not done(tp.partition)]
                    if len(still) != len(reading) and still:
                        consumer.assign(still)  # stop fetching the partitions that are done
                        for tp in still:
                            consumer.seek(tp, positions[tp.partition])
                    reading = still
            finally:
                consumer.close(autocommit=False)
        merged = list(heapq.merge(*(sorted(m, key=_record_order) for m in matches.values()),
                                  key=_record_order))[:limit]
        return {"topic": name, "partition": partition, "earliest_offset": None,
                "latest_offset": None, "next_offset": None, "records": merged,
                "partitions": [{"partition": p, "earliest_offset": earliest[p],
                                "latest_offset": latest[p], "next_offset": positions[p]}
                               for p in sorted(latest)],
                "complete": not reading and all(
                    positions[p] >= latest[p] or len(matches[p]) >= limit for p in latest)}

    @staticmethod
    def _wanted(record: ConsumerRecord, since_ms: int | None, until_ms: int | None,
                contains: str | None) -> bool:
        if since_ms is not None and record.timestamp < since_ms:
            return False
        if until_ms is not None and record.timestamp >= until_ms:
            return False
        if contains is None:
            return True
        needle = contains.encode("utf-8")
        return any(needle in part for part in (record.key or b"", record.value or b""))

    @staticmethod
    def _record_json(record: ConsumerRecord, partition: int) -> RecordJson:
        key, key_encoding = text_or_base64(record.key)
        value, value_encoding = text_or_base64(record.value)
        headers: list[HeaderJson] = []
        for header_key, header_value in record.headers or []:
            text, encoding = text_or_base64(header_value)
            headers.append({"key": header_key, "value": text, "encoding": encoding})
        encoding = "base64" if "base64" in (key_encoding, value_encoding) else None
        if encoding:  # one encoding for key and value, so a reader decodes both alike
            key = None if record.key is None else base64.b64encode(record.key).decode("ascii")
            value = (None if record.value is None
                     else base64.b64encode(record.value).decode("ascii"))
        return {"partition": partition, "offset": record.offset, "timestamp": record.timestamp,
                "key": key, "value": value, "headers": headers, "encoding": encoding,
                "value_json": _json_value(record.value)}

    def produce(self, name: str, body: JsonValue) -> JsonObject:
        records = body.get("records") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(records, list):
            raise bad_request('the body must be {"records": [{"key", "value", "headers", '
                              '"partition"}]}')
        if set(body) != {"records"}:
            raise bad_request(f"unknown fields: {', '.join(sorted(set(body) - {'records'}))}")
        if not 1 <= len(records) <= MAX_RECORDS_PER_POST:
            raise bad_request(f"send 1 to {MAX_RECORDS_PER_POST} records")
        known = {p.partition for p in self._partitions_of(name)}
        prepared = []
        for index, record in enumerate(records):
            if not isinstance(record, dict):
                raise bad_request(f"records[{index}] must be an object")
            unknown = set(record) - {"key", "value", "headers", "partition", "encoding"}
            if unknown:
                raise bad_request(f"records[{index}] has unknown fields: "
                                  f"{', '.join(sorted(unknown))}")
            if record.get("encoding") not in (None, "base64"):
                raise bad_request(f"records[{index}].encoding must be 'base64' or absent")
            wanted = record.get("partition")
            partition = None if wanted is None else check_int(
                wanted, f"records[{index}].partition", 0, MAX_PARTITIONS)
            if partition is not None:
                if partition not in known:
                    raise ApiError(404, f"topic {name!r} has no partition {partition}")
            prepared.append((_field(record, "key", index), _field(record, "value", index),
                             _headers(record, index), partition))
        producer = self._get_producer()
        futures = [producer.send(name, value, key=key, headers=headers, partition=partition)
                   for key, value, headers, partition in prepared]
        producer.flush(REQUEST_TIMEOUT_MS / 1000)
        answers = [self.call(partial(f.get, REQUEST_TIMEOUT_MS / 1000)) for f in futures]
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

    def list_groups(self) -> JsonArray:
        found = self.call(self.admin.list_groups)
        return [{"group_id": g, "protocol_type": t} for g, t in found]

    def group(self, group_id: str) -> JsonObject:
        described = self._existing_group(group_id)
        partitions: JsonArray = [
            {"topic": tp.topic, "partition": tp.partition, "committed": o.committed,
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
            "total_lag": sum(o.lag or 0 for o in described.offsets.values()),
        }

    def _existing_group(self, group_id: str) -> admin_groups.GroupDescription:
        if not group_id:
            raise ApiError(404, "unknown group ''")
        described = self.call(lambda: self.admin.describe_group(group_id))
        # DescribeGroups answers "Dead" for a group it does not know, as Kafka does.
        if described.state == "Dead" and not described.offsets:
            raise ApiError(404, f"unknown group {group_id!r}")
        return described

    def reset_offsets(self, group_id: str, body: JsonValue) -> JsonObject:
        """The plan of new offsets (``admin.groups.plan_reset``, the CLI's planner), committed
        only with ``"execute": true``, as kafka-consumer-groups.sh --execute."""
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        unknown = set(body) - {"topic", "to", "partitions", "execute"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        wanted_topic = body.get("topic")
        topic = None if wanted_topic is None else check_topic_name(wanted_topic)
        execute = body.get("execute", False)
        if not isinstance(execute, bool):
            raise bad_request("execute must be true or false")
        target = _reset_target(body.get("to"))
        partitions = _partition_numbers(body, topic is not None)
        group = self._existing_group(group_id)
        if group.members:
            raise ApiError(409, f"group {group_id!r} has {len(group.members)} active members; "
                                "stop them before resetting offsets")
        if topic is None:  # every partition the group has committed offsets for
            scope = sorted(tp for tp, o in group.offsets.items() if o.committed is not None)
        else:
            known = {p.partition for p in self._partitions_of(topic)}
            missing = sorted(set(partitions or ()) - known)
            if missing:
                raise ApiError(404, f"topic {topic!r} has no partition {missing[0]}")
            scope = [TopicPartition(topic, p) for p in sorted(set(partitions or known))]
        try:
            plan = self.call(lambda: admin_groups.plan_reset(self.client, group, scope, target,
                                                             REQUEST_TIMEOUT_MS))
        except admin_groups.ResetPlanError as exc:
            raise bad_request(str(exc)) from None
        if execute:
            self.call(lambda: admin_groups.commit_offsets(self.client, group_id, plan,
                                                          REQUEST_TIMEOUT_MS))
        current = {tp: o.committed for tp, o in group.offsets.items()}
        return {"group_id": group_id, "executed": execute,
                "plan": [{"topic": tp.topic, "partition": tp.partition,
                          "current": current.get(tp), "new": offset}
                         for tp, offset in sorted(plan.items())]}

    def delete_group(self, group_id: str) -> None:
        self._existing_group(group_id)
        self.call(lambda: self.admin.delete_groups([group_id]))

    # ----- leader election ------------------------------------------------------------

    def elect_leaders(self, body: JsonValue) -> JsonObject:
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
        wanted_topic = body.get("topic")
        if "partitions" in body and body["partitions"] is None:
            raise bad_request("partitions must be a non-empty list of partition numbers "
                              "(leave it out for every partition)")
        partitions = _partition_numbers(body, wanted_topic is not None)
        if wanted_topic is not None:
            topic = check_topic_name(wanted_topic)
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
        leaders: dict[tuple[str, int], int] = {}
        preferred: dict[tuple[str, int], int] = {}
        for name, meta in snapshot.topics.items():
            for index, described in meta.partitions.items():
                leaders[(name, index)] = described.leader
                preferred[(name, index)] = described.replicas[0] if described.replicas else -1
        results: JsonArray = []
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

    # ----- ACLs ---------------------------------------------------------------------

    def list_acls(self, query: Mapping[str, str | None]) -> JsonArray:
        """The ACLs a filter of query parameters selects (each optional: any)."""
        wanted = _acl_filter(query, "query parameter")
        return [_acl_json(b) for b in self.call(lambda: self.admin.describe_acls(wanted))]

    def create_acl(self, body: JsonValue) -> JsonObject:
        """Store one binding (CreateAcls); the broker checks it as Kafka does."""
        binding = _acl_binding(body)
        self.call(lambda: self.admin.create_acls([binding]))
        return {"created": [_acl_json(binding)]}

    def delete_acls(self, body: JsonValue) -> JsonObject:
        """Delete every ACL the filter selects (DeleteAcls); answers the deleted ones."""
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object (a filter; {} selects all)")
        if not all(isinstance(v, str) for v in body.values()):
            raise bad_request("each filter field is a string")
        wanted = _acl_filter(body, "field")
        return {"deleted": [_acl_json(b)
                            for b in self.call(lambda: self.admin.delete_acls([wanted]))]}

    # ----- SCRAM users --------------------------------------------------------------

    def list_users(self) -> JsonArray:
        found = self.call(lambda: self.admin.describe_users())
        return [{"name": name, "mechanisms": [{"mechanism": c.mechanism,
                                               "iterations": c.iterations} for c in infos]}
                for name, infos in sorted(found.items())]

    def put_user(self, name: str, body: JsonValue) -> JsonObject:
        """Add or replace one mechanism's credential (AlterUserScramCredentials upsert)."""
        _check_user_name(name)
        if not isinstance(body, dict):
            raise bad_request("the body must be {\"mechanism\", \"password\", \"iterations\"}")
        unknown = set(body) - {"mechanism", "password", "iterations"}
        if unknown:
            raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
        mechanism = _check_mechanism(body.get("mechanism"))
        password = body.get("password")
        if not isinstance(password, str) or not password:
            raise bad_request("password must be a non-empty string")
        iterations = check_int(body.get("iterations", 4096), "iterations", 4096, 16384)
        try:
            self.call(lambda: self.admin.upsert_user(name, password, mechanism, iterations))
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        return {"name": name, "mechanism": mechanism, "iterations": iterations}

    def delete_user(self, name: str, mechanism: str | None) -> None:
        _check_user_name(name)
        checked = _check_mechanism(mechanism)
        self.call(lambda: self.admin.delete_user(name, checked))

    # ----- throughput -------------------------------------------------------------------

    def throughput(self) -> ThroughputSeries:
        return self.throughput_sampler.series()

    # ----- group lag for Prometheus ---------------------------------------------------

    def group_offsets(self) -> list[tuple[str, admin_groups.GroupDescription]]:
        """(group id, description) of every group that answers; for GET /metrics."""
        found = []
        for group_id, _ in self.call(self.admin.list_groups):
            try:
                found.append((group_id, self.admin.describe_group(group_id)))
            except KafkaError:  # deleted or moving meanwhile: left out of this scrape
                continue
        return found
