"""FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete: the group coordinator's
wire side.

The coordinator (``broker/group``) decides and returns result values, now or
through a Deferred (a JoinGroup waits for the rebalance, a commit for its
replication); these handlers turn them into the responses of each version.

They also ask the authorizer first, with Kafka's operations: Describe on the
group to find its coordinator, describe it or fetch its offsets; Read on the
group to join, sync, heartbeat, leave or commit (and Read on each committed
topic); Delete on the group to delete it, or some of its offsets (and Read on each of
their topics); Describe on the cluster to list
every group (else only those the principal may Describe). A refused group
answers GROUP_AUTHORIZATION_FAILED, a refused topic TOPIC_AUTHORIZATION_FAILED,
and nothing refused reaches the coordinator.

What each version means is decided here, and the coordinator gets plain
values: JoinGroup v0 has no rebalance timeout (-1: the session timeout), v4+
requires a known member id (KIP-394), v5+ and OffsetCommit v7+ carry a group
instance id (KIP-345), LeaveGroup v3+ a batch of members, OffsetCommit v1 a
commit timestamp per partition.

Version 0 of OffsetCommit and OffsetFetch is ZooKeeper's, as in Kafka 3.9: the
offsets are written to and read from ``/consumers/<group>/offsets/<topic>/<p>``
(``coordination.consumer_offsets``) by whichever broker is asked, never
``__consumer_offsets``; no group, generation or metadata is kept.

The flexible versions (Kafka 3.9's): FindCoordinator v4+ looks up a batch of keys
(KIP-699), one answer per key; JoinGroup v7+ answers the group's protocol type
and v8+ carries the member's reason for joining (KIP-800, logged), v9 tells the
leader it may skip assigning (always false here: that is for the KIP-848
protocol); SyncGroup v5+ names the protocol type and name, checked against the
group's (INCONSISTENT_GROUP_PROTOCOL) and answered; LeaveGroup v5+ gives each
member's reason (logged); ListGroups v4+ filters by state and answers each
group's state (KIP-518), v5+ by type (every group here is "classic"); OffsetFetch
v8+ asks for several groups at once (KIP-709), each answered on its own.
OffsetCommit v9 and OffsetFetch v9 are KIP-848's: a member epoch stands where
the generation stood, and for a classic group (all of them here, as with
Kafka's old coordinator) it is the generation, -1 meaning none; OffsetFetch
v9's member id and epoch are not checked. FindCoordinator v5 may answer
TRANSACTION_ABORTABLE (never here, nor in Kafka 3.9); v6's share-group key
type (2) answers COORDINATOR_NOT_AVAILABLE (a ZooKeeper-mode broker has no
share coordinator; before v6 it is INVALID_REQUEST), an unknown key type
INVALID_REQUEST.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TypeAlias, TypeVar

from kazoo.client import KazooClient
from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, ZooKeeperHandle, in_worker_thread
from simplekafka.broker.coordinator.runtime import now_or_later
from simplekafka.broker.dispatch import Handler, RequestContext, RequestDispatcher
from simplekafka.broker.group.coordinator import (
    OFFSET_METADATA_MAX_BYTES,
    CommitResult,
    CommittedOffset,
    GroupCoordinator,
    GroupDescription,
    JoinResult,
    OffsetFetchResult,
    PartitionCommit,
    SyncResult,
)
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.coordination.consumer_offsets import get_consumer_offset, set_consumer_offset
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroups,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinators,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestTopics,
    OffsetCommitResponse,
    OffsetCommitResponseTopicsPartitions,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroups,
    OffsetFetchResponseTopicsPartitions,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequestTopics,
)
from simplekafka.protocol.structs import Node

log = logging.getLogger(__name__)

COORDINATOR_KEY_GROUP = 0  # FindCoordinator's key types (Kafka's CoordinatorType)
COORDINATOR_KEY_TRANSACTION = 1
COORDINATOR_KEY_SHARE = 2  # v6 (KIP-932): a share group's coordinator
FIRST_SHARE_KEY_VERSION = 6
CLASSIC_GROUP_TYPE = "classic"  # ListGroups v5's type of every group this coordinator runs
UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648  # Kafka's "not asked for" (INT32_MIN)

R = TypeVar("R")
Answer: TypeAlias = R | defer.Deferred  # now, or once a Deferred fires with it
CommitTopics = Iterable[OffsetCommitRequestTopics] | Iterable[TxnOffsetCommitRequestTopics]
TransactionFinder = Callable[[RequestContext, FindCoordinatorRequest], FindCoordinatorResponse]


def partition_commits(topics: CommitTopics, with_epochs: bool) -> list[PartitionCommit]:
    """The offsets an OffsetCommit or TxnOffsetCommit asks to commit, in the order asked
    (``with_epochs``: the version carries each partition's leader epoch)."""
    return [PartitionCommit(t["name"], p["partition_index"], p["committed_offset"],
                            p["committed_leader_epoch"] if with_epochs else -1,
                            p["committed_metadata"] or "")
            for t in topics for p in t["partitions"]]


def _host(peer: str) -> str:
    return peer.rsplit(":", 1)[0] if peer and ":" in peer else (peer or "")


def commit_readable_topics(authorizer: Authorizer, context: RequestContext,
                           commits: list[PartitionCommit],
                           commit: Callable[[list[PartitionCommit]], Answer[CommitResult]],
                           answer: Callable[[CommitResult], R]) -> Answer[R]:
    """Commit the offsets of the topics ``context`` may Read; the others answer
    TOPIC_AUTHORIZATION_FAILED. OffsetCommit and TxnOffsetCommit check it alike, as Kafka."""
    readable = {topic: authorizer.authorize(context, AclOperation.READ, ResourceType.TOPIC,
                                            topic) for topic in {c.topic for c in commits}}
    if all(readable.values()):
        return now_or_later(commit(commits), answer)
    refused_results = [(c.topic, c.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                       for c in commits if not readable[c.topic]]
    allowed = [c for c in commits if readable[c.topic]]
    if not allowed:
        return answer(refused_results)
    return now_or_later(commit(allowed),
                        lambda results: answer(list(results) + refused_results))


class GroupApis:
    """The group requests' handlers, over one GroupCoordinator (and, for OffsetCommit and
    OffsetFetch v0, ZooKeeper)."""

    def __init__(self, coordinator: GroupCoordinator, authorizer: Authorizer = ALLOW_EVERYONE,
                 find_transaction_coordinator: TransactionFinder | None = None,
                 zookeeper: ZooKeeperHandle | None = None):
        self.coordinator = coordinator
        self.authorizer = authorizer
        self.find_transaction_coordinator = find_transaction_coordinator  # key type 1
        self.zookeeper = zookeeper  # OffsetCommit/OffsetFetch v0 (None: not offered)

    def _group(self, context: RequestContext, operation: AclOperation, group_id: str) -> bool:
        return self.authorizer.authorize(context, operation, ResourceType.GROUP, group_id)

    def _topic(self, context: RequestContext, operation: AclOperation, topic: str) -> bool:
        return self.authorizer.authorize(context, operation, ResourceType.TOPIC, topic)

    def register(self, dispatcher: RequestDispatcher) -> None:
        handlers: list[tuple[ApiKey, Handler]] = [
            (ApiKey.FIND_COORDINATOR, self.find_coordinator),
            (ApiKey.JOIN_GROUP, self.join_group),
            (ApiKey.SYNC_GROUP, self.sync_group),
            (ApiKey.HEARTBEAT, self.heartbeat),
            (ApiKey.LEAVE_GROUP, self.leave_group),
            (ApiKey.OFFSET_COMMIT, self.offset_commit),
            (ApiKey.OFFSET_FETCH, self.offset_fetch),
            (ApiKey.LIST_GROUPS, self.list_groups),
            (ApiKey.DESCRIBE_GROUPS, self.describe_groups),
            (ApiKey.DELETE_GROUPS, self.delete_groups),
            (ApiKey.OFFSET_DELETE, self.offset_delete),
        ]
        for key, handler in handlers:
            dispatcher.register(key, handler)

    # -- FindCoordinator ------------------------------------------------------------------

    def find_coordinator(self, context: RequestContext, request: FindCoordinatorRequest
                         ) -> FindCoordinatorResponse:
        version = context.api_version
        key_type = request["key_type"] if version >= 1 else COORDINATOR_KEY_GROUP
        if version < 4:
            return self._find_one(context, key_type, request["key"])
        coordinators: list[FindCoordinatorResponseCoordinators] = []
        for key in request["coordinator_keys"]:  # v4+ (KIP-699): each key on its own
            found = self._find_one(context, key_type, key)
            coordinators.append({"key": key, "node_id": found["node_id"],
                                 "host": found["host"], "port": found["port"],
                                 "error_code": found["error_code"],
                                 "error_message": found["error_message"]})
        return {"throttle_time_ms": 0, "coordinators": coordinators}

    def _find_one(self, context: RequestContext, key_type: int, key: str
                  ) -> FindCoordinatorResponse:
        if key_type == COORDINATOR_KEY_TRANSACTION:
            if not self.authorizer.authorize(context, AclOperation.DESCRIBE,
                                             ResourceType.TRANSACTIONAL_ID, key):
                return _find_coordinator_answer(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
            if self.find_transaction_coordinator is not None:
                return self.find_transaction_coordinator(
                    context, {"key": key, "key_type": key_type})
            return _find_coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
        if key_type == COORDINATOR_KEY_SHARE:  # Kafka 3.9's answers, in its order
            if context.api_version < FIRST_SHARE_KEY_VERSION:
                return _find_coordinator_answer(ErrorCode.INVALID_REQUEST, None)
            if not self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                             ResourceType.CLUSTER, CLUSTER_NAME):
                return _find_coordinator_answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
            return _find_coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
        if key_type != COORDINATOR_KEY_GROUP:
            return _find_coordinator_answer(ErrorCode.INVALID_REQUEST, None)
        if not self._group(context, AclOperation.DESCRIBE, key):
            return _find_coordinator_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        code, node = self.coordinator.find_coordinator(key or "", context.listener)
        return _find_coordinator_answer(code, node)

    # -- membership -------------------------------------------------------------------------

    def join_group(self, context: RequestContext, request: JoinGroupRequest
                   ) -> Answer[JoinGroupResponse]:
        group_id = request["group_id"]
        if not self._group(context, AclOperation.READ, group_id):
            return _join_answer(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        version = context.api_version
        reason = request["reason"] if version >= 8 else None
        if reason:
            log.info("group %r: member %r joins: %s", group_id, request["member_id"], reason)
        protocol_type = request["protocol_type"]

        def answer(result: JoinResult) -> JoinGroupResponse:
            body = _join_answer(result)
            if result.error_code == ErrorCode.NONE:  # the group's, which the member's matches
                body["protocol_type"] = protocol_type
            return body

        return now_or_later(self.coordinator.join_group(
            group_id, request["member_id"] or "",
            request["group_instance_id"] if version >= 5 else None,
            context.client_id or "", _host(context.peer), request["session_timeout_ms"],
            request["rebalance_timeout_ms"] if version >= 1 else -1, protocol_type,
            [(p["name"], bytes(p["metadata"] or b"")) for p in request["protocols"]],
            require_known_member_id=version >= 4), answer)

    def sync_group(self, context: RequestContext, request: SyncGroupRequest
                   ) -> Answer[SyncGroupResponse]:
        if not self._group(context, AclOperation.READ, request["group_id"]):
            return _sync_answer(SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        if context.api_version >= 5:
            return self._sync_group_v5(request)
        return now_or_later(self.coordinator.sync_group(
            request["group_id"], request["member_id"],
            request["group_instance_id"] if context.api_version >= 3 else None,
            request["generation_id"], _assignments(request)), _sync_answer)

    def _sync_group_v5(self, request: SyncGroupRequest) -> Answer[SyncGroupResponse]:
        """SyncGroup v5+: the member's protocol type and name must be the group's (a null
        one is not checked), and the answer names the group's."""
        group = self.coordinator.groups.get(request["group_id"])
        if group is not None and request["member_id"] in group.members \
                and request["generation_id"] == group.generation and (
                    request["protocol_type"] not in (None, group.protocol_type)
                    or request["protocol_name"] not in (None, group.protocol)):
            return _sync_answer(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))

        def answer(result: SyncResult) -> SyncGroupResponse:
            body = _sync_answer(result)
            if result.error_code == ErrorCode.NONE and group is not None:
                body["protocol_type"] = group.protocol_type
                body["protocol_name"] = group.protocol
            return body

        return now_or_later(self.coordinator.sync_group(
            request["group_id"], request["member_id"], request["group_instance_id"],
            request["generation_id"], _assignments(request)), answer)

    def heartbeat(self, context: RequestContext, request: HeartbeatRequest
                  ) -> HeartbeatResponse:
        if not self._group(context, AclOperation.READ, request["group_id"]):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
        return {"throttle_time_ms": 0,
                "error_code": self.coordinator.heartbeat(
                    request["group_id"], request["member_id"],
                    request["group_instance_id"] if context.api_version >= 3 else None,
                    request["generation_id"])}

    def leave_group(self, context: RequestContext, request: LeaveGroupRequest
                    ) -> LeaveGroupResponse:
        group_id = request["group_id"]
        if not self._group(context, AclOperation.READ, group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    "members": []}
        leaving: list[tuple[str, str | None]]
        if context.api_version >= 3:  # KIP-345: a batch, static members by instance id
            members = request["members"]
            leaving = [(m["member_id"] or "", m["group_instance_id"]) for m in members]
            for m in members:
                reason = m["reason"] if context.api_version >= 5 else None
                if reason:  # KIP-800
                    log.info("group %r: member %r leaves: %s", group_id,
                             m["member_id"] or m["group_instance_id"], reason)
        else:
            leaving = [(request["member_id"], None)]
        result = self.coordinator.leave_group(group_id, leaving)
        top = result.error_code
        if context.api_version < 3 and result.members:
            top = result.members[0][2]  # one member, no per-member answers before v3
        return {"throttle_time_ms": 0, "error_code": top, "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            for member_id, instance_id, code in result.members]}

    # -- OffsetCommit, OffsetFetch ----------------------------------------------------------

    def offset_commit(self, context: RequestContext, request: OffsetCommitRequest
                      ) -> Answer[OffsetCommitResponse]:
        version = context.api_version
        commits = partition_commits(request["topics"], with_epochs=version >= 6)
        if version == 1:  # each partition's commit timestamp (v1 only)
            stamps = [p["commit_timestamp"]
                      for t in request["topics"] for p in t["partitions"]]
            commits = [c._replace(commit_timestamp=stamp)
                       for c, stamp in zip(commits, stamps, strict=True)]
        commit: Callable[[list[PartitionCommit]], Answer[CommitResult]]
        if version == 0:  # ZooKeeper's offsets, as Kafka 3.9's commitOffsetsToZookeeper
            commit = partial(self._commit_to_zookeeper, request["group_id"])
        else:
            commit = partial(self._offset_commit, context, request)
        if not self.authorizer.enabled:
            return now_or_later(commit(commits), _commit_answer)
        if not self._group(context, AclOperation.READ, request["group_id"]):
            return _commit_answer([(c.topic, c.partition, ErrorCode.GROUP_AUTHORIZATION_FAILED)
                                   for c in commits])
        return commit_readable_topics(self.authorizer, context, commits, commit,
                                      _commit_answer)

    def _offset_commit(self, context: RequestContext, request: OffsetCommitRequest,
                       commits: list[PartitionCommit]) -> Answer[CommitResult]:
        """v1+: through the coordinator. v9's member epoch is a classic group's generation
        (Kafka's old coordinator takes it so); -1 with no member id: a simple consumer."""
        return self.coordinator.offset_commit(
            request["group_id"], request["generation_id_or_member_epoch"], request["member_id"],
            request["group_instance_id"] if context.api_version >= 7 else None, commits)

    def _commit_to_zookeeper(self, group_id: str, commits: list[PartitionCommit]
                             ) -> Answer[CommitResult]:
        zk = self.zookeeper() if self.zookeeper is not None else None
        if zk is None:
            return [(c.topic, c.partition, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                    for c in commits]
        return in_worker_thread(self.coordinator.reactor, _write_zookeeper_offsets, zk,
                                self.coordinator.cache, group_id, commits)

    def offset_fetch(self, context: RequestContext, request: OffsetFetchRequest
                     ) -> Answer[OffsetFetchResponse]:
        if context.api_version == 0:
            return self._offset_fetch_from_zookeeper(context, request["group_id"],
                                                     request["topics"] or [])
        stable = context.api_version >= 7 and request["require_stable"]
        if context.api_version < 8:
            return self._offset_fetch_group(context, request["group_id"], request["topics"],
                                            stable)
        groups: list[OffsetFetchResponseGroups] = []  # v8+ (KIP-709): each on its own
        for asked in request["groups"]:  # v9's member id and epoch: not checked (classic)
            one = self._offset_fetch_group(context, asked["group_id"], asked["topics"],
                                           stable)
            groups.append({"group_id": asked["group_id"],
                           "error_code": one.get("error_code", ErrorCode.NONE),
                           "topics": one.get("topics", [])})
        return {"throttle_time_ms": 0, "groups": groups}

    def _offset_fetch_group(self, context: RequestContext, group_id: str,
                            topics: Sequence[OffsetFetchRequestTopics] | None,
                            require_stable: bool = False) -> OffsetFetchResponse:
        refused: set[str] = set()
        if not self._group(context, AclOperation.DESCRIBE, group_id):
            result = OffsetFetchResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            result = self.coordinator.offset_fetch(
                group_id, None if topics is None else
                [(t["name"], index) for t in topics for index in t["partition_indexes"]],
                require_stable)
            if self.authorizer.enabled and result.error_code == ErrorCode.NONE:
                result, refused = self._visible_offsets(context, topics is None, result)
        if result.error_code != ErrorCode.NONE:
            return _offset_fetch_error(context.api_version, result.error_code, topics)
        by_topic: dict[str, list[OffsetFetchResponseTopicsPartitions]] = {}
        for found in result.offsets:
            by_topic.setdefault(found.topic, []).append({
                "partition_index": found.partition, "committed_offset": found.offset,
                "committed_leader_epoch": found.leader_epoch, "metadata": found.metadata,
                "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED if found.topic in refused
                else found.error_code})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "topics": [{"name": name, "partitions": parts}
                           for name, parts in by_topic.items()]}

    def _offset_fetch_from_zookeeper(self, context: RequestContext, group_id: str,
                                     topics: Sequence[OffsetFetchRequestTopics]
                                     ) -> Answer[OffsetFetchResponse]:
        """v0, as Kafka 3.9's handleOffsetFetchRequestFromZookeeper: per partition, the
        offset in ZooKeeper, else -1 and UNKNOWN_TOPIC_OR_PARTITION (a partition with no
        commit too); a topic the principal may not Describe, TOPIC_AUTHORIZATION_FAILED."""
        if not self._group(context, AclOperation.DESCRIBE, group_id):
            return _offset_fetch_error(0, ErrorCode.GROUP_AUTHORIZATION_FAILED, topics)
        zk = self.zookeeper() if self.zookeeper is not None else None
        if zk is None:
            return _offset_fetch_error(0, ErrorCode.COORDINATOR_NOT_AVAILABLE, topics)
        asked = [(t["name"], p) for t in topics for p in t["partition_indexes"]]
        refused = {name for name, _ in asked
                   if not self._topic(context, AclOperation.DESCRIBE, name)}

        def answer(found: dict[tuple[str, int], tuple[int, ErrorCode]]
                   ) -> OffsetFetchResponse:
            by_topic: dict[str, list[OffsetFetchResponseTopicsPartitions]] = {}
            for name, index in asked:
                offset, code = ((-1, ErrorCode.TOPIC_AUTHORIZATION_FAILED) if name in refused
                                else found[(name, index)])
                by_topic.setdefault(name, []).append({
                    "partition_index": index, "committed_offset": offset, "metadata": "",
                    "error_code": code})
            return {"throttle_time_ms": 0, "topics": [
                {"name": name, "partitions": parts} for name, parts in by_topic.items()]}

        return in_worker_thread(self.coordinator.reactor, _read_zookeeper_offsets, zk,
                                self.coordinator.cache, group_id,
                                [key for key in asked if key[0] not in refused]
                                ).addCallback(answer)

    def _visible_offsets(self, context: RequestContext, asked_all: bool,
                         result: OffsetFetchResult) -> tuple[OffsetFetchResult, set[str]]:
        """Asked for all: only topics the principal may Describe; asked by name: the others
        (returned) answer offset -1 and TOPIC_AUTHORIZATION_FAILED per partition."""
        refused = {found.topic for found in result.offsets
                   if not self._topic(context, AclOperation.DESCRIBE, found.topic)}
        if not refused:
            return result, refused
        offsets = []
        for found in result.offsets:
            if found.topic not in refused:
                offsets.append(found)
            elif not asked_all:
                offsets.append(CommittedOffset(found.topic, found.partition))
        return OffsetFetchResult(result.error_code, tuple(offsets)), refused

    # -- ListGroups, DescribeGroups, DeleteGroups, OffsetDelete -----------------------------

    def list_groups(self, context: RequestContext, request: ListGroupsRequest
                    ) -> ListGroupsResponse:
        result = self.coordinator.list_groups()
        groups = result.groups
        version = context.api_version
        states = {s.lower() for s in request["states_filter"]} if version >= 4 else set()
        if states:  # KIP-518: only groups in these states (names as Kafka's, any case)
            groups = tuple(g for g in groups if g[2].lower() in states)
        types = request["types_filter"] if version >= 5 else ()
        if types and CLASSIC_GROUP_TYPE not in {t.lower() for t in types}:
            groups = ()  # KIP-848: every group here is classic, as Kafka's old coordinator's
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            groups = tuple(g for g in groups if self._group(context, AclOperation.DESCRIBE,
                                                            g[0]))
        return {"throttle_time_ms": 0, "error_code": result.error_code, "groups": [
            {"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
             "group_type": CLASSIC_GROUP_TYPE}
            for group_id, protocol_type, state in groups]}

    def describe_groups(self, context: RequestContext, request: DescribeGroupsRequest
                        ) -> DescribeGroupsResponse:
        groups = []
        for found in self.coordinator.describe_groups(request["groups"]):
            if not self._group(context, AclOperation.DESCRIBE, found.group_id):
                groups.append(_description(GroupDescription(ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                                            found.group_id)))
                continue
            answer = _description(found)
            if context.api_version >= 3 and request["include_authorized_operations"]:
                answer["authorized_operations"] = self.authorizer.authorized_operations(
                    context, ResourceType.GROUP, found.group_id)
            groups.append(answer)
        return {"throttle_time_ms": 0, "groups": groups}

    def delete_groups(self, context: RequestContext, request: DeleteGroupsRequest
                      ) -> Answer[DeleteGroupsResponse]:
        asked = list(request["groups_names"])
        refused = [g for g in asked if not self._group(context, AclOperation.DELETE, g)]
        if not refused:
            return now_or_later(self.coordinator.delete_groups(asked), _delete_answer)
        allowed = [g for g in asked if g not in refused]

        def answer(results: list[tuple[str, ErrorCode]]) -> DeleteGroupsResponse:
            outcome = dict(results)
            outcome.update(dict.fromkeys(refused, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            return _delete_answer([(g, outcome[g]) for g in asked])

        if not allowed:
            return answer([])
        return now_or_later(self.coordinator.delete_groups(allowed), answer)

    def offset_delete(self, context: RequestContext, request: OffsetDeleteRequest
                      ) -> Answer[OffsetDeleteResponse]:
        if not self._group(context, AclOperation.DELETE, request["group_id"]):
            return _offset_delete_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, {}, request)
        refused = {t["name"] for t in request["topics"]
                   if not self._topic(context, AclOperation.READ, t["name"])}
        asked = [(t["name"], p["partition_index"]) for t in request["topics"]
                 if t["name"] not in refused for p in t["partitions"]]

        def answer(result: tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]
                   ) -> OffsetDeleteResponse:
            code, outcome = result
            if code == ErrorCode.NONE:
                for t in request["topics"]:
                    if t["name"] in refused:
                        for p in t["partitions"]:
                            outcome[(t["name"], p["partition_index"])] = \
                                ErrorCode.TOPIC_AUTHORIZATION_FAILED
            return _offset_delete_answer(code, outcome, request)

        if not asked:
            return answer((ErrorCode.NONE, {}))
        return now_or_later(self.coordinator.delete_offsets(request["group_id"], asked),
                            answer)


def _write_zookeeper_offsets(zk: KazooClient, cache: MetadataCache, group_id: str,
                             commits: list[PartitionCommit]) -> CommitResult:
    """OffsetCommit v0's writes, each partition's outcome (blocking: a worker thread)."""
    results: CommitResult = []
    for c in commits:
        if cache.partition(c.topic, c.partition) is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif len(c.metadata.encode("utf-8")) > OFFSET_METADATA_MAX_BYTES:
            code = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            try:
                set_consumer_offset(zk, group_id, c.topic, c.partition, c.offset)
                code = ErrorCode.NONE
            except Exception as exc:  # Kafka answers what the ZooKeeper client raised
                log.warning("OffsetCommit v0 of %s-%d for group %r: %s", c.topic, c.partition,
                            group_id, exc)
                code = ErrorCode.UNKNOWN_SERVER_ERROR
        results.append((c.topic, c.partition, code))
    return results


def _read_zookeeper_offsets(zk: KazooClient, cache: MetadataCache, group_id: str,
                            asked: list[tuple[str, int]]
                            ) -> dict[tuple[str, int], tuple[int, ErrorCode]]:
    """OffsetFetch v0's reads: (offset, code) per partition (blocking: a worker thread)."""
    found: dict[tuple[str, int], tuple[int, ErrorCode]] = {}
    for topic, index in asked:
        offset = None
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if cache.partition(topic, index) is not None:
            try:
                offset = get_consumer_offset(zk, group_id, topic, index)
            except Exception as exc:
                log.warning("OffsetFetch v0 of %s-%d for group %r: %s", topic, index,
                            group_id, exc)
                code = ErrorCode.UNKNOWN_SERVER_ERROR
        found[(topic, index)] = (-1, code) if offset is None else (offset, ErrorCode.NONE)
    return found


def _offset_fetch_error(version: int, code: ErrorCode,
                        topics: Sequence[OffsetFetchRequestTopics] | None
                        ) -> OffsetFetchResponse:
    """A group-level error; before v2 (no top-level error code) said per partition."""
    if version >= 2:
        return {"throttle_time_ms": 0, "topics": [], "error_code": code}
    return {"throttle_time_ms": 0, "error_code": code, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": code}
            for p in t["partition_indexes"]]}
        for t in topics or []]}


def _assignments(request: SyncGroupRequest) -> dict[str, bytes]:
    return {a["member_id"]: bytes(a["assignment"] or b"") for a in request["assignments"]}


def _offset_delete_answer(code: ErrorCode, outcome: dict[tuple[str, int], ErrorCode],
                          request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    """The OffsetDeleteResponse: a group error alone, or every partition's outcome."""
    if code != ErrorCode.NONE:
        return {"error_code": code, "throttle_time_ms": 0, "topics": []}
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": outcome[(t["name"], p["partition_index"])]}
            for p in t["partitions"]]}
        for t in request["topics"]]}


def _find_coordinator_answer(code: ErrorCode, node: Node | None) -> FindCoordinatorResponse:
    return {"throttle_time_ms": 0, "error_code": code,
            "error_message": None if code == ErrorCode.NONE else code.name,
            "node_id": node.node_id if node else -1,
            "host": node.host if node else "", "port": node.port if node else -1}


def _join_answer(result: JoinResult) -> JoinGroupResponse:
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "generation_id": result.generation, "protocol_name": result.protocol,
            "leader": result.leader, "member_id": result.member_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "metadata": m.metadata} for m in result.members]}


def _sync_answer(result: SyncResult) -> SyncGroupResponse:
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "assignment": result.assignment}


def _commit_answer(result: CommitResult) -> OffsetCommitResponse:
    by_topic: dict[str, list[OffsetCommitResponseTopicsPartitions]] = {}
    for topic, index, code in result:
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return {"throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


def _description(d: GroupDescription) -> DescribeGroupsResponseGroups:
    return {"error_code": d.error_code, "group_id": d.group_id, "group_state": d.state,
            "protocol_type": d.protocol_type, "protocol_data": d.protocol,
            "authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in d.members]}


def _delete_answer(results: list[tuple[str, ErrorCode]]) -> DeleteGroupsResponse:
    return {"throttle_time_ms": 0, "results": [
        {"group_id": group_id, "error_code": code} for group_id, code in results]}
