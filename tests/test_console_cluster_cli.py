"""``simplekafka cluster up --console``: the console starts and stops with the cluster,
and ``cluster status`` prints every broker's metrics and health URLs and the console's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest

from simplekafka.cluster import free_port

pytestmark = pytest.mark.integration


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "cluster", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_cluster_up_with_console_and_status_urls(tmp_path):
    directory = tmp_path / "c"
    port = free_port()
    up = _cli("up", "--brokers", "2", "--console", "--console-port", str(port),
              "--dir", str(directory), "--port", "0", "--zookeeper-port", "0")
    state = json.loads((directory / "cluster.json").read_text())
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        url = f"http://127.0.0.1:{port}/"
        assert state["console_url"] == url and url in up.stdout
        with urllib.request.urlopen(url + "api/cluster", timeout=30) as answer:
            assert [b["id"] for b in json.loads(answer.read())["brokers"]] == [1, 2]
        status = _cli("status", "--dir", str(directory))
        assert status.returncode == 0, status.stdout + status.stderr
        for broker in state["brokers"].values():
            metrics_url = broker["metrics_url"]
            assert metrics_url in status.stdout
            assert metrics_url.replace("/metrics", "/health") in status.stdout
            with urllib.request.urlopen(metrics_url, timeout=30) as answer:
                assert b"kafka_controller_kafkacontroller_activecontrollercount" in answer.read()
        assert f"console: {url}" in status.stdout
    finally:
        down = _cli("down", "--dir", str(directory))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not _alive(state["console_pid"])
