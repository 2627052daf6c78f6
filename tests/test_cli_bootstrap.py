"""The client commands find the cluster ``simplekafka cluster up`` started.

The bootstrap servers come from ``-b`` (before or after the command), else
``$SIMPLEKAFKA_BOOTSTRAP``, else the running cluster of
``./simplekafka-cluster/cluster.json`` (or ``--dir``), else ``localhost:9092``.
The first tests check that order without processes; the rest start ``cluster
up`` on ports someone else holds (so it falls back to free ones, and says so)
beside a second cluster, and drive it with topics, produce, consume and groups
without giving any address, leaving the second cluster untouched; then
``cluster status`` tells a degraded cluster and a stopped one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import simplekafka
from simplekafka.admin import Admin
from simplekafka.cli import CliError, build_parser
from simplekafka.cli.client_common import resolve_bootstrap
from simplekafka.cluster import LocalCluster, free_port

# -- the order, without processes ------------------------------------------------------


def _state(directory: Path, servers: str, status: str = "running",
           supervisor_pid: int | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cluster.json").write_text(json.dumps({
        "status": status, "bootstrap_servers": servers,
        "supervisor_pid": os.getpid() if supervisor_pid is None else supervisor_pid}))
    return directory


def _resolve(argv: list[str]) -> tuple[str, str]:
    parser = build_parser()
    args = parser.parse_args(argv)
    from simplekafka.cli import _bootstrap_before_command

    _bootstrap_before_command(parser, args)
    return resolve_bootstrap(args)


def test_the_order_of_the_sources(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMPLEKAFKA_BOOTSTRAP", raising=False)
    assert _resolve(["topics", "list"])[0] == "localhost:9092"
    _state(tmp_path / "simplekafka-cluster", "127.0.0.1:50001")
    servers, source = _resolve(["topics", "list"])
    assert servers == "127.0.0.1:50001" and "cluster.json" in source
    _state(tmp_path / "elsewhere", "127.0.0.1:50002")
    assert _resolve(["topics", "list", "--dir", "elsewhere"])[0] == "127.0.0.1:50002"
    monkeypatch.setenv("SIMPLEKAFKA_BOOTSTRAP", "127.0.0.1:50003")
    assert _resolve(["topics", "list"]) == ("127.0.0.1:50003", "$SIMPLEKAFKA_BOOTSTRAP")
    assert _resolve(["topics", "list", "-b", "127.0.0.1:50004"])[0] == "127.0.0.1:50004"
    assert _resolve(["-b", "127.0.0.1:50005", "produce", "t"])[0] == "127.0.0.1:50005"
    assert _resolve(["--bootstrap-server", "127.0.0.1:50006", "groups", "describe", "g"])[0] \
        == "127.0.0.1:50006"
    # After the command wins over before it, as the nearer one.
    assert _resolve(["-b", "127.0.0.1:1", "consume", "t", "-b", "127.0.0.1:2"])[0] \
        == "127.0.0.1:2"


def test_a_stopped_or_dead_cluster_is_not_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMPLEKAFKA_BOOTSTRAP", raising=False)
    _state(tmp_path / "simplekafka-cluster", "127.0.0.1:50001", status="stopped")
    assert _resolve(["topics", "list"])[0] == "localhost:9092"
    _state(tmp_path / "simplekafka-cluster", "127.0.0.1:50001", supervisor_pid=2 ** 22 + 7)
    servers, source = _resolve(["topics", "list"])
    assert servers == "localhost:9092" and "no running cluster" in source
    with pytest.raises(CliError, match="no running cluster recorded in"):
        _resolve(["topics", "list", "--dir", "simplekafka-cluster"])


def test_b_before_a_command_without_it_is_one_line(capsys):
    from simplekafka.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["-b", "127.0.0.1:9092", "cluster", "status"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "simplekafka: error: -b/--bootstrap-server does not apply to 'cluster' (see --help)"]


def test_cluster_up_asks_for_kafkas_ports():
    args = build_parser().parse_args(["cluster", "up"])
    assert (args.port, args.zookeeper_port) == (9092, 2181)
    assert isinstance(args, argparse.Namespace)


# -- against real clusters --------------------------------------------------------------

CHECKOUT = str(Path(simplekafka.__file__).resolve().parents[1])


def _run(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "SIMPLEKAFKA_BOOTSTRAP"}
    environment["PYTHONPATH"] = CHECKOUT
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "simplekafka", *args], cwd=cwd, input=stdin,
                          env=environment, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """The second cluster, on other ports: nothing may reach it."""
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("other")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    """``cluster up`` in WORK/simplekafka-cluster, asked for ports that are taken."""
    work = tmp_path_factory.mktemp("work")
    with socket.socket() as broker_port, socket.socket() as zookeeper_port:
        for sock in (broker_port, zookeeper_port):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        wanted = (broker_port.getsockname()[1], zookeeper_port.getsockname()[1])
        started = _run("cluster", "up", "--port", str(wanted[0]),
                       "--zookeeper-port", str(wanted[1]), cwd=work, timeout=180)
    state = json.loads((work / "simplekafka-cluster" / "cluster.json").read_text())
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield work, state, started.stdout, wanted
    finally:
        _run("cluster", "down", cwd=work, timeout=180)



@pytest.mark.integration
def test_up_says_which_ports_it_took_and_what_to_export(up):
    _, state, printed, (broker_port, zookeeper_port) = up
    servers = state["bootstrap_servers"]
    assert servers != f"127.0.0.1:{broker_port}"
    assert f"port {broker_port} is taken (another Kafka?): the brokers listen on {servers}" \
        in printed
    assert f"port {zookeeper_port} is taken (another ZooKeeper?)" in printed
    assert "client commands run in this directory find it in " \
           "./simplekafka-cluster/cluster.json" in printed
    assert f"\n  export SIMPLEKAFKA_BOOTSTRAP={servers}\n" in printed


@pytest.mark.integration
def test_client_commands_without_an_address_reach_that_cluster(up, other):
    work, state, _, _ = up
    created = _run("topics", "create", "found", "--partitions", "2", cwd=work)
    assert created.returncode == 0, created.stderr
    produced = _run("produce", "found", cwd=work, stdin="one\ntwo\nthree\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _run("consume", "found", "--group", "readers", "--from-beginning",
                    "--max-messages", "3", "--idle-timeout-ms", "20000",
                    "-f", "%t|%s\\n", cwd=work)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["found|one", "found|three", "found|two"]
    described = _run("groups", "describe", "readers", cwd=work)
    assert described.returncode == 0, described.stderr
    assert "readers" in described.stdout and "found" in described.stdout
    # The plan changes nothing; --execute commits it: both without an address.
    with Admin(state["bootstrap_servers"]) as admin:
        committed = admin.describe_group("readers").offsets
    planned = _run("groups", "reset-offsets", "readers", "--topic", "found", "--to-earliest",
                   cwd=work)
    assert planned.returncode == 0, planned.stderr
    with Admin(state["bootstrap_servers"]) as admin:
        assert admin.describe_group("readers").offsets == committed
    executed = _run("groups", "reset-offsets", "readers", "--topic", "found", "--to-earliest",
                    "--execute", cwd=work)
    assert executed.returncode == 0, executed.stderr
    with Admin(state["bootstrap_servers"]) as admin:
        assert {o.committed for o in admin.describe_group("readers").offsets.values()} == {0}
    with Admin(state["bootstrap_servers"]) as admin:
        assert "found" in admin.list_topics()
        assert "readers" in [group for group, _ in admin.list_groups()]
    with Admin(other.bootstrap_servers) as admin:
        assert "found" not in admin.list_topics()
        assert "readers" not in [group for group, _ in admin.list_groups()]


@pytest.mark.integration
def test_b_before_or_after_the_command_and_the_environment(up, other, tmp_path):
    work, state, _, _ = up
    servers = state["bootstrap_servers"]
    _run("topics", "create", "only-up", "--if-not-exists", cwd=work)
    with Admin(other.bootstrap_servers) as admin:
        admin.create_topic("only-other", 1, 1)
    for args in (["-b", servers, "topics", "list"], ["topics", "list", "-b", servers],
                 ["topics", "list", "--dir", str(work / "simplekafka-cluster")]):
        listed = _run(*args, cwd=tmp_path)  # not where the cluster runs
        assert listed.returncode == 0, listed.stderr
        assert "only-up" in listed.stdout.split() and "only-other" not in listed.stdout, args
    # The environment beats cluster.json, and -b beats the environment.
    env = {"SIMPLEKAFKA_BOOTSTRAP": other.bootstrap_servers}
    listed = _run("topics", "list", cwd=work, env=env)
    assert "only-other" in listed.stdout.split() and "only-up" not in listed.stdout
    listed = _run("-b", servers, "topics", "list", cwd=work, env=env)
    assert "only-up" in listed.stdout.split() and "only-other" not in listed.stdout


@pytest.mark.integration
def test_cannot_connect_says_where_the_address_came_from(tmp_path):
    nobody = f"127.0.0.1:{free_port()}"
    failed = _run("topics", "list", "--timeout-ms", "1000", cwd=tmp_path,
                  env={"SIMPLEKAFKA_BOOTSTRAP": nobody})
    assert failed.returncode == 1
    assert failed.stderr.count("\n") == 1, failed.stderr
    assert f"(bootstrap {nobody}, from $SIMPLEKAFKA_BOOTSTRAP)" in failed.stderr
    failed = _run("topics", "list", "--timeout-ms", "1000", cwd=tmp_path)
    assert failed.returncode == 1
    assert "(bootstrap localhost:9092, from the default: no -b, no $SIMPLEKAFKA_BOOTSTRAP, " \
           "no running cluster in ./simplekafka-cluster)" in failed.stderr


@pytest.mark.integration
def test_status_running_degraded_stopped(up):
    """Last in this module: it stops the cluster."""
    work, state, _, _ = up
    status = _run("cluster", "status", cwd=work)
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.startswith(f"cluster in {work / 'simplekafka-cluster'}: running\n")
    broker_pid = state["brokers"]["1"]["pid"]
    os.kill(broker_pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    status = _run("cluster", "status", cwd=work)
    assert status.returncode == 1
    first = status.stdout.splitlines()[0]
    assert first.endswith(": degraded (broker 1 not serving)"), status.stdout
    assert "broker 1: pid" in status.stdout and ": down" in status.stdout
    down = _run("cluster", "down", cwd=work, timeout=180)
    assert down.returncode == 0, down.stdout + down.stderr
    status = _run("cluster", "status", cwd=work)
    assert status.returncode == 1
    assert status.stdout.splitlines()[0].endswith(": stopped"), status.stdout
    assert "None" not in status.stdout
    # Stopped, its cluster.json no longer leads anywhere: the default is used.
    assert "from the default" in _run("topics", "list", "--timeout-ms", "500", cwd=work).stderr
