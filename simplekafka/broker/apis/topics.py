"""CreateTopics, DeleteTopics and Metadata's auto-creation: topic changes go through ZooKeeper.

A broker never creates a partition on its own. Creating a topic means writing
its config and replica assignment to ZooKeeper (stage 2's ``create_topic``);
the controller sees the new znode, elects leaders and tells the brokers. So
CreateTopics, like in Kafka, must be sent to the controller (others answer
NOT_CONTROLLER), and waits, up to timeout_ms, until this broker's metadata
cache shows a leader for every partition. Deleting writes
``/admin/delete_topics/<t>`` and waits until the topic has left the cache.

All ZooKeeper calls run on a worker thread, never on the reactor.

Creating needs Create on the cluster or on the topic, deleting Delete on the
topic; a refused topic answers TOPIC_AUTHORIZATION_FAILED.

Kafka 3.9's versions: CreateTopics v5+ answers each created topic's partition
count, replication factor and configs (KIP-525), v7+ its new topic ID;
DeleteTopics v6+ may name a topic by ID (KIP-516), an ID no topic has
answering UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from kazoo.exceptions import NodeExistsError
from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    DelayedCall,
    Flag,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.config import BrokerConfig
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.replication_quota import (
    REPLICAS_KEYS,
    ThrottleConfigError,
    parse_throttled_replicas,
)
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.coordination.topics import (
    TopicError,
    check_no_collision,
    create_topic,
    list_topics,
    validate_topic_name,
)
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    CreatePartitionsResponseResults,
    CreateTopicsRequest,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
    CreateTopicsResponseTopicsConfigs,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseResponses,
)
from simplekafka.protocol.topic_ids import ZERO_ID
from simplekafka.storage import LogConfig

log = logging.getLogger(__name__)

# An answer's entry for one topic that a request waits on the controller for.
_Result = TypeVar("_Result", CreateTopicsResponseTopics, DeleteTopicsResponseResponses,
                  CreatePartitionsResponseResults)

DYNAMIC_TOPIC_CONFIG = 1  # Kafka's ConfigSource of a topic's own setting (as DescribeConfigs)


class TopicAdmin:
    """The CreateTopics and DeleteTopics handlers, and auto-creation for Metadata."""

    def __init__(self, config: BrokerConfig, cache: MetadataCache, reactor: Reactor,
                 zookeeper: ZooKeeperHandle, is_controller: Flag, log_config: LogConfig,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
        self.config = config
        self.cache = cache
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.is_controller = is_controller
        self.log_config = log_config  # the broker's defaults, that topic configs override
        self._auto_creating: set[str] = set()
        # Every topic key's (default, source) here (ConfigApis'; set when the handlers are
        # registered): what CreateTopics v5+ answers for the keys a topic does not set.
        self.topic_defaults: Callable[[], dict[str, tuple[str | None, int]]] = dict

    # -- Metadata's auto-create -----------------------------------------------------------

    def auto_create(self, name: str) -> ErrorCode:
        """Start creating ``name`` in the background; the code Metadata answers meanwhile."""
        try:
            validate_topic_name(name)
            # Kafka creates synchronously and answers the collision; we create in the
            # background, so check it here against the topics we know of.
            check_no_collision(name, self.cache.topic_names())
        except TopicError as exc:
            return exc.error_code
        if self.zookeeper() is None:
            return ErrorCode.LEADER_NOT_AVAILABLE
        if name not in self._auto_creating:
            self._auto_creating.add(name)
            config = self.config
            replication = min(config.default_replication_factor,
                              max(len(self.cache.brokers), 1))
            work = in_worker_thread(self.reactor, create_topic, self.zookeeper(), name,
                                    config["num.partitions"], replication)
            def failed(failure: Failure) -> None:
                if not failure.check(TopicError):
                    log.warning("auto-creating %s failed: %s", name, failure.getErrorMessage())

            work.addCallbacks(lambda _: log.info("auto-created topic %s", name), failed)
            work.addBoth(lambda _: self._auto_creating.discard(name))
        return ErrorCode.LEADER_NOT_AVAILABLE

    # -- CreateTopics -------------------------------------------------------------------

    def create_topics(self, context: RequestContext, request: CreateTopicsRequest
                      ) -> defer.Deferred | CreateTopicsResponse:
        results: list[CreateTopicsResponseTopics] = []
        waits = []
        validate_only = context.api_version >= 1 and request["validate_only"]
        for topic in request["topics"]:
            name = topic["name"]
            result: CreateTopicsResponseTopics = {"name": name, "error_code": ErrorCode.NONE,
                                                  "error_message": None}
            results.append(result)
            if not self.is_controller():
                result["error_code"] = ErrorCode.NOT_CONTROLLER
                continue
            if not self.may_create(context, name):
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                result["error_message"] = f"not authorized to create topic {name}"
                continue
            waits.append(self._create_one(topic, validate_only, result))
        body: CreateTopicsResponse = {"throttle_time_ms": 0, "topics": results}
        if not waits:
            return body
        created = defer.gatherResults(waits, consumeErrors=True)
        created.addCallback(lambda _: self.wait_for(
            [r["name"] for r in results if r["error_code"] == ErrorCode.NONE
             and not validate_only],
            request["timeout_ms"], lambda name: self.cache.all_leaders_known(name),
            results))
        return created.addCallback(lambda _: body)

    def may_create(self, context: RequestContext, name: str) -> bool:
        authorize = self.authorizer.authorize
        return (authorize(context, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                or authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name))

    def _create_one(self, topic: CreateTopicsRequestTopics, validate_only: bool,
                    result: CreateTopicsResponseTopics) -> defer.Deferred:
        config = self.config
        name, wanted_partitions = topic["name"], topic["num_partitions"]
        wanted_replication = topic["replication_factor"]
        partitions: int = wanted_partitions if wanted_partitions != -1 \
            else config["num.partitions"]
        replication = wanted_replication if wanted_replication != -1 \
            else config.default_replication_factor
        manual = {a["partition_index"]: list(a["broker_ids"])
                  for a in topic["assignments"]} or None
        if manual and (wanted_partitions != -1 or wanted_replication != -1):
            result["error_code"] = ErrorCode.INVALID_REQUEST
            result["error_message"] = ("give either assignments or num_partitions and "
                                       "replication_factor, not both")
            return defer.succeed(None)
        topic_config = {c["name"]: value for c in topic["configs"]
                        if (value := c["value"]) is not None}
        unknown = sorted(k for k in topic_config if k not in TOPIC_CONFIG_KEYS)
        if unknown:
            result["error_code"] = ErrorCode.INVALID_CONFIG
            result["error_message"] = f"unknown topic config {unknown[0]!r}"
            return defer.succeed(None)
        problem = _bad_config_value(topic_config, self.log_config)
        if problem:
            result["error_code"] = ErrorCode.INVALID_CONFIG
            result["error_message"] = problem
            return defer.succeed(None)

        def work() -> None:
            if validate_only:
                validate_topic_name(name)
                if self.zookeeper().exists(ZkPaths.topic(name)):
                    raise TopicError(f"topic {name!r} already exists",
                                     ErrorCode.TOPIC_ALREADY_EXISTS)
                check_no_collision(name, list_topics(self.zookeeper()))
                created = None
            else:
                created = create_topic(self.zookeeper(), name, partitions, replication,
                                       topic_config, manual)
            # v5+: the topic as created (or as it would be); v7+: its ID.
            result["num_partitions"] = len(manual) if manual else partitions
            result["replication_factor"] = len(next(iter(manual.values()))) if manual \
                else replication
            result["configs"] = self._configs_of(topic_config)
            if created is not None and created.topic_id is not None:
                result["topic_id"] = created.topic_id

        def failed(failure: Failure) -> None:
            if failure.check(TopicError):
                result["error_code"] = failure.value.error_code
                result["error_message"] = str(failure.value)
            else:
                log.error("creating topic %s failed: %s", name, failure.getErrorMessage())
                result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR
                result["error_message"] = failure.getErrorMessage()

        reactor = self.reactor
        return in_worker_thread(reactor, work).addErrback(
            failed)

    def _configs_of(self, overrides: dict[str, str]) -> list[CreateTopicsResponseTopicsConfigs]:
        """Every config of a topic with ``overrides``, as CreateTopics v5+ lists them."""
        entries: list[CreateTopicsResponseTopicsConfigs] = []
        defaults = self.topic_defaults()
        for key in sorted(set(defaults) | set(overrides)):
            value: str | None
            if key in overrides:
                value, source = overrides[key], DYNAMIC_TOPIC_CONFIG
            else:
                value, source = defaults[key]
            entries.append({"name": key, "value": value, "read_only": False,
                            "config_source": source, "is_sensitive": False})
        return entries

    # -- DeleteTopics -------------------------------------------------------------------

    def delete_topics(self, context: RequestContext, request: DeleteTopicsRequest
                      ) -> defer.Deferred | DeleteTopicsResponse:
        results: list[DeleteTopicsResponseResponses] = []
        waits = []
        for name, topic_id in self._deletion_targets(request, context.api_version):
            result: DeleteTopicsResponseResponses = {"name": name, "topic_id": topic_id,
                                                     "error_code": ErrorCode.NONE}
            results.append(result)
            if name is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID
                result["error_message"] = "no topic has this topic id"
            elif not self.is_controller():
                result["error_code"] = ErrorCode.NOT_CONTROLLER
            elif not self.authorizer.authorize(context, AclOperation.DELETE,
                                               ResourceType.TOPIC, name):
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not self.config["delete.topic.enable"]:
                result["error_code"] = ErrorCode.TOPIC_DELETION_DISABLED
            elif not self.cache.has_topic(name):
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                waits.append(self._mark_for_deletion(name, result))
        body: DeleteTopicsResponse = {"throttle_time_ms": 0, "responses": results}
        if not waits:
            return body
        marked = defer.gatherResults(waits, consumeErrors=True)
        marked.addCallback(lambda _: self.wait_for(
            [name for r in results if r["error_code"] == ErrorCode.NONE
             and (name := r["name"]) is not None],
            request["timeout_ms"], lambda name: not self.cache.has_topic(name),
            results))
        return marked.addCallback(lambda _: body)

    def _deletion_targets(self, request: DeleteTopicsRequest, version: int
                          ) -> list[tuple[str | None, bytes]]:
        """(name, ID) of each topic to delete: v0-5 by name, v6+ by name or by ID (an ID
        no topic has: name None). The ID answered is the topic's, however it was named."""
        if version < 6:
            return [(name, self.cache.topic_id(name)) for name in request["topic_names"]]
        targets: list[tuple[str | None, bytes]] = []
        for topic in request["topics"]:
            topic_id, name = topic["topic_id"], topic["name"]
            if topic_id != ZERO_ID:
                targets.append((self.cache.topic_name(topic_id), topic_id))
            else:
                targets.append((name, self.cache.topic_id(name or "")))
        return targets

    def _mark_for_deletion(self, name: str, result: DeleteTopicsResponseResponses
                           ) -> defer.Deferred:
        def work() -> None:
            try:
                self.zookeeper().create(ZkPaths.delete_topic(name), b"", makepath=True)
            except NodeExistsError:
                pass  # already being deleted

        def failed(failure: Failure) -> None:
            log.error("marking %s for deletion failed: %s", name, failure.getErrorMessage())
            result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR

        reactor = self.reactor
        return in_worker_thread(reactor, work).addErrback(
            failed)

    # -- waiting for the controller -----------------------------------------------------

    def wait_for(self, names: list[str], timeout_ms: int, is_done: Callable[[str], bool],
                 results: Sequence[_Result]) -> defer.Deferred:
        """Fire when ``is_done(name)`` holds for every name, or at the timeout (then
        the late ones answer REQUEST_TIMED_OUT, as Kafka's delayed operations do)."""
        cache = self.cache
        finished: defer.Deferred = defer.Deferred()
        pending = [n for n in names if not is_done(n)]
        if not pending or timeout_ms <= 0:
            return defer.succeed(None)

        def check() -> None:
            if finished.called:
                return
            if all(is_done(n) for n in pending):
                finish(timed_out=False)

        def finish(timed_out: bool) -> None:
            if finished.called:
                return
            if check in cache.listeners:
                cache.listeners.remove(check)
            if timer.active():
                timer.cancel()
            if timed_out:
                for result in results:
                    name = result["name"]
                    if name is not None and name in pending and not is_done(name):
                        result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            finished.callback(None)

        cache.listeners.append(check)
        timer: DelayedCall = self.reactor.callLater(timeout_ms / 1000.0, finish, True)
        return finished


# Topic-level keys CreateTopics accepts (stored in /config/topics/<t>; Kafka's names).
TOPIC_CONFIG_KEYS = frozenset({
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "index.interval.bytes", "max.message.bytes",
    "message.timestamp.type", "min.insync.replicas", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.ms", "unclean.leader.election.enable",
    "message.format.version", "min.cleanable.dirty.ratio", "preallocate",
    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
    "min.compaction.lag.ms", "message.timestamp.difference.max.ms",
    "max.compaction.lag.ms", "message.downconversion.enable", "segment.jitter.ms",
})


def _bad_config_value(topic_config: dict[str, str], base: LogConfig | None) -> str | None:
    """Why a topic config value is unusable (None if all are fine): checked before writing."""
    from simplekafka.storage import LogConfig

    try:
        LogConfig.from_kafka(topic_config, base=base)
    except ValueError as exc:
        return str(exc)
    value = topic_config.get("min.insync.replicas")
    if value is not None and (not value.strip().isdigit() or int(value) < 1):
        return f"min.insync.replicas must be a positive integer, got {value!r}"
    for key in REPLICAS_KEYS:
        if topic_config.get(key):
            try:
                parse_throttled_replicas(topic_config[key])
            except ThrottleConfigError as exc:
                return f"{key}: {exc}"
    return None

