"""Znode paths and their JSON payloads, exactly as ZooKeeper-mode Kafka writes them.

A learner who opens ``zkCli`` on a SimpleKafka cluster should see what a Kafka
operator saw: the same paths, the same JSON. Each payload is a small frozen
dataclass with ``to_json() -> bytes`` and ``from_json(bytes)``; decoding
raises :class:`ZnodeFormatError` (a ``ValueError``) with the path's meaning in
the message, never a bare ``KeyError``.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TypeVar

from simplekafka.json_values import JsonMapping, JsonObject
from simplekafka.protocol.topic_ids import topic_id_from_text, topic_id_text

__all__ = [
    "BrokerInfo",
    "ClusterId",
    "ConfigChangeNotification",
    "ControllerInfo",
    "PartitionRef",
    "PartitionRefs",
    "PartitionState",
    "TopicAssignment",
    "TopicConfig",
    "ZkPaths",
    "ZnodeFormatError",
    "decode_controller_epoch",
    "encode_controller_epoch",
]


class ZnodeFormatError(ValueError):
    """A znode's payload is not the JSON Kafka would have written there."""


class ZkPaths:
    """Every path SimpleKafka reads or writes, in one place (Kafka's ``ZkData.scala``)."""

    CLUSTER_ID = "/cluster/id"
    BROKERS = "/brokers"
    BROKER_IDS = "/brokers/ids"
    BROKER_TOPICS = "/brokers/topics"
    BROKER_SEQUENCE_ID = "/brokers/seqid"
    CONTROLLER = "/controller"
    CONTROLLER_EPOCH = "/controller_epoch"
    CONFIG_TOPICS = "/config/topics"
    CONFIG_BROKERS = "/config/brokers"
    CONFIG_CHANGES = "/config/changes"
    CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
    DELETE_TOPICS = "/admin/delete_topics"
    PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
    REASSIGN_PARTITIONS = "/admin/reassign_partitions"
    #: Not a Kafka path: ElectLeaders with election type 1 (unclean), taken by any
    #: broker, reaches the controller here, as preferred elections do above.
    UNCLEAN_LEADER_ELECTION = "/admin/unclean_leader_election"
    ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
    ISR_CHANGE_PREFIX = "/isr_change_notification/isr_change_"
    #: ACLs (coordination.acls): literal ones, prefixed ones, and their change notifications.
    ACLS = "/kafka-acl"
    ACL_CHANGES = "/kafka-acl-changes"
    ACLS_EXTENDED = "/kafka-acl-extended"
    ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
    #: Offsets committed with OffsetCommit v0 (coordination.consumer_offsets), as the old
    #: ZooKeeper consumers kept them and Kafka 3.9 still wrote them.
    CONSUMERS = "/consumers"

    #: Persistent parents created on first contact, as Kafka's brokers do at startup.
    PERSISTENT_PATHS = (
        BROKER_IDS, BROKER_TOPICS, BROKER_SEQUENCE_ID, CONFIG_TOPICS, CONFIG_BROKERS,
        CONFIG_CHANGES, DELETE_TOPICS, ISR_CHANGE_NOTIFICATION,
    )
    # With zookeeper.set.acl the brokers also claim the roots whose content decides
    # who may do what, so that nobody without their login can plant them first.
    SECURED_ROOT_PATHS = (
        "/config/users", "/config/clients", ACLS, ACL_CHANGES, ACLS_EXTENDED,
        ACL_EXTENDED_CHANGES,
    )

    @staticmethod
    def broker(broker_id: int) -> str:
        return f"{ZkPaths.BROKER_IDS}/{broker_id}"

    @staticmethod
    def topic(topic: str) -> str:
        return f"{ZkPaths.BROKER_TOPICS}/{topic}"

    @staticmethod
    def partitions(topic: str) -> str:
        return f"{ZkPaths.BROKER_TOPICS}/{topic}/partitions"

    @staticmethod
    def partition(topic: str, partition: int) -> str:
        return f"{ZkPaths.BROKER_TOPICS}/{topic}/partitions/{partition}"

    @staticmethod
    def partition_state(topic: str, partition: int) -> str:
        return f"{ZkPaths.BROKER_TOPICS}/{topic}/partitions/{partition}/state"

    @staticmethod
    def topic_config(topic: str) -> str:
        return f"{ZkPaths.CONFIG_TOPICS}/{topic}"

    @staticmethod
    def broker_config(broker_id: int | str) -> str:
        return f"{ZkPaths.CONFIG_BROKERS}/{broker_id}"

    @staticmethod
    def delete_topic(topic: str) -> str:
        return f"{ZkPaths.DELETE_TOPICS}/{topic}"

    @staticmethod
    def consumer_offset(group: str, topic: str, partition: int) -> str:
        return f"{ZkPaths.CONSUMERS}/{group}/offsets/{topic}/{partition}"


T = TypeVar("T")


def _loads(data: bytes | None, what: str) -> JsonObject:
    try:
        value = json.loads(data or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ZnodeFormatError(f"{what}: not JSON: {data!r:.80}") from exc
    if not isinstance(value, dict):
        raise ZnodeFormatError(f"{what}: expected a JSON object, got {value!r:.80}")
    return value


def _dumps(value: JsonMapping) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _field(obj: JsonMapping, key: str, kind: type[T], what: str) -> T:
    try:
        value = obj[key]
    except KeyError:
        raise ZnodeFormatError(f"{what}: missing {key!r} in {obj!r:.120}") from None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ZnodeFormatError(f"{what}: {key!r} should be {kind}, got {value!r:.40}")
    return value


def _int_list(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ZnodeFormatError(f"{what}: expected a list of broker ids, got {value!r:.80}")
    return tuple(value)


def _timestamp(obj: JsonMapping) -> int:
    """The "timestamp" (ms, written as a string), or 0 where it is missing or not a number."""
    value = obj.get("timestamp", 0)
    if not isinstance(value, str | int | float):
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ClusterId:
    """``/cluster/id``: written once, by the first broker; note version is a string."""

    id: str

    @staticmethod
    def generate() -> ClusterId:
        """A new id like Kafka's ``Uuid.randomUuid()``: url-safe base64 of 16 bytes."""
        return ClusterId(base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode())

    def to_json(self) -> bytes:
        return _dumps({"version": "1", "id": self.id})

    @staticmethod
    def from_json(data: bytes) -> ClusterId:
        what = ZkPaths.CLUSTER_ID
        return ClusterId(_field(_loads(data, what), "id", str, what))


@dataclass(frozen=True)
class BrokerInfo:
    """``/brokers/ids/<id>`` (ephemeral): where a broker listens, and its rack.

    ``endpoints`` holds every listener as (name, host, port) and
    ``security_protocols`` each listener's security protocol, written as Kafka
    writes them (``endpoints: ["SASL_SSL://h:9094", ...]``,
    ``listener_security_protocol_map: {"SASL_SSL": "SASL_SSL", ...}``);
    ``host``/``port``/``listener`` are the first endpoint. The znode's czxid,
    not anything in the payload, is the broker epoch.
    """

    broker_id: int
    host: str
    port: int
    rack: str | None = None
    timestamp_ms: int = field(default_factory=_now_ms)
    listener: str = "PLAINTEXT"
    endpoints: tuple[tuple[str, str, int], ...] = ()
    security_protocols: tuple[tuple[str, str], ...] = ()

    @property
    def endpoint(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"

    @property
    def all_endpoints(self) -> tuple[tuple[str, str, int], ...]:
        """(listener, host, port) of every listener (just the first when only that is known)."""
        return self.endpoints or ((self.listener, self.host, self.port),)

    def address_of(self, listener: str) -> tuple[str, int] | None:
        """(host, port) of the named listener, or None if this broker has no such listener."""
        for name, host, port in self.all_endpoints:
            if name == listener:
                return host, port
        return None

    def security_protocol_of(self, listener: str) -> str:
        return dict(self.security_protocols).get(listener, listener if listener in
                                                 _SECURITY_PROTOCOLS else "PLAINTEXT")

    def to_json(self) -> bytes:
        endpoints = self.all_endpoints
        # Kafka keeps the legacy host/port for the PLAINTEXT endpoint only (else null/-1).
        plaintext = [(h, p) for name, h, p in endpoints
                     if self.security_protocol_of(name) == "PLAINTEXT"]
        host, port = plaintext[0] if plaintext else (None, -1)
        payload: JsonObject = {
            "listener_security_protocol_map": {name: self.security_protocol_of(name)
                                               for name, _h, _p in endpoints},
            "endpoints": [f"{name}://{h}:{p}" for name, h, p in endpoints],
            "jmx_port": -1,
            "host": host,
            "timestamp": str(self.timestamp_ms),
            "port": port,
            "version": 4,
        }
        if self.rack is not None:  # Kafka leaves the key out when no rack is set
            payload["rack"] = self.rack
        return _dumps(payload)

    @staticmethod
    def from_json(broker_id: int, data: bytes) -> BrokerInfo:
        what = ZkPaths.broker(broker_id)
        obj = _loads(data, what)
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZnodeFormatError(f"{what}: rack should be a string, got {rack!r:.40}")
        endpoints = obj.get("endpoints") or []
        parsed: list[tuple[str, str, int]] = []
        if not isinstance(endpoints, list):
            raise ZnodeFormatError(f"{what}: endpoints should be a list, got {endpoints!r:.60}")
        for text in endpoints:  # the endpoint list is authoritative (host/port: legacy copy)
            if not isinstance(text, str) or "://" not in text or ":" not in text[
                text.index("://") + 3:
            ]:
                raise ZnodeFormatError(f"{what}: bad endpoint {text!r:.60}")
            name, address = text.split("://", 1)
            endpoint_host, _, port_text = address.rpartition(":")
            try:
                parsed.append((name, endpoint_host, int(port_text)))
            except ValueError:
                raise ZnodeFormatError(f"{what}: bad port in endpoint {text!r:.60}") from None
        host: object
        port: object
        if parsed:
            listener, host, port = parsed[0]
        else:
            listener, host, port = "PLAINTEXT", obj.get("host"), obj.get("port")
        if not isinstance(host, str) or not isinstance(port, int):
            raise ZnodeFormatError(f"{what}: no usable endpoint in {obj!r:.120}")
        protocols = obj.get("listener_security_protocol_map") or {}
        if not isinstance(protocols, dict) or all(k == v for k, v in protocols.items()):
            protocols = {}  # the default mapping is not kept (equal to what was written)
        timestamp = _timestamp(obj)
        return BrokerInfo(broker_id, host, port, rack, timestamp, listener,
                          tuple(parsed) if len(parsed) > 1 else (),
                          tuple(sorted((str(k), str(v)) for k, v in protocols.items())))


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ControllerInfo:
    """``/controller`` (ephemeral): which broker is the controller."""

    broker_id: int
    timestamp_ms: int = field(default_factory=_now_ms)

    def to_json(self) -> bytes:
        return _dumps({"version": 1, "brokerid": self.broker_id,
                       "timestamp": str(self.timestamp_ms)})

    @staticmethod
    def from_json(data: bytes) -> ControllerInfo:
        what = ZkPaths.CONTROLLER
        obj = _loads(data, what)
        timestamp = _timestamp(obj)
        return ControllerInfo(_field(obj, "brokerid", int, what), timestamp)


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch`` holds the epoch as decimal text, not JSON."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes | None) -> int:
    try:
        return int((data or b"").decode().strip())
    except (ValueError, UnicodeDecodeError):
        raise ZnodeFormatError(
            f"{ZkPaths.CONTROLLER_EPOCH}: not an integer: {data!r:.40}"
        ) from None


@dataclass(frozen=True)
class TopicAssignment:
    """``/brokers/topics/<t>``: the replica list of every partition (first = preferred leader).

    While partitions move, Kafka (2.4+) writes version 2 with ``adding_replicas`` and
    ``removing_replicas`` per moving partition; so do we. A topic with an ID
    (KIP-516, Kafka 2.8+) is written as version 3: ``"topic_id"`` in Kafka's
    text form, and the two maps always present (empty when nothing moves).
    """

    partitions: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: bytes | None = None  # 16 bytes; None: written before topic IDs (version 1/2)

    @property
    def replication_factor(self) -> int:
        return len(next(iter(self.partitions.values()))) if self.partitions else 0

    def to_json(self) -> bytes:
        document: JsonObject = {
            "version": 1,
            "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())},
        }
        if self.adding or self.removing or self.topic_id is not None:
            document["version"] = 2
            document["adding_replicas"] = {str(p): list(r) for p, r in sorted(self.adding.items())}
            document["removing_replicas"] = {str(p): list(r)
                                             for p, r in sorted(self.removing.items())}
        if self.topic_id is not None:
            document["version"] = 3
            document["topic_id"] = topic_id_text(self.topic_id)
        return _dumps(document)

    @staticmethod
    def from_json(data: bytes, topic: str = "<topic>") -> TopicAssignment:
        what = ZkPaths.topic(topic)
        document = _loads(data, what)
        maps = []
        for name, required in (("partitions", True), ("adding_replicas", False),
                               ("removing_replicas", False)):
            raw = (_field(document, name, dict, what) if required or name in document
                   else {})
            parsed: dict[int, tuple[int, ...]] = {}
            for key, replicas in raw.items():
                try:
                    partition = int(key)
                except ValueError:
                    raise ZnodeFormatError(
                        f"{what}: partition key {key!r} is not a number") from None
                parsed[partition] = _int_list(replicas, what)
            maps.append(dict(sorted(parsed.items())))
        topic_id = None
        if "topic_id" in document:
            try:
                raw_id = document["topic_id"]
                if not isinstance(raw_id, str):
                    raise ValueError(f"not a string: {raw_id!r:.40}")
                topic_id = topic_id_from_text(raw_id)
            except ValueError as exc:
                raise ZnodeFormatError(f"{what}: topic_id: {exc}") from None
        partitions, adding, removing = [*maps, {}, {}][:3]
        return TopicAssignment(partitions, adding, removing, topic_id=topic_id)


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, leader epoch, ISR.

    Written by the controller with a conditional setData on the znode's version
    (the partition epoch). ``leader == -1`` means no leader (partition offline).
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def to_json(self) -> bytes:
        return _dumps({"controller_epoch": self.controller_epoch, "leader": self.leader,
                       "version": 1, "leader_epoch": self.leader_epoch, "isr": list(self.isr)})

    @staticmethod
    def from_json(data: bytes, topic: str = "<topic>", partition: int = -1) -> PartitionState:
        what = ZkPaths.partition_state(topic, partition)
        obj = _loads(data, what)
        return PartitionState(
            leader=_field(obj, "leader", int, what),
            leader_epoch=_field(obj, "leader_epoch", int, what),
            isr=_int_list(_field(obj, "isr", list, what), what),
            controller_epoch=_field(obj, "controller_epoch", int, what),
        )


@dataclass(frozen=True)
class TopicConfig:
    """``/config/topics/<t>``: the topic's overrides of broker defaults (all values strings)."""

    config: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return _dumps({"version": 1, "config": dict(self.config)})

    @staticmethod
    def from_json(data: bytes, topic: str = "<topic>") -> TopicConfig:
        what = ZkPaths.topic_config(topic)
        raw = _field(_loads(data, what), "config", dict, what)
        return TopicConfig({str(k): str(v) for k, v in raw.items()})


@dataclass(frozen=True)
class ConfigChangeNotification:
    """``/config/changes/config_change_<seq>``: "the config of this entity changed"."""

    entity_path: str  # e.g. "topics/orders"

    def to_json(self) -> bytes:
        return _dumps({"version": 2, "entity_path": self.entity_path})

    @staticmethod
    def from_json(data: bytes) -> ConfigChangeNotification:
        what = ZkPaths.CONFIG_CHANGES
        return ConfigChangeNotification(_field(_loads(data, what), "entity_path", str, what))


@dataclass(frozen=True)
class PartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True)
class PartitionRefs:
    """A list of partitions, the payload of ``/admin/preferred_replica_election`` and of
    ``/isr_change_notification/isr_change_<seq>``."""

    partitions: tuple[PartitionRef, ...]

    def to_json(self) -> bytes:
        return _dumps({"version": 1, "partitions": [
            {"topic": p.topic, "partition": p.partition} for p in self.partitions
        ]})

    @staticmethod
    def from_json(data: bytes, what: str = "partition list") -> PartitionRefs:
        raw = _field(_loads(data, what), "partitions", list, what)
        refs = []
        for item in raw:
            if not isinstance(item, dict):
                raise ZnodeFormatError(f"{what}: expected objects, got {item!r:.40}")
            refs.append(PartitionRef(_field(item, "topic", str, what),
                                     _field(item, "partition", int, what)))
        return PartitionRefs(tuple(refs))
