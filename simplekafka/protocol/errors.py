"""Kafka error codes, and the exceptions the codec raises.

Error codes are the numbers on the wire; the broker answers with them and the
client turns them back into exceptions named after them. ``retriable`` follows
the Java client's classification: a client may retry these after a metadata or
coordinator refresh.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Kafka's error codes (the subset SimpleKafka uses or may meet)."""

    retriable: bool

    def __new__(cls, code: int, retriable: bool = False) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        return member

    UNKNOWN_SERVER_ERROR = (-1, False)
    NONE = (0, False)
    OFFSET_OUT_OF_RANGE = (1, False)
    CORRUPT_MESSAGE = (2, True)
    UNKNOWN_TOPIC_OR_PARTITION = (3, True)
    INVALID_FETCH_SIZE = (4, False)
    LEADER_NOT_AVAILABLE = (5, True)
    NOT_LEADER_OR_FOLLOWER = (6, True)
    REQUEST_TIMED_OUT = (7, True)
    BROKER_NOT_AVAILABLE = (8, False)
    REPLICA_NOT_AVAILABLE = (9, True)
    MESSAGE_TOO_LARGE = (10, False)
    STALE_CONTROLLER_EPOCH = (11, False)
    OFFSET_METADATA_TOO_LARGE = (12, False)
    NETWORK_EXCEPTION = (13, True)
    COORDINATOR_LOAD_IN_PROGRESS = (14, True)
    COORDINATOR_NOT_AVAILABLE = (15, True)
    NOT_COORDINATOR = (16, True)
    INVALID_TOPIC_EXCEPTION = (17, False)
    RECORD_LIST_TOO_LARGE = (18, False)
    NOT_ENOUGH_REPLICAS = (19, True)
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True)
    INVALID_REQUIRED_ACKS = (21, False)
    ILLEGAL_GENERATION = (22, False)
    INCONSISTENT_GROUP_PROTOCOL = (23, False)
    INVALID_GROUP_ID = (24, False)
    UNKNOWN_MEMBER_ID = (25, False)
    INVALID_SESSION_TIMEOUT = (26, False)
    REBALANCE_IN_PROGRESS = (27, False)
    INVALID_COMMIT_OFFSET_SIZE = (28, False)
    TOPIC_AUTHORIZATION_FAILED = (29, False)
    GROUP_AUTHORIZATION_FAILED = (30, False)
    CLUSTER_AUTHORIZATION_FAILED = (31, False)
    INVALID_TIMESTAMP = (32, False)
    UNSUPPORTED_SASL_MECHANISM = (33, False)
    ILLEGAL_SASL_STATE = (34, False)
    UNSUPPORTED_VERSION = (35, False)
    TOPIC_ALREADY_EXISTS = (36, False)
    INVALID_PARTITIONS = (37, False)
    INVALID_REPLICATION_FACTOR = (38, False)
    INVALID_REPLICA_ASSIGNMENT = (39, False)
    INVALID_CONFIG = (40, False)
    NOT_CONTROLLER = (41, True)
    INVALID_REQUEST = (42, False)
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False)
    POLICY_VIOLATION = (44, False)
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False)
    DUPLICATE_SEQUENCE_NUMBER = (46, False)
    INVALID_PRODUCER_EPOCH = (47, False)
    INVALID_TXN_STATE = (48, False)
    INVALID_PRODUCER_ID_MAPPING = (49, False)
    INVALID_TRANSACTION_TIMEOUT = (50, False)
    CONCURRENT_TRANSACTIONS = (51, True)
    KAFKA_STORAGE_ERROR = (56, True)
    LOG_DIR_NOT_FOUND = (57, False)
    UNKNOWN_PRODUCER_ID = (59, False)
    REASSIGNMENT_IN_PROGRESS = (60, False)
    NON_EMPTY_GROUP = (68, False)
    GROUP_ID_NOT_FOUND = (69, False)
    FETCH_SESSION_ID_NOT_FOUND = (70, True)
    INVALID_FETCH_SESSION_EPOCH = (71, True)
    LISTENER_NOT_FOUND = (72, True)
    TOPIC_DELETION_DISABLED = (73, False)
    FENCED_LEADER_EPOCH = (74, True)
    UNKNOWN_LEADER_EPOCH = (75, True)
    UNSUPPORTED_COMPRESSION_TYPE = (76, False)
    STALE_BROKER_EPOCH = (77, False)
    OFFSET_NOT_AVAILABLE = (78, True)
    MEMBER_ID_REQUIRED = (79, False)
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True)
    GROUP_MAX_SIZE_REACHED = (81, False)
    FENCED_INSTANCE_ID = (82, False)
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True)
    ELECTION_NOT_NEEDED = (84, True)
    UNSTABLE_OFFSET_COMMIT = (88, True)
    INVALID_RECORD = (87, False)

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """The member for ``code``; unknown numbers map to UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class ProtocolError(Exception):
    """Bytes that do not decode: the codec's one exception type.

    ``offset`` is the byte position (within the buffer being decoded) where
    decoding went wrong, so tools can point a caret at it; ``expected`` says
    what the decoder wanted to find there.
    """

    def __init__(self, message: str, offset: int | None = None, expected: str | None = None):
        super().__init__(message)
        self.offset = offset
        self.expected = expected


class CorruptBatchError(ProtocolError):
    """A record batch that fails validation; ``error_code`` is what a broker answers."""

    def __init__(
        self,
        message: str,
        error_code: ErrorCode = ErrorCode.CORRUPT_MESSAGE,
        offset: int | None = None,
        expected: str | None = None,
    ):
        super().__init__(message, offset, expected)
        self.error_code = error_code
