"""ACLs through the Admin: CreateAcls, DescribeAcls, DeleteAcls (what ``kafka-acls
--bootstrap-server`` sends). Any broker answers; the broker needs an authorizer
(else SecurityDisabledError) and the caller Alter (create, delete) or Describe
(list) on the cluster."""

from __future__ import annotations

from collections.abc import Iterable

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import error_for
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from simplekafka.protocol.api import ApiKey


def _node(client: KafkaClient, timeout_ms: int) -> int:
    return client.controller_id(timeout_ms)  # any broker; this one is known once loaded


def _filter_fields(f: AclBindingFilter) -> dict:
    return {"resource_type_filter": f.resource_type, "resource_name_filter": f.name,
            "pattern_type_filter": f.pattern_type, "principal_filter": f.principal,
            "host_filter": f.host, "operation": f.operation, "permission_type": f.permission}


def create_acls(client: KafkaClient, bindings: Iterable[AclBinding], timeout_ms: int) -> None:
    bindings = list(bindings)
    body = {"creations": [
        {"resource_type": b.pattern.resource_type, "resource_name": b.pattern.name,
         "resource_pattern_type": b.pattern.pattern_type, "principal": b.entry.principal,
         "host": b.entry.host, "operation": b.entry.operation,
         "permission_type": b.entry.permission} for b in bindings]}
    answer = client.request(_node(client, timeout_ms), ApiKey.CREATE_ACLS, body, timeout_ms)
    for binding, result in zip(bindings, answer.results, strict=True):
        if result.error_code:
            raise error_for(result.error_code,
                            result.error_message or f"creating {binding.entry}")


def describe_acls(client: KafkaClient, wanted: AclBindingFilter,
                  timeout_ms: int) -> list[AclBinding]:
    answer = client.request(_node(client, timeout_ms), ApiKey.DESCRIBE_ACLS,
                            _filter_fields(wanted), timeout_ms)
    if answer.error_code:
        raise error_for(answer.error_code, answer.error_message or "describing ACLs")
    return sorted(
        AclBinding(ResourcePattern(ResourceType(r.resource_type), r.resource_name,
                                   PatternType(getattr(r, "pattern_type", 3))),
                   AccessControlEntry(a.principal, a.host, AclOperation(a.operation),
                                      AclPermissionType(a.permission_type)))
        for r in answer.resources for a in r.acls)


def delete_acls(client: KafkaClient, filters: Iterable[AclBindingFilter],
                timeout_ms: int) -> list[AclBinding]:
    """Delete every ACL a filter selects; returns the deleted ones."""
    body = {"filters": [_filter_fields(f) for f in filters]}
    answer = client.request(_node(client, timeout_ms), ApiKey.DELETE_ACLS, body, timeout_ms)
    deleted = []
    for result in answer.filter_results:
        if result.error_code:
            raise error_for(result.error_code, result.error_message or "deleting ACLs")
        deleted += [AclBinding(ResourcePattern(ResourceType(m.resource_type), m.resource_name,
                                               PatternType(getattr(m, "pattern_type", 3))),
                               AccessControlEntry(m.principal, m.host,
                                                  AclOperation(m.operation),
                                                  AclPermissionType(m.permission_type)))
                    for m in result.matching_acls]
    return sorted(deleted)
