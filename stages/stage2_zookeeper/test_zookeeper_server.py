"""The embedded ZooKeeper, ``simplekafka zk`` and ``connect_zookeeper``, for real."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simplekafka.coordination import (
    EmbeddedZooKeeper,
    ZooKeeperConnectError,
    ZooKeeperLaunchError,
    connect_zookeeper,
    parse_connect_string,
)
from simplekafka.coordination.zookeeper_server import (
    four_letter_word,
    pid_alive,
    read_pid_file,
)

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def simplekafka_cli(*args: str, env: dict | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "simplekafka", *args], capture_output=True, text=True,
        timeout=timeout, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_the_session_zookeeper_answers_and_logs_to_a_file(zookeeper):
    assert zookeeper.is_running
    assert four_letter_word(zookeeper.host, zookeeper.port, "ruok") == "imok"
    assert "Mode: standalone" in four_letter_word(zookeeper.host, zookeeper.port, "srvr")
    assert zookeeper.log_file.exists()  # the log4j2 configuration from zk/ is in effect
    assert "ZooKeeper" in zookeeper.log_file.read_text()
    assert read_pid_file(zookeeper.data_dir) == (zookeeper.pid, zookeeper.port)


def test_embedded_zookeeper_stops_and_forgets_its_pid(tmp_path):
    server = EmbeddedZooKeeper(data_dir=tmp_path)
    with server:
        pid = server.pid
        assert server.is_running and pid_alive(pid)
    assert not server.is_running
    assert not pid_alive(pid)
    assert read_pid_file(tmp_path) is None


def test_a_taken_port_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ZooKeeperLaunchError, match=f"port {port} .* already in use"):
            EmbeddedZooKeeper(port=port, data_dir=tmp_path).start()
        result = simplekafka_cli("zk", "start", "--port", str(port),
                                 "--data-dir", str(tmp_path / "cli"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    assert "already in use" in result.stderr


def test_missing_java_is_a_clear_error(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty), "JAVA_HOME": ""}
    result = simplekafka_cli("zk", "start", "--port", "2181", "--data-dir", str(tmp_path),
                             env=env)
    assert result.returncode == 2
    assert "Java is not installed" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_start_status_tree_stop(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data_dir = str(tmp_path / "zk")
    started = simplekafka_cli("zk", "start", "--port", str(port), "--data-dir", data_dir)
    try:
        assert started.returncode == 0, started.stderr
        assert f"127.0.0.1:{port}" in started.stdout
        pid, recorded_port = read_pid_file(Path(data_dir))
        assert recorded_port == port and pid_alive(pid)
        status = simplekafka_cli("zk", "status", "--data-dir", data_dir)
        assert status.returncode == 0 and "standalone" in status.stdout
        again = simplekafka_cli("zk", "start", "--port", str(port), "--data-dir", data_dir)
        assert again.returncode == 2 and "already runs" in again.stderr
        tree = simplekafka_cli("zk", "tree", "--zookeeper", f"127.0.0.1:{port}/made/here")
        assert tree.returncode == 0, tree.stderr
        assert "made" in simplekafka_cli("zk", "tree", "--zookeeper",
                                         f"127.0.0.1:{port}").stdout
    finally:
        stopped = simplekafka_cli("zk", "stop", "--data-dir", data_dir)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(pid)
    status = simplekafka_cli("zk", "status", "--data-dir", data_dir)
    assert status.returncode == 1 and "not running" in status.stdout


def test_connect_creates_the_chroot(zookeeper, zk_connect):
    client = connect_zookeeper(zk_connect + "/deeper/still", timeout=10, session_timeout=4)
    try:
        client.create("/hello", b"world")
    finally:
        client.stop()
        client.close()
    root = connect_zookeeper(zookeeper.connect_string, timeout=10)
    try:
        chroot = zk_connect[len(zookeeper.connect_string):]
        assert root.get(f"{chroot}/deeper/still/hello")[0] == b"world"
    finally:
        root.stop()
        root.close()


@pytest.mark.parametrize(("connect", "message"), [
    ("", "empty"), ("localhost", "bad ZooKeeper address"), ("h:0", "bad ZooKeeper address"),
    ("h:99999", "bad ZooKeeper address"), ("h:1,:2", "bad ZooKeeper address"),
    ("h:1/bad chroot", "bad chroot"),
])
def test_bad_connect_strings(connect, message):
    with pytest.raises(ZooKeeperConnectError, match=message):
        parse_connect_string(connect)


def test_connect_string_parts():
    assert parse_connect_string("a:1,b:2/x/y") == ("a:1,b:2", "/x/y")
    assert parse_connect_string("a:1/") == ("a:1", None)
    assert parse_connect_string("a:1") == ("a:1", None)


def test_nothing_listening_is_a_clear_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ZooKeeperConnectError, match="could not reach ZooKeeper"):
        connect_zookeeper(f"127.0.0.1:{port}", timeout=1.5)


def test_the_client_waits_with_poll_not_a_new_selector_per_wait(zookeeper, zk_connect,
                                                                monkeypatch):
    """kazoo's own select builds a selector (an epoll instance) for each of the three or
    four waits per request: 40 % of the CPU of 10,000 pipelined reads. The client of
    connect_zookeeper polls instead: 200 pipelined reads build no selector at all."""
    import selectors

    built = []

    class Counted(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            built.append(self)
            super().__init__()

    client = connect_zookeeper(zk_connect, timeout=10, session_timeout=4)
    try:
        client.create("/polled", b"x" * 100)
        monkeypatch.setattr(selectors, "DefaultSelector", Counted)
        answers = [client.get_async("/polled") for _ in range(200)]
        assert {answer.get(timeout=10)[0] for answer in answers} == {b"x" * 100}
        assert built == []
    finally:
        monkeypatch.undo()
        client.stop()
        client.close()


def test_the_polling_handler_reports_what_select_would():
    import socket as sockets

    from simplekafka.coordination.connection import PollingHandler

    handler = PollingHandler()
    ours, theirs = sockets.socketpair()
    try:
        assert handler.select([ours], [], [], 0) == ([], [], [])  # nothing to read yet
        assert handler.select([ours], [ours], [], 0) == ([], [ours], [])
        theirs.send(b"!")
        assert handler.select([ours, ours.fileno()], [], [], 1.0) == ([ours, ours.fileno()],
                                                                       [], [])
        started = time.monotonic()
        assert handler.select([theirs], [], [], 0.05) == ([], [], [])
        assert time.monotonic() - started >= 0.04
        theirs.close()  # a hang-up reads as readable, as select says
        assert handler.select([ours], [], [], 1.0)[0] == [ours]
    finally:
        ours.close()
