"""Client quotas: Kafka's rate arithmetic, its entity precedence, its znodes, and a real
producer held to its byte rate while another client id on the same broker is not.

The unit tests drive the rate with a clock of their own; the integration tests set
quotas through kafka-python's request classes and through the CLI, read the znodes
with kazoo, and throttle a confluent-kafka producer (its ``throttle_cb`` reports the
broker's ``throttle_time_ms``). The 10 %-over-20-s figure is the benchmark's
(``benchmarks/bench_quotas.py``); here only the direction is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from simplekafka.broker.client_quotas import (
    ClientQuotaManager,
    ClientQuotas,
    SampledRate,
    throttle_time_ms,
    user_of,
)
from simplekafka.coordination.client_quotas import (
    QuotaError,
    entity_of,
    sanitize,
    stored_text,
)

# -- the rate over sample windows (Kafka's Rate and SampledStat) --------------------------


def test_a_young_rate_is_measured_over_ten_windows_at_least():
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(1000, 0)
    assert rate.window_size_ms(0) == 10_000  # not over the 0 ms since the first record
    assert rate.measure(0) == pytest.approx(100.0)
    rate.record(1000, 500)
    assert rate.window_size_ms(500) == 10_500
    assert rate.measure(500) == pytest.approx(2000 / 10.5)


def test_a_sample_starts_each_window_and_old_samples_drop_out():
    rate = SampledRate(samples=3, window_ms=1000)
    for t in (0, 1000, 2000, 2500):
        rate.record(100, t)
    assert rate.total(2999) == 400
    assert rate.total(3000) == 300  # silent for 3 windows: the first sample is reset
    assert rate.window_size_ms(3000) == 2000  # from the oldest sample kept
    assert rate.total(10_000) == 0


def test_the_throttle_time_brings_the_rate_back_to_the_bound():
    rate = SampledRate()
    rate.record(3_000_000, 0)  # 3 MB at once, against 100 kB/s over 10 s
    wait = throttle_time_ms(rate, 100_000, 0)
    assert wait == 20_000  # (300 kB/s - 100) / 100 * 10 s
    assert throttle_time_ms(SampledRate(), 100_000, 0) == 0


def test_a_request_quota_throttle_is_bounded_by_one_window():
    manager = ClientQuotaManager("request_percentage", max_throttle_ms=1000)
    manager.update((None, "busy"), 10.0)
    assert manager.record("ANONYMOUS", "busy", 5000.0, 0) == 1000


# -- which quota applies, and who shares it ------------------------------------------------

DEFAULT = "\x00<default>"


def test_precedence_from_user_and_client_down_to_the_client_default():
    m = ClientQuotaManager("producer_byte_rate")
    m.update((None, DEFAULT), 1.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 1.0
    m.update((None, "app"), 2.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 2.0
    m.update((DEFAULT, None), 3.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 3.0
    m.update((DEFAULT, DEFAULT), 4.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 4.0
    m.update((DEFAULT, "app"), 5.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 5.0
    m.update(("alice", None), 6.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 6.0
    m.update(("alice", DEFAULT), 7.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 7.0
    m.update(("alice", "app"), 8.0)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 8.0
    m.update(("alice", "app"), None)
    assert m.quota_limit(m.metric_tags("alice", "app")) == 7.0


def test_a_user_quota_is_shared_by_its_client_ids_a_client_default_is_not():
    m = ClientQuotaManager("producer_byte_rate")
    m.update(("alice", None), 100.0)
    assert m.metric_tags("alice", "a") == m.metric_tags("alice", "b") == ("alice", "")
    m.update(("alice", None), None)
    m.update((None, DEFAULT), 100.0)
    assert m.metric_tags("alice", "a") != m.metric_tags("alice", "b")


def test_entities_and_values_are_checked_and_stored_as_kafka_does():
    assert sanitize("my app*/x") == "my%20app%2A%2Fx"
    assert user_of("User:CN=bob,O=x") == "CN%3Dbob%2CO%3Dx"
    assert entity_of([("user", "alice"), ("client-id", None)]) == ("alice", "<default>")
    for bad in ([], [("user", "")], [("user", "a"), ("user", "b")], [("group", "g")],
                [("ip", "1.2.3.4")]):
        with pytest.raises(QuotaError):
            entity_of(bad)
    assert stored_text("producer_byte_rate", 1024.0) == "1024"
    assert stored_text("request_percentage", 50) == "50.0"
    with pytest.raises(QuotaError, match="LONG"):
        stored_text("consumer_byte_rate", 10.5)
    with pytest.raises(QuotaError, match="Invalid configuration key"):
        stored_text("producer_byte_rat", 1.0)


def test_a_change_notification_updates_the_managers_and_names_quota_only_entities():
    quotas = ClientQuotas(reactor=None)
    assert not quotas.enabled
    assert quotas.update("clients", "app", {"producer_byte_rate": "1000"})
    assert quotas.enabled and quotas.produce.overrides == {(None, "app"): 1000.0}
    # users/<u> also holds SCRAM credentials: the broker must still read those
    assert not quotas.update("users", "alice", {"consumer_byte_rate": "5",
                                                "SCRAM-SHA-256": "salt=..."})
    assert quotas.update("users", "alice/clients/<default>", {"request_percentage": "9.5"})
    assert quotas.request.overrides == {("alice", DEFAULT): 9.5}
    quotas.update("clients", "app", {})
    quotas.update("users", "alice", {})
    quotas.update("users", "alice/clients/<default>", {})
    assert not quotas.enabled


def _fetch_answer(size: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 7, "responses": [
        {"topic": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 42,
             "last_stable_offset": 42, "log_start_offset": 0, "preferred_read_replica": -1,
             "aborted_transactions": [], "records": b"r" * size}]}]}


def test_a_throttled_fetch_is_answered_without_records_and_its_bytes_uncounted():
    from simplekafka.broker.dispatch import RequestContext
    from simplekafka.protocol.api import ApiKey

    now = [0.0]
    quotas = ClientQuotas(reactor=None, clock=lambda: now[0])
    quotas.update("clients", "reader", {"consumer_byte_rate": "100"})
    context = RequestContext(ApiKey.FETCH, 11, 1, "reader")

    def fetch() -> dict:  # a consumer's Fetch v11, as the broker decodes it
        return {"replica_id": -1, "max_bytes": 1 << 20}

    first = quotas.after(_fetch_answer(1000), context, fetch(), 60, 0.0, None)
    assert first["throttle_time_ms"] == 0 and first["responses"][0]["partitions"][0]["records"]
    now[0] = 0.5
    second = quotas.after(_fetch_answer(1000), context, fetch(), 60, 0.0, None)
    assert second["throttle_time_ms"] > 0
    # Kafka's throttled fetch: nothing sent, so nothing counted; the partition is still
    # named with its offsets, so the client's fetch session stays as it was.
    partition = second["responses"][0]["partitions"][0]
    assert partition["records"] == b"" and partition["high_watermark"] == 42
    assert second["session_id"] == 7
    sensor = quotas.fetch.sensors[("", "reader")]
    assert sensor.rate.total(500) == 1000 and sensor.recorded == 1000
    # A producer's throttled request is counted: its bytes did arrive.
    quotas.update("clients", "writer", {"producer_byte_rate": "100"})
    produce = RequestContext(ApiKey.PRODUCE, 8, 2, "writer")
    for _ in range(2):
        quotas.after({"responses": [], "throttle_time_ms": 0}, produce, fetch(), 1000, 0.0,
                     None)
    assert quotas.produce.sensors[("", "writer")].recorded == 2000


def test_an_answer_encoded_ahead_gets_its_throttle_time_written_in():
    from simplekafka.broker.client_quotas import with_throttle_time
    from simplekafka.protocol.api import ApiKey
    from simplekafka.protocol.messages import decode_response, encode_response, encode_response_body

    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c", "controller_id": 1,
            "topics": [], "cluster_authorized_operations": -2147483648}
    cached = encode_response_body(ApiKey.METADATA, 8, body)  # Metadata's cached answer
    throttled = with_throttle_time(cached, ApiKey.METADATA, 8, 250)
    _, decoded = decode_response(ApiKey.METADATA, 8,
                                 encode_response(ApiKey.METADATA, 8, 5, throttled))
    assert decoded.throttle_time_ms == 250 and decoded.controller_id == 1
    v0 = encode_response_body(ApiKey.METADATA, 0, {"brokers": [], "topics": []})
    assert with_throttle_time(v0, ApiKey.METADATA, 0, 250) == v0  # no such field before v3


# -- against a real broker -----------------------------------------------------------------


def _kafka_python_send(cluster, request):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        return client._manager.run(lambda: client._manager.send(request))
    finally:
        client.close()


def _znode(cluster, path: str) -> dict:
    return json.loads(cluster.zk.get(path)[0])


@pytest.mark.integration
def test_quotas_set_through_kafka_python_land_in_zookeeper_as_kafka_writes_them(cluster):
    from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

    answer = _kafka_python_send(cluster, AlterClientQuotasRequest(entries=[
        ([("user", "alice"), ("client-id", None)],
         [("consumer_byte_rate", 2048.0, False), ("request_percentage", 50.0, False)]),
        ([("client-id", "report job")], [("producer_byte_rate", 4096.0, False)]),
        ([("client-id", "bad")], [("producer_byte_rate", 1.5, False)]),
    ], validate_only=False))
    assert [e.error_code for e in answer.entries] == [0, 0, 42]
    assert _znode(cluster, "/config/users/alice/clients/<default>") == {
        "version": 1, "config": {"consumer_byte_rate": "2048", "request_percentage": "50.0"}}
    assert _znode(cluster, "/config/clients/report%20job")["config"] == {
        "producer_byte_rate": "4096"}
    changes = [_znode(cluster, f"/config/changes/{c}")
               for c in sorted(cluster.zk.get_children("/config/changes"))]
    assert {"version": 2, "entity_path": "users/alice/clients/<default>"} in changes
    assert {"version": 2, "entity_path": "clients/report%20job"} in changes

    described = _kafka_python_send(cluster, DescribeClientQuotasRequest(
        components=[("client-id", 2, None)], strict=True))
    entries = {tuple((e.entity_type, e.entity_name) for e in entry.entity):
               {v.key: v.value for v in entry.values} for entry in described.entries}
    assert entries == {(("client-id", "report job"),): {"producer_byte_rate": 4096.0}}


@pytest.mark.integration
def test_the_cli_sets_describes_and_removes_a_quota(cluster):
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "simplekafka", "quotas", *args,
                               "-b", cluster.bootstrap_servers],
                              capture_output=True, text=True, timeout=60)

    done = cli("alter", "--user", "bob", "--add", "producer_byte_rate=1048576")
    assert done.returncode == 0, done.stderr
    assert _znode(cluster, "/config/users/bob")["config"] == {"producer_byte_rate": "1048576"}
    shown = cli("describe", "--user", "bob")
    assert shown.stdout.strip() == ("Quota configs for user-principal 'bob' are "
                                    "producer_byte_rate=1048576.0")
    assert cli("alter", "--user", "bob", "--delete", "producer_byte_rate").returncode == 0
    assert _znode(cluster, "/config/users/bob")["config"] == {}
    bad = cli("alter", "--user", "bob", "--add", "producer_byte_rate=lots")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def _produce_for(cluster, client_id: str, seconds: float, out: dict) -> None:
    """Produce as fast as the broker lets ``client_id``: delivered bytes/s, throttles seen."""
    from confluent_kafka import Producer

    throttles: list[float] = []
    delivered = [0]

    def on_delivery(err, msg):
        if err is None:
            delivered[0] += len(msg.value())

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": client_id, "batch.size": 16384, "linger.ms": 5,
                         "queue.buffering.max.kbytes": 1024,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    payload = b"q" * 1000
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            producer.produce("quota-test", payload, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.02)
        producer.poll(0)
    producer.poll(0.5)
    out[client_id] = (delivered[0] / (time.monotonic() - start), throttles)
    producer.purge()
    producer.flush(5)


@pytest.mark.integration
def test_a_producer_over_its_quota_is_throttled_and_another_client_is_not(cluster):
    from simplekafka.admin import Admin

    quota = 100_000
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("quota-test", num_partitions=1, replication_factor=1)
        admin.alter_client_quotas({"client-id": "throttled"}, {"producer_byte_rate": quota})
        assert admin.describe_client_quotas({"client-id": "throttled"}) == {
            (("client-id", "throttled"),): {"producer_byte_rate": float(quota)}}
    time.sleep(1)  # the broker follows /config/changes
    out: dict = {}
    slow = threading.Thread(target=_produce_for, args=(cluster, "throttled", 8, out))
    slow.start()
    _produce_for(cluster, "free", 3, out)
    slow.join(30)
    throttled_rate, throttles = out["throttled"]
    free_rate, free_throttles = out["free"]
    assert throttles and max(throttles) > 0  # told so in throttle_time_ms
    assert not free_throttles
    # Held near the quota (allowing Kafka's first-window burst), the other far above it.
    assert throttled_rate < 3 * quota
    assert free_rate > 3 * throttled_rate
    # The broker's metrics name who was throttled, and by how much.
    if cluster.metrics_urls:
        import urllib.request

        url = next(iter(cluster.metrics_urls.values()))
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        line = next(line for line in text.splitlines()
                    if line.startswith("kafka_server_produce_throttle_time_ms_total")
                    and 'client_id="throttled"' in line)
        assert float(line.split()[-1]) > 0


def _fill(cluster, topic: str, count: int) -> None:
    """``count`` 1,000-byte records numbered in order, on one partition."""
    from confluent_kafka import Producer

    from simplekafka.admin import Admin

    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=1)
    # 16 kB batches: a batch is answered whole (KIP-74), and one larger than the quota's
    # window of bytes would be over the quota in every answer, throttled for ever.
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5,
                         "batch.size": 16384})
    for i in range(count):
        producer.produce(topic, f"{i:06d}".encode().ljust(1000, b"."))
    assert producer.flush(30) == 0


def _set_quota(cluster, entity: dict, quota: dict) -> None:
    from simplekafka.admin import Admin

    with Admin(cluster.bootstrap_servers) as admin:
        admin.alter_client_quotas(entity, quota)
    time.sleep(1)  # the broker follows /config/changes


def _consume(cluster, topic: str, client_id: str, seconds: float, want: int, out: dict) -> None:
    """A confluent-kafka consumer in a group of its own: records read, throttles reported."""
    from confluent_kafka import Consumer

    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": client_id, "group.id": f"group-{client_id}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and read < want:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                read += 1
    finally:
        consumer.close()
    out[client_id] = (read, throttles)


@pytest.mark.integration
def test_a_consumer_over_its_byte_rate_is_throttled_and_another_group_is_not(cluster):
    # 20 kB/s: a new client may take ten seconds' worth (200 kB) at once, then waits.
    _fill(cluster, "quota-fetch", 600)
    _set_quota(cluster, {"client-id": "slow-reader"}, {"consumer_byte_rate": 20_000})
    out: dict = {}
    slow = threading.Thread(target=_consume,
                            args=(cluster, "quota-fetch", "slow-reader", 5, 600, out))
    slow.start()
    _consume(cluster, "quota-fetch", "fast-reader", 30, 600, out)
    slow.join(40)
    slow_read, slow_throttles = out["slow-reader"]
    fast_read, fast_throttles = out["fast-reader"]
    assert fast_read == 600 and not fast_throttles
    assert slow_throttles and max(slow_throttles) > 0  # told so in throttle_time_ms
    assert 0 < slow_read < fast_read / 2  # its first window's worth, then held back


@pytest.mark.integration
def test_a_throttled_fetch_in_a_fetch_session_loses_and_repeats_nothing(cluster, caplog):
    """kafka-python fetches in an incremental session (KIP-227): the throttled answer comes
    without records, and the records follow, each once and in order, after the throttle."""
    import logging

    from kafka import KafkaConsumer

    _fill(cluster, "quota-session", 600)
    # 50 kB/s: the first fetch takes the window's 500 kB, the next is throttled until the
    # rate over at least ten seconds is back at the quota (600 kB over 12 s).
    _set_quota(cluster, {"client-id": "session-reader"}, {"consumer_byte_rate": 50_000})
    consumer = KafkaConsumer("quota-session", bootstrap_servers=cluster.bootstrap_servers,
                             client_id="session-reader", group_id="session-reader",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    seen: list[int] = []
    with caplog.at_level(logging.WARNING, logger="kafka"):
        try:
            deadline = time.monotonic() + 30
            while len(seen) < 600 and time.monotonic() < deadline:
                for records in consumer.poll(500).values():
                    seen += [int(r.value[:6]) for r in records]
        finally:
            consumer.close()
    assert seen == list(range(600))
    assert any("FetchResponse" in r.getMessage() and "throttled" in r.getMessage()
               for r in caplog.records)


@pytest.mark.integration
def test_a_client_over_its_request_percentage_is_told_its_throttle_time(cluster):
    """Rapid Metadata requests from kafka-python: the reactor time they take counts against
    ``request_percentage``; the answers say ``throttle_time_ms``, another client id's do not."""
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.metadata import MetadataRequest

    _set_quota(cluster, {"client-id": "chatty"}, {"request_percentage": 0.05})

    def throttles_seen(client_id: str, requests: int) -> list[int]:
        client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                  client_id=client_id)
        seen = []
        try:
            for _ in range(requests):
                answer = client._manager.run(
                    lambda: client._manager.send(MetadataRequest(topics=None)))
                seen.append(answer.throttle_time_ms)
                if answer.throttle_time_ms:
                    break
        finally:
            client.close()
        return seen

    chatty = throttles_seen("chatty", 500)
    assert chatty[-1] > 0, f"not throttled after {len(chatty)} requests"
    quiet = throttles_seen("quiet", len(chatty))
    assert not any(quiet)
