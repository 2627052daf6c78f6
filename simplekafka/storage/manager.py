"""All the partitions of a broker, spread over one or more log directories.

Per log directory, like Kafka::

    <log dir>/
        .kafka_cleanshutdown                only while the broker is stopped cleanly
        replication-offset-checkpoint       high watermarks
        recovery-point-offset-checkpoint    offsets known to be fsynced
        log-start-offset-checkpoint         log start offsets
        cleaner-offset-checkpoint           where each compacted log's dirty part begins
        orders-0/                           one directory per partition
        orders-1/
        orders-2.<32 hex>-future/           a replica moving here (AlterReplicaLogDirs)

A replica moves between log directories as Kafka moves it: a *future* log is
made in the target directory, catches up with the current one (the broker's
``LogDirMover`` copies its batches), then takes its place in one step
(``replace_current_with_future``: the current directory is renamed
``<t>-<p>.<hex>-delete`` and removed, the future one renamed ``<t>-<p>``). A
restart finds a future log where it was left: beside its current log it goes on
catching up; alone (the swap was cut between its two renames, so it was
complete) it becomes the current log.

On start the marker decides how much to trust: with it, files are taken as
they are; without it (a crash), each log re-validates everything after its
recovery point. The marker is deleted once the logs are loaded and written
again by a clean ``close``.
"""

from __future__ import annotations

import logging
import re
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from simplekafka.storage.checkpoints import (
    TopicPartition,
    fsync_directory,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from simplekafka.storage.cleaner import Cleaner, CleanerManager, CleanResult, clean_once
from simplekafka.storage.config import LogConfig
from simplekafka.storage.descriptors import DescriptorBudget, is_exhausted
from simplekafka.storage.errors import CheckpointError, DescriptorsExhaustedError, StorageError
from simplekafka.storage.log import Log, parse_partition_dir, wall_clock_ms

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
FUTURE_SUFFIX = "-future"
DELETE_SUFFIX = "-delete"
# Kafka's names for a log being moved or deleted: <topic>-<partition>.<uuid hex><suffix>
_MARKED_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)\.[0-9a-f]{32}(?P<suffix>-future|-delete)$")


def marked_dir_name(topic: str, partition: int, suffix: str) -> str:
    """``orders-0.<32 hex>-future`` (or ``-delete``): Kafka's name for a moving or dying log."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{suffix}"


def parse_marked_dir(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, suffix)`` of a future or deleted log's directory name, else None."""
    match = _MARKED_DIR.match(name)
    return (match["topic"], int(match["partition"]), match["suffix"]) if match else None


class LogManager:
    """Opens, creates, finds and deletes partition logs; keeps the per-directory checkpoints."""

    def __init__(self, log_dirs: list[Path], config: LogConfig | None = None,
                 clock_ms: Callable[[], int] = wall_clock_ms):
        if not log_dirs:
            raise StorageError("at least one log directory is needed")
        self.log_dirs = [Path(directory) for directory in log_dirs]
        self.config = config or LogConfig()
        self._clock_ms = clock_ms
        self._logs: dict[TopicPartition, Log] = {}
        # Replicas moving to another log directory (AlterReplicaLogDirs): their future logs.
        self._futures: dict[TopicPartition, Log] = {}
        # Where a replica not created yet is to be created (an AlterReplicaLogDirs before
        # its LeaderAndIsr, as Kafka's preferredLogDirs); forgotten once it is created.
        self._preferred_dirs: dict[TopicPartition, Path] = {}
        self.descriptors = DescriptorBudget()  # new logs stop short of the open-files limit
        self.background: Callable[[Callable[[], None]], None] | None = None
        self.recovered_unclean = False
        # What each offset checkpoint file last got: an unchanged one is not written again
        # (three files of 10,000 lines with two fsyncs each, every 5 s, on an idle broker).
        self._checkpointed: dict[Path, dict[TopicPartition, int]] = {}
        for directory in self.log_dirs:
            try:
                directory.mkdir(parents=True, exist_ok=True)
                self._load_dir(directory)
            except OSError as exc:
                raise StorageError(f"cannot use log directory {directory}: {exc}") from exc
        for key in [key for key in self._futures if key not in self._logs]:
            self._promote_orphan_future(key)
        self.cleaner_manager = CleanerManager(self.log_dirs)

    def _load_dir(self, directory: Path) -> None:
        marker = directory / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        self.recovered_unclean |= not clean
        recovery_points = _read_or_warn(directory / RECOVERY_POINT_CHECKPOINT)
        log_starts = _read_or_warn(directory / LOG_START_CHECKPOINT)
        for child in sorted(directory.iterdir()):
            if child.is_dir() and self._load_marked(child, clean):
                continue
            topic_partition = parse_partition_dir(child.name) if child.is_dir() else None
            if topic_partition is None or child.name.endswith(DELETE_SUFFIX):
                continue
            if topic_partition in self._logs:
                raise StorageError(
                    f"partition {topic_partition} is in two log directories: "
                    f"{self._logs[topic_partition].directory} and {child}")
            self._logs[topic_partition] = Log.open(
                child,
                self.config,
                clean_shutdown=clean,
                recovery_point=recovery_points.get(topic_partition),
                log_start_offset=log_starts.get(topic_partition),
                clock_ms=self._clock_ms,
            )
        marker.unlink(missing_ok=True)

    def _load_marked(self, child: Path, clean: bool) -> bool:
        """Load a future log, remove a deleted one; False for any other directory."""
        marked = parse_marked_dir(child.name)
        if marked is None:
            return False
        topic, partition, suffix = marked
        if suffix == DELETE_SUFFIX:  # renamed away by a swap or a delete the process outlived
            shutil.rmtree(child, ignore_errors=True)
            return True
        if (topic, partition) in self._futures:
            raise StorageError(f"partition {topic}-{partition} has two future logs: "
                               f"{self._futures[(topic, partition)].directory} and {child}")
        self._futures[(topic, partition)] = Log.open(child, self.config, clean_shutdown=clean,
                                                     clock_ms=self._clock_ms)
        return True

    def _promote_orphan_future(self, key: TopicPartition) -> None:
        """A future log with no current one: the swap renamed the current log away and
        stopped before renaming this one (the future was complete by then): finish it."""
        future = self._futures.pop(key)
        target = future.directory.parent / f"{key[0]}-{key[1]}"
        future.close()
        future.directory.rename(target)
        fsync_directory(target.parent)
        logger.warning("%s-%d: finished moving to %s (a restart cut the swap short)",
                       key[0], key[1], target.parent)
        self._logs[key] = Log.open(target, self.config, clean_shutdown=True,
                                   clock_ms=self._clock_ms)

    def use_background(self, background: Callable[[Callable[[], None]], None]) -> None:
        """Run rolled segments' fsyncs through ``background`` (see ``Log.background``)."""
        self.background = background
        for log in self._logs.values():
            log.background = background

    # -- partitions ----------------------------------------------------------------
    def get(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the least loaded log directory if new."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            if config is not None:
                existing.update_config(config)
            return existing
        _check_topic(topic, partition)
        self.descriptors.check(f"{topic}-{partition}")
        directory = self._preferred_dirs.pop((topic, partition), None) or (
            self.log_dirs[0] if len(self.log_dirs) == 1 else self._least_loaded_dir())
        try:
            log = Log.open(directory / f"{topic}-{partition}", config or self.config,
                           clean_shutdown=True, clock_ms=self._clock_ms)
        except (OSError, StorageError) as exc:
            if is_exhausted(exc) or is_exhausted(exc.__cause__):
                raise DescriptorsExhaustedError(f"{topic}-{partition}",
                                                DescriptorBudget.limit()) from exc
            raise
        log.directory_sync_needed = True  # made durable by the log's first flush
        log.background = self.background
        self._logs[(topic, partition)] = log
        return log

    def _least_loaded_dir(self) -> Path:
        # A walk over every log: with one directory (the usual case) it is skipped, since
        # at thousands of partitions it cost milliseconds per partition created.
        loads = {directory: 0 for directory in self.log_dirs}
        for log in self._logs.values():
            loads[log.directory.parent] = loads.get(log.directory.parent, 0) + 1
        return min(self.log_dirs, key=lambda d: loads[d])

    # -- moving replicas between log directories -------------------------------------
    def log_dir(self, path: str) -> Path | None:
        """The configured log directory whose absolute path is ``path``, else None."""
        for directory in self.log_dirs:
            if str(directory.absolute()) == path:
                return directory
        return None

    def prefer_dir(self, topic: str, partition: int, directory: Path) -> None:
        """Create the replica in ``directory`` when it is next created (Kafka's preferred
        log dir: an AlterReplicaLogDirs may come before the replica's LeaderAndIsr)."""
        held = [self._logs.get((topic, partition)), self._futures.get((topic, partition))]
        if all(log is None or log.directory.parent != directory for log in held):
            self._preferred_dirs[(topic, partition)] = directory

    @property
    def futures(self) -> dict[TopicPartition, Log]:
        """Future logs by (topic, partition) (change them through the methods here)."""
        return self._futures

    def create_future(self, topic: str, partition: int, directory: Path) -> Log | None:
        """A future log for the replica in ``directory`` (the one there already, else a new
        one; one elsewhere is removed). None if the current log already lives there."""
        current = self._logs[(topic, partition)]
        if current.directory.parent == directory:
            self.remove_future(topic, partition)
            return None
        existing = self._futures.get((topic, partition))
        if existing is not None and existing.directory.parent == directory:
            return existing
        self.remove_future(topic, partition)
        self.descriptors.check(f"{topic}-{partition} (future)")
        future = Log.open(directory / marked_dir_name(topic, partition, FUTURE_SUFFIX),
                          current.config, clean_shutdown=True, clock_ms=self._clock_ms)
        future.truncate_fully_and_start_at(current.log_start_offset)
        if current.topic_id is not None:
            future.assign_topic_id(current.topic_id)
        fsync_directory(directory)
        future.background = self.background
        self._futures[(topic, partition)] = future
        return future

    def remove_future(self, topic: str, partition: int) -> bool:
        """Drop a replica's future log (a move cancelled or superseded); False if none."""
        future = self._futures.pop((topic, partition), None)
        if future is None:
            return False
        future.delete()
        return True

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """Make the (caught-up) future log the replica's log; the new Log is returned.

        Called between appends, with the future's log end equal to the current's. The
        current directory is renamed to ``-delete`` before the future one takes its
        name, so at every instant the disk holds at most one ``<t>-<p>`` (a restart in
        between promotes the future log, see ``_promote_orphan_future``).
        """
        key = (topic, partition)
        current, future = self._logs[key], self._futures.pop(key)
        future.flush()
        future.close()
        current.close()
        dying = current.directory.with_name(marked_dir_name(topic, partition, DELETE_SUFFIX))
        current.directory.rename(dying)
        fsync_directory(dying.parent)
        target = future.directory.with_name(f"{topic}-{partition}")
        future.directory.rename(target)
        fsync_directory(target.parent)
        moved = Log.open(target, current.config, clean_shutdown=True, clock_ms=self._clock_ms)
        moved.background = self.background
        self._logs[key] = moved
        self.cleaner_manager.forget(key)
        shutil.rmtree(dying, ignore_errors=True)
        return moved

    def delete(self, topic: str, partition: int) -> bool:
        """Close and remove a partition's log; False if there was none."""
        # The future first: a future log left alone would be taken for a finished move.
        self.remove_future(topic, partition)
        self._preferred_dirs.pop((topic, partition), None)
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return False
        self.cleaner_manager.forget((topic, partition))
        log.delete()
        return True

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        """Every log by (topic, partition) (for the cleaner; change them through their methods)."""
        return self._logs

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def partitions(self) -> list[TopicPartition]:
        return sorted(self._logs)

    # -- periodic work -------------------------------------------------------------
    def enforce_retention(self, now_ms: int | None = None,
                          high_watermarks: Mapping[TopicPartition, int] | None = None,
                          deletes: Callable[[str], bool] | None = None) -> int:
        """Run retention on every log (bounded by its high watermark if known); segments deleted.

        ``deletes(topic)`` False skips a topic's logs (``cleanup.policy`` without ``delete``).
        """
        marks = high_watermarks or {}
        return sum(log.enforce_retention(now_ms, marks.get(key))
                   for key, log in self._logs.items() if deletes is None or deletes(key[0]))

    def clean_once(self, cleaner: Cleaner | None = None, now_ms: int | None = None,
                   high_watermarks: Mapping[TopicPartition, int] | None = None
                   ) -> CleanResult | None:
        """One log cleaner round on this thread (the broker runs the middle part on a
        thread of its own, see cleaner.py); None when no compacted log needs it."""
        result = clean_once(self._logs, self.cleaner_manager, cleaner or Cleaner(),
                            self._clock_ms() if now_ms is None else now_ms, high_watermarks)
        if result is not None:
            self.cleaner_manager.write_checkpoints(
                self.cleaner_manager.checkpoint_entries(self._logs))
        return result

    def flush_if_due(self, now_ms: int | None = None) -> int:
        """Apply flush.ms to every log; how many were flushed."""
        return sum(log.flush_if_due(now_ms) for log in self._logs.values())

    # -- checkpoints ---------------------------------------------------------------
    def _per_dir(self, value: Callable[[TopicPartition, Log], int | None]) -> dict[Path, dict]:
        # A copy of the logs first: this runs on a worker thread (the periodic checkpoint)
        # while the reactor may be creating logs (a LeaderAndIsr at restart), and iterating
        # the dict itself then failed ("dictionary changed size during iteration").
        logs = list(self._logs.items())
        if len(self.log_dirs) == 1:  # the usual case: no Path per log (every 5 s, 3 times)
            entries = {}
            for key, log in logs:
                found = value(key, log)
                if found is not None:
                    entries[key] = found
            return {self.log_dirs[0]: entries}
        grouped: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
        for key, log in logs:
            found = value(key, log)
            if found is not None:
                grouped.setdefault(log.directory.parent, {})[key] = found
        return grouped

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Write each log dir's replication-offset-checkpoint with the given high watermarks.

        The recovery-point and log-start checkpoints are refreshed too, so one
        periodic call (Kafka: every replica.high.watermark.checkpoint.interval.ms)
        keeps all three current and a crash recovers as little as possible.
        """
        for directory, entries in self._per_dir(lambda key, _: high_watermarks.get(key)).items():
            self._write_checkpoint(directory / HIGH_WATERMARK_CHECKPOINT, entries)
        self.checkpoint_recovery_points_and_log_starts()

    def _write_checkpoint(self, path: Path, entries: dict[TopicPartition, int]) -> None:
        if self._checkpointed.get(path) == entries:
            return  # the file already says so
        write_offset_checkpoint(path, entries)
        self._checkpointed[path] = entries

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """High watermarks from every log dir's replication-offset-checkpoint."""
        found: dict[TopicPartition, int] = {}
        for directory in self.log_dirs:
            found.update(_read_or_warn(directory / HIGH_WATERMARK_CHECKPOINT))
        return found

    def checkpoint_recovery_points_and_log_starts(self) -> None:
        """Write recovery-point-offset-checkpoint and log-start-offset-checkpoint of each dir."""
        for directory, entries in self._per_dir(lambda _, log: log.recovery_point).items():
            self._write_checkpoint(directory / RECOVERY_POINT_CHECKPOINT, entries)
        for directory, entries in self._per_dir(lambda _, log: log.log_start_offset).items():
            self._write_checkpoint(directory / LOG_START_CHECKPOINT, entries)

    # -- shutdown ------------------------------------------------------------------
    def close(self) -> None:
        """Close every log (fsync, trim), write the checkpoints and the clean-shutdown markers."""
        for log in [*self._logs.values(), *self._futures.values()]:
            log.close()
        self.checkpoint_recovery_points_and_log_starts()
        self.cleaner_manager.write_checkpoints(self.cleaner_manager.checkpoint_entries(self._logs))
        for directory in self.log_dirs:
            (directory / CLEAN_SHUTDOWN_MARKER).touch()
            fsync_directory(directory)
        self._logs = {}
        self._futures = {}

    def abandon(self) -> None:
        """Let go of every file as a killed process would (for crash tests and demos)."""
        for log in [*self._logs.values(), *self._futures.values()]:
            log.abandon()
        self._logs = {}
        self._futures = {}


def _read_or_warn(path: Path) -> dict[TopicPartition, int]:
    """A checkpoint's entries; an unreadable one is logged and treated as missing.

    Missing recovery points only mean more checking (the active segments are
    always recovered after a crash); missing log starts fall back to the first
    segment; missing high watermarks are relearned from the leaders.
    """
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as exc:
        logger.warning("ignoring %s", exc)
        return {}


def _check_topic(topic: str, partition: int) -> None:
    if not topic or topic in (".", "..") or "/" in topic or any(c.isspace() for c in topic):
        raise StorageError(f"topic name {topic!r} cannot be a directory name")
    if partition < 0:
        raise StorageError(f"partition must be >= 0, got {partition}")


