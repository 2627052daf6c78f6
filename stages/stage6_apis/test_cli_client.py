"""``simplekafka topics|produce|consume`` against a real broker, and their manners."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from simplekafka.cluster.local import free_port

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
