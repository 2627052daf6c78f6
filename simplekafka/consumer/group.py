"""Group membership for the Consumer: find the coordinator, join, sync, heartbeat, commit.

One ``GroupMember`` per consumer with a ``group_id``. The consumer's own
thread does the rebalances (inside ``poll``): JoinGroup (answering
MEMBER_ID_REQUIRED by joining again with the id the broker handed out), then,
if this member is the leader, run the assignor the group agreed on over every
member's subscription, then SyncGroup to learn its own partitions. A
background thread only sends heartbeats; when one answers
REBALANCE_IN_PROGRESS (or says the member or generation is stale) it raises a
flag that the next ``poll`` acts on, calling ``on_revoke`` before the rejoin
and ``on_assign`` after it, as Kafka's consumer does.

With a ``group_instance_id`` the member is *static* (KIP-345): it never sends
LeaveGroup (closing, or a poll timeout, leaves it to the session timeout), so a
restart within ``session_timeout_ms`` rejoins under the same instance id, gets
its partitions back and the others see no rebalance. Whoever held the instance
id before is fenced (FENCED_INSTANCE_ID), which is fatal to that consumer.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future

from simplekafka.client.client import Deadline, KafkaClient, coordinator_connection
from simplekafka.client.errors import KafkaError, KafkaTimeoutError, error_for
from simplekafka.client.group_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    find_coordinator,
)
from simplekafka.client.offsets import committed_offsets, offset_fetch_request
from simplekafka.consumer.assignors import assignor_for
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

# Errors after which the coordinator must be looked up again.
COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
# Errors after which the member must rejoin (the group moved on without it).
REJOIN_ERRORS = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                           ErrorCode.UNKNOWN_MEMBER_ID})


class CommitFailedError(KafkaError):
    """A commit the group no longer accepts (the member was rebalanced out of the partitions)."""


class GroupMember:
    """This consumer's membership of group ``group_id`` (see the module docstring)."""

    def __init__(self, client: KafkaClient, group_id: str, assignors: Iterable[str],
                 session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 300_000,
                 heartbeat_interval_ms: int = 3_000, retry_backoff_ms: int = 100,
                 request_timeout_ms: int = 30_000, group_instance_id: str | None = None
                 ) -> None:
        if not group_id:
            raise ValueError("group_id must be a non-empty string")
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
        self.client = client
        self.group_id = group_id
        self.assignors = [assignor_for(name) for name in assignors]
        if not self.assignors:
            raise ValueError("at least one partition assignor is needed")
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.group_instance_id = group_instance_id
        self.fenced: KafkaError | None = None  # set once another member took our instance id
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader_id: str | None = None
        self.coordinator_id: int | None = None
        self.needs_rejoin = True
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._in_rebalance = False
        self.last_poll = time.monotonic()  # the consumer updates it on every poll

    @property
    def cooperative(self) -> bool:
        """KIP-429: incremental rebalances if every assignor offered is cooperative
        (as Java's consumer decides: the protocol all of them support)."""
        return all(a.rebalance_protocol == "cooperative" for a in self.assignors)

    # -- the coordinator --------------------------------------------------------------------

    def coordinator(self, deadline: Deadline) -> int:
        """The node id of the group's coordinator (FindCoordinator, retried until the deadline)."""
        if self.coordinator_id is None:
            self.coordinator_id = coordinator_connection(find_coordinator(
                self.client, self.group_id, max(1, int(deadline.remaining() * 1000))))
        return self.coordinator_id

    def coordinator_dead(self) -> None:
        self.coordinator_id = None

    def send_to_coordinator(self, api_key: ApiKey, body: object, deadline: Deadline,
                            timeout_ms: int | None = None) -> Struct:
        """Send to the coordinator; a coordinator error or lost connection forgets it."""
        node = self.coordinator(deadline)
        try:
            answer = self.client.request(node, api_key, body, timeout_ms=timeout_ms)
        except KafkaError:
            self.coordinator_dead()
            raise
        return answer

    # -- joining ----------------------------------------------------------------------------

    def join(self, topics: list[str], owned: list[TopicPartition],
             partition_counts: Callable[[set[str]], Mapping[str, int]],
             deadline: Deadline) -> list[TopicPartition]:
        """Rejoin the group and return this member's new partitions (blocks for the rebalance)."""
        self._in_rebalance = True
        try:
            while True:
                assignment = self._join_once(topics, owned, partition_counts, deadline)
                if assignment is not None:
                    self.last_poll = time.monotonic()  # a long join is not a stuck application
                    self.needs_rejoin = False
                    self._start_heartbeats()
                    return assignment
                if deadline.expired:
                    raise KafkaTimeoutError(
                        f"could not join group {self.group_id!r} in time")
                time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))
        finally:
            self._in_rebalance = False

    def _join_once(self, topics: list[str], owned: list[TopicPartition],
                   partition_counts: Callable[[set[str]], Mapping[str, int]],
                   deadline: Deadline) -> list[TopicPartition] | None:
        protocols = [{"name": a.name,
                      "metadata": encode_subscription(a.subscription(topics, owned))}
                     for a in self.assignors]
        body = {"group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": PROTOCOL_TYPE,
                "protocols": protocols}
        answer = self._rebalance_request(ApiKey.JOIN_GROUP, body, deadline, "joining")
        if answer is None:
            return None
        with self._lock:
            self.member_id = answer.member_id
            self.generation = answer.generation_id
            self.protocol = answer.protocol_name
            self.leader_id = answer.leader
        assignments: list[dict] = []
        if answer.leader == answer.member_id:
            assignments = self._lead(answer, partition_counts)
        sync = {"group_id": self.group_id, "generation_id": self.generation,
                "member_id": self.member_id, "group_instance_id": self.group_instance_id,
                "assignments": assignments}
        answer = self._rebalance_request(ApiKey.SYNC_GROUP, sync, deadline, "syncing")
        if answer is None:
            return None
        partitions = decode_assignment(answer.assignment)
        log.info("group %r generation %d: %s assigned %s", self.group_id, self.generation,
                 self.member_id, [str(tp) for tp in partitions])
        return partitions

    def _rebalance_request(self, api_key: ApiKey, body: dict, deadline: Deadline,
                           doing: str) -> Struct | None:
        """JoinGroup or SyncGroup: the answer, or None when the round must start again."""
        try:
            answer = self.send_to_coordinator(api_key, body, deadline,
                                              timeout_ms=self.rebalance_timeout_ms + 5_000)
        except KafkaError as exc:
            if not exc.retriable:
                raise
            return None
        code = ErrorCode.of(answer.error_code)
        if code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: join again with this id
            self.member_id = answer.member_id
            return None
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.member_id, self.generation = "", -1
            return None
        if code in COORDINATOR_ERRORS:
            self.coordinator_dead()
            return None
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            return None
        if code != ErrorCode.NONE:
            raise error_for(code, f"{doing} group {self.group_id!r}")
        return answer

    def _lead(self, answer: Struct, partition_counts: Callable[[set[str]], Mapping[str, int]],
              ) -> list[dict]:
        """As the leader: run the agreed assignor over every member's subscription."""
        assignor = assignor_for(answer.protocol_name)
        subscriptions = {}
        for member in answer.members:
            try:
                subscriptions[member.member_id] = decode_subscription(member.metadata)
            except ValueError:
                log.warning("member %s sent an unreadable subscription", member.member_id)
                subscriptions[member.member_id] = decode_subscription(b"\0\0\0\0\0\0")
        topics = {t for s in subscriptions.values() for t in s.topics}
        counts = partition_counts(topics)
        plan = assignor.assign(subscriptions, counts)
        return [{"member_id": m, "assignment": encode_assignment(tps)} for m, tps in plan.items()]

    # -- heartbeats -------------------------------------------------------------------------

    def _start_heartbeats(self) -> None:
        if self._heartbeat_thread is None:
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop, name=f"heartbeat-{self.group_id}", daemon=True)
            self._heartbeat_thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval_ms / 1000):
            if self._in_rebalance or self.generation < 0 or self.needs_rejoin:
                continue
            try:
                if time.monotonic() - self.last_poll > self.rebalance_timeout_ms / 1000:
                    self._poll_timeout_expired()
                    continue
                self.heartbeat_once()
            except Exception as exc:  # the loop must survive anything; the next poll sees it
                log.debug("heartbeat for %r failed: %s", self.group_id, exc)

    def _poll_timeout_expired(self) -> None:
        """No poll for max_poll_interval_ms: the application is stuck, so leave (as Kafka's
        consumer does) and let the others take the partitions; the next poll rejoins."""
        log.warning("group %r: no poll for %d ms (max_poll_interval_ms); leaving the group",
                    self.group_id, self.rebalance_timeout_ms)
        with self._lock:
            member_id, self.member_id, self.generation = self.member_id, "", -1
        self.needs_rejoin = True
        self._send_leave(member_id, 5_000)

    def _send_leave(self, member_id: str, timeout_ms: int) -> None:
        if not member_id or self.coordinator_id is None or self.group_instance_id is not None:
            return  # a static member leaves only by its session timing out (KIP-345)
        body = {"group_id": self.group_id, "member_id": member_id,
                "members": [{"member_id": member_id, "group_instance_id": None}]}
        try:
            self.client.request(self.coordinator_id, ApiKey.LEAVE_GROUP, body,
                                timeout_ms=timeout_ms)
        except KafkaError as exc:
            log.info("leaving group %r: %s", self.group_id, exc)

    def heartbeat_once(self) -> ErrorCode:
        """One Heartbeat; flags a rejoin or a coordinator lookup when the answer says so."""
        with self._lock:
            body = {"group_id": self.group_id, "generation_id": self.generation,
                    "member_id": self.member_id, "group_instance_id": self.group_instance_id}
        deadline = Deadline(self.session_timeout_ms / 1000)
        try:
            answer = self.send_to_coordinator(ApiKey.HEARTBEAT, body, deadline,
                                              timeout_ms=self.session_timeout_ms)
        except KafkaError:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        code = ErrorCode.of(answer.error_code)
        if code == ErrorCode.FENCED_INSTANCE_ID:
            self.fenced = error_for(code, f"group {self.group_id!r}: instance id "
                                          f"{self.group_instance_id!r} was taken over")
        elif code in REJOIN_ERRORS:
            if code != ErrorCode.REBALANCE_IN_PROGRESS:
                with self._lock:
                    self.member_id, self.generation = "", -1
            self.needs_rejoin = True
        elif code in COORDINATOR_ERRORS:
            self.coordinator_dead()
        return code

    # -- offsets ----------------------------------------------------------------------------

    def commit_body(self, offsets: Mapping[TopicPartition, int | tuple[int, str]],
                    as_member: bool = True) -> dict:
        topics: dict[str, list[dict]] = {}
        for tp, value in offsets.items():
            offset, metadata = (value, "") if isinstance(value, int) else value
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "committed_offset": int(offset),
                 "committed_leader_epoch": -1, "commit_timestamp": -1,
                 "committed_metadata": metadata or ""})
        with self._lock:
            generation = self.generation if as_member else -1
            member_id = self.member_id if as_member and self.generation >= 0 else ""
        return {"group_id": self.group_id, "generation_id_or_member_epoch": generation,
                "member_id": member_id,
                "group_instance_id": self.group_instance_id if member_id else None,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}

    def commit(self, offsets: Mapping[TopicPartition, int | tuple[int, str]], as_member: bool,
               timeout_ms: int) -> None:
        """Commit synchronously; retries coordinator moves, raises CommitFailedError if fenced."""
        if not offsets:
            return
        body = self.commit_body(offsets, as_member)

        def attempt(deadline: Deadline) -> None:
            answer = self.send_to_coordinator(ApiKey.OFFSET_COMMIT, body, deadline)
            self.check_commit_answer(answer, body["generation_id_or_member_epoch"])

        self.client.call_with_retries(attempt, timeout_ms)

    def commit_async(self, offsets: Mapping[TopicPartition, int | tuple[int, str]],
                     as_member: bool) -> Future:
        """Commit without waiting: the future holds None or the error (no retries)."""
        result: Future = Future()
        if not offsets:
            result.set_result(None)
            return result
        body = self.commit_body(offsets, as_member)
        try:
            node = self.coordinator(Deadline(self.request_timeout_ms / 1000))
            sent = self.client.send(node, ApiKey.OFFSET_COMMIT, body)
        except KafkaError as exc:
            result.set_exception(exc)
            return result

        def done(answer_future: Future) -> None:
            try:
                self.check_commit_answer(answer_future.result(),
                                         body["generation_id_or_member_epoch"])
            except BaseException as exc:
                if isinstance(exc, KafkaError) and not isinstance(exc, CommitFailedError):
                    self.coordinator_dead()
                result.set_exception(exc)
            else:
                result.set_result(None)

        sent.add_done_callback(done)
        return result

    def check_commit_answer(self, answer: Struct, generation: int = -1) -> None:
        """Raise the commit's error; ``generation`` is the one the commit was sent with."""
        for topic in answer.topics:
            for part in topic.partitions:
                code = ErrorCode.of(part.error_code)
                if code == ErrorCode.NONE:
                    continue
                where = f"committing {topic.name}-{part.partition_index}"
                if code in COORDINATOR_ERRORS:
                    self.coordinator_dead()
                    raise error_for(code, where)
                if code in REJOIN_ERRORS:
                    self.needs_rejoin = True
                    if code != ErrorCode.REBALANCE_IN_PROGRESS:
                        with self._lock:
                            # Only if the commit spoke for the generation we are in: one
                            # sent before a (cooperative, background) rejoin moved on
                            # must not wipe the new membership.
                            if generation == self.generation:
                                self.member_id, self.generation = "", -1
                    raise CommitFailedError(
                        f"{where}: {code.name}: the group rebalanced; this member no longer "
                        f"owns the partition (poll again to rejoin)")
                raise error_for(code, where)

    def fetch_committed(self, partitions: Iterable[TopicPartition],
                        timeout_ms: int) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        partitions = list(partitions)
        if not partitions:
            return {}
        body = offset_fetch_request(self.group_id, partitions)

        def attempt(deadline: Deadline) -> dict[TopicPartition, OffsetAndMetadata | None]:
            answer = self.send_to_coordinator(ApiKey.OFFSET_FETCH, body, deadline)
            try:
                return committed_offsets(answer, self.group_id)
            except KafkaError as exc:
                if exc.error_code in COORDINATOR_ERRORS:
                    self.coordinator_dead()
                raise

        return self.client.call_with_retries(attempt, timeout_ms)

    # -- leaving ----------------------------------------------------------------------------

    def leave(self, timeout_ms: int = 5_000) -> None:
        """LeaveGroup (so the others rebalance now, not after our session timeout)."""
        self._stop.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=2)
        with self._lock:
            member_id, self.member_id, self.generation = self.member_id, "", -1
        self._send_leave(member_id, timeout_ms)

    def stop_heartbeats(self) -> None:
        self._stop.set()


def topics_matching(pattern: re.Pattern, names: Iterable[str]) -> list[str]:
    """Subscribed topics for a pattern: full matches, internal topics left out."""
    return sorted(n for n in names if not n.startswith("__") and pattern.fullmatch(n))
