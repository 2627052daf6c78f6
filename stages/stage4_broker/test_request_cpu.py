"""The broker's CPU per request on the latency path: the mechanisms that keep it low (issue 19).

At ``rdkafka_performance -l`` load every record is one Produce request and
(nearly) one parked Fetch woken by it, so what each request costs in Python is
the broker's CPU per record. These tests pin the mechanisms that cut that cost
(benchmarks/bench_fetch_path.py measures it): each would fail if the work it
saves came back. Behaviour is the business of the other tests.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.broker.metrics import BrokerMetrics
from simplekafka.broker.partition import Partition
from simplekafka.protocol import messages
from simplekafka.protocol.api import ApiKey, request_schema
from simplekafka.protocol.batch_header import HEADER_SIZE, read_header
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig

BIG = 1 << 20


def produce_request(correlation_id: int) -> bytes:
    return messages.encode_request(ApiKey.PRODUCE, 8, correlation_id, "cpu", {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": "t", "partition_data": [
            {"index": 0, "records": build_batch([(None, b"x")])}]}]})


def test_a_message_layout_is_looked_up_once_per_api_key_and_version(monkeypatch):
    """decode_request and encode_response used to look up the schema, the flexibility and
    the header version on every message; now once per (api key, version)."""
    frames = [produce_request(correlation_id) for correlation_id in range(3)]
    lookups: list[tuple[str, int, int]] = []
    real_request, real_response = messages.request_schema, messages.response_schema
    monkeypatch.setattr(messages, "request_schema",
                        lambda k, v: (lookups.append(("request", k, v)), real_request(k, v))[1])
    monkeypatch.setattr(messages, "response_schema",
                        lambda k, v: (lookups.append(("response", k, v)), real_response(k, v))[1])
    monkeypatch.setattr(messages, "_REQUEST_LAYOUTS", {})
    monkeypatch.setattr(messages, "_RESPONSE_LAYOUTS", {})
    answer = {"responses": [], "throttle_time_ms": 0}
    decoded, encoded = [], []
    for correlation_id, frame in enumerate(frames):
        decoded.append(messages.decode_request(frame))
        encoded.append(messages.encode_response(ApiKey.PRODUCE, 8, correlation_id, answer))
    assert lookups == [("request", 0, 8), ("response", 0, 8)]
    for correlation_id, ((header, body), response) in enumerate(zip(decoded, encoded)):
        assert (header.correlation_id, header.client_id, body.acks) == (correlation_id, "cpu", 1)
        assert messages.decode_response(ApiKey.PRODUCE, 8, response)[0] == correlation_id
    assert messages.request_layout(0, 8) is messages.request_layout(0, 8)
    assert messages.response_layout(1, 11).tagged_header is False  # Fetch v11: not flexible


def test_each_request_type_is_timed_into_one_object_by_a_dispatcher_hook():
    """A request's count, latency bucket and sum are found with one dict probe, and the
    dispatcher reports the request as it answers: no timing wrapper around it, and a
    Deferred answer gets one callback (encode and time), not one for each."""
    metrics = BrokerMetrics(SimpleNamespace())
    try:
        dispatcher = RequestDispatcher()
        waiting: defer.Deferred = defer.Deferred()
        answers = iter([{"brokers": [], "topics": []}, waiting])
        dispatcher.register(ApiKey.METADATA, lambda context, request: next(answers))
        metrics.time_requests(dispatcher)
        frame = messages.encode_request(ApiKey.METADATA, 1, 7, "cpu", {"topics": None})
        assert isinstance(dispatcher(frame), bytes)
        times = metrics.request_times[ApiKey.METADATA]
        assert times.count == 1
        answered = dispatcher(frame)
        assert times.count == 1  # a Deferred answer is timed when it fires
        waiting.callback({"brokers": [], "topics": []})
        assert isinstance(answered.result, bytes)
        assert metrics.request_times[ApiKey.METADATA] is times
        assert times.count == 2 and sum(times.buckets) == 2 and times.sum_ms >= 0
        samples = {(s.name, s.labels.get("le")): s.value
                   for metric in metrics._request_metrics() for s in metric.samples}
        assert samples[("kafka_network_requestmetrics_requests_total", None)] == 2
        assert samples[("kafka_network_requestmetrics_totaltimems_bucket", "+Inf")] == 2
    finally:
        metrics.stop()


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_the_woken_fetch_takes_the_appended_header_from_memory(tmp_path, monkeypatch,
                                                               timestamp_type):
    """The batch a fetch at the log end is woken for was just appended: its header comes
    from the bytes the append wrote (one pread fewer per woken fetch), and is the header
    the file holds."""
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type=timestamp_type))
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"v")] * 3)
    log.append(batch, 4)
    log.append(batch, 5)
    segment = log.segments[-1]
    reads: list[int] = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: (reads.append(n), real_pread(fd, n, at))[1])
    position, header = segment.translate_offset(4)
    assert reads == []
    on_disk = read_header(real_pread(segment._fd, HEADER_SIZE, position))
    assert header == on_disk
    assert (header.base_offset, header.partition_leader_epoch) == (3, 5)
    assert log.read(3, BIG) == real_pread(segment._fd, header.size, position)
    assert reads == [header.size]  # the records themselves, and nothing else


def test_a_parked_fetch_answer_takes_one_callback_to_leave(tmp_path):
    """Between the append that wakes a parked fetch and the dispatcher's encoding there is
    one callback, which shapes the answer by its session and counts it for the metrics
    (there were two wrappers with a callback each)."""
    clock = task.Clock()
    partition = Partition("t", 0, 1, Log.open(tmp_path / "t-0", LogConfig()))
    partition.make_leader(0, [1], [1], 0, 1)
    replicas = SimpleNamespace(leader_partition=lambda topic, index: partition,
                               get_partition=lambda topic, index: partition,
                               maybe_expand_isr=lambda partition, replica_id: None)
    handler = FetchHandler(replicas, clock, lambda: False)
    counted: list[dict] = []
    handler.on_consumer_answer = counted.append
    request = request_schema(ApiKey.FETCH, 10).make(  # v10: no rack_id, the leader reads
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=BIG, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[],
        topics=[dict(topic="t", partitions=[dict(
            partition=0, fetch_offset=0, partition_max_bytes=BIG, current_leader_epoch=-1,
            log_start_offset=-1)])])
    parked = handler(None, request)
    assert isinstance(parked, defer.Deferred) and not parked.called
    partition.append_as_leader(build_batch([(None, b"v")]), 1, 1, BIG, 8)
    assert parked.called and counted == [parked.result]
    assert parked.result["responses"][0]["partitions"][0]["records"]
    request.topics[0]["partitions"][0]["fetch_offset"] = 0
    answered = handler(None, request)  # data there: answered at once, counted once
    assert isinstance(answered, dict) and counted[-1] is answered and len(counted) == 2
    assert clock.getDelayedCalls() == []


def test_without_a_transaction_the_lso_is_the_hw_at_once(tmp_path, monkeypatch):
    """Every fetch answer carries the last stable offset; with no transaction that could
    hold it back it is the high watermark, with nothing to compute."""
    partition = Partition("t", 0, 1, Log.open(tmp_path / "t-0", LogConfig()))
    partition.make_leader(0, [1], [1], 0, 1)
    partition.append_as_leader(build_batch([(None, b"v")]), 1, 1, BIG, 8)
    computed: list[int] = []
    real = type(partition.producers).last_stable_offset
    monkeypatch.setattr(type(partition.producers), "last_stable_offset",
                        lambda self, hw: (computed.append(hw), real(self, hw))[1])
    assert partition.last_stable_offset == partition.high_watermark == 1
    assert computed == []
    open_txn = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"t")],
                           producer_id=7, producer_epoch=0, base_sequence=0,
                           is_transactional=True)
    partition.append_as_leader(open_txn, 1, 1, BIG, 8)
    assert partition.high_watermark == 2
    assert partition.last_stable_offset == 1  # the open transaction starts at 1
    assert computed == [2]


def test_a_read_to_a_batch_boundary_is_not_walked_again(tmp_path, monkeypatch):
    """A log read that ends where a batch ends (the log end, the high watermark) is whole
    batches as it is; only a read cut by max_bytes is walked to drop a partial batch."""
    from simplekafka.storage import log as log_module

    log = Log.open(tmp_path / "t-0", LogConfig())
    batch = build_batch([Record(timestamp=1_700_000_000_000, key=None, value=b"v" * 50)])
    for _ in range(3):
        log.append(batch, 0)
    walked: list[int] = []
    real = log_module.whole_batches_length
    monkeypatch.setattr(log_module, "whole_batches_length",
                        lambda data: (walked.append(len(data)), real(data))[1])
    assert log.read(0, BIG) == log.read(0, BIG, 3) and len(log.read(0, BIG)) == 3 * len(batch)
    assert len(log.read(1, BIG, 2)) == len(batch)  # up to the high watermark at 2
    assert walked == []
    assert len(log.read(0, 2 * len(batch) + 10)) == 2 * len(batch)  # cut inside the third
    assert walked == [2 * len(batch) + 10]


def test_strings_and_array_counts_are_decoded_inline_and_errors_still_named():
    """The generated decoder reads a string and an array count in place (no call each);
    null, a short buffer and bad UTF-8 still go to the generic reader, as before."""
    from simplekafka.protocol.api import request_schema
    from simplekafka.protocol.errors import ProtocolError

    schema = request_schema(ApiKey.PRODUCE, 8)
    source = schema.source["read"]
    assert "_int16(buf, pos)" in source and "_int32(buf, pos)" in source
    _header, body = messages.decode_request(produce_request(3))
    assert body.transactional_id is None and body.topic_data[0].name == "t"
    assert body.topic_data[0].partition_data[0].index == 0
    good = messages.encode_request(ApiKey.PRODUCE, 8, 3, "cpu", {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": "tt", "partition_data": []}]})
    bad_utf8 = good.replace(b"\x00\x02tt", b"\x00\x02\xff\xfe")
    with pytest.raises(ProtocolError, match="not valid UTF-8"):
        messages.decode_request(bad_utf8)
    huge_count = good.replace(b"\x00\x00\x00\x01\x00\x02tt", b"\x7f\x00\x00\x01\x00\x02tt")
    with pytest.raises(ProtocolError, match="array of"):
        messages.decode_request(huge_count)
