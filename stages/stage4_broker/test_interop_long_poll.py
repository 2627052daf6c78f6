"""The fetch long poll, on the wire: park when there is nothing, wake on an append.

The confluent-kafka test shows a consumer gets a record soon after it is
produced; these show why, with raw Fetch requests: an empty fetch really waits
(it is not answered at once and re-sent in a busy loop), and a parked fetch is
answered by the append, long before max_wait_ms. The time bounds are loose on
purpose (the machine is shared): "at least most of max_wait" and "well under it".
"""

from __future__ import annotations

import threading
import time

import pytest

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.records import build_batch, parse_batches

from ._interop import connect, create_topic, fetch_body, produce_raw, request, unique_topic

pytestmark = pytest.mark.integration


def produce_after(delay: float, port: int, topic: str, partition: int, value: bytes) -> None:
    def later() -> None:
        time.sleep(delay)
        produce_raw(port, topic, partition, build_batch([(None, value)]))

    threading.Thread(target=later, daemon=True).start()


def test_an_empty_fetch_waits_for_max_wait_and_returns_empty_records(cluster):
    topic = unique_topic("longpoll-empty")
    create_topic(cluster.bootstrap_servers, topic)
    with connect(cluster.broker_ports[1]) as sock:
        started = time.monotonic()
        response = request(sock, ApiKey.FETCH, 11, fetch_body(topic, 0, 0, max_wait_ms=800))
        waited = time.monotonic() - started
    answer = response.responses[0].partitions[0]
    assert answer.error_code == 0
    assert answer.records == b"", "an empty partition answers zero-length records, not null"
    assert waited >= 0.6, f"answered after {waited:.3f} s: the broker did not wait"


def test_a_parked_fetch_is_woken_by_an_append(cluster):
    topic = unique_topic("longpoll-wake")
    create_topic(cluster.bootstrap_servers, topic)
    port = cluster.broker_ports[1]
    produce_after(0.3, port, topic, 0, b"wake up")
    with connect(port) as sock:
        started = time.monotonic()
        response = request(sock, ApiKey.FETCH, 11, fetch_body(topic, 0, 0, max_wait_ms=10_000))
        waited = time.monotonic() - started
    answer = response.responses[0].partitions[0]
    records = [r.value for b in parse_batches(answer.records) for r in b.records]
    assert records == [b"wake up"]
    assert waited < 3.0, f"answered after {waited:.3f} s of 10: not woken by the append"


def test_an_append_to_any_requested_partition_wakes_the_fetch(cluster):
    topic = unique_topic("longpoll-any")
    create_topic(cluster.bootstrap_servers, topic, partitions=2)
    port = cluster.broker_ports[1]
    body = fetch_body(topic, 0, 0, max_wait_ms=10_000)
    body["topics"][0]["partitions"].append(dict(body["topics"][0]["partitions"][0], partition=1))
    produce_after(0.3, port, topic, 1, b"on partition 1")
    with connect(port) as sock:
        started = time.monotonic()
        response = request(sock, ApiKey.FETCH, 11, body)
        waited = time.monotonic() - started
    answers = {p.partition_index: p for p in response.responses[0].partitions}
    assert sorted(answers) == [0, 1], "every requested partition is named in the answer"
    assert answers[0].records == b""
    assert [r.value for b in parse_batches(answers[1].records) for r in b.records] == [
        b"on partition 1"]
    assert waited < 3.0, f"answered after {waited:.3f} s of 10"


def test_a_waiting_fetch_does_not_hold_up_other_connections(cluster):
    topic = unique_topic("longpoll-others")
    create_topic(cluster.bootstrap_servers, topic)
    port = cluster.broker_ports[1]
    with connect(port) as parked, connect(port) as other:
        payload = encode_request(ApiKey.FETCH, 11, 99, "parked",
                                 fetch_body(topic, 0, 0, max_wait_ms=3000))
        parked.sendall(len(payload).to_bytes(4, "big") + payload)
        started = time.monotonic()
        for _ in range(20):
            assert request(other, ApiKey.API_VERSIONS, 2, {}).error_code == 0
        assert time.monotonic() - started < 2.0, "another connection waited for the parked fetch"
