"""Kafka error codes, and the one family of exceptions that carries them.

Error codes are the numbers on the wire; the broker answers with them and the
client turns them back into exceptions named after them. ``retriable`` follows
the Java client's classification: a client may retry these after a metadata or
coordinator refresh.

Every exception any layer raises for a Kafka error is a ``KafkaError`` and
exposes ``error_code`` (the ``ErrorCode`` a broker answers, or ``None`` for a
client-side failure such as a timeout). The codec's ``ProtocolError``, the
storage layer's ``StorageError``, the broker's refusals and the client's named
errors are branches of this one tree, so a handler catches ``KafkaError`` and
answers ``exc.error_code``, whatever layer raised it.
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
    TRANSACTION_COORDINATOR_FENCED = (52, False)
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False)
    SECURITY_DISABLED = (54, False)
    OPERATION_NOT_ATTEMPTED = (55, False)
    KAFKA_STORAGE_ERROR = (56, True)
    LOG_DIR_NOT_FOUND = (57, False)
    SASL_AUTHENTICATION_FAILED = (58, False)
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
    NO_REASSIGNMENT_IN_PROGRESS = (85, False)
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False)
    UNSTABLE_OFFSET_COMMIT = (88, True)
    INVALID_RECORD = (87, False)
    PRODUCER_FENCED = (90, False)
    RESOURCE_NOT_FOUND = (91, False)
    DUPLICATE_RESOURCE = (92, False)
    UNACCEPTABLE_CREDENTIAL = (93, False)
    UNKNOWN_TOPIC_ID = (100, True)
    INCONSISTENT_TOPIC_ID = (103, True)
    TRANSACTIONAL_ID_NOT_FOUND = (105, False)
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True)
    MISMATCHED_ENDPOINT_TYPE = (114, False)
    UNSUPPORTED_ENDPOINT_TYPE = (115, False)
    TRANSACTION_ABORTABLE = (120, False)  # KIP-890: abort and go on (not a fatal error)

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """The member for ``code``; unknown numbers map to UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class KafkaError(Exception):
    """Base of every error that stands for a Kafka error code.

    ``error_code`` is a class attribute on the named subclasses and may be
    given per instance; ``reason`` is the detail as given (without the code's
    name), what a broker puts in a response's ``error_message``.
    """

    error_code: ErrorCode | None = None
    retriable: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        error_code: int | None = None,
        retriable: bool | None = None,
    ) -> None:
        if error_code is not None:
            self.error_code = ErrorCode.of(error_code)
            self.retriable = self.error_code.retriable
        if retriable is not None:
            self.retriable = retriable
        self.reason = message
        super().__init__(message or self.default_message())

    def default_message(self) -> str:
        """``NAME (number)`` of the error code, or the class name when there is none."""
        return type(self).__name__ if self.error_code is None else code_text(self.error_code)


def code_text(code: ErrorCode) -> str:
    """How an error code is shown to people: ``NOT_LEADER_OR_FOLLOWER (6)``."""
    return f"{code.name} ({int(code)})"


class ProtocolError(KafkaError):
    """Bytes that do not decode: the codec's one exception type.

    ``offset`` is the byte position (within the buffer being decoded) where
    decoding went wrong, so tools can point a caret at it; ``expected`` says
    what the decoder wanted to find there. A broker answers INVALID_REQUEST.
    """

    error_code = ErrorCode.INVALID_REQUEST

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


# -- one class per error code, named after it ------------------------------------------
# Declared here for the codes that code refers to by name (readers and type checkers
# see them); every other code gets a generated class of the same shape below.


class UnknownServerError(KafkaError):
    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(KafkaError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptMessageError(KafkaError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(KafkaError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class LeaderNotAvailableError(KafkaError):
    error_code = ErrorCode.LEADER_NOT_AVAILABLE


class NotLeaderOrFollowerError(KafkaError):
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(KafkaError):
    error_code = ErrorCode.REQUEST_TIMED_OUT


class MessageTooLargeError(KafkaError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidTopicError(KafkaError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class NotEnoughReplicasError(KafkaError):
    error_code = ErrorCode.NOT_ENOUGH_REPLICAS


class UnsupportedVersionError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_VERSION


class TopicAlreadyExistsError(KafkaError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class NotControllerError(KafkaError):
    error_code = ErrorCode.NOT_CONTROLLER


class InvalidRequestError(KafkaError):
    error_code = ErrorCode.INVALID_REQUEST


class PolicyViolationError(KafkaError):
    error_code = ErrorCode.POLICY_VIOLATION


class InvalidConfigError(KafkaError):
    error_code = ErrorCode.INVALID_CONFIG


class InvalidPartitionsError(KafkaError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class NonEmptyGroupError(KafkaError):
    error_code = ErrorCode.NON_EMPTY_GROUP


class GroupIdNotFoundError(KafkaError):
    error_code = ErrorCode.GROUP_ID_NOT_FOUND


class SecurityDisabledError(KafkaError):
    error_code = ErrorCode.SECURITY_DISABLED


class DuplicateResourceError(KafkaError):
    error_code = ErrorCode.DUPLICATE_RESOURCE


class ResourceNotFoundError(KafkaError):
    error_code = ErrorCode.RESOURCE_NOT_FOUND


class ElectionNotNeededError(KafkaError):
    error_code = ErrorCode.ELECTION_NOT_NEEDED


class UnsupportedSaslMechanismError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class UnacceptableCredentialError(KafkaError):
    error_code = ErrorCode.UNACCEPTABLE_CREDENTIAL


class NoReassignmentInProgressError(KafkaError):
    error_code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def error_class_name(code: ErrorCode) -> str:
    """``NOT_LEADER_OR_FOLLOWER`` -> ``NotLeaderOrFollowerError`` (never ``...ErrorError``)."""
    words = code.name.lower().split("_")
    name = "".join(word.capitalize() for word in words)
    for suffix in ("Exception", "Error"):
        name = name.removesuffix(suffix)
    return name + "Error"


def _error_classes() -> dict[ErrorCode, type[KafkaError]]:
    declared = {cls.error_code: cls for cls in KafkaError.__subclasses__()
                if cls.__module__ == __name__ and cls.__name__ != "ProtocolError"}
    classes: dict[ErrorCode, type[KafkaError]] = {}
    for code in ErrorCode:
        if code is ErrorCode.NONE:
            continue
        cls = declared.get(code)
        if cls is None:
            cls = type(error_class_name(code), (KafkaError,), {
                "__module__": __name__, "error_code": code, "retriable": code.retriable})
        assert cls.__name__ == error_class_name(code)
        cls.retriable = code.retriable
        cls.__doc__ = f"Kafka error {code.name} ({int(code)})."
        classes[code] = cls
    return classes


ERROR_CLASSES: dict[ErrorCode, type[KafkaError]] = _error_classes()
"""The named exception class of every error code but NONE."""
globals().update({cls.__name__: cls for cls in ERROR_CLASSES.values()})


def error_class(code: int) -> type[KafkaError]:
    """The exception class named after error ``code``."""
    return ERROR_CLASSES[ErrorCode.of(code)]


def error_for(code: int, message: str | None = None) -> KafkaError:
    """The named exception for error ``code``; its text is ``NAME (n): message``."""
    cls = error_class(code)
    text = code_text(ErrorCode.of(code))
    error = cls(f"{text}: {message}" if message else text)
    error.reason = message or ""
    return error


def raise_for(code: int, message: str | None = None) -> None:
    """Raise the named exception unless ``code`` is 0 (NONE)."""
    if code:
        raise error_for(code, message)


__all__ = [
    "ERROR_CLASSES",
    "CorruptBatchError",
    "CorruptMessageError",
    "DuplicateResourceError",
    "ElectionNotNeededError",
    "ErrorCode",
    "GroupIdNotFoundError",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidTopicError",
    "KafkaError",
    "LeaderNotAvailableError",
    "MessageTooLargeError",
    "NoReassignmentInProgressError",
    "NonEmptyGroupError",
    "NotControllerError",
    "NotEnoughReplicasError",
    "NotLeaderOrFollowerError",
    "OffsetOutOfRangeError",
    "PolicyViolationError",
    "ProtocolError",
    "RequestTimedOutError",
    "ResourceNotFoundError",
    "SecurityDisabledError",
    "TopicAlreadyExistsError",
    "UnacceptableCredentialError",
    "UnknownServerError",
    "UnknownTopicOrPartitionError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "code_text",
    "error_class",
    "error_class_name",
    "error_for",
    "raise_for",
]
# The generated classes too (a type checker sees only the declared ones above).
__all__ += [cls.__name__ for cls in ERROR_CLASSES.values() if cls.__name__ not in __all__]
