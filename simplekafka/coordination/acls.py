"""ACLs in ZooKeeper, stored exactly as ZooKeeper-mode Kafka's AclAuthorizer stores them.

Each resource pattern with ACLs is one znode holding all of them:

* literal patterns: ``/kafka-acl/<ResourceType>/<name>`` (``/kafka-acl/Topic/orders``,
  ``/kafka-acl/Topic/*``, ``/kafka-acl/Cluster/kafka-cluster``);
* prefixed patterns: ``/kafka-acl-extended/prefixed/<ResourceType>/<prefix>``;

with the JSON ``{"version":1,"acls":[{"principal":"User:alice",
"permissionType":"Allow","operation":"Write","host":"*"}]}``. A znode whose
last ACL is removed is deleted. Every change also leaves a sequential
notification so that every broker rereads that one pattern: under
``/kafka-acl-changes/acl_changes_<seq>`` the text ``Topic:orders`` for a
literal pattern, under ``/kafka-acl-extended-changes/acl_changes_<seq>`` the
JSON ``{"version":1,"resourceType":"Topic","name":"ord","patternType":"PREFIXED"}``.
Updates are conditional on the znode's version and retried, so two admins
adding ACLs to the same topic at once both keep theirs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from simplekafka.coordination.znodes import ZkPaths, ZnodeFormatError
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

CHANGE_PREFIX = "acl_changes_"
STORED_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                ResourceType.TRANSACTIONAL_ID)
_PREFIXED_ROOT = f"{ZkPaths.ACLS_EXTENDED}/prefixed"
_MAX_RETRIES = 30

Entries = frozenset[AccessControlEntry]


def pattern_path(pattern: ResourcePattern) -> str:
    root = ZkPaths.ACLS if pattern.pattern_type == PatternType.LITERAL else _PREFIXED_ROOT
    return f"{root}/{pattern.resource_type.kafka_name}/{pattern.name}"


def changes_path(pattern_type: PatternType) -> str:
    return (ZkPaths.ACL_CHANGES if pattern_type == PatternType.LITERAL
            else ZkPaths.ACL_EXTENDED_CHANGES)


def encode_entries(entries: Iterable[AccessControlEntry]) -> bytes:
    return json.dumps({"version": 1, "acls": [
        {"principal": e.principal, "permissionType": e.permission.kafka_name,
         "operation": e.operation.kafka_name, "host": e.host}
        for e in sorted(entries)]}, separators=(",", ":")).encode()


def decode_entries(data: bytes | None) -> Entries:
    if not data:
        return frozenset()
    try:
        document = json.loads(data)
        return frozenset(
            AccessControlEntry(str(a["principal"]), str(a["host"]),
                               AclOperation.parse(a["operation"]),  # type: ignore[arg-type]
                               AclPermissionType.parse(a["permissionType"]))  # type: ignore[arg-type]
            for a in document["acls"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ZnodeFormatError(f"not Kafka's ACL JSON ({exc}): {data[:200]!r}") from None


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{pattern.resource_type.kafka_name}:{pattern.name}".encode()
    return json.dumps({"version": 1, "resourceType": pattern.resource_type.kafka_name,
                       "name": pattern.name, "patternType": pattern.pattern_type.name},
                      separators=(",", ":")).encode()


def decode_change(changes: str, data: bytes) -> ResourcePattern:
    """The pattern a notification under ``changes`` (one of the two change paths) names."""
    text = data.decode()
    try:
        if changes == ZkPaths.ACL_CHANGES:
            kind, sep, name = text.partition(":")
            if not sep:
                raise ValueError("expected ResourceType:name")
            return ResourcePattern(ResourceType.parse(kind), name,  # type: ignore[arg-type]
                                   PatternType.LITERAL)
        event = json.loads(text)
        return ResourcePattern(ResourceType.parse(event["resourceType"]),  # type: ignore[arg-type]
                               str(event["name"]),
                               PatternType.parse(event["patternType"]))  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError) as exc:
        raise ZnodeFormatError(f"not an ACL change notification ({exc}): {text[:200]!r}") from None


def ensure_acl_paths(zk: KazooClient) -> None:
    """The parents Kafka's authorizer creates at start-up."""
    for kind in STORED_TYPES:
        zk.ensure_path(f"{ZkPaths.ACLS}/{kind.kafka_name}")
        zk.ensure_path(f"{_PREFIXED_ROOT}/{kind.kafka_name}")
    zk.ensure_path(ZkPaths.ACL_CHANGES)
    zk.ensure_path(ZkPaths.ACL_EXTENDED_CHANGES)


def read_entries(zk: KazooClient, pattern: ResourcePattern) -> tuple[Entries, int]:
    """The pattern's ACLs and its znode's version (-1: no znode)."""
    try:
        data, stat = zk.get(pattern_path(pattern))
    except NoNodeError:
        return frozenset(), -1
    return decode_entries(data), stat.version


def read_all(zk: KazooClient) -> dict[ResourcePattern, Entries]:
    """Every stored pattern with its ACLs (the authorizer's start-up load)."""
    found: dict[ResourcePattern, Entries] = {}
    for pattern_type, root in ((PatternType.LITERAL, ZkPaths.ACLS),
                               (PatternType.PREFIXED, _PREFIXED_ROOT)):
        for kind in STORED_TYPES:
            try:
                names = zk.get_children(f"{root}/{kind.kafka_name}")
            except NoNodeError:
                continue
            for name in names:
                pattern = ResourcePattern(kind, name, pattern_type)
                entries, _version = read_entries(zk, pattern)
                if entries:
                    found[pattern] = entries
    return found


def update_entries(zk: KazooClient, pattern: ResourcePattern,
                   change: Callable[[Entries], Entries]) -> tuple[Entries, Entries]:
    """Apply ``change`` to the pattern's ACLs, conditional on the znode's version (retried),
    and notify every broker: (ACLs before, ACLs after). Nothing changes, nothing is written."""
    ensure_acl_paths(zk)
    path = pattern_path(pattern)
    for _attempt in range(_MAX_RETRIES):
        before, version = read_entries(zk, pattern)
        after = frozenset(change(before))
        if after == before:
            return before, after
        transaction = zk.transaction()
        if version < 0:
            transaction.create(path, encode_entries(after))
        elif after:
            transaction.set_data(path, encode_entries(after), version=version)
        else:
            transaction.delete(path, version=version)
        transaction.create(f"{changes_path(pattern.pattern_type)}/{CHANGE_PREFIX}",
                           encode_change(pattern), sequence=True)
        results = transaction.commit()
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return before, after
        if not any(isinstance(f, (BadVersionError, NodeExistsError, NoNodeError,
                                  NotEmptyError)) for f in failures):
            raise failures[0]
    raise RuntimeError(f"ACLs of {pattern} changed concurrently {_MAX_RETRIES} times; "
                       "gave up")


def add_entries(zk: KazooClient, pattern: ResourcePattern,
                entries: Iterable[AccessControlEntry]) -> None:
    added = frozenset(entries)
    update_entries(zk, pattern, lambda current: current | added)


def remove_matching(zk: KazooClient, pattern: ResourcePattern,
                    wanted: AclBindingFilter) -> Entries:
    """Remove the pattern's ACLs that ``wanted`` selects (its entry part); returns them."""
    before, after = update_entries(
        zk, pattern, lambda current: frozenset(e for e in current if not wanted.matches_entry(e)))
    return before - after
