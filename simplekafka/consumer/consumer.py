"""``Consumer``: read records from partitions you assign, or that a consumer group gives you.

Two ways to get partitions. ``assign`` partitions yourself, optionally
``seek``, and ``poll``. Or give a ``group_id`` and ``subscribe`` to topics (or
a pattern): the group's members share the partitions, rebalancing whenever one
joins or leaves (see ``simplekafka.consumer.group``), with ``on_revoke`` and
``on_assign`` called around each rebalance. With a ``group_id``, positions
start from the group's committed offsets (``commit``, or automatically every
``auto_commit_interval_ms`` with ``enable_auto_commit``).
Where a partition has no committed offset or position yet, ``auto_offset_reset`` decides:
``"earliest"``, ``"latest"`` (the default, as in Kafka) or ``"none"`` (raise
``OffsetOutOfRangeError``). The same policy applies when a fetch answers
OFFSET_OUT_OF_RANGE, for example after retention removed old records.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

from simplekafka.client.client import Deadline, KafkaClient
from simplekafka.client.errors import (
    ClientClosedError,
    KafkaError,
    OffsetOutOfRangeError,
    SerializationError,
    UnknownTopicOrPartitionError,
)
from simplekafka.client.offsets import list_offsets
from simplekafka.consumer.assignors import assignor_for
from simplekafka.consumer.fetcher import ConsumerRecord, Fetcher, PartitionState
from simplekafka.consumer.group import (
    CommitFailedError,
    GroupMember,
    topics_matching,
)
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES
from simplekafka.protocol.structs import OffsetAndMetadata, TopicPartition

# A deserializer makes the application's own keys and values (of its chosen type) from bytes.
Deserializer = Callable[[bytes | None], Any]
RebalanceCallback = Callable[[list[TopicPartition]], object]
log = logging.getLogger(__name__)

EARLIEST = EARLIEST_TIMESTAMP
LATEST = LATEST_TIMESTAMP
_RESET_POLICIES = {"earliest": EARLIEST, "smallest": EARLIEST, "latest": LATEST,
                   "largest": LATEST, "none": None}


class Consumer:
    """A Kafka consumer, alone or in a group (not thread-safe, like Kafka's)."""

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Iterable[str] = "localhost:9092",
        client_id: str = "simplekafka-consumer",
        group_id: str | None = None,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        auto_offset_reset: str = "latest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        max_partition_fetch_bytes: int = 1024 * 1024,
        max_poll_records: int = 500,
        check_crcs: bool = True,
        isolation_level: str = "read_uncommitted",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        consumer_timeout_ms: float | None = None,
        client: KafkaClient | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        partition_assignment_strategy: Iterable[str] | str = ("range", "roundrobin"),
        metadata_max_age_ms: int = 300_000,
        group_instance_id: str | None = None,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        client_rack: str = "",
    ) -> None:
        if isinstance(partition_assignment_strategy, str):
            partition_assignment_strategy = [partition_assignment_strategy]
        if auto_offset_reset not in _RESET_POLICIES:
            raise ValueError(
                f"auto_offset_reset must be one of {sorted(_RESET_POLICIES)}, "
                f"not {auto_offset_reset!r}"
            )
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise ValueError("isolation_level must be 'read_uncommitted' or 'read_committed'")
        if max_poll_records < 1:
            raise ValueError("max_poll_records must be at least 1")
        if group_id is not None:  # checked before any connection is made
            if not isinstance(group_id, str) or not group_id:
                raise ValueError(f"group_id must be a non-empty string, not {group_id!r}")
            if heartbeat_interval_ms >= session_timeout_ms:
                raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
            for name in partition_assignment_strategy:
                assignor_for(name)
            if group_instance_id is not None and (
                    not isinstance(group_instance_id, str) or not group_instance_id):
                raise ValueError(f"group_instance_id must be a non-empty string or None, "
                                 f"not {group_instance_id!r}")
        self.group_id = group_id
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.auto_offset_reset = auto_offset_reset
        self.max_poll_records = max_poll_records
        self.consumer_timeout_ms = consumer_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self._owns_client = client is None
        self.client = client or KafkaClient(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
        )
        self._fetcher = Fetcher(
            self.client,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            isolation_level=0 if isolation_level == "read_uncommitted" else 1,
            check_crcs=check_crcs,
            max_decompressed_bytes=max_decompressed_bytes,
            client_rack=client_rack,  # read from an in-rack replica the leader names (KIP-392)
            read_replica_max_age_ms=metadata_max_age_ms,
        )
        self._closed = False
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self._group: GroupMember | None = None
        if group_id is not None:
            self._group = GroupMember(
                self.client, group_id, list(partition_assignment_strategy),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=max_poll_interval_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                retry_backoff_ms=retry_backoff_ms, request_timeout_ms=request_timeout_ms,
                group_instance_id=group_instance_id)
        self._topics: list[str] | None = None  # the subscription (None: not subscribed)
        self._pattern: re.Pattern | None = None
        self._joined_topics: list[str] | None = None
        self._joined_counts: dict[str, int] = {}  # partitions per topic at the last join
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        self._next_auto_commit = time.monotonic() + auto_commit_interval_ms / 1000
        self._last_committed: dict[TopicPartition, int] = {}
        # A cooperative rebalance running in the background: (owned, topics, its result)
        self._rejoining: tuple[list[TopicPartition], list[str], Future] | None = None
        if topics:
            self.subscribe(list(topics))

    # ----- assignment and positions ---------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] | str | None = None,
        pattern: str | re.Pattern | None = None,
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> None:
        """Join the group and consume whatever partitions of ``topics`` it gives this member.

        Give topic names, or a regular ``pattern`` matched against every
        topic's full name (internal topics excluded). ``on_revoke(partitions)``
        runs before a rebalance takes partitions away (commit there if you
        commit by hand), ``on_assign(partitions)`` after the new ones arrive.
        The join itself happens in the next ``poll``.
        """
        self._check_open()
        if self._group is None:
            raise ValueError("subscribe() needs a group_id; without one, use assign()")
        if (topics is None) == (pattern is None):
            raise ValueError("give either topics or a pattern")
        if pattern is not None:
            self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
            self._topics = []
        else:
            names = [topics] if isinstance(topics, str) else list(topics or ())  # never None here
            if not names or not all(isinstance(t, str) and t for t in names):
                raise ValueError(f"topics must be non-empty topic names, not {topics!r}")
            self._pattern = None
            self._topics = sorted(set(names))
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._group.needs_rejoin = True

    def subscription(self) -> list[str]:
        """The topics subscribed to (for a pattern: those it matched at the last rebalance)."""
        if self._pattern is not None:
            return list(self._joined_topics or [])
        return list(self._topics or [])

    def unsubscribe(self) -> None:
        """Leave the group and drop the assignment."""
        if self._group is not None and self._topics is not None:
            self._revoke()
            self._group.leave()
            self._group = self._fresh_group(self._group)
        self._topics = self._pattern = self._joined_topics = None
        self._rejoining = None
        self._fetcher.states = {}

    @staticmethod
    def _fresh_group(old: GroupMember) -> GroupMember:
        return GroupMember(old.client, old.group_id, [a.name for a in old.assignors],
                           old.session_timeout_ms, old.rebalance_timeout_ms,
                           old.heartbeat_interval_ms, old.retry_backoff_ms,
                           old.request_timeout_ms, old.group_instance_id)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions (replacing any earlier assignment).

        Raises ``UnknownTopicOrPartitionError`` for a topic or partition that does
        not exist (after waiting ``request_timeout_ms`` for it to appear).
        """
        self._check_open()
        if self._topics is not None:
            raise ValueError("this consumer subscribed to a group: unsubscribe() before assign()")
        wanted = [TopicPartition(*tp) for tp in partitions]
        for tp in wanted:
            known = self.client.partitions_for(tp.topic, self.request_timeout_ms)
            if tp.partition not in known:
                raise UnknownTopicOrPartitionError(
                    f"topic {tp.topic!r} has no partition {tp.partition} (it has {len(known)})"
                )
        old = self._fetcher.states
        self._fetcher.states = {tp: old.get(tp) or PartitionState() for tp in wanted}

    def assignment(self) -> set[TopicPartition]:
        return set(self._fetcher.states)

    def _state(self, tp: TopicPartition | tuple[str, int]) -> PartitionState:
        tp = TopicPartition(*tp)
        state = self._fetcher.states.get(tp)
        if state is None:
            raise ValueError(f"{tp} is not assigned to this consumer")
        return state

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """Make the next poll return records of ``partition`` from ``offset``."""
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, not {offset!r}")
        self._set_position(self._state(partition), offset)

    @staticmethod
    def _set_position(state: PartitionState, offset: int | None) -> None:
        state.epoch += 1
        state.position = offset
        state.fetch_offset = offset
        state.buffered.clear()
        state.records.clear()
        state.in_flight = False
        state.error = None
        state.reset_pending = False

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Next poll starts at the earliest offset still in the log (all assigned if none given)."""
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Next poll returns only records produced from now on."""
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: tuple, timestamp: int) -> None:
        tps = [TopicPartition(*tp) for tp in partitions] or list(self._fetcher.states)
        for tp in tps:
            self._state(tp)
        offsets = self._list_offsets({tp: timestamp for tp in tps})
        for tp, offset in offsets.items():
            self._set_position(self._fetcher.states[tp], offset)

    def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        """The offset of the next record poll would return (looked up if not known yet)."""
        state = self._state(partition)
        if state.position is None:
            self._reset_positions()
        if state.position is None:
            raise OffsetOutOfRangeError(f"{partition} has no position")
        return state.position

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The earliest offset of each partition (its log start)."""
        return self._list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions})

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset the next produced record of each partition will get (the high watermark)."""
        return self._list_offsets({TopicPartition(*tp): LATEST for tp in partitions})

    def offsets_for_times(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp (ms), None if there is none."""
        found = self._list_offsets({TopicPartition(*tp): ts for tp, ts in timestamps.items()})
        return {tp: (None if off < 0 else off) for tp, off in found.items()}

    def partitions_for(self, topic: str) -> list[int]:
        return self.client.partitions_for(topic, self.request_timeout_ms)

    def _list_offsets(self, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        return list_offsets(self.client, wanted, self.request_timeout_ms,
                            self._fetcher.isolation_level)

    def _reset_positions(self) -> None:
        """Give every partition without a position one, by ``auto_offset_reset``."""
        need = [
            tp for tp, s in self._fetcher.states.items() if s.position is None or s.reset_pending
        ]
        if not need:
            return
        if self._group is not None:
            fresh = [tp for tp in need if not self._fetcher.states[tp].reset_pending]
            committed = self._group.fetch_committed(fresh, self.request_timeout_ms) if fresh \
                else {}
            for tp, found in committed.items():
                if found is not None and tp in self._fetcher.states:
                    self._set_position(self._fetcher.states[tp], found.offset)
            need = [tp for tp in need if committed.get(tp) is None]
            if not need:
                return
        policy = _RESET_POLICIES[self.auto_offset_reset]
        if policy is None:
            for tp in need:
                state = self._fetcher.states[tp]
                state.reset_pending = False
                state.error = OffsetOutOfRangeError(
                    f"{tp} has no valid position (offset {state.fetch_offset}) and "
                    f"auto_offset_reset is 'none'"
                )
            return
        offsets = self._list_offsets({tp: policy for tp in need})
        for tp, offset in offsets.items():
            self._set_position(self._fetcher.states[tp], offset)

    # ----- polling ---------------------------------------------------------------

    def poll(
        self, timeout_ms: float = 1000, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to ``timeout_ms`` for some.

        Returns an empty list on timeout. Raises errors that concern a partition
        (``OffsetOutOfRangeError`` with auto_offset_reset 'none', a corrupt batch)
        as named ``KafkaError`` exceptions.
        """
        self._check_open()
        if not self._fetcher.states and self._topics is None:
            raise ValueError("no partitions assigned: call assign() or subscribe() first")
        limit = max_records or self.max_poll_records
        deadline = time.monotonic() + max(0.0, timeout_ms) / 1000
        fetcher = self._fetcher
        while True:
            if self._group is not None:
                self._group.last_poll = time.monotonic()
                self._ensure_group()
                self._maybe_auto_commit()
                if not fetcher.states and self._topics is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return []
                    time.sleep(min(left, 0.1))
                    continue
            fetcher.handle_answers()
            self._reset_positions()
            records = self._take(limit)
            if records:
                fetcher.send_fetches()
                return records
            if fetcher.client.metadata.needs_update():
                try:
                    # Bounded by what is left of this poll (poll never blocks past it).
                    left_ms = (deadline - time.monotonic()) * 1000
                    fetcher.client.refresh_metadata(None, int(max(100, left_ms)))
                except KafkaError:
                    pass
            fetcher.send_fetches()
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            fetcher.wait_for_answers(min(left, 0.1))

    def _take(self, limit: int) -> list[ConsumerRecord]:
        """Up to ``limit`` decoded records, advancing positions (the consumer's hot path)."""
        out: list[ConsumerRecord] = []
        plain = self.key_deserializer is None and self.value_deserializer is None
        new = tuple.__new__
        for tp, state in self._fetcher.states.items():
            if state.error is not None:
                error, state.error = state.error, None
                raise error
            if not state.records and state.buffered:
                self._fetcher.decode_next(tp)
            queue = state.records
            topic, partition = tp.topic, tp.partition
            while queue and len(out) < limit:
                chunk = queue[0]
                records, start, ts_type, next_offset = chunk
                stop = min(len(records), start + limit - len(out))
                if plain:
                    out += [
                        new(ConsumerRecord, (topic, partition, offset, ts, ts_type, k, v, h))
                        for offset, ts, k, v, h in records[start:stop]
                    ]
                else:
                    out.extend(self._deserialized(tp, records[start:stop], ts_type))
                if stop >= len(records):
                    queue.popleft()
                    if state.position is None or next_offset > state.position:
                        state.position = next_offset
                else:
                    chunk[1] = stop
                    state.position = records[stop - 1].offset + 1
                if not queue and state.buffered and len(out) < limit:
                    self._fetcher.decode_next(tp)
            if len(out) >= limit:
                break
        return out

    def _deserialized(self, tp: TopicPartition, records: list, ts_type: int) -> list:
        key_de = self.key_deserializer
        value_de = self.value_deserializer
        out = []
        for record in records:
            key, value = record.key, record.value
            try:
                if key_de is not None:
                    key = key_de(key)
                if value_de is not None:
                    value = value_de(value)
            except Exception as exc:
                raise SerializationError(
                    f"deserializer failed on {tp} offset {record.offset}: {exc}"
                ) from exc
            out.append(
                ConsumerRecord(
                    tp.topic, tp.partition, record.offset, record.timestamp, ts_type,
                    key, value, record.headers,
                )
            )
        return out

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records one by one; stops after ``consumer_timeout_ms`` without any (if set)."""
        while True:
            timeout = 1000 if self.consumer_timeout_ms is None else self.consumer_timeout_ms
            records = self.poll(timeout)
            if not records and self.consumer_timeout_ms is not None:
                return
            yield from records

    # ----- groups: rebalances and commits ------------------------------------------

    def _ensure_group(self) -> None:
        """Rejoin the group if a rebalance (or a new matching topic) asks for it."""
        group = self._group
        if group is None or self._topics is None:
            return
        if group.fenced is not None:
            raise group.fenced  # another consumer took our group.instance.id: stop
        topics = self._topics
        if self._pattern is not None:
            if self.client.metadata.needs_update() or self._joined_topics is None:
                self.client.refresh_metadata(None, self.request_timeout_ms)
            topics = topics_matching(self._pattern, self.client.metadata.snapshot.topics)
        if topics != self._joined_topics:
            group.needs_rejoin = True
        elif self._partition_count_changed():
            group.needs_rejoin = True  # partitions were added: share them out (as Java does)
        if self._rejoining is not None:
            self._finish_background_rejoin()
            return
        if not group.needs_rejoin:
            return
        owned = sorted(self._fetcher.states)
        deadline = Deadline((group.rebalance_timeout_ms + group.session_timeout_ms) / 1000)
        if group.cooperative and owned and self._joined_topics is not None:
            self._start_background_rejoin(owned, topics, deadline)
            return
        if not group.cooperative:
            self._revoke()  # eager: give everything up before the rebalance
        assigned = group.join(topics, owned, self._partition_counts, deadline)
        self._joined_topics = topics
        self._joined_counts = self._known_counts(topics)
        if group.cooperative:
            self._apply_incremental(owned, assigned)
            return
        self._fetcher.states = {tp: PartitionState() for tp in assigned}
        self._last_committed = {}
        if self._on_assign is not None:
            self._on_assign(list(assigned))

    def _start_background_rejoin(self, owned: list[TopicPartition], topics: list[str],
                                 deadline: Deadline) -> None:
        """KIP-429: a member that owns partitions keeps fetching them while it rejoins, so
        the JoinGroup/SyncGroup round runs on a thread and ``poll`` goes on meanwhile."""
        group = self._group
        assert group is not None
        result: Future = Future()

        def rejoin() -> None:
            try:
                result.set_result(group.join(topics, owned, self._partition_counts, deadline))
            except BaseException as exc:  # handed to poll, which raises it
                result.set_exception(exc)

        self._rejoining = (owned, topics, result)
        threading.Thread(target=rejoin, name=f"rejoin-{group.group_id}", daemon=True).start()

    def _finish_background_rejoin(self) -> None:
        """Once the background rebalance is done: apply its assignment (or raise its error)."""
        assert self._rejoining is not None
        owned, topics, result = self._rejoining
        if not result.done():
            return
        self._rejoining = None
        assigned = result.result()
        self._joined_topics = topics
        self._joined_counts = self._known_counts(topics)
        self._apply_incremental(owned, assigned)

    def _apply_incremental(self, owned: list[TopicPartition],
                           assigned: list[TopicPartition]) -> None:
        """KIP-429: keep consuming what stays, revoke only what goes (then rejoin, so the
        follow-up rebalance can hand it over), and add what is new."""
        kept, new = set(owned) & set(assigned), set(assigned) - set(owned)
        revoked = sorted(set(owned) - set(assigned))
        if revoked:
            self._revoke(revoked)
            self._group.needs_rejoin = True  # type: ignore[union-attr]
        states = self._fetcher.states
        self._fetcher.states = {tp: states.get(tp) or PartitionState()
                                for tp in sorted(kept | new)}
        if self._on_assign is not None:
            self._on_assign(sorted(new))

    def _revoke(self, partitions: list[TopicPartition] | None = None) -> None:
        """Before giving partitions back (all, or those listed): commit them (if
        automatic), tell on_revoke, stop fetching them."""
        owned = sorted(self._fetcher.states) if partitions is None else partitions
        if self._joined_topics is None:
            return
        if self.enable_auto_commit and self._group is not None and self._group.generation >= 0:
            positions = {tp: o for tp, o in self._positions().items() if tp in owned}
            try:
                self._group.commit(positions, True, self.request_timeout_ms)
            except KafkaError as exc:
                log.info("commit before the rebalance failed: %s", exc)
        if self._on_revoke is not None:
            self._on_revoke(owned)
        self._fetcher.states = {tp: s for tp, s in self._fetcher.states.items()
                                if tp not in owned}

    def _known_counts(self, topics: Iterable[str]) -> dict[str, int]:
        known = self.client.metadata.snapshot.topics
        return {t: len(known[t].partitions) for t in topics if t in known}

    def _partition_count_changed(self) -> bool:
        """Once the metadata is due for its periodic refresh (``metadata_max_age_ms``),
        whether a subscribed topic's partition count differs from the last join's."""
        if self._joined_topics is None or not self.client.metadata.needs_update():
            return False
        self.client.refresh_metadata(None, self.request_timeout_ms)
        return self._known_counts(self._joined_topics) != self._joined_counts

    def _partition_counts(self, topics: set[str]) -> dict[str, int]:
        snapshot = self.client.refresh_metadata(None, self.request_timeout_ms)
        return {t: len(snapshot.topics[t].partitions) for t in topics
                if t in snapshot.topics and snapshot.topics[t].partitions}

    def _positions(self) -> dict[TopicPartition, int]:
        return {tp: s.position for tp, s in self._fetcher.states.items()
                if s.position is not None}

    def _maybe_auto_commit(self) -> None:
        if not self.enable_auto_commit or time.monotonic() < self._next_auto_commit:
            return
        if self._rejoining is not None:
            return  # the generation is changing: commit once the rebalance is done
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval_ms / 1000
        changed = {tp: o for tp, o in self._positions().items()
                   if self._last_committed.get(tp) != o}
        if changed and self._group is not None:
            future = self._group.commit_async(changed, self._topics is not None)
            future.add_done_callback(
                lambda f: f.exception() is None and self._last_committed.update(changed))

    def commit(
        self,
        offsets: Mapping[TopicPartition | tuple[str, int], int] | None = None,
        asynchronous: bool = False,
        callback: Callable[[dict, BaseException | None], object] | None = None,
    ) -> Future | None:
        """Commit offsets to the group: by default the position of every assigned partition.

        An offset committed is the *next* record to read (last processed + 1).
        Synchronous commits retry coordinator moves and raise ``CommitFailedError``
        when a rebalance gave the partitions to someone else; ``asynchronous=True``
        returns a Future at once and calls ``callback(offsets, error)`` when done.
        """
        self._check_open()
        if self._group is None:
            raise ValueError("commit() needs a group_id")
        if offsets is None:
            wanted = self._positions()
        else:
            wanted = {TopicPartition(*tp): o for tp, o in offsets.items()}
            for tp, offset in wanted.items():
                if not isinstance(offset, int) or offset < 0:
                    raise ValueError(f"offset for {tp} must be a non-negative integer")
        as_member = self._topics is not None
        if asynchronous:
            future = self._group.commit_async(wanted, as_member)
            if callback is not None:
                future.add_done_callback(lambda f: callback(wanted, f.exception()))
            return future
        self._group.commit(wanted, as_member, self.request_timeout_ms)
        self._last_committed.update(wanted)
        return None

    def committed(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """The group's committed offset of ``partition`` (None if nothing is committed)."""
        self._check_open()
        if self._group is None:
            raise ValueError("committed() needs a group_id")
        tp = TopicPartition(*partition)
        found = self._group.fetch_committed([tp], self.request_timeout_ms).get(tp)
        return None if found is None else found.offset

    # ----- lifecycle -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the consumer is closed")

    def close(self, autocommit: bool = True) -> None:
        """Commit (if automatic), leave the group so the others rebalance at once, disconnect."""
        if not self._closed:
            try:
                if self._group is not None and self._topics is not None:
                    if autocommit and self.enable_auto_commit and self._group.generation >= 0:
                        try:
                            self._group.commit(self._positions(), True, self.request_timeout_ms)
                        except KafkaError as exc:
                            log.info("final commit failed: %s", exc)
                    self._group.leave()
                elif self._group is not None:
                    self._group.stop_heartbeats()
            finally:
                self._closed = True
                if self._owns_client:
                    self.client.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["CommitFailedError", "Consumer", "ConsumerRecord", "OffsetAndMetadata"]
