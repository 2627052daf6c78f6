"""DescribeAcls, CreateAcls, DeleteAcls: the ACLs, read from the authorizer, written to ZooKeeper.

As in ZooKeeper-mode Kafka any broker answers. Describing reads this broker's
authorizer (its copy of ZooKeeper's ACLs) and needs Describe on the cluster;
creating and deleting need Alter on the cluster, write the pattern's znode
(``coordination.acls``, on a worker thread) and leave the change notification
every broker follows. This broker applies its own change at once, so a client
that creates and then describes sees what it created. Without an authorizer
the three answer SECURITY_DISABLED, as Kafka's do.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TypeVar

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Reactor, ZooKeeperHandle, in_worker_thread
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import Authorizing
from simplekafka.coordination.acls import Entries, add_entries, read_entries, remove_matching
from simplekafka.protocol.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    binding_problem,
)
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    CreateAclsRequest,
    CreateAclsResponse,
    CreateAclsResponseResults,
    DeleteAclsRequest,
    DeleteAclsRequestFilters,
    DeleteAclsResponse,
    DeleteAclsResponseFilterResults,
    DeleteAclsResponseFilterResultsMatchingAcls,
    DescribeAclsRequest,
    DescribeAclsResponse,
)

log = logging.getLogger(__name__)

_Body = TypeVar("_Body", CreateAclsResponse, DeleteAclsResponse)


class BadFilter(ValueError):
    """A filter with a number outside Kafka's enumerations, or UNKNOWN."""


def binding_filter(f: DescribeAclsRequest | DeleteAclsRequestFilters, version: int
                   ) -> AclBindingFilter:
    """The request's filter as an AclBindingFilter (v0 has no pattern type: literal only)."""
    try:
        found = AclBindingFilter(
            ResourceType(f["resource_type_filter"]), f["resource_name_filter"],
            PatternType(f["pattern_type_filter"] if version >= 1 else PatternType.LITERAL),
            f["principal_filter"], f["host_filter"], AclOperation(f["operation"]),
            AclPermissionType(f["permission_type"]))
    except ValueError as exc:
        raise BadFilter(str(exc)) from None
    if any(v == 0 for v in (found.resource_type, found.pattern_type,
                                          found.operation, found.permission)):
        raise BadFilter("a filter field is UNKNOWN")
    return found


class AclApis:
    """The three ACL handlers over one authorizer; see the module docstring."""

    def __init__(self, authorizer: Authorizing, reactor: Reactor, zookeeper: ZooKeeperHandle):
        self.authorizer = authorizer
        self.reactor = reactor
        self.zookeeper = zookeeper

    def _refusal(self, context: RequestContext, operation: AclOperation) -> ErrorCode | None:
        if not self.authorizer.enabled:
            return ErrorCode.SECURITY_DISABLED
        if not self.authorizer.authorize(context, operation, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return None

    # -- DescribeAcls ---------------------------------------------------------------------

    def describe_acls(self, context: RequestContext, request: DescribeAclsRequest
                      ) -> DescribeAclsResponse:
        def answer(code: ErrorCode, message: str | None = None,
                   found: list[AclBinding] | None = None) -> DescribeAclsResponse:
            by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
            for binding in found or []:
                by_pattern[binding.pattern].append(binding.entry)
            return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                    "resources": [
                        {"resource_type": p.resource_type, "resource_name": p.name,
                         "pattern_type": p.pattern_type, "acls": [
                             {"principal": e.principal, "host": e.host,
                              "operation": e.operation, "permission_type": e.permission}
                             for e in entries]}
                        for p, entries in by_pattern.items()]}

        refused = self._refusal(context, AclOperation.DESCRIBE)
        if refused is not None:
            return answer(refused, refused.name)
        try:
            wanted = binding_filter(request, context.api_version)
        except BadFilter as exc:
            return answer(ErrorCode.INVALID_REQUEST, str(exc))
        return answer(ErrorCode.NONE, None, self.authorizer.bindings(wanted))

    # -- CreateAcls -----------------------------------------------------------------------

    def create_acls(self, context: RequestContext, request: CreateAclsRequest
                    ) -> CreateAclsResponse | defer.Deferred:
        results: list[CreateAclsResponseResults] = [
            {"error_code": ErrorCode.NONE, "error_message": None} for _ in request["creations"]]
        refused = self._refusal(context, AclOperation.ALTER)
        zk = self.zookeeper()
        if refused is None and zk is None:
            refused = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if refused is not None:
            for result in results:
                result.update({"error_code": refused, "error_message": refused.name})
            return {"throttle_time_ms": 0, "results": results}
        wanted: dict[ResourcePattern, list[tuple[AccessControlEntry, CreateAclsResponseResults]]]
        wanted = defaultdict(list)
        for creation, result in zip(request["creations"], results, strict=True):
            try:
                binding = AclBinding(
                    ResourcePattern(ResourceType(creation["resource_type"]),
                                    creation["resource_name"],
                                    PatternType(creation["resource_pattern_type"]
                                                if context.api_version >= 1
                                                else PatternType.LITERAL)),
                    AccessControlEntry(creation["principal"], creation["host"],
                                       AclOperation(creation["operation"]),
                                       AclPermissionType(creation["permission_type"])))
                problem = binding_problem(binding)
            except ValueError as exc:
                problem = str(exc)
            if problem is not None:
                result.update({"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem})
                continue
            wanted[binding.pattern].append((binding.entry, result))

        def write() -> list[tuple[ResourcePattern, Entries]]:
            written = []
            for pattern, items in wanted.items():
                try:
                    add_entries(zk, pattern, [entry for entry, _ in items])
                    written.append((pattern, read_entries(zk, pattern)[0]))
                except Exception as exc:
                    log.warning("creating ACLs on %s failed: %r", pattern, exc)
                    for _entry, result in items:
                        result.update({"error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                       "error_message": str(exc)})
            return written

        return in_worker_thread(self.reactor, write).addCallback(
            self._apply, {"throttle_time_ms": 0, "results": results})

    def _apply(self, written: list[tuple[ResourcePattern, Entries]], body: _Body) -> _Body:
        """Our own change now (the notification will say the same later)."""
        for pattern, entries in written:
            self.authorizer.update(pattern, entries)
        return body

    # -- DeleteAcls -----------------------------------------------------------------------

    def delete_acls(self, context: RequestContext, request: DeleteAclsRequest
                    ) -> DeleteAclsResponse | defer.Deferred:
        matching: list[list[DeleteAclsResponseFilterResultsMatchingAcls]] = [
            [] for _ in request["filters"]]
        results: list[DeleteAclsResponseFilterResults] = [
            {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": acls}
            for acls in matching]
        refused = self._refusal(context, AclOperation.ALTER)
        zk = self.zookeeper()
        if refused is None and zk is None:
            refused = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if refused is not None:
            for result in results:
                result.update({"error_code": refused, "error_message": refused.name})
            return {"throttle_time_ms": 0, "filter_results": results}
        work: list[tuple[AclBindingFilter, list[ResourcePattern], DeleteAclsResponseFilterResults,
                         list[DeleteAclsResponseFilterResultsMatchingAcls]]] = []
        for f, result, acls in zip(request["filters"], results, matching, strict=True):
            try:
                wanted = binding_filter(f, context.api_version)
            except BadFilter as exc:
                result.update({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
                continue
            patterns = sorted(p for p in self.authorizer.acls if wanted.matches_pattern(p))
            work.append((wanted, patterns, result, acls))

        def delete() -> list[tuple[ResourcePattern, Entries]]:
            written = []
            for wanted, patterns, result, acls in work:
                for pattern in patterns:
                    try:
                        removed = remove_matching(zk, pattern, wanted)
                    except Exception as exc:
                        log.warning("deleting ACLs of %s failed: %r", pattern, exc)
                        result.update({"error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                       "error_message": str(exc)})
                        continue
                    written.append((pattern, read_entries(zk, pattern)[0]))
                    acls.extend(
                        _matching_acl(pattern, entry) for entry in sorted(removed))
            return written

        return in_worker_thread(self.reactor, delete).addCallback(
            self._apply, {"throttle_time_ms": 0, "filter_results": results})


def _matching_acl(pattern: ResourcePattern, entry: AccessControlEntry
                  ) -> DeleteAclsResponseFilterResultsMatchingAcls:
    return {"error_code": ErrorCode.NONE, "error_message": None,
            "resource_type": pattern.resource_type, "resource_name": pattern.name,
            "pattern_type": pattern.pattern_type, "principal": entry.principal,
            "host": entry.host, "operation": entry.operation,
            "permission_type": entry.permission}
