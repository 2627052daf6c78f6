"""DescribeCluster: the brokers, the controller and the cluster id (KIP-700).

Admin clients used to learn the cluster from a Metadata request; since Kafka 2.8
they ask DescribeCluster, which says the same without any topic. The answer
comes from the metadata cache, as Metadata's does: the live brokers' endpoints
on the listener the request came in on, and the controller if it is one of
them (-1 otherwise, so a client never looks for a broker it cannot reach).

Kafka refuses nobody here: without Describe on the cluster a principal still
learns the brokers, and only the authorized operations it asked for are 0.
From v1 (KIP-919) a client says which endpoints it wants; a ZooKeeper-mode
broker describes brokers (1), and asked for controllers (2) it answers
MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE (in v0,
which has no such field, both would be INVALID_REQUEST).
"""

from __future__ import annotations

from collections.abc import Callable

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.apis.groups import UNKNOWN_AUTHORIZED_OPERATIONS
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import DescribeClusterRequest, DescribeClusterResponse

ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2


class DescribeClusterHandler:
    """ApiKey.DESCRIBE_CLUSTER: see the module docstring."""

    def __init__(self, cache: MetadataCache, cluster_id: Callable[[], str | None],
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.cache = cache
        self.cluster_id = cluster_id
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: DescribeClusterRequest
                 ) -> DescribeClusterResponse:
        endpoint_type = request["endpoint_type"] if context.api_version >= 1 \
            else ENDPOINT_BROKERS
        if endpoint_type != ENDPOINT_BROKERS:
            if context.api_version == 0:
                code = ErrorCode.INVALID_REQUEST
            elif endpoint_type == ENDPOINT_CONTROLLERS:
                code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            else:
                code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            message = ("a ZooKeeper-mode broker describes brokers (endpoint type 1), "
                       f"not endpoint type {endpoint_type}")
            return {"error_code": code, "error_message": message,
                    "endpoint_type": ENDPOINT_BROKERS, "cluster_id": "", "brokers": []}
        operations = UNKNOWN_AUTHORIZED_OPERATIONS
        if request["include_cluster_authorized_operations"]:
            operations = self.authorizer.authorized_operations(
                context, ResourceType.CLUSTER, CLUSTER_NAME) if self.authorizer.authorize(
                context, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0
        cache = self.cache
        nodes = cache.brokers_on(context.listener)
        controller_id = cache.controller_id if cache.controller_id in nodes else -1
        return {
            "throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "endpoint_type": ENDPOINT_BROKERS, "cluster_id": self.cluster_id() or "",
            "controller_id": controller_id,
            "brokers": [{"broker_id": n.node_id, "host": n.host, "port": n.port,
                         "rack": n.rack} for _, n in sorted(nodes.items())],
            "cluster_authorized_operations": operations,
        }
