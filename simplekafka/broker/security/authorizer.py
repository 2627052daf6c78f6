"""The authorizer: may this principal, from this host, do this operation on this resource?

Kafka's AclAuthorizer semantics, decided from an in-memory copy of the ACLs
that ZooKeeper holds (``acl_changes.AclChangeFollower`` keeps it current):

1. a principal listed in ``super.users`` may do everything;
2. the ACLs that apply to a resource are those of its literal name, of the
   literal ``*`` of its type, and of every prefixed pattern its name starts with;
3. if there are none, the answer is ``allow.everyone.if.no.acl.found``
   (false unless set);
4. a DENY entry for the principal (or ``User:*``), the host (or ``*``) and the
   operation (or ``All``) refuses, whatever allows it: deny wins;
5. otherwise an ALLOW entry for the operation, ``All``, or an operation that
   implies it (Read, Write, Delete and Alter imply Describe; AlterConfigs
   implies DescribeConfigs) allows.

Every request handler asks through one object (``Authorizer`` in
``apis.collaborators``): ``AllowEveryone`` when no ``authorizer.class.name``
is set, an ``AclAuthorizer`` otherwise. The check must cost microseconds,
so the ACLs are indexed by (resource type, name), prefixed ones by prefix with
the prefix lengths in use kept sorted, and decisions are remembered until the
ACLs change.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from simplekafka.protocol.acls import (
    IMPLIED_BY,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    operation_bits,
)

if TYPE_CHECKING:
    from simplekafka.broker.config import BrokerConfig

log = logging.getLogger(__name__)
# Kafka logs every denial on its own logger ("kafka.authorizer.logger"); so do we.
audit = logging.getLogger("simplekafka.authorizer")

class Asking(Protocol):
    """Who asks (a request's ``RequestContext``): the principal the connection logged in
    as, and the peer (host:port) it came from."""

    @property
    def principal(self) -> str: ...

    @property
    def peer(self) -> str: ...


# authorizer.class.name values that mean "Kafka's ZooKeeper ACL authorizer".
ACL_AUTHORIZER_NAMES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "simplekafka.broker.security.authorizer.AclAuthorizer",
})

_ALLOW, _DENY, _ALL = AclPermissionType.ALLOW, AclPermissionType.DENY, AclOperation.ALL
_MAX_REMEMBERED = 100_000


def host_of(peer: str) -> str:
    """The client's address from a connection's ``host:port`` peer string."""
    host, sep, _port = peer.rpartition(":")
    return host if sep else peer


class AllowEveryone:
    """No authorizer configured: every request is allowed, and the ACL APIs answer
    SECURITY_DISABLED, as Kafka without ``authorizer.class.name``."""

    enabled = False
    acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]] = {}

    def update(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        pass

    def bindings(self, wanted: AclBindingFilter | None = None) -> list[AclBinding]:
        return []

    def authorize(self, context: Asking, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        return True

    def authorize_any(self, context: Asking, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        return True

    def authorized_operations(self, context: Asking, resource_type: ResourceType,
                              name: str) -> int:
        return operation_bits(SUPPORTED_OPERATIONS.get(resource_type, ()))


ALLOW_EVERYONE = AllowEveryone()


class AclAuthorizer:
    """Decides from the ACLs it was given (``update``/``replace_all``); see the module docstring."""

    enabled = True

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}
        self._prefix_lengths: dict[ResourceType, list[int]] = {}
        self._decisions: dict[tuple, bool] = {}

    # -- the ACLs -------------------------------------------------------------------------

    def update(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """The pattern's ACLs are now ``entries`` (none: the pattern has no ACLs)."""
        frozen = frozenset(entries)
        if frozen:
            self.acls[pattern] = frozen
        else:
            self.acls.pop(pattern, None)
        kind = pattern.resource_type
        if pattern.pattern_type == PatternType.LITERAL:
            if frozen:
                self._literal[(kind, pattern.name)] = frozen
            else:
                self._literal.pop((kind, pattern.name), None)
        else:
            by_prefix = self._prefixed.setdefault(kind, {})
            if frozen:
                by_prefix[pattern.name] = frozen
            else:
                by_prefix.pop(pattern.name, None)
            self._prefix_lengths[kind] = sorted({len(p) for p in by_prefix})
        self._decisions.clear()

    def replace_all(self, acls: Mapping[ResourcePattern, Iterable[AccessControlEntry]]) -> None:
        for pattern in list(self.acls):
            if pattern not in acls:
                self.update(pattern, ())
        for pattern, entries in acls.items():
            self.update(pattern, entries)
        self._decisions.clear()

    def bindings(self, wanted: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every ACL (that ``wanted`` selects), sorted."""
        found = [AclBinding(pattern, entry) for pattern, entries in self.acls.items()
                 for entry in entries]
        if wanted is not None:
            found = [b for b in found if wanted.matches(b)]
        return sorted(found)

    # -- decisions ------------------------------------------------------------------------

    def authorize(self, context: Asking, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """Whether ``context.principal`` from ``context.peer``'s host may do ``operation``."""
        principal = context.principal
        if principal in self.super_users:
            return True
        # Remembered per connection (its peer): a client asks the same again and again.
        key = (principal, context.peer, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            host = host_of(context.peer)
            decision = self.decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= _MAX_REMEMBERED:
                self._decisions.clear()
            self._decisions[key] = decision
            if not decision:  # logged when decided, not on every request that repeats it
                audit.debug("Principal = %s is Denied Operation = %s from host = %s on "
                           "resource = %s:%s", principal, operation.kafka_name, host,
                           resource_type.kafka_name, name)
        return decision

    def matching_entries(self, resource_type: ResourceType,
                         name: str) -> list[frozenset[AccessControlEntry]]:
        """The ACL sets that apply to the resource: its name, ``*``, its prefixes."""
        found = []
        literal = self._literal
        entries = literal.get((resource_type, name))
        if entries:
            found.append(entries)
        if name != WILDCARD:
            entries = literal.get((resource_type, WILDCARD))
            if entries:
                found.append(entries)
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            by_prefix = self._prefixed[resource_type]
            size = len(name)
            for length in lengths:
                if length > size:
                    break
                entries = by_prefix.get(name[:length])
                if entries:
                    found.append(entries)
        return found

    def decide(self, principal: str, host: str, operation: AclOperation,
               resource_type: ResourceType, name: str) -> bool:
        """The decision without super users or memory (steps 2 to 5 of the module docstring)."""
        applying = self.matching_entries(resource_type, name)
        if not applying:
            return self.allow_if_no_acl
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)
        allowed_by = IMPLIED_BY.get(operation, frozenset((operation,)))
        allowed = False
        for entries in applying:
            for entry in entries:
                if entry.principal not in principals or entry.host not in hosts:
                    continue
                if entry.permission == _DENY:
                    if entry.operation == operation or entry.operation == _ALL:
                        return False
                elif not allowed and (entry.operation in allowed_by or entry.operation == _ALL):
                    allowed = True
        return allowed

    def authorized_operations(self, context: Asking, resource_type: ResourceType,
                              name: str) -> int:
        """The bit set of what the principal may do to the resource (Metadata v8's
        ``topic_authorized_operations``, DescribeGroups' ``authorized_operations``)."""
        return operation_bits([op for op in SUPPORTED_OPERATIONS.get(resource_type, ())
                               if self.authorize(context, op, resource_type, name)])

    def authorize_any(self, context: Asking, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``: an idempotent producer needs Write on some topic)."""
        principal = context.principal
        if principal in self.super_users:
            return True
        host = host_of(context.peer)
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)
        typed = {p: e for p, e in self.acls.items() if p.resource_type == resource_type}
        if not typed:
            return self.allow_if_no_acl

        def applies(entry: AccessControlEntry, permission: AclPermissionType) -> bool:
            return (entry.permission == permission and entry.principal in principals
                    and entry.host in hosts and entry.operation in (operation, _ALL))

        denied = {p for p, entries in typed.items() if any(applies(e, _DENY) for e in entries)}
        if ResourcePattern(resource_type, WILDCARD) in denied:
            return False
        return any(pattern not in denied and any(applies(e, _ALLOW) for e in entries)
                   for pattern, entries in typed.items())


Authorizing = AllowEveryone | AclAuthorizer


def build_authorizer(config: BrokerConfig) -> Authorizing:
    """The authorizer ``authorizer.class.name`` asks for (``AllowEveryone`` when empty)."""
    name = config["authorizer.class.name"]
    if not name:
        return ALLOW_EVERYONE
    if name not in ACL_AUTHORIZER_NAMES:
        raise ValueError(f"authorizer.class.name: {name!r} is not one of "
                         f"{', '.join(sorted(ACL_AUTHORIZER_NAMES))}")
    return AclAuthorizer(parse_super_users(config["super.users"]),
                         config["allow.everyone.if.no.acl.found"])


def parse_super_users(text: str | None) -> list[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:alice``)."""
    return [p.strip() for p in (text or "").split(";") if p.strip()]
