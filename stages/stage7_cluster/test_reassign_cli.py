"""``simplekafka reassign --generate`` on a real three-broker cluster: Kafka's output
(current, then proposed, as reassignment JSON), the plan written to --output, and
one-line errors for bad arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.reassignment import plan_reassignment, replicas_moved

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    # Small follower fetches, so that a throttled copy proceeds in even steps.
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("reassign"),
                         broker_config={"replica.fetch.max.bytes": "65536"})
    local.start()
    try:
        with Admin(local.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("moving", 6, 2), NewTopic("staying", 2, 2)])
        yield local
    finally:
        local.stop()


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "reassign", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_generate_prints_current_and_proposed_and_writes_the_plan(three, tmp_path):
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "moving"}], "version": 1}))
    plan_file = tmp_path / "plan.json"
    done = run("--bootstrap-server", three.bootstrap_servers, "--generate",
               "--topics-to-move-json-file", str(topics), "--broker-list", "1,2",
               "--output", str(plan_file))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    current_doc, proposed_doc = json.loads(lines[1]), json.loads(lines[4])
    assert json.loads(plan_file.read_text()) == proposed_doc
    assert current_doc["version"] == proposed_doc["version"] == 1
    current = {("moving", p["partition"]): p["replicas"] for p in current_doc["partitions"]}
    proposed = {("moving", p["partition"]): p["replicas"] for p in proposed_doc["partitions"]}
    assert sorted(current) == [("moving", p) for p in range(6)]
    for partition in current:
        assert current[partition] == list(three.replicas_of(*partition))
    assert all(p["log_dirs"] == ["any", "any"] for p in proposed_doc["partitions"])
    assert proposed == plan_reassignment(current, [1, 2])
    assert all(sorted(replicas) == [1, 2] for replicas in proposed.values())
    # Only the replicas broker 3 held move.
    assert replicas_moved(current, proposed) == sum(3 in rs for rs in current.values())


@pytest.mark.parametrize("args, message", [
    (["--generate", "--broker-list", "1,2"], "needs --topics-to-move-json-file"),
    (["--generate", "--broker-list", "1,x", "--topics-to-move-json-file", "T"], "1,2,4"),
    (["--generate", "--broker-list", "1,1", "--topics-to-move-json-file", "T"], "twice"),
    (["--generate", "--broker-list", "1,2,9", "--topics-to-move-json-file", "T"],
     "brokers [9] are not in the cluster"),
    (["--generate", "--broker-list", "1", "--topics-to-move-json-file", "T"],
     "replication factor 2"),
    (["--generate", "--broker-list", "1,2", "--topics-to-move-json-file", "BAD"], "not JSON"),
    (["--generate", "--broker-list", "1,2", "--topics-to-move-json-file", "NONE"],
     "No such file"),
    (["--generate", "--broker-list", "1,2", "--topics-to-move-json-file", "GONE"],
     "['gone'] do not exist"),
    (["--execute", "--reassignment-json-file", "GONEPLAN"], "['gone'] do not exist"),
    (["--execute", "--reassignment-json-file", "T"], "expected {\"version\": 1"),
    (["--verify"], "need --reassignment-json-file"),
    (["--cancel"], "need --reassignment-json-file"),
    (["--broker-list", "1"], "one of the arguments"),
    (["--execute", "--reassignment-json-file", "PLAN", "--throttle", "fast"],
     "--throttle expects a positive number"),
])
def test_bad_arguments_are_one_line(three, tmp_path, args, message):
    files = {"T": {"topics": [{"topic": "moving"}], "version": 1},
             "GONEPLAN": {"version": 1, "partitions": [
                 {"topic": "gone", "partition": 0, "replicas": [1, 2]}]},
             "PLAN": {"version": 1, "partitions": [
                 {"topic": "moving", "partition": 0, "replicas": [1, 2]}]},
             "GONE": {"topics": [{"topic": "gone"}], "version": 1}}
    for name, document in files.items():
        (tmp_path / name).write_text(json.dumps(document))
    (tmp_path / "BAD").write_text("{not json")
    named = ("T", "BAD", "NONE", "GONE", "PLAN", "GONEPLAN")
    args = [str(tmp_path / a) if a in named else a for a in args]
    done = run("--bootstrap-server", three.bootstrap_servers, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_throttled_move_is_rate_limited_and_verify_removes_the_throttle(three, tmp_path):
    """2 MB moved at 150 kB/s takes over 12 s; without the throttle it takes about one."""
    from confluent_kafka import Producer

    from simplekafka.coordination.throttles import FOLLOWER_REPLICAS, LEADER_REPLICAS
    from tests.test_broker_metrics import scrape, value

    topic, rate, size = "throttled", 150_000, 2_000_000
    with Admin(three.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    three.wait_for(lambda: three.replicas_of(topic, 0), "the topic's assignment")
    (source,) = three.replicas_of(topic, 0)
    target = next(b for b in (1, 2, 3) if b != source)
    three.wait_for_isr(topic, 0, [source])
    producer = Producer({"bootstrap.servers": three.bootstrap_servers, "acks": "all",
                         "linger.ms": 20})
    for _ in range(size // 10_000):
        producer.produce(topic, os.urandom(10_000), partition=0)  # incompressible
    assert producer.flush(60) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [target]}]}))

    started = time.monotonic()
    done = run("--bootstrap-server", three.bootstrap_servers, "--execute",
               "--reassignment-json-file", str(plan), "--throttle", str(rate))
    assert done.returncode == 0, done.stderr
    assert f"The inter-broker throttle limit was set to {rate} B/s" in done.stdout
    with Admin(three.bootstrap_servers) as admin:
        configs = admin.describe_configs("topic", topic)
        assert configs[LEADER_REPLICAS].value == f"0:{source}"
        assert configs[FOLLOWER_REPLICAS].value == f"0:{target}"
        for broker in (source, target):  # each broker applies its change when notified
            three.wait_for(lambda b=broker: rates_of(admin, b) == (str(rate), str(rate)),
                           f"broker {broker} to apply the rates")
    still = run("--bootstrap-server", three.bootstrap_servers, "--verify",
                "--reassignment-json-file", str(plan))
    assert still.returncode == 1, still.stdout + still.stderr
    assert "is still in progress" in still.stdout and "Clearing" not in still.stdout

    three.wait_for(lambda: three.replicas_of(topic, 0) == (target,), "the move", timeout=180)
    elapsed = time.monotonic() - started
    # Both sides counted the copy against their quota (the broker metrics).
    for broker, side in ((source, "leader"), (target, "follower")):
        counted = value(scrape(three.metrics_urls[broker]),
                        "kafka_server_replication_throttledbytes_total", side=side)
        assert counted >= size, f"broker {broker} counted {counted} throttled bytes"
    # At the rate, after the quota's first second: (size - rate) / rate = 12.3 s. A
    # slower machine only makes it longer; an unthrottled copy takes a second or two.
    assert elapsed >= 7.0, f"moved {size} bytes in {elapsed:.1f} s: not throttled"

    # The brokers' metadata follows ZooKeeper a moment later: --verify until it says done.
    runs: list[subprocess.CompletedProcess] = []
    three.wait_for(lambda: runs.append(run("--bootstrap-server", three.bootstrap_servers,
                                           "--verify", "--reassignment-json-file", str(plan)))
                   or runs[-1].returncode != 1, "--verify to say done", timeout=60)
    done = runs[-1]
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Reassignment of partition {topic}-0 is completed." in done.stdout
    assert "Clearing broker-level throttles on brokers 1,2,3" in done.stdout
    with Admin(three.bootstrap_servers) as admin:
        configs = admin.describe_configs("topic", topic)
        assert configs[LEADER_REPLICAS].value == configs[FOLLOWER_REPLICAS].value == ""
        unlimited = str(2**63 - 1)
        for broker in (1, 2, 3):
            three.wait_for(lambda b=broker: rates_of(admin, b) == (unlimited, unlimited),
                           f"broker {broker} to drop the rates")
        # Bad throttle values are refused, with what is wrong, and nothing is written.
        from simplekafka.coordination.throttles import LEADER_RATE
        from simplekafka.protocol.errors import ErrorCode, KafkaError

        # as Kafka answers: a bad broker value INVALID_REQUEST, a bad topic value INVALID_CONFIG
        for kind, name, key, bad, code in (
                ("broker", "1", LEADER_RATE, "0", ErrorCode.INVALID_REQUEST),
                ("topic", topic, LEADER_REPLICAS, "0:x", ErrorCode.INVALID_CONFIG)):
            with pytest.raises(KafkaError, match=key) as refused:
                admin.alter_configs(kind, name, {key: bad})
            assert refused.value.error_code == code
        assert admin.describe_configs("topic", topic)[LEADER_REPLICAS].value == ""


def rates_of(admin: Admin, broker: int) -> tuple[str | None, str | None]:
    from simplekafka.coordination.throttles import FOLLOWER_RATE, LEADER_RATE

    configs = admin.describe_configs("broker", str(broker))
    return configs[LEADER_RATE].value, configs[FOLLOWER_RATE].value
