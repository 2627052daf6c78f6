"""``simplekafka reassign --generate`` on a real three-broker cluster: Kafka's output
(current, then proposed, as reassignment JSON), the plan written to --output, and
one-line errors for bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.reassignment import plan_reassignment, replicas_moved

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("reassign"))
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
