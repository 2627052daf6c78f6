"""The broker's request handlers, driven with real request bytes and no sockets.

A KafkaBroker is built on a MemoryReactorClock (Twisted's fake reactor: no
network, time moves only when the test says so) and a real LogManager in a temp
directory. The test plays the controller: it sends UpdateMetadata and
LeaderAndIsr through the same dispatcher a real controller's requests reach,
then acts as a client: requests are encoded with the protocol codec, handed to
the dispatcher as frames, and the answers decoded back.
"""

from __future__ import annotations

import struct

import pytest
from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock

from simplekafka.broker.broker import KafkaBroker
from simplekafka.broker.config import BrokerConfig
from simplekafka.broker.server import CloseConnection
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey
from simplekafka.protocol.compression import Compression
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.legacy_records import build_message_set, parse_message_set
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import build_batch, parse_batches

BROKER_ID = 1


class Harness:
    """A broker without sockets or ZooKeeper, and helpers to talk to it."""

    def __init__(self, tmp_path, **settings: str):
        properties = {"broker.id": str(BROKER_ID), "log.dirs": str(tmp_path / "logs"),
                      "zookeeper.connect": "127.0.0.1:1", "listeners":
                      "PLAINTEXT://127.0.0.1:9092", **settings}
        self.clock = MemoryReactorClock()
        self.broker = KafkaBroker(BrokerConfig.from_properties(properties), self.clock)
        self.controller_epoch = 1
        self._correlation = 0
        # What raw() hands the dispatcher as the connection: None (User:ANONYMOUS), or
        # e.g. ``broker.own_connection`` when an authorizer wants the controller's login.
        self.connection: object = None

    def raw(self, api_key: ApiKey, version: int, body: dict):
        """Send a request; returns the decoded response, None, or a Deferred of either."""
        self._correlation += 1
        frame = encode_request(api_key, version, self._correlation, "test", body)
        answer = self.broker.dispatcher(frame, self.connection)

        def decode(payload):
            if payload is None:
                return None
            correlation_id, response = decode_response(api_key, version, payload)
            assert correlation_id == self._correlation or isinstance(answer, defer.Deferred)
            return response

        if isinstance(answer, defer.Deferred):
            return answer.addCallback(decode)
        return decode(answer)

    def request(self, api_key: ApiKey, version: int, body: dict):
        response = self.raw(api_key, version, body)
        assert not isinstance(response, defer.Deferred), "handler unexpectedly waited"
        return response

    # -- playing the controller -------------------------------------------------------

    def lead(self, topic: str, partitions: int = 1, leader_epoch: int = 0,
             isr: tuple[int, ...] = (BROKER_ID,)) -> None:
        states = [{"partition_index": p, "controller_epoch": self.controller_epoch,
                   "leader": BROKER_ID, "leader_epoch": leader_epoch, "isr": list(isr),
                   "zk_version": leader_epoch, "replicas": list(isr)}
                  for p in range(partitions)]
        metadata = self.request(ApiKey.UPDATE_METADATA, 5, {
            "controller_id": BROKER_ID, "controller_epoch": self.controller_epoch,
            "topic_states": [{"topic_name": topic, "partition_states": [
                {**state, "offline_replicas": []} for state in states]}],
            "live_brokers": [{"id": BROKER_ID, "rack": None, "endpoints": [
                {"port": 9092, "host": "127.0.0.1", "listener": "PLAINTEXT",
                 "security_protocol": 0}]}],
        })
        assert metadata.error_code == 0
        answer = self.request(ApiKey.LEADER_AND_ISR, 2, {
            "controller_id": BROKER_ID, "controller_epoch": self.controller_epoch,
            "topic_states": [{"topic_name": topic, "partition_states": states}],
            "live_leaders": [{"broker_id": BROKER_ID, "host_name": "127.0.0.1", "port": 9092}],
        })
        assert answer.error_code == 0
        assert all(p.error_code == 0 for p in answer.partition_errors)

    # -- playing a client ---------------------------------------------------------------

    def produce(self, topic: str, records, partition: int = 0, acks: int = 1,
                version: int = 8, timeout_ms: int = 1000):
        response = self.raw(ApiKey.PRODUCE, version, {
            "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]})
        if response is None or isinstance(response, defer.Deferred):
            return response
        return response.responses[0].partition_responses[0]

    def fetch_request(self, topic: str, offset: int, partition: int = 0, max_wait_ms: int = 0,
                      min_bytes: int = 1, max_bytes: int = 1 << 20,
                      partition_max_bytes: int = 1 << 20, current_leader_epoch: int = -1,
                      version: int = 11):
        return self.raw(ApiKey.FETCH, version, {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "fetch_offset": offset,
                "current_leader_epoch": current_leader_epoch,
                "partition_max_bytes": partition_max_bytes}]}]})

    def fetch(self, topic: str, offset: int, **kwargs):
        response = self.fetch_request(topic, offset, **kwargs)
        assert not isinstance(response, defer.Deferred)
        return response.responses[0].partitions[0]

    def close(self) -> None:
        self.broker.replica_manager.shutdown()
        self.broker.log_manager.close()


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path)
    yield h
    h.close()


def values(records: bytes) -> list[bytes]:
    return [r.value for batch in parse_batches(records) for r in batch.records]


# -- ApiVersions and Metadata ----------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_api_versions_lists_client_apis_only(harness, version):
    response = harness.request(ApiKey.API_VERSIONS, version, {})
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert response.error_code == 0
    assert keys[ApiKey.PRODUCE] == (0, 11)
    assert keys[ApiKey.FETCH] == (0, 17)
    assert not {4, 5, 6} & set(keys)


def test_api_versions_probe_gets_error_35_in_v0_layout(harness):
    top = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]
    frame = bytearray(encode_request(ApiKey.API_VERSIONS, top, 77, "probe", {
        "client_software_name": "x", "client_software_version": "1"}))
    struct.pack_into(">h", frame, 2, top + 1)  # a version we do not speak (nor does the codec)
    frame = bytes(frame)
    payload = harness.broker.dispatcher(frame, None)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, payload)
    assert correlation_id == 77
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == ApiKey.API_VERSIONS for k in body.api_keys)


def test_metadata_lists_brokers_controller_and_leader_epochs(harness):
    harness.lead("orders", partitions=2, leader_epoch=3)
    response = harness.request(ApiKey.METADATA, 8, {"topics": None})
    assert [(b.node_id, b.port) for b in response.brokers] == [(BROKER_ID, 9092)]
    assert response.controller_id == BROKER_ID
    (topic,) = response.topics
    assert topic.name == "orders" and topic.error_code == 0
    assert [(p.partition_index, p.leader_id, p.leader_epoch) for p in topic.partitions] == [
        (0, BROKER_ID, 3), (1, BROKER_ID, 3)]


def test_metadata_unknown_topic_without_auto_create(tmp_path):
    h = Harness(tmp_path, **{"auto.create.topics.enable": "false"})
    try:
        response = h.request(ApiKey.METADATA, 8, {"topics": [{"name": "nope"}]})
        assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        h.close()


def test_metadata_invalid_topic_name_is_refused(harness):
    response = harness.request(ApiKey.METADATA, 8, {"topics": [{"name": "bad name!"}]})
    assert response.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


# -- Produce ----------------------------------------------------------------------------


def test_produce_assigns_offsets_and_fetch_returns_the_batches(harness):
    harness.lead("t")
    first = harness.produce("t", build_batch([(b"k1", b"v1"), (b"k2", b"v2")]))
    second = harness.produce("t", build_batch([(None, b"v3")], compression="gzip"))
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 2)
    answer = harness.fetch("t", 0)
    assert answer.error_code == 0
    assert answer.high_watermark == 3
    assert values(answer.records) == [b"v1", b"v2", b"v3"]
    batches = parse_batches(answer.records)
    assert [b.header.partition_leader_epoch for b in batches] == [0, 0]


MS = 1_700_000_000_000  # a timestamp


@pytest.mark.parametrize("version", [0, 1, 2])
def test_old_produce_message_sets_are_stored_as_v2_and_every_old_fetch_reads_them(harness,
                                                                                  version):
    """Produce v0-1 carries message format v0, v2 format v1 (message_format.py)."""
    harness.lead("t")
    magic = 0 if version < 2 else 1
    first = harness.produce("t", build_message_set([(0, MS, b"k", b"v0")], magic),
                            version=version)
    second = harness.produce("t", build_message_set(
        [(0, MS + 1, None, b"v1"), (1, MS + 2, b"k2", b"v2")], magic, "gzip"), version=version)
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 1)
    stored = [r for b in parse_batches(harness.fetch("t", 0).records) for r in b]
    times = [-1, -1, -1] if magic == 0 else [MS, MS + 1, MS + 2]  # v0: no timestamps
    assert [(r.offset, r.timestamp, r.key, r.value) for r in stored] == [
        (0, times[0], b"k", b"v0"), (1, times[1], None, b"v1"), (2, times[2], b"k2", b"v2")]
    for fetch_version, fetch_magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        answer = harness.fetch("t", 2, version=fetch_version)  # inside the gzip batch
        assert answer.error_code == 0 and answer.high_watermark == 3
        assert [(m.offset, m.key, m.value, m.magic, m.codec)
                for m in parse_message_set(answer.records)] == [
            (2, b"k2", b"v2", fetch_magic, Compression.GZIP)]


def test_a_corrupt_old_message_is_refused_and_nothing_is_written(harness):
    harness.lead("t")
    message_set = bytearray(build_message_set([(0, MS, None, b"a"), (1, MS, None, b"b")], 1))
    message_set[-1] ^= 0xFF  # the second message's value: its CRC no longer matches
    answer = harness.produce("t", bytes(message_set), version=2)
    assert answer.error_code == ErrorCode.CORRUPT_MESSAGE
    assert harness.broker.replica_manager.get_partition("t", 0).log_end_offset == 0


def test_v0_messages_take_the_append_time_under_log_append_time(tmp_path):
    h = Harness(tmp_path, **{"log.message.timestamp.type": "LogAppendTime"})
    try:
        h.lead("t")
        assert h.produce("t", build_message_set([(0, None, None, b"a")], 0), version=0
                         ).error_code == 0
        (batch,) = parse_batches(h.fetch("t", 0).records)
        assert batch.timestamp_type == 1 and batch.records[0].timestamp > 0
        (message,) = parse_message_set(h.fetch("t", 0, version=2).records)
        assert (message.timestamp_type, message.timestamp) == (1, batch.records[0].timestamp)
    finally:
        h.close()


def test_downconversion_disabled_answers_old_fetchers_unsupported_version(tmp_path):
    h = Harness(tmp_path, **{"log.message.downconversion.enable": "false"})
    try:
        h.lead("t")
        assert h.produce("t", build_batch([(None, b"a")])).error_code == 0
        assert h.fetch("t", 0, version=3).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert h.fetch("t", 0, version=4).error_code == ErrorCode.NONE  # v2 as stored
    finally:
        h.close()


def test_corrupt_batch_is_refused_and_nothing_is_written(harness):
    harness.lead("t")
    batch = bytearray(build_batch([(None, b"value")]))
    batch[-1] ^= 0xFF  # a flipped bit in the records: the CRC no longer matches
    answer = harness.produce("t", bytes(batch))
    assert answer.error_code == ErrorCode.CORRUPT_MESSAGE
    assert harness.broker.replica_manager.get_partition("t", 0).log_end_offset == 0


def test_two_batches_in_one_produce_are_refused(harness):
    harness.lead("t")
    answer = harness.produce("t", build_batch([(None, b"a")]) + build_batch([(None, b"b")]))
    assert answer.error_code == ErrorCode.INVALID_RECORD


def test_produce_to_unknown_partition(harness):
    harness.lead("t")
    assert harness.produce("t", build_batch([(None, b"a")]), partition=5).error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert harness.produce("other", build_batch([(None, b"a")])).error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_acks_zero_gets_no_response_but_is_appended(harness):
    harness.lead("t")
    assert harness.produce("t", build_batch([(None, b"a")]), acks=0) is None
    assert values(harness.fetch("t", 0).records) == [b"a"]


def test_invalid_acks(harness):
    harness.lead("t")
    assert harness.produce("t", build_batch([(None, b"a")]), acks=2).error_code == \
        ErrorCode.INVALID_REQUIRED_ACKS


def test_acks_all_with_one_broker_answers_at_once(harness):
    harness.lead("t")
    answer = harness.produce("t", build_batch([(None, b"a")]), acks=-1)
    assert (answer.error_code, answer.base_offset) == (0, 0)


def test_acks_all_below_min_insync_replicas_is_refused_before_append(tmp_path):
    h = Harness(tmp_path, **{"min.insync.replicas": "2"})
    try:
        h.lead("t")
        answer = h.produce("t", build_batch([(None, b"a")]), acks=-1)
        assert answer.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert h.broker.replica_manager.get_partition("t", 0).log_end_offset == 0
        assert h.produce("t", build_batch([(None, b"a")]), acks=1).error_code == 0
    finally:
        h.close()


def test_acks_all_waits_for_the_isr_and_times_out(harness):
    harness.lead("t", isr=(BROKER_ID, 2))  # a follower that never fetches
    pending = harness.produce("t", build_batch([(None, b"a")]), acks=-1, timeout_ms=500)
    assert isinstance(pending, defer.Deferred) and not pending.called
    harness.clock.advance(0.5)
    answer = pending.result.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT


def test_batch_over_message_max_bytes(tmp_path):
    h = Harness(tmp_path, **{"message.max.bytes": "200"})
    try:
        h.lead("t")
        answer = h.produce("t", build_batch([(None, b"x" * 500)]))
        assert answer.error_code == ErrorCode.MESSAGE_TOO_LARGE
    finally:
        h.close()


def test_batch_over_the_topics_smaller_max_message_bytes_is_message_too_large(harness, caplog):
    """The topic's max.message.bytes (below the broker's) refuses the batch with
    MESSAGE_TOO_LARGE, the code the log's RecordTooLargeError carries; not as a
    storage error with a traceback."""
    harness.broker.topic_configs["small"] = {"max.message.bytes": "200"}
    harness.lead("small")
    answer = harness.produce("small", build_batch([(None, b"x" * 500)]))
    assert answer.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "Traceback" not in caplog.text
    assert harness.produce("small", build_batch([(None, b"x" * 50)])).error_code == 0


def test_a_client_cannot_produce_to_an_internal_topic(harness):
    """__consumer_offsets is written by the group coordinator only (Kafka answers
    INVALID_TOPIC_EXCEPTION to a producer); nothing is appended."""
    harness.lead("__consumer_offsets")
    answer = harness.produce("__consumer_offsets", build_batch([(b"k", b"v")]))
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert harness.broker.replica_manager.get_partition(
        "__consumer_offsets", 0).log_end_offset == 0


def test_batch_within_the_topics_larger_max_message_bytes_is_appended(tmp_path):
    """A topic allowed larger batches than message.max.bytes takes them (Kafka
    checks the topic's max.message.bytes; socket.request.max.bytes bounds the frame)."""
    h = Harness(tmp_path, **{"message.max.bytes": "1000"})
    try:
        h.broker.topic_configs["big"] = {"max.message.bytes": "5000"}
        h.lead("big")
        h.lead("t")
        big = build_batch([(None, b"x" * 3000)])
        answer = h.produce("big", big)
        assert (answer.error_code, answer.base_offset) == (0, 0)
        assert values(h.fetch("big", 0).records) == [b"x" * 3000]
        assert h.produce("t", big).error_code == ErrorCode.MESSAGE_TOO_LARGE
    finally:
        h.close()


# -- idempotent produce -------------------------------------------------------------------


def idempotent(values_: list[bytes], sequence: int, producer_id: int = 4000,
               epoch: int = 0) -> bytes:
    return build_batch([(None, v) for v in values_], producer_id=producer_id,
                       producer_epoch=epoch, base_sequence=sequence)


def test_duplicate_batch_is_acknowledged_with_its_first_offset_and_not_appended(harness):
    harness.lead("t")
    batch = idempotent([b"a", b"b"], 0)
    assert harness.produce("t", batch).base_offset == 0
    retry = harness.produce("t", batch)
    assert (retry.error_code, retry.base_offset) == (0, 0)
    assert harness.produce("t", idempotent([b"c"], 2)).base_offset == 2
    assert values(harness.fetch("t", 0).records) == [b"a", b"b", b"c"]


def test_sequence_gap_is_out_of_order(harness):
    harness.lead("t")
    harness.produce("t", idempotent([b"a"], 0))
    gap = harness.produce("t", idempotent([b"c"], 5))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert harness.broker.replica_manager.get_partition("t", 0).log_end_offset == 1


def test_older_producer_epoch_is_fenced(harness):
    harness.lead("t")
    harness.produce("t", idempotent([b"a"], 0, epoch=3))
    old = harness.produce("t", idempotent([b"b"], 1, epoch=2))
    assert old.error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_producer_state_survives_a_restart(tmp_path):
    h = Harness(tmp_path)
    h.lead("t")
    batch = idempotent([b"a"], 0)
    h.produce("t", batch)
    h.close()
    again = Harness(tmp_path)
    try:
        again.lead("t", leader_epoch=1)
        assert again.produce("t", batch).base_offset == 0  # still recognised as a retry
        assert again.broker.replica_manager.get_partition("t", 0).log_end_offset == 1
    finally:
        again.close()


# -- Fetch --------------------------------------------------------------------------------


def test_empty_partition_fetch_returns_zero_length_records_not_null(harness):
    harness.lead("t")
    answer = harness.fetch("t", 0)
    assert answer.error_code == 0 and answer.records == b"" and answer.high_watermark == 0


def test_every_requested_partition_is_named_with_its_error(harness):
    harness.lead("t")
    response = harness.raw(ApiKey.FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000,
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100},
            {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 100}]},
            {"topic": "missing", "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100}]}]})
    named = {(t.topic, p.partition_index): p.error_code
             for t in response.responses for p in t.partitions}
    assert named == {("t", 0): 0, ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert response.session_id == 0


def test_fetch_beyond_the_log_end_is_out_of_range(harness):
    harness.lead("t")
    assert harness.fetch("t", 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_first_batch_comes_whole_even_over_max_bytes(harness):
    harness.lead("t")
    batch = build_batch([(None, b"x" * 2000)])
    harness.produce("t", batch)
    harness.produce("t", build_batch([(None, b"y")]))
    answer = harness.fetch("t", 0, max_bytes=100, partition_max_bytes=100)
    assert len(answer.records) == len(batch)
    assert values(answer.records) == [b"x" * 2000]


def test_long_poll_is_woken_by_an_append(harness):
    harness.lead("t")
    waiting = harness.fetch_request("t", 0, max_wait_ms=30_000)
    assert isinstance(waiting, defer.Deferred) and not waiting.called
    harness.produce("t", build_batch([(None, b"hello")]))
    assert waiting.called  # no clock advance: woken by the append itself
    assert values(waiting.result.responses[0].partitions[0].records) == [b"hello"]


def test_long_poll_waits_for_min_bytes(harness):
    harness.lead("t")
    waiting = harness.fetch_request("t", 0, max_wait_ms=30_000, min_bytes=1000)
    harness.produce("t", build_batch([(None, b"small")]))
    assert not waiting.called  # fewer than min_bytes so far
    harness.produce("t", build_batch([(None, b"x" * 2000)]))
    assert values(waiting.result.responses[0].partitions[0].records) == [b"small", b"x" * 2000]


def test_long_poll_ignores_appends_to_other_partitions(harness):
    harness.lead("t", partitions=2)
    waiting = harness.fetch_request("t", 0, partition=0, max_wait_ms=30_000)
    harness.produce("t", build_batch([(None, b"elsewhere")]), partition=1)
    assert not waiting.called
    harness.produce("t", build_batch([(None, b"here")]), partition=0)
    assert values(waiting.result.responses[0].partitions[0].records) == [b"here"]


def test_long_poll_answers_empty_at_max_wait(harness):
    harness.lead("t")
    waiting = harness.fetch_request("t", 0, max_wait_ms=500)
    harness.clock.advance(0.499)
    assert not waiting.called
    harness.clock.advance(0.002)
    assert waiting.result.responses[0].partitions[0].records == b""
    assert harness.broker.fetch_handler.waiting == 0


def test_fetch_with_an_old_leader_epoch_is_fenced(harness):
    harness.lead("t", leader_epoch=2)
    assert harness.fetch("t", 0, current_leader_epoch=1).error_code == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert harness.fetch("t", 0, current_leader_epoch=3).error_code == \
        ErrorCode.UNKNOWN_LEADER_EPOCH
    assert harness.fetch("t", 0, current_leader_epoch=2).error_code == 0


# -- ListOffsets and OffsetForLeaderEpoch -------------------------------------------------


def list_offset(harness, timestamp: int, version: int = 5):
    response = harness.request(ApiKey.LIST_OFFSETS, version, {
        "replica_id": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": timestamp}]}]})
    return response.topics[0].partitions[0]


def test_list_offsets_earliest_latest_and_by_time(harness):
    harness.lead("t")
    harness.produce("t", build_batch([{"key": None, "value": b"a", "timestamp": 1000}]))
    harness.produce("t", build_batch([{"key": None, "value": b"b", "timestamp": 2000}]))
    assert list_offset(harness, -2).offset == 0
    assert list_offset(harness, -1).offset == 2
    found = list_offset(harness, 1500)
    assert (found.offset, found.timestamp) == (1, 2000)
    assert list_offset(harness, 9999).offset == -1
    assert list_offset(harness, -1, version=1).offset == 2


def test_offset_for_leader_epoch_reports_where_an_epoch_ended(harness):
    harness.lead("t", leader_epoch=0)
    harness.produce("t", build_batch([(None, b"a"), (None, b"b")]))
    harness.controller_epoch = 2
    harness.lead("t", leader_epoch=1)
    harness.produce("t", build_batch([(None, b"c")]))

    def end_of(epoch: int):
        response = harness.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {
            "replica_id": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}]}]})
        p = response.topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    assert end_of(0) == (0, 0, 2)
    assert end_of(1) == (0, 1, 3)


# -- controller requests ------------------------------------------------------------------


def test_stale_controller_epoch_is_refused(harness):
    harness.controller_epoch = 5
    harness.lead("t")
    harness.controller_epoch = 4
    response = harness.request(ApiKey.LEADER_AND_ISR, 2, {
        "controller_id": 9, "controller_epoch": 4, "topic_states": [], "live_leaders": []})
    assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH


def test_stop_replica_with_delete_removes_the_partition(harness, tmp_path):
    harness.lead("gone")
    harness.produce("gone", build_batch([(None, b"a")]))
    response = harness.request(ApiKey.STOP_REPLICA, 1, {
        "controller_id": BROKER_ID, "controller_epoch": 1, "delete_partitions": True,
        "topics": [{"name": "gone", "partition_indexes": [0]}]})
    assert response.error_code == 0
    assert harness.broker.replica_manager.get_partition("gone", 0) is None
    assert not (tmp_path / "logs" / "gone-0").exists()


def test_create_topics_on_a_broker_that_is_not_the_controller(harness):
    response = harness.request(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 1000})
    assert response.topics[0].error_code == ErrorCode.NOT_CONTROLLER


# -- requests that cannot be answered -----------------------------------------------------


def test_unknown_api_key_closes_the_connection(harness):
    frame = b"\x00\x63\x00\x00\x00\x00\x00\x01\xff\xff"
    with pytest.raises(CloseConnection):
        harness.broker.dispatcher(frame, None)


def test_truncated_body_closes_the_connection(harness):
    frame = encode_request(ApiKey.METADATA, 8, 1, "t", {"topics": [{"name": "abc"}]})
    with pytest.raises(CloseConnection):
        harness.broker.dispatcher(frame[:-3], None)


def test_unadvertised_version_closes_the_connection(harness):
    frame = encode_request(ApiKey.FETCH, 11, 1, "t", {"topics": []})
    frame = frame[:2] + b"\x7f\xff" + frame[4:]  # Fetch v32767: not advertised
    with pytest.raises(CloseConnection):
        harness.broker.dispatcher(frame, None)


def test_partitions_stay_out_of_full_garbage_collections_until_stopped(harness):
    """A full GC pass walks every tracked object: ~30 per partition, 60 ms of CPU at
    5,000 partitions, paid inside some request's latency (issue 19). After a
    LeaderAndIsr the partitions are frozen out of those passes; a StopReplica
    gives them back, so a deleted partition's cycles are still collected."""
    import gc
    import weakref

    from simplekafka.broker.partition import Partition

    def partitions_in_full_passes() -> int:
        gc.collect()
        return sum(isinstance(o, Partition) for o in gc.get_objects(generation=2))

    harness.lead("gone", partitions=50)
    assert partitions_in_full_passes() == 0
    deleted = weakref.ref(harness.broker.replica_manager.get_partition("gone", 0))
    response = harness.request(ApiKey.STOP_REPLICA, 1, {
        "controller_id": BROKER_ID, "controller_epoch": 1, "delete_partitions": True,
        "topics": [{"name": "gone", "partition_indexes": list(range(50))}]})
    assert response.error_code == 0
    gc.collect()
    assert deleted() is None  # unfrozen, so collected once it is garbage


def test_acks_all_costs_round_trips_not_timers(harness):
    """The replicated path on Twisted's clock (issue 19's RF 3 latency): the leader's append
    wakes the follower's parked fetch, the follower's next fetch advances the high
    watermark, and that answers the acks=all produce and wakes the consumer's parked
    fetch, all without the clock moving: no timer stands between them."""
    follower = BROKER_ID + 1
    harness.lead("t", isr=(BROKER_ID, follower))

    def fetch(offset: int, replica_id: int):
        return harness.raw(ApiKey.FETCH, 11, {
            "replica_id": replica_id, "max_wait_ms": 30_000, "min_bytes": 1,
            "max_bytes": 1 << 20, "isolation_level": 0,
            "topics": [{"topic": "t", "partitions": [{
                "partition": 0, "fetch_offset": offset, "current_leader_epoch": -1,
                "partition_max_bytes": 1 << 20}]}]})

    started = harness.clock.seconds()
    replica_fetch = fetch(0, follower)
    consumer_fetch = fetch(0, -1)
    assert isinstance(replica_fetch, defer.Deferred) and not replica_fetch.called
    assert isinstance(consumer_fetch, defer.Deferred) and not consumer_fetch.called
    produced = harness.produce("t", build_batch([(None, b"replicated")]), acks=-1,
                               timeout_ms=30_000)
    assert isinstance(produced, defer.Deferred) and not produced.called  # waits for the HW
    assert replica_fetch.called  # woken by the append itself
    assert values(replica_fetch.result.responses[0].partitions[0].records) == [b"replicated"]
    assert not consumer_fetch.called  # above the high watermark: not visible yet
    fetch(1, follower)  # the follower has it: its next fetch says so
    assert produced.called and consumer_fetch.called
    answer = produced.result.responses[0].partition_responses[0]
    assert answer.error_code == 0
    assert values(consumer_fetch.result.responses[0].partitions[0].records) == [b"replicated"]
    assert harness.clock.seconds() == started
