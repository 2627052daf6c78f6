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
from functools import partial
from typing import cast

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, RecordAppender
from simplekafka.broker.apis.leader_hints import (
    LEADER_HINT_ERRORS,
    current_leader,
    node_endpoints,
)
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.message_format import FIRST_V2_PRODUCE, to_record_batches
from simplekafka.broker.replica_manager import PartitionResponse
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.server import is_deferred
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
# A request's record sets by partition, in the order it names them.
Entries = dict[tuple[str, int], "bytes | None"]


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
            if is_deferred(answer):
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
                if entry["error_code"] not in LEADER_HINT_ERRORS:
                    continue  # nearly every partition: no hint to look up
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
        # What the request asks, read once: {(topic, partition): records}, in its order.
        entries: Entries = {(topic["name"], data["index"]): data["records"]
                            for topic in request["topic_data"]
                            for data in topic["partition_data"]}
        if _transactional_refused(self.authorizer, context, entries, transactional_id):
            return None if acks == 0 else _response_body(
                _Every(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), request)
        if self.authorizer.enabled:
            refused.update(self._refused(context, entries, transactional_id))
        if refused:
            return self._append_allowed(request, entries, refused, version)
        # The answer is made by the append (Kafka's responseCallback), not by a callback on
        # its Deferred: an acks=all produce has a callback round less.
        appended = self.replica_manager.append_records(
            entries, acks, request["timeout_ms"], internal=False, api_version=version,
            respond=None if acks == 0 else partial(_response_body, request=request))
        if acks == 0:
            return None
        if appended.called:  # nothing to wait for: answer now, without a callback round trip
            return cast(ProduceResponse, appended.result)
        return appended

    def _refused(self, context: RequestContext, entries: Entries,
                 transactional_id: str | None) -> dict[tuple[str, int], PartitionResponse]:
        """The partitions this principal may not write, with their error."""
        authorize = self.authorizer.authorize
        if transactional_id is not None and not authorize(
                context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return {key: PartitionResponse(code) for key in entries}
        allowed: dict[str, bool] = {}
        for name, _ in entries:
            if name not in allowed:
                allowed[name] = authorize(context, AclOperation.WRITE, ResourceType.TOPIC, name)
        return {key: PartitionResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for key in entries if not allowed[key[0]]}

    def _append_allowed(self, request: ProduceRequest, entries: Entries,
                        refused: dict[tuple[str, int], PartitionResponse],
                        version: int) -> ProduceResponse | defer.Deferred | None:
        acks = request["acks"]
        allowed = {key: records for key, records in entries.items() if key not in refused}
        appended = self.replica_manager.append_records(
            allowed, acks, request["timeout_ms"], internal=False,
            api_version=version) if allowed else defer.succeed({})
        if acks == 0:
            return None
        if appended.called:  # nothing to wait for: answer now, as _answer does
            return _response_body({**cast(Outcomes, appended.result), **refused}, request)
        return appended.addCallback(lambda results: _response_body({**results, **refused},
                                                                   request))


def _transactional_refused(authorizer: Authorizer, context: RequestContext, entries: Entries,
                           transactional_id: str | None) -> bool:
    """Whether the request carries transactional batches without a transactional id, or
    with one the principal may not Write (checked by ``_refused`` too, per request)."""
    if transactional_id is not None and not authorizer.enabled:
        return False  # the common case costs no walk over the batches
    for records in entries.values():  # a loop, not any() over a generator: one per produce
        if has_transactional_batch(records):
            break
    else:
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


def _response_body(results: Outcomes, request: ProduceRequest) -> ProduceResponse:
    """The ProduceResponse for the request, its partitions in the order they were asked."""
    responses: list[ProduceResponseResponses] = []
    for topic in request["topic_data"]:
        name = topic["name"]
        partition_responses: list[ProduceResponseResponsesPartitionResponses] = []
        for data in topic["partition_data"]:
            index = data["index"]
            outcome = results[(name, index)]
            errors = outcome.record_errors
            partition_responses.append({
                "index": index, "error_code": outcome.error_code,
                "base_offset": outcome.base_offset, "log_append_time_ms": outcome.log_append_time,
                "log_start_offset": outcome.log_start_offset,
                "record_errors": [{"batch_index": batch, "batch_index_error_message": message}
                                  for batch, message in errors] if errors else [],
                "error_message": outcome.error_message})
        responses.append({"name": name, "partition_responses": partition_responses})
    return {"responses": responses, "throttle_time_ms": 0}
