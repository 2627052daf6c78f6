"""LocalCluster and ``simplekafka cluster up|down|status``: the launcher everything else uses.

The first tests need no processes; the rest start a real ZooKeeper and real
broker processes, kill and restart them, and check the command line's manners.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from simplekafka.cluster import ClusterError, LocalCluster, free_port, probe_broker
from simplekafka.cluster.local import LOOPBACK

# -- without processes ---------------------------------------------------------------


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="positive"):
        LocalCluster(brokers=0, base_dir=tmp_path)
    with pytest.raises(ValueError, match="racks"):
        LocalCluster(brokers=2, base_dir=tmp_path, racks=["a"])


def test_identity_and_command_line(tmp_path):
    cluster = LocalCluster(brokers=3, base_dir=tmp_path, zookeeper="127.0.0.1:2181/sk",
                           broker_config={"num.partitions": 3}, racks=["a", "b", "c"])
    ports = cluster.broker_ports
    assert sorted(ports) == [1, 2, 3]
    assert len(set(ports.values())) == 3
    assert cluster.bootstrap_servers == ",".join(f"127.0.0.1:{ports[i]}" for i in (1, 2, 3))
    assert cluster.zookeeper_connect == "127.0.0.1:2181/sk"
    command = cluster.broker_command(cluster.brokers[2])
    assert command[1:4] == ["-m", "simplekafka", "broker"]
    joined = " ".join(command)
    assert "--broker-id 2" in joined and f"--port {ports[2]}" in joined
    assert "--zookeeper 127.0.0.1:2181/sk" in joined and "--rack b" in joined
    assert "--set num.partitions=3" in joined
    assert cluster.brokers[2].data_dir == tmp_path / "broker-2" / "data"
    assert cluster.brokers[2].log_file == tmp_path / "logs" / "broker-2.log"


def test_unknown_broker_id_is_a_clear_error(tmp_path):
    cluster = LocalCluster(brokers=1, base_dir=tmp_path, zookeeper="127.0.0.1:1")
    with pytest.raises(ClusterError, match="no broker 7"):
        cluster.kill(7)


def test_embedded_zookeeper_connect_needs_start(tmp_path):
    with pytest.raises(ClusterError, match="start"):
        _ = LocalCluster(base_dir=tmp_path).zookeeper_connect


def test_free_port_is_bindable():
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind((LOOPBACK, port))


# -- with real processes ---------------------------------------------------------------


@pytest.mark.integration
def test_kill_terminate_restart(tmp_path):
    config = {"zookeeper.session.timeout.ms": "6000"}
    with LocalCluster(brokers=1, base_dir=tmp_path, broker_config=config) as cluster:
        port = cluster.broker_ports[1]
        seen = probe_broker(LOOPBACK, port)
        assert seen.broker_ids == {1} and seen.controller_id == 1
        assert "listening on" in cluster.brokers[1].log_file.read_text()

        first_pid = cluster.broker_pids[1]
        cluster.kill(1)
        assert not cluster.brokers[1].is_running
        assert cluster.brokers[1].process.returncode == -signal.SIGKILL
        with pytest.raises(OSError):
            probe_broker(LOOPBACK, port, timeout=1)

        cluster.restart(1)
        assert cluster.broker_ports[1] == port and cluster.broker_pids[1] != first_pid
        assert probe_broker(LOOPBACK, port).broker_ids == {1}

        assert cluster.terminate(1) == 0, "SIGTERM should be a clean exit 0"
        cluster.restart(1)
        assert cluster.running_brokers() == [1]
        pids = [cluster.broker_pids[1], cluster.zookeeper_pid]
    assert all(not _alive(pid) for pid in pids), "stop() left processes behind"
    assert (tmp_path / "logs" / "broker-1.log").exists()


@pytest.mark.integration
def test_a_broker_that_cannot_start_is_reported_with_its_log(tmp_path):
    cluster = LocalCluster(brokers=1, base_dir=tmp_path,
                           broker_config={"no.such.setting": "1"}, start_timeout=60)
    started = time.monotonic()
    with pytest.raises(ClusterError, match="exited") as raised:
        cluster.start()
    assert time.monotonic() - started < 60
    assert "no.such.setting" in str(raised.value), "the log tail should say what was wrong"
    assert cluster.running_brokers() == []
    assert cluster.zookeeper_pid is None


@pytest.mark.integration
def test_a_port_taken_before_the_first_start_is_replaced(tmp_path):
    """free_port() releases the port before the broker binds it; someone may take it."""
    import socket

    cluster = LocalCluster(brokers=1, base_dir=tmp_path)
    taken = cluster.broker_ports[1]
    with socket.socket() as squatter:
        squatter.bind((LOOPBACK, taken))
        squatter.listen()
        with cluster:
            assert cluster.broker_ports[1] != taken
            assert probe_broker(LOOPBACK, cluster.broker_ports[1]).broker_ids == {1}
            assert cluster.bootstrap_servers == f"127.0.0.1:{cluster.broker_ports[1]}"


@pytest.mark.integration
def test_two_clusters_share_an_external_zookeeper_by_chroot(zookeeper, tmp_path):
    """With ``zookeeper=`` no embedded server is started; chroots keep the clusters apart."""
    from kazoo.client import KazooClient

    first = LocalCluster(base_dir=tmp_path / "a", zookeeper=zookeeper.connect_string + "/lc-a")
    second = LocalCluster(base_dir=tmp_path / "b", zookeeper=zookeeper.connect_string + "/lc-b")
    with first, second:
        assert first.zookeeper_pid is None and first.zookeeper_connect.endswith("/lc-a")
        for cluster in (first, second):
            assert probe_broker(LOOPBACK, cluster.broker_ports[1]).broker_ids == {1}
        client = KazooClient(hosts=zookeeper.connect_string)
        client.start(timeout=15)
        try:
            assert client.get_children("/lc-a/brokers/ids") == ["1"]
            assert client.get_children("/lc-b/brokers/ids") == ["1"]
        finally:
            client.stop()
            client.close()
    assert zookeeper.is_running, "stopping a cluster must not stop an external ZooKeeper"


@pytest.mark.integration
@pytest.mark.slow
def test_two_brokers_with_racks_see_each_other(tmp_path):
    with LocalCluster(brokers=2, base_dir=tmp_path, racks=["r1", "r2"]) as cluster:
        for broker_id in (1, 2):
            seen = probe_broker(LOOPBACK, cluster.broker_ports[broker_id])
            assert seen.broker_ids == {1, 2}
            assert seen.controller_id in (1, 2)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# Free ports, not 9092 and 2181: tests run beside other clusters.
ANY_PORTS = ("--port", "0", "--zookeeper-port", "0")


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "cluster", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.integration
def test_cli_up_status_down(tmp_path):
    directory = tmp_path / "c"
    up = _cli("up", "--brokers", "1", "--dir", str(directory), *ANY_PORTS)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = json.loads((directory / "cluster.json").read_text())
        assert state["status"] == "running"
        broker = state["brokers"]["1"]
        assert state["bootstrap_servers"] == f"127.0.0.1:{broker['port']}"
        assert state["bootstrap_servers"] in up.stdout
        assert _alive(broker["pid"]) and _alive(state["zookeeper_pid"])

        status = _cli("status", "--dir", str(directory))
        assert status.returncode == 0, status.stdout + status.stderr
        assert "serving" in status.stdout

        again = _cli("up", "--dir", str(directory))
        assert again.returncode == 2 and "already runs" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1
    finally:
        down = _cli("down", "--dir", str(directory))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not _alive(broker["pid"]) and not _alive(state["zookeeper_pid"])
    assert not _alive(state["supervisor_pid"])
    status = _cli("status", "--dir", str(directory))
    assert status.returncode == 1 and "stopped" in status.stdout
    assert "None" not in status.stdout


@pytest.mark.integration
def test_cli_down_cleans_up_after_a_killed_supervisor(tmp_path):
    directory = tmp_path / "c"
    up = _cli("up", "--brokers", "1", "--dir", str(directory), *ANY_PORTS)
    assert up.returncode == 0, up.stdout + up.stderr
    state = json.loads((directory / "cluster.json").read_text())
    os.kill(state["supervisor_pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(state["supervisor_pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    broker_pid = state["brokers"]["1"]["pid"]
    assert _alive(broker_pid), "the broker should outlive its supervisor (own session)"
    down = _cli("down", "--dir", str(directory))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "left behind" in down.stdout
    assert not _alive(broker_pid) and not _alive(state["zookeeper_pid"])


@pytest.mark.integration
@pytest.mark.parametrize("args", [
    ["up", "--brokers", "0"],
    ["up", "--brokers", "many"],
    ["up", "--set", "novalue"],
    ["status", "--dir", "/nonexistent/simplekafka"],
    ["down", "--dir", "/nonexistent/simplekafka"],
    ["sideways"],
])
def test_cli_mistakes_are_one_line_and_exit_2(args, tmp_path):
    if args[0] == "up" and "--dir" not in args:
        args = [*args, "--dir", str(tmp_path)]
    result = _cli(*args, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
