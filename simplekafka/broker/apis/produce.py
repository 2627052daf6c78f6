"""Produce: hand each partition's batch to the ReplicaManager, answer per acks.

The handler never looks inside a batch, and does not append or wait itself:
``ReplicaManager.append_records`` validates, appends and (acks=all) waits for
the high watermark, the one place that does, for clients and for the group
coordinator alike. What stays here is the wire: versions below 3 carry message
sets (formats v0/v1), converted to v2 batches first (``message_format.py``),
acks=0 gets no response at all, and the partition outcomes become the response dict.

A partition of a topic the principal may not Write is not appended and
answers TOPIC_AUTHORIZATION_FAILED (a transactional producer also needs Write
on its transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise).

Transactional batches need a transactional id, authorizer or not (Kafka's
``handleProduceRequest``): without one, or without Write on it, the whole
request is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is
appended. Otherwise a transaction no coordinator knows of would be opened on
the partition, never to be ended, and its last stable offset would hold every
read_committed consumer of it for ever.

From v10 (KIP-951) a partition refused with NOT_LEADER_OR_FOLLOWER names the
leader this broker knows, and the answer carries its endpoint
(``leader_hints``). v11 differs only in what a transactional producer may be
told (TRANSACTION_ABORTABLE), which this broker answers the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, RecordAppender
from simplekafka.broker.apis.leader_hints import current_leader, node_endpoints
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.message_format import FIRST_V2_PRODUCE, to_record_batches
from simplekafka.broker.replica_manager import PartitionResponse
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import AclOperation, ResourceType
from simplekafka.protocol.batch_header import has_transactional_batch
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    ProduceRequest,
    ProduceResponse,
    ProduceResponseResponses,
    ProduceResponseResponsesPartitionResponses,
)

LEADER_HINTS_VERSION = 10
TRANSACTIONAL_ID_VERSION = 3  # v3+ names the transactional id

Outcomes = Mapping[tuple[str, int], PartitionResponse]
# A request's partitions as it names them: (topic, [(partition, records)]), in its order.
Asked = list[tuple[str, list[tuple[int, "bytes | None"]]]]


class ProduceHandler:
    """ApiKey.PRODUCE: see the module docstring."""

    def __init__(self, replica_manager: RecordAppender, authorizer: Authorizer = ALLOW_EVERYONE):
        self.replica_manager = replica_manager
        self.authorizer = authorizer
        # Where leaders are, for KIP-951's hints (None in unit tests without a cache).
        self.cache = getattr(replica_manager, "metadata_cache", None)

    def __call__(self, context: RequestContext, request: ProduceRequest
                 ) -> ProduceResponse | defer.Deferred | None:
        if context.api_version >= LEADER_HINTS_VERSION:
            answer = self._answer(context, request)
            if isinstance(answer, defer.Deferred):
                return answer.addCallback(self._with_leader_hints, context.listener)
            return self._with_leader_hints(answer, context.listener)
        return self._answer(context, request)

    def _with_leader_hints(self, body: ProduceResponse | None, listener: str
                           ) -> ProduceResponse | None:
        if body is None:
            return None
        leaders: set[int] = set()
        for topic in body["responses"]:
            for entry in topic["partition_responses"]:
                leader = current_leader(self.cache, topic["name"], entry["index"],
                                        entry["error_code"])
                if leader is not None:
                    entry["current_leader"] = leader
                    leaders.add(leader["leader_id"])
        if leaders:
            body["node_endpoints"] = node_endpoints(self.cache, leaders, listener)
        return body

    def _answer(self, context: RequestContext, request: ProduceRequest
                ) -> ProduceResponse | defer.Deferred | None:
        acks = request["acks"]
        version = context.api_version
        transactional_id = request["transactional_id"] \
            if version >= TRANSACTIONAL_ID_VERSION else None
        # v0-2: message sets, converted in place; a corrupt one's partition is refused
        refused = to_record_batches(request) if version < FIRST_V2_PRODUCE else {}
        asked = _asked(request)
        if _transactional_refused(self.authorizer, context, asked, transactional_id):
            return None if acks == 0 else _response_body(
                _Every(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), asked)
        if self.authorizer.enabled:
            refused.update(self._refused(context, asked, transactional_id))
        if refused:
            return self._append_allowed(asked, acks, request["timeout_ms"], refused, version)
        entries = {(name, index): records for name, partitions in asked
                   for index, records in partitions}
        appended = self.replica_manager.append_records(
            entries, acks, request["timeout_ms"], internal=False, api_version=version)
        if acks == 0:
            return None
        if appended.called:  # nothing to wait for: answer now, without a callback round trip
            return _response_body(cast(Outcomes, appended.result), asked)
        return appended.addCallback(_response_body, asked)

    def _refused(self, context: RequestContext, asked: Asked,
                 transactional_id: str | None) -> dict[tuple[str, int], PartitionResponse]:
        """The partitions this principal may not write, with their error."""
        authorize = self.authorizer.authorize
        if transactional_id is not None and not authorize(
                context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return {(name, index): PartitionResponse(code)
                    for name, partitions in asked for index, _ in partitions}
        return {(name, index): PartitionResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for name, partitions in asked
                if not authorize(context, AclOperation.WRITE, ResourceType.TOPIC, name)
                for index, _ in partitions}

    def _append_allowed(self, asked: Asked, acks: int, timeout_ms: int,
                        refused: dict[tuple[str, int], PartitionResponse],
                        version: int) -> ProduceResponse | defer.Deferred | None:
        entries = {(name, index): records for name, partitions in asked
                   for index, records in partitions if (name, index) not in refused}
        appended = self.replica_manager.append_records(
            entries, acks, timeout_ms, internal=False,
            api_version=version) if entries else defer.succeed({})
        if acks == 0:
            return None
        if appended.called:  # nothing to wait for: answer now, as __call__ does
            return _response_body({**cast(Outcomes, appended.result), **refused}, asked)
        return appended.addCallback(lambda results: _response_body({**results, **refused},
                                                                   asked))


def _asked(request: ProduceRequest) -> Asked:
    """What the request asks, read once: (topic, [(partition, records)]) in its order."""
    return [(topic["name"], [(data["index"], data["records"])
                             for data in topic["partition_data"]])
            for topic in request["topic_data"]]


def _transactional_refused(authorizer: Authorizer, context: RequestContext, asked: Asked,
                           transactional_id: str | None) -> bool:
    """Whether the request carries transactional batches without a transactional id, or
    with one the principal may not Write (checked by ``_refused`` too, per request)."""
    if transactional_id is not None and not authorizer.enabled:
        return False  # the common case costs no walk over the batches
    if not any(has_transactional_batch(records)
               for _, partitions in asked for _, records in partitions):
        return False
    return transactional_id is None or not authorizer.authorize(
        context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


class _Every(dict):
    """The same outcome for every partition of a request."""

    def __init__(self, code: ErrorCode):
        super().__init__()
        self.code = code

    def __missing__(self, key: tuple[str, int]) -> PartitionResponse:
        return PartitionResponse(self.code)


def _response_body(results: Outcomes, asked: Asked) -> ProduceResponse:
    """The ProduceResponse for the request, its partitions in the order they were asked."""
    responses: list[ProduceResponseResponses] = []
    for name, partitions in asked:
        partition_responses: list[ProduceResponseResponsesPartitionResponses] = []
        for index, _records in partitions:
            outcome = results[(name, index)]
            partition_responses.append({
                "index": index, "error_code": outcome.error_code,
                "base_offset": outcome.base_offset, "log_append_time_ms": outcome.log_append_time,
                "log_start_offset": outcome.log_start_offset,
                "record_errors": [{"batch_index": index, "batch_index_error_message": message}
                                  for index, message in outcome.record_errors],
                "error_message": outcome.error_message})
        responses.append({"name": name, "partition_responses": partition_responses})
    return {"responses": responses, "throttle_time_ms": 0}
