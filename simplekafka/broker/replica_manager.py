"""The partitions this broker holds, and how controller requests change them.

LeaderAndIsr makes this broker leader or follower of partitions (creating their
logs on first sight): a follower is handed to the replica fetchers (which
truncate by epoch, then copy the leader's log), a leader stops fetching.
StopReplica stops (and optionally deletes) them. As leader, the broker keeps
each ISR: followers that lag leave it, caught-up ones join it, every change
written to ZooKeeper before it is used (see ``isr.py``). Both are
refused when they come from a controller older than one already heard from
(STALE_CONTROLLER_EPOCH), and per partition a request with an older leader
epoch than the one held is ignored. High watermarks are checkpointed to disk
periodically and at shutdown, and read back at start-up.

Every append to a leader goes through ``append_records`` (Kafka's
``ReplicaManager.appendRecords``): a client's Produce and the group
coordinator's writes to ``__consumer_offsets`` alike. It validates, appends,
turns every failure into the error code the wire carries, and for acks=all
waits until the high watermark has passed each batch (or the timeout).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar, cast

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.action_queue import ActionQueue
from simplekafka.broker.answers_together import AnswersTogether
from simplekafka.broker.log_dir_mover import LogDirMover
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.partition import Partition
from simplekafka.broker.producer_state import ActiveProducer
from simplekafka.broker.replication_quota import ReplicationThrottle
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from simplekafka.protocol.errors import ErrorCode, KafkaError, error_for
from simplekafka.protocol.structs import TopicPartition
from simplekafka.protocol.topic_ids import ZERO_ID
from simplekafka.storage.errors import DescriptorsExhaustedError, InconsistentTopicIdError

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import DelayedCall, Reactor
    from simplekafka.protocol.message_types import (
        LeaderAndIsrRequest,
        LeaderAndIsrRequestTopicStatesPartitionStates,
        LeaderAndIsrRequestUngroupedPartitionStates,
        StopReplicaRequest,
    )
    from simplekafka.storage import LogConfig, LogManager

    LeaderAndIsrPartitionState = (LeaderAndIsrRequestTopicStatesPartitionStates
                                  | LeaderAndIsrRequestUngroupedPartitionStates)

log = logging.getLogger(__name__)

# Topics only the broker itself writes (Kafka's internal topics).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# Errors a client asks for often enough (it has stale metadata) not to log each one.
_QUIET_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})

TopicPartitionKey = tuple[str, int]
# What an append came to, by partition, in the order asked (``append_records``).
Outcomes = dict[TopicPartitionKey, "PartitionResponse"]


class PartitionErrors(NamedTuple):
    """What a LeaderAndIsr or StopReplica did (Kafka's stopReplicas answers the same
    pair): refused as a whole (``error_code``), else each partition's outcome."""

    error_code: ErrorCode
    partitions: dict[TopicPartition, ErrorCode]


class LogDirDescription(NamedTuple):
    """One log directory as DescribeLogDirs reports it (Kafka's ``describeLogDirs``)."""

    path: str  # absolute, as Kafka answers it
    error_code: ErrorCode
    # (topic, partition) -> (bytes in its segments, how far its end is behind the HW)
    partitions: dict[tuple[str, int], tuple[int, int]]
    total_bytes: int = -1
    usable_bytes: int = -1
    # future replicas moving into this directory (AlterReplicaLogDirs), as ``partitions``
    # with the lag behind the current log: DescribeLogDirs' is_future_key
    futures: Mapping[tuple[str, int], tuple[int, int]] = {}


class Followers(Protocol):
    """Who copies partitions from their leaders (``ReplicaFetcherManager``)."""

    def follow(self, partition: Partition) -> None: ...

    def unfollow(self, key: tuple[str, int]) -> None: ...

    def is_following(self, key: tuple[str, int]) -> bool: ...

    def shutdown(self) -> None: ...


class PartitionResponse:
    """What one partition's append came to (Kafka's ProduceResponse.PartitionResponse)."""

    __slots__ = ("base_offset", "error_code", "error_message", "log_append_time",
                 "log_start_offset", "record_errors")

    def __init__(self, error_code: ErrorCode = ErrorCode.NONE, base_offset: int = -1,
                 log_start_offset: int = -1, error_message: str | None = None,
                 log_append_time: int = -1):
        self.error_code = error_code
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.error_message = error_message
        # KIP-467: (index in the batch, message) of each record that made the batch fail
        self.record_errors: list[tuple[int, str]] = []

    def __repr__(self) -> str:
        return (f"PartitionResponse({self.error_code.name}, base_offset={self.base_offset}, "
                f"log_start_offset={self.log_start_offset})")


def error_code_of(exc: BaseException) -> ErrorCode | None:
    """The wire code an exception carries: every error of the one family has ``.error_code``."""
    return exc.error_code if isinstance(exc, KafkaError) else None


class ReplicaManager:
    """Owns every local Partition; the handlers ask it for leaders."""

    def __init__(self, broker_id: int, log_manager: LogManager, metadata_cache: MetadataCache,
                 log_config_for: Callable[[str], LogConfig] | None = None,
                 fetchers: Followers | None = None,
                 isr_writer: Callable[[Partition, list[int]], defer.Deferred] | None = None,
                 reactor: Reactor | None = None,
                 min_insync_for: Callable[[str], int] | None = None):
        self.broker_id = broker_id
        if reactor is None:
            from twisted.internet import reactor as default_reactor
            reactor = cast("Reactor", default_reactor)
        self.reactor: Reactor = reactor
        # min.insync.replicas of a topic (its override, else the broker's); 1 if not told.
        self.min_insync_for = min_insync_for or (lambda topic: 1)
        self.fetchers = fetchers  # a ReplicaFetcherManager (None: nobody fetches, unit tests)
        # What this broker sends to throttled followers (replication_quota.py); None: no cap.
        self.leader_throttle: ReplicationThrottle | None = None
        self.isr_writer = isr_writer  # writes an ISR to ZooKeeper; fires with the new version
        self.isr_changes = 0  # ISR changes written (for tests and logs)
        # message.max.decompressed.bytes, given to each Partition it creates
        self.max_decompressed_bytes = DEFAULT_MAX_DECOMPRESSED_BYTES
        # fetch.zero.copy.enable: reads this big answer with a FileRegion (Partition.read).
        self.zero_copy_from: int | None = None
        # Kafka's ActionQueue: parked fetches woken once a bulk append is done; and the
        # acks=all answers a HW advance releases, sent together. The listeners' connections
        # get both (server.py); the partitions the queue, and their DelayedProduce the block.
        self.actions = ActionQueue()
        self.answers = AnswersTogether()
        # Metrics hooks (simplekafka.broker.metrics), None when metrics are off.
        self.on_append: Callable[[str, int, int], None] | None = None
        self.on_isr_change: Callable[[str], None] | None = None
        self.log_config_for = log_config_for
        self.log_manager = log_manager
        self.metadata_cache = metadata_cache
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Replicas that could not be created or opened (out of descriptors, a disk error):
        # the reason, answered as KAFKA_STORAGE_ERROR until a LeaderAndIsr brings them up.
        self.offline_partitions: dict[tuple[str, int], str] = {}
        self.controller_epoch = -1
        self._checkpointed_hw: dict[tuple[str, int], int] = {}
        try:
            self._checkpointed_hw = {
                (tp[0], int(tp[1])): int(hw)
                for tp, hw in (log_manager.read_high_watermarks() or {}).items()
            }
        except Exception as exc:
            log.warning("high watermark checkpoint unreadable (%s); starting from 0", exc)
        # Copies replicas moving between log directories (AlterReplicaLogDirs).
        self.log_dir_mover = LogDirMover(log_manager, self.partitions, self.reactor)

    # -- lookups for request handlers ---------------------------------------------------

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def leader_partition(self, topic: str, partition: int) -> Partition:
        """The local leader of topic-partition, or the KafkaError a client should get."""
        local = self.partitions.get((topic, partition))
        # local.is_leader without the property's call (every produce and follower fetch)
        if local is not None and local.leader_id == local.local_broker_id:
            return local
        offline = self.offline_partitions.get((topic, partition)) if local is None else None
        if offline is not None:
            raise error_for(ErrorCode.KAFKA_STORAGE_ERROR, offline)
        if self.metadata_cache.partition(topic, partition) is not None or local is not None:
            raise error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def readable_partition(self, topic: str, partition: int) -> Partition:
        """The local replica of topic-partition a consumer may read from any replica
        (Fetch v11+, KIP-392): the leader or a follower; else the KafkaError to answer."""
        local = self.partitions.get((topic, partition))
        if local is not None and local.leader_id >= 0:  # this broker leads, or a known one
            return local
        return self.leader_partition(topic, partition)

    # -- DescribeLogDirs ----------------------------------------------------------------

    def describe_log_dirs(self, wanted: set[tuple[str, int]] | None) -> list[LogDirDescription]:
        """Every configured log directory with the partitions (``wanted``; None: all) whose
        logs it holds: their size and offset lag (the HW minus the log end, never below 0;
        -1 without a local replica), plus the file system's total and usable bytes. A
        directory whose file system cannot be read answers KAFKA_STORAGE_ERROR."""
        by_dir: dict[Path, dict[tuple[str, int], tuple[int, int]]] = {
            directory: {} for directory in self.log_manager.log_dirs}
        futures = self._describe_futures(wanted)
        for key, log_ in self.log_manager.logs.items():
            if wanted is not None and key not in wanted:
                continue
            local = self.partitions.get(key)
            lag = max(local.high_watermark - log_.log_end_offset, 0) if local else -1
            by_dir.setdefault(log_.directory.parent, {})[key] = (log_.size, lag)
        described = []
        for directory, partitions in by_dir.items():
            path = str(directory.absolute())
            try:
                usage = shutil.disk_usage(directory)
            except OSError as exc:
                log.warning("log directory %s: %s", path, exc)
                described.append(LogDirDescription(path, ErrorCode.KAFKA_STORAGE_ERROR, {}))
                continue
            described.append(LogDirDescription(path, ErrorCode.NONE, partitions,
                                               usage.total, usage.free,
                                               futures.get(directory, {})))
        return described

    def _describe_futures(self, wanted: set[tuple[str, int]] | None
                          ) -> dict[Path, dict[tuple[str, int], tuple[int, int]]]:
        """Future logs by directory: (size, how far behind the current log's end)."""
        found: dict[Path, dict[tuple[str, int], tuple[int, int]]] = {}
        for key, future in self.log_manager.futures.items():
            if wanted is not None and key not in wanted:
                continue
            current = self.log_manager.get(*key)
            lag = max(current.log_end_offset - future.log_end_offset, 0) if current else -1
            found.setdefault(future.directory.parent, {})[key] = (future.size, lag)
        return found

    # -- AlterReplicaLogDirs ------------------------------------------------------------

    def alter_replica_log_dirs(self, wanted: Mapping[tuple[str, int], str]
                               ) -> dict[tuple[str, int], ErrorCode]:
        """Move each replica to the log directory named by its absolute path, as Kafka's
        ``alterReplicaLogDirs``: a path not among ``log.dirs`` is LOG_DIR_NOT_FOUND; a
        replica this broker does not host yet is REPLICA_NOT_AVAILABLE, and is created in
        that directory when it comes (UNKNOWN_TOPIC_OR_PARTITION if the cluster does not know
        it either); one already there is NONE (a move elsewhere under
        way is cancelled); else a future log is made there and the move starts (NONE)."""
        errors: dict[tuple[str, int], ErrorCode] = {}
        for key, path in wanted.items():
            topic, index = key
            directory = self.log_manager.log_dir(path)
            if len(f"{topic}-{index}.{'0' * 32}-future") > 255:
                errors[key] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif directory is None:
                errors[key] = ErrorCode.LOG_DIR_NOT_FOUND
            elif key in self.offline_partitions:
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif key not in self.partitions:
                self.log_manager.prefer_dir(topic, index, directory)
                known = self.metadata_cache.partition(topic, index) is not None
                errors[key] = (ErrorCode.REPLICA_NOT_AVAILABLE if known
                               else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                self.log_manager.prefer_dir(topic, index, directory)
                try:
                    if self.log_manager.create_future(topic, index, directory) is not None:
                        log.info("%s-%d: moving to log directory %s", topic, index, path)
                        self.log_dir_mover.wake()
                    errors[key] = ErrorCode.NONE
                except Exception as exc:
                    log.error("%s-%d: cannot move to %s: %s", topic, index, path, exc)
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
        return errors

    # -- DescribeProducers --------------------------------------------------------------

    def active_producers(self, topic: str, partition: int
                         ) -> tuple[ErrorCode, list[ActiveProducer]]:
        """The producers a local replica (leader or follower) remembers, as Kafka's
        ``activeProducerState``: KAFKA_STORAGE_ERROR for an offline replica,
        NOT_LEADER_OR_FOLLOWER for a partition this broker holds no replica of."""
        local = self.partitions.get((topic, partition))
        if local is not None:
            return ErrorCode.NONE, local.producers.active_producers()
        if (topic, partition) in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR, []
        if self.metadata_cache.partition(topic, partition) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, []
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []

    # -- DeleteRecords ------------------------------------------------------------------

    def delete_records(self, topic: str, partition: int, offset: int,
                       timeout_ms: int) -> defer.Deferred:
        """Move a led partition's log start to ``offset`` (Kafka's deleteRecords).

        The broker's own topics are refused, as in Kafka. Fires with
        ``(error code, low watermark)`` once every ISR member's log starts at
        the new offset (followers move theirs on their next fetch), or with
        REQUEST_TIMED_OUT after ``timeout_ms``; refusals raise at once.
        """
        if topic in INTERNAL_TOPICS:
            raise error_for(ErrorCode.INVALID_TOPIC_EXCEPTION,
                            f"records of {topic} are deleted by the broker only")
        leader = self.leader_partition(topic, partition)
        start = leader.delete_records_on_leader(offset)
        waiter = leader.wait_for_low_watermark(start)
        if waiter.called:
            return waiter

        def time_out() -> None:
            if not waiter.called:
                waiter.callback((ErrorCode.REQUEST_TIMED_OUT, leader.low_watermark()))

        timer = self.reactor.callLater(max(timeout_ms, 0) / 1000.0, time_out)
        return waiter.addBoth(_cancel_timer, timer)

    # -- appends (Produce, and the group coordinator's __consumer_offsets writes) -----------

    def append_records(self, entries: Mapping[TopicPartitionKey, bytes | None], acks: int,
                       timeout_ms: int, internal: bool = False,
                       api_version: int | None = None,
                       respond: Callable[[Outcomes], object] | None = None) -> defer.Deferred:
        """Append one batch per partition at its leader; fires with the outcome of each.

        The Deferred fires with ``{(topic, partition): PartitionResponse}`` in the
        order of ``entries``: at once for acks 0 and 1 (and for acks=all when
        the ISR is the leader alone), else once every acks=all batch is below
        the high watermark, failing those still waiting after ``timeout_ms``
        with REQUEST_TIMED_OUT. min.insync.replicas is checked before
        appending (NOT_ENOUGH_REPLICAS) and again when the batch is committed
        (NOT_ENOUGH_REPLICAS_AFTER_APPEND). Only ``internal`` appends (the
        broker's own) may write to an internal topic. ``api_version`` is the
        Produce version for the client-version checks (None: internal, none).

        ``respond`` (Kafka's responseCallback) makes the answer of the outcomes: the
        Deferred then fires with what it returns, called without a callback round of
        its own (the produce handler's wire answer).
        """
        results: dict[TopicPartitionKey, PartitionResponse] = {}
        if acks not in (0, 1, -1):
            for key in entries:
                results[key] = PartitionResponse(ErrorCode.INVALID_REQUIRED_ACKS)
            return defer.succeed(results if respond is None else respond(results))
        acks_wait = _AcksWait(results, respond) if acks == -1 else None
        if len(entries) == 1:  # the usual produce: no block (a nullcontext is two calls)
            for key, records in entries.items():
                results[key] = self._append_to_leader(key, records, acks, internal,
                                                      api_version, timeout_ms, acks_wait)
        else:
            # Several partitions: parked fetches are woken once all are appended (Kafka's
            # tryCompleteActions after the request), so a follower fetching them all gets
            # all.
            with self.actions.wakeups_after():
                for key, records in entries.items():
                    results[key] = self._append_to_leader(key, records, acks, internal,
                                                          api_version, timeout_ms, acks_wait)
        if acks_wait is None:
            return defer.succeed(results if respond is None else respond(results))
        return acks_wait.appended()

    def _append_to_leader(self, key: TopicPartitionKey, records: bytes | None, acks: int,
                          internal: bool, api_version: int | None, timeout_ms: int,
                          acks_wait: _AcksWait | None) -> PartitionResponse:
        topic, index = key
        response = PartitionResponse()
        try:
            if topic in INTERNAL_TOPICS and not internal:
                raise error_for(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"{topic} is written by the broker only")
            partition = self.leader_partition(topic, index)
            min_insync = self.min_insync_for(topic) if acks == -1 else 1  # only acks=all asks
            # The topic's max.message.bytes (its override, else message.max.bytes) bounds a
            # batch; socket.request.max.bytes bounds the whole frame, in the server.
            max_batch_bytes = partition.log.config.max_message_bytes
            result = partition.append_as_leader(records, acks, min_insync, max_batch_bytes,
                                                api_version, internal=internal)
        except Exception as exc:
            code = error_code_of(exc)
            if code is None:  # not an error Kafka has a code for: a bug or a disk failure
                log.exception("append to %s-%d failed", topic, index)
                code = ErrorCode.KAFKA_STORAGE_ERROR
            elif code not in _QUIET_ERRORS:
                log.info("append to %s-%d refused: %s (%s)", topic, index, code.name, exc)
            response.error_code = code
            response.error_message = exc.reason if isinstance(exc, KafkaError) else str(exc)
            response.record_errors = getattr(exc, "record_errors", [])
            return response
        response.base_offset = result.base_offset
        response.log_start_offset = result.log_start_offset
        response.log_append_time = result.log_append_time
        if self.on_append is not None and not internal and not result.duplicate:
            self.on_append(topic, result.last_offset - result.base_offset + 1,
                           len(records or b""))
        if acks_wait is not None and partition.high_watermark <= result.last_offset:
            acks_wait.pending += 1
            partition.on_high_watermark(result.last_offset + 1, min_insync,
                                        max(timeout_ms, 0) / 1000.0, acks_wait.done, response)
        return response

    # -- controller requests ------------------------------------------------------------

    def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> PartitionErrors:
        """Apply a LeaderAndIsr request; the outcome names every partition's error code."""
        if request["controller_epoch"] < self.controller_epoch:
            log.warning("ignoring LeaderAndIsr from controller %d with stale epoch %d < %d",
                        request["controller_id"], request["controller_epoch"],
                        self.controller_epoch)
            return PartitionErrors(ErrorCode.STALE_CONTROLLER_EPOCH, {})
        self.controller_epoch = request["controller_epoch"]
        errors = {}
        ids = {ts["topic_name"]: ts["topic_id"] for ts in request.get("topic_states") or []
               if ts.get("topic_id", ZERO_ID) != ZERO_ID}  # v5+ (KIP-516)
        for topic, state in _partition_states(request):
            code = self._apply_partition_state(topic, state, ids.get(topic))
            errors[TopicPartition(topic, state["partition_index"])] = code
        return PartitionErrors(ErrorCode.NONE, errors)

    def _apply_partition_state(self, topic: str, state: LeaderAndIsrPartitionState,
                               topic_id: bytes | None = None) -> ErrorCode:
        index = state["partition_index"]
        key = (topic, index)
        if self.broker_id not in state["replicas"]:
            return ErrorCode.NONE  # not ours to hold
        partition = self.partitions.get(key)
        try:
            if topic_id is not None:
                # The log must be this topic's: one left by an earlier topic of the same
                # name (its partition.metadata names another ID) is refused, as Kafka does.
                existing = partition.log if partition is not None else \
                    self.log_manager.get(topic, index)
                if existing is not None:
                    existing.assign_topic_id(topic_id)
            if partition is None:
                config = self.log_config_for(topic) if self.log_config_for else None
                log_ = self.log_manager.get_or_create(topic, index, config)
                if topic_id is not None:
                    log_.assign_topic_id(topic_id)
                # acks=all answers one HW advance releases leave together (one write per
                # connection: answers_together.py).
                partition = Partition(topic, index, self.broker_id, log_,
                                      clock=self.reactor, completing=self.answers)
                partition.max_decompressed_bytes = self.max_decompressed_bytes
                partition.zero_copy_from = self.zero_copy_from
                partition.actions = self.actions
                partition.alter_isr = self._change_isr
                partition.restore_high_watermark(self._checkpointed_hw.get(key, 0))
                self.partitions[key] = partition
                if key in self.log_manager.futures:  # a move a restart interrupted goes on
                    self.log_dir_mover.wake()
            if state["leader"] == self.broker_id:
                applied = partition.make_leader(
                    state["leader_epoch"], list(state["isr"]), list(state["replicas"]),
                    state["zk_version"], state["controller_epoch"])
                if applied and self.fetchers is not None:
                    self.fetchers.unfollow(key)
            else:
                before = (partition.leader_id, partition.leader_epoch)
                applied = partition.make_follower(
                    state["leader"], state["leader_epoch"], list(state["isr"]),
                    list(state["replicas"]), state["zk_version"], state["controller_epoch"])
                if applied and self.fetchers is not None and (
                        before != (partition.leader_id, partition.leader_epoch)
                        or not self.fetchers.is_following(key)):
                    self.fetchers.follow(partition)
        except InconsistentTopicIdError as exc:
            log.error("%s-%d: not applied: %s", topic, index, exc)
            return ErrorCode.INCONSISTENT_TOPIC_ID
        except Exception as exc:
            if partition is None:
                self._mark_offline(key, exc)
            else:
                log.exception("cannot apply state of %s-%d: %s", topic, index,
                              exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self.offline_partitions.pop(key, None)
        if not applied:
            log.info("%s-%d: ignoring stale leader epoch %d (have %d)", topic,
                     index, state["leader_epoch"], partition.leader_epoch)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        log.info("%s-%d: %s at leader epoch %d, ISR %s", topic, index,
                 "leader" if partition.is_leader else f"follower of {state['leader']}",
                 state["leader_epoch"], list(state["isr"]))
        return ErrorCode.NONE

    def _mark_offline(self, key: tuple[str, int], exc: Exception) -> None:
        """A replica whose log cannot be opened fails alone, with its reason (Kafka's offline
        partition); running out of descriptors is said in one line, not a traceback each."""
        first = not self.offline_partitions
        self.offline_partitions[key] = str(exc)
        if isinstance(exc, DescriptorsExhaustedError):
            (log.error if first else log.debug)("partition offline: %s", exc)
        else:
            log.error("%s-%d: offline, its log cannot be opened", *key, exc_info=exc)

    def stop_replicas(self, request: StopReplicaRequest) -> PartitionErrors:
        """Apply StopReplica (v0-3 shapes): forget the partitions, deleting their logs if asked."""
        if request["controller_epoch"] < self.controller_epoch:
            return PartitionErrors(ErrorCode.STALE_CONTROLLER_EPOCH, {})
        self.controller_epoch = request["controller_epoch"]
        targets: list[tuple[str, int, bool]] = []
        delete_all = bool(request.get("delete_partitions", False))
        for topic in request.get("topics") or []:
            targets += [(topic["name"], p, delete_all) for p in topic["partition_indexes"]]
        for p in request.get("ungrouped_partitions") or []:
            targets.append((p["topic_name"], p["partition_index"], delete_all))
        for topic_state in request.get("topic_states") or []:
            targets += [(topic_state["topic_name"], p["partition_index"], p["delete_partition"])
                        for p in topic_state["partition_states"]]
        errors = {TopicPartition(topic, index): self._stop_replica(topic, index, delete)
                  for topic, index, delete in targets}
        return PartitionErrors(ErrorCode.NONE, errors)

    def _stop_replica(self, topic: str, index: int, delete: bool) -> ErrorCode:
        if self.fetchers is not None:
            self.fetchers.unfollow((topic, index))
        partition = self.partitions.pop((topic, index), None)
        self.offline_partitions.pop((topic, index), None)
        self._checkpointed_hw.pop((topic, index), None)
        if partition is not None:
            partition.close_waiters()
        try:
            if delete:
                self.log_manager.delete(topic, index)
        except Exception as exc:
            log.exception("cannot delete %s-%d: %s", topic, index, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        log.info("%s-%d: stopped%s", topic, index, " and deleted" if delete else "")
        return ErrorCode.NONE

    # -- ISR maintenance (leader side) --------------------------------------------------

    def maybe_expand_isr(self, partition: Partition, replica_id: int) -> None:
        """After a follower's fetch: write it into the ISR if it may join (replication rule 5)."""
        new_isr = partition.isr_to_expand(replica_id)
        if new_isr is not None:
            self._change_isr(partition, new_isr, "expand")

    def maybe_shrink_isrs(self, lag_max_ms: float) -> None:
        """Periodic: drop followers that lagged longer than ``lag_max_ms`` from their ISRs."""
        for partition in list(self.partitions.values()):
            new_isr = partition.isr_to_shrink(lag_max_ms)
            if new_isr is not None:
                self._change_isr(partition, new_isr, "shrink")

    def _change_isr(self, partition: Partition, new_isr: list[int], why: str) -> None:
        """Write ``new_isr`` to ZooKeeper; use it only once written (replication rule 2)."""
        if self.isr_writer is None:
            return
        partition.isr_change_pending = True
        epoch = partition.leader_epoch
        old_isr = list(partition.isr)
        written = self.isr_writer(partition, new_isr)

        def done(version: int) -> None:
            if not partition.is_leader or partition.leader_epoch != epoch:
                return  # the controller moved on while we wrote; its state wins
            self.isr_changes += 1
            if self.on_isr_change is not None:
                self.on_isr_change(why)
            log.info("%s-%d: ISR %s %s -> %s (partition epoch %d)", partition.topic,
                     partition.index, why, old_isr, new_isr, version)
            partition.apply_isr(new_isr, version)

        def failed(failure: Failure) -> None:
            if partition.leader_epoch == epoch:
                partition.isr_change_pending = False
            log.warning("%s-%d: ISR %s to %s not written (%s); keeping %s", partition.topic,
                        partition.index, why, new_isr, failure.getErrorMessage(), old_isr)

        written.addCallbacks(done, failed)

    # -- checkpoints and shutdown -------------------------------------------------------

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        marks = dict(self._checkpointed_hw)
        marks.update({key: p.high_watermark for key, p in self.partitions.items()})
        return marks

    def checkpoint_high_watermarks(self) -> None:
        self.write_high_watermarks(self.high_watermarks())

    def write_high_watermarks(self, marks: dict[tuple[str, int], int]) -> None:
        """Write ``marks`` (may run on a worker thread; a failure is retried next time)."""
        try:
            self.log_manager.checkpoint_high_watermarks(marks)
        except Exception as exc:  # retried at the next interval
            log.warning("high watermark checkpoint failed: %s", exc)

    def snapshot_producers(self, force: bool = False) -> int:
        """Producer snapshots of partitions with open transactions (``force``: of every
        partition with producer state, at shutdown); how many were written."""
        # Every 5 s at thousands of partitions: look only at those with producer state.
        return sum(partition.maybe_snapshot_producers(force)
                   for partition in list(self.partitions.values())
                   if partition.producers.ongoing or (force and len(partition.producers)))

    def shutdown(self) -> None:
        self.log_dir_mover.stop()
        if self.fetchers is not None:
            self.fetchers.shutdown()
        for partition in self.partitions.values():
            partition.close_waiters()
        self.snapshot_producers(force=True)
        self.checkpoint_high_watermarks()


def _partition_states(request: LeaderAndIsrRequest
                      ) -> list[tuple[str, LeaderAndIsrPartitionState]]:
    """(topic, partition state) pairs from either LeaderAndIsr shape (v0-1 or v2+)."""
    states: list[tuple[str, LeaderAndIsrPartitionState]] = []
    for topic_state in request.get("topic_states") or []:
        states += [(topic_state["topic_name"], p) for p in topic_state["partition_states"]]
    for p in request.get("ungrouped_partition_states") or []:
        states.append((p["topic_name"], p))
    return states


class _AcksWait:
    """One acks=all request's waits for its partitions' high watermarks, joined: its
    Deferred fires with the results once the last is done (committed, or timed out by its
    partition's queue: ``delayed_produce``); a failed wait's code goes into its response.

    Plain calls from the queues, one Deferred for the request: a Deferred per partition,
    and a callback to join them, were a callback round more per partition on every
    acks=all produce.
    No timer of its own: each partition's queue times its waiters out."""

    __slots__ = ("deferred", "pending", "respond", "results")

    def __init__(self, results: dict[TopicPartitionKey, PartitionResponse],
                 respond: Callable[[Outcomes], object] | None):
        self.results = results
        self.respond = respond
        self.pending = 1  # the request's own hold, released once all its batches are appended
        self.deferred: defer.Deferred | None = None

    def done(self, code: ErrorCode, response: PartitionResponse) -> None:
        if code != ErrorCode.NONE and response.error_code == ErrorCode.NONE:
            response.error_code = code
        self.pending -= 1
        deferred = self.deferred
        if self.pending or deferred is None:
            return
        if self.respond is None:
            deferred.callback(self.results)
            return
        try:  # a Deferred's callback would catch it: so does this, for the queue's sake
            answer = self.respond(self.results)
        except Exception:
            deferred.errback()
            return
        deferred.callback(answer)

    def appended(self) -> defer.Deferred:
        """The request's Deferred, once its batches are appended (fired if none waits)."""
        self.pending -= 1
        if not self.pending:
            respond = self.respond
            return defer.succeed(self.results if respond is None else respond(self.results))
        self.deferred = defer.Deferred()
        return self.deferred


_T = TypeVar("_T")


def _cancel_timer(result: _T, timer: DelayedCall) -> _T:
    if timer.active():
        timer.cancel()
    return result
