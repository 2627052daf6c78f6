"""The controller's decisions on a real ZooKeeper, with no broker processes.

The Controller runs its events directly on the test thread: a small stand-in
for stage 2's election says "you are the controller" and hands out real fenced
transactions (checked against ``/controller_epoch``'s version). Brokers are
plain ephemeral znodes; what the controller would send is returned as a list,
so both the state znodes it writes and the requests it would send can be
checked.
"""

from __future__ import annotations

import concurrent.futures

import pytest

from simplekafka.broker.controller import CONTROLLED_SHUTDOWN_PATH, Controller
from simplekafka.coordination.connection import ensure_kafka_paths
from simplekafka.coordination.election import (
    BrokerChanges,
    FencedTransaction,
    NotControllerError,
    diff_brokers,
)
from simplekafka.coordination.topics import create_topic, read_partition_state
from simplekafka.coordination.znodes import (
    BrokerInfo,
    PartitionRef,
    PartitionRefs,
    PartitionState,
    ZkPaths,
)
from simplekafka.protocol.api import ApiKey

pytestmark = pytest.mark.integration  # a real ZooKeeper


class StandInElection:
    """What Controller needs of ControllerElection: the session, a fence, a thread."""

    def __init__(self, zk) -> None:
        self.zk = zk
        self.is_controller = True
        _data, stat = zk.get(ZkPaths.CONTROLLER_EPOCH)
        self.epoch_version = stat.version
        self.live_brokers: dict[int, int] = {}
        self.outbox: list = []  # what the controller sent during an event (not returned)

    def fenced_transaction(self) -> FencedTransaction:
        return FencedTransaction(self.zk, self.epoch_version)

    def submit(self, fn):
        """Watches fire on kazoo's threads: their events are dropped, the tests call the
        event methods themselves (in order, on this thread)."""
        return concurrent.futures.Future()


@pytest.fixture
def world(zk):
    ensure_kafka_paths(zk)
    election = StandInElection(zk)
    for broker_id in (1, 2, 3):
        register(zk, broker_id)
    controller = Controller(1, election, send=election.outbox.extend)
    controller.epoch = 1
    controller.active = True
    return zk, election, controller


def register(zk, broker_id: int) -> int:
    info = BrokerInfo(broker_id=broker_id, host="127.0.0.1", port=9000 + broker_id, rack=None)
    path = ZkPaths.broker(broker_id)
    zk.create(path, info.to_json(), ephemeral=True, makepath=True)
    return zk.exists(path).czxid


def live(zk) -> dict[int, int]:
    return {int(c): zk.exists(ZkPaths.broker(int(c))).czxid
            for c in zk.get_children(ZkPaths.BROKER_IDS)}


def state(zk, topic: str = "t", partition: int = 0) -> PartitionState:
    return read_partition_state(zk, topic, partition)[0]


def start(zk, controller, assignment, config=None) -> None:
    create_topic(zk, "t", len(assignment), len(assignment[0]), config=config,
                 replica_assignment=assignment)
    controller._startup_event()


def run(event, *args) -> list:
    """Every request of a controller event: those it sent at once (the leaders of
    partitions that had none) and those it returned."""
    outbox = event.__self__.election.outbox
    outbox.clear()
    returned = event(*args)
    return outbox + returned


def leader_and_isr_targets(sends) -> set[int]:
    return {target for target, api, _v, _b in sends if api == ApiKey.LEADER_AND_ISR}


def test_failures_elect_from_the_isr_in_assignment_order_and_never_empty_it(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    assert state(zk) == PartitionState(1, 0, (1, 2, 3), 1)
    zk.delete(ZkPaths.broker(1))
    sends = run(controller._brokers_changed_event, BrokerChanges(live=live(zk), dead=(1,)))
    assert state(zk) == PartitionState(2, 1, (2, 3), 1)  # first of ISR ∩ live, epoch + 1
    assert {2, 3} <= leader_and_isr_targets(sends)
    zk.delete(ZkPaths.broker(2))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(2,)))
    assert state(zk) == PartitionState(3, 2, (3,), 1)
    zk.delete(ZkPaths.broker(3))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(3,)))
    assert state(zk) == PartitionState(-1, 3, (3,), 1)  # offline, the ISR kept
    register(zk, 1)  # an out-of-sync replica returns: unclean election is off
    controller._brokers_changed_event(BrokerChanges(live=live(zk), new=(1,)))
    assert state(zk).leader == -1
    register(zk, 3)  # the last in-sync replica returns
    controller._brokers_changed_event(BrokerChanges(live=live(zk), new=(3,)))
    assert state(zk) == PartitionState(3, 4, (3,), 1)


def test_the_topic_may_enable_unclean_election(world):
    zk, _election, controller = world
    start(zk, controller, {0: [2, 3]}, {"unclean.leader.election.enable": "true"})
    zk.delete(ZkPaths.broker(3))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(3,)))
    zk.delete(ZkPaths.broker(2))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(2,)))
    assert state(zk).leader == -1
    register(zk, 3)
    controller._brokers_changed_event(BrokerChanges(live=live(zk), new=(3,)))
    assert state(zk) == PartitionState(3, 3, (3,), 1)


def test_a_bounced_leader_loses_leadership_like_a_failed_one(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    zk.delete(ZkPaths.broker(1))
    register(zk, 1)  # back at once, with a new czxid: seen as a bounce
    sends = run(controller._brokers_changed_event, BrokerChanges(live=live(zk), bounced=(1,)))
    assert state(zk) == PartitionState(2, 1, (2, 3), 1)
    assert 1 in leader_and_isr_targets(sends)  # told to follow (and truncate by epoch)


def test_a_bounced_last_isr_member_is_elected_again_at_a_new_epoch(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1]})
    zk.delete(ZkPaths.broker(1))
    register(zk, 1)
    controller._brokers_changed_event(BrokerChanges(live=live(zk), bounced=(1,)))
    assert state(zk) == PartitionState(1, 2, (1,), 1)


def test_a_write_that_meets_a_leaders_isr_change_rereads_and_decides_again(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    # Leader 1 shrinks the ISR itself (same epoch), as isr.write_isr does.
    zk.set(ZkPaths.partition_state("t", 0), PartitionState(1, 0, (1, 2), 1).to_json(),
           version=0)
    zk.delete(ZkPaths.broker(1))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(1,)))
    assert state(zk) == PartitionState(2, 1, (2,), 1)  # 3 stays out: the leader's write held


def test_isr_change_notifications_become_update_metadata(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    zk.set(ZkPaths.partition_state("t", 0), PartitionState(1, 0, (1, 3), 1).to_json(),
           version=0)
    zk.create(ZkPaths.ISR_CHANGE_PREFIX, PartitionRefs((PartitionRef("t", 0),)).to_json(),
              sequence=True)
    sends = controller._isr_changes_event()
    updates = [body for _t, api, _v, body in sends if api == ApiKey.UPDATE_METADATA]
    assert len(updates) == 3  # every live broker
    told = updates[0]["topic_states"][0]["partition_states"][0]
    assert (told["isr"], told["zk_version"]) == ([1, 3], 1)
    assert zk.get_children(ZkPaths.ISR_CHANGE_NOTIFICATION) == []


def test_preferred_election_and_controlled_shutdown(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    zk.create(f"{CONTROLLED_SHUTDOWN_PATH}/1", b"", ephemeral=True, makepath=True)
    controller._controlled_shutdown_event()
    assert state(zk) == PartitionState(2, 1, (2, 3), 1)  # moved, and 1 left the ISR
    zk.delete(f"{CONTROLLED_SHUTDOWN_PATH}/1")
    controller._controlled_shutdown_event()
    # 1 is not in the ISR: the preferred election leaves the leader where it is.
    zk.create(ZkPaths.PREFERRED_REPLICA_ELECTION, PartitionRefs(()).to_json())
    controller._preferred_election_event()
    assert state(zk).leader == 2
    assert zk.exists(ZkPaths.PREFERRED_REPLICA_ELECTION) is None
    # Back in the ISR (the leader's write), then preferred: 1 leads again.
    zk.set(ZkPaths.partition_state("t", 0), PartitionState(2, 1, (1, 2, 3), 1).to_json(),
           version=1)
    controller._isr_changes_event()
    controller._load_topic("t")
    zk.create(ZkPaths.PREFERRED_REPLICA_ELECTION,
              PartitionRefs((PartitionRef("t", 0),)).to_json())
    controller._preferred_election_event()
    assert state(zk) == PartitionState(1, 2, (1, 2, 3), 1)


def test_a_deposed_controller_writes_nothing(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    zk.set(ZkPaths.CONTROLLER_EPOCH, b"2")  # a newer controller was elected meanwhile
    zk.delete(ZkPaths.broker(1))
    with pytest.raises(NotControllerError):
        controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(1,)))
    assert state(zk) == PartitionState(1, 0, (1, 2, 3), 1)


def test_automatic_rebalance_returns_leadership_to_the_preferred_replica(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3], 1: [2, 3, 1]})
    zk.delete(ZkPaths.broker(1))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(1,)))
    register(zk, 1)
    controller._brokers_changed_event(BrokerChanges(live=live(zk), new=(1,)))
    assert state(zk, "t", 0).leader == 2  # 1 is back but not in the ISR yet
    assert controller._rebalance_event() == []  # not in sync: nothing to do
    # The leader adds 1 to the ISR once it caught up (and tells the controller).
    zk.set(ZkPaths.partition_state("t", 0), PartitionState(2, 1, (1, 2, 3), 1).to_json(),
           version=1)
    zk.create(ZkPaths.ISR_CHANGE_PREFIX, PartitionRefs((PartitionRef("t", 0),)).to_json(),
              sequence=True)
    controller._isr_changes_event()
    sends = controller._rebalance_event()  # broker 1: 1 of 1 preferred partitions elsewhere
    assert state(zk, "t", 0) == PartitionState(1, 2, (1, 2, 3), 1)
    assert state(zk, "t", 1).leader == 2  # already led by its preferred replica
    assert {1, 2, 3} <= leader_and_isr_targets(sends)


def test_a_new_controller_removes_brokers_that_died_meanwhile_from_the_isrs(world):
    zk, _election, controller = world
    start(zk, controller, {0: [1, 2, 3]})
    zk.delete(ZkPaths.broker(3))  # dies while no controller watches (say, it was the one)
    successor = Controller(2, controller.election, send=lambda sends: None)
    successor.epoch, successor.active = 1, True
    successor._startup_event()
    assert state(zk) == PartitionState(1, 1, (1, 2), 1)


class CountingZooKeeper:
    """The controller's session, counting the calls that wait for a ZooKeeper answer."""

    WAITING = frozenset({"get", "set", "create", "delete", "exists", "ensure_path",
                         "get_children"})  # get_async, commit_async: pipelined, not counted

    def __init__(self, zk) -> None:
        self._zk = zk
        self.waits = 0
        self.calls: list[str] = []

    def __getattr__(self, name):
        if name in self.WAITING:
            self.waits += 1
            self.calls.append(name)
        return getattr(self._zk, name)

    def transaction(self):
        counter = self
        real = self._zk.transaction()

        class Counted:
            def __getattr__(self, name):
                if name == "commit":
                    counter.waits += 1
                return getattr(real, name)

        return Counted()


def test_partition_states_are_written_as_pipelined_multis(world):
    """A topic's 250 state znodes, then the new leaders of a dead broker's partitions and
    its ISR removals (Kafka's controller pipelines these, one multi per partition): a
    handful of waits, not one or three per partition, and a fenced multi per 100
    partitions (each write in it conditional on its own znode), not one per partition."""
    zk, election, controller = world
    counting = CountingZooKeeper(zk)
    controller.zk = election.zk = counting
    assignment = {i: [1 + i % 3, 1 + (i + 1) % 3, 1 + (i + 2) % 3] for i in range(250)}
    create_topic(zk, "t", 250, 3, replica_assignment=assignment)
    controller._startup_event()
    assert all(state(zk, "t", i).leader == 1 + i % 3 for i in range(250))
    assert controller.zk_multis == 3
    assert counting.waits < 20, counting.calls
    counting.waits = 0
    zk.delete(ZkPaths.broker(1))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(1,)))
    assert all(1 not in state(zk, "t", i).isr for i in range(250))
    assert all(state(zk, "t", i).leader == 2 for i in range(0, 250, 3))
    assert controller.zk_multis == 3 + 1 + 2  # 84 leaders first, then 166 ISRs
    assert counting.waits < 10, counting.waits


def test_isr_changes_of_many_partitions_are_read_pipelined(world):
    """A restarted broker rejoins every ISR: its leaders announce 250 changes in one
    notification (isr.IsrChangeNotifier), and the controller rereads the 250 states
    pipelined, a handful of waits, not one per partition."""
    from simplekafka.broker.isr import write_isr, write_isr_change_notification

    zk, election, controller = world
    start(zk, controller, {i: [1, 2, 3] for i in range(250)})
    for index in range(250):
        write_isr(zk, "t", index, 1, 0, [1, 2], 1, 0)
    write_isr_change_notification(zk, [("t", index) for index in range(250)])
    counting = CountingZooKeeper(zk)
    controller.zk = election.zk = counting
    sends = run(controller._isr_changes_event)
    assert all(controller.context.states[("t", i)][0].isr == (1, 2) for i in range(250))
    assert counting.waits < 10, counting.calls
    assert zk.get_children(ZkPaths.ISR_CHANGE_NOTIFICATION) == []
    assert sends  # UpdateMetadata to every broker


def test_a_conflict_in_a_shared_multi_costs_the_others_nothing(world):
    """Leaders changed the ISRs of two partitions since the controller read them: the
    multi holding them fails whole; the others are written in the next round, the two
    are reread and decided again, and every leader's write stands."""
    zk, _election, controller = world
    start(zk, controller, {i: [1, 2, 3] for i in range(8)})
    for index in (2, 5):  # leader 1 shrinks the ISR itself, as isr.write_isr does
        zk.set(ZkPaths.partition_state("t", index), PartitionState(1, 0, (1, 2), 1).to_json(),
               version=0)
    multis = controller.zk_multis
    zk.delete(ZkPaths.broker(1))
    controller._brokers_changed_event(BrokerChanges(live=live(zk), dead=(1,)))
    for index in range(8):
        expected = (2,) if index in (2, 5) else (2, 3)
        assert state(zk, "t", index) == PartitionState(2, 1, expected, 1), index
        assert controller.context.states[("t", index)][0].isr == expected
    assert controller.zk_multis - multis == 3  # failed on 2; failed on 5; the other 6


def partition_states_sent(sends, api=ApiKey.LEADER_AND_ISR) -> dict[int, list[tuple[str, int]]]:
    """Per target broker, the (topic, partition) states its requests of kind ``api`` carry."""
    carried: dict[int, list[tuple[str, int]]] = {}
    for target, kind, _version, body in sends:
        if kind == api:
            carried.setdefault(target, []).extend(
                (t["topic_name"], p["partition_index"])
                for t in body["topic_states"] for p in t["partition_states"])
    return carried


def test_a_new_controller_elects_the_dead_controllers_partitions_first_and_tells_once(world):
    """Broker 1, the controller, dies; broker 2 takes over. The 4 partitions 1 led get
    leaders first, and LeaderAndIsr for them leaves before any ISR write of the other 8
    (Kafka's order: clients wait for those). Each survivor then hears of each partition
    once: the election's first report, every live broker 'new', is no news after the
    start-up told them everything (it used to send every LeaderAndIsr a second time)."""
    zk, election, controller = world
    assignment = {i: [1 + i % 3, 1 + (i + 1) % 3, 1 + (i + 2) % 3] for i in range(12)}
    start(zk, controller, assignment)
    zk.delete(ZkPaths.broker(1))
    election.live_brokers = live(zk)  # as the real election reads them before electing
    successor = Controller(2, election, send=election.outbox.extend)
    successor.epoch, successor.active = 2, True
    writes: list[tuple[str, int]] = []
    written = successor._write_pipelined

    def recording(keys, decide, create):
        done = written(keys, decide, create)
        writes.extend(done)
        election.outbox.append(("written", done))
        return done

    successor._write_pipelined = recording
    sends = run(successor._startup_event)
    led_by_1 = [("t", i) for i in range(0, 12, 3)]
    assert writes[:4] == led_by_1 and len(writes) == 12  # the other 8: 1 leaves their ISRs
    first_write = sends.index(("written", led_by_1))
    first_leader_and_isr = next(i for i, s in enumerate(sends)
                                if s[0] != "written" and s[1] == ApiKey.LEADER_AND_ISR)
    assert first_write < first_leader_and_isr < sends.index(("written", writes[4:]))
    assert partition_states_sent(sends[first_leader_and_isr:first_leader_and_isr + 1]) \
        in ({2: led_by_1}, {3: led_by_1})
    sends += run(successor._brokers_changed_event, diff_brokers({}, live(zk)))
    assert writes[12:] == []
    sends = [s for s in sends if s[0] != "written"]
    every = sorted(("t", i) for i in range(12))
    assert {b: sorted(keys) for b, keys in partition_states_sent(sends).items()} == {
        2: every, 3: every}
    assert all(1 not in state(zk, "t", i).isr for i in range(12))


def test_a_new_controller_loads_every_topic_in_a_few_waits(world):
    """Assignments, configs and states of every topic are read pipelined (as Kafka's
    controller reads them): the waits for ZooKeeper do not grow with the topics (they
    were three per topic, one after another)."""
    zk, election, controller = world
    for n in range(30):
        create_topic(zk, f"t{n}", 2, 3, config={"retention.ms": "1000"} if n == 7 else None)
    controller._startup_event()
    counting = CountingZooKeeper(zk)
    election.zk = counting
    successor = Controller(2, election, send=election.outbox.extend)
    successor.epoch, successor.active = 1, True
    successor._startup_event()
    assert counting.waits < 20, counting.calls
    assert len(successor.context.states) == 60
    assert successor.context.topic_configs["t7"] == {"retention.ms": "1000"}
    assert successor.context.topic_configs["t8"] == {}


def test_leader_and_isr_goes_in_slices_of_a_thousand_partitions():
    """A broker applies LeaderAndIsr on its reactor: 2,500 partitions go as three requests
    (1,000, 1,000, 500), each partition once, so the broker serves between them."""
    from simplekafka.broker.controller.context import ControllerContext
    from simplekafka.broker.controller.requests import ControllerRequests

    context = ControllerContext()
    context.brokers = {b: BrokerInfo(broker_id=b, host="127.0.0.1", port=9000 + b, rack=None)
                       for b in (1, 2)}
    context.assignments = {"t": {i: (1 + i % 2, 2 - i % 2) for i in range(2500)}}
    context.states = {("t", i): (PartitionState(r[0], 0, r, 1), 0)
                      for i, r in context.assignments["t"].items()}
    sends = ControllerRequests(context, 1, 1).leader_and_isr(context.all_partitions())
    assert [target for target, *_ in sends] == [1, 1, 1, 2, 2, 2]
    carried = partition_states_sent(sends)
    assert sorted(carried[1]) == sorted(carried[2]) == sorted(context.all_partitions())
    sizes = [len(body["topic_states"][0]["partition_states"]) for *_, body in sends]
    assert sizes == [1000, 1000, 500] * 2
    assert {leader["broker_id"] for leader in sends[0][3]["live_leaders"]} == {1, 2}


def test_a_new_controller_reads_first_what_its_cache_says_the_dead_one_led(world):
    """The new controller's own metadata cache says which partitions the dead controller
    led: their states are read, their leaders elected and announced before the other
    states are read (at 10,000 partitions, a third of the reads ahead of the clients).
    A hint only: partition 9, which the cache wrongly puts on broker 2, is still
    elected once its state is read; the UpdateMetadata of the first ones goes only to
    brokers the cache knows as live (a broker it does not know hears everything later)."""
    zk, election, _controller = world
    start(zk, _controller, {i: [1 + i % 3, 1 + (i + 1) % 3, 1 + (i + 2) % 3] for i in range(12)})
    zk.delete(ZkPaths.broker(1))
    election.live_brokers = live(zk)
    hint = {("t", i): 1 + i % 3 for i in range(12)}
    hint[("t", 9)] = 2
    steps: list = []

    def send(sends):
        steps.append(("sent", [(target, api) for target, api, _v, _b in sends]))
        election.outbox.extend(sends)

    successor = Controller(2, election, send=send, last_known=lambda: (hint, {1, 2}))
    successor.epoch, successor.active = 2, True
    reading, writing = successor._read_states, successor._write_pipelined

    def read(keys):
        steps.append(("read", sorted(k[1] for k in keys)))
        reading(keys)

    def write(keys, decide, create):
        done = writing(keys, decide, create)
        steps.append(("written", sorted(k[1] for k in done)))
        return done

    successor._read_states, successor._write_pipelined = read, write
    run(successor._startup_event)
    assert steps[:2] == [("read", [0, 3, 6]), ("written", [0, 3, 6])]
    assert steps[2] == ("sent", [(2, ApiKey.LEADER_AND_ISR), (3, ApiKey.LEADER_AND_ISR),
                                 (2, ApiKey.UPDATE_METADATA)])  # 3: not in the cache's set
    assert steps[3] == ("read", [1, 2, 4, 5, 7, 8, 9, 10, 11])
    assert ("written", [9]) in steps[4:]
    assert all(state(zk, "t", i).leader in (2, 3) for i in range(12))
