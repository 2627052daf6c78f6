"""ElectLeaders: preferred and unclean leader elections over the Kafka protocol.

In ZooKeeper mode the election itself is the controller's: it watches
``/admin/preferred_replica_election`` (the znode Kafka's
``kafka-preferred-replica-election.sh --zookeeper`` writes), moves leadership
to each listed partition's first replica where that replica is live and in
the ISR, and removes the znode. This handler writes that znode, waits (up to
the request's timeout) for the controller to remove it, and answers per
partition from the state znodes: NONE (the preferred replica leads now),
ELECTION_NOT_NEEDED (it already did), PREFERRED_LEADER_NOT_AVAILABLE (not
live or not in sync), UNKNOWN_TOPIC_OR_PARTITION. Because the controller does
the work, any broker can take the request.

Unclean elections (type 1, v1+) go the same way through
``/admin/unclean_leader_election`` (not a Kafka path; ZooKeeper-mode Kafka hands
them to its controller in memory): the controller gives each listed partition
whose leader is gone a leader, out-of-sync replicas allowed. Per partition:
NONE (a leader now), ELECTION_NOT_NEEDED (its leader is live),
ELIGIBLE_LEADERS_NOT_AVAILABLE (no live replica), UNKNOWN_TOPIC_OR_PARTITION.

All ZooKeeper calls run on a worker thread, never on the reactor.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kazoo.exceptions import NodeExistsError
from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.coordination.topics import (
    list_topics,
    read_partition_state,
    read_topic_assignment,
)
from simplekafka.coordination.znodes import PartitionRef, PartitionRefs, ZkPaths
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponseReplicaElectionResultsPartitionResult,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

PREFERRED = 0
UNCLEAN = 1
POLL_SECONDS = 0.05


class ElectLeadersHandler:
    """ApiKey.ELECT_LEADERS: see the module docstring."""

    def __init__(self, reactor: Reactor, zookeeper: ZooKeeperHandle,
                 authorizer: Authorizer = ALLOW_EVERYONE) -> None:
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: ElectLeadersRequest
                 ) -> ElectLeadersResponse | defer.Deferred:
        asked = request["topic_partitions"]
        wanted = (None if asked is None else
                  [(t["topic"], p) for t in asked for p in t["partitions"]])
        if not self.authorizer.authorize(context, AclOperation.ALTER, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return _response(dict.fromkeys(wanted or [], (code, None)), code)
        election_type = request["election_type"] if context.api_version >= 1 else PREFERRED
        zk = self.zookeeper()
        if election_type not in (PREFERRED, UNCLEAN) or zk is None:
            code, message = ((ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}")
                             if zk is not None else
                             (ErrorCode.NOT_CONTROLLER, "not connected to ZooKeeper yet"))
            return _response(dict.fromkeys(wanted or [], (code, message)), code)
        timeout = max(request["timeout_ms"], 0) / 1000
        elect = elect_preferred if election_type == PREFERRED else elect_unclean
        return in_worker_thread(self.reactor, elect, zk, wanted, timeout).addCallback(
            _response, ErrorCode.NONE)


Outcomes = dict[tuple[str, int], tuple[ErrorCode, str | None]]


def elect_preferred(zk: KazooClient, wanted: list[tuple[str, int]] | None,
                    timeout: float) -> Outcomes:
    """Ask the controller for a preferred election of ``wanted`` (None: all); per-partition
    outcomes. Blocking: run it on a worker thread."""
    deadline = time.monotonic() + timeout
    assignments, known, results = _known_partitions(zk, wanted)
    before = {key: _leader(zk, key) for key in known}
    asked = [key for key in known if before[key] != assignments[key[0]][key[1]][0]]
    for key in known:
        if key not in asked:
            results[key] = (ErrorCode.ELECTION_NOT_NEEDED, "the preferred replica leads")
    if asked and not _run_election(zk, ZkPaths.PREFERRED_REPLICA_ELECTION, asked, deadline):
        return results | _timed_out(asked)
    for key in asked:
        preferred = assignments[key[0]][key[1]][0]
        leader = _leader(zk, key)
        results[key] = ((ErrorCode.NONE, None) if leader == preferred else
                        (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                         f"preferred replica {preferred} is not live or not in sync; "
                         f"leader stays {leader}"))
    return results


def elect_unclean(zk: KazooClient, wanted: list[tuple[str, int]] | None,
                  timeout: float) -> Outcomes:
    """Ask the controller for an unclean election of the partitions of ``wanted`` (None:
    all) that have no live leader; per-partition outcomes. Blocking."""
    deadline = time.monotonic() + timeout
    _assignments, known, results = _known_partitions(zk, wanted)
    live = {int(b) for b in zk.get_children(ZkPaths.BROKER_IDS) if b.isdigit()}
    asked = [key for key in known if _leader(zk, key) not in live]
    for key in known:
        if key not in asked:
            results[key] = (ErrorCode.ELECTION_NOT_NEEDED, "its leader is live")
    if asked and not _run_election(zk, ZkPaths.UNCLEAN_LEADER_ELECTION, asked, deadline):
        return results | _timed_out(asked)
    for key in asked:
        leader = _leader(zk, key)
        results[key] = ((ErrorCode.NONE, None) if leader >= 0 else
                        (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica is live"))
    return results


def _known_partitions(zk: KazooClient, wanted: list[tuple[str, int]] | None
                      ) -> tuple[dict[str, dict[int, list[int]]], list[tuple[str, int]], Outcomes]:
    """Assignments of the topics asked for, the partitions that exist (all, for None),
    and UNKNOWN_TOPIC_OR_PARTITION for the others."""
    assignments: dict[str, dict[int, list[int]]] = {}
    topics = sorted({t for t, _ in wanted}) if wanted is not None else list_topics(zk)
    for topic in topics:
        found = read_topic_assignment(zk, topic)
        if found is not None:
            assignments[topic] = {p: list(r) for p, r in found.partitions.items()}
    if wanted is None:
        wanted = [(t, p) for t, parts in assignments.items() for p in sorted(parts)]
    results: Outcomes = {}
    known = []
    for key in wanted:
        if key[1] in assignments.get(key[0], {}):
            known.append(key)
        else:
            results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    return assignments, known, results


def _timed_out(keys: list[tuple[str, int]]) -> Outcomes:
    return dict.fromkeys(keys, (ErrorCode.REQUEST_TIMED_OUT,
                                "the controller did not act in time (another election running?)"))


def _run_election(zk: KazooClient, path: str, keys: list[tuple[str, int]], deadline: float) -> bool:
    """Write the election znode and wait until the controller has removed it."""
    payload = PartitionRefs(tuple(PartitionRef(t, p) for t, p in keys)).to_json()
    written = False
    while time.monotonic() < deadline:
        if not written:
            try:
                zk.create(path, payload, makepath=True)
                written = True
            except NodeExistsError:  # someone else's election: wait for it to finish
                pass
        elif zk.exists(path) is None:
            return True
        time.sleep(POLL_SECONDS)
    return False


def _leader(zk: KazooClient, key: tuple[str, int]) -> int:
    found = read_partition_state(zk, *key)
    return found[0].leader if found else -1


def _response(results: dict[tuple[str, int], tuple[ErrorCode, str | None]],
              error_code: ErrorCode) -> ElectLeadersResponse:
    by_topic: dict[str, list[ElectLeadersResponseReplicaElectionResultsPartitionResult]] = {}
    for (topic, partition), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            {"partition_id": partition, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "error_code": error_code,
            "replica_election_results": [{"topic": t, "partition_result": parts}
                                         for t, parts in by_topic.items()]}
