"""The exceptions the storage layer raises: the storage branch of the one error family.

Each is a ``simplekafka.protocol.errors.KafkaError`` carrying the error code a
broker answers, so the broker's handlers need no translation table.
"""

from __future__ import annotations

from simplekafka.protocol import errors
from simplekafka.protocol.errors import ErrorCode, KafkaError


class StorageError(KafkaError):
    """Something went wrong on disk or with the log's state; ``error_code`` is the wire answer."""

    error_code: ErrorCode = ErrorCode.KAFKA_STORAGE_ERROR

    def __init__(self, message: str, error_code: ErrorCode | None = None):
        super().__init__(message, error_code=error_code)


class OffsetOutOfRangeError(StorageError, errors.OffsetOutOfRangeError):
    """A read asked for an offset below the log start or above the log end."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int):
        super().__init__(
            f"offset {offset} is out of range: the log holds "
            f"[{log_start_offset}, {log_end_offset}) (reading at {log_end_offset} gives nothing)"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLargeError(StorageError):
    """A batch bigger than ``max.message.bytes`` or than a whole segment."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class UnexpectedAppendOffsetError(StorageError):
    """A follower's batches do not start at our log end offset (or skip offsets)."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InconsistentTopicIdError(StorageError):
    """A log's ``partition.metadata`` names another topic ID than the one it is asked to be
    (KIP-516): the directory holds an earlier topic of the same name, and is not used."""

    error_code = ErrorCode.INCONSISTENT_TOPIC_ID


class CheckpointError(StorageError):
    """A checkpoint file that does not parse; the message names the file and the line."""


class LogConfigError(ValueError):
    """A configuration value that is out of range or not a number."""


class DescriptorsExhaustedError(StorageError):
    """No descriptor left for a partition's files (the open-files limit, RLIMIT_NOFILE)."""

    def __init__(self, what: str, limit: int, reserve: int | None = None):
        kept = f", the last {reserve} kept for ZooKeeper and clients" if reserve else ""
        super().__init__(
            f"{what}: out of file descriptors (open-files limit {limit}{kept}); "
            f"raise the limit (ulimit -n) or hold fewer partitions on this broker")
        self.limit = limit


class RecordValidationError(StorageError):
    """Records of a batch that the log refuses one by one (KIP-467): ``record_errors``
    holds (index of the record in its batch, why); the whole batch is refused."""

    def __init__(self, message: str, error_code: ErrorCode,
                 record_errors: list[tuple[int, str]]):
        super().__init__(message, error_code=error_code)
        self.record_errors = record_errors
