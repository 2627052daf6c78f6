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
instance id (KIP-345), LeaveGroup v3+ a batch of members, OffsetCommit v0 no
generation or member id.

The flexible versions (Kafka 3.9's): FindCoordinator v4+ looks up a batch of keys
(KIP-699), one answer per key; JoinGroup v7+ answers the group's protocol type
and v8+ carries the member's reason for joining (KIP-800, logged), v9 tells the
leader it may skip assigning (always false here: that is for the KIP-848
protocol); SyncGroup v5+ names the protocol type and name, checked against the
group's (INCONSISTENT_GROUP_PROTOCOL) and answered; LeaveGroup v5+ gives each
member's reason (logged); ListGroups v4+ filters by state and answers each
group's state (KIP-518), v5+ by type (every group here is "classic"); OffsetFetch
v8+ asks for several groups at once (KIP-709), each answered on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.coordinator.runtime import now_or_later
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.group.coordinator import (
    CommitResult,
    CommittedOffset,
    GroupCoordinator,
    GroupDescription,
    JoinResult,
    OffsetFetchResult,
    PartitionCommit,
    SyncResult,
)
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    DeleteGroupsResponse,
    DescribeGroupsResponseGroups,
    FindCoordinatorResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetCommitResponseTopicsPartitions,
    SyncGroupResponse,
)
from simplekafka.protocol.structs import Node

log = logging.getLogger(__name__)

COORDINATOR_KEY_TRANSACTION = 1  # FindCoordinator's key type for a transactional id
CLASSIC_GROUP_TYPE = "classic"  # ListGroups v5's type of every group this coordinator runs
UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648  # Kafka's "not asked for" (INT32_MIN)


def partition_commits(request: Any) -> list[PartitionCommit]:
    """The offsets an OffsetCommit or TxnOffsetCommit asks to commit, in the order asked."""
    return [PartitionCommit(t.name, p.partition_index, p.committed_offset,
                            getattr(p, "committed_leader_epoch", -1),
                            p.committed_metadata or "")
            for t in request.topics for p in t.partitions]


def _host(peer: str) -> str:
    return peer.rsplit(":", 1)[0] if peer and ":" in peer else (peer or "")


R = TypeVar("R")

def commit_readable_topics(authorizer: Authorizer, context: RequestContext, request: Any,
                           commit: Callable[[RequestContext, Any], Any],
                           answer: Callable[[Any], R]) -> R | defer.Deferred:
    """Commit the offsets of the topics ``context`` may Read; the others answer
    TOPIC_AUTHORIZATION_FAILED. OffsetCommit and TxnOffsetCommit check it alike, as Kafka."""
    refused = [t for t in request.topics if not authorizer.authorize(
        context, AclOperation.READ, ResourceType.TOPIC, t.name)]
    if not refused:
        return now_or_later(commit(context, request), answer)
    refused_results = [(t.name, p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                       for t in refused for p in t.partitions]
    request.topics = [t for t in request.topics if t not in refused]
    if not request.topics:
        return answer(refused_results)
    return now_or_later(commit(context, request),
                        lambda results: answer(list(results) + refused_results))


class GroupApis:
    """The group requests' handlers, over one GroupCoordinator."""

    def __init__(self, coordinator: GroupCoordinator, authorizer: Authorizer = ALLOW_EVERYONE,
                 find_transaction_coordinator: Callable[[RequestContext, Any],
                                                        FindCoordinatorResponse]
                 | None = None):
        self.coordinator = coordinator
        self.authorizer = authorizer
        self.find_transaction_coordinator = find_transaction_coordinator  # key type 1

    def _group(self, context: RequestContext, operation: AclOperation, group_id: str) -> bool:
        return self.authorizer.authorize(context, operation, ResourceType.GROUP, group_id)

    def _topic(self, context: RequestContext, operation: AclOperation, topic: str) -> bool:
        return self.authorizer.authorize(context, operation, ResourceType.TOPIC, topic)

    def register(self, dispatcher: Any) -> None:
        for key, handler in [
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
        ]:
            dispatcher.register(key, handler)

    def find_coordinator(self, context: RequestContext, request: Any) -> FindCoordinatorResponse:
        if context.api_version < 4:
            return self._find_one(context, request)
        coordinators: list[Any] = []  # v4+ (KIP-699): every key of the batch answered on its own
        for key in request.coordinator_keys:
            found = self._find_one(context, SimpleNamespace(key=key, key_type=request.key_type))
            coordinators.append({"key": key, "node_id": found["node_id"],
                                 "host": found["host"], "port": found["port"],
                                 "error_code": found["error_code"],
                                 "error_message": found["error_message"]})
        return {"throttle_time_ms": 0, "coordinators": coordinators}

    def _find_one(self, context: RequestContext, request: Any) -> FindCoordinatorResponse:
        if getattr(request, "key_type", 0) == COORDINATOR_KEY_TRANSACTION:
            if not self.authorizer.authorize(context, AclOperation.DESCRIBE,
                                             ResourceType.TRANSACTIONAL_ID, request.key):
                return _find_coordinator_answer(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
            if self.find_transaction_coordinator is not None:
                return self.find_transaction_coordinator(context, request)
        if not self._group(context, AclOperation.DESCRIBE, request.key):
            return _find_coordinator_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        if getattr(request, "key_type", 0) != 0:  # a key type this broker does not serve
            return _find_coordinator_answer(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
        code, node = self.coordinator.find_coordinator(request.key or "", context.listener)
        return _find_coordinator_answer(code, node)

    def join_group(self, context: RequestContext, request: Any
                   ) -> JoinGroupResponse | defer.Deferred:
        if not self._group(context, AclOperation.READ, request.group_id):
            return _join_answer(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        version = context.api_version
        if version >= 8 and request.reason:
            log.info("group %r: member %r joins: %s", request.group_id, request.member_id,
                     request.reason)
        protocol_type = request.protocol_type

        def answer(result: JoinResult) -> JoinGroupResponse:
            body = _join_answer(result)
            if result.error_code == ErrorCode.NONE:  # the group's, which the member's matches
                body["protocol_type"] = protocol_type
            return body

        return now_or_later(self.coordinator.join_group(
            request.group_id, request.member_id or "",
            getattr(request, "group_instance_id", None) if version >= 5 else None,
            context.client_id or "", _host(context.peer), request.session_timeout_ms,
            request.rebalance_timeout_ms if version >= 1 else -1, request.protocol_type,
            [(p.name, bytes(p.metadata or b"")) for p in request.protocols],
            require_known_member_id=version >= 4), answer)

    def sync_group(self, context: RequestContext, request: Any
                   ) -> SyncGroupResponse | defer.Deferred:
        if not self._group(context, AclOperation.READ, request.group_id):
            return _sync_answer(SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        if context.api_version >= 5:
            return self._sync_group_v5(context, request)
        return now_or_later(self.coordinator.sync_group(
            request.group_id, request.member_id, getattr(request, "group_instance_id", None),
            request.generation_id,
            {a.member_id: bytes(a.assignment or b"") for a in request.assignments}),
            _sync_answer)

    def _sync_group_v5(self, context: RequestContext, request: Any
                       ) -> SyncGroupResponse | defer.Deferred:
        """SyncGroup v5+: the member's protocol type and name must be the group's (a null
        one is not checked), and the answer names the group's."""
        group = self.coordinator.groups.get(request.group_id)
        if group is not None and request.member_id in group.members \
                and request.generation_id == group.generation and (
                    request.protocol_type not in (None, group.protocol_type)
                    or request.protocol_name not in (None, group.protocol)):
            return _sync_answer(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))

        def answer(result: SyncResult) -> SyncGroupResponse:
            body = _sync_answer(result)
            if result.error_code == ErrorCode.NONE and group is not None:
                body["protocol_type"] = group.protocol_type
                body["protocol_name"] = group.protocol
            return body

        return now_or_later(self.coordinator.sync_group(
            request.group_id, request.member_id, request.group_instance_id,
            request.generation_id,
            {a.member_id: bytes(a.assignment or b"") for a in request.assignments}), answer)

    def heartbeat(self, context: RequestContext, request: Any) -> HeartbeatResponse:
        if not self._group(context, AclOperation.READ, request.group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
        return {"throttle_time_ms": 0,
                "error_code": self.coordinator.heartbeat(
                    request.group_id, request.member_id,
                    getattr(request, "group_instance_id", None), request.generation_id)}

    def leave_group(self, context: RequestContext, request: Any) -> LeaveGroupResponse:
        if not self._group(context, AclOperation.READ, request.group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    "members": []}
        if context.api_version >= 3:  # KIP-345: a batch, static members by instance id
            leaving = [(m.member_id or "", m.group_instance_id) for m in request.members]
            for m in request.members:
                if context.api_version >= 5 and m.reason:  # KIP-800
                    log.info("group %r: member %r leaves: %s", request.group_id,
                             m.member_id or m.group_instance_id, m.reason)
        else:
            leaving = [(request.member_id, None)]
        result = self.coordinator.leave_group(request.group_id, leaving)
        top = result.error_code
        if context.api_version < 3 and result.members:
            top = result.members[0][2]  # one member, no per-member answers before v3
        return {"throttle_time_ms": 0, "error_code": top, "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            for member_id, instance_id, code in result.members]}

    def offset_commit(self, context: RequestContext, request: Any
                      ) -> OffsetCommitResponse | defer.Deferred:
        if not self.authorizer.enabled:
            return now_or_later(self._offset_commit(context, request), _commit_answer)
        if not self._group(context, AclOperation.READ, request.group_id):
            return _commit_answer([(t.name, p.partition_index,
                                    ErrorCode.GROUP_AUTHORIZATION_FAILED)
                                   for t in request.topics for p in t.partitions])
        return commit_readable_topics(self.authorizer, context, request,
                                      self._offset_commit, _commit_answer)

    def _offset_commit(self, context: RequestContext, request: Any
                       ) -> CommitResult | defer.Deferred:
        version = context.api_version
        return self.coordinator.offset_commit(
            request.group_id, request.generation_id_or_member_epoch if version >= 1 else -1,
            request.member_id if version >= 1 else "",
            getattr(request, "group_instance_id", None) if version >= 7 else None,
            partition_commits(request))

    def offset_fetch(self, context: RequestContext, request: Any) -> dict:
        if context.api_version < 8:
            return self._offset_fetch_group(context, request.group_id, request.topics)
        groups = []  # v8+ (KIP-709): each group answered on its own
        for asked in request.groups:
            one = self._offset_fetch_group(context, asked.group_id, asked.topics)
            groups.append({"group_id": asked.group_id, "error_code": one["error_code"],
                           "topics": one["topics"]})
        return {"throttle_time_ms": 0, "groups": groups}

    def _offset_fetch_group(self, context: RequestContext, group_id: str,
                            topics: Any) -> dict:
        request = SimpleNamespace(group_id=group_id, topics=topics)
        refused: set[str] = set()
        if not self._group(context, AclOperation.DESCRIBE, request.group_id):
            result = OffsetFetchResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            result = self.coordinator.offset_fetch(
                request.group_id, None if request.topics is None else
                [(t.name, index) for t in request.topics for index in t.partition_indexes])
            if self.authorizer.enabled and result.error_code == ErrorCode.NONE:
                result, refused = self._visible_offsets(context, request, result)
        if result.error_code != ErrorCode.NONE:
            topics = []
            if context.api_version < 2:  # no top-level error: say it per partition
                topics = [{"name": t.name, "partitions": [
                    {"partition_index": p, "committed_offset": -1, "metadata": "",
                     "error_code": result.error_code} for p in t.partition_indexes]}
                    for t in request.topics or []]
            return {"throttle_time_ms": 0, "topics": topics, "error_code": result.error_code}
        by_topic: dict[str, list[dict]] = {}
        for found in result.offsets:
            by_topic.setdefault(found.topic, []).append({
                "partition_index": found.partition, "committed_offset": found.offset,
                "committed_leader_epoch": found.leader_epoch, "metadata": found.metadata,
                "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED if found.topic in refused
                else ErrorCode.NONE})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "topics": [{"name": name, "partitions": parts}
                           for name, parts in by_topic.items()]}

    def _visible_offsets(self, context: RequestContext, request: Any, result: OffsetFetchResult
                         ) -> tuple[OffsetFetchResult, set[str]]:
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
            elif request.topics is not None:
                offsets.append(CommittedOffset(found.topic, found.partition))
        return OffsetFetchResult(result.error_code, tuple(offsets)), refused

    def list_groups(self, context: RequestContext, request: Any) -> dict:
        result = self.coordinator.list_groups()
        groups = result.groups
        version = context.api_version
        states = {s.lower() for s in request.states_filter} if version >= 4 else set()
        if states:  # KIP-518: only groups in these states (names as Kafka's, any case)
            groups = tuple(g for g in groups if g[2].lower() in states)
        if version >= 5 and request.types_filter and CLASSIC_GROUP_TYPE not in {
                t.lower() for t in request.types_filter}:
            groups = ()
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            groups = tuple(g for g in groups if self._group(context, AclOperation.DESCRIBE,
                                                            g[0]))
        return {"throttle_time_ms": 0, "error_code": result.error_code, "groups": [
            {"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
             "group_type": CLASSIC_GROUP_TYPE}
            for group_id, protocol_type, state in groups]}

    def describe_groups(self, context: RequestContext, request: Any) -> dict:
        groups = []
        for found in self.coordinator.describe_groups(request.groups):
            if not self._group(context, AclOperation.DESCRIBE, found.group_id):
                groups.append(_description(GroupDescription(ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                                            found.group_id)))
                continue
            answer = _description(found)
            if getattr(request, "include_authorized_operations", False):
                answer["authorized_operations"] = self.authorizer.authorized_operations(
                    context, ResourceType.GROUP, found.group_id)
            groups.append(answer)
        return {"throttle_time_ms": 0, "groups": groups}

    def delete_groups(self, context: RequestContext, request: Any
                      ) -> DeleteGroupsResponse | defer.Deferred:
        asked = list(request.groups_names)
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

    def offset_delete(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        if not self._group(context, AclOperation.DELETE, request.group_id):
            return _offset_delete_answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, {}, request)
        refused = {t.name for t in request.topics
                   if not self._topic(context, AclOperation.READ, t.name)}
        asked = [(t.name, p.partition_index) for t in request.topics
                 if t.name not in refused for p in t.partitions]

        def answer(result: tuple[ErrorCode, dict]) -> dict:
            code, outcome = result
            if code == ErrorCode.NONE:
                for t in request.topics:
                    if t.name in refused:
                        for p in t.partitions:
                            outcome[(t.name, p.partition_index)] = \
                                ErrorCode.TOPIC_AUTHORIZATION_FAILED
            return _offset_delete_answer(code, outcome, request)

        if not asked:
            return answer((ErrorCode.NONE, {}))
        return now_or_later(self.coordinator.delete_offsets(request.group_id, asked), answer)


def _offset_delete_answer(code: ErrorCode, outcome: dict[tuple[str, int], ErrorCode],
                          request: Any) -> dict:
    """The OffsetDeleteResponse: a group error alone, or every partition's outcome."""
    if code != ErrorCode.NONE:
        return {"error_code": code, "throttle_time_ms": 0, "topics": []}
    return {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": outcome[(t.name, p.partition_index)]} for p in t.partitions]}
        for t in request.topics]}


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
