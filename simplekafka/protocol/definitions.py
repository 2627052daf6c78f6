"""Every request and response SimpleKafka speaks, declared the way Kafka declares them.

Each message is one :class:`Message`: an ordered list of fields, each with the
versions it exists in (``"3+"``, ``"0-4"``, ``"7"``), the versions in which it
may be null, and its default. This mirrors Apache Kafka's message JSON files
(``clients/src/main/resources/common/message/*.json``), so a learner can lay
the two side by side; field names are Kafka's, in snake_case. ``Message.schema
(version)`` expands the declaration into one concrete :class:`Schema` per
version, with compact strings, compact arrays and tagged fields in the
flexible versions.

Only the version ranges SimpleKafka needs are declared (``SUPPORTED_VERSIONS``
in :mod:`simplekafka.protocol.api` says what the broker implements); the
inter-broker LeaderAndIsr, StopReplica and UpdateMetadata are included for the
controller.
"""

from __future__ import annotations

from functools import cache
from typing import Final

from simplekafka.protocol.schema import (
    BOOL,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT32,
    UUID,
    Array,
    Bytes,
    Field,
    FieldType,
    Records,
    Schema,
    String,
    StructType,
)

_MISSING: Final = object()  # "no default given" (identity only)


class Versions:
    """A version range as Kafka writes it: ``"0+"``, ``"3-8"``, ``"2"`` or ``"none"``."""

    __slots__ = ("high", "low", "text")

    def __init__(self, text: str):
        self.text = text
        if text == "none":
            self.low, self.high = 1, 0
        elif text.endswith("+"):
            self.low, self.high = int(text[:-1]), 1 << 15
        elif "-" in text:
            low, high = text.split("-")
            self.low, self.high = int(low), int(high)
        else:
            self.low = self.high = int(text)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __iter__(self):
        return iter(range(self.low, self.high + 1))

    def __repr__(self) -> str:
        return self.text


class One:
    """A field that is one nested structure, not an array of them (Kafka's
    ``"type": "LeaderIdAndEpoch"`` beside ``"[]LeaderIdAndEpoch"``)."""

    __slots__ = ("fields",)

    def __init__(self, fields: list[F]):
        self.fields = fields


class F:
    """A field declaration: name, type, the versions it exists in, nullability, default.

    ``type`` is ``"int32"``-style text, ``"[]int32"`` for an array of a
    primitive, a list of ``F`` for an array of structures, or ``One([...])`` for
    a single nested structure.
    """

    __slots__ = ("default", "name", "nullable", "tag", "tagged", "type", "versions")

    def __init__(
        self,
        name: str,
        type: str | list[F] | One,
        versions: str = "0+",
        nullable: str = "none",
        default: object = _MISSING,
        tag: int | None = None,
        tagged: str = "none",
    ):
        self.name = name
        self.type = type
        self.versions = Versions(versions)
        self.nullable = Versions(nullable)
        self.default = default
        # Kafka's "tag" and "taggedVersions": in those versions the field is not in wire
        # order but in the tagged-field block, and only when it is not its default.
        self.tag = tag
        self.tagged = Versions(tagged)


_SCALARS: dict[str, FieldType] = {
    "int8": INT8,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "uint32": UINT32,
    "bool": BOOL,
    "float64": FLOAT64,
    "uuid": UUID,
}


def _scalar(type_name: str, nullable: bool, compact: bool) -> FieldType:
    if type_name in _SCALARS:
        return _SCALARS[type_name]
    if type_name == "string":
        return String(nullable, compact)
    if type_name == "bytes":
        return Bytes(nullable, compact)
    if type_name == "records":
        return Records(nullable, compact)
    raise ValueError(f"unknown field type {type_name!r}")


def _known_names(fields: list[F]) -> set[str]:
    return {f.name for f in fields}


def build_struct(name: str, fields: list[F], version: int, flexible: bool) -> Schema:
    """The concrete schema of a field list at one version."""
    concrete = []
    for f in fields:
        if version not in f.versions:
            continue
        nullable = version in f.nullable
        field_type: FieldType
        if isinstance(f.type, One):
            field_type = StructType(build_struct(f"{name}.{f.name}", f.type.fields, version,
                                                 flexible))
        elif isinstance(f.type, list):
            element = StructType(build_struct(f"{name}.{f.name}", f.type, version, flexible))
            field_type = Array(element, nullable, flexible)
        elif f.type.startswith("[]"):
            field_type = Array(_scalar(f.type[2:], False, flexible), nullable, flexible)
        else:
            field_type = _scalar(f.type, nullable, flexible)
        tag = f.tag if version in f.tagged else None
        if f.default is _MISSING:
            concrete.append(Field(f.name, field_type, tag=tag))
        else:
            concrete.append(Field(f.name, field_type, f.default, tag=tag))
    return Schema(name, concrete, flexible, version, _known_names(fields))


class Message:
    """One request or response type: its name, API key, versions and fields."""

    def __init__(self, name: str, api_key: int, valid: str, flexible: str, fields: list[F]):
        self.name = name
        self.api_key = api_key
        self.valid = Versions(valid)
        self.flexible = Versions(flexible)
        self.fields = fields

    def schema(self, version: int) -> Schema:
        return _build_message_schema(self, version)

    def __repr__(self) -> str:
        return f"<Message {self.name} v{self.valid}>"


@cache
def _build_message_schema(message: Message, version: int) -> Schema:
    if version not in message.valid:
        raise ValueError(f"{message.name} has no version {version} (valid: {message.valid})")
    return build_struct(message.name, message.fields, version, version in message.flexible)


# --- Produce (0) -------------------------------------------------------------------------

PRODUCE_REQUEST = Message("ProduceRequest", 0, "0-11", "9+", [
    F("transactional_id", "string", "3+", nullable="3+", default=None),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    F("topic_data", [
        F("name", "string"),
        F("partition_data", [
            F("index", "int32"),
            F("records", "records", nullable="0+"),
        ]),
    ]),
])

# KIP-951 (v10+): a partition refused with NOT_LEADER_OR_FOLLOWER names the leader it knows,
# and the answer carries that leader's endpoints, so a client need not ask Metadata first.
_LEADER_ID_AND_EPOCH = [
    F("leader_id", "int32", default=-1),
    F("leader_epoch", "int32", default=-1),
]

_NODE_ENDPOINT = [
    F("node_id", "int32"),
    F("host", "string"),
    F("port", "int32"),
    F("rack", "string", nullable="0+", default=None),
]

PRODUCE_RESPONSE = Message("ProduceResponse", 0, "0-11", "9+", [
    F("responses", [
        F("name", "string"),
        F("partition_responses", [
            F("index", "int32"),
            F("error_code", "int16"),
            F("base_offset", "int64"),
            F("log_append_time_ms", "int64", "2+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("record_errors", [
                F("batch_index", "int32", "8+"),
                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
            ], "8+"),
            F("error_message", "string", "8+", nullable="8+", default=None),
            F("current_leader", One(_LEADER_ID_AND_EPOCH), "10+", tag=0, tagged="10+"),
        ]),
    ]),
    F("throttle_time_ms", "int32", "1+"),
    F("node_endpoints", _NODE_ENDPOINT, "10+", tag=0, tagged="10+"),
])

# --- Fetch (1) ---------------------------------------------------------------------------

FETCH_REQUEST = Message("FetchRequest", 1, "0-17", "12+", [
    F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0, tagged="12+"),
    F("replica_id", "int32", "0-14", default=-1),
    # v15+ (KIP-903): a follower says who it is, and its broker epoch, here.
    F("replica_state", One([
        F("replica_id", "int32", default=-1),
        F("replica_epoch", "int64", default=-1),
    ]), "15+", tag=1, tagged="15+"),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "int8", "4+"),
    F("session_id", "int32", "7+"),
    F("session_epoch", "int32", "7+", default=-1),
    F("topics", [
        F("topic", "string", "0-12"),
        F("topic_id", "uuid", "13+"),  # KIP-516: topics by id from v13
        F("partitions", [
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64"),
            F("last_fetched_epoch", "int32", "12+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("partition_max_bytes", "int32"),
            F("replica_directory_id", "uuid", "17+", tag=0, tagged="17+"),
        ]),
    ]),
    F("forgotten_topics_data", [
        F("topic", "string", "7-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", "[]int32", "7+"),
    ], "7+"),
    F("rack_id", "string", "11+"),
])

FETCH_RESPONSE = Message("FetchResponse", 1, "0-17", "12+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+"),
    F("responses", [
        F("topic", "string", "0-12"),
        F("topic_id", "uuid", "13+"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("high_watermark", "int64"),
            F("last_stable_offset", "int64", "4+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            # v12+: where the follower's log left the leader's (its last fetched epoch ends
            # earlier here): it truncates to this before fetching again.
            F("diverging_epoch", One([
                F("epoch", "int32", default=-1),
                F("end_offset", "int64", default=-1),
            ]), "12+", tag=0, tagged="12+"),
            F("current_leader", One(_LEADER_ID_AND_EPOCH), "12+", tag=1, tagged="12+"),
            F("snapshot_id", One([
                F("end_offset", "int64", default=-1),
                F("epoch", "int32", default=-1),
            ]), "12+", tag=2, tagged="12+"),
            F("aborted_transactions", [
                F("producer_id", "int64", "4+"),
                F("first_offset", "int64", "4+"),
            ], "4+", nullable="4+"),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", nullable="0+"),
        ]),
    ]),
    F("node_endpoints", _NODE_ENDPOINT, "16+", tag=0, tagged="16+"),
])

# --- ListOffsets (2) ---------------------------------------------------------------------

LIST_OFFSETS_REQUEST = Message("ListOffsetsRequest", 2, "0-9", "6+", [
    F("replica_id", "int32", default=-1),
    F("isolation_level", "int8", "2+"),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("current_leader_epoch", "int32", "4+", default=-1),
            F("timestamp", "int64"),
            F("max_num_offsets", "int32", "0", default=1),
        ]),
    ]),
])

LIST_OFFSETS_RESPONSE = Message("ListOffsetsResponse", 2, "0-9", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("old_style_offsets", "[]int64", "0"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])

# --- Metadata (3) ------------------------------------------------------------------------

METADATA_REQUEST = Message("MetadataRequest", 3, "0-12", "9+", [
    F("topics", [
        F("topic_id", "uuid", "10+"),
        F("name", "string", nullable="10+"),
    ], nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
])

METADATA_RESPONSE = Message("MetadataResponse", 3, "0-12", "9+", [
    F("throttle_time_ms", "int32", "3+"),
    F("brokers", [
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", "1+", nullable="1+", default=None),
    ]),
    F("cluster_id", "string", "2+", nullable="2+", default=None),
    F("controller_id", "int32", "1+", default=-1),
    F("topics", [
        F("error_code", "int16"),
        F("name", "string", nullable="12+"),
        F("topic_id", "uuid", "10+"),
        F("is_internal", "bool", "1+", default=False),
        F("partitions", [
            F("error_code", "int16"),
            F("partition_index", "int32"),
            F("leader_id", "int32"),
            F("leader_epoch", "int32", "7+", default=-1),
            F("replica_nodes", "[]int32"),
            F("isr_nodes", "[]int32"),
            F("offline_replicas", "[]int32", "5+"),
        ]),
        F("topic_authorized_operations", "int32", "8+", default=-(2**31)),
    ]),
    F("cluster_authorized_operations", "int32", "8-10", default=-(2**31)),
])

# --- LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6): controller to broker ------------

_LEADER_AND_ISR_PARTITION = [
    F("topic_name", "string", "0-1"),
    F("partition_index", "int32"),
    F("controller_epoch", "int32"),
    F("leader", "int32"),
    F("leader_epoch", "int32"),
    F("isr", "[]int32"),
    F("zk_version", "int32"),
    F("replicas", "[]int32"),
    F("adding_replicas", "[]int32", "3+"),
    F("removing_replicas", "[]int32", "3+"),
    F("is_new", "bool", "1+", default=False),
    F("leader_recovery_state", "int8", "6+", default=0),
]

LEADER_AND_ISR_REQUEST = Message("LeaderAndIsrRequest", 4, "0-7", "4+", [
    F("controller_id", "int32"),
    F("is_kraft_controller", "bool", "7+", default=False),
    F("controller_epoch", "int32"),
    F("broker_epoch", "int64", "2+", default=-1),
    F("type", "int8", "5+"),  # 0: incremental, 1: full (every partition the broker hosts)
    F("ungrouped_partition_states", _LEADER_AND_ISR_PARTITION, "0-1"),
    F("topic_states", [
        F("topic_name", "string", "2+"),
        F("topic_id", "uuid", "5+"),
        F("partition_states", _LEADER_AND_ISR_PARTITION, "2+"),
    ], "2+"),
    F("live_leaders", [
        F("broker_id", "int32"),
        F("host_name", "string"),
        F("port", "int32"),
    ]),
])

LEADER_AND_ISR_RESPONSE = Message("LeaderAndIsrResponse", 4, "0-7", "4+", [
    F("error_code", "int16"),
    F("partition_errors", [
        F("topic_name", "string", "0-4"),
        F("partition_index", "int32"),
        F("error_code", "int16"),
    ], "0-4"),
    F("topics", [
        F("topic_id", "uuid", "5+"),
        F("partition_errors", [
            F("partition_index", "int32", "5+"),
            F("error_code", "int16", "5+"),
        ], "5+"),
    ], "5+"),
])

STOP_REPLICA_REQUEST = Message("StopReplicaRequest", 5, "0-3", "2+", [
    F("controller_id", "int32"),
    F("controller_epoch", "int32"),
    F("broker_epoch", "int64", "1+", default=-1),
    F("delete_partitions", "bool", "0-2"),
    F("ungrouped_partitions", [
        F("topic_name", "string", "0"),
        F("partition_index", "int32", "0"),
    ], "0"),
    F("topics", [
        F("name", "string", "1-2"),
        F("partition_indexes", "[]int32", "1-2"),
    ], "1-2"),
    F("topic_states", [
        F("topic_name", "string", "3+"),
        F("partition_states", [
            F("partition_index", "int32", "3+"),
            F("leader_epoch", "int32", "3+", default=-1),
            F("delete_partition", "bool", "3+"),
        ], "3+"),
    ], "3+"),
])

STOP_REPLICA_RESPONSE = Message("StopReplicaResponse", 5, "0-3", "2+", [
    F("error_code", "int16"),
    F("partition_errors", [
        F("topic_name", "string"),
        F("partition_index", "int32"),
        F("error_code", "int16"),
    ]),
])

_UPDATE_METADATA_PARTITION = [
    F("topic_name", "string", "0-4"),
    F("partition_index", "int32"),
    F("controller_epoch", "int32"),
    F("leader", "int32"),
    F("leader_epoch", "int32"),
    F("isr", "[]int32"),
    F("zk_version", "int32"),
    F("replicas", "[]int32"),
    F("offline_replicas", "[]int32", "4+"),
]

UPDATE_METADATA_REQUEST = Message("UpdateMetadataRequest", 6, "0-8", "6+", [
    F("controller_id", "int32"),
    F("is_kraft_controller", "bool", "8+", default=False),
    F("type", "int8", "8+", default=0, tag=0, tagged="8+"),
    F("controller_epoch", "int32"),
    F("broker_epoch", "int64", "5+", default=-1),
    F("ungrouped_partition_states", _UPDATE_METADATA_PARTITION, "0-4"),
    F("topic_states", [
        F("topic_name", "string", "5+"),
        F("topic_id", "uuid", "7+"),
        F("partition_states", _UPDATE_METADATA_PARTITION, "5+"),
    ], "5+"),
    F("live_brokers", [
        F("id", "int32"),
        F("v0_host", "string", "0"),
        F("v0_port", "int32", "0"),
        F("endpoints", [
            F("port", "int32", "1+"),
            F("host", "string", "1+"),
            F("listener", "string", "3+"),
            F("security_protocol", "int16", "1+"),
        ], "1+"),
        F("rack", "string", "2+", nullable="0+", default=None),
    ]),
])

UPDATE_METADATA_RESPONSE = Message("UpdateMetadataResponse", 6, "0-8", "6+", [
    F("error_code", "int16"),
])

# --- OffsetCommit (8), OffsetFetch (9) -----------------------------------------------------

OFFSET_COMMIT_REQUEST = Message("OffsetCommitRequest", 8, "0-9", "8+", [
    F("group_id", "string"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1),
    F("member_id", "string", "1+"),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", nullable="0+"),
        ]),
    ]),
])

OFFSET_COMMIT_RESPONSE = Message("OffsetCommitResponse", 8, "0-9", "8+", [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])

OFFSET_FETCH_REQUEST = Message("OffsetFetchRequest", 9, "0-9", "6+", [
    F("group_id", "string", "0-7"),
    F("topics", [
        F("name", "string", "0-7"),
        F("partition_indexes", "[]int32", "0-7"),
    ], "0-7", nullable="2-7"),
    F("groups", [  # v8 (KIP-709): several groups in one request
        F("group_id", "string", "8+"),
        F("member_id", "string", "9+", nullable="9+", default=None),
        F("member_epoch", "int32", "9+", default=-1),
        F("topics", [
            F("name", "string", "8+"),
            F("partition_indexes", "[]int32", "8+"),
        ], "8+", nullable="8+"),
    ], "8+"),
    F("require_stable", "bool", "7+", default=False),
])

OFFSET_FETCH_RESPONSE = Message("OffsetFetchResponse", 9, "0-9", "6+", [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", [
        F("name", "string", "0-7"),
        F("partitions", [
            F("partition_index", "int32", "0-7"),
            F("committed_offset", "int64", "0-7"),
            F("committed_leader_epoch", "int32", "5-7", default=-1),
            F("metadata", "string", "0-7", nullable="0-7"),
            F("error_code", "int16", "0-7"),
        ], "0-7"),
    ], "0-7"),
    F("error_code", "int16", "2-7", default=0),
    F("groups", [
        F("group_id", "string", "8+"),
        F("topics", [
            F("name", "string", "8+"),
            F("partitions", [
                F("partition_index", "int32", "8+"),
                F("committed_offset", "int64", "8+"),
                F("committed_leader_epoch", "int32", "8+", default=-1),
                F("metadata", "string", "8+", nullable="8+"),
                F("error_code", "int16", "8+"),
            ], "8+"),
        ], "8+"),
        F("error_code", "int16", "8+", default=0),
    ], "8+"),
])

# --- FindCoordinator (10) and the group APIs (11-14) ----------------------------------------

FIND_COORDINATOR_REQUEST = Message("FindCoordinatorRequest", 10, "0-6", "3+", [
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+", default=0),  # 0 group, 1 transaction, 2 share group (v6)
    F("coordinator_keys", "[]string", "4+"),  # v4 (KIP-699): several keys in one request
])

FIND_COORDINATOR_RESPONSE = Message("FindCoordinatorResponse", 10, "0-6", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", default=None),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", [
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", default=None),
    ], "4+"),
])

JOIN_GROUP_REQUEST = Message("JoinGroupRequest", 11, "0-9", "6+", [
    F("group_id", "string"),
    F("session_timeout_ms", "int32"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1),
    F("member_id", "string"),
    F("group_instance_id", "string", "5+", nullable="5+", default=None),
    F("protocol_type", "string"),
    F("protocols", [
        F("name", "string"),
        F("metadata", "bytes"),
    ]),
    F("reason", "string", "8+", nullable="8+", default=None),  # KIP-800
])

JOIN_GROUP_RESPONSE = Message("JoinGroupResponse", 11, "0-9", "6+", [
    F("throttle_time_ms", "int32", "2+"),
    F("error_code", "int16"),
    F("generation_id", "int32", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=None),
    F("protocol_name", "string", nullable="7+"),
    F("leader", "string"),
    F("skip_assignment", "bool", "9+", default=False),  # KIP-814
    F("member_id", "string"),
    F("members", [
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("metadata", "bytes"),
    ]),
])

HEARTBEAT_REQUEST = Message("HeartbeatRequest", 12, "0-4", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
])

HEARTBEAT_RESPONSE = Message("HeartbeatResponse", 12, "0-4", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
])

LEAVE_GROUP_REQUEST = Message("LeaveGroupRequest", 13, "0-5", "4+", [
    F("group_id", "string"),
    F("member_id", "string", "0-2"),
    F("members", [
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("reason", "string", "5+", nullable="5+", default=None),  # KIP-800
    ], "3+"),
])

LEAVE_GROUP_RESPONSE = Message("LeaveGroupResponse", 13, "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("members", [
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("error_code", "int16", "3+"),
    ], "3+"),
])

SYNC_GROUP_REQUEST = Message("SyncGroupRequest", 14, "0-5", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("protocol_type", "string", "5+", nullable="5+", default=None),
    F("protocol_name", "string", "5+", nullable="5+", default=None),
    F("assignments", [
        F("member_id", "string"),
        F("assignment", "bytes"),
    ]),
])

SYNC_GROUP_RESPONSE = Message("SyncGroupResponse", 14, "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("protocol_type", "string", "5+", nullable="5+", default=None),
    F("protocol_name", "string", "5+", nullable="5+", default=None),
    F("assignment", "bytes"),
])

# --- DescribeGroups (15), ListGroups (16), DeleteGroups (42) ---------------------------------

DESCRIBE_GROUPS_REQUEST = Message("DescribeGroupsRequest", 15, "0-5", "5+", [
    F("groups", "[]string"),
    F("include_authorized_operations", "bool", "3+", default=False),
])

DESCRIBE_GROUPS_RESPONSE = Message("DescribeGroupsResponse", 15, "0-5", "5+", [
    F("throttle_time_ms", "int32", "1+"),
    F("groups", [
        F("error_code", "int16"),
        F("group_id", "string"),
        F("group_state", "string"),
        F("protocol_type", "string"),
        F("protocol_data", "string"),
        F("members", [
            F("member_id", "string"),
            F("group_instance_id", "string", "4+", nullable="4+", default=None),
            F("client_id", "string"),
            F("client_host", "string"),
            F("member_metadata", "bytes"),
            F("member_assignment", "bytes"),
        ]),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ]),
])

LIST_GROUPS_REQUEST = Message("ListGroupsRequest", 16, "0-5", "3+", [
    F("states_filter", "[]string", "4+", default=[]),  # KIP-518; empty: every state
    F("types_filter", "[]string", "5+", default=[]),  # KIP-848; empty: every type
])

LIST_GROUPS_RESPONSE = Message("ListGroupsResponse", 16, "0-5", "3+", [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16"),
    F("groups", [
        F("group_id", "string"),
        F("protocol_type", "string"),
        F("group_state", "string", "4+", default=""),
        F("group_type", "string", "5+", default=""),
    ]),
])

DELETE_GROUPS_REQUEST = Message("DeleteGroupsRequest", 42, "0-2", "2+", [
    F("groups_names", "[]string"),
])

DELETE_GROUPS_RESPONSE = Message("DeleteGroupsResponse", 42, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", [
        F("group_id", "string"),
        F("error_code", "int16"),
    ]),
])

# --- ElectLeaders (43) -------------------------------------------------------------------------

ELECT_LEADERS_REQUEST = Message("ElectLeadersRequest", 43, "0-2", "2+", [
    F("election_type", "int8", "1+", default=0),  # 0 preferred, 1 unclean (KIP-460)
    F("topic_partitions", [
        F("topic", "string"),
        F("partitions", "[]int32"),
    ], nullable="0+"),  # null: every partition
    F("timeout_ms", "int32", default=60000),
])

ELECT_LEADERS_RESPONSE = Message("ElectLeadersResponse", 43, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "1+"),
    F("replica_election_results", [
        F("topic", "string"),
        F("partition_result", [
            F("partition_id", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        ]),
    ]),
])

# --- AlterPartitionReassignments (45), ListPartitionReassignments (46) ----------------------

ALTER_PARTITION_REASSIGNMENTS_REQUEST = Message(
    "AlterPartitionReassignmentsRequest", 45, "0-0", "0+", [
        F("timeout_ms", "int32", default=60000),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("replicas", "[]int32", nullable="0+", default=None),  # null: cancel
            ]),
        ]),
    ])

ALTER_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    "AlterPartitionReassignmentsResponse", 45, "0-0", "0+", [
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("responses", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=None),
            ]),
        ]),
    ])

LIST_PARTITION_REASSIGNMENTS_REQUEST = Message(
    "ListPartitionReassignmentsRequest", 46, "0-0", "0+", [
        F("timeout_ms", "int32", default=60000),
        F("topics", [
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ], nullable="0+"),  # null: every ongoing reassignment
    ])

LIST_PARTITION_REASSIGNMENTS_RESPONSE = Message(
    "ListPartitionReassignmentsResponse", 46, "0-0", "0+", [
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("replicas", "[]int32"),
                F("adding_replicas", "[]int32"),
                F("removing_replicas", "[]int32"),
            ]),
        ]),
    ])

# --- ApiVersions (18) ------------------------------------------------------------------------

API_VERSIONS_REQUEST = Message("ApiVersionsRequest", 18, "0-4", "3+", [
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
])

API_VERSIONS_RESPONSE = Message("ApiVersionsResponse", 18, "0-4", "3+", [
    F("error_code", "int16"),
    F("api_keys", [
        F("api_key", "int16"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ]),
    F("throttle_time_ms", "int32", "1+"),
])

# --- CreateTopics (19), DeleteTopics (20) ----------------------------------------------------

CREATE_TOPICS_REQUEST = Message("CreateTopicsRequest", 19, "0-7", "5+", [
    F("topics", [
        F("name", "string"),
        F("num_partitions", "int32"),
        F("replication_factor", "int16"),
        F("assignments", [
            F("partition_index", "int32"),
            F("broker_ids", "[]int32"),
        ]),
        F("configs", [
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool", "1+", default=False),
])

CREATE_TOPICS_RESPONSE = Message("CreateTopicsResponse", 19, "0-7", "5+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", [
        F("name", "string"),
        F("topic_id", "uuid", "7+"),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="0+", default=None),
        F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+"),
        # v5+ (KIP-525): the created topic as it is, so a client need not describe it.
        F("num_partitions", "int32", "5+", default=-1),
        F("replication_factor", "int16", "5+", default=-1),
        F("configs", [
            F("name", "string", "5+"),
            F("value", "string", "5+", nullable="5+"),
            F("read_only", "bool", "5+"),
            F("config_source", "int8", "5+", default=-1),
            F("is_sensitive", "bool", "5+"),
        ], "5+", nullable="5+"),
    ]),
])

DELETE_TOPICS_REQUEST = Message("DeleteTopicsRequest", 20, "0-6", "4+", [
    F("topics", [  # v6+: by name or by id (KIP-516)
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ], "6+"),
    F("topic_names", "[]string", "0-5"),
    F("timeout_ms", "int32"),
])

DELETE_TOPICS_RESPONSE = Message("DeleteTopicsResponse", 20, "0-6", "4+", [
    F("throttle_time_ms", "int32", "1+"),
    F("responses", [
        F("name", "string", nullable="6+"),
        F("topic_id", "uuid", "6+"),
        F("error_code", "int16"),
        F("error_message", "string", "5+", nullable="5+", default=None),
    ]),
])

# --- DeleteRecords (21) ----------------------------------------------------------------------

DELETE_RECORDS_REQUEST = Message("DeleteRecordsRequest", 21, "0-2", "2+", [
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("offset", "int64"),  # delete below this offset; -1: below the high watermark
        ]),
    ]),
    F("timeout_ms", "int32"),
])

DELETE_RECORDS_RESPONSE = Message("DeleteRecordsResponse", 21, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("low_watermark", "int64"),
            F("error_code", "int16"),
        ]),
    ]),
])

# --- CreatePartitions (37) --------------------------------------------------------------------

CREATE_PARTITIONS_REQUEST = Message("CreatePartitionsRequest", 37, "0-3", "2+", [
    F("topics", [
        F("name", "string"),
        F("count", "int32"),  # the new total, not the number added
        F("assignments", [
            F("broker_ids", "[]int32"),
        ], nullable="0+"),  # null: the broker places the new replicas
    ]),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool", default=False),
])

CREATE_PARTITIONS_RESPONSE = Message("CreatePartitionsResponse", 37, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", [
        F("name", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
    ]),
])

# --- DescribeAcls (29), CreateAcls (30), DeleteAcls (31) -----------------------------------
# Enumerations as Kafka's (org.apache.kafka.common.acl / resource): resource_type 2 topic,
# 3 group, 4 cluster, 5 transactional id; pattern_type 1 any, 2 match, 3 literal,
# 4 prefixed; operation 2 all, 3 read ... 12 idempotent write; permission_type 2 deny,
# 3 allow (1 is "any" in filters).

DESCRIBE_ACLS_REQUEST = Message("DescribeAclsRequest", 29, "0-3", "2+", [
    F("resource_type_filter", "int8"),
    F("resource_name_filter", "string", nullable="0+"),
    F("pattern_type_filter", "int8", "1+", default=3),
    F("principal_filter", "string", nullable="0+"),
    F("host_filter", "string", nullable="0+"),
    F("operation", "int8"),
    F("permission_type", "int8"),
])

DESCRIBE_ACLS_RESPONSE = Message("DescribeAclsResponse", 29, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("resources", [
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("pattern_type", "int8", "1+", default=3),
        F("acls", [
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ]),
])

CREATE_ACLS_REQUEST = Message("CreateAclsRequest", 30, "0-3", "2+", [
    F("creations", [
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("resource_pattern_type", "int8", "1+", default=3),
        F("principal", "string"),
        F("host", "string"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ]),
])

CREATE_ACLS_RESPONSE = Message("CreateAclsResponse", 30, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", [
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
    ]),
])

DELETE_ACLS_REQUEST = Message("DeleteAclsRequest", 31, "0-3", "2+", [
    F("filters", [
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ]),
])

DELETE_ACLS_RESPONSE = Message("DeleteAclsResponse", 31, "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("filter_results", [
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("matching_acls", [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=3),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ]),
])

# --- DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44) -------------------

DESCRIBE_CONFIGS_REQUEST = Message("DescribeConfigsRequest", 32, "0-4", "4+", [
    F("resources", [
        F("resource_type", "int8"),  # 2 topic, 4 broker
        F("resource_name", "string"),
        F("configuration_keys", "[]string", nullable="0+"),  # null: every key
    ]),
    F("include_synonyms", "bool", "1+", default=False),
    F("include_documentation", "bool", "3+", default=False),
])

DESCRIBE_CONFIGS_RESPONSE = Message("DescribeConfigsResponse", 32, "0-4", "4+", [
    F("throttle_time_ms", "int32"),
    F("results", [
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", [
            F("name", "string"),
            F("value", "string", nullable="0+"),
            F("read_only", "bool"),
            F("is_default", "bool", "0", default=False),
            F("config_source", "int8", "1+", default=-1),
            F("is_sensitive", "bool"),
            F("synonyms", [
                F("name", "string"),
                F("value", "string", nullable="0+"),
                F("source", "int8"),
            ], "1+", default=[]),
            F("config_type", "int8", "3+", default=0),
            F("documentation", "string", "3+", nullable="0+", default=None),
        ]),
    ]),
])

ALTER_CONFIGS_REQUEST = Message("AlterConfigsRequest", 33, "0-2", "2+", [
    F("resources", [
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", [
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool"),
])

ALTER_CONFIGS_RESPONSE = Message("AlterConfigsResponse", 33, "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("responses", [
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ]),
])

INCREMENTAL_ALTER_CONFIGS_REQUEST = Message("IncrementalAlterConfigsRequest", 44, "0-1", "1+", [
    F("resources", [
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", [
            F("name", "string"),
            F("config_operation", "int8"),  # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool"),
])

INCREMENTAL_ALTER_CONFIGS_RESPONSE = Message("IncrementalAlterConfigsResponse", 44, "0-1", "1+", [
    F("throttle_time_ms", "int32"),
    F("responses", [
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ]),
])

# --- InitProducerId (22), OffsetForLeaderEpoch (23) ------------------------------------------

INIT_PRODUCER_ID_REQUEST = Message("InitProducerIdRequest", 22, "0-5", "2+", [
    F("transactional_id", "string", nullable="0+", default=None),
    F("transaction_timeout_ms", "int32"),
    F("producer_id", "int64", "3+", default=-1),  # v3 (KIP-360): resume after a fenced epoch
    F("producer_epoch", "int16", "3+", default=-1),
])

INIT_PRODUCER_ID_RESPONSE = Message("InitProducerIdResponse", 22, "0-5", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
])

OFFSET_FOR_LEADER_EPOCH_REQUEST = Message("OffsetForLeaderEpochRequest", 23, "0-4", "4+", [
    F("replica_id", "int32", "3+", default=-2),
    F("topics", [
        F("topic", "string"),
        F("partitions", [
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "2+", default=-1),
            F("leader_epoch", "int32"),
        ]),
    ]),
])

OFFSET_FOR_LEADER_EPOCH_RESPONSE = Message("OffsetForLeaderEpochResponse", 23, "0-4", "4+", [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", [
        F("topic", "string"),
        F("partitions", [
            F("error_code", "int16"),
            F("partition", "int32"),
            F("leader_epoch", "int32", "1+", default=-1),
            F("end_offset", "int64", default=-1),
        ]),
    ]),
])

# --- SaslHandshake (17), SaslAuthenticate (36) -------------------------------------------------
# A connection on a SASL listener starts with these (after an optional ApiVersions). With
# SaslHandshake v0 the SASL tokens that follow travel as bare size-prefixed frames; with v1
# they travel inside SaslAuthenticate requests.

SASL_HANDSHAKE_REQUEST = Message("SaslHandshakeRequest", 17, "0-1", "none", [
    F("mechanism", "string"),
])

SASL_HANDSHAKE_RESPONSE = Message("SaslHandshakeResponse", 17, "0-1", "none", [
    F("error_code", "int16"),
    F("mechanisms", "[]string"),
])

SASL_AUTHENTICATE_REQUEST = Message("SaslAuthenticateRequest", 36, "0-2", "2+", [
    F("auth_bytes", "bytes"),
])

SASL_AUTHENTICATE_RESPONSE = Message("SaslAuthenticateResponse", 36, "0-2", "2+", [
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("auth_bytes", "bytes", default=b""),
    F("session_lifetime_ms", "int64", "1+", default=0),
])

# --- DescribeUserScramCredentials (50), AlterUserScramCredentials (51) ------------------------
# mechanism: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512 (Kafka's ScramMechanism type numbers).

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    "DescribeUserScramCredentialsRequest", 50, "0-0", "0+", [
        F("users", [F("name", "string")], nullable="0+", default=None),
    ])

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    "DescribeUserScramCredentialsResponse", 50, "0-0", "0+", [
        F("throttle_time_ms", "int32", default=0),
        F("error_code", "int16", default=0),
        F("error_message", "string", nullable="0+", default=None),
        F("results", [
            F("user", "string"),
            F("error_code", "int16", default=0),
            F("error_message", "string", nullable="0+", default=None),
            F("credential_infos", [
                F("mechanism", "int8"),
                F("iterations", "int32"),
            ]),
        ]),
    ])

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = Message(
    "AlterUserScramCredentialsRequest", 51, "0-0", "0+", [
        F("deletions", [
            F("name", "string"),
            F("mechanism", "int8"),
        ]),
        F("upsertions", [
            F("name", "string"),
            F("mechanism", "int8"),
            F("iterations", "int32"),
            F("salt", "bytes"),
            F("salted_password", "bytes"),
        ]),
    ])

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = Message(
    "AlterUserScramCredentialsResponse", 51, "0-0", "0+", [
        F("throttle_time_ms", "int32", default=0),
        F("results", [
            F("user", "string"),
            F("error_code", "int16", default=0),
            F("error_message", "string", nullable="0+", default=None),
        ]),
    ])

# --- AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28) -------
# The client-to-coordinator side of transactions (KIP-98); the non-flexible versions, which
# librdkafka and kafka-python both speak; WriteTxnMarkers (27), below, is the
# coordinator-to-leader side.

_ADD_PARTITIONS_TO_TXN_TOPIC = [
    F("name", "string"),
    F("partitions", "[]int32"),
]

_ADD_PARTITIONS_TO_TXN_TOPIC_RESULT = [
    F("name", "string"),
    F("results_by_partition", [
        F("partition_index", "int32"),
        F("partition_error_code", "int16"),
    ]),
]

ADD_PARTITIONS_TO_TXN_REQUEST = Message("AddPartitionsToTxnRequest", 24, "0-5", "3+", [
    F("transactions", [  # v4+ (KIP-890): broker to coordinator, several transactions at once
        F("transactional_id", "string", "4+"),
        F("producer_id", "int64", "4+"),
        F("producer_epoch", "int16", "4+"),
        F("verify_only", "bool", "4+", default=False),
        F("topics", _ADD_PARTITIONS_TO_TXN_TOPIC, "4+"),
    ], "4+"),
    F("v3_and_below_transactional_id", "string", "0-3"),
    F("v3_and_below_producer_id", "int64", "0-3"),
    F("v3_and_below_producer_epoch", "int16", "0-3"),
    F("v3_and_below_topics", _ADD_PARTITIONS_TO_TXN_TOPIC, "0-3"),
])

ADD_PARTITIONS_TO_TXN_RESPONSE = Message("AddPartitionsToTxnResponse", 24, "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "4+", default=0),
    F("results_by_transaction", [
        F("transactional_id", "string", "4+"),
        F("topic_results", _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT, "4+"),
    ], "4+"),
    F("results_by_topic_v3_and_below", _ADD_PARTITIONS_TO_TXN_TOPIC_RESULT, "0-3"),
])

ADD_OFFSETS_TO_TXN_REQUEST = Message("AddOffsetsToTxnRequest", 25, "0-4", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("group_id", "string"),
])

ADD_OFFSETS_TO_TXN_RESPONSE = Message("AddOffsetsToTxnResponse", 25, "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
])

END_TXN_REQUEST = Message("EndTxnRequest", 26, "0-4", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("committed", "bool"),
])

END_TXN_RESPONSE = Message("EndTxnResponse", 26, "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
])

TXN_OFFSET_COMMIT_REQUEST = Message("TxnOffsetCommitRequest", 28, "0-4", "3+", [
    F("transactional_id", "string"),
    F("group_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("generation_id", "int32", "3+", default=-1),  # v3 (KIP-447): the member is fenced too
    F("member_id", "string", "3+", default=""),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "2+", default=-1),
            F("committed_metadata", "string", nullable="0+", default=None),
        ]),
    ]),
])

TXN_OFFSET_COMMIT_RESPONSE = Message("TxnOffsetCommitResponse", 28, "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])

# --- WriteTxnMarkers (27): transaction coordinator to partition leaders -------------------

WRITE_TXN_MARKERS_REQUEST = Message("WriteTxnMarkersRequest", 27, "0-1", "1+", [
    F("markers", [
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("transaction_result", "bool"),  # False ABORT, True COMMIT
        F("topics", [
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ]),
        F("coordinator_epoch", "int32"),
    ]),
])

WRITE_TXN_MARKERS_RESPONSE = Message("WriteTxnMarkersResponse", 27, "0-1", "1+", [
    F("markers", [
        F("producer_id", "int64"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("error_code", "int16"),
            ]),
        ]),
    ]),
])

# --- DescribeCluster (60): the cluster as a broker sees it (KIP-700) --------------------------
# endpoint_type (v1, KIP-919): 1 = brokers, 2 = controllers; a ZooKeeper-mode broker describes
# brokers only.

DESCRIBE_CLUSTER_REQUEST = Message("DescribeClusterRequest", 60, "0-1", "0+", [
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "int8", "1+", default=1),
])

DESCRIBE_CLUSTER_RESPONSE = Message("DescribeClusterResponse", 60, "0-1", "0+", [
    F("throttle_time_ms", "int32", default=0),
    F("error_code", "int16", default=0),
    F("error_message", "string", nullable="0+", default=None),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string", default=""),
    F("controller_id", "int32", default=-1),
    F("brokers", [
        F("broker_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=None),
    ], default=[]),
    F("cluster_authorized_operations", "int32", default=-2147483648),
])

# --- DescribeLogDirs (35), AlterReplicaLogDirs (34): partitions in their log directories ------

DESCRIBE_LOG_DIRS_REQUEST = Message("DescribeLogDirsRequest", 35, "0-4", "2+", [
    F("topics", [  # null: every partition in the directory
        F("topic", "string"),
        F("partitions", "[]int32"),
    ], nullable="0+", default=None),
])

DESCRIBE_LOG_DIRS_RESPONSE = Message("DescribeLogDirsResponse", 35, "0-4", "2+", [
    F("throttle_time_ms", "int32", default=0),
    F("error_code", "int16", "3+", default=0),
    F("results", [
        F("error_code", "int16", default=0),
        F("log_dir", "string"),
        F("topics", [
            F("name", "string"),
            F("partitions", [
                F("partition_index", "int32"),
                F("partition_size", "int64"),
                F("offset_lag", "int64"),
                F("is_future_key", "bool", default=False),
            ]),
        ]),
        F("total_bytes", "int64", "4+", default=-1),
        F("usable_bytes", "int64", "4+", default=-1),
    ]),
])

ALTER_REPLICA_LOG_DIRS_REQUEST = Message("AlterReplicaLogDirsRequest", 34, "0-2", "2+", [
    F("dirs", [
        F("path", "string"),
        F("topics", [
            F("name", "string"),
            F("partitions", "[]int32"),
        ]),
    ]),
])

ALTER_REPLICA_LOG_DIRS_RESPONSE = Message("AlterReplicaLogDirsResponse", 34, "0-2", "2+", [
    F("throttle_time_ms", "int32", default=0),
    F("results", [
        F("topic_name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])

# --- OffsetDelete (47): a group's committed offsets removed (KIP-496) ------------------------

OFFSET_DELETE_REQUEST = Message("OffsetDeleteRequest", 47, "0", "none", [
    F("group_id", "string"),
    F("topics", [
        F("name", "string"),
        F("partitions", [F("partition_index", "int32")]),
    ]),
])

OFFSET_DELETE_RESPONSE = Message("OffsetDeleteResponse", 47, "0", "none", [
    F("error_code", "int16", default=0),
    F("throttle_time_ms", "int32", default=0),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ], default=[]),
])

# --- DescribeProducers (61), DescribeTransactions (65), ListTransactions (66) (KIP-664) -------
# Tools for finding hanging transactions: who writes to a partition, what a transactional
# id's coordinator holds, and every transactional id a coordinator knows.

DESCRIBE_PRODUCERS_REQUEST = Message("DescribeProducersRequest", 61, "0", "0+", [
    F("topics", [
        F("name", "string"),
        F("partition_indexes", "[]int32"),
    ]),
])

DESCRIBE_PRODUCERS_RESPONSE = Message("DescribeProducersResponse", 61, "0", "0+", [
    F("throttle_time_ms", "int32", default=0),
    F("topics", [
        F("name", "string"),
        F("partitions", [
            F("partition_index", "int32"),
            F("error_code", "int16", default=0),
            F("error_message", "string", nullable="0+", default=None),
            F("active_producers", [
                F("producer_id", "int64"),
                F("producer_epoch", "int32"),
                F("last_sequence", "int32", default=-1),
                F("last_timestamp", "int64", default=-1),
                F("coordinator_epoch", "int32"),
                F("current_txn_start_offset", "int64", default=-1),
            ], default=[]),
        ]),
    ]),
])

DESCRIBE_TRANSACTIONS_REQUEST = Message("DescribeTransactionsRequest", 65, "0", "0+", [
    F("transactional_ids", "[]string"),
])

DESCRIBE_TRANSACTIONS_RESPONSE = Message("DescribeTransactionsResponse", 65, "0", "0+", [
    F("throttle_time_ms", "int32", default=0),
    F("transaction_states", [
        F("error_code", "int16", default=0),
        F("transactional_id", "string"),
        F("transaction_state", "string", default=""),
        F("transaction_timeout_ms", "int32", default=0),
        F("transaction_start_time_ms", "int64", default=0),
        F("producer_id", "int64", default=0),
        F("producer_epoch", "int16", default=0),
        F("topics", [
            F("topic", "string"),
            F("partitions", "[]int32"),
        ], default=[]),
    ]),
])

LIST_TRANSACTIONS_REQUEST = Message("ListTransactionsRequest", 66, "0-1", "0+", [
    F("state_filters", "[]string", default=[]),
    F("producer_id_filters", "[]int64", default=[]),
    F("duration_filter", "int64", "1+", default=-1),
])

LIST_TRANSACTIONS_RESPONSE = Message("ListTransactionsResponse", 66, "0-1", "0+", [
    F("throttle_time_ms", "int32", default=0),
    F("error_code", "int16", default=0),
    F("unknown_state_filters", "[]string", default=[]),
    F("transaction_states", [
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("transaction_state", "string"),
    ], default=[]),
])

# --- DescribeClientQuotas (48), AlterClientQuotas (49): client quotas (KIP-546) --------------
# An entity is a list of (entity_type, entity_name) with types "user", "client-id" and "ip"; a
# null name is the entity's default (<default> in ZooKeeper). match_type: 0 exact name,
# 1 the default, 2 any name.

DESCRIBE_CLIENT_QUOTAS_REQUEST = Message("DescribeClientQuotasRequest", 48, "0-1", "1+", [
    F("components", [
        F("entity_type", "string"),
        F("match_type", "int8"),
        F("match", "string", nullable="0+", default=None),
    ]),
    F("strict", "bool", default=False),
])

DESCRIBE_CLIENT_QUOTAS_RESPONSE = Message("DescribeClientQuotasResponse", 48, "0-1", "1+", [
    F("throttle_time_ms", "int32", default=0),
    F("error_code", "int16", default=0),
    F("error_message", "string", nullable="0+", default=None),
    F("entries", [
        F("entity", [
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=None),
        ]),
        F("values", [
            F("key", "string"),
            F("value", "float64"),
        ]),
    ], nullable="0+", default=None),
])

ALTER_CLIENT_QUOTAS_REQUEST = Message("AlterClientQuotasRequest", 49, "0-1", "1+", [
    F("entries", [
        F("entity", [
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=None),
        ]),
        F("ops", [
            F("key", "string"),
            F("value", "float64", default=0.0),
            F("remove", "bool", default=False),
        ]),
    ]),
    F("validate_only", "bool", default=False),
])

ALTER_CLIENT_QUOTAS_RESPONSE = Message("AlterClientQuotasResponse", 49, "0-1", "1+", [
    F("throttle_time_ms", "int32", default=0),
    F("entries", [
        F("error_code", "int16", default=0),
        F("error_message", "string", nullable="0+", default=None),
        F("entity", [
            F("entity_type", "string"),
            F("entity_name", "string", nullable="0+", default=None),
        ]),
    ]),
])

MESSAGES: dict[int, tuple[Message, Message]] = {
    m[0].api_key: m
    for m in [
        (PRODUCE_REQUEST, PRODUCE_RESPONSE),
        (FETCH_REQUEST, FETCH_RESPONSE),
        (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
        (METADATA_REQUEST, METADATA_RESPONSE),
        (LEADER_AND_ISR_REQUEST, LEADER_AND_ISR_RESPONSE),
        (STOP_REPLICA_REQUEST, STOP_REPLICA_RESPONSE),
        (UPDATE_METADATA_REQUEST, UPDATE_METADATA_RESPONSE),
        (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
        (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
        (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
        (JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
        (HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
        (LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
        (SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
        (DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
        (LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
        (DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
        (ELECT_LEADERS_REQUEST, ELECT_LEADERS_RESPONSE),
        (ALTER_PARTITION_REASSIGNMENTS_REQUEST, ALTER_PARTITION_REASSIGNMENTS_RESPONSE),
        (LIST_PARTITION_REASSIGNMENTS_REQUEST, LIST_PARTITION_REASSIGNMENTS_RESPONSE),
        (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
        (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
        (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
        (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
        (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
        (DESCRIBE_ACLS_REQUEST, DESCRIBE_ACLS_RESPONSE),
        (CREATE_ACLS_REQUEST, CREATE_ACLS_RESPONSE),
        (DELETE_ACLS_REQUEST, DELETE_ACLS_RESPONSE),
        (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
        (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
        (INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE),
        (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
        (OFFSET_FOR_LEADER_EPOCH_REQUEST, OFFSET_FOR_LEADER_EPOCH_RESPONSE),
        (SASL_HANDSHAKE_REQUEST, SASL_HANDSHAKE_RESPONSE),
        (SASL_AUTHENTICATE_REQUEST, SASL_AUTHENTICATE_RESPONSE),
        (DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST, DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE),
        (ALTER_USER_SCRAM_CREDENTIALS_REQUEST, ALTER_USER_SCRAM_CREDENTIALS_RESPONSE),
        (ADD_PARTITIONS_TO_TXN_REQUEST, ADD_PARTITIONS_TO_TXN_RESPONSE),
        (ADD_OFFSETS_TO_TXN_REQUEST, ADD_OFFSETS_TO_TXN_RESPONSE),
        (END_TXN_REQUEST, END_TXN_RESPONSE),
        (WRITE_TXN_MARKERS_REQUEST, WRITE_TXN_MARKERS_RESPONSE),
        (TXN_OFFSET_COMMIT_REQUEST, TXN_OFFSET_COMMIT_RESPONSE),
        (DESCRIBE_CLUSTER_REQUEST, DESCRIBE_CLUSTER_RESPONSE),
        (DESCRIBE_LOG_DIRS_REQUEST, DESCRIBE_LOG_DIRS_RESPONSE),
        (ALTER_REPLICA_LOG_DIRS_REQUEST, ALTER_REPLICA_LOG_DIRS_RESPONSE),
        (OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE),
        (DESCRIBE_PRODUCERS_REQUEST, DESCRIBE_PRODUCERS_RESPONSE),
        (DESCRIBE_TRANSACTIONS_REQUEST, DESCRIBE_TRANSACTIONS_RESPONSE),
        (LIST_TRANSACTIONS_REQUEST, LIST_TRANSACTIONS_RESPONSE),
        (DESCRIBE_CLIENT_QUOTAS_REQUEST, DESCRIBE_CLIENT_QUOTAS_RESPONSE),
        (ALTER_CLIENT_QUOTAS_REQUEST, ALTER_CLIENT_QUOTAS_RESPONSE),
    ]
}
"""API key -> (request, response) declarations."""
