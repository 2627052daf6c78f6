"""Exceptions named after Kafka's error codes, plus the client's own failures.

The broker answers with numbers; users deserve names. Every ``ErrorCode`` gets
a class (``NOT_LEADER_OR_FOLLOWER`` -> ``NotLeaderOrFollowerError``) generated
from the enum, so the two can never drift apart. ``retriable`` tells the retry
loops whether trying again (usually after a metadata refresh) can help.
"""

from __future__ import annotations

from simplekafka.protocol.errors import ErrorCode


class KafkaError(Exception):
    """Base of every error the client raises; ``retriable`` says whether a retry may help."""

    error_code: ErrorCode | None = None
    retriable: bool = False

    def __init__(self, message: str = "", *, retriable: bool | None = None) -> None:
        super().__init__(message or self.default_message())
        if retriable is not None:
            self.retriable = retriable

    @classmethod
    def default_message(cls) -> str:
        if cls.error_code is None:
            return cls.__name__
        return f"{cls.error_code.name} ({int(cls.error_code)})"


class KafkaTimeoutError(KafkaError):
    """An operation did not finish before its deadline."""

    retriable = True


class KafkaConnectionError(KafkaError):
    """A broker connection failed or was lost."""

    retriable = True


class NoBrokersAvailableError(KafkaConnectionError):
    """None of the bootstrap servers (or known brokers) answered."""

    retriable = False


class IncompatibleBrokerError(KafkaError):
    """The broker does not support a version of an API the client needs."""


class SerializationError(KafkaError):
    """A key or value could not be turned into bytes (or back)."""


class BufferExhaustedError(KafkaTimeoutError):
    """The producer's buffer stayed full for longer than ``max_block_ms``."""


class ClientClosedError(KafkaError):
    """The client, producer or consumer was used after ``close()``."""


def _class_name(code: ErrorCode) -> str:
    words = code.name.lower().split("_")
    name = "".join(word.capitalize() for word in words)
    if name.endswith("Exception"):
        name = name[: -len("Exception")]
    return name + "Error"


def _make_error_classes() -> dict[ErrorCode, type[KafkaError]]:
    classes: dict[ErrorCode, type[KafkaError]] = {}
    for code in ErrorCode:
        if code is ErrorCode.NONE:
            continue
        cls = type(
            _class_name(code),
            (KafkaError,),
            {
                "error_code": code,
                "retriable": code.retriable,
                "__doc__": f"Kafka error {code.name} ({int(code)}).",
                "__module__": __name__,
            },
        )
        classes[code] = cls
    return classes


ERROR_CLASSES: dict[ErrorCode, type[KafkaError]] = _make_error_classes()
globals().update({cls.__name__: cls for cls in ERROR_CLASSES.values()})

# Names that code below (and users) refer to directly; the globals() update above
# defines them, these assignments make them visible to linters and readers.
UnknownServerError: type[KafkaError] = ERROR_CLASSES[ErrorCode.UNKNOWN_SERVER_ERROR]
OffsetOutOfRangeError: type[KafkaError] = ERROR_CLASSES[ErrorCode.OFFSET_OUT_OF_RANGE]
CorruptMessageError: type[KafkaError] = ERROR_CLASSES[ErrorCode.CORRUPT_MESSAGE]
UnknownTopicOrPartitionError: type[KafkaError] = ERROR_CLASSES[
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
]
LeaderNotAvailableError: type[KafkaError] = ERROR_CLASSES[ErrorCode.LEADER_NOT_AVAILABLE]
NotLeaderOrFollowerError: type[KafkaError] = ERROR_CLASSES[ErrorCode.NOT_LEADER_OR_FOLLOWER]
RequestTimedOutError: type[KafkaError] = ERROR_CLASSES[ErrorCode.REQUEST_TIMED_OUT]
MessageTooLargeError: type[KafkaError] = ERROR_CLASSES[ErrorCode.MESSAGE_TOO_LARGE]
InvalidTopicError: type[KafkaError] = ERROR_CLASSES[ErrorCode.INVALID_TOPIC_EXCEPTION]
UnsupportedVersionError: type[KafkaError] = ERROR_CLASSES[ErrorCode.UNSUPPORTED_VERSION]
TopicAlreadyExistsError: type[KafkaError] = ERROR_CLASSES[ErrorCode.TOPIC_ALREADY_EXISTS]
NotControllerError: type[KafkaError] = ERROR_CLASSES[ErrorCode.NOT_CONTROLLER]

# Errors after which the cached metadata is probably wrong.
METADATA_REFRESH_CODES = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


def error_class(code: int) -> type[KafkaError]:
    """The exception class named after error ``code``."""
    return ERROR_CLASSES[ErrorCode.of(code)]


def error_for(code: int, message: str | None = None) -> KafkaError:
    """An exception instance for error ``code``, with the broker's message if it sent one."""
    cls = error_class(code)
    text = cls.default_message()
    if message:
        text = f"{text}: {message}"
    return cls(text)


def raise_for(code: int, message: str | None = None) -> None:
    """Raise the named exception unless ``code`` is 0 (NONE)."""
    if code:
        raise error_for(code, message)


def needs_metadata_refresh(error: BaseException) -> bool:
    """True when ``error`` means the cached leaders or topics may be out of date."""
    if isinstance(error, KafkaConnectionError):
        return True
    code = getattr(error, "error_code", None)
    return code in METADATA_REFRESH_CODES
