"""The client library against real broker processes: bootstrap, versions, routing, failures."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from simplekafka.client import KafkaClient, NoBrokersAvailableError
from simplekafka.client.errors import (
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
    error_for,
)
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.local import free_port
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.records import build_batch

pytestmark = pytest.mark.integration


def create_topic(client: KafkaClient, name: str, partitions: int = 1) -> None:
    controller = client.controller_id()
    answer = client.request(controller, ApiKey.CREATE_TOPICS, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
        "timeout_ms": 10_000,
    })
    assert answer.topics[0].error_code == 0, answer
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        client.refresh_metadata()
        if all(client.metadata.leader_for(name, p) is not None for p in range(partitions)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} has no leaders")


def produce_body(topic: str, partition: int, values: list[bytes]) -> dict:
    batch = build_batch([(None, v) for v in values])
    return {"acks": -1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}


def produce_with_retries(client: KafkaClient, topic: str, partition: int,
                         values: list[bytes]) -> int:
    """Produce to the leader; a broker that just became leader may still say
    NOT_LEADER_OR_FOLLOWER for a moment, which a retry absorbs."""

    def attempt(deadline):
        leader = client.leader_for(topic, partition)
        reply = client.request(leader, ApiKey.PRODUCE, produce_body(topic, partition, values))
        part = reply.responses[0].partition_responses[0]
        if part.error_code:
            raise error_for(part.error_code)
        return part.base_offset

    return client.call_with_retries(attempt, timeout_ms=20_000)


def test_bootstrap_learns_the_cluster_and_negotiates_versions(cluster):
    with KafkaClient(cluster.bootstrap_servers) as client:
        snapshot = client.refresh_metadata()
        assert set(snapshot.brokers) == {1}
        assert snapshot.controller_id == 1
        versions = client.negotiated_versions(1) or client.negotiated_versions(-1)
        assert versions[ApiKey.METADATA] == 8
        assert versions[ApiKey.PRODUCE] == 8
        assert versions[ApiKey.FETCH] == 11


def test_requests_are_routed_to_the_leader_and_answered(cluster):
    with KafkaClient(cluster.bootstrap_servers) as client:
        client.refresh_metadata()
        create_topic(client, "routed", 2)
        for partition in (0, 1):
            assert produce_with_retries(client, "routed", partition, [b"a", b"b"]) == 0
            leader = client.leader_for("routed", partition)
            answer = client.request(leader, ApiKey.PRODUCE,
                                    produce_body("routed", partition, [b"c"]))
            part = answer.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, 2)


def test_many_requests_in_flight_from_many_threads(cluster):
    with KafkaClient(cluster.bootstrap_servers, max_in_flight=3) as client:
        client.refresh_metadata()
        create_topic(client, "threads")
        produce_with_retries(client, "threads", 0, [b"warm-up"])
        leader = client.leader_for("threads", 0)
        errors = []

        def worker(n: int) -> None:
            try:
                futures = [client.send(leader, ApiKey.PRODUCE,
                                       produce_body("threads", 0, [b"%d-%d" % (n, i)]))
                           for i in range(20)]
                for future in futures:
                    part = future.result(30).responses[0].partition_responses[0]
                    assert part.error_code == 0
            except Exception as exc:  # collected, asserted below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []


def test_an_unknown_topic_is_named_after_the_deadline(cluster):
    with KafkaClient(cluster.bootstrap_servers) as client:
        started = time.monotonic()
        with pytest.raises(UnknownTopicOrPartitionError, match="nope"):
            client.partitions_for("nope", timeout_ms=1000)
        assert time.monotonic() - started < 5


def test_unreachable_bootstrap_servers_fail_promptly_with_a_named_error():
    dead = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    with KafkaClient(",".join(dead), request_timeout_ms=1000) as client:
        started = time.monotonic()
        with pytest.raises(NoBrokersAvailableError, match="bootstrap servers"):
            client.refresh_metadata()
        assert time.monotonic() - started < 5


def test_a_broker_that_never_answers_times_out():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        host, port = silent.getsockname()
        with KafkaClient(f"{host}:{port}", request_timeout_ms=800) as client:
            started = time.monotonic()
            with pytest.raises(NoBrokersAvailableError) as caught:
                client.refresh_metadata()
            assert "did not answer" in str(caught.value) or "no answer" in str(caught.value)
            assert time.monotonic() - started < 5
            future = client.send(-1, ApiKey.METADATA, {"topics": None}, timeout_ms=500)
            with pytest.raises(KafkaTimeoutError):
                future.result(5)


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory):
    local = LocalCluster(brokers=2, base_dir=tmp_path_factory.mktemp("two"))
    local.start()
    try:
        yield local
    finally:
        local.stop()


def test_the_wrong_broker_answers_not_leader_and_a_retry_finds_the_leader(two_brokers):
    topic = f"moving-{time.monotonic_ns()}"  # a rerun makes its own topic
    with KafkaClient(two_brokers.bootstrap_servers) as client:
        client.refresh_metadata()
        create_topic(client, topic, 2)
        produce_with_retries(client, topic, 0, [b"warm-up"])
        leader = client.leader_for(topic, 0)
        other = next(b for b in client.metadata.brokers if b != leader)
        # The other broker learns the topic from the controller's UpdateMetadata, which
        # may come after the leader's LeaderAndIsr: until then it answers
        # UNKNOWN_TOPIC_OR_PARTITION (it does not know the topic), not NOT_LEADER.
        deadline = time.monotonic() + 30
        while not any(t.name == topic and t.error_code == 0 for t in client.request(
                other, ApiKey.METADATA, {"topics": [{"name": topic}]}).topics):
            assert time.monotonic() < deadline, f"broker {other} never learnt {topic}"
            time.sleep(0.1)
        answer = client.request(other, ApiKey.PRODUCE, produce_body(topic, 0, [b"x"]))
        code = answer.responses[0].partition_responses[0].error_code
        assert isinstance(error_for(code), NotLeaderOrFollowerError)

        attempts = []

        def produce_once(deadline):
            # First attempt at the wrong broker (a stale cache, as after a failover).
            node = other if not attempts else client.leader_for(topic, 0)
            attempts.append(node)
            reply = client.request(node, ApiKey.PRODUCE, produce_body(topic, 0, [b"y"]))
            part = reply.responses[0].partition_responses[0]
            if part.error_code:
                raise error_for(part.error_code)
            return part.base_offset

        assert client.call_with_retries(produce_once, timeout_ms=10_000) >= 0
        assert attempts[0] == other and attempts[-1] == leader


def test_a_restarted_broker_is_reconnected_to(two_brokers):
    with KafkaClient(two_brokers.bootstrap_servers, request_timeout_ms=5000) as client:
        client.refresh_metadata()
        two_brokers.restart(2)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.request(2, ApiKey.METADATA, {"topics": None}, timeout_ms=2000)
                break
            except Exception:
                assert client.metadata.needs_update()
                assert time.monotonic() < deadline
                time.sleep(0.2)
