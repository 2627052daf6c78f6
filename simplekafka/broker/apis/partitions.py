"""CreatePartitions: a topic grows through ZooKeeper and the controller, like its creation.

Sent to the controller (others answer NOT_CONTROLLER). The handler extends the
topic's assignment znode on a worker thread (``coordination.partitions``); the
controller's watch on that znode elects leaders for the new partitions and
sends LeaderAndIsr and UpdateMetadata; the answer waits, up to ``timeout_ms``,
until this broker's metadata shows every new partition with a leader, so a
client's next Metadata already sees them.
"""

from __future__ import annotations

import logging

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Flag,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.apis.topics import TopicAdmin
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.coordination.partitions import add_partitions
from simplekafka.coordination.topics import TopicError
from simplekafka.coordination.znodes import TopicAssignment
from simplekafka.protocol.acls import AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseResults,
)

log = logging.getLogger(__name__)


class CreatePartitionsHandler:
    """ApiKey.CREATE_PARTITIONS: see the module docstring."""

    def __init__(self, cache: MetadataCache, reactor: Reactor, zookeeper: ZooKeeperHandle,
                 is_controller: Flag, topics: TopicAdmin,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
        self.cache = cache
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.is_controller = is_controller
        self.topics = topics  # its wait for the controller's metadata

    def __call__(self, context: RequestContext, request: CreatePartitionsRequest
                 ) -> CreatePartitionsResponse | defer.Deferred:
        results: list[CreatePartitionsResponseResults] = []
        work: list[defer.Deferred] = []
        totals: dict[str, int] = {}
        seen: set[str] = set()
        validate_only = request["validate_only"]
        for topic in request["topics"]:
            name = topic["name"]
            result: CreatePartitionsResponseResults = {
                "name": name, "error_code": ErrorCode.NONE, "error_message": None}
            results.append(result)
            if name in seen:
                result["error_code"] = ErrorCode.INVALID_REQUEST
                result["error_message"] = f"topic {name!r} named twice"
                continue
            seen.add(name)
            if not self.is_controller():
                result["error_code"] = ErrorCode.NOT_CONTROLLER
                continue
            if not self.authorizer.authorize(context, AclOperation.ALTER, ResourceType.TOPIC,
                                             name):
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                result["error_message"] = f"not authorized to alter topic {name}"
                continue
            wanted = topic["assignments"]
            assignments = None if wanted is None else [list(a["broker_ids"]) for a in wanted]
            totals[name] = topic["count"]
            work.append(self._add(name, topic["count"], assignments, validate_only, result))
        body: CreatePartitionsResponse = {"throttle_time_ms": 0, "results": results}
        if not work:
            return body
        done = defer.gatherResults(work, consumeErrors=True)
        if not validate_only:
            done.addCallback(lambda _: self.topics.wait_for(
                [r["name"] for r in results if r["error_code"] == ErrorCode.NONE
                 and r["name"] in totals],
                request["timeout_ms"], lambda name: self._grown(name, totals[name]), results))
        return done.addCallback(lambda _: body)

    def _grown(self, topic: str, total: int) -> bool:
        partitions = self.cache.topics.get(topic, {})
        return len(partitions) >= total and self.cache.all_leaders_known(topic)

    def _add(self, topic: str, total: int, assignments: list[list[int]] | None,
             validate_only: bool, result: CreatePartitionsResponseResults) -> defer.Deferred:
        def failed(failure: Failure) -> None:
            if failure.check(TopicError):
                result["error_code"] = failure.value.error_code
                result["error_message"] = str(failure.value)
            else:
                log.error("adding partitions to %s failed: %s", topic, failure.getErrorMessage())
                result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR
                result["error_message"] = failure.getErrorMessage()

        def added(grown: TopicAssignment) -> None:
            if not validate_only:
                log.info("topic %s: now %d partitions", topic, len(grown.partitions))

        return in_worker_thread(self.reactor, add_partitions, self.zookeeper(), topic, total,
                                assignments, validate_only).addCallbacks(added, failed)
