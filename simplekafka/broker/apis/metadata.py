"""ApiVersions and Metadata: what this broker speaks, and who leads what.

ApiVersions lists exactly the API versions the broker implements (clients use
whatever is advertised). Metadata answers from the metadata cache the
controller keeps up to date: live brokers, the controller (a live broker, so
admin requests can find it), and per partition the leader, its epoch (v7+),
replicas and ISR. Asking about an unknown topic creates it when
auto.create.topics.enable is on (and, from v4, the client allows it); the
answer is then LEADER_NOT_AVAILABLE until the controller has elected leaders,
and the client simply asks again.

From v10 each topic carries its ID (KIP-516); from v12 a client may ask by ID
alone (a null name): an ID no topic has now answers UNKNOWN_TOPIC_ID with a
null name, which is how a client holding a deleted topic's ID learns it is
gone. Topics asked for by ID are never auto-created.

With an authorizer, a principal sees only the topics it may Describe: asked for
every topic, the others are left out; asked by name, they answer
TOPIC_AUTHORIZATION_FAILED, as does an unknown topic it may not Create.

At 10,000 partitions building the answer costs tens of milliseconds of CPU
(a dict per partition, then encoding them), and clients ask again and again.
So the handler keeps what it built until the cache changes (an UpdateMetadata):
each topic's entry, and the whole encoded answer to "every topic" per version
and listener when no authorizer filters it.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from simplekafka.broker.apis.collaborators import Authorizer, Config, TopicCreator
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import CachedPartitionState, MetadataCache
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.server import KafkaConnection
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiKeys,
    MetadataRequest,
    MetadataRequestTopics,
    MetadataResponse,
    MetadataResponseBrokers,
    MetadataResponseTopics,
    MetadataResponseTopicsPartitions,
)
from simplekafka.protocol.messages import encode_response_body
from simplekafka.protocol.topic_ids import ZERO_ID

log = logging.getLogger(__name__)

INTER_BROKER_KEYS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA,
                               ApiKey.UPDATE_METADATA})
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def advertised_versions() -> list[ApiVersionsResponseApiKeys]:
    """ApiVersions' api_keys: every client-facing key we implement, with its range."""
    return [{"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
            if key not in INTER_BROKER_KEYS]


# KIP-511's rule for a client's software name and version (Kafka's ApiVersionsRequest).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


class ApiVersionsHandler:
    """ApiKey.API_VERSIONS: what we speak. From v3 (KIP-511) the client names its software
    and version: kept on the connection and counted per (name, version) for the metrics,
    as Kafka's per-software connection counts; a name or version outside KIP-511's
    characters is answered INVALID_REQUEST. A version above ours never reaches here: the
    dispatcher answers it in v0 with UNSUPPORTED_VERSION and our versions, and the client
    asks again with one we speak."""

    def __init__(self) -> None:
        self.client_software: dict[tuple[str, str], int] = defaultdict(int)

    def __call__(self, context: RequestContext, request: ApiVersionsRequest
                 ) -> ApiVersionsResponse:
        if context.api_version >= 3:
            name, version = request["client_software_name"], request["client_software_version"]
            if not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version)):
                return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [],
                        "throttle_time_ms": 0}
            if isinstance(context.connection, KafkaConnection):
                context.connection.client_software = (name, version)
            self.client_software[(name, version)] += 1
        return {"error_code": ErrorCode.NONE, "api_keys": advertised_versions(),
                "throttle_time_ms": 0}


class MetadataHandler:
    """ApiKey.METADATA: see the module docstring."""

    def __init__(self, cache: MetadataCache, config: Config,
                 cluster_id: Callable[[], str | None], topic_creator: TopicCreator,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
        self.cache = cache
        self.config = config
        self.cluster_id = cluster_id  # known once connected to ZooKeeper
        self.topic_creator = topic_creator
        # What was built from the cache as it is now (see the module docstring).
        self._topic_entries: dict[str, MetadataResponseTopics] = {}
        self._encoded: dict[tuple[int, str, str | None], bytes] = {}
        self.answers_built = 0  # whole answers built rather than taken from the cache
        cache.listeners.append(self._cache_changed)

    def _cache_changed(self) -> None:
        self._topic_entries = {}
        self._encoded = {}

    def __call__(self, context: RequestContext, request: MetadataRequest
                 ) -> MetadataResponse | bytes:
        version = context.api_version
        requested = request["topics"]
        everything = requested is None or (version == 0 and not requested)
        if not everything or self.authorizer.enabled or (version >= 8 and (
                request["include_topic_authorized_operations"]
                or (version <= 10 and request["include_cluster_authorized_operations"]))):
            return self._answer(context, request)
        key = (version, context.listener, self.cluster_id())
        encoded = self._encoded.get(key)
        if encoded is None:
            encoded = encode_response_body(ApiKey.METADATA, version,
                                           self._answer(context, request))
            self._encoded[key] = encoded
        return encoded

    def _answer(self, context: RequestContext, request: MetadataRequest) -> MetadataResponse:
        self.answers_built += 1
        cache = self.cache
        version = context.api_version
        requested = request["topics"]
        authorize = self.authorizer.authorize
        allow_create = bool(self.config["auto.create.topics.enable"]) and (
            version < 4 or request["allow_auto_topic_creation"])
        if requested is None or (version == 0 and not requested):
            topics = [self._topic(context, name, cache, False) for name in cache.topic_names()
                      if authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)]
        elif any(t["name"] is None or (version >= 10 and t["topic_id"] != ZERO_ID)
                 for t in requested):
            topics = self._by_id(context, requested, version)
        else:
            topics = [self._topic(context, name, cache, allow_create)
                      if authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
                      else _refused(name)
                      for name in dict.fromkeys(_name(t) for t in requested)]
        # Each client is told the endpoints of the listener it came in on (Kafka's rule).
        if version >= 8 and request["include_topic_authorized_operations"]:
            topics = [topic.copy() for topic in topics]  # the kept entries stay as they are
            for topic in topics:
                name = topic["name"]
                if topic["error_code"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED and \
                        name is not None:
                    topic["topic_authorized_operations"] = \
                        self.authorizer.authorized_operations(context, ResourceType.TOPIC, name)
        brokers: list[MetadataResponseBrokers] = [
            {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in sorted(cache.brokers_on(context.listener).values(), key=lambda b: b.node_id)]
        controller_id = cache.controller_id if cache.is_alive(cache.controller_id) else -1
        answer: MetadataResponse = {"throttle_time_ms": 0, "brokers": brokers,
                                    "cluster_id": self.cluster_id(),
                                    "controller_id": controller_id, "topics": topics}
        # v8-10 only: v11 dropped the cluster's authorized operations from Metadata.
        if 8 <= version <= 10 and request["include_cluster_authorized_operations"]:
            answer["cluster_authorized_operations"] = self.authorizer.authorized_operations(
                context, ResourceType.CLUSTER, CLUSTER_NAME)
        return answer

    def _by_id(self, context: RequestContext, requested: Sequence[MetadataRequestTopics],
               version: int) -> list[MetadataResponseTopics]:
        """Topics asked for by ID (v12+); before v12 an ID or a null name is refused, as
        Kafka refuses it (INVALID_REQUEST)."""
        topics: list[MetadataResponseTopics] = []
        for wanted in requested:
            topic_id = wanted["topic_id"] if version >= 10 else ZERO_ID
            if version < 12:
                topics.append(_empty(ErrorCode.INVALID_REQUEST, wanted["name"], topic_id))
                continue
            name = self.cache.topic_name(topic_id) if topic_id != ZERO_ID else wanted["name"]
            if name is None:
                topics.append(_empty(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id))
            elif not self.authorizer.authorize(context, AclOperation.DESCRIBE,
                                               ResourceType.TOPIC, name):
                # Topic IDs are not secret: the ID is named, the name is not (Kafka's rule).
                topics.append(_empty(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id))
            else:
                topics.append(self._topic(context, name, self.cache, False))
        return topics

    def _topic(self, context: RequestContext, name: str, cache: MetadataCache,
               allow_create: bool) -> MetadataResponseTopics:
        partitions = cache.topics.get(name)
        if partitions is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if allow_create:
                authorize = self.authorizer.authorize
                if not (authorize(context, AclOperation.CREATE, ResourceType.CLUSTER,
                                  CLUSTER_NAME)
                        or authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name)):
                    return _refused(name)
                code = self.topic_creator.auto_create(name)
            return {"error_code": code, "name": name, "is_internal": False, "partitions": []}
        entry = self._topic_entries.get(name)
        if entry is None:
            entry = self._topic_entries[name] = self._topic_entry(name, partitions, cache)
        return entry

    @staticmethod
    def _topic_entry(name: str, partitions: Mapping[int, CachedPartitionState], cache: MetadataCache
                     ) -> MetadataResponseTopics:
        answers: list[MetadataResponseTopicsPartitions] = []
        for index in sorted(partitions):
            p = partitions[index]
            offline = [r for r in p.replicas if not cache.is_alive(r)]
            leader_alive = p.leader >= 0 and cache.is_alive(p.leader)
            answers.append({
                "error_code": ErrorCode.NONE if leader_alive else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": index,
                "leader_id": p.leader if leader_alive else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": offline,
            })
        return {"error_code": ErrorCode.NONE, "name": name, "topic_id": cache.topic_id(name),
                "is_internal": name in INTERNAL_TOPICS, "partitions": answers}


def _name(wanted: MetadataRequestTopics) -> str:
    """A topic asked for by name (one asked for by ID or a null name goes to ``_by_id``)."""
    name = wanted["name"]
    assert name is not None  # a null name is sent to _by_id first
    return name


def _refused(name: str) -> MetadataResponseTopics:
    return _empty(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)


def _empty(code: ErrorCode, name: str | None, topic_id: bytes = ZERO_ID
           ) -> MetadataResponseTopics:
    """A topic answered with an error and no partitions."""
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": []}
