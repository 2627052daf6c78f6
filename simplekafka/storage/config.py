"""How a log is cut into segments, indexed, flushed and trimmed: Kafka's per-topic settings.

Field names are Kafka's topic config names in snake_case (``segment.bytes`` is
``segment_bytes``). The defaults are Kafka's defaults. ``from_kafka`` reads
either the topic-level names (``segment.bytes``) or the broker-level ones
(``log.segment.bytes``, ``log.retention.hours``...), so a broker can build one
LogConfig from its server.properties and override it per topic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simplekafka.storage.errors import LogConfigError

MIB = 1024 * 1024
HOUR_MS = 60 * 60 * 1000
DAY_MS = 24 * HOUR_MS

# Smallest index file that still holds one entry of each index type.
_MIN_INDEX_BYTES = 12


@dataclass(frozen=True)
class LogConfig:
    """Per-log settings; -1 in retention_ms / retention_bytes means "no limit"."""

    segment_bytes: int = 1024 * MIB
    segment_ms: int = 7 * DAY_MS
    index_interval_bytes: int = 4096
    max_index_size: int = 10 * MIB
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    flush_messages: int | None = None
    flush_ms: int | None = None
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = "CreateTime"
    # Compaction (cleaner.py): "delete", "compact" or "compact,delete".
    cleanup_policy: str = "delete"
    delete_retention_ms: int = DAY_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    # How far a CreateTime record's timestamp may be from the broker's clock (KIP-467 errors).
    message_timestamp_difference_max_ms: int = (1 << 63) - 1
    # Accepted, validated and described as Kafka does, but not acted on (docs/api/broker.md):
    # the cleaner does not force compaction of logs dirty longer than this, ...
    max_compaction_lag_ms: int = (1 << 63) - 1
    # ... segments roll at segment.ms without a random jitter, ...
    segment_jitter_ms: int = 0
    # ... and there is no down-conversion to turn off (fetchers get record batch v2).
    message_downconversion_enable: bool = True

    def __post_init__(self) -> None:
        policies = {part.strip() for part in self.cleanup_policy.split(",")}
        if not policies or not policies <= {"delete", "compact"}:
            raise LogConfigError(
                f"cleanup.policy must be delete, compact or both, got {self.cleanup_policy!r}")
        object.__setattr__(self, "cleanup_policy", ",".join(sorted(policies)))
        ratio = self.min_cleanable_dirty_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise LogConfigError(
                f"min.cleanable.dirty.ratio must be between 0 and 1, got {ratio!r}")
        _at_least("delete_retention_ms", self.delete_retention_ms, 0)
        _at_least("min_compaction_lag_ms", self.min_compaction_lag_ms, 0)
        _at_least("max_compaction_lag_ms", self.max_compaction_lag_ms, 1)
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise LogConfigError(
                f"conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})")
        _at_least("segment_jitter_ms", self.segment_jitter_ms, 0)
        if not isinstance(self.message_downconversion_enable, bool):
            raise LogConfigError("message.downconversion.enable must be true or false, "
                                 f"got {self.message_downconversion_enable!r}")
        _at_least("message_timestamp_difference_max_ms",
                  self.message_timestamp_difference_max_ms, 0)
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise LogConfigError(
                f"message.timestamp.type must be CreateTime or LogAppendTime, "
                f"got {self.message_timestamp_type!r}")
        _at_least("segment_bytes", self.segment_bytes, 61)
        _at_least("segment_ms", self.segment_ms, 1)
        _at_least("index_interval_bytes", self.index_interval_bytes, 0)
        _at_least("max_index_size", self.max_index_size, _MIN_INDEX_BYTES)
        _at_least("retention_ms", self.retention_ms, -1)
        _at_least("retention_bytes", self.retention_bytes, -1)
        _at_least("max_message_bytes", self.max_message_bytes, 0)
        if self.flush_messages is not None:
            _at_least("flush_messages", self.flush_messages, 1)
        if self.flush_ms is not None:
            _at_least("flush_ms", self.flush_ms, 0)

    # Any: passed through to dataclasses.replace, which mypy checks field by field.
    def replace(self, **changes: Any) -> LogConfig:
        """A copy with some fields changed (validated like the original)."""
        return dataclasses.replace(self, **changes)

    @property
    def compact(self) -> bool:
        """True when the log cleaner keeps only the last record per key."""
        return "compact" in self.cleanup_policy

    @property
    def deletes(self) -> bool:
        """True when retention deletes old segments (``delete`` in cleanup.policy)."""
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps each batch with its append time."""
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_kafka(cls, settings: Mapping[str, object], base: LogConfig | None = None) -> LogConfig:
        """Build from Kafka-style keys (values may be strings); keys about other things are ignored.

        Topic-level names win over broker-level ones; among broker-level
        retention and roll settings, ``.ms`` wins over ``.minutes`` over
        ``.hours`` as in Kafka. ``base`` gives the values of keys not present.
        """
        changes: dict[str, Any] = {}  # field name -> value of that field's type
        for field, keys in _KAFKA_KEYS.items():
            for key, scale in keys:
                if key in settings:
                    changes[field] = _number(key, settings[key]) * scale
                    break
        for key in ("message.timestamp.type", "log.message.timestamp.type"):
            if settings.get(key) is not None:
                changes["message_timestamp_type"] = str(settings[key]).strip()
                break
        for key in ("cleanup.policy", "log.cleanup.policy"):
            if settings.get(key) is not None:
                value = settings[key]
                if isinstance(value, (list, tuple)):
                    value = ",".join(str(v) for v in value)
                changes["cleanup_policy"] = str(value).strip().strip("[]")
                break
        for key in ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"):
            if settings.get(key) is not None:
                try:
                    changes["min_cleanable_dirty_ratio"] = float(str(settings[key]).strip())
                except ValueError:
                    raise LogConfigError(
                        f"{key} must be a number, got {settings[key]!r}") from None
                break
        for key in ("message.downconversion.enable", "log.message.downconversion.enable"):
            if settings.get(key) is not None:
                value = settings[key]
                text = str(value).strip().lower() if not isinstance(value, bool) else value
                if text not in ("true", "false", True, False):
                    raise LogConfigError(f"{key} must be true or false, got {value!r}")
                changes["message_downconversion_enable"] = text in ("true", True)
                break
        for field in ("flush_messages", "flush_ms"):
            value = changes.get(field)
            if value is not None and value >= _KAFKA_LONG_MAX:
                changes[field] = None  # Kafka's "never" default
        try:
            return dataclasses.replace(base or cls(), **changes)
        except TypeError as exc:  # pragma: no cover - fields are fixed above
            raise LogConfigError(str(exc)) from exc


_KAFKA_LONG_MAX = (1 << 63) - 1
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# field -> [(kafka key, multiplier to our unit)], first present key wins.
_KAFKA_KEYS: dict[str, list[tuple[str, int]]] = {
    "segment_bytes": [("segment.bytes", 1), ("log.segment.bytes", 1)],
    "segment_ms": [("segment.ms", 1), ("log.roll.ms", 1), ("log.roll.hours", HOUR_MS)],
    "index_interval_bytes": [("index.interval.bytes", 1), ("log.index.interval.bytes", 1)],
    "max_index_size": [("segment.index.bytes", 1), ("log.index.size.max.bytes", 1)],
    "retention_ms": [
        ("retention.ms", 1),
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60 * 1000),
        ("log.retention.hours", HOUR_MS),
    ],
    "retention_bytes": [("retention.bytes", 1), ("log.retention.bytes", 1)],
    "flush_messages": [("flush.messages", 1), ("log.flush.interval.messages", 1)],
    "flush_ms": [("flush.ms", 1), ("log.flush.interval.ms", 1)],
    "max_message_bytes": [("max.message.bytes", 1), ("message.max.bytes", 1)],
    "delete_retention_ms": [("delete.retention.ms", 1), ("log.cleaner.delete.retention.ms", 1)],
    "min_compaction_lag_ms": [("min.compaction.lag.ms", 1),
                              ("log.cleaner.min.compaction.lag.ms", 1)],
    "message_timestamp_difference_max_ms": [
        ("message.timestamp.difference.max.ms", 1),
        ("log.message.timestamp.difference.max.ms", 1)],
    "max_compaction_lag_ms": [("max.compaction.lag.ms", 1),
                              ("log.cleaner.max.compaction.lag.ms", 1)],
    "segment_jitter_ms": [("segment.jitter.ms", 1), ("log.roll.jitter.ms", 1),
                          ("log.roll.jitter.hours", HOUR_MS)],
}


def _number(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise LogConfigError(f"{key} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise LogConfigError(f"{key} must be an integer, got {value!r}") from None


def _at_least(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LogConfigError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise LogConfigError(f"{name} must be at least {minimum}, got {value}")
