"""DescribeClientQuotas (48) and AlterClientQuotas (49), against ZooKeeper (KIP-546).

The admin-client way to read and set client quotas, next to ``simplekafka
quotas`` (which asks these APIs too). Alter writes the entity's znode under
``/config/users`` or ``/config/clients`` exactly as Kafka's ``ZkAdminManager``
does (byte rates as whole numbers, request_percentage as a double) and
notifies every broker through ``/config/changes``; Describe reads them back,
filtered as Kafka filters them: a component per entity type, matching an exact
name (0), the default (1) or any name (2); ``strict`` leaves out entities with
a type the filter does not name. Describe needs DescribeConfigs on the cluster,
Alter needs AlterConfigs, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.dispatch import RequestContext, RequestDispatcher
from simplekafka.coordination.client_quotas import (
    CLIENT_ID,
    DEFAULT,
    IP,
    USER,
    Entity,
    QuotaError,
    all_quotas,
    alter_quotas,
    entity_of,
    wire_parts,
)
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntriesEntity,
    AlterClientQuotasResponse,
    AlterClientQuotasResponseEntries,
    DescribeClientQuotasRequest,
    DescribeClientQuotasRequestComponents,
    DescribeClientQuotasResponse,
    DescribeClientQuotasResponseEntries,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class _AnyName:
    """A filter component matching any name (the default included, as in Kafka)."""


_ANY = _AnyName()
# entity type -> what its name must be: a znode name (DEFAULT for the default) or _ANY
Wanted = dict[str, "str | _AnyName | None"]


class ClientQuotaApis:
    def __init__(self, reactor: Reactor, zookeeper: ZooKeeperHandle, authorizer: Authorizer):
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.authorizer = authorizer

    def register(self, dispatcher: RequestDispatcher) -> None:
        dispatcher.register(ApiKey.DESCRIBE_CLIENT_QUOTAS, self.describe)
        dispatcher.register(ApiKey.ALTER_CLIENT_QUOTAS, self.alter)

    def describe(self, context: RequestContext, request: DescribeClientQuotasRequest
                 ) -> DescribeClientQuotasResponse | defer.Deferred:
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE_CONFIGS,
                                         ResourceType.CLUSTER, CLUSTER_NAME):
            return _describe_error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                   "Cluster authorization failed.")
        try:
            wanted = _filter(request["components"])
        except QuotaError as exc:
            return _describe_error(ErrorCode.INVALID_REQUEST, str(exc))
        except _Unsupported as exc:
            return _describe_error(ErrorCode.UNSUPPORTED_VERSION, str(exc))
        zk = self.zookeeper()
        if zk is None:
            return _describe_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
        return in_worker_thread(self.reactor, _describe, zk, wanted, request["strict"])

    def alter(self, context: RequestContext, request: AlterClientQuotasRequest
              ) -> AlterClientQuotasResponse | defer.Deferred:
        if not self.authorizer.authorize(context, AclOperation.ALTER_CONFIGS,
                                         ResourceType.CLUSTER, CLUSTER_NAME):
            return {"entries": [_entry(e["entity"], ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       "Cluster authorization failed.")
                                for e in request["entries"]]}
        zk = self.zookeeper()
        if zk is None:
            return {"entries": [_entry(e["entity"], ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
                                for e in request["entries"]]}
        return in_worker_thread(self.reactor, _alter, zk, request)


class _Unsupported(Exception):
    pass


def _describe_error(code: int, message: str | None) -> DescribeClientQuotasResponse:
    return {"error_code": code, "error_message": message, "entries": None}


def _entry(entity: Sequence[AlterClientQuotasRequestEntriesEntity], code: int,
           message: str | None) -> AlterClientQuotasResponseEntries:
    return {"error_code": code, "error_message": message,
            "entity": [{"entity_type": p["entity_type"], "entity_name": p["entity_name"]}
                       for p in entity]}


def _filter(components: Sequence[DescribeClientQuotasRequestComponents]) -> Wanted:
    """entity type -> what its name must be (a znode name, DEFAULT or _ANY)."""
    wanted: Wanted = {}
    for component in components:
        entity_type = component["entity_type"]
        if entity_type in wanted:
            raise QuotaError(f"Duplicate {entity_type} filter component entity type")
        if entity_type == "":
            raise QuotaError("Unexpected empty filter component entity type")
        if entity_type not in (USER, CLIENT_ID, IP):
            raise _Unsupported(f"Custom entity type '{entity_type}' not supported")
        match_type, match = component["match_type"], component["match"]
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(f"Request specified MATCH_TYPE_EXACT, but set match string "
                                 f"to null for {entity_type}")
            wanted[entity_type] = match if entity_type == IP else _znode_name(entity_type,
                                                                              match)
        elif match_type == MATCH_DEFAULT:
            wanted[entity_type] = DEFAULT
        elif match_type == MATCH_SPECIFIED:
            wanted[entity_type] = _ANY
        else:
            raise QuotaError(f"Unexpected match type: {match_type}")
    if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
        raise QuotaError("Invalid entity filter component combination, IP filter component "
                         "should not be used with user or clientId filter component.")
    return wanted


def _znode_name(entity_type: str, name: str) -> str | None:
    """An exact name, as its znode spells it (checked as Alter checks it)."""
    user, client_id = entity_of([(entity_type, name)])
    return user if entity_type == USER else client_id


def _matches(wanted: Wanted, entity_type: str, znode: str | None, strict: bool) -> bool:
    if entity_type not in wanted:
        return znode is None or not strict
    want = wanted[entity_type]
    if want is _ANY:
        return znode is not None
    return znode == want


def _describe(zk: KazooClient, wanted: Wanted, strict: bool) -> DescribeClientQuotasResponse:
    if IP in wanted:
        return {"error_code": 0, "entries": []}  # SimpleKafka stores no ip quotas
    entries: list[DescribeClientQuotasResponseEntries] = []
    for entity, values in all_quotas(zk).items():
        if _matches(wanted, USER, entity[0], strict) and \
                _matches(wanted, CLIENT_ID, entity[1], strict):
            entries.append({
                "entity": [{"entity_type": t, "entity_name": n} for t, n in wire_parts(entity)],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())]})
    return {"error_code": 0, "error_message": None, "entries": entries}


def _alter(zk: KazooClient, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    results: list[AlterClientQuotasResponseEntries] = []
    for entry in request["entries"]:
        try:
            entity: Entity = entity_of((p["entity_type"], p["entity_name"])
                                       for p in entry["entity"])
            alter_quotas(zk, entity,
                         {op["key"]: op["value"] for op in entry["ops"] if not op["remove"]},
                         [op["key"] for op in entry["ops"] if op["remove"]],
                         validate_only=request["validate_only"])
        except QuotaError as exc:
            results.append(_entry(entry["entity"], ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        results.append(_entry(entry["entity"], ErrorCode.NONE, None))
    return {"entries": results}
