"""API keys, the versions SimpleKafka advertises, and the schema registry.

Every Kafka request starts with an API key (which operation) and an API
version (which layout). ``SUPPORTED_VERSIONS`` is what the broker advertises in
ApiVersions: exactly what is implemented, no more, because clients use
whatever is advertised. ``request_schema`` and ``response_schema`` look up the
concrete :class:`~simplekafka.protocol.schema.Schema` for a key and version.
"""

from __future__ import annotations

import enum

from simplekafka.protocol.definitions import MESSAGES, Message
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.schema import Schema


class ApiKey(enum.IntEnum):
    """The API keys SimpleKafka knows (numbers as on the wire)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66


EARLIEST_TIMESTAMP = -2
"""ListOffsets' timestamp for "the log start offset"."""
LATEST_TIMESTAMP = -1
"""ListOffsets' timestamp for "the end": the high watermark (a replica asks for the log end)."""
MAX_TIMESTAMP = -3
"""ListOffsets' timestamp for "the record with the largest timestamp" (KIP-734, v7)."""
EARLIEST_LOCAL_TIMESTAMP = -4
"""ListOffsets' timestamp for "the first offset on local disk" (KIP-405, v8)."""
LATEST_TIERED_TIMESTAMP = -5
"""ListOffsets' timestamp for "the last offset in remote storage" (KIP-1005, v9)."""

READ_UNCOMMITTED = 0
"""Fetch and ListOffsets isolation_level: everything below the high watermark."""
READ_COMMITTED = 1
"""Fetch and ListOffsets isolation_level: only below the last stable offset (KIP-98)."""


SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 11),
    ApiKey.FETCH: (0, 17),
    ApiKey.LIST_OFFSETS: (0, 9),
    ApiKey.METADATA: (0, 12),
    ApiKey.LEADER_AND_ISR: (0, 7),
    ApiKey.STOP_REPLICA: (0, 3),
    ApiKey.UPDATE_METADATA: (0, 8),
    ApiKey.OFFSET_COMMIT: (0, 9),
    ApiKey.OFFSET_FETCH: (0, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 4),
    ApiKey.TXN_OFFSET_COMMIT: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
}
"""(min, max) version per API that the broker implements (inter-broker APIs included)."""

INTER_BROKER_KEYS: frozenset[ApiKey] = frozenset(
    {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA}
)
"""Controller-to-broker APIs: implemented, but never advertised to clients."""

ADVERTISED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    key: versions for key, versions in SUPPORTED_VERSIONS.items() if key not in INTER_BROKER_KEYS
}
"""What ApiVersions advertises to clients: SUPPORTED_VERSIONS minus the inter-broker keys.

(What a client chooses to speak is the client's own ``CLIENT_VERSIONS``, in
``simplekafka.client.connection``, derived from this.)"""


def _message(api_key: int, index: int) -> Message:
    try:
        return MESSAGES[int(api_key)][index]
    except (KeyError, ValueError, TypeError):
        known = ", ".join(str(int(k)) for k in ApiKey)
        raise ProtocolError(f"unknown API key {api_key!r}", expected=f"one of {known}") from None


def _schema(api_key: int, version: int, index: int) -> Schema:
    found = _SCHEMAS.get((api_key, version, index))
    if found is not None:
        return found
    message = _message(api_key, index)
    if version not in message.valid:
        raise ProtocolError(
            f"{message.name} has no version {version} (this codec knows {message.valid})",
            expected=f"a version in {message.valid}",
        )
    _SCHEMAS[(api_key, version, index)] = found = message.schema(version)
    return found


# Every request pays two schema lookups and two flexibility checks: remember the
# answers, keyed by the wire numbers, so they cost one dict probe each.
_SCHEMAS: dict[tuple[int, int, int], Schema] = {}
_FLEXIBLE: dict[tuple[int, int], bool] = {}


def request_schema(api_key: int, version: int) -> Schema:
    """The request schema for an API key and version (ProtocolError if unknown)."""
    return _schema(api_key, version, 0)


def response_schema(api_key: int, version: int) -> Schema:
    """The response schema for an API key and version (ProtocolError if unknown)."""
    return _schema(api_key, version, 1)


def is_flexible(api_key: int, version: int) -> bool:
    """Whether this request/response version uses compact types and tagged fields."""
    found = _FLEXIBLE.get((api_key, version))
    if found is None:
        _FLEXIBLE[(api_key, version)] = found = version in _message(api_key, 0).flexible
    return found


def known_versions(api_key: int) -> tuple[int, int]:
    """The (min, max) versions this codec can encode and decode (may exceed what is advertised)."""
    valid = _message(api_key, 0).valid
    return valid.low, valid.high
