"""``simplekafka topics|produce|consume`` against a real broker, and their manners."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from simplekafka.cluster.local import free_port
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


def run(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simplekafka", *args], input=stdin, capture_output=True,
        text=True, timeout=timeout, check=False,
    )


def test_topics_produce_consume_round_trip(cluster):
    b = cluster.bootstrap_servers
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    created = run("topics", "create", topic, "--partitions", "2", "--bootstrap-server", b)
    assert created.returncode == 0, created.stderr
    assert topic in run("topics", "list", "-b", b).stdout.split()
    described = run("topics", "describe", topic, "-b", b)
    assert "PartitionCount: 2" in described.stdout and "Leader: 1" in described.stdout

    lines = [f"key{i % 3}:value {i}" for i in range(20)]
    produced = run("produce", topic, "--key-separator", ":", "-b", b, stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr

    consumed = run("consume", topic, "--from-beginning", "--max-messages", "20", "--print-key",
                   "--key-separator", ":", "-b", b)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.splitlines()) == sorted(lines)
    assert "Processed a total of 20 messages" in consumed.stderr

    one = run("consume", topic, "--partition", "0", "--offset", "1", "--max-messages", "1",
              "--print-offset", "-b", b)
    assert one.stdout.startswith("0:1\t")

    deleted = run("topics", "delete", topic, "-b", b)
    assert deleted.returncode == 0, deleted.stderr
    assert topic not in run("topics", "list", "-b", b).stdout.split()


@pytest.mark.parametrize(
    "args",
    [
        ["topics", "create", "t", "--partitions", "0"],
        ["consume", "t", "--offset", "5"],  # --offset needs --partition
        ["consume", "t", "--partition", "0", "--offset", "soon"],
        ["produce", "t", "--acks", "2"],
        ["topics", "create", "t", "--config", "novalue"],
        ["topics", "list", "--bootstrap-server", "host:notaport"],
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args):
    if "--bootstrap-server" not in args:
        args = [*args, "-b", "127.0.0.1:1"]
    result = run(*args)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["topics", "list"], ["produce", "t"], ["consume", "t"]])
def test_an_unreachable_broker_is_one_line_and_a_non_zero_exit(command):
    result = run(*command, "-b", f"127.0.0.1:{free_port()}", "--timeout-ms", "1500",
                 stdin="x\n", timeout=30)
    assert result.returncode == 1, result.stderr
    assert "NoBrokersAvailableError" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_topic_is_one_line(cluster):
    result = run("consume", "missing-topic", "-b", cluster.bootstrap_servers,
                 "--timeout-ms", "1500")
    assert result.returncode == 1
    assert "UnknownTopicOrPartitionError" in result.stderr


def test_produce_stops_at_a_bad_line_and_says_how_many_were_sent(cluster):
    b = cluster.bootstrap_servers
    topic = f"bad-{uuid.uuid4().hex[:8]}"
    assert run("topics", "create", topic, "-b", b).returncode == 0
    lines = ["k1:a", "k2:b", "k3:c", "k4:d", "no separator here", "k5:e"]
    failed = run("produce", topic, "--key-separator", ":", "-b", b,
                 stdin="\n".join(lines) + "\n")
    assert failed.returncode == 2, failed.stderr
    [message] = failed.stderr.strip().splitlines()
    assert "line 5 has no key separator ':'" in message and "sent 4, failed 0" in message
    assert "Traceback" not in failed.stderr

    skipped = run("produce", topic, "--key-separator", ":", "--on-bad-line", "skip", "-b", b,
                  stdin="\n".join([*lines, "also bad", "k6:f"]) + "\n")
    assert skipped.returncode == 0, skipped.stderr
    warnings = [line for line in skipped.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2 and "line 5" in warnings[0] and "line 7" in warnings[1]
    assert skipped.stderr.strip().splitlines()[-1] == "sent 6, failed 0"

    consumed = run("consume", topic, "--from-beginning", "-c", "10", "--idle-timeout-ms",
                   "2000", "-f", "%k=%s\\n", "-b", b)
    assert consumed.stdout.splitlines() == [
        "k1=a", "k2=b", "k3=c", "k4=d",  # the first run stopped at line 5
        "k1=a", "k2=b", "k3=c", "k4=d", "k5=e", "k6=f"]


def test_produce_to_a_new_topic_lets_the_broker_create_it(cluster):
    """As any Kafka producer: Metadata names the topic with allow_auto_topic_creation, so
    the broker (auto.create.topics.enable=true by default) creates it; no 10 s wait."""
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    produced = run("produce", topic, "-b", cluster.bootstrap_servers, stdin="hello\n")
    took = time.monotonic() - started
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr.strip() == "sent 1, failed 0"
    assert took < 8, f"producing to a new topic took {took:.1f} s"
    consumed = run("consume", topic, "--from-beginning", "-c", "1", "-f", "%t %p %o %s\\n",
                   "-b", cluster.bootstrap_servers)
    assert consumed.stdout == f"{topic} 0 0 hello\n"


def test_consume_prints_kcat_formats_and_json(cluster):
    """-f with kcat's tokens and -J with kcat's fields; byte for byte kcat's own output."""
    b = cluster.bootstrap_servers
    topic = f"fmt-{uuid.uuid4().hex[:8]}"
    assert run("topics", "create", topic, "-b", b).returncode == 0
    with Producer(b) as producer:
        producer.send(topic, b"v0", key=b"k0", timestamp=1_700_000_000_000)
        producer.send(topic, b"v1", headers=[("h", b"x"), ("empty", b""), ("none", None)],
                      timestamp=1_700_000_000_001)
        producer.send(topic, None, key=b"gone", timestamp=1_700_000_000_002)  # a tombstone
        producer.flush(10)
    fmt = "%t|%p|%o|%k|%s|%T|%h|%S|%K|%%\\t.\\n"
    formatted = run("consume", topic, "--from-beginning", "-c", "3", "-f", fmt, "-b", b)
    assert formatted.returncode == 0, formatted.stderr
    assert formatted.stdout.splitlines() == [
        f"{topic}|0|0|k0|v0|1700000000000||2|2|%\t.",
        f"{topic}|0|1||v1|1700000000001|h=x,empty=,none=NULL|2|-1|%\t.",
        f"{topic}|0|2|gone||1700000000002||-1|4|%\t.",
    ]
    as_json = run("consume", topic, "--from-beginning", "-c", "3", "-J", "-b", b)
    assert as_json.returncode == 0, as_json.stderr
    docs = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert docs[0] == {"topic": topic, "partition": 0, "offset": 0, "tstype": "create",
                       "ts": 1_700_000_000_000, "broker": 1, "key": "k0", "payload": "v0"}
    assert docs[1]["headers"] == ["h", "x", "empty", "", "none", None]
    assert docs[1]["key"] is None and docs[2]["payload"] is None
    bad = run("consume", topic, "-f", "%q", "-b", b)
    assert bad.returncode == 2 and "%q" in bad.stderr

    # kcat itself is the oracle; ./run_tests.sh installs it (tools/bootstrap.sh)
    assert shutil.which("kcat"), "kcat is not installed: run ./run_tests.sh, which installs it"
    for ours, kcat_args in [(formatted.stdout, ["-f", fmt]), (as_json.stdout, ["-J"])]:
        theirs = subprocess.run(["kcat", "-C", "-b", b, "-t", topic, "-o", "beginning", "-e",
                                 "-q", *kcat_args], capture_output=True, text=True,
                                timeout=60, check=False)
        assert theirs.returncode == 0, theirs.stderr
        assert ours == theirs.stdout
