"""LeaderAndIsr, UpdateMetadata and StopReplica: the controller's requests to this broker.

They arrive over the wire from another broker's controller, or through the
local channel from this broker's own. Each is refused with STALE_BROKER_EPOCH
when it was meant for an earlier incarnation of this broker (KIP-380). Before
a LeaderAndIsr creates a partition's log, the topic's config overrides are
read from ZooKeeper (on a worker thread), so the log starts with them. With an
authorizer, the sender needs ClusterAction on the cluster
(CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka.

Partitions live until StopReplica: after a LeaderAndIsr everything alive is
frozen out of the garbage collector's full passes (as the broker's start-up
objects are), which otherwise walk ~30 objects per partition: 60 ms of CPU at
5,000 partitions, a pause in every request's path. StopReplica unfreezes, so
what a deleted partition leaves in reference cycles is still collected.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.replica_manager import PartitionErrors, ReplicaManager
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionErrors,
    LeaderAndIsrResponseTopicsPartitionErrors,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from simplekafka.protocol.topic_ids import ZERO_ID

if TYPE_CHECKING:
    from kazoo.client import KazooClient

TopicConfigReader = Callable[["KazooClient", str], dict[str, str]]
_Answer = TypeVar("_Answer")

# The versions from which each request carries the broker epoch (KIP-380) and, for
# LeaderAndIsr, its partitions grouped by topic (v2+) with the topic ID (v5+, KIP-516).
LEADER_AND_ISR_BROKER_EPOCH = 2
LEADER_AND_ISR_TOPIC_STATES = 2
LEADER_AND_ISR_TOPIC_IDS = 5
STOP_REPLICA_BROKER_EPOCH = 1
UPDATE_METADATA_BROKER_EPOCH = 5


class InterBrokerHandlers:
    """The three controller-to-broker requests; see the module docstring."""

    def __init__(self, replica_manager: ReplicaManager, cache: MetadataCache,
                 topic_configs: dict[str, dict[str, str]], read_topic_config: TopicConfigReader,
                 zookeeper: ZooKeeperHandle, reactor: Reactor,
                 broker_epoch: Callable[[], int | None],
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
        self.replica_manager = replica_manager
        self.cache = cache
        self.topic_configs = topic_configs  # the broker's, shared: filled and pruned here
        self.read_topic_config = read_topic_config
        self.zookeeper = zookeeper
        self.reactor = reactor
        self.broker_epoch = broker_epoch  # our /brokers/ids znode's czxid, once registered

    def leader_and_isr(self, context: RequestContext, request: LeaderAndIsrRequest
                       ) -> LeaderAndIsrResponse | defer.Deferred:
        version = context.api_version
        stale = self._refused(context) or self._stale_broker_epoch(
            request["broker_epoch"] if version >= LEADER_AND_ISR_BROKER_EPOCH else -1)
        if stale is not None:
            return leader_and_isr_response(PartitionErrors(stale, {}), request, version)
        if version >= LEADER_AND_ISR_TOPIC_STATES:
            topics = {ts["topic_name"] for ts in request["topic_states"]}
        else:
            topics = {p["topic_name"] for p in request["ungrouped_partition_states"]}
        unknown = sorted(t for t in topics if t not in self.topic_configs)
        zk = self.zookeeper()
        if not unknown or zk is None:
            return _frozen(leader_and_isr_response(self.replica_manager.become_leader_or_follower(
                request), request, version))

        def read_configs() -> dict[str, dict[str, str]]:
            return {t: self.read_topic_config(zk, t) for t in unknown}

        def apply(configs: dict[str, dict[str, str]]) -> LeaderAndIsrResponse:
            self.topic_configs.update(configs)
            return _frozen(leader_and_isr_response(self.replica_manager.become_leader_or_follower(
                request), request, version))

        return in_worker_thread(self.reactor, read_configs).addCallback(apply)

    def update_metadata(self, context: RequestContext, request: UpdateMetadataRequest
                        ) -> UpdateMetadataResponse:
        stale = self._refused(context) or self._stale_broker_epoch(
            request["broker_epoch"] if context.api_version >= UPDATE_METADATA_BROKER_EPOCH
            else -1)
        if stale is not None:
            return {"error_code": stale}
        code = self.cache.apply_update_metadata(request)
        for topic in list(self.topic_configs):
            if not self.cache.has_topic(topic):
                self.topic_configs.pop(topic, None)
        return {"error_code": code}

    def stop_replica(self, context: RequestContext, request: StopReplicaRequest
                     ) -> StopReplicaResponse:
        stale = self._refused(context) or self._stale_broker_epoch(
            request["broker_epoch"] if context.api_version >= STOP_REPLICA_BROKER_EPOCH else -1)
        if stale is not None:
            return partition_errors_response(PartitionErrors(stale, {}))
        gc.unfreeze()  # the next LeaderAndIsr freezes what is still alive
        return partition_errors_response(self.replica_manager.stop_replicas(request))

    def _refused(self, context: RequestContext) -> ErrorCode | None:
        if self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                     CLUSTER_NAME):
            return None
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    def _stale_broker_epoch(self, theirs: int) -> ErrorCode | None:
        """A request meant for an earlier incarnation of this broker (KIP-380) is refused
        (-1: the request does not say)."""
        ours = self.broker_epoch()
        if ours is not None and theirs != -1 and theirs < ours:
            return ErrorCode.STALE_BROKER_EPOCH
        return None


def partition_errors_response(outcome: PartitionErrors) -> StopReplicaResponse:
    """The answer LeaderAndIsr and StopReplica share (v0-4: a flat partition_errors list)."""
    return {"error_code": outcome.error_code,
            "partition_errors": _partition_errors(outcome)}


def _partition_errors(outcome: PartitionErrors) -> list[LeaderAndIsrResponsePartitionErrors]:
    return [{"topic_name": tp.topic, "partition_index": tp.partition, "error_code": code}
            for tp, code in outcome.partitions.items()]


def leader_and_isr_response(outcome: PartitionErrors, request: LeaderAndIsrRequest,
                            version: int) -> LeaderAndIsrResponse:
    """LeaderAndIsr's answer: v0-4 a flat list by topic name, v5+ grouped by topic ID
    (KIP-516), the IDs the request named; the encoder keeps the shape its version has."""
    answer: LeaderAndIsrResponse = {"error_code": outcome.error_code,
                                    "partition_errors": _partition_errors(outcome)}
    ids = {ts["topic_name"]: ts["topic_id"] for ts in request["topic_states"]} \
        if version >= LEADER_AND_ISR_TOPIC_IDS else {}
    if ids:
        grouped: dict[bytes, list[LeaderAndIsrResponseTopicsPartitionErrors]] = {}
        for tp, code in outcome.partitions.items():
            grouped.setdefault(ids.get(tp.topic, ZERO_ID), []).append(
                {"partition_index": tp.partition, "error_code": code})
        answer["topics"] = [{"topic_id": topic_id, "partition_errors": errors}
                            for topic_id, errors in grouped.items()]
    return answer


def _frozen(answer: _Answer) -> _Answer:
    """Keep the partitions just made (and all else alive) out of full GC passes."""
    gc.freeze()
    return answer
