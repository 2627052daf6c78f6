"""The client's errors: Kafka's named errors, plus the client's own failures.

The broker answers with numbers; users deserve names. Every ``ErrorCode`` has
a class (``NOT_LEADER_OR_FOLLOWER`` -> ``NotLeaderOrFollowerError``) in the one
error family of ``simplekafka.protocol.errors``, re-exported here so that
client code imports its errors from one place. The client's own failures
(timeouts, lost connections) are ``KafkaError``s without an error code.
``retriable`` tells the retry loops whether trying again (usually after a
metadata refresh) can help.
"""

from __future__ import annotations

from simplekafka.protocol.errors import *  # noqa: F403  (every named error class)
from simplekafka.protocol.errors import (
    ERROR_CLASSES,
    ErrorCode,
    KafkaError,
    error_class,
    error_for,
    raise_for,
)


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


def needs_metadata_refresh(error: BaseException) -> bool:
    """True when ``error`` means the cached leaders or topics may be out of date."""
    if isinstance(error, KafkaConnectionError):
        return True
    code = getattr(error, "error_code", None)
    return code in METADATA_REFRESH_CODES


__all__ = [
    "ERROR_CLASSES",
    "METADATA_REFRESH_CODES",
    "BufferExhaustedError",
    "ClientClosedError",
    "ErrorCode",
    "IncompatibleBrokerError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "NoBrokersAvailableError",
    "SerializationError",
    "error_class",
    "error_for",
    "needs_metadata_refresh",
    "raise_for",
    *(cls.__name__ for cls in ERROR_CLASSES.values()),
]
