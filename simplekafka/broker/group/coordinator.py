"""The group coordinator: consumer groups, rebalances and committed offsets, on the broker.

Which broker coordinates a group is decided by ``__consumer_offsets``: the
leader of partition ``partition_for(group_id, N)`` (see ``group.records``).
FindCoordinator answers with that leader (creating the topic on first use);
every other group request sent to a broker that does not lead the group's
partition gets NOT_COORDINATOR, and one that has just become leader answers
COORDINATOR_LOAD_IN_PROGRESS until it has read the partition back.

A rebalance is Kafka's two-round protocol. JoinGroup: every member says which
assignors it supports; the coordinator waits until all known members have
(re)joined, or the rebalance timeout passes, bumps the generation, picks the
protocol all members share, and answers; the leader's answer lists every
member's subscription. SyncGroup: the leader sends the assignment it computed
(the broker never looks inside), everyone receives their share, and the group
is Stable. Heartbeats keep members alive (a member silent for its session
timeout is removed and the others rebalance) and tell them when to rejoin.

Commits are appended to the group's ``__consumer_offsets`` partition with
acks=all semantics and acknowledged only once the high watermark passed them,
so a commit the client saw succeed survives the coordinator's broker (the
records and their persistence are ``metadata_manager``'s). The coordinator
answers with result values (``JoinResult``, ``SyncResult``, ...), now or
through a Deferred; ``apis/groups.py`` turns them into each version's response.

It takes plain arguments, as Kafka's ``GroupCoordinator.handleJoinGroup`` and
its siblings do: what a request version means (no rebalance timeout before
JoinGroup v1, no static membership before v5, KIP-394's "join again with the
member id I give you" from v4) is decided in ``apis/groups.py``, which passes
the values and flags. Which ``__consumer_offsets`` partitions it owns, and
when it loads and unloads them, is ``coordinator.runtime``'s.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from twisted.internet import defer

from simplekafka.broker.collaborators import Config, DelayedCall, Reactor, ZooKeeperHandle
from simplekafka.broker.coordinator.runtime import (
    CoordinatorPartitions,
    InternalTopicReplicas,
    now_ms,
)
from simplekafka.broker.group.metadata_manager import GroupMetadataManager, expired_offsets
from simplekafka.broker.group.records import OFFSETS_TOPIC, GroupValue, OffsetValue
from simplekafka.broker.group.state import CONSUMER_PROTOCOL_TYPE, Group, GroupState, Member
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import Node

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

MIN_SESSION_TIMEOUT_MS = 1_000
MAX_SESSION_TIMEOUT_MS = 1_800_000
OFFSET_METADATA_MAX_BYTES = 4096
MAX_GROUP_ID_BYTES = 32_767  # what an int16-length string can carry
CONSUMER_PROTOCOL = "consumer"

class JoinedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes  # its subscription, for the chosen protocol


class JoinResult(NamedTuple):
    """A JoinGroup round's outcome for one member (the leader's lists every member)."""

    error_code: ErrorCode
    generation: int = -1
    protocol: str = ""
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()


class SyncResult(NamedTuple):
    error_code: ErrorCode
    assignment: bytes = b""


class LeaveResult(NamedTuple):
    error_code: ErrorCode
    members: tuple[tuple[str, str | None, ErrorCode], ...]  # (member id, instance id, outcome)


class CommittedOffset(NamedTuple):
    topic: str
    partition: int
    offset: int = -1  # -1: nothing committed
    leader_epoch: int = -1
    metadata: str = ""
    error_code: ErrorCode = ErrorCode.NONE  # UNSTABLE_OFFSET_COMMIT: a commit is pending


class OffsetFetchResult(NamedTuple):
    error_code: ErrorCode
    offsets: tuple[CommittedOffset, ...] = ()


class ListGroupsResult(NamedTuple):
    error_code: ErrorCode
    groups: tuple[tuple[str, str, str], ...]  # (group id, protocol type, state)


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class GroupDescription(NamedTuple):
    error_code: ErrorCode
    group_id: str
    state: str = GroupState.DEAD.value
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


# (topic, partition, outcome) per committed offset, in the order asked
CommitResult = list[tuple[str, int, ErrorCode]]


class PartitionCommit(NamedTuple):
    """One offset an OffsetCommit or TxnOffsetCommit asks to commit."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1  # OffsetCommit v1's; -1: when the coordinator takes it


class GroupCoordinator:
    """Every group whose ``__consumer_offsets`` partition this broker leads."""

    def __init__(self, config: Config, cache: MetadataCache, replicas: InternalTopicReplicas,
                 reactor: Reactor, zookeeper: ZooKeeperHandle):
        self.config = config
        self.cache = cache
        self.replicas = replicas
        self.reactor = reactor
        self.metadata = GroupMetadataManager(replicas, cache, config, reactor, zookeeper)
        self.groups: dict[str, Group] = {}
        self.ownership = CoordinatorPartitions(
            OFFSETS_TOPIC, reactor, local_leader=self.metadata.local_leader,
            led_partitions=self.metadata.topic_log.led_partitions,
            load=self._load_partition, unload=self._unload_partition)
        # producer id -> group -> offsets written in its open transaction (TxnOffsetCommit)
        self.pending_txn_offsets: dict[int, dict[str, dict[tuple[str, int], OffsetValue]]] = {}
        # group -> partition -> commits (OffsetCommit or TxnOffsetCommit) being written now
        self.commits_in_flight: dict[str, Counter[tuple[str, int]]] = {}
        cache.listeners.append(self.sync_ownership)
        cache.deletion_listeners.append(self.on_partitions_deleted)

    # -- configuration --------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        return self.metadata.num_partitions

    def partition_of(self, group_id: str) -> int:
        return self.metadata.partition_of(group_id)

    def _config(self, key: str, default: int) -> int:
        try:
            value = self.config[key]
        except KeyError:
            return default
        return default if value is None else value

    # -- ownership (``coordinator.runtime``): which groups this broker coordinates --------

    def check_owner(self, group_id: str) -> ErrorCode | None:
        """None if this broker coordinates the group now; else the error to answer."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if len(group_id.encode("utf-8")) > MAX_GROUP_ID_BYTES:
            return ErrorCode.INVALID_GROUP_ID
        return self.ownership.check(self.partition_of(group_id))

    def sync_ownership(self) -> None:
        """After a metadata change: drop partitions no longer led, load newly led ones."""
        self.ownership.sync()

    def _load_partition(self, index: int, partition: Partition) -> None:
        """Rebuild the groups of one partition from its log (later records win)."""
        started = time.monotonic()
        metadata, offsets, records, pending = self.metadata.read_partition(partition)
        for producer_id, groups in pending.items():
            for group_id, held in groups.items():
                self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(
                    group_id, {}).update(held)
        for group_id, value in metadata.items():
            if value is None:
                self._forget(group_id)
                continue
            self.groups[group_id] = self._group_from(group_id, value)
        for group_id, entries in offsets.items():
            group = self.groups.get(group_id)
            if group is None:
                if metadata.get(group_id, 0) is None:
                    continue
                group = self.groups[group_id] = Group(group_id)
            for key, offset in entries.items():
                if offset is None:
                    group.offsets.pop(key, None)
                else:
                    group.offsets[key] = offset
        log.info("%s-%d loaded: %d records, %d groups, in %.3f s", OFFSETS_TOPIC, index,
                 records, sum(1 for g in self.groups if self.partition_of(g) == index),
                 time.monotonic() - started)

    def _group_from(self, group_id: str, value: GroupValue) -> Group:
        # A loaded group starts out Stable (members) or Empty, as Kafka's loadGroup.
        group = Group(group_id, GroupState.STABLE if value.members else GroupState.EMPTY,
                      generation=value.generation,
                      protocol_type=value.protocol_type or None, protocol=value.protocol,
                      leader_id=value.leader, state_timestamp=value.state_timestamp)
        for m in value.members:
            member = Member(m.member_id, m.client_id, m.client_host, m.session_timeout_ms,
                            m.rebalance_timeout_ms, value.protocol_type,
                            [(value.protocol or "", m.subscription)], m.group_instance_id,
                            m.assignment)
            group.members[m.member_id] = member
            self._schedule_expiry(group, member)
        return group

    def _unload_partition(self, index: int) -> None:
        """This broker no longer coordinates partition ``index``: forget its groups."""
        for group_id in [g for g in self.groups if self.partition_of(g) == index]:
            self._forget(group_id, ErrorCode.NOT_COORDINATOR)
        for groups in self.pending_txn_offsets.values():
            for group_id in [g for g in groups if self.partition_of(g) == index]:
                del groups[group_id]
        log.info("%s-%d: groups unloaded (no longer the leader)", OFFSETS_TOPIC, index)

    def _forget(self, group_id: str, code: ErrorCode = ErrorCode.UNKNOWN_MEMBER_ID) -> None:
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        group.transition_to(GroupState.DEAD)
        _cancel(group.join_timer)
        for timer in group.pending_members.values():
            _cancel(timer)
        for member in group.members.values():
            _cancel(member.expiry)
            self._fail_waiters(member, code)

    # -- writing to __consumer_offsets --------------------------------------------------------

    def _store_group(self, group: Group) -> defer.Deferred:
        return self.metadata.store_group(group)

    # -- FindCoordinator ------------------------------------------------------------------

    def find_coordinator(self, group_id: str, listener: str
                         ) -> tuple[ErrorCode, Node | None]:
        """The broker coordinating ``group_id``, its endpoint on ``listener`` (the one the
        request came in on), or why there is none."""

        def answer(code: ErrorCode, node: Node | None = None
                   ) -> tuple[ErrorCode, Node | None]:
            return code, node

        if not group_id or len(group_id.encode("utf-8")) > MAX_GROUP_ID_BYTES:
            return answer(ErrorCode.INVALID_GROUP_ID)
        cache = self.cache
        if OFFSETS_TOPIC not in cache.topics:
            self.metadata.ensure_offsets_topic()
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        state = cache.partition(OFFSETS_TOPIC, self.partition_of(group_id))
        if state is None or state.leader < 0 or not cache.is_alive(state.leader):
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        node = cache.brokers_on(listener).get(state.leader)
        if node is None:
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return answer(ErrorCode.NONE, node)

    # -- JoinGroup ------------------------------------------------------------------------

    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   client_id: str, client_host: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool
                   ) -> JoinResult | defer.Deferred:
        """A JoinResult now (refused, or nothing changed), or a Deferred of one when the
        rebalance completes.

        ``rebalance_timeout_ms`` <= 0 means the session timeout (JoinGroup v0 has
        none); ``require_known_member_id`` (KIP-394, v4+) makes a dynamic member's
        first join answer MEMBER_ID_REQUIRED with the id to come back with."""
        instance_id = group_instance_id

        def refuse(code: ErrorCode, member_id: str = member_id) -> JoinResult:
            return JoinResult(code, member_id=member_id or "")

        code = self.check_owner(group_id)
        if code is not None:
            return refuse(code)
        session = session_timeout_ms
        if not MIN_SESSION_TIMEOUT_MS <= session <= MAX_SESSION_TIMEOUT_MS:
            return refuse(ErrorCode.INVALID_SESSION_TIMEOUT)
        rebalance = rebalance_timeout_ms
        if rebalance is None or rebalance <= 0:
            rebalance = session
        member_id = member_id or ""
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return refuse(ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[group_id] = Group(group_id)
        if not protocol_type or not protocols or not group.supports(
                protocol_type, [name for name, _ in protocols]):
            if not (member_id and set(group.members) == {member_id}):
                return refuse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        static = group.static_member(instance_id)
        if static is not None and not member_id:
            # KIP-345: a static member came back (a restart): it takes its old place.
            return self._replace_static_member(group, static, client_id, client_host,
                                               protocols, session, rebalance)
        if static is not None and static.member_id != member_id:
            return refuse(ErrorCode.FENCED_INSTANCE_ID)
        if not member_id or member_id in group.pending_members:
            if not member_id:
                member_id = f"{instance_id or client_id or 'consumer'}-{uuid.uuid4()}"
                if require_known_member_id and instance_id is None:
                    # KIP-394: the client must come back with this id (so a retried
                    # first join cannot leave a ghost member behind).
                    group.pending_members[member_id] = self.reactor.callLater(
                        session / 1000.0, self._pending_expired, group, member_id)
                    return refuse(ErrorCode.MEMBER_ID_REQUIRED, member_id)
            _cancel(group.pending_members.pop(member_id, None))
            joining = Member(member_id, client_id, client_host, session, rebalance,
                             protocol_type, protocols, instance_id)
            return self._add_member(group, joining)
        member = group.members.get(member_id)
        if member is None:
            return refuse(ErrorCode.UNKNOWN_MEMBER_ID)
        return self._rejoin(group, member, protocols, session, rebalance)

    def _add_member(self, group: Group, member: Member) -> defer.Deferred:
        if not group.members:
            group.protocol_type = member.protocol_type
        group.members[member.member_id] = member
        if group.leader_id is None:
            group.leader_id = member.member_id
        group.new_member_joined = True
        waiter: defer.Deferred = defer.Deferred()
        member.join_waiter = waiter
        self._schedule_expiry(group, member)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"{member.member_id} joined")
        return waiter

    def _replace_static_member(self, group: Group, member: Member, client_id: str,
                               client_host: str, protocols: list, session: int,
                               rebalance: int) -> JoinResult | defer.Deferred:
        """A static member rejoined with no member id: it gets a new one, the old one is
        fenced, and a Stable group does not rebalance (Kafka's
        ``updateStaticMemberAndRebalance``).

        The answer names the leader as it was before, so a restarted leader does not
        think it must assign (a Stable group would not pass its assignment on): the
        member simply syncs and gets its partitions back.
        """
        leader_before = group.leader_id or ""
        old_id, new_id = member.member_id, f"{member.group_instance_id}-{uuid.uuid4()}"
        old_protocols = member.protocols
        self._fail_waiters(member, ErrorCode.FENCED_INSTANCE_ID)
        self._swap_member_id(group, member, new_id)
        log.info("group %r: static member %r rejoined as %s (%s fenced)", group.group_id,
                 member.group_instance_id, new_id, old_id)
        member.client_id, member.client_host = client_id, client_host
        member.protocols = protocols
        member.session_timeout_ms, member.rebalance_timeout_ms = session, rebalance
        self._schedule_expiry(group, member)
        if group.is_in(GroupState.STABLE) and group.select_protocol() == group.protocol:
            generation = group.generation

            def stored(code: ErrorCode) -> JoinResult:
                if code != ErrorCode.NONE:
                    # Not persisted: the old incarnation stays the member (as Kafka reverts).
                    if group.members.get(new_id) is member:
                        member.protocols = old_protocols
                        self._swap_member_id(group, member, old_id)
                    return JoinResult(code, member_id=new_id)
                return JoinResult(ErrorCode.NONE, generation, group.protocol or "",
                                  leader_before, new_id)

            return self._store_group(group).addCallback(stored)
        waiter: defer.Deferred = defer.Deferred()
        member.join_waiter = waiter
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {member.group_instance_id!r} "
                                           f"rejoined during a rebalance or with new protocols")
        return waiter

    @staticmethod
    def _swap_member_id(group: Group, member: Member, new_id: str) -> None:
        old_id = member.member_id
        group.members = {(new_id if mid == old_id else mid): m
                         for mid, m in group.members.items()}
        member.member_id = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id

    def _rejoin(self, group: Group, member: Member, protocols: list, session: int,
                rebalance: int) -> JoinResult | defer.Deferred:
        changed = protocols != member.protocols
        member.protocols = protocols
        member.session_timeout_ms = session
        member.rebalance_timeout_ms = rebalance
        self._schedule_expiry(group, member)
        if not changed and (group.is_in(GroupState.COMPLETING_REBALANCE) or (
                group.is_in(GroupState.STABLE) and member.member_id != group.leader_id)):
            # Nothing new (a retried join, say): the current generation, no rebalance. A
            # Stable group's leader rejoining means it wants a new assignment (Kafka's rule).
            return self._join_result(group, member)
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member.member_id)
        if member.join_waiter is not None and not member.join_waiter.called:
            member.join_waiter.callback(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS,
                                                   member_id=member.member_id))
        waiter: defer.Deferred = defer.Deferred()
        member.join_waiter = waiter
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"{member.member_id} rejoined")
        return waiter

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                if member.sync_waiter is not None and not member.sync_waiter.called:
                    member.sync_waiter.callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                member.sync_waiter = None
        initial = group.is_in(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE)
        group.state_timestamp = now_ms()
        _cancel(group.join_timer)
        log.info("%s: rebalancing (%s)", group.summary(), reason)
        if initial:
            delay = self._config("group.initial.rebalance.delay.ms", 3000)
            group.new_member_joined = False
            group.join_timer = self.reactor.callLater(
                delay / 1000.0, self._initial_delay_done, group,
                max(group.rebalance_timeout_ms() - delay, 0))
            group.initial_delay = True
        else:
            group.initial_delay = False
            group.join_timer = self.reactor.callLater(
                group.rebalance_timeout_ms() / 1000.0, self._complete_join, group)
            self._maybe_complete_join(group)

    def _initial_delay_done(self, group: Group, remaining_ms: int) -> None:
        """A new group waits for more members, extending while they keep coming (KIP-134)."""
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        delay = self._config("group.initial.rebalance.delay.ms", 3000)
        if group.new_member_joined and remaining_ms > 0 and delay > 0:
            group.new_member_joined = False
            step = min(delay, remaining_ms)
            group.join_timer = self.reactor.callLater(step / 1000.0, self._initial_delay_done,
                                                      group, remaining_ms - step)
            return
        group.initial_delay = False
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.is_in(GroupState.PREPARING_REBALANCE) and not group.initial_delay \
                and group.all_rejoined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE) or group.group_id not in self.groups:
            return
        _cancel(group.join_timer)
        group.join_timer = None
        group.initial_delay = False
        for member in [m for m in group.members.values() if m.join_waiter is None]:
            log.info("group %r: %s did not rejoin in time; removed", group.group_id,
                     member.member_id)
            self._remove(group, member, rebalance=False)
        group.generation += 1
        group.state_timestamp = now_ms()
        if not group.members:
            group.transition_to(GroupState.EMPTY)
            group.protocol = None
            group.leader_id = None
            log.info("%s", group.summary())
            self._store_group(group)
            return
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.protocol = group.select_protocol()
        group.transition_to(GroupState.COMPLETING_REBALANCE)
        log.info("%s protocol %s leader %s", group.summary(), group.protocol, group.leader_id)
        for member in group.members.values():
            waiter, member.join_waiter = member.join_waiter, None
            self._schedule_expiry(group, member)
            if waiter is not None and not waiter.called:
                waiter.callback(self._join_result(group, member))

    def _join_result(self, group: Group, member: Member) -> JoinResult:
        members: tuple[JoinedMember, ...] = ()
        if member.member_id == group.leader_id:
            members = tuple(JoinedMember(m.member_id, m.group_instance_id,
                                         m.metadata_for(group.protocol or ""))
                            for m in group.members.values())
        return JoinResult(ErrorCode.NONE, group.generation, group.protocol or "",
                          group.leader_id or "", member.member_id, members)

    # -- SyncGroup ------------------------------------------------------------------------

    def sync_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   generation_id: int, assignments: Mapping[str, bytes]
                   ) -> SyncResult | defer.Deferred:
        """The member's assignment, now (Stable) or once the leader's is stored; only the
        leader's ``assignments`` (member id -> bytes the broker never reads) count."""
        code = self.check_owner(group_id)
        if code is not None:
            return SyncResult(code)
        group = self.groups.get(group_id)
        if group is not None and group.is_fenced(member_id, group_instance_id):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id) if group else None
        if group is None or member is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self._schedule_expiry(group, member)
        if group.is_in(GroupState.STABLE):
            return SyncResult(ErrorCode.NONE, member.assignment)
        if not group.is_in(GroupState.COMPLETING_REBALANCE):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        waiter: defer.Deferred = defer.Deferred()
        member.sync_waiter = waiter
        if member.member_id == group.leader_id:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            generation = group.generation
            self._store_group(group).addCallback(self._assignment_stored, group, generation)
        return waiter

    def _assignment_stored(self, code: ErrorCode, group: Group, generation: int) -> None:
        if not group.is_in(GroupState.COMPLETING_REBALANCE) or group.generation != generation:
            return
        if code != ErrorCode.NONE:
            log.warning("%s: storing the assignment failed (%s)", group.summary(), code.name)
            for member in group.members.values():
                member.assignment = b""
                if member.sync_waiter is not None and not member.sync_waiter.called:
                    member.sync_waiter.callback(SyncResult(code))
                member.sync_waiter = None
            self._prepare_rebalance(group, "assignment not stored")
            return
        group.transition_to(GroupState.STABLE)
        group.state_timestamp = now_ms()
        log.info("%s", group.summary())
        for member in group.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is not None and not waiter.called:
                waiter.callback(SyncResult(ErrorCode.NONE, member.assignment))

    # -- Heartbeat, LeaveGroup, session expiry --------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> ErrorCode:
        def answer(code: ErrorCode) -> ErrorCode:
            return code

        code = self.check_owner(group_id)
        if code is not None:
            return answer(code)
        group = self.groups.get(group_id)
        if group is not None and group.is_fenced(member_id, group_instance_id):
            return answer(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id) if group else None
        if group is None or member is None or group.is_in(GroupState.EMPTY):
            return answer(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._schedule_expiry(group, member)
            return answer(ErrorCode.REBALANCE_IN_PROGRESS)
        if generation_id != group.generation:
            return answer(ErrorCode.ILLEGAL_GENERATION)
        self._schedule_expiry(group, member)
        return answer(ErrorCode.NONE)

    def leave_group(self, group_id: str, leaving: Iterable[tuple[str, str | None]]
                    ) -> LeaveResult:
        """Members leave, each by (member id, group instance id): KIP-345's static members
        by instance id, their member id possibly empty."""
        code = self.check_owner(group_id)
        group = self.groups.get(group_id) if code is None else None
        results = []
        for member_id, instance_id in leaving:
            member_code = code or ErrorCode.NONE
            static = group.static_member(instance_id) if group is not None else None
            if code is None and instance_id is not None:
                # A static member leaves by instance id; its member id may be left empty.
                if static is None:
                    member_code = ErrorCode.UNKNOWN_MEMBER_ID
                elif member_id and member_id != static.member_id:
                    member_code = ErrorCode.FENCED_INSTANCE_ID
                else:
                    member_id = static.member_id
            if code is None and member_code == ErrorCode.NONE:
                if group is None:
                    member_code = ErrorCode.UNKNOWN_MEMBER_ID
                elif member_id in group.pending_members:
                    _cancel(group.pending_members.pop(member_id))
                elif member_id in group.members:
                    member = group.members[member_id]
                    log.info("group %r: %s left", group.group_id, member_id)
                    self._fail_waiters(member, ErrorCode.UNKNOWN_MEMBER_ID)
                    self._remove(group, member)
                else:
                    member_code = ErrorCode.UNKNOWN_MEMBER_ID
            results.append((member_id, instance_id, member_code))
        return LeaveResult(code or ErrorCode.NONE, tuple(results))

    def _schedule_expiry(self, group: Group, member: Member) -> None:
        _cancel(member.expiry)
        member.expiry = self.reactor.callLater(member.session_timeout_ms / 1000.0,
                                               self._member_expired, group, member.member_id)

    def _member_expired(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if member.join_waiter is not None:
            self._schedule_expiry(group, member)  # waiting in JoinGroup counts as alive
            return
        log.info("group %r: %s's session expired; removed", group.group_id, member_id)
        self._fail_waiters(member, ErrorCode.UNKNOWN_MEMBER_ID)
        self._remove(group, member)

    def _pending_expired(self, group: Group, member_id: str) -> None:
        group.pending_members.pop(member_id, None)

    def _remove(self, group: Group, member: Member, rebalance: bool = True) -> None:
        _cancel(member.expiry)
        group.members.pop(member.member_id, None)
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)
        if not rebalance:
            return
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"{member.member_id} left")
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    @staticmethod
    def _fail_waiters(member: Member, code: ErrorCode) -> None:
        join, member.join_waiter = member.join_waiter, None
        sync, member.sync_waiter = member.sync_waiter, None
        if join is not None and not join.called:
            join.callback(JoinResult(code, member_id=member.member_id))
        if sync is not None and not sync.called:
            sync.callback(SyncResult(code))

    # -- OffsetCommit, OffsetFetch --------------------------------------------------------

    def offset_commit(self, group_id: str, generation: int, member_id: str,
                      group_instance_id: str | None, offsets: list[PartitionCommit]
                      ) -> CommitResult | defer.Deferred:
        """Each offset's outcome, once the accepted ones are replicated (acks=all). A
        consumer outside any group commits with generation -1 and no member id."""
        instance_id = group_instance_id
        results: list[list] = []  # [topic, partition, code], in the order asked

        def answer() -> CommitResult:
            return [(topic, index, code) for topic, index, code in results]

        def everyone(code: ErrorCode) -> CommitResult:
            return [(p.topic, p.partition, code) for p in offsets]

        code = self.check_owner(group_id)
        if code is not None:
            return everyone(code)
        group = self.groups.get(group_id)
        if group is not None and group.is_fenced(member_id, instance_id):
            return everyone(ErrorCode.FENCED_INSTANCE_ID)
        code = self._commit_allowed(group, generation, member_id)
        if code is not None:
            return everyone(code)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_expiry(group, member)
        cache = self.cache
        now = now_ms()
        accepted: list[tuple[tuple[str, int], OffsetValue, list]] = []
        for p in offsets:
            part = [p.topic, p.partition, ErrorCode.NONE]
            results.append(part)
            metadata = p.metadata
            if len(metadata.encode("utf-8")) > OFFSET_METADATA_MAX_BYTES:
                part[2] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            if cache.partition(p.topic, p.partition) is None:
                part[2] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            value = OffsetValue(p.offset, p.leader_epoch, metadata,
                                p.commit_timestamp if p.commit_timestamp >= 0 else now)
            accepted.append(((p.topic, p.partition), value, part))
        if not accepted:
            return answer()

        def stored(code: ErrorCode) -> CommitResult:
            for key, value, part in accepted:
                if code == ErrorCode.NONE:
                    if self.groups.get(group_id) is group:
                        group.offsets[key] = value
                else:
                    part[2] = code
            return answer()

        written = self.metadata.store_offsets(
            group_id, [(key, value) for key, value, _ in accepted])
        return self._in_flight(group_id, [key for key, _, _ in accepted],
                               written).addCallback(stored)

    @staticmethod
    def _commit_allowed(group: Group | None, generation: int, member_id: str) -> ErrorCode | None:
        if group is None or group.is_in(GroupState.EMPTY):
            # A consumer outside any group (assign + commit) uses generation -1.
            if generation < 0 and not member_id:
                return None
            return ErrorCode.UNKNOWN_MEMBER_ID if group is None or member_id \
                else ErrorCode.ILLEGAL_GENERATION
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def _in_flight(self, group_id: str, keys: list[tuple[str, int]],
                   written: defer.Deferred) -> defer.Deferred:
        """Count ``keys`` as being committed until ``written`` fires (Kafka's
        pendingOffsetCommits), so a stable OffsetFetch does not answer past them."""
        counts = self.commits_in_flight.setdefault(group_id, Counter())
        counts.update(keys)

        def done(result: object) -> object:
            counts.subtract(keys)
            for key in keys:
                if counts[key] <= 0:
                    del counts[key]
            if not counts and self.commits_in_flight.get(group_id) is counts:
                del self.commits_in_flight[group_id]
            return result

        return written.addBoth(done)

    def has_pending_commit(self, group_id: str, key: tuple[str, int]) -> bool:
        """Whether an offset of ``key`` is being written or waits in an open transaction
        (Kafka's hasPendingOffsetCommitsForTopicPartition)."""
        if key in self.commits_in_flight.get(group_id, ()):
            return True
        return any(key in groups.get(group_id, ())
                   for groups in self.pending_txn_offsets.values())

    def offset_fetch(self, group_id: str, partitions: Iterable[tuple[str, int]] | None,
                     require_stable: bool = False) -> OffsetFetchResult:
        """The committed offsets of the partitions asked for (all of the group's if None).

        ``require_stable`` (OffsetFetch v7+, KIP-447; librdkafka sets it under
        read_committed): a partition with a commit pending, in an open transaction or
        still being written, answers -1 and UNSTABLE_OFFSET_COMMIT and the client asks
        again, so a consumer never starts from an offset its transaction may yet move."""
        code = self.check_owner(group_id)
        if code is not None:
            return OffsetFetchResult(code)
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        wanted = sorted(offsets) if partitions is None else list(partitions)
        found = []
        for name, index in wanted:
            if require_stable and self.has_pending_commit(group_id, (name, index)):
                found.append(CommittedOffset(name, index,
                                             error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT))
                continue
            value = offsets.get((name, index))
            found.append(CommittedOffset(name, index, value.offset, value.leader_epoch,
                                         value.metadata) if value else
                         CommittedOffset(name, index))
        return OffsetFetchResult(ErrorCode.NONE, tuple(found))

    # -- ListGroups, DescribeGroups, DeleteGroups -----------------------------------------

    def list_groups(self) -> ListGroupsResult:
        self.sync_ownership()
        code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.ownership.loading \
            else ErrorCode.NONE
        return ListGroupsResult(code, tuple(
            (g.group_id, g.protocol_type or "", g.state.value)
            for g in sorted(self.groups.values(), key=lambda g: g.group_id)
            if not g.is_in(GroupState.DEAD)))

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        return [self._describe(group_id) for group_id in group_ids]

    def _describe(self, group_id: str) -> GroupDescription:
        code = self.check_owner(group_id)
        if code is not None:
            return GroupDescription(code, group_id)
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(ErrorCode.NONE, group_id)
        stable = group.is_in(GroupState.STABLE)
        protocol = group.protocol or ""
        return GroupDescription(
            ErrorCode.NONE, group_id, group.state.value, group.protocol_type or "",
            protocol if stable else "",
            tuple(MemberDescription(m.member_id, m.group_instance_id, m.client_id,
                                    m.client_host, m.metadata_for(protocol) if stable else b"",
                                    m.assignment if stable else b"")
                  for m in group.members.values()))

    def delete_groups(self, group_ids: Iterable[str]
                      ) -> list[tuple[str, ErrorCode]] | defer.Deferred:
        """(group id, outcome) per group asked, once the deletions are replicated."""
        results: list[list] = []
        waits = []
        for group_id in group_ids:
            result = [group_id, ErrorCode.NONE]
            results.append(result)
            code = self.check_owner(group_id)
            group = self.groups.get(group_id) if code is None else None
            if code is None and group is None:
                code = ErrorCode.GROUP_ID_NOT_FOUND
            elif code is None and group is not None and group.members:
                code = ErrorCode.NON_EMPTY_GROUP
            if code is not None or group is None:
                result[1] = code
                continue
            waits.append(self._delete(group).addCallback(_set_error_code, result))

        def outcome(_: object = None) -> list[tuple[str, ErrorCode]]:
            return [(group_id, code) for group_id, code in results]

        if not waits:
            return outcome()
        return defer.gatherResults(waits).addCallback(outcome)

    def _delete(self, group: Group, offsets: list | None = None) -> defer.Deferred:
        """Tombstone a group's offsets (all, or those listed) and, if all, the group itself."""
        keys = list(group.offsets) if offsets is None else offsets
        if not keys and offsets is not None:
            return defer.succeed(ErrorCode.NONE)

        def stored(code: ErrorCode) -> ErrorCode:
            if code == ErrorCode.NONE:
                for key in keys:
                    group.offsets.pop(key, None)
                if offsets is None and self.groups.get(group.group_id) is group:
                    self._forget(group.group_id)
            return code

        return self.metadata.delete(group.group_id, keys, whole_group=offsets is None
                                    ).addCallback(stored)

    # -- OffsetDelete ---------------------------------------------------------------------

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]] | defer.Deferred:
        """Remove a group's committed offsets of ``partitions`` (Kafka's
        ``handleDeleteOffsets``): the group's error, or each partition's outcome.

        An empty group loses any of them; a "consumer" group with members keeps those of
        topics a member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC) and loses the others;
        a group of another protocol type with members refuses (NON_EMPTY_GROUP). An
        empty group left without offsets is removed, as Kafka's cleanup does."""
        code = self.check_owner(group_id)
        if code is not None:
            return code, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        outcome: dict[tuple[str, int], ErrorCode] = {}
        for key in partitions:
            if self.cache.partition(*key) is None:
                outcome[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        known = [key for key in partitions if key not in outcome]
        if group.is_in(GroupState.EMPTY):
            eligible = known
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = group.subscribed_topics()
            eligible = []
            for key in known:
                if subscribed is None or key[0] in subscribed:
                    outcome[key] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(key)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        outcome.update(dict.fromkeys(eligible, ErrorCode.NONE))
        stored = [key for key in eligible if key in group.offsets]
        if not stored:
            return ErrorCode.NONE, outcome

        def deleted(code: ErrorCode) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
            if code != ErrorCode.NONE:
                return code, {}
            log.info("group %r: offsets of %d partitions deleted", group_id, len(stored))
            if group.is_in(GroupState.EMPTY) and not group.offsets \
                    and self.groups.get(group_id) is group:
                self._delete(group)  # nothing left: the group goes, tombstoned
            return ErrorCode.NONE, outcome

        return self._delete(group, stored).addCallback(deleted)

    # -- deleted topics -------------------------------------------------------------------

    def on_partitions_deleted(self, partitions: list[tuple[str, int]]) -> None:
        """A topic was deleted: every group forgets its offsets there (tombstoned), as
        Kafka's ``handleDeletedPartitions`` does. A topic re-created under the same name
        then starts without them: its consumers begin at ``auto.offset.reset`` instead
        of at old offsets that would skip the new topic's first records."""
        gone = set(partitions)
        for group in list(self.groups.values()):
            if self.check_owner(group.group_id) is not None:
                continue
            stale = [key for key in group.offsets if key in gone]
            if stale:
                log.info("group %r: %d offsets of deleted partitions removed", group.group_id,
                         len(stale))
                for key in stale:  # at once, so no OffsetFetch answers them meanwhile
                    del group.offsets[key]
                self.metadata.delete(group.group_id, stale, whole_group=False)

    # -- offset expiry --------------------------------------------------------------------

    def expire_offsets(self) -> None:
        """Drop offsets of empty groups older than offsets.retention.minutes (then the group)."""
        retention_ms = self._config("offsets.retention.minutes", 10080) * 60_000
        now = now_ms()
        for group in list(self.groups.values()):
            if not group.is_in(GroupState.EMPTY):
                continue
            if self.check_owner(group.group_id) is not None:
                continue
            old = expired_offsets(group, now, retention_ms)
            if old and len(old) == len(group.offsets):
                log.info("group %r: all %d offsets expired; group removed", group.group_id,
                         len(old))
                self._delete(group)
            elif old:
                log.info("group %r: %d offsets expired", group.group_id, len(old))
                self._delete(group, old)
            elif not group.offsets and not group.members and group.generation == 0:
                self._delete(group)

    # -- TxnOffsetCommit: offsets that count once their transaction commits --------------

    def txn_offset_commit(self, group_id: str, producer_id: int, producer_epoch: int,
                          offsets: list[PartitionCommit], generation: int = -1,
                          member_id: str = "", group_instance_id: str | None = None
                          ) -> CommitResult | defer.Deferred:
        """Write offsets in the producer's transaction (a transactional batch); they stay
        pending, invisible to OffsetFetch, until the transaction's marker reaches this
        group's partition (``complete_transaction``).

        From TxnOffsetCommit v3 (KIP-447) the producer names the consumer it commits for:
        a member that left, an old generation or a replaced static member is refused as an
        OffsetCommit would be, so a zombie's transaction cannot commit offsets."""
        code = self.check_owner(group_id)
        if code is None and (generation >= 0 or member_id or group_instance_id is not None):
            code = self._txn_member_refused(self.groups.get(group_id), generation, member_id,
                                            group_instance_id)
        if code is not None:
            return [(p.topic, p.partition, code) for p in offsets]
        now = now_ms()
        results: list[list] = []
        accepted: list[tuple[tuple[str, int], OffsetValue]] = []
        for p in offsets:
            part = [p.topic, p.partition, ErrorCode.NONE]
            results.append(part)
            metadata = p.metadata
            if len(metadata.encode("utf-8")) > OFFSET_METADATA_MAX_BYTES:
                part[2] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            elif self.cache.partition(p.topic, p.partition) is None:
                part[2] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                accepted.append(((p.topic, p.partition), OffsetValue(
                    p.offset, p.leader_epoch, metadata, now)))

        def answer() -> CommitResult:
            return [(topic, index, code) for topic, index, code in results]

        if not accepted:
            return answer()
        def stored(code: ErrorCode) -> CommitResult:
            if code == ErrorCode.NONE:
                pending = self.pending_txn_offsets.setdefault(producer_id, {})
                pending.setdefault(group_id, {}).update(accepted)
            else:
                for part in results:
                    if part[2] == ErrorCode.NONE:
                        part[2] = code
            return answer()

        return self._in_flight(group_id, [key for key, _ in accepted],
                               self.metadata.store_offsets(group_id, accepted, producer=(
                                   producer_id, producer_epoch))).addCallback(stored)

    @staticmethod
    def _txn_member_refused(group: Group | None, generation: int, member_id: str,
                            group_instance_id: str | None) -> ErrorCode | None:
        """Kafka's check of a transactional commit's member (``validateOffsetCommit``)."""
        if group is None:  # Kafka makes an empty group (generation 0) and checks against it
            return ErrorCode.UNKNOWN_MEMBER_ID if member_id else \
                ErrorCode.ILLEGAL_GENERATION if generation != 0 else None
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id and member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def complete_transaction(self, producer_id: int, partition_index: int,
                             committed: bool) -> None:
        """A marker reached ``__consumer_offsets``-``partition_index``: the producer's
        pending offsets of the groups there become committed, or are dropped."""
        pending = self.pending_txn_offsets.get(producer_id, {})
        for group_id in [g for g in pending if self.partition_of(g) == partition_index]:
            offsets = pending.pop(group_id)
            if not committed:
                continue
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = Group(group_id)
            group.offsets.update(offsets)
        if not pending:
            self.pending_txn_offsets.pop(producer_id, None)

    def shutdown(self) -> None:
        for group_id in list(self.groups):
            self._forget(group_id, ErrorCode.NOT_COORDINATOR)


def _set_error_code(code: ErrorCode, result: list) -> None:
    result[1] = code


def _cancel(timer: DelayedCall | None) -> None:
    if timer is not None and timer.active():
        timer.cancel()
