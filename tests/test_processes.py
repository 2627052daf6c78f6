"""The one free_port, pid_alive and wait_until shared by ZooKeeper, LocalCluster and the CLI."""

from __future__ import annotations

import os
import socket

import pytest

from simplekafka.cluster.local import free_port as cluster_free_port
from simplekafka.coordination import zookeeper_server
from simplekafka.coordination.processes import LOOPBACK, free_port, pid_alive, wait_until


def test_one_of_each_helper():
    assert cluster_free_port is free_port and zookeeper_server.pid_alive is pid_alive


def test_free_port_can_be_bound_at_once():
    with socket.socket() as sock:
        sock.bind((LOOPBACK, free_port()))


def test_pid_alive():
    assert pid_alive(os.getpid())
    assert not pid_alive(None) and not pid_alive(0)
    assert not pid_alive(2**22 + 12345)  # above any pid_max


def test_wait_until_returns_the_first_true_value_or_raises_the_given_error():
    answers = iter([0, None, "ready"])
    assert wait_until(lambda: next(answers), "ready", timeout=5, interval=0) == "ready"
    with pytest.raises(TimeoutError, match="waiting for nothing"):
        wait_until(lambda: False, "nothing", timeout=0.05, interval=0.01)

    class Refused(Exception):
        pass

    with pytest.raises(Refused, match=r"timed out after 0\.05 s"):
        wait_until(lambda: False, "x", timeout=0.05, interval=0.01, error=Refused)
