"""Request handlers against small fakes of the Protocols they are given (apis/collaborators.py).

A handler never sees the broker: Produce gets a ``RecordAppender``, ListOffsets
``Leaders``. These tests stand a few lines of fake in for each and check what
the handler itself does (the wire answer, the version rules); the real
ReplicaManager behind them is tested in test_broker_handlers.py.
"""

from __future__ import annotations

from twisted.internet import defer

from simplekafka.broker.apis.offsets import ListOffsetsHandler
from simplekafka.broker.apis.produce import ProduceHandler
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.replica_manager import PartitionResponse
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode, error_for
from simplekafka.protocol.legacy_records import build_message_set
from simplekafka.protocol.messages import decode_request, encode_request, encode_response
from simplekafka.protocol.records import parse_batches


def request(api_key: ApiKey, version: int, body: dict):
    return decode_request(encode_request(api_key, version, 1, "test", body))[1]


def produce(version: int, acks: int = 1, partitions: tuple[int, ...] = (0,)):
    return request(ApiKey.PRODUCE, version, {
        "transactional_id": None, "acks": acks, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [
            {"index": p, "records": b"batch"} for p in partitions]}]})


class FakeAppender:
    """A RecordAppender: remembers what it was asked, answers what the test says."""

    def __init__(self, answer: defer.Deferred | None = None):
        self.calls: list[tuple[dict, int, bool, int | None]] = []
        self.answer = answer

    def append_records(self, entries, acks, timeout_ms, internal=False, api_version=None,
                       respond=None):
        self.calls.append((dict(entries), acks, internal, api_version))
        if self.answer is not None:
            return self.answer if respond is None else self.answer.addCallback(respond)
        results = {key: PartitionResponse(ErrorCode.NONE, 40 + key[1], 0) for key in entries}
        return defer.succeed(results if respond is None else respond(results))


def context(api_key: ApiKey, version: int) -> RequestContext:
    return RequestContext(api_key, version, 1, "test")


def test_produce_answers_each_partition_from_the_append_results():
    appender = FakeAppender()
    body = ProduceHandler(appender)(context(ApiKey.PRODUCE, 8), produce(8, partitions=(0, 1)))
    assert appender.calls == [({("t", 0): b"batch", ("t", 1): b"batch"}, 1, False, 8)]
    answers = body["responses"][0]["partition_responses"]
    assert [(a["index"], a["error_code"], a["base_offset"]) for a in answers] == [
        (0, ErrorCode.NONE, 40), (1, ErrorCode.NONE, 41)]


def test_produce_before_v3_hands_over_a_v2_batch_and_refuses_a_corrupt_message_set():
    """v0-2 carry message sets: converted at the handler's edge (broker/message_format.py)."""
    good = build_message_set([(0, 5, b"k", b"v")], 1)
    bad = bytearray(good)
    bad[-1] ^= 1  # the CRC no longer matches
    appender = FakeAppender()
    body = ProduceHandler(appender)(context(ApiKey.PRODUCE, 2), request(ApiKey.PRODUCE, 2, {
        "acks": 1, "timeout_ms": 1000, "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": good}, {"index": 1, "records": bytes(bad)}]}]}))
    ((entries, _, _, _),) = appender.calls
    assert list(entries) == [("t", 0)]  # the corrupt partition is not handed over
    (batch,) = parse_batches(entries[("t", 0)])
    assert [(r.timestamp, r.key, r.value) for r in batch] == [(5, b"k", b"v")]
    codes = [a["error_code"] for a in body["responses"][0]["partition_responses"]]
    assert codes == [ErrorCode.NONE, ErrorCode.CORRUPT_MESSAGE]


def test_produce_acks_0_has_no_answer_and_acks_all_answers_when_the_append_does():
    assert ProduceHandler(FakeAppender())(context(ApiKey.PRODUCE, 8), produce(8, acks=0)) \
        is None
    later: defer.Deferred = defer.Deferred()
    pending = ProduceHandler(FakeAppender(later))(context(ApiKey.PRODUCE, 8),
                                                  produce(8, acks=-1))
    assert isinstance(pending, defer.Deferred) and not pending.called
    later.callback({("t", 0): PartitionResponse(ErrorCode.REQUEST_TIMED_OUT)})
    assert pending.result["responses"][0]["partition_responses"][0]["error_code"] == \
        ErrorCode.REQUEST_TIMED_OUT


def test_produce_v10_names_the_leader_of_a_partition_refused_for_want_of_it():
    """KIP-951: a Produce v10+ answer's NOT_LEADER_OR_FOLLOWER partition carries the leader
    the metadata cache knows, and that leader's endpoint (Produce's entries say ``index``)."""
    from stages.stage4_broker.test_broker_state import update_metadata

    appender = FakeAppender(defer.succeed(
        {("t", 0): PartitionResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER)}))
    appender.metadata_cache = MetadataCache()
    appender.metadata_cache.apply_update_metadata(update_metadata(5, 3, leader=1))
    body = ProduceHandler(appender)(context(ApiKey.PRODUCE, 10), produce(10))
    (answer,) = body["responses"][0]["partition_responses"]
    assert answer["current_leader"] == {"leader_id": 1, "leader_epoch": 4}
    assert body["node_endpoints"] == [{"node_id": 1, "host": "h", "port": 9092, "rack": "r"}]
    encode_response(ApiKey.PRODUCE, 10, 1, body)  # and it encodes


class NoLeaders:
    """Leaders, for a broker that leads nothing."""

    def leader_partition(self, topic, partition):
        raise error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def get_partition(self, topic, partition):
        return None


def test_list_offsets_answers_the_error_a_leader_lookup_carries():
    body = ListOffsetsHandler(NoLeaders())(context(ApiKey.LIST_OFFSETS, 5), request(
        ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                          "timestamp": -1}]}]}))
    answer = body["topics"][0]["partitions"][0]
    assert (answer["error_code"], answer["offset"]) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
