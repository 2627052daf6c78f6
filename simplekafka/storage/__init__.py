"""Stage 3: the log on disk: segments, memory-mapped sparse indexes, recovery, retention.

A partition is a directory of segments; each segment a ``.log`` file of record
batches (as received, with offsets assigned) and two sparse indexes. The layout,
the file names and the checkpoint formats are Kafka's, so the two can be
compared on disk. Only :mod:`simplekafka.protocol` is used below this layer.
"""

from simplekafka.storage.config import LogConfig
from simplekafka.storage.epochs import EpochEntry, LeaderEpochCache
from simplekafka.storage.errors import (
    CheckpointError,
    DescriptorsExhaustedError,
    InconsistentTopicIdError,
    LogConfigError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from simplekafka.storage.index import OffsetIndex, TimeIndex
from simplekafka.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    AppendInfo,
    Log,
    TimestampOffset,
)
from simplekafka.storage.manager import CLEAN_SHUTDOWN_MARKER, LogManager
from simplekafka.storage.region import FileRegion, TruncatedRegionError
from simplekafka.storage.segment import LogSegment
from simplekafka.storage.txn_index import AbortedTxn, TransactionIndex

__all__ = [
    "CLEAN_SHUTDOWN_MARKER",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "AbortedTxn",
    "AppendInfo",
    "CheckpointError",
    "DescriptorsExhaustedError",
    "EpochEntry",
    "FileRegion",
    "InconsistentTopicIdError",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogConfigError",
    "LogManager",
    "LogSegment",
    "OffsetIndex",
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "StorageError",
    "TimeIndex",
    "TimestampOffset",
    "TransactionIndex",
    "TruncatedRegionError",
    "UnexpectedAppendOffsetError",
]
