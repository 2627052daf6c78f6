"""Fault injection on real broker processes: kill, pause/resume, ZooKeeper session expiry."""

from __future__ import annotations

import os

import pytest

from simplekafka.cluster.faults import SEED_ENV, Faults, seed_from_env
from stages.stage7_cluster.system import running_cluster

pytestmark = pytest.mark.integration  # starts real processes


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("faults"), brokers=2) as (cluster, _faults):
        yield cluster


def test_seed_comes_from_the_environment(monkeypatch, capsys, two_brokers):
    monkeypatch.setenv(SEED_ENV, "1234")
    faults = Faults(two_brokers)
    assert faults.seed == 1234
    assert f"{SEED_ENV}=1234" in capsys.readouterr().out
    replay = Faults(two_brokers, announce=False)
    assert [faults.pick() for _ in range(10)] == [replay.pick() for _ in range(10)]
    monkeypatch.setenv(SEED_ENV, "not a number")
    with pytest.raises(ValueError, match=SEED_ENV):
        seed_from_env()


def test_expired_session_drops_the_znode_and_the_broker_registers_again(two_brokers):
    faults = Faults(two_brokers, announce=False)
    registered = two_brokers.zk.exists("/brokers/ids/2")
    assert registered is not None
    faults.expire_session(2)
    # The broker must notice, start a new session and register again (a newer czxid).
    two_brokers.wait_for(
        lambda: (stat := two_brokers.zk.exists("/brokers/ids/2")) is not None
        and stat.czxid > registered.czxid,
        "broker 2 to register again with a new session", timeout=60)
    two_brokers.wait_until_serving([1, 2])


def test_pause_and_resume_a_broker(two_brokers):
    faults = Faults(two_brokers, announce=False)
    faults.pause(2)
    try:
        with open(f"/proc/{two_brokers.brokers[2].pid}/stat") as stat:
            assert stat.read().rsplit(")", 1)[1].split()[0] == "T"  # stopped
    finally:
        faults.heal()
    two_brokers.wait_until_serving([1, 2])
    assert [f.action for f in faults.history] == ["pause", "resume"]


def test_hard_bounce_waits_for_the_znode_to_vanish(two_brokers):
    faults = Faults(two_brokers, announce=False)
    old_pid = two_brokers.brokers[2].pid
    faults.hard_bounce(2)
    assert two_brokers.brokers[2].pid != old_pid
    assert 2 in two_brokers.registered_brokers()
    assert two_brokers.controller_id() in (1, 2)
    assert [f.action for f in faults.history] == ["kill", "restart"]
    assert os.path.exists(two_brokers.session_file(2))
