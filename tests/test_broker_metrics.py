"""Broker metrics scraped from real broker processes (``metrics.listener``).

Exact messages-in after producing N records; the active controller count sums
to 1 over the cluster and moves when the controller is SIGKILLed;
under-replicated partitions rise when a follower dies and return to 0 when it
is back; answers leave straight on the socket; /health answers 200 while
serving and 503 with a reason otherwise;
every metric name in the Grafana dashboard's queries exists in a live scrape.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster, free_port
from simplekafka.console.process import ConsoleProcess
from simplekafka.consumer import Consumer
from simplekafka.coordination.processes import wait_until as _poll
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy/grafana/dashboards/simplekafka.json"


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] of one /metrics answer (Prometheus text format)."""
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.headers["content-type"].startswith("text/plain")
        text = answer.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    """The value of the sample with exactly these labels (0 if absent)."""
    return sum(v for found, v in samples.get(name, []) if found == labels)


def cluster_sum(cluster: LocalCluster, name: str, **labels: str) -> float:
    return sum(value(scrape(url), name, **labels) for broker_id, url in
               cluster.metrics_urls.items() if cluster.brokers[broker_id].is_running)


def health(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url.replace("/metrics", "/health"), timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def wait_until(condition, what: str, timeout: float = 60.0):
    return _poll(condition, what, timeout=timeout, interval=0.25, error=AssertionError)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("metrics"))
    local.start()
    try:
        yield local
    finally:
        local.stop()


def test_messages_in_is_exact(cluster):
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("counted", num_partitions=3, replication_factor=3)
    before = cluster_sum(cluster, "kafka_server_brokertopicmetrics_messagesin_total")
    records = 1237
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                  linger_ms=2) as producer:
        for i in range(records):
            producer.send("counted", f"record {i}".encode(), partition=i % 3)
        producer.flush(60)
    # Counted by the leaders only (followers' appends are replication), exactly once each.
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_messagesin_total",
                       topic="counted") == records
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_messagesin_total"
                       ) - before == records
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesin_total",
                       topic="counted") > records * len("record 0")
    produce_requests = sum(  # counted per version (Kafka's RequestsPerSec{request,version})
        v for url in cluster.metrics_urls.values()
        for labels, v in scrape(url).get("kafka_network_requestmetrics_requests_total", [])
        if labels["request"] == "Produce")
    assert produce_requests >= 3
    assert cluster_sum(cluster, "kafka_network_requestmetrics_totaltimems_count",
                       request="Produce") == produce_requests
    # Reading them back counts bytes out, at the leaders.
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    consumer.assign([("counted", p) for p in range(3)])
    consumer.seek_to_beginning()
    read = 0
    deadline = time.monotonic() + 60
    while read < records and time.monotonic() < deadline:
        read += len(consumer.poll(500))
    consumer.close()
    assert read == records
    assert cluster_sum(cluster, "kafka_server_brokertopicmetrics_bytesout_total",
                       topic="counted") >= cluster_sum(
        cluster, "kafka_server_brokertopicmetrics_bytesin_total", topic="counted")


def test_answers_leave_straight_on_the_socket(cluster):
    """A client that waits for each answer finds Twisted's buffer empty every time, so
    each answer is sent inside its request's handling, not at the reactor's next poll
    (socket_writer.py; the socket-level behaviour is in test_broker_latency.py)."""
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("sent-at-once", num_partitions=1, replication_factor=1)
    before = cluster_sum(cluster, "kafka_network_socket_sends_total", path="direct")
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks=1,
                  linger_ms=0) as producer:
        for i in range(20):
            producer.send("sent-at-once", b"%d" % i, partition=0)
            producer.flush(60)  # one produce request and its answer at a time
    assert cluster_sum(cluster, "kafka_network_socket_sends_total",
                       path="direct") - before >= 20


def test_partition_leader_and_log_gauges(cluster):
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("gauged", num_partitions=4, replication_factor=2)
    wait_until(lambda: all(cluster.leader_of("gauged", p) >= 0 for p in range(4)), "leaders")
    per_broker = {b: scrape(url) for b, url in cluster.metrics_urls.items()}
    logs = [(labels["partition"], b) for b, samples in per_broker.items()
            for labels, _ in samples["kafka_log_log_size"] if labels["topic"] == "gauged"]
    assert len(logs) == 8  # four partitions, two replicas each
    for b, samples in per_broker.items():
        led = sum(1 for p in range(4) if cluster.leader_of("gauged", p) == b)
        assert value(samples, "kafka_server_replicamanager_leadercount") >= led
        assert value(samples, "kafka_server_replicamanager_partitioncount") >= sum(
            1 for p in range(4) if b in cluster.replicas_of("gauged", p))


def test_active_controller_count_sums_to_one_and_moves(cluster):
    name = "kafka_controller_kafkacontroller_activecontrollercount"

    def per_broker():
        return {b: value(scrape(url), name) for b, url in cluster.metrics_urls.items()
                if cluster.brokers[b].is_running}

    counts = per_broker()
    assert sum(counts.values()) == 1
    controller = next(b for b, c in counts.items() if c == 1)
    assert controller == cluster.controller_id()
    assert cluster_sum(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    cluster.kill(controller)
    try:
        moved = wait_until(lambda: (c := per_broker()) and sum(c.values()) == 1
                           and c.get(controller) is None and c, "a new active controller")
        new_controller = next(b for b, c in moved.items() if c == 1)
        assert new_controller != controller
        assert new_controller == cluster.controller_id()
    finally:
        cluster.restart(controller)
    wait_until(lambda: sum(per_broker().values()) == 1 and len(per_broker()) == 3,
               "three brokers, one controller")


def test_under_replicated_partitions_rise_and_return_to_zero(cluster):
    name = "kafka_server_replicamanager_underreplicatedpartitions"
    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic("replicated", num_partitions=1, replication_factor=3)
    cluster.wait_for_isr("replicated", 0, [1, 2, 3])
    wait_until(lambda: cluster_sum(cluster, name) == 0, "no under-replicated partitions")
    leader = cluster.leader_of("replicated", 0)
    follower = next(b for b in cluster.replicas_of("replicated", 0) if b != leader)
    shrinks_before = value(scrape(cluster.metrics_urls[leader]),
                           "kafka_server_replicamanager_isrshrinks_total")
    cluster.kill(follower)
    try:
        wait_until(lambda: cluster_sum(cluster, name) >= 1, "under-replicated partitions",
                   timeout=90)
        assert value(scrape(cluster.metrics_urls[leader]),
                     "kafka_server_replicamanager_isrshrinks_total") > shrinks_before or \
            follower not in cluster.isr_of("replicated", 0)
    finally:
        cluster.restart(follower)
    cluster.wait_for_isr("replicated", 0, [1, 2, 3], timeout=90)
    wait_until(lambda: cluster_sum(cluster, name) == 0, "under-replicated back to 0",
               timeout=90)
    assert cluster_sum(cluster, "kafka_server_replicamanager_isrexpands_total") >= 1


def test_health_is_200_while_serving(cluster):
    for broker_id, url in cluster.metrics_urls.items():
        status, body = health(url)
        assert status == 200, body
        assert body["broker_id"] == broker_id


def test_health_is_503_with_a_reason_without_zookeeper(tmp_path):
    port, metrics_port = free_port(), free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "simplekafka", "broker", "--broker-id", "9", "--port", str(port),
         "--data-dir", str(tmp_path / "data"), "--zookeeper", f"127.0.0.1:{free_port()}",
         "--set", f"metrics.listener=127.0.0.1:{metrics_port}",
         "--set", "zookeeper.connection.timeout.ms=60000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{metrics_port}/metrics"

        def answered():
            try:
                return health(url)
            except (urllib.error.URLError, ConnectionError):
                return None

        status, body = wait_until(answered, "the metrics listener", timeout=60)
        assert status == 503
        assert body["reason"] == "no ZooKeeper session"
        assert "kafka_server_replicamanager_partitioncount" in scrape(url)
    finally:
        broker.terminate()
        broker.wait(30)


def test_bad_metrics_listener_is_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "simplekafka", "broker", "--broker-id", "1", "--data-dir", "/tmp/x",
         "--zookeeper", "127.0.0.1:1", "--set", "metrics.listener=nowhere"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "metrics.listener" in result.stderr and "Traceback" not in result.stderr


def test_every_dashboard_metric_exists_in_a_live_scrape(cluster):
    """Brokers and the console (group lag) scraped after traffic of every kind."""
    with Admin(cluster.bootstrap_servers) as admin:
        if "dashboard" not in admin.list_topics():
            admin.create_topic("dashboard", num_partitions=2, replication_factor=3)
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(20):
            producer.send("dashboard", str(i).encode())
    consumer = Consumer("dashboard", bootstrap_servers=cluster.bootstrap_servers,
                        group_id="dashboard-readers", auto_offset_reset="earliest",
                        enable_auto_commit=False)
    try:
        got = 0
        deadline = time.monotonic() + 60
        while got < 5 and time.monotonic() < deadline:
            got += len(consumer.poll(500))
        consumer.commit()
    finally:
        consumer.close()
    names: set[str] = set()
    for url in cluster.metrics_urls.values():
        names |= set(scrape(url))
    with ConsoleProcess(cluster.bootstrap_servers) as console:
        console_samples = scrape(console.url + "metrics")
    lags = [v for labels, v in console_samples["kafka_consumergroup_lag"]
            if labels["consumergroup"] == "dashboard-readers"]
    assert lags and sum(lags) <= 20 - got
    names |= set(console_samples)
    dashboard = json.loads(DASHBOARD.read_text())
    queried = {name for panel in dashboard["panels"] for target in panel["targets"]
               for name in re.findall(r"\b((?:kafka|process)_[a-z_]+)\b", target["expr"])}
    assert len(queried) >= 12
    missing = sorted(queried - names)
    assert not missing, f"dashboard queries metrics no scrape has: {missing}"
