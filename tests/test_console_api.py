"""The console's REST API against a live three-broker cluster (real processes).

Every route with its success and error answers; bad input (unknown topic,
negative partitions, a body that is not JSON, a huge limit) gets its 4xx and
changes nothing; the OpenAPI document is valid, and a schemathesis run
generated from it finds no 500 and no answer that breaks the document.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster, free_port
from simplekafka.cluster.security import AUTHORIZER
from simplekafka.console.process import ConsoleProcess
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # No automatic rebalance, so a leader moved away stays away until the API elects;
    # a short session, so a killed broker's leaderships move quickly.
    # An authorizer, so the ACL routes have something to store; every connection here
    # is PLAINTEXT (User:ANONYMOUS), made the super user so nothing is refused.
    cluster = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("console-api"),
                           broker_config={"auto.leader.rebalance.enable": "false",
                                          "zookeeper.session.timeout.ms": "6000",
                                          "authorizer.class.name": AUTHORIZER,
                                          "super.users": "User:ANONYMOUS"})
    cluster.start()
    try:
        with ConsoleProcess(cluster.bootstrap_servers) as console:
            yield cluster, console
    finally:
        cluster.stop()


def call(url: str, method: str, path: str, body=None, raw: bytes | None = None):
    """(status, decoded JSON or None) of one request; error statuses are answers too."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            status, payload, kind = answer.status, answer.read(), answer.headers["content-type"]
    except urllib.error.HTTPError as error:
        status, payload, kind = error.code, error.read(), error.headers["content-type"]
    if not payload:
        return status, None
    assert kind.startswith("application/json"), (status, kind, payload[:200])
    return status, json.loads(payload)


@pytest.fixture
def api(live):
    _, console = live
    return lambda method, path, body=None, raw=None: call(console.url, method, path, body, raw)


def topic_names(api) -> list[str]:
    status, topics = api("GET", "/api/topics")
    assert status == 200
    return [t["name"] for t in topics]


def test_cluster_names_three_brokers_and_the_controller(live, api):
    cluster, _ = live
    status, body = api("GET", "/api/cluster")
    assert status == 200
    assert [b["id"] for b in body["brokers"]] == [1, 2, 3]
    assert {b["port"] for b in body["brokers"]} == set(cluster.broker_ports.values())
    assert body["controller_id"] == cluster.controller_id()
    assert body["cluster_id"]
    status, overview = api("GET", "/api/overview")
    assert status == 200 and overview["controller_id"] == body["controller_id"]


def test_topic_lifecycle(live, api):
    cluster, _ = live
    status, created = api("POST", "/api/topics", {"name": "orders", "partitions": 3,
                                                  "replication_factor": 3,
                                                  "configs": {"retention.ms": "3600000"}})
    assert status == 201, created
    assert [p["partition"] for p in created["partitions"]] == [0, 1, 2]
    assert "orders" in topic_names(api)
    status, topic = api("GET", "/api/topics/orders")
    assert status == 200
    for p in topic["partitions"]:
        assert p["leader"] == cluster.leader_of("orders", p["partition"])
        assert sorted(p["isr"]) == [1, 2, 3] and len(p["replicas"]) == 3
        assert (p["earliest_offset"], p["latest_offset"]) == (0, 0)
        assert p["under_replicated"] is False
    status, listed = api("GET", "/api/topics")
    summary = next(t for t in listed if t["name"] == "orders")
    assert summary == {"name": "orders", "internal": False, "partitions": 3,
                       "replication_factor": 3, "under_replicated_partitions": 0}
    assert api("POST", "/api/topics", {"name": "orders", "partitions": 1})[0] == 409
    assert api("DELETE", "/api/topics/orders") == (204, None)
    assert "orders" not in topic_names(api)
    assert api("GET", "/api/topics/orders")[0] == 404
    assert api("DELETE", "/api/topics/orders")[0] == 404


@pytest.mark.parametrize("body", [
    {"name": "bad-partitions", "partitions": -1},
    {"name": "bad-partitions", "partitions": 0},
    {"name": "bad-partitions", "partitions": "3"},
    {"name": "bad-replication", "partitions": 1, "replication_factor": 4},  # 3 brokers
    {"name": "bad name!", "partitions": 1},
    {"name": "", "partitions": 1},
    {"partitions": 1},
    {"name": "bad-config", "configs": {"retention.ms": {"nested": 1}}},
    {"name": "bad-config", "configs": ["retention.ms"]},
    {"name": "bad-field", "partition": 1},
    ["not", "an", "object"],
])
def test_bad_topic_creations_are_400_and_change_nothing(api, body):
    before = topic_names(api)
    status, answer = api("POST", "/api/topics", body)
    assert status == 400, answer
    assert set(answer) == {"error"} and answer["error"]
    assert topic_names(api) == before


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b"[" * 100_000])
def test_non_json_bodies_are_400_and_change_nothing(api, raw):
    before = topic_names(api)
    for path in ("/api/topics", "/api/topics/anything/records",
                 "/api/groups/g/offsets/reset"):
        status, answer = api("POST", path, raw=raw)
        assert status == 400, (path, answer)
    assert topic_names(api) == before


def test_records_round_trip(api):
    assert api("POST", "/api/topics", {"name": "events", "partitions": 2,
                                       "replication_factor": 3})[0] == 201
    records = [{"key": f"k{i}", "value": f"value {i}", "partition": 1} for i in range(5)]
    records.append({"key": base64.b64encode(b"\x00\xff").decode(),
                    "value": base64.b64encode(b"\x80binary").decode(),
                    "partition": 1, "encoding": "base64"})
    records.append({"value": "to partition zero", "partition": 0})
    status, produced = api("POST", "/api/topics/events/records", {"records": records})
    assert status == 200, produced
    assert produced["offsets"] == ([{"partition": 1, "offset": i} for i in range(6)]
                                   + [{"partition": 0, "offset": 0}])
    status, page = api("GET", "/api/topics/events/records?partition=1&offset=0&limit=3")
    assert status == 200
    assert [r["offset"] for r in page["records"]] == [0, 1, 2]
    assert [(r["key"], r["value"], r["encoding"]) for r in page["records"]] == [
        (f"k{i}", f"value {i}", None) for i in range(3)]
    assert (page["earliest_offset"], page["latest_offset"], page["next_offset"]) == (0, 6, 3)
    status, page = api("GET", "/api/topics/events/records?partition=1&offset=3")
    assert [r["offset"] for r in page["records"]] == [3, 4, 5]
    binary = page["records"][-1]
    assert binary["encoding"] == "base64"
    assert base64.b64decode(binary["key"]) == b"\x00\xff"
    assert base64.b64decode(binary["value"]) == b"\x80binary"
    status, page = api("GET", "/api/topics/events/records?partition=1&offset=99")
    assert status == 200 and page["records"] == [] and page["next_offset"] == 99
    # Records written by another client, with headers, read through the API.
    status, topic = api("GET", "/api/topics/events")
    assert [p["latest_offset"] for p in topic["partitions"]] == [1, 6]


def test_headers_are_shown(live, api):
    cluster, _ = live
    assert api("POST", "/api/topics", {"name": "with-headers", "partitions": 1,
                                       "replication_factor": 2})[0] == 201
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        producer.send("with-headers", b"v", key=b"k",
                      headers=[("trace", b"abc"), ("raw", b"\xff"), ("none", None)]).get(30)
    status, page = api("GET", "/api/topics/with-headers/records")
    assert status == 200
    assert page["records"][0]["headers"] == [
        {"key": "trace", "value": "abc", "encoding": None},
        {"key": "raw", "value": base64.b64encode(b"\xff").decode(), "encoding": "base64"},
        {"key": "none", "value": None, "encoding": None}]


@pytest.mark.parametrize("query, status", [
    ("?limit=100000000", 400), ("?limit=0", 400), ("?limit=abc", 400),
    ("?offset=-1", 400), ("?partition=-1", 400), ("?partition=7", 404),
    ("?partition=x", 400), ("?since_ms=-5", 400), ("?until_ms=soon", 400), ("?contains=", 400),
    ("?partition=all&offset=3", 400), ("?contains=x&offset=0&partition=0", 400),
])
def test_bad_record_reads(api, query, status):
    if "records-target" not in topic_names(api):
        api("POST", "/api/topics", {"name": "records-target", "partitions": 1,
                                    "replication_factor": 3})
    code, answer = api("GET", "/api/topics/records-target/records" + query)
    assert code == status, answer
    assert answer["error"]


def test_produced_headers_are_read_back(live, api):
    cluster, _ = live
    api("POST", "/api/topics", {"name": "headed", "partitions": 1, "replication_factor": 3})
    code, answer = api("POST", "/api/topics/headed/records", {"records": [
        {"key": "k", "value": "v", "headers": [{"key": "trace", "value": "abc"},
                                               {"key": "none", "value": None}]}]})
    assert code == 200, answer
    from confluent_kafka import Consumer as ConfluentConsumer

    consumer = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                  "group.id": "headed", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["headed"])
        message = cluster.wait_for(lambda: consumer.poll(1.0), "the record", timeout=30)
        assert message.headers() == [("trace", b"abc"), ("none", None)]
    finally:
        consumer.close()


def test_bad_produces_are_refused_and_write_nothing(api):
    api("POST", "/api/topics", {"name": "guarded", "partitions": 2, "replication_factor": 3})
    before = topic_names(api)

    def ends():
        return [p["latest_offset"] for p in api("GET", "/api/topics/guarded")[1]["partitions"]]

    start = ends()
    for body, status in [
        ({"records": []}, 400),
        ({"records": [{"value": "x", "partition": -1}]}, 400),
        ({"records": [{"value": "x", "partition": 9}]}, 404),
        ({"records": [{"value": 5}]}, 400),
        ({"records": [{"value": "ok"}, {"value": "!!", "encoding": "base64"}]}, 400),
        ({"records": [{"value": "x", "colour": "red"}]}, 400),
        ({"records": "x"}, 400),
        ({"value": "x"}, 400),
        ({"records": [{"value": "x"}], "extra": 1}, 400),
        ({"records": [{"value": "x", "headers": {"a": "b"}}]}, 400),
        ({"records": [{"value": "x", "headers": [{"key": 1, "value": "b"}]}]}, 400),
        ({"records": [{"value": "x", "headers": [{"key": "a", "value": "!!"}],
                       "encoding": "base64"}]}, 400),
    ]:
        code, answer = api("POST", "/api/topics/guarded/records", body)
        assert code == status, (body, answer)
    code, answer = api("POST", "/api/topics/no-such-topic/records", {"records": [{"value": "x"}]})
    assert code == 404, answer
    assert ends() == start
    assert topic_names(api) == before  # no topic was created by the attempt


def test_unknown_topics_are_404(api):
    for method, path in [("GET", "/api/topics/nope"), ("DELETE", "/api/topics/nope"),
                         ("GET", "/api/topics/nope/records"),
                         ("GET", "/api/topics/bad%20name"),
                         ("GET", "/api/topics/%C3%A9t%C3%A9/records")]:
        status, answer = api(method, path)
        assert status == 404, (method, path, answer)


def test_groups(live, api):
    cluster, _ = live
    api("POST", "/api/topics", {"name": "grouped", "partitions": 2, "replication_factor": 3})
    api("POST", "/api/topics/grouped/records",
        {"records": [{"value": str(i), "partition": i % 2} for i in range(10)]})
    consumer = Consumer("grouped", bootstrap_servers=cluster.bootstrap_servers,
                        group_id="readers", auto_offset_reset="earliest",
                        enable_auto_commit=False)
    try:
        seen = 0
        for _ in range(60):
            seen += len(consumer.poll(500))
            if seen >= 4:
                break
        consumer.commit({("grouped", 0): 2, ("grouped", 1): 1})
        status, groups = api("GET", "/api/groups")
        assert status == 200 and {"group_id": "readers", "protocol_type": "consumer"} in groups
        status, group = api("GET", "/api/groups/readers")
        assert status == 200
        assert group["state"] == "Stable" and len(group["members"]) == 1
        assert sorted((p["topic"], p["partition"]) for p in group["members"][0]["partitions"]
                      ) == [("grouped", 0), ("grouped", 1)]
        assert [(p["partition"], p["committed"], p["latest"], p["lag"])
                for p in group["partitions"]] == [(0, 2, 5, 3), (1, 1, 5, 4)]
        assert group["total_lag"] == 7
        # Reset and delete are refused while the group has a member.
        status, answer = api("POST", "/api/groups/readers/offsets/reset",
                             {"topic": "grouped", "to": "earliest"})
        assert status == 409, answer
        assert api("DELETE", "/api/groups/readers")[0] == 409
    finally:
        consumer.close(autocommit=False)
    for body, status in [({"topic": "grouped", "to": "middle"}, 400),
                         ({"topic": "grouped", "to": -3}, 400),
                         ({"topic": "grouped"}, 400),
                         ({"topic": "grouped", "to": 0, "execute": "yes"}, 400),
                         ({"to": {"datetime": "yesterday"}}, 400),
                         ({"to": {"shift_by": "1"}}, 400),
                         ({"to": {"shift_by": 1, "datetime": "2020-01-01"}}, 400),
                         ({"to": 0, "partitions": [0]}, 400),
                         ({"topic": "grouped", "to": 0, "partitions": [5]}, 404),
                         ({"topic": "unknown-topic", "to": 0}, 404)]:
        code, answer = api("POST", "/api/groups/readers/offsets/reset", body)
        assert code == status, (body, answer)
    assert api("GET", "/api/groups/readers")[1]["partitions"][0]["committed"] == 2
    status, reset = api("POST", "/api/groups/readers/offsets/reset",
                        {"topic": "grouped", "to": "latest", "partitions": [0],
                         "execute": True})
    assert status == 200, reset
    assert reset == {"group_id": "readers", "executed": True, "plan": [
        {"topic": "grouped", "partition": 0, "current": 2, "new": 5}]}
    status, reset = api("POST", "/api/groups/readers/offsets/reset",
                        {"topic": "grouped", "to": 3, "execute": True})
    assert [(p["partition"], p["new"]) for p in reset["plan"]] == [(0, 3), (1, 3)]
    assert api("GET", "/api/groups/readers")[1]["total_lag"] == 4
    assert api("DELETE", "/api/groups/readers") == (204, None)
    assert api("GET", "/api/groups/readers")[0] == 404
    assert api("DELETE", "/api/groups/readers")[0] == 404
    assert api("POST", "/api/groups/readers/offsets/reset",
               {"topic": "grouped", "to": 0})[0] == 404


def test_leader_election(live, api):
    cluster, _ = live
    assert api("POST", "/api/topics", {"name": "elect", "partitions": 2,
                                       "replication_factor": 3})[0] == 201
    for body, status in [({"topic": "nope"}, 404), ({"topic": "elect", "partitions": [9]}, 404),
                         ({"partitions": [0]}, 400), ({"topic": 3}, 400), (["x"], 400),
                         ({"topic": "elect", "partitions": [-1]}, 400), ({"what": 1}, 400)]:
        code, answer = api("POST", "/api/leader-election", body)
        assert code == status, (body, answer)
    cluster.wait_for_isr("elect", 0, [1, 2, 3])
    preferred = cluster.replicas_of("elect", 0)[0]
    status, answer = api("POST", "/api/leader-election", {"topic": "elect", "partitions": [0]})
    assert status == 200, answer
    assert answer["partitions"] == [{"topic": "elect", "partition": 0,
                                     "result": "already_preferred", "leader": preferred}]
    # Move leadership away from the preferred replica, bring it back in sync, elect.
    cluster.kill(preferred)
    cluster.wait_for_leader("elect", 0, not_=preferred)
    cluster.restart(preferred)
    cluster.wait_for_isr("elect", 0, [1, 2, 3])
    assert cluster.leader_of("elect", 0) != preferred
    status, answer = api("POST", "/api/leader-election", {"topic": "elect"})
    assert status == 200, answer
    by_partition = {p["partition"]: p for p in answer["partitions"]}
    assert by_partition[0]["result"] == "elected" and by_partition[0]["leader"] == preferred
    assert cluster.leader_of("elect", 0) == preferred
    assert by_partition[1]["result"] in ("elected", "already_preferred")
    status, answer = api("POST", "/api/leader-election", None)  # no body: every partition
    assert status == 200
    # Other topics' leaders moved with the kill too: they are elected back (or not yet
    # possible while a replica catches up); "elect" is where its preferred replicas are.
    assert {p["result"] for p in answer["partitions"]} <= {
        "elected", "already_preferred", "not_possible"}
    assert [p["result"] for p in answer["partitions"] if p["topic"] == "elect"] == [
        "already_preferred"] * 2


def test_leader_election_cli_over_the_kafka_protocol(live, api):
    cluster, _ = live
    api("POST", "/api/topics", {"name": "elect-cli", "partitions": 2, "replication_factor": 3})
    result = subprocess.run(
        [sys.executable, "-m", "simplekafka", "leader-election", "--preferred",
         "--bootstrap-server", cluster.bootstrap_servers, "--topic", "elect-cli"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Preferred replicas lead: elect-cli-0, elect-cli-1"
    result = subprocess.run(
        [sys.executable, "-m", "simplekafka", "leader-election", "--preferred",
         "--bootstrap-server", cluster.bootstrap_servers, "--topic", "nope"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_elect_leaders_speaks_kafkas_wire_format(live, api):
    """confluent-kafka's AdminClient.elect_leaders (librdkafka) against our brokers."""
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as Tp
    from confluent_kafka.admin import AdminClient

    cluster, _ = live
    api("POST", "/api/topics", {"name": "elect-wire", "partitions": 1, "replication_factor": 3})
    cluster.wait_for_isr("elect-wire", 0, [1, 2, 3])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    results = admin.elect_leaders(ElectionType.PREFERRED, [Tp("elect-wire", 0)]).result(60)
    [(tp, error)] = results.items()
    assert (tp.topic, tp.partition) == ("elect-wire", 0)
    assert error is not None and error.code() == 84  # ELECTION_NOT_NEEDED


def test_wrong_methods_and_unknown_routes(api):
    assert api("PUT", "/api/topics")[0] == 405
    assert api("PATCH", "/api/cluster")[0] == 405
    assert api("GET", "/api/nothing-here")[0] == 404


def test_openapi_document_is_valid_and_docs_are_served_locally(live, api):
    from openapi_spec_validator import validate

    status, document = api("GET", "/api/openapi.json")
    assert status == 200
    validate(document)
    import re

    from simplekafka.console.server import ROUTES

    tags = {t["name"] for t in document["tags"]}
    assert tags == {"cluster", "topics", "records", "groups", "brokers", "acls", "users",
                    "metrics"}
    for route in ROUTES:
        template = re.sub(r"\(\?P<(\w+)>\[\^/\]\+\)", r"{\1}",
                          route.pattern.pattern.strip("^$"))
        operation = document["paths"][template][route.method.lower()]
        assert set(operation["tags"]) <= tags and len(operation["tags"]) == 1, template
        if route.has_body:
            assert operation["requestBody"]["content"]["application/json"]["schema"], template
    _, console = live
    with urllib.request.urlopen(console.url + "api/docs", timeout=30) as answer:
        page = answer.read().decode()
    assert "swagger-ui-bundle.js" in page
    assert "http://" not in page and "https://" not in page  # nothing from the internet
    with urllib.request.urlopen(console.url + "api/docs/swagger-ui-bundle.js", timeout=30) as a:
        assert a.status == 200 and len(a.read()) > 100_000
    with urllib.request.urlopen(console.url, timeout=30) as answer:
        index = answer.read().decode()
    assert "http://" not in index and "https://" not in index


def test_schemathesis_finds_no_500_and_no_schema_breaks(live, tmp_path):
    """A bounded property-based run of every operation in the OpenAPI document."""
    _, console = live
    result = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "run", console.url + "api/openapi.json",
         "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                     "response_schema_conformance,negative_data_rejection,unsupported_method",
         "--phases", "examples,coverage,fuzzing", "--max-examples", "15", "--workers", "1",
         "--seed", "12", "--request-timeout", "60", "--generation-database", "none",
         "--no-color", "--report", "junit", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=1500, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_unreachable_cluster_is_503():
    from concurrent.futures import ThreadPoolExecutor

    with ConsoleProcess(f"127.0.0.1:{free_port()}") as console, ThreadPoolExecutor(2) as pool:
        # Each answer waits the console's request timeout out (10 s): side by side, not in turn.
        cluster = pool.submit(call, console.url, "GET", "/api/cluster")
        topic = pool.submit(call, console.url, "GET", "/api/topics/x")
        status, answer = cluster.result(timeout=120)
        assert status == 503 and "answer" in answer["error"]
        assert topic.result(timeout=120)[0] == 503


def test_console_cli_refuses_bad_arguments():
    for args in (["--port", "99999"], ["--bootstrap-server", "host:notaport"]):
        command = [sys.executable, "-m", "simplekafka", "console"]
        if "--bootstrap-server" not in args:
            command += ["--bootstrap-server", "127.0.0.1:9092"]
        result = subprocess.run(command + args, capture_output=True, text=True, timeout=60,
                                check=False)
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_console_on_a_taken_port_is_one_line():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "simplekafka", "console", "--bootstrap-server",
             "127.0.0.1:9092", "--port", str(port)],
            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"simplekafka console: error: cannot listen on 127.0.0.1:{port}: "
        "[Errno 98] Address already in use"]


def test_admin_can_see_what_the_api_created(live, api):
    cluster, _ = live
    api("POST", "/api/topics", {"name": "seen-by-admin", "partitions": 4,
                                "replication_factor": 2})
    with Admin(cluster.bootstrap_servers) as admin:
        described = admin.describe_topics(["seen-by-admin"])["seen-by-admin"]
    assert len(described.partitions) == 4
    assert all(len(p.replicas) == 2 for p in described.partitions)


# ----- what a console to work in needs (issue 29) ----------------------------------------


def test_topic_page_has_log_offsets_and_sizes(live, api):
    cluster, _ = live
    assert api("POST", "/api/topics", {"name": "sized", "partitions": 2,
                                       "replication_factor": 3})[0] == 201
    api("POST", "/api/topics/sized/records",
        {"records": [{"value": "x" * 100, "partition": 1} for _ in range(5)]})
    status, topic = api("GET", "/api/topics/sized")
    assert status == 200 and topic["internal"] is False
    first, second = topic["partitions"]
    assert (first["log_start_offset"], first["log_end_offset"]) == (0, 0)
    assert (second["log_start_offset"], second["log_end_offset"]) == (0, 5)
    # Sizes come from a metrics scrape at most a second old.
    cluster.wait_for(lambda: [p["size_bytes"] for p in api("GET", "/api/topics/sized")[1][
        "partitions"]][1] > 500, "the size of the written partition", timeout=10)
    first, second = api("GET", "/api/topics/sized")[1]["partitions"]
    assert first["size_bytes"] == 0 and second["size_bytes"] > 500
    assert second["leader"] == cluster.leader_of("sized", 1)


def test_topic_configs_read_and_change_all_or_nothing(api):
    api("POST", "/api/topics", {"name": "configured", "partitions": 1, "replication_factor": 3})

    def value(name):
        status, answer = api("GET", "/api/topics/configured/configs")
        assert status == 200
        [entry] = [c for c in answer["configs"] if c["name"] == name]
        assert set(entry) == {"name", "value", "source", "read_only", "sensitive",
                              "is_default"}
        return entry

    assert value("retention.ms")["source"] == "DEFAULT_CONFIG"
    status, answer = api("PATCH", "/api/topics/configured/configs",
                         {"set": {"retention.ms": 3600000, "cleanup.policy": "compact"}})
    assert status == 200, answer
    assert value("retention.ms")["value"] == "3600000"
    assert value("retention.ms")["source"] == "DYNAMIC_TOPIC_CONFIG"
    for body, status in [({"set": {"retention.ms": "soon"}}, 400),
                         ({"set": {"retention.ms": "1", "no.such.config": "1"}}, 400),
                         ({"set": {"retention.ms": {"a": 1}}}, 400),
                         ({"delete": "retention.ms"}, 400), ({"colour": 1}, 400),
                         ({"set": {"segment.ms": "1"}, "delete": ["segment.ms"]}, 400)]:
        code, answer = api("PATCH", "/api/topics/configured/configs", body)
        assert code == status, (body, answer)
        assert answer["error"]
    assert "no.such.config" in api("PATCH", "/api/topics/configured/configs",
                                   {"set": {"no.such.config": "1"}})[1]["error"]
    assert value("retention.ms")["value"] == "3600000"  # nothing changed
    assert api("PATCH", "/api/topics/configured/configs",
               {"delete": ["retention.ms", "cleanup.policy"]})[0] == 200
    assert value("retention.ms")["source"] == "DEFAULT_CONFIG"
    assert api("GET", "/api/topics/nope/configs")[0] == 404
    assert api("PATCH", "/api/topics/nope/configs", {"set": {"retention.ms": "1"}})[0] == 404


def test_broker_configs_and_the_cluster_default(live, api):
    cluster, _ = live
    status, answer = api("GET", "/api/brokers/1/configs")
    assert status == 200
    assert any(c["name"] == "log.retention.ms" for c in answer["configs"])
    status, answer = api("PATCH", "/api/brokers/default/configs",
                         {"set": {"log.retention.ms": "7200000"}})
    assert status == 200, answer
    # The answer reads the write: the controller described the change before it was given.
    [changed] = [c for c in answer["configs"] if c["name"] == "log.retention.ms"]
    assert (changed["value"], changed["source"]) == ("7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG")

    def entry(broker):
        configs = api("GET", f"/api/brokers/{broker}/configs")[1]["configs"]
        [found] = [c for c in configs if c["name"] == "log.retention.ms"]
        return found["value"], found["source"]

    # Each broker learns a dynamic config through ZooKeeper's change notification.
    for broker in ("default", "3"):
        cluster.wait_for(lambda b=broker: entry(b) == ("7200000",
                                                      "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                         f"broker {broker} to see the new default", timeout=20)
    assert api("PATCH", "/api/brokers/2/configs",
               {"set": {"log.retention.ms": "nope"}})[0] == 400
    assert api("PATCH", "/api/brokers/default/configs",
               {"delete": ["log.retention.ms"]})[0] == 200
    for path in ("/api/brokers/99/configs", "/api/brokers/x/configs"):
        assert api("GET", path)[0] == 404


def test_records_across_partitions_with_time_and_text_filters(live, api):
    cluster, _ = live
    api("POST", "/api/topics", {"name": "browsed", "partitions": 3, "replication_factor": 3})
    base = 1_700_000_000_000
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(12):
            value = json.dumps({"n": i}) if i % 3 == 0 else f"text {i}"
            producer.send("browsed", value.encode(), key=f"k{i}".encode(), partition=i % 3,
                          timestamp=base + i * 1000)
        producer.flush(30)
    status, page = api("GET", "/api/topics/browsed/records?limit=100")
    assert status == 200, page
    assert [r["timestamp"] - base for r in page["records"]] == [i * 1000 for i in range(12)]
    assert [r["partition"] for r in page["records"]] == [i % 3 for i in range(12)]
    assert page["records"][0]["value_json"] == {"n": 0}
    assert page["records"][1]["value_json"] is None and page["complete"] is True
    assert api("GET", "/api/topics/browsed/records?partition=all&limit=4")[1]["records"] == \
        page["records"][:4]
    status, page = api("GET", f"/api/topics/browsed/records?since_ms={base + 3000}"
                              f"&until_ms={base + 7000}")
    assert [r["key"] for r in page["records"]] == ["k3", "k4", "k5", "k6"]
    status, page = api("GET", "/api/topics/browsed/records?contains=text%201")
    assert [r["key"] for r in page["records"]] == ["k1", "k10", "k11"]
    status, page = api("GET", "/api/topics/browsed/records?contains=k7&partition=1")
    assert [(r["partition"], r["offset"]) for r in page["records"]] == [(1, 2)]
    # One partition without filters keeps its offset paging.
    status, page = api("GET", "/api/topics/browsed/records?partition=2&offset=1&limit=2")
    assert [r["offset"] for r in page["records"]] == [1, 2] and page["next_offset"] == 3


def test_offset_reset_plans_unless_executed(live, api):
    """The plan changes nothing; execute applies it (read back with confluent-kafka)."""
    from confluent_kafka import Consumer as CkConsumer
    from confluent_kafka import TopicPartition as CkTP

    cluster, _ = live
    api("POST", "/api/topics", {"name": "planned", "partitions": 2, "replication_factor": 3})
    base = 1_700_000_000_000
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for p in range(2):
            for i in range(10):
                producer.send("planned", b"v", partition=p, timestamp=base + i * 60_000)
        producer.flush(30)
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, group_id="planners",
                  enable_auto_commit=False) as consumer:
        consumer.commit({("planned", 0): 5, ("planned", 1): 6})
    checker = CkConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                          "group.id": "planners"})

    def committed() -> list[int]:
        return [tp.offset for tp in checker.committed([CkTP("planned", p) for p in range(2)],
                                                      timeout=20)]

    def reset(body):
        status, answer = api("POST", "/api/groups/planners/offsets/reset", body)
        assert status == 200, (body, answer)
        return [(p["partition"], p["current"], p["new"]) for p in answer["plan"]], answer

    try:
        plan, answer = reset({"topic": "planned", "to": "earliest"})
        assert plan == [(0, 5, 0), (1, 6, 0)] and answer["executed"] is False
        assert committed() == [5, 6]
        assert reset({"to": {"shift_by": -2}})[0] == [(0, 5, 3), (1, 6, 4)]  # all its topics
        assert reset({"topic": "planned", "to": {"datetime": "2023-11-14T22:16:20Z"}})[0] == [
            (0, 5, 3), (1, 6, 3)]  # base is 22:13:20Z, record i is i minutes later
        assert reset({"topic": "planned", "to": {"shift_by": 100}})[0] == [
            (0, 5, 10), (1, 6, 10)]  # moved inside the log
        assert committed() == [5, 6]
        plan, answer = reset({"topic": "planned", "to": {"shift_by": -2}, "execute": True})
        assert answer["executed"] is True and committed() == [3, 4]
        reset({"to": "latest", "execute": True})
        assert committed() == [10, 10]
    finally:
        checker.close()


def test_brokers_report_reachable_and_a_stopped_one_within_a_poll(live, api):
    import time

    cluster, _ = live
    status, brokers = api("GET", "/api/brokers")
    assert status == 200
    assert [(b["id"], b["reachable"], b["registered"]) for b in brokers] == [
        (1, True, True), (2, True, True), (3, True, True)]
    assert [b["id"] for b in brokers if b["controller"]] == [cluster.controller_id()]
    victim = next(b for b in (1, 2, 3) if b != cluster.controller_id())
    cluster.kill(victim)
    try:
        stopped = time.monotonic()
        while True:
            overview = api("GET", "/api/overview")[1]
            state = {b["id"]: b["reachable"] for b in overview["brokers"]}
            if not state[victim]:
                break
            assert time.monotonic() - stopped < 3, overview["brokers"]
            time.sleep(0.2)
        assert state == {b: b != victim for b in (1, 2, 3)}
        # Gone from Metadata too once its session expires: still listed, unreachable.
        cluster.wait_for(lambda: victim not in {
            b["id"] for b in api("GET", "/api/brokers")[1] if b["registered"]},
            "the stopped broker to leave Metadata", timeout=30)
        listed = {b["id"]: b for b in api("GET", "/api/brokers")[1]}
        assert listed[victim]["reachable"] is False and listed[victim]["registered"] is False
    finally:
        cluster.restart(victim)
    cluster.wait_for(lambda: all(b["reachable"] for b in api("GET", "/api/brokers")[1]),
                     "the restarted broker to answer", timeout=30)


def test_acls_create_list_delete(api):
    binding = {"principal": "User:alice", "host": "*", "operation": "READ",
               "permission_type": "ALLOW", "resource_type": "TOPIC",
               "resource_name": "orders-", "pattern_type": "PREFIXED"}
    status, answer = api("POST", "/api/acls", binding)
    assert status == 201 and answer == {"created": [binding]}
    status, answer = api("POST", "/api/acls", {"principal": "User:bob", "operation": "WRITE",
                                               "resource_type": "TOPIC",
                                               "resource_name": "orders"})
    assert status == 201 and answer["created"][0]["pattern_type"] == "LITERAL"
    status, listed = api("GET", "/api/acls?principal=User:alice")
    assert status == 200 and listed == [binding]
    status, listed = api("GET", "/api/acls?resource_type=TOPIC&resource_name=orders-x"
                                "&pattern_type=MATCH")
    assert [b["principal"] for b in listed] == ["User:alice"]
    for body in [{**binding, "operation": "read"}, {**binding, "principal": "alice"},
                 {**binding, "resource_type": "ANY"}, {**binding, "pattern_type": "MATCH"},
                 {**binding, "colour": "red"}, {"principal": "User:x"}, ["x"]]:
        code, answer = api("POST", "/api/acls", body)
        assert code == 400, (body, answer)
    assert api("GET", "/api/acls?operation=SING")[0] == 400
    assert api("GET", "/api/acls?colour=red")[0] == 400
    assert api("DELETE", "/api/acls", {"operation": "nope"})[0] == 400
    status, answer = api("DELETE", "/api/acls", {"principal": "User:alice"})
    assert status == 200 and answer == {"deleted": [binding]}
    assert api("GET", "/api/acls?principal=User:alice")[1] == []
    assert api("DELETE", "/api/acls", {"principal": "User:bob"})[1]["deleted"][0][
        "operation"] == "WRITE"


def test_acls_without_an_authorizer_are_a_clear_400(tmp_path_factory):
    cluster = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("no-authorizer"),
                           metrics=False)
    cluster.start()
    try:
        with ConsoleProcess(cluster.bootstrap_servers) as console:
            status, answer = call(console.url, "POST", "/api/acls", {
                "principal": "User:a", "operation": "READ", "resource_type": "TOPIC",
                "resource_name": "t"})
            assert status == 400 and "SECURITY_DISABLED" in answer["error"], answer
    finally:
        cluster.stop()


def test_scram_users(api):
    status, answer = api("PUT", "/api/users/dana", {"mechanism": "SCRAM-SHA-512",
                                                    "password": "dana-secret",
                                                    "iterations": 8192})
    assert status == 200, answer
    api("PUT", "/api/users/dana", {"mechanism": "SCRAM-SHA-256", "password": "x"})
    status, users = api("GET", "/api/users")
    assert status == 200
    assert {"name": "dana", "mechanisms": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096},
                                           {"mechanism": "SCRAM-SHA-512",
                                            "iterations": 8192}]} in users
    for body in [{"mechanism": "SCRAM-SHA-1", "password": "x"},
                 {"mechanism": "SCRAM-SHA-256", "password": ""},
                 {"mechanism": "SCRAM-SHA-256", "password": "x", "iterations": 10},
                 {"mechanism": "SCRAM-SHA-256", "password": "x", "colour": 1}]:
        assert api("PUT", "/api/users/dana", body)[0] == 400, body
    assert api("DELETE", "/api/users/dana?mechanism=SCRAM-SHA-512") == (204, None)
    assert api("DELETE", "/api/users/dana?mechanism=SCRAM-SHA-512")[0] == 404
    assert api("DELETE", "/api/users/dana")[0] == 400
    assert api("DELETE", "/api/users/dana?mechanism=SCRAM-SHA-256") == (204, None)
    assert "dana" not in [u["name"] for u in api("GET", "/api/users")[1]]


def test_throughput_from_the_brokers_metrics(live, api):
    import time

    cluster, _ = live
    api("POST", "/api/topics", {"name": "charted", "partitions": 2, "replication_factor": 3})
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(200):
            producer.send("charted", f"value {i}".encode())
        producer.flush(30)
    consumer = Consumer("charted", bootstrap_servers=cluster.bootstrap_servers,
                        group_id="charted-readers", auto_offset_reset="earliest")
    try:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 200 and time.monotonic() < deadline:
            seen += len(consumer.poll(300))
    finally:
        consumer.close()
    assert seen == 200

    def rates():
        status, answer = api("GET", "/api/metrics/throughput")
        assert status == 200 and answer["interval_ms"] > 0
        points = answer["topics"].get("charted", [])
        return (sum(p["messages_in_per_s"] for p in points),
                sum(p["messages_out_per_s"] or 0 for p in points))

    cluster.wait_for(lambda: all(r > 0 for r in rates()), "messages in and out in the charts",
                     timeout=20)
