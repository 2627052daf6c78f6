"""The sans-I/O connection core, driven with bytes only (no sockets).

A tiny in-memory "broker side" decodes what the core writes and answers with
the project's codec, so each test shows one promise of the core: the
handshake comes first, versions are negotiated, correlation ids match, the
in-flight limit holds, and bytes may arrive split anywhere.
"""

from __future__ import annotations

import pytest

from simplekafka.client.connection import HANDSHAKE_VERSION, ConnectionCore
from simplekafka.client.errors import IncompatibleBrokerError, KafkaConnectionError
from simplekafka.protocol.api import ADVERTISED_VERSIONS, ApiKey
from simplekafka.protocol.framing import FrameDecoder, encode_frame
from simplekafka.protocol.messages import (
    api_versions_body,
    api_versions_probe_response,
    decode_request,
    encode_response,
)

METADATA_ANSWER = {
    "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
    "cluster_id": "c",
    "controller_id": 1,
    "topics": [],
}


class BrokerSide:
    """Decodes the core's requests and writes answers, as a broker would."""

    def __init__(self) -> None:
        self.frames = FrameDecoder()

    def requests(self, core: ConnectionCore):
        return [decode_request(frame) for frame in self.frames.feed(core.data_to_send())]

    @staticmethod
    def answer(header, body) -> bytes:
        payload = encode_response(header.api_key, header.api_version, header.correlation_id, body)
        return encode_frame(payload)


def handshake(core: ConnectionCore, broker: BrokerSide, versions=None) -> None:
    (header, _), = broker.requests(core)
    body = api_versions_body()
    if versions is not None:
        body["api_keys"] = [
            {"api_key": int(k), "min_version": lo, "max_version": hi}
            for k, (lo, hi) in versions.items()
        ]
    assert core.receive_data(broker.answer(header, body)) == []
    assert core.ready


def test_the_first_request_on_a_connection_is_api_versions():
    core, broker = ConnectionCore(), BrokerSide()
    core.send_request(ApiKey.METADATA, {"topics": None}, context="mine")
    sent = broker.requests(core)
    assert [(h.api_key, h.api_version) for h, _ in sent] == [(18, HANDSHAKE_VERSION)]
    assert not core.ready and core.waiting_count == 1


def test_queued_requests_go_out_after_the_handshake_at_negotiated_versions():
    core, broker = ConnectionCore(), BrokerSide()
    core.send_request(ApiKey.METADATA, lambda version: {"topics": None}, context="mine")
    versions = dict(ADVERTISED_VERSIONS)
    versions[ApiKey.METADATA] = (0, 5)  # an older broker
    handshake(core, broker, versions)
    (header, body), = broker.requests(core)
    assert header.api_key == ApiKey.METADATA
    assert header.api_version == 5  # min(client max 8, broker max 5)
    assert body.topics is None
    (response,) = core.receive_data(broker.answer(header, METADATA_ANSWER))
    assert response.context == "mine"
    assert response.body.brokers[0].node_id == 1


def test_a_probe_answer_makes_the_core_retry_with_an_older_api_versions():
    core, broker = ConnectionCore(), BrokerSide()
    core.send_request(ApiKey.METADATA, {"topics": None})
    (header, _), = broker.requests(core)
    # The broker does not know this version: error 35 in v0 format, its own range for key 18.
    answer = encode_frame(api_versions_probe_response(header.correlation_id))
    assert core.receive_data(answer) == []
    (retry, _), = broker.requests(core)
    assert retry.api_key == ApiKey.API_VERSIONS and retry.api_version < header.api_version
    core.receive_data(broker.answer(retry, api_versions_body()))
    assert core.ready


def test_an_api_the_broker_lacks_fails_that_request_alone():
    core, broker = ConnectionCore(), BrokerSide()
    core.send_request(ApiKey.INIT_PRODUCER_ID, {}, context="pid")
    core.send_request(ApiKey.METADATA, {"topics": None}, context="md")
    versions = {k: v for k, v in ADVERTISED_VERSIONS.items() if k != ApiKey.INIT_PRODUCER_ID}
    handshake(core, broker, versions)
    (failed, error), = core.pop_failed()
    assert failed.context == "pid" and isinstance(error, IncompatibleBrokerError)
    assert [h.api_key for h, _ in broker.requests(core)] == [ApiKey.METADATA]


def test_correlation_ids_count_up_and_answers_match_requests_in_order():
    core, broker = ConnectionCore(max_in_flight=10), BrokerSide()
    handshake(core, broker)
    for n in range(5):
        core.send_request(ApiKey.METADATA, {"topics": None}, context=n)
    sent = broker.requests(core)
    ids = [h.correlation_id for h, _ in sent]
    assert ids == sorted(ids) and len(set(ids)) == 5
    answers = b"".join(broker.answer(h, METADATA_ANSWER) for h, _ in sent)
    assert [r.context for r in core.receive_data(answers)] == [0, 1, 2, 3, 4]


def test_bytes_split_at_every_position_give_the_same_responses():
    core, broker = ConnectionCore(max_in_flight=10), BrokerSide()
    handshake(core, broker)
    for n in range(3):
        core.send_request(ApiKey.METADATA, {"topics": None}, context=n)
    sent = broker.requests(core)
    answers = b"".join(broker.answer(h, METADATA_ANSWER) for h, _ in sent)
    for split in range(len(answers) + 1):
        fresh, fresh_broker = ConnectionCore(max_in_flight=10), BrokerSide()
        handshake(fresh, fresh_broker)
        for n in range(3):
            fresh.send_request(ApiKey.METADATA, {"topics": None}, context=n)
        fresh.data_to_send()
        got = fresh.receive_data(answers[:split]) + fresh.receive_data(answers[split:])
        assert [r.context for r in got] == [0, 1, 2]


def test_the_in_flight_limit_holds_requests_back_until_answers_arrive():
    core, broker = ConnectionCore(max_in_flight=2), BrokerSide()
    handshake(core, broker)
    for n in range(3):
        core.send_request(ApiKey.METADATA, {"topics": None}, context=n)
    first = broker.requests(core)
    assert len(first) == 2 and core.in_flight_count == 2 and core.waiting_count == 1
    core.receive_data(broker.answer(first[0][0], METADATA_ANSWER))
    (third,) = broker.requests(core)
    assert third[0].correlation_id > first[1][0].correlation_id


def test_requests_without_an_answer_complete_when_written():
    core, broker = ConnectionCore(), BrokerSide()
    handshake(core, broker)
    core.send_request(ApiKey.PRODUCE, {"acks": 0, "topic_data": []}, "fire", expect_response=False)
    assert len(broker.requests(core)) == 1
    assert [r.context for r in core.completed_without_response()] == ["fire"]
    assert core.in_flight_count == 0


def test_an_answer_with_the_wrong_correlation_id_breaks_the_connection():
    core, broker = ConnectionCore(), BrokerSide()
    handshake(core, broker)
    core.send_request(ApiKey.METADATA, {"topics": None})
    (header, _), = broker.requests(core)
    wrong = header._replace(correlation_id=header.correlation_id + 7)
    with pytest.raises(KafkaConnectionError, match="correlation id"):
        core.receive_data(broker.answer(wrong, METADATA_ANSWER))


def test_an_answer_nobody_asked_for_breaks_the_connection():
    core, broker = ConnectionCore(), BrokerSide()
    handshake(core, broker)
    with pytest.raises(KafkaConnectionError):
        core.receive_data(encode_frame(b"\x00\x00\x00\x05junk"))


def test_a_frame_over_the_limit_breaks_the_connection_before_buffering_it():
    core, broker = ConnectionCore(max_frame_bytes=1000), BrokerSide()
    handshake(core, broker)
    core.send_request(ApiKey.METADATA, {"topics": None})
    with pytest.raises(KafkaConnectionError, match="frame"):
        core.receive_data((10**6).to_bytes(4, "big"))


def test_fail_all_hands_back_every_unfinished_request():
    core, broker = ConnectionCore(max_in_flight=1), BrokerSide()
    handshake(core, broker)
    for n in range(3):
        core.send_request(ApiKey.METADATA, {"topics": None}, context=n)
    broker.requests(core)
    assert sorted(r.context for r in core.fail_all()) == [0, 1, 2]
    assert core.in_flight_count == 0 and core.waiting_count == 0
