"""Controller election, fencing and broker bookkeeping against a REAL ZooKeeper.

Each test runs in its own chroot of the session's embedded ZooKeeper (the
``zk_connect`` / ``zk_client_factory`` fixtures), with short 2 s sessions so
that expiry-driven failover is quick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from simplekafka.coordination import (
    BrokerChanges,
    BrokerIdInUseError,
    BrokerInfo,
    BrokerRegistration,
    ControllerElection,
    ControllerMovedError,
    EmbeddedZooKeeper,
    FencedTransaction,
    NotControllerError,
    PartitionState,
    WriteConflictError,
    ZkPaths,
    add_partition_state_creation,
    connect_zookeeper,
    read_controller,
    read_controller_epoch,
)
from simplekafka.coordination.processes import wait_until
from simplekafka.coordination.testing import expire_session

pytestmark = pytest.mark.integration

SESSION = 2.0


def wait_for(predicate: Callable[[], object], timeout: float = 15.0, what: str = "") -> object:
    return wait_until(predicate, what or str(predicate), timeout, 0.05, error=AssertionError)


class Contender:
    """One in-process broker: own ZooKeeper session, registration and election."""

    def __init__(self, make_client: Callable[..., KazooClient], broker_id: int,
                 session_timeout: float = SESSION):
        self.zk = make_client(session_timeout=session_timeout)
        self.broker_id = broker_id
        self.events: list[tuple] = []
        self.lock = threading.Lock()
        self.registration = BrokerRegistration(self.zk, broker_id, "127.0.0.1", 9000 + broker_id)
        self.election = ControllerElection(
            self.zk, broker_id, registration=self.registration,
            on_elected=lambda epoch: self._record("elected", epoch),
            on_resigned=lambda: self._record("resigned"),
            on_brokers_changed=lambda changes: self._record("brokers", changes),
        )

    def _record(self, *event: object) -> None:
        with self.lock:
            self.events.append(event)

    def of_kind(self, kind: str) -> list[tuple]:
        with self.lock:
            return [e for e in self.events if e[0] == kind]

    def start(self) -> Contender:
        self.election.start()
        return self


@pytest.fixture
def contenders(zk_client_factory):
    started: list[Contender] = []

    def make(*broker_ids: int) -> list[Contender]:
        new = [Contender(zk_client_factory, b) for b in broker_ids]
        started.extend(new)
        for contender in new:
            contender.start()
        return new

    yield make
    for contender in started:
        contender.election.stop()


def the_controller(group: list[Contender]) -> Contender:
    winners = [c for c in group if c.election.is_controller]
    assert len(winners) == 1, f"controllers: {[c.broker_id for c in winners]}"
    return winners[0]


def settled_single_controller(group: list[Contender], zk: KazooClient) -> Contender:
    wait_for(lambda: read_controller(zk) is not None, what="/controller")
    for contender in group:
        contender.election.wait_until_settled()
    winner = the_controller(group)
    assert read_controller(zk) == winner.broker_id
    return winner


def test_three_contenders_elect_exactly_one_controller_with_epoch_1(contenders, zk):
    group = contenders(1, 2, 3)
    winner = settled_single_controller(group, zk)
    assert read_controller_epoch(zk)[0] == 1
    assert winner.election.epoch == winner.election.controller_epoch == 1
    assert winner.election.controller_epoch_zk_version == read_controller_epoch(zk)[1]
    assert [c.broker_id for c in group if c.of_kind("elected")] == [winner.broker_id]
    for contender in group:  # everyone knows who the controller is
        assert contender.election.controller_id == winner.broker_id
    wait_for(lambda: sorted(winner.election.live_brokers) == [1, 2, 3], what="all brokers live")


def test_controller_gone_means_exactly_one_new_controller_with_next_epoch(contenders, zk):
    group = contenders(1, 2, 3)
    first = settled_single_controller(group, zk)
    first.election.stop()  # clean resignation: /controller deleted in a fenced multi
    survivors = [c for c in group if c is not first]
    wait_for(lambda: read_controller(zk) not in (None, first.broker_id), what="new controller")
    second = settled_single_controller(survivors, zk)
    assert second.election.epoch == 2
    assert read_controller_epoch(zk)[0] == 2
    assert len(first.of_kind("resigned")) == 1


def test_controller_session_expiry_elects_next_and_the_zombie_cannot_write(contenders, zk):
    """The zombie: expired, a new controller elected; every write it tries fails."""
    group = contenders(1, 2, 3)
    zombie = settled_single_controller(group, zk)
    stale_version = zombie.election.epoch_zk_version
    assert stale_version is not None
    # Something the controller owns, to try to overwrite later.
    zk.ensure_path(ZkPaths.partition("t", 0))
    state = PartitionState(leader=zombie.broker_id, leader_epoch=0, isr=(1, 2, 3),
                           controller_epoch=1)
    FencedTransaction(zombie.zk, stale_version).create(
        ZkPaths.partition_state("t", 0), state.to_json()).commit()

    old_session = zombie.zk.client_id[0]
    expire_session(zombie.zk)
    wait_for(lambda: read_controller(zk) not in (None, zombie.broker_id), what="new controller")
    others = [c for c in group if c is not zombie]
    successor = settled_single_controller(others, zk)
    assert read_controller_epoch(zk)[0] == 2 == successor.election.epoch

    # The zombie's writes, fenced with the epoch version it won, all fail.
    wait_for(lambda: zombie.zk.connected and zombie.zk.client_id[0] != old_session,
             what="zombie reconnected with a new session")
    hijack = PartitionState(leader=zombie.broker_id, leader_epoch=9, isr=(zombie.broker_id,),
                            controller_epoch=1)
    attempts = [
        lambda t: t.set_data(ZkPaths.partition_state("t", 0), hijack.to_json()),
        lambda t: t.create(ZkPaths.CONTROLLER, b"{}"),
        lambda t: t.delete(ZkPaths.CONTROLLER),
        lambda t: t.create(ZkPaths.topic("zombie-topic"), b"{}"),
    ]
    for attempt in attempts:
        with pytest.raises(ControllerMovedError):
            attempt(FencedTransaction(zombie.zk, stale_version)).commit()
    with pytest.raises(ControllerMovedError):  # not even the empty parent znodes appear
        transaction = FencedTransaction(zombie.zk, stale_version)
        add_partition_state_creation(transaction, zombie.zk, "z", 0, hijack)
        transaction.commit()
    assert zk.exists(ZkPaths.partitions("z")) is None
    data, _ = zk.get(ZkPaths.partition_state("t", 0))
    assert PartitionState.from_json(data) == state
    assert zk.exists(ZkPaths.topic("zombie-topic")) is None
    assert read_controller(zk) == successor.broker_id

    # It noticed and resigned: not controller, one resignation, and its own API refuses.
    wait_for(lambda: zombie.of_kind("resigned"), what="zombie resigned")
    zombie.election.wait_until_settled()
    assert not zombie.election.is_controller
    with pytest.raises(NotControllerError):
        zombie.election.fenced_transaction()
    the_controller(group)  # still exactly one
    # And it is back as an ordinary broker, with a new registration.
    wait_for(lambda: zk.exists(ZkPaths.broker(zombie.broker_id)), what="zombie re-registered")


def test_fenced_write_with_a_stale_epoch_resigns_the_controller(contenders, zk):
    """A controller that loses the epoch check resigns, even before it hears of a successor."""
    (only,) = contenders(1)
    settled_single_controller([only], zk)
    epoch, version = read_controller_epoch(zk)
    zk.set(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version)  # a usurper
    with pytest.raises(ControllerMovedError):
        only.election.fenced_transaction().create("/should-not-exist", b"x").commit()
    assert zk.exists("/should-not-exist") is None
    wait_for(lambda: only.of_kind("resigned"), what="resignation")
    only.election.wait_until_settled()
    assert not only.election.is_controller


def test_conditional_partition_state_update_rejects_a_stale_version(contenders, zk):
    (only,) = contenders(1)
    settled_single_controller([only], zk)
    path = ZkPaths.partition_state("t", 0)
    zk.ensure_path(ZkPaths.partition("t", 0))
    first = PartitionState(leader=1, leader_epoch=0, isr=(1,), controller_epoch=1)
    only.election.fenced_transaction().create(path, first.to_json()).commit()
    second = PartitionState(leader=1, leader_epoch=1, isr=(1,), controller_epoch=1)
    only.election.fenced_transaction().set_data(path, second.to_json(), version=0).commit()
    with pytest.raises(WriteConflictError):  # version 0 is stale now
        only.election.fenced_transaction().set_data(path, first.to_json(), version=0).commit()
    assert PartitionState.from_json(zk.get(path)[0]) == second
    assert only.election.is_controller  # a conflict is not a lost election


def test_bookkeeping_sees_new_and_dead_brokers(contenders, zk):
    (controller,) = contenders(1)
    settled_single_controller([controller], zk)
    (newcomer,) = contenders(2)
    wait_for(lambda: 2 in controller.election.live_brokers, what="broker 2 seen")
    assert any(2 in e[1].new for e in controller.of_kind("brokers"))
    newcomer.election.stop()
    newcomer.registration.deregister()
    wait_for(lambda: 2 not in controller.election.live_brokers, what="broker 2 gone")
    assert any(2 in e[1].dead for e in controller.of_kind("brokers"))


def test_broker_whose_session_expires_reregisters_and_is_seen_as_bounced(contenders, zk):
    group = contenders(1, 2)
    controller = settled_single_controller(group, zk)
    (broker,) = [c for c in group if c is not controller]
    wait_for(lambda: broker.broker_id in controller.election.live_brokers, what="broker seen")
    old_epoch = controller.election.live_brokers[broker.broker_id]
    assert old_epoch == broker.registration.epoch

    # Hold the controller's event thread (as a long controller operation would), so
    # the deletion and the re-registration reach it as one change, as in Kafka.
    release = threading.Event()
    controller.election.submit(lambda: release.wait(30))
    expire_session(broker.zk)
    wait_for(lambda: (broker.registration.epoch or 0) > old_epoch, what="re-registration")
    assert zk.exists(ZkPaths.broker(broker.broker_id)).czxid == broker.registration.epoch
    release.set()

    def bounced() -> list[BrokerChanges]:
        return [e[1] for e in controller.of_kind("brokers") if broker.broker_id in e[1].bounced]

    (change,) = wait_for(bounced, what="bounce seen by the controller")
    assert change.live[broker.broker_id] == broker.registration.epoch > old_epoch
    assert broker.broker_id not in change.dead and broker.broker_id not in change.new


def test_broker_whose_session_expires_ends_up_live_with_a_new_epoch(contenders, zk):
    """Without holding the controller: it may see dead-then-new, but ends with the new epoch."""
    group = contenders(1, 2)
    controller = settled_single_controller(group, zk)
    (broker,) = [c for c in group if c is not controller]
    wait_for(lambda: broker.broker_id in controller.election.live_brokers, what="broker seen")
    old_epoch = controller.election.live_brokers[broker.broker_id]
    expire_session(broker.zk)
    wait_for(lambda: controller.election.live_brokers.get(broker.broker_id, 0) > old_epoch,
             what="controller knows the new epoch")
    assert controller.election.live_brokers[broker.broker_id] == broker.registration.epoch
    assert controller.election.is_controller and not broker.election.is_controller


def test_a_broker_id_held_by_another_live_session_is_refused(zk, zk_client_factory):
    BrokerRegistration(zk, 5, "127.0.0.1", 9005).register()
    other = zk_client_factory()
    with pytest.raises(BrokerIdInUseError, match="broker id 5 is registered by another"):
        BrokerRegistration(other, 5, "127.0.0.1", 9999, stale_wait=0.5).register()
    info = BrokerInfo.from_json(5, zk.get(ZkPaths.broker(5))[0])
    assert info.port == 9005  # the live broker's registration is untouched


def test_registering_twice_in_one_session_is_harmless(zk):
    registration = BrokerRegistration(zk, 6, "127.0.0.1", 9006)
    epoch = registration.register()
    assert registration.register() == epoch


def test_work_submitted_after_stop_fails_instead_of_hanging(contenders, zk):
    (only,) = contenders(1)
    settled_single_controller([only], zk)
    assert only.election.submit(lambda: 42).result(10) == 42
    only.election.stop()
    with pytest.raises(NotControllerError):
        only.election.submit(lambda: 42).result(10)


def test_partition_states_and_their_parents_are_created_in_one_fenced_multi(contenders, zk):
    (only,) = contenders(1)
    settled_single_controller([only], zk)
    zk.ensure_path(ZkPaths.topic("t"))
    transaction, planned = only.election.fenced_transaction(), set()
    states = {p: PartitionState(leader=1, leader_epoch=0, isr=(1,), controller_epoch=1)
              for p in range(3)}
    for partition, state in states.items():
        add_partition_state_creation(transaction, zk, "t", partition, state, planned)
    transaction.commit()
    for partition, state in states.items():
        assert PartitionState.from_json(zk.get(ZkPaths.partition_state("t", partition))[0]) \
            == state


def test_a_zookeeper_restart_keeps_sessions_and_the_election_still_works(tmp_path):
    """ZooKeeper restarted within the session timeout: sessions survive (standalone
    ZooKeeper persists them), clients reconnect to the SAME session, the controller
    keeps its job, and the watches still work afterwards (the election resyncs)."""
    server = EmbeddedZooKeeper(data_dir=tmp_path).start()
    clients: list[KazooClient] = []
    group: list[Contender] = []
    try:
        def make_client(session_timeout: float = 20.0) -> KazooClient:
            client = connect_zookeeper(server.connect_string, session_timeout=session_timeout)
            clients.append(client)
            return client

        # Sessions long enough to outlive the restart (the JVM takes a few seconds).
        group += [Contender(make_client, b, session_timeout=20.0) for b in (1, 2)]
        for contender in group:
            contender.start()
        admin = make_client()
        first = settled_single_controller(group, admin)
        sessions = [c.zk.client_id[0] for c in group]

        port = server.port
        server.stop()
        server = EmbeddedZooKeeper(port=port, data_dir=tmp_path).start()
        wait_for(lambda: all(c.zk.connected for c in group), what="clients reconnected")
        assert [c.zk.client_id[0] for c in group] == sessions  # the same sessions
        for contender in group:
            contender.election.wait_until_settled()
        assert settled_single_controller(group, admin) is first
        assert read_controller_epoch(admin)[0] == 1 and not first.of_kind("resigned")

        first.election.stop()  # the survivor's watch on /controller must still fire
        (other,) = [c for c in group if c is not first]
        wait_for(lambda: other.election.is_controller, what="the other takes over")
        assert read_controller_epoch(admin)[0] == 2
    finally:
        for contender in group:
            contender.election.stop()
        for client in clients:
            client.stop()
            client.close()
        server.stop()
