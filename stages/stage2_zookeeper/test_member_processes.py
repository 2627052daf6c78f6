"""Three member PROCESSES and a real ZooKeeper: election, SIGKILL of the controller,
failover within the session timeout with epoch + 1, and leaders moved off the dead broker."""

from __future__ import annotations

import time

import pytest

from simplekafka.coordination import (
    ZkPaths,
    create_topic,
    read_controller,
    read_controller_epoch,
    read_partition_state,
)
from simplekafka.coordination.processes import wait_until
from stages.stage2_zookeeper.member import MemberProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION = 2.0


def wait_for(predicate, timeout: float = 30.0, what: str = ""):
    return wait_until(predicate, what, timeout, 0.05, error=AssertionError)


@pytest.fixture
def members(zk_connect):
    started: list[MemberProcess] = []

    def start(*broker_ids: int) -> list[MemberProcess]:
        new = [MemberProcess(zk_connect, b, rack=f"rack-{b}", session_timeout=SESSION)
               for b in broker_ids]
        started.extend(new)
        return new

    yield start
    for member in started:
        member.stop()


def test_kill_the_controller_process_and_exactly_one_takes_over(members, zk):
    group = members(1, 2, 3)
    for member in group:
        member.wait_for("registered")
    wait_for(lambda: len(zk.get_children(ZkPaths.BROKER_IDS)) == 3, what="3 registrations")
    first = read_controller(zk)
    assert read_controller_epoch(zk)[0] == 1
    assert next(m for m in group if m.broker_id == first).wait_for("elected")["epoch"] == 1
    assert [m.broker_id for m in group if m.of_kind("elected")] == [first]

    create_topic(zk, "orders", partitions=3, replication_factor=3)
    wait_for(lambda: all(read_partition_state(zk, "orders", p) for p in range(3)),
             what="partition states")
    led_by_first = [p for p in range(3) if read_partition_state(zk, "orders", p)[0].leader == first]
    assert led_by_first, "each broker leads one partition (rack-aware, even leaders)"

    controller = next(m for m in group if m.broker_id == first)
    controller.kill()
    killed_at = time.monotonic()
    second = wait_for(lambda: read_controller(zk) not in (None, first),
                      timeout=SESSION * 3 + 10, what="a new controller") and read_controller(zk)
    took = time.monotonic() - killed_at
    survivors = [m for m in group if m is not controller]
    assert read_controller_epoch(zk)[0] == 2
    for member in survivors:
        assert member.wait_for("controller", count=2)["id"] == second
    assert next(m for m in survivors if m.broker_id == second).wait_for("elected")["epoch"] == 2
    assert [m.broker_id for m in survivors if m.of_kind("elected")] == [second]
    print(f"failover took {took:.1f} s with a {SESSION} s session")

    # The new controller moved the dead broker's partitions, bumping their leader epochs.
    def moved() -> bool:
        states = [read_partition_state(zk, "orders", p)[0] for p in led_by_first]
        return all(s.leader not in (first, -1) and first not in s.isr for s in states)

    wait_for(moved, what="leaders moved off the dead broker")
    for partition in led_by_first:
        state, version = read_partition_state(zk, "orders", partition)
        assert state.leader_epoch == 1 and state.controller_epoch == 2 and version == 1


def test_a_restarted_broker_waits_out_its_stale_registration(members, zk):
    """SIGKILL then restart at once: the old znode lives until the old session expires;
    the new process waits for that, then registers with a larger epoch."""
    (first,) = members(7)
    old_epoch = first.wait_for("registered")["epoch"]
    first.kill()
    assert zk.exists(ZkPaths.broker(7)).czxid == old_epoch  # still there: session not expired
    (second,) = members(7)
    new_epoch = second.wait_for("registered", timeout=SESSION * 3 + 20)["epoch"]
    assert new_epoch > old_epoch
    assert zk.exists(ZkPaths.broker(7)).czxid == new_epoch
