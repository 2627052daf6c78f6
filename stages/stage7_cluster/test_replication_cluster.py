"""Replication and the controller's actions on a real three-broker cluster.

One cluster (real ZooKeeper, three broker processes) serves the module, with
short timeouts so that failures are noticed in seconds, and automatic leader
rebalancing off so that the tests decide when leadership moves. The tests run
in file order; the last one kills brokers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.cluster.checker import compare_replicas, read_partition_dir
from simplekafka.coordination.topics import create_topic

pytestmark = pytest.mark.integration

CONFIG = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
    "controlled.shutdown.timeout.ms": "15000",
}


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("replication"),
                         broker_config=CONFIG)
    local.start()
    try:
        yield local
    finally:
        for broker in local.brokers.values():  # nobody stays stopped by a failed test
            if broker.is_running:
                os.kill(broker.pid, signal.SIGCONT)
        local.stop()


def make_topic(cluster: LocalCluster, name: str, assignment: dict[int, list[int]],
               config: dict | None = None) -> None:
    create_topic(cluster.zk, name, len(assignment), len(assignment[0]),
                 config=config, replica_assignment=assignment)
    for partition, replicas in assignment.items():
        cluster.wait_for_isr(name, partition, replicas, timeout=30)


def producer(cluster: LocalCluster, acks: str | int = "all", **options):
    from simplekafka.producer import Producer

    return Producer(cluster.bootstrap_servers, acks=acks, linger_ms=0, **options)


def test_followers_copy_the_leader_exactly_and_acks_all_succeeds(three):
    make_topic(three, "copied", {0: [1, 2, 3], 1: [2, 3, 1]}, {"min.insync.replicas": "2"})
    with producer(three) as sending:
        futures = [sending.send("copied", f"v{i}".encode(), partition=i % 2) for i in range(60)]
        sending.flush()
        offsets = [f.result(30).offset for f in futures]
    assert sorted(offsets) == sorted(list(range(30)) * 2)
    for partition in (0, 1):
        # Every acknowledged record is on every ISR member: the HW covered it.
        logs = {b: read_partition_dir(three.partition_dir(b, "copied", partition))
                for b in (1, 2, 3)}
        comparison = compare_replicas(logs)
        assert comparison.agree, comparison.detail
        assert set(comparison.log_end_offsets.values()) == {30}


def test_a_lagging_follower_is_written_out_of_the_isr_by_its_leader_and_comes_back(three):
    make_topic(three, "lagging", {0: [1, 2, 3]}, {"min.insync.replicas": "2"})
    stalled = 3
    before = three.partition_state("lagging", 0)
    with producer(three) as sending:
        os.kill(three.brokers[stalled].pid, signal.SIGSTOP)
        try:
            # acks=all waits for the stalled follower until the leader drops it
            # (replication rule 2): then the ISR {1, 2} still meets min.insync.replicas
            # and the write succeeds.
            started = time.monotonic()
            sending.send("lagging", b"while-stalled", partition=0).get(30)
            waited = time.monotonic() - started
            state = three.partition_state("lagging", 0)
            assert set(state.isr) == {1, 2}
            # The leader wrote it (the controller would have raised the leader epoch).
            assert (state.leader, state.leader_epoch) == (before.leader, before.leader_epoch)
            assert waited >= 1.0  # it did wait for the stalled follower first
            # The controller heard of it and told every broker (UpdateMetadata).
            _wait_for_metadata_isr(three, "lagging", 0, {1, 2})
        finally:
            os.kill(three.brokers[stalled].pid, signal.SIGCONT)
        sending.send("lagging", b"after", partition=0).get(30)
    three.wait_for_isr("lagging", 0, [1, 2, 3], timeout=30)  # caught up: back in
    _wait_for_metadata_isr(three, "lagging", 0, {1, 2, 3})


def _wait_for_metadata_isr(cluster: LocalCluster, topic: str, partition: int,
                           wanted: set[int]) -> None:
    from simplekafka.admin import Admin

    with Admin(cluster.bootstrap_servers) as admin:
        def isr_as_told() -> bool:
            described = admin.describe_topics([topic])[topic]
            return set(described.partitions[partition].isr) == wanted

        cluster.wait_for(isr_as_told, f"Metadata to report ISR {sorted(wanted)}", 30)


def test_controlled_shutdown_moves_leadership_before_the_broker_leaves(three):
    # A broker an earlier test of the module restarted may still be registering.
    three.wait_for(lambda: three.registered_brokers() == [1, 2, 3], "all three registered")
    make_topic(three, "handover", {0: [2, 1, 3], 1: [2, 3, 1]})
    leaving = 2
    assert {three.leader_of("handover", p) for p in (0, 1)} == {leaving}
    from simplekafka.coordination.znodes import ZkPaths

    # Each partition's leader as ZooKeeper shows it, every 20 ms while the broker stops,
    # with the transaction id (mzxid) of the state write that showed it: the order is
    # then ZooKeeper's own, however late a sample ran on a busy machine.
    seen: list[tuple[int, int, int]] = []  # (partition, leader, mzxid)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for p in (0, 1):
                state = three.partition_state("handover", p)
                stat = three.zk.exists(ZkPaths.partition_state("handover", p))
                if state is not None and stat is not None:
                    seen.append((p, state.leader, stat.mzxid))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert three.terminate(leaving) == 0
        three.wait_for_znode_gone(leaving, timeout=10)
        time.sleep(0.2)
    finally:
        done.set()
        watcher.join(5)
    # The children of /brokers/ids last changed (pzxid) when the leaving broker's znode
    # went; the write that first showed each partition led elsewhere came before it.
    gone_zxid = three.zk.get(ZkPaths.BROKER_IDS)[1].pzxid
    for p in (0, 1):
        moved = [zxid for q, leader, zxid in seen if q == p and leader != leaving]
        assert moved, f"partition {p} never moved"
        assert min(moved) < gone_zxid, f"partition {p} moved only after broker {leaving} left"
        assert all(leader != -1 for q, leader, _ in seen if q == p), f"partition {p} offline"
    three.restart(leaving)
    for p in (0, 1):
        three.wait_for_isr("handover", p, [1, 2, 3], timeout=30)


def test_preferred_leader_election_from_the_command_line(three):
    # After the previous test broker 2 is back in the ISRs but leads nothing (no auto
    # rebalance in this module); the preferred replica election gives it back.
    assert {three.leader_of("handover", p) for p in (0, 1)} != {2}
    command = [sys.executable, "-m", "simplekafka", "leader-election", "--preferred",
               "--topic", "handover", "--zookeeper", three.zookeeper_connect]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert "handover-0" in finished.stdout and "handover-1" in finished.stdout
    assert {three.leader_of("handover", p) for p in (0, 1)} == {2}
    three.wait_for_leader("handover", 0)


def test_the_isr_is_never_emptied_and_an_out_of_sync_replica_does_not_lead(three):
    make_topic(three, "clean", {0: [2, 3]}, {"min.insync.replicas": "2"})
    make_topic(three, "unclean", {0: [2, 3]}, {"unclean.leader.election.enable": "true"})
    from simplekafka.client.errors import error_class
    from simplekafka.protocol.errors import ErrorCode

    three.kill(3)
    three.wait_for_znode_gone(3, timeout=30)
    three.wait_for(lambda: three.isr_of("clean", 0) == (2,), "3 out of the ISR", 30)
    # Replication rule 1: ISR {2} < min.insync.replicas 2: acks=all is refused, acks=1 still works.
    with producer(three, retries=0) as strict:
        with pytest.raises(error_class(ErrorCode.NOT_ENOUGH_REPLICAS)):
            strict.send("clean", b"refused", partition=0).get(30)
    with producer(three, acks=1) as relaxed:
        relaxed.send("clean", b"accepted", partition=0).get(30)
        relaxed.send("unclean", b"only-on-2", partition=0).get(30)

    epoch = three.partition_state("clean", 0).leader_epoch
    three.kill(2)
    three.wait_for_znode_gone(2, timeout=30)
    # Replication rule 3: the last ISR member is gone: no leader, and the ISR is kept, not emptied.
    offline = three.wait_for(
        lambda: (s := three.partition_state("clean", 0)).leader == -1 and s, "offline", 30)
    assert offline.isr == (2,) and offline.leader_epoch == epoch + 1

    three.restart(3)  # the out-of-sync replica returns
    assert three.partition_state("clean", 0).leader == -1  # unclean election is off...
    unclean = three.wait_for(lambda: (s := three.partition_state("unclean", 0)).leader == 3
                             and s, "the unclean topic to elect 3", 30)
    assert unclean.isr == (3,)  # ...unless the topic asks for it

    three.restart(2)  # the last in-sync replica returns and leads again
    assert three.wait_for_leader("clean", 0, timeout=30) == 2
    three.wait_for_isr("clean", 0, [2, 3], timeout=30)
    assert three.partition_state("clean", 0).leader_epoch > offline.leader_epoch


@pytest.mark.parametrize("arguments, message", [
    ([], "needs --zookeeper"),
    # nothing listens there: the client would retry for the default 35 s, so 2 s is enough
    (["--bootstrap-server", "127.0.0.1:9092", "--timeout", "2"], "ElectLeaders"),
    (["--zookeeper", "127.0.0.1:1", "--partition", "0"], "--partition needs --topic"),
])
def test_leader_election_bad_input_is_one_line_and_exit_2(arguments, message):
    command = [sys.executable, "-m", "simplekafka", "leader-election", "--preferred",
               *arguments]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert message in finished.stderr and "Traceback" not in finished.stderr
    assert len(finished.stderr.strip().splitlines()) == 1


def test_a_killed_controllers_partitions_get_leaders_and_each_survivor_hears_once(three):
    """SIGKILL the controller (real brokers, real ZooKeeper): the new one says in its log
    how many leaders it elected and announced first (the victim's partitions), and each
    survivor applies each partition's state once, as its log shows (the new controller
    used to send every LeaderAndIsr twice: its start-up, then the election's first
    report of every live broker as new)."""
    from simplekafka.cluster.local import probe_broker

    topic, count = "failover", 30
    make_topic(three, topic, {i: [1 + (i + j) % 3 for j in range(3)] for i in range(count)})
    victim = three.controller_id()
    led = [p for p in range(count) if three.leader_of(topic, p) == victim]
    led_in_all = sum(1 for t in three.zk.get_children("/brokers/topics")
                     for p in three.zk.get_children(f"/brokers/topics/{t}/partitions")
                     if three.leader_of(t, int(p)) == victim)  # earlier tests' topics too
    survivors = [b for b in three.brokers if b != victim]

    def applied_since(broker: int, offset: int = 0) -> list[int]:
        text = three.brokers[broker].log_file.read_text(errors="replace")[offset:]
        return sorted(int(line.split(f"{topic}-", 1)[1].split(":", 1)[0])
                      for line in text.splitlines()
                      if f"replica_manager: {topic}-" in line and " at leader epoch " in line)

    for broker in survivors:  # the creation's LeaderAndIsr applied (its ISRs were written)
        three.wait_for(lambda b=broker: len(set(applied_since(b))) == count, "creation", 30)
    offsets = {b: len(three.brokers[b].log_file.read_text(errors="replace")) for b in survivors}
    three.kill(victim)
    three.wait_for(lambda: all(three.leader_of(topic, p) in survivors for p in led),
                   "new leaders", 60)
    # Once a survivor's metadata shows the victim back, every earlier controller request
    # to it was applied (they travel in order): then count what it applied.
    three.restart(victim)
    for broker in survivors:
        host, port = three.brokers[broker].address.rsplit(":", 1)
        three.wait_for(lambda h=host, p=int(port): victim in probe_broker(h, p).broker_ids,
                       f"broker {broker} told of broker {victim}'s return", 60)
    for broker in survivors:
        assert applied_since(broker, offsets[broker]) == list(range(count)), broker
    logs = {b: three.brokers[b].log_file.read_text(errors="replace")[offsets[b]:]
            for b in survivors}
    announced = [line for b in survivors for line in logs[b].splitlines()
                 if "leaders elected and announced" in line]
    assert len(announced) == 1 and f" {led_in_all} leaders elected" in announced[0], announced
