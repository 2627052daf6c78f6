"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455) over ZooKeeper.

The controller carries reassignments out from ``/admin/reassign_partitions``
(Kafka's znode and JSON, see ``controller.py``), so these handlers only read
and write ZooKeeper, and any broker can take them: Alter merges the requested
targets into that znode (conditional on its version, so two requests do not
lose each other's partitions); List reads it, with each partition's replicas
and its adding and removing replicas from the topic znode (version 2, as the
controller writes it); until the controller has written them, they are computed
from the target as the controller will write them, as Kafka answers: replicas
the full set (target, then the leaving ones: [2, 1, 0] for 0,2 -> 2,1), adding
[1], removing [0].
Null replicas cancel: the partition leaves the znode, and the controller puts
it back on its original replicas (NO_REASSIGNMENT_IN_PROGRESS where nothing moves).

All ZooKeeper calls run on a worker thread, never on the reactor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.coordination.assignment import AssignmentError
from simplekafka.coordination.reassignment import (
    parse_reassignment_json,
    reassignment_json,
    replicas_during,
)
from simplekafka.coordination.topics import read_topic_assignment
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseResponsesPartitions,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponseTopicsPartitions,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.protocol.states import ZnodeStat

WRITE_ATTEMPTS = 10
Key = tuple[str, int]
# Why a whole request is refused: (error code, message).
Refusal = tuple[ErrorCode, "str | None"]


class _ClusterRequestHandler:
    """What both reassignment handlers do first: check the cluster ACL, find ZooKeeper."""

    def __init__(self, reactor: Reactor, zookeeper: ZooKeeperHandle,
                 authorizer: Authorizer = ALLOW_EVERYONE) -> None:
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.authorizer = authorizer

    def _zookeeper_for(self, context: RequestContext, operation: AclOperation
                       ) -> tuple[KazooClient, None] | tuple[None, Refusal]:
        """(the ZooKeeper client, None), or (None, why not) when refused or absent."""
        if not self.authorizer.authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME):
            return None, (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        zk: KazooClient | None = self.zookeeper()
        if zk is None:
            return None, (ErrorCode.NOT_CONTROLLER, "not connected to ZooKeeper yet")
        return zk, None


class AlterPartitionReassignmentsHandler(_ClusterRequestHandler):
    """ApiKey.ALTER_PARTITION_REASSIGNMENTS: see the module docstring."""

    def __call__(self, context: RequestContext, request: AlterPartitionReassignmentsRequest
                 ) -> AlterPartitionReassignmentsResponse | defer.Deferred:
        zk, refusal = self._zookeeper_for(context, AclOperation.ALTER)
        if refusal is not None:
            return {"throttle_time_ms": 0, "error_code": refusal[0], "error_message": refusal[1],
                    "responses": []}
        wanted = {(t["name"], p["partition_index"]):
                  (None if (replicas := p["replicas"]) is None else list(replicas))
                  for t in request["topics"] for p in t["partitions"]}
        return in_worker_thread(self.reactor, alter_reassignments, zk, wanted).addCallback(
            _alter_response)


def _pending(zk: KazooClient) -> tuple[dict[Key, list[int]], ZnodeStat | None]:
    """The znode's targets and its stat (None when absent)."""
    try:
        data, stat = zk.get(ZkPaths.REASSIGN_PARTITIONS)
    except NoNodeError:
        return {}, None
    try:
        return parse_reassignment_json(data), stat
    except AssignmentError:
        return {}, stat


def alter_reassignments(zk: KazooClient, wanted: dict[Key, list[int] | None]
                        ) -> dict[Key, tuple[ErrorCode, str | None]]:
    """Validate each partition's target and merge the valid ones into the znode. Blocking."""
    live = {int(b) for b in zk.get_children(ZkPaths.BROKER_IDS) if b.isdigit()}
    assignments = {t: read_topic_assignment(zk, t) for t in {t for t, _ in wanted}}
    pending, _stat = _pending(zk)
    results: dict[Key, tuple[ErrorCode, str | None]] = {}
    valid: dict[Key, list[int] | None] = {}
    for key, target in wanted.items():
        assignment = assignments.get(key[0])
        if assignment is None or key[1] not in assignment.partitions:
            results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        elif target is None:
            if key in pending:
                valid[key] = None
            else:
                results[key] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
        elif not target or len(set(target)) != len(target) or min(target) < 0:
            results[key] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"replicas {target} must be distinct broker ids")
        elif set(target) - live:
            results[key] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"brokers {sorted(set(target) - live)} are not live")
        else:
            valid[key] = target
    if valid:
        _merge(zk, valid)
    return results | dict.fromkeys(valid, (ErrorCode.NONE, None))


def _merge(zk: KazooClient, targets: dict[Key, list[int] | None]) -> None:
    """Targets into the znode; None takes the partition out (a cancel)."""
    for _attempt in range(WRITE_ATTEMPTS):
        pending, stat = _pending(zk)
        for key, target in targets.items():
            if target is None:
                pending.pop(key, None)
            else:
                pending[key] = target
        data = reassignment_json(pending, log_dirs=False).encode()
        try:
            if stat is None:
                if pending:
                    zk.create(ZkPaths.REASSIGN_PARTITIONS, data, makepath=True)
            elif pending:
                zk.set(ZkPaths.REASSIGN_PARTITIONS, data, version=stat.version)
            else:
                zk.delete(ZkPaths.REASSIGN_PARTITIONS, version=stat.version)
            return
        except (NodeExistsError, BadVersionError, NoNodeError):
            continue  # the controller or another request wrote it meanwhile
    raise RuntimeError(f"{ZkPaths.REASSIGN_PARTITIONS} kept changing; try again")


def _alter_response(results: dict[Key, tuple[ErrorCode, str | None]]
                    ) -> AlterPartitionReassignmentsResponse:
    by_topic: dict[str, list[AlterPartitionReassignmentsResponseResponsesPartitions]] = {}
    for (topic, partition), (code, message) in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": [{"name": t, "partitions": p} for t, p in by_topic.items()]}


class ListPartitionReassignmentsHandler(_ClusterRequestHandler):
    """ApiKey.LIST_PARTITION_REASSIGNMENTS: see the module docstring."""

    def __call__(self, context: RequestContext, request: ListPartitionReassignmentsRequest
                 ) -> ListPartitionReassignmentsResponse | defer.Deferred:
        zk, refusal = self._zookeeper_for(context, AclOperation.DESCRIBE)
        if refusal is not None:
            return {"throttle_time_ms": 0, "error_code": refusal[0], "error_message": refusal[1],
                    "topics": []}
        topics = request["topics"]
        wanted = (None if topics is None else
                  {(t["name"], p) for t in topics for p in t["partition_indexes"]})
        return in_worker_thread(self.reactor, list_reassignments, zk, wanted)


def list_reassignments(zk: KazooClient, wanted: set[Key] | None
                       ) -> ListPartitionReassignmentsResponse:
    """The ongoing reassignments (of ``wanted`` only, unless None). Blocking."""
    pending, _stat = _pending(zk)
    topics: dict[str, list[ListPartitionReassignmentsResponseTopicsPartitions]] = {}
    for key, target in sorted(pending.items()):
        if wanted is not None and key not in wanted:
            continue
        assignment = read_topic_assignment(zk, key[0])
        if assignment is None or key[1] not in assignment.partitions:
            continue
        replicas = list(assignment.partitions[key[1]])
        if key[1] in assignment.adding:
            adding = list(assignment.adding[key[1]])
            removing = list(assignment.removing.get(key[1], ()))
        else:  # the controller has not started it yet: what it will write (RS = TRS + ORS)
            adding = [r for r in target if r not in replicas]
            removing = [r for r in replicas if r not in target]
            replicas = list(replicas_during(replicas, target))
        topics.setdefault(key[0], []).append({
            "partition_index": key[1], "replicas": replicas,
            "adding_replicas": adding, "removing_replicas": removing})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
