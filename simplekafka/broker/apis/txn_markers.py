"""WriteTxnMarkers: the transaction coordinator has each partition leader end a transaction.

When a transaction commits or aborts, its coordinator sends every leader of a
partition the transaction wrote to one WriteTxnMarkers request (Kafka's
``handleWriteTxnMarkersRequest``). For each named partition the leader builds
a control batch (the commit or abort marker, with the producer's id and epoch
and the coordinator's epoch) and appends it through the one append path,
``ReplicaManager.append_records``, as an internal append with acks=all: the
answer comes once the marker is on every in-sync replica, because the
coordinator may only forget the transaction when no replica that could become
leader lacks the marker. The partition ends the transaction in its producer
state (the LSO moves) and indexes an abort in ``.txnindex``. A marker from an
older producer epoch or an older coordinator epoch is refused
(INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED); every partition gets
its own error code. A marker written to ``__consumer_offsets`` also tells the
group coordinator (``on_offsets_marker``), which makes the transaction's
offset commits visible or drops them (Kafka's ``scheduleHandleTxnCompletion``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import Authorizer, RecordAppender
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.replica_manager import PartitionResponse
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarkers,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseMarkers,
)
from simplekafka.protocol.records import build_end_txn_marker

OFFSETS_TOPIC = "__consumer_offsets"

MARKER_TIMEOUT_MS = 30_000  # Kafka uses request.timeout.ms (30 s) for the acks=all wait


class WriteTxnMarkersHandler:
    """ApiKey.WRITE_TXN_MARKERS: see the module docstring."""

    def __init__(self, replica_manager: RecordAppender, timeout_ms: int = MARKER_TIMEOUT_MS,
                 on_offsets_marker: Callable[[int, int, bool], None] | None = None,
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer  # markers come from a coordinator: ClusterAction
        self.replica_manager = replica_manager
        self.timeout_ms = timeout_ms
        # (producer id, __consumer_offsets partition, committed) once a marker is written there
        self.on_offsets_marker = on_offsets_marker

    def __call__(self, context: RequestContext, request: WriteTxnMarkersRequest
                 ) -> WriteTxnMarkersResponse | defer.Deferred:
        if not self.authorizer.authorize(context, AclOperation.CLUSTER_ACTION,
                                         ResourceType.CLUSTER, CLUSTER_NAME):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return {"markers": [{"producer_id": m["producer_id"], "topics": [
                {"name": t["name"], "partitions": [{"partition_index": i, "error_code": code}
                                                   for i in t["partition_indexes"]]}
                for t in m["topics"]]} for m in request["markers"]]}
        appends = [self._write(marker) for marker in request["markers"]]
        answers = defer.gatherResults(appends, consumeErrors=True)
        return answers.addCallback(_markers)

    def _write(self, marker: WriteTxnMarkersRequestMarkers) -> defer.Deferred:
        """Append one producer's marker to each of its partitions; that marker's answer."""
        producer_id, committed = marker["producer_id"], bool(marker["transaction_result"])
        batch = build_end_txn_marker(producer_id, marker["producer_epoch"], committed,
                                     marker["coordinator_epoch"])
        entries = {(topic["name"], index): batch
                   for topic in marker["topics"] for index in topic["partition_indexes"]}
        appended = self.replica_manager.append_records(entries, -1, self.timeout_ms,
                                                       internal=True)

        def answer(results: Mapping[tuple[str, int], PartitionResponse]
                   ) -> WriteTxnMarkersResponseMarkers:
            if self.on_offsets_marker is not None:
                for (topic, index), outcome in results.items():
                    if topic == OFFSETS_TOPIC and outcome.error_code == ErrorCode.NONE:
                        self.on_offsets_marker(producer_id, index, committed)
            return {"producer_id": producer_id, "topics": [
                {"name": topic["name"], "partitions": [
                    {"partition_index": index,
                     "error_code": results[(topic["name"], index)].error_code}
                    for index in topic["partition_indexes"]]}
                for topic in marker["topics"]]}

        return appended.addCallback(answer)


def _markers(markers: list[WriteTxnMarkersResponseMarkers]) -> WriteTxnMarkersResponse:
    return {"markers": markers}
