"""ACLs as Kafka defines them: resource patterns, entries, bindings and the filters that find them.

One ACL ("binding") says: this principal, from this host, is allowed (or
denied) this operation on the resources this pattern names. A pattern is a
resource type (Topic, Group, Cluster, TransactionalId), a name and a pattern
type: LITERAL (the name itself, or ``*`` for every resource of the type) or
PREFIXED (every name starting with it). The numbers are the wire's
(CreateAcls, DescribeAcls, DeleteAcls), the names Kafka's own, as they appear
in ZooKeeper's JSON and in ``kafka-acls`` output, so they stay one vocabulary.

Filters (DescribeAcls, DeleteAcls) use ANY for "whatever it is" and the MATCH
pattern type for "every pattern that would apply to this name". Everything
here is plain data and pure functions; the broker's authorizer decides with
it, ZooKeeper stores it (``coordination.acls``), clients send it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class _Named(enum.IntEnum):
    """An enumeration with Kafka's CamelCase names (``DescribeConfigs``, ``TransactionalId``)."""

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def parse(cls, text: str) -> _Named:
        """From Kafka's name, any case, with or without underscores (``describe-configs`` too)."""
        wanted = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == wanted:
                return member
        names = ", ".join(m.kafka_name for m in cls if m.value > 1)
        raise ValueError(f"unknown {cls.__name__} {text!r} (one of {names})")


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
WILDCARD = "*"  # a literal resource name, principal name or host that matches all
WILDCARD_PRINCIPAL = "User:*"

# Having one of these allows the key operation too (Kafka's implied operations).
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ,
                                      AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS,
                                              AclOperation.ALTER_CONFIGS}),
}


_O = AclOperation
# What can be done to each resource type (Kafka's, for ``authorized_operations`` bit sets).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                           _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
}


def operation_bits(operations: list[AclOperation] | tuple[AclOperation, ...]) -> int:
    """The int32 bit set the wire's ``authorized_operations`` fields carry."""
    return sum(1 << op for op in set(operations))


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.kafka_name.upper()}, "
                f"name={self.name}, patternType={self.pattern_type.name})")


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission.name})")


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select; None and ANY mean "any"."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        wanted = self.pattern_type
        if wanted == PatternType.MATCH:
            if self.name is None:
                return True
            if pattern.pattern_type == PatternType.LITERAL:
                return pattern.name in (self.name, WILDCARD)
            return (pattern.pattern_type == PatternType.PREFIXED
                    and self.name.startswith(pattern.name))
        if wanted != PatternType.ANY and wanted != pattern.pattern_type:
            return False
        return self.name is None or self.name == pattern.name

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and self.operation in (AclOperation.ANY, entry.operation)
                and self.permission in (AclPermissionType.ANY, entry.permission))

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)


def binding_problem(binding: AclBinding) -> str | None:
    """Why CreateAcls must refuse this binding (None if it can be stored)."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type not in (ResourceType.TOPIC, ResourceType.GROUP,
                                     ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID):
        return f"resource type {pattern.resource_type.name} cannot have ACLs here"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"pattern type {pattern.pattern_type.name} is for filters, not ACLs"
    if not pattern.name:
        return "the resource name is empty"
    if "/" in pattern.name:  # the name is a znode's name in ZooKeeper
        return f"resource name {pattern.name!r} has a '/'"
    if pattern.resource_type == ResourceType.CLUSTER and (
            pattern.name != CLUSTER_NAME or pattern.pattern_type != PatternType.LITERAL):
        return f"the cluster resource is the literal {CLUSTER_NAME!r}"
    if pattern.pattern_type == PatternType.PREFIXED and pattern.name == WILDCARD:
        return "a prefixed '*' is not a wildcard; use a literal '*'"
    if principal_problem(entry.principal):
        return principal_problem(entry.principal)
    if not entry.host:
        return "the host is empty (use '*' for any host)"
    if entry.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        return f"operation {entry.operation.name} is for filters, not ACLs"
    if entry.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"permission type {entry.permission.name} is for filters, not ACLs"
    return None


def principal_problem(principal: str) -> str | None:
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        return f"principal {principal!r} is not TYPE:NAME (e.g. User:alice)"
    return None
