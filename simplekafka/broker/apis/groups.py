"""FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, ListGroups, DescribeGroups, DeleteGroups: the group coordinator's wire side.

The coordinator (``broker/group``) decides and returns result values, now or
through a Deferred (a JoinGroup waits for the rebalance, a commit for its
replication); these handlers turn them into the responses of each version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.group.coordinator import (
    CommitResult,
    GroupCoordinator,
    GroupDescription,
    JoinResult,
    SyncResult,
)
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import Node

COORDINATOR_KEY_TRANSACTION = 1  # FindCoordinator's key type for a transactional id
UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648  # Kafka's "not asked for" (INT32_MIN)


def _now_or_later(result: Any, answer: Callable[[Any], dict]) -> dict | defer.Deferred:
    if isinstance(result, defer.Deferred):
        return result.addCallback(answer)
    return answer(result)


class GroupApis:
    """The group requests' handlers, over one GroupCoordinator."""

    def __init__(self, coordinator: GroupCoordinator,
                 find_transaction_coordinator: Callable[[RequestContext, Any], dict]
                 | None = None):
        self.coordinator = coordinator
        self.find_transaction_coordinator = find_transaction_coordinator  # key type 1

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
        ]:
            dispatcher.register(key, handler)

    def find_coordinator(self, context: RequestContext, request: Any) -> dict:
        if getattr(request, "key_type", 0) == COORDINATOR_KEY_TRANSACTION \
                and self.find_transaction_coordinator is not None:
            return self.find_transaction_coordinator(context, request)
        code, node = self.coordinator.find_coordinator(context, request)
        return _find_coordinator_answer(code, node)

    def join_group(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        return _now_or_later(self.coordinator.join_group(context, request), _join_answer)

    def sync_group(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        return _now_or_later(self.coordinator.sync_group(context, request), _sync_answer)

    def heartbeat(self, context: RequestContext, request: Any) -> dict:
        return {"throttle_time_ms": 0,
                "error_code": self.coordinator.heartbeat(context, request)}

    def leave_group(self, context: RequestContext, request: Any) -> dict:
        result = self.coordinator.leave_group(context, request)
        top = result.error_code
        if context.api_version < 3 and result.members:
            top = result.members[0][2]  # one member, no per-member answers before v3
        return {"throttle_time_ms": 0, "error_code": top, "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            for member_id, instance_id, code in result.members]}

    def offset_commit(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        return _now_or_later(self.coordinator.offset_commit(context, request), _commit_answer)

    def offset_fetch(self, context: RequestContext, request: Any) -> dict:
        result = self.coordinator.offset_fetch(context, request)
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
                "error_code": ErrorCode.NONE})
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "topics": [{"name": name, "partitions": parts}
                           for name, parts in by_topic.items()]}

    def list_groups(self, context: RequestContext, request: Any) -> dict:
        result = self.coordinator.list_groups(context, request)
        return {"throttle_time_ms": 0, "error_code": result.error_code, "groups": [
            {"group_id": group_id, "protocol_type": protocol_type}
            for group_id, protocol_type in result.groups]}

    def describe_groups(self, context: RequestContext, request: Any) -> dict:
        return {"throttle_time_ms": 0, "groups": [
            _description(d) for d in self.coordinator.describe_groups(context, request)]}

    def delete_groups(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        return _now_or_later(self.coordinator.delete_groups(context, request), _delete_answer)


def _find_coordinator_answer(code: ErrorCode, node: Node | None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code,
            "error_message": None if code == ErrorCode.NONE else code.name,
            "node_id": node.node_id if node else -1,
            "host": node.host if node else "", "port": node.port if node else -1}


def _join_answer(result: JoinResult) -> dict:
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "generation_id": result.generation, "protocol_name": result.protocol,
            "leader": result.leader, "member_id": result.member_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "metadata": m.metadata} for m in result.members]}


def _sync_answer(result: SyncResult) -> dict:
    return {"throttle_time_ms": 0, "error_code": result.error_code,
            "assignment": result.assignment}


def _commit_answer(result: CommitResult) -> dict:
    by_topic: dict[str, list[dict]] = {}
    for topic, index, code in result:
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return {"throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


def _description(d: GroupDescription) -> dict:
    return {"error_code": d.error_code, "group_id": d.group_id, "group_state": d.state,
            "protocol_type": d.protocol_type, "protocol_data": d.protocol,
            "authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "member_metadata": m.metadata, "member_assignment": m.assignment}
                        for m in d.members]}


def _delete_answer(results: list[tuple[str, ErrorCode]]) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"group_id": group_id, "error_code": code} for group_id, code in results]}
