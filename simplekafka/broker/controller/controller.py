"""The controller: the one broker that decides who leads each partition, and tells the others.

Every broker runs stage 2's ControllerElection; the winner's Controller comes
alive. Like Kafka's, it works one event at a time on the election's event
thread (where blocking ZooKeeper calls are fine), and what it decides leaves as
requests to brokers, sent from the reactor through the ControllerChannel:

* on election: read live brokers, topics, assignments and partition states from
  ZooKeeper; elect leaders for partitions that have none (new: first live
  replica, ISR = live replicas, epoch 0) or whose leader is gone (first replica
  in ISR ∩ live; the ISR is never emptied); write the state znodes (fenced by the
  controller epoch, each conditional on its version); then UpdateMetadata to
  every live broker and LeaderAndIsr to every replica;
* on a broker change (``/brokers/ids``): new brokers get UpdateMetadata and
  LeaderAndIsr for their partitions; a dead broker's partitions get new leaders
  and it leaves every ISR (the leader epoch rises);
* on new topics (``/brokers/topics``): elect, write, tell;
* on a topic's assignment growing (``/brokers/topics/<t>``, CreatePartitions):
  the same for its new partitions;
* on ``/admin/delete_topics/<t>``: StopReplica (delete) to the replicas, the
  partitions dropped from every metadata cache, then the znodes removed;
* on ``/isr_change_notification`` (a leader changed an ISR): reread those state
  znodes and send UpdateMetadata to every broker;
* on ``/admin/preferred_replica_election``, and periodically when a broker's
  leader imbalance is over ``leader.imbalance.per.broker.percentage``: move
  leadership to the first replica of the assignment where it is live and in
  the ISR;
* on ``/admin/unclean_leader_election`` (not a Kafka path: ElectLeaders of
  type unclean): give each listed partition whose leader is gone a leader, from
  the ISR if any member is live, else the first live replica, whatever the
  topic's ``unclean.leader.election.enable``;
* on ``/admin/reassign_partitions`` (Kafka's znode and JSON): per partition,
  the assignment becomes RS = TRS + ORS and the leader epoch rises (the new
  replicas start fetching); once every target replica is in the ISR (checked
  on every ISR change), leadership moves into TRS if the leader leaves, the
  ISR drops the leaving replicas, the assignment becomes TRS, the leaving
  replicas get StopReplica (delete), and the partition leaves the znode. A new
  controller resumes what the znode still lists;
* with ``auto.reassign.on.membership.change``, periodically: when a broker has
  been gone past its grace period or a new one has been up for a while, plan a
  minimal-movement reassignment, throttle it and write it to
  ``/admin/reassign_partitions`` (``auto_reassign``), one at a time;
* on ``/admin/controlled_shutdown/<id>`` (a broker about to stop cleanly): move
  its leaderships to the first other live ISR member, drop it from the ISRs it
  follows in (never emptying one), and leave it out of elections until it goes.

Every write is a fenced multi (``/controller_epoch`` version checked) and
conditional on the state znode's version; a write that conflicts (a leader
changed the ISR meanwhile) rereads the znode and decides again. That
decide-and-write loop (``_decide_and_write``) is the one every election goes
through; the decisions themselves are pure functions in ``elections``, what
the controller knows is its ``ControllerContext``, and the requests it sends
are built by ``ControllerRequests``.

With a single broker the controller sends these requests to itself through the
very same channel and request handlers a remote broker would use.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)

from simplekafka.broker.controller.auto_reassign import (
    AutoReassignSettings,
    Membership,
    plan_automatic_moves,
)
from simplekafka.broker.controller.context import ControllerContext, TopicPartitionKey
from simplekafka.broker.controller.elections import (
    elect_for_controlled_shutdown,
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    elect_preferred_leader,
    finish_reassignment,
    remove_dead_from_isr,
    revert_reassignment,
)
from simplekafka.broker.controller.requests import ControllerRequests, Send
from simplekafka.coordination.assignment import AssignmentError
from simplekafka.coordination.election import (
    BrokerChanges,
    ControllerElection,
    NotControllerError,
    WriteConflictError,
)
from simplekafka.coordination.reassignment import (
    parse_reassignment_json,
    reassignment_json,
    replicas_during,
)
from simplekafka.coordination.throttles import (
    clear_throttles,
    throttled_brokers,
    write_throttles,
)
from simplekafka.coordination.topics import (
    live_brokers,
    read_partition_state,
    read_partition_states_of,
    read_topic_assignment,
    read_topic_assignments,
)
from simplekafka.coordination.znodes import (
    BrokerInfo,
    PartitionRefs,
    PartitionState,
    TopicAssignment,
    TopicConfig,
    ZkPaths,
    ZnodeFormatError,
)
from simplekafka.protocol.topic_ids import new_topic_id, topic_id_text

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.protocol.states import WatchedEvent

    from simplekafka.broker.collaborators import DelayedCall

log = logging.getLogger(__name__)

RELOAD_DELAY = 1.0  # seconds before reloading after a ZooKeeper error
WRITE_ATTEMPTS = 3  # decide-and-write rounds per partition when the state znode moved
MULTI_PARTITIONS = 100  # partition state writes per fenced ZooKeeper multi
# Not a Kafka path: a broker stopping cleanly announces itself here (ephemeral
# znode) instead of sending Kafka's ControlledShutdown request (see docs).
CONTROLLED_SHUTDOWN_PATH = "/admin/controlled_shutdown"

# What a broker's metadata cache last said: (leader of each partition, live brokers).
LastKnown = tuple[dict[TopicPartitionKey, int], set[int]]

# A decision for one partition: (partition, its current state or None, its replicas) ->
# the state to write, or None for "nothing to change".
Decide = Callable[[TopicPartitionKey, PartitionState | None, tuple[int, ...]],
                  PartitionState | None]


class Controller:
    """Controller state and decisions; methods ending in ``_event`` run on the event thread."""

    def __init__(self, broker_id: int, election: ControllerElection,
                 send: Callable[[list[Send]], None], unclean_election: bool = False,
                 call_later: Callable[..., DelayedCall] | None = None,
                 auto_rebalance: bool = False, imbalance_check_seconds: float = 300.0,
                 imbalance_percentage: int = 10,
                 auto_reassign: AutoReassignSettings | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 last_known: Callable[[], LastKnown] | None = None):
        self.broker_id = broker_id
        # What this broker's metadata cache says (leaders, live brokers): where a new
        # controller looks first. A hint for order only; every decision reads ZooKeeper.
        self._last_known = last_known
        self.auto_reassign = auto_reassign or AutoReassignSettings()
        self.clock = clock
        self.membership = Membership()
        self._auto_reassign_timer: DelayedCall | None = None
        # Throttles an automatic reassignment set: (topics, brokers), cleared when done.
        self._auto_throttled: tuple[list[str], list[int]] | None = None
        self.auto_rebalance = auto_rebalance
        self.imbalance_check_seconds = imbalance_check_seconds
        self.imbalance_percentage = imbalance_percentage
        self._rebalance_timer: DelayedCall | None = None
        self._call_later = call_later
        self.election = election
        self.zk = election.zk
        self._send = send
        self.unclean_election = unclean_election
        self.active = False
        self.epoch = -1
        self._reset()

    def _reset(self) -> None:
        self.context = ControllerContext()
        self.zk_multis = 0  # partition-state multis sent pipelined (for tests)

    @property
    def brokers(self) -> dict[int, BrokerInfo]:
        """The live brokers, as this controller last read them."""
        return self.context.brokers

    def _requests(self) -> ControllerRequests:
        return ControllerRequests(self.context, self.broker_id, self.epoch)

    # -- election callbacks (reactor thread) --------------------------------------------

    def on_elected(self, epoch: int) -> None:
        self.active = True
        self.epoch = epoch
        self._submit(self._startup_event)
        self._schedule_rebalance_check()
        self._schedule_auto_reassign_check()

    def on_resigned(self) -> None:
        self.active = False
        self._submit(self._reset)
        for timer in (self._rebalance_timer, self._auto_reassign_timer):
            if timer is not None and timer.active():
                timer.cancel()
        self._rebalance_timer = self._auto_reassign_timer = None

    def _schedule_rebalance_check(self) -> None:
        if not self.auto_rebalance or self._call_later is None:
            return
        if self._rebalance_timer is not None and self._rebalance_timer.active():
            return

        def due() -> None:
            self._rebalance_timer = None
            if self.active:
                self._submit(self._rebalance_event)
                self._schedule_rebalance_check()

        self._rebalance_timer = self._call_later(self.imbalance_check_seconds, due)

    def _schedule_auto_reassign_check(self) -> None:
        if not self.auto_reassign.enabled or self._call_later is None:
            return
        if self._auto_reassign_timer is not None and self._auto_reassign_timer.active():
            return

        def due() -> None:
            self._auto_reassign_timer = None
            if self.active:
                self._submit(self._auto_reassign_event)
                self._schedule_auto_reassign_check()

        self._auto_reassign_timer = self._call_later(self.auto_reassign.check_seconds, due)

    def _reload(self) -> None:
        if self.active:
            self._submit(self._startup_event)

    def on_brokers_changed(self, changes: BrokerChanges) -> None:
        if self.active:
            self._submit(lambda: self._brokers_changed_event(changes))

    def _submit(self, fn: Callable[[], list[Send] | None]) -> None:
        """Run ``fn`` on the election's event thread; send what it returns."""
        future = self.election.submit(fn)

        def done(result: concurrent.futures.Future[list[Send] | None]) -> None:
            error = result.exception()
            if error is not None:
                if isinstance(error, NotControllerError):
                    log.info("controller work dropped: %s", error)
                elif isinstance(error, KazooException):
                    # ZooKeeper trouble mid-event: state may be half read, so reload it
                    # all (and resend everything, which brokers apply idempotently).
                    log.warning("controller event failed (%r); reloading in %.0f s",
                                error, RELOAD_DELAY)
                    if self.active and self._call_later is not None:
                        self._call_later(RELOAD_DELAY, self._reload)
                else:
                    log.error("controller event failed: %r", error, exc_info=error)
                return
            sends = result.result()
            if sends:
                self._send(sends)

        future.add_done_callback(done)

    # -- events (election event thread) -------------------------------------------------

    def _startup_event(self) -> list[Send]:
        if not self.election.is_controller:
            return []
        started = time.perf_counter()
        self._reset()
        self.context.broker_epochs = dict(self.election.live_brokers)
        self.context.brokers = live_brokers(self.zk)
        live = set(self.context.brokers)
        self._load_topics(self._watch_topics(), with_states=False)
        # Clients wait for the partitions without a live leader (the dead controller's):
        # they come first. This broker's metadata cache says which those probably are:
        # their states are read, their leaders elected and announced before the other
        # states are even read (Kafka reads everything first). Brokers the cache knows
        # as live are serving already; any other hears of it all at the end.
        leaders, known_brokers = self._last_known() if self._last_known else ({}, set())
        urgent = [key for key in self._all_partitions() if leaders.get(key, -1) not in live]
        if not leaders:
            urgent = []  # nothing known (a fresh cluster): the usual order below
        self._read_states(urgent)
        elected = self._elect_and_announce(
            [key for key in urgent if key in self.context.states
             and self.context.states[key][0].leader not in live], to=known_brokers & live)
        first, first_at = list(elected), time.perf_counter()
        self._read_states(self.context.states_unread(self._all_partitions()))
        loaded = time.perf_counter()
        # Then every broker learns the new controller and the whole picture, as from
        # Kafka's; partitions still without a live leader (the cache was wrong, or new
        # ones) get one; dead brokers still listed in an ISR (they died while no
        # controller was watching) leave it, as on a broker failure; then LeaderAndIsr
        # for the rest.
        self._send(self._update_metadata_to_all(self._all_partitions()))
        elected += self._elect_and_announce(self.states_keys_needing_leaders())
        announced = time.perf_counter()
        stale_isr = [key for key, (state, _v) in self.context.states.items()
                     if state.leader in live and set(state.isr) - live]
        shrunk = self._elect_leaders(stale_isr)
        told = set(elected)
        sends = self._leader_and_isr([k for k in self._all_partitions() if k not in told])
        sends += self._update_metadata_to_all(shrunk)
        log.info("controller %d (epoch %d): %d leaders elected and announced first in "
                 "%.2f s; loaded %d topics (%d partitions) in %.2f s; %d more leaders "
                 "elected and announced in %.2f s; %d ISRs left by dead brokers in %.2f s",
                 self.broker_id, self.epoch, len(first), first_at - started,
                 len(self.context.assignments), len(self.context.states), loaded - started,
                 len(elected) - len(first), announced - loaded, len(shrunk),
                 time.perf_counter() - announced)
        sends += self._deletions_event()
        sends += self._controlled_shutdown_event()
        sends += self._isr_changes_event()
        sends += self._preferred_election_event()
        sends += self._unclean_election_event()
        sends += self._reassignment_event()
        return sends

    def _elect_and_announce(self, keys: list[TopicPartitionKey],
                            exclude: set[int] | frozenset[int] = frozenset(),
                            to: set[int] | None = None) -> list[TopicPartitionKey]:
        """Elect leaders for ``keys`` and send LeaderAndIsr, then UpdateMetadata (to every
        live broker, or those in ``to``), for what changed at once, before the event goes
        on: a failover's critical path is these partitions alone, not the ISR writes
        that follow it."""
        changed = self._elect_leaders(keys, exclude=exclude)
        if changed:
            brokers = self.context.brokers if to is None else to
            self._send(self._leader_and_isr(changed)
                       + self._requests().update_metadata(changed, brokers))
        return changed

    def states_keys_needing_leaders(self) -> list[tuple[str, int]]:
        return self.context.keys_needing_leaders()

    def _brokers_changed_event(self, changes: BrokerChanges) -> list[Send]:
        if not self.election.is_controller:
            return []
        told = self.context.broker_epochs  # what this controller already announced
        self.context.broker_epochs = dict(changes.live)
        self.context.brokers = live_brokers(self.zk)
        live = set(self.context.brokers)
        gone = set(changes.dead) | set(changes.bounced)
        # A broker the controller's start-up already told everything (the election's first
        # report names every live broker new) is no news: it is not told twice.
        arrived = {b for b in set(changes.new) | set(changes.bounced)
                   if told.get(b) != changes.live.get(b)} & live
        self.context.shutting_down -= gone | arrived  # a bounced broker starts afresh
        # A bounced broker (same id, new czxid) is handled as a failure, then a start-up:
        # it may have lost its unflushed tail, so it leaves every ISR and leadership
        # moves to another in-sync replica first; if it was the last one, it is
        # elected again below (at yet another epoch), as Kafka does.
        bounced = set(changes.bounced) & live
        leading = live - bounced
        requests = self._requests()
        if arrived:  # the whole picture first, before anything names them (Kafka's order)
            self._send(requests.update_metadata(self._all_partitions(), arrived))
        # Dead brokers leave every ISR they were in; partitions they led need a new leader,
        # and get it first (announced at once), as in Kafka's onBrokerFailure.
        offline, affected = [], []
        for key, (state, _version) in sorted(self.context.states.items()):
            if state.leader not in leading:
                offline.append(key)
            elif set(state.isr) & gone:
                affected.append(key)
        elected = self._elect_and_announce(offline, exclude=bounced)
        changed = self._elect_leaders(affected, exclude=bounced)
        if bounced:
            again = self._elect_leaders(self.states_keys_needing_leaders())
            changed += [key for key in again if key not in changed]
        # Metadata: what changed, and every partition with a replica on a broker that came
        # or went (its offline replicas changed).
        moved = gone | arrived
        touched = set(changed) | {key for key, replicas in self._replicas_items()
                                  if set(replicas) & moved}
        sends = self._leader_and_isr(changed)
        sends += self._update_metadata_to_all(sorted(touched))
        if arrived:
            theirs = [key for key, replicas in self._replicas_items() if set(replicas) & arrived]
            sends += self._leader_and_isr(theirs, only=arrived)
        if gone or arrived:
            log.info("controller: brokers joined %s, left %s; %d partitions changed",
                     sorted(arrived), sorted(gone), len(elected) + len(changed))
        return sends

    def _topics_changed_event(self) -> list[Send]:
        if not self.election.is_controller:
            return []
        current = set(self._watch_topics())
        new = sorted(current - set(self.context.assignments))
        self._load_topics(new)
        keys = [(t, p) for t in new for p in self.context.assignments.get(t, {})]
        states, brokers = self.context.states, self.context.brokers
        changed = self._elect_leaders([k for k in keys if k not in states
                                       or states[k][0].leader not in brokers])
        if not new:
            return []
        log.info("controller: new topics %s, %d leaders elected", new, len(changed))
        # LeaderAndIsr first, as Kafka does: a broker named leader in metadata must
        # already know it leads, or clients meet NOT_LEADER_OR_FOLLOWER in between.
        sends = self._leader_and_isr(keys)
        sends += self._update_metadata_to_all(keys)
        return sends

    def _partitions_changed_event(self, topic: str) -> list[Send]:
        """A topic's assignment znode changed (CreatePartitions): elect and announce the
        partitions it has no state for yet (Kafka's PartitionModifications)."""
        if not self.election.is_controller or topic not in self.context.assignments:
            return []
        if self.zk.exists(ZkPaths.topic(topic), watch=self._on_topic_watch) is None:
            return []  # deleted: the deletion event cleans up
        assignment = read_topic_assignment(self.zk, topic)
        if assignment is None:
            return []
        known = self.context.assignments[topic]
        if assignment.topic_id is not None:
            self.context.topic_ids[topic] = assignment.topic_id
        new = [(topic, p) for p in assignment.partitions if p not in known]
        self.context.assignments[topic] = dict(assignment.partitions)
        if not new:
            return []
        changed = self._elect_leaders(new)
        log.info("controller: topic %s grew to %d partitions, %d leaders elected",
                 topic, len(assignment.partitions), len(changed))
        sends = self._leader_and_isr(new)
        sends += self._update_metadata_to_all(new)
        return sends

    def _deletions_event(self) -> list[Send]:
        if not self.election.is_controller:
            return []
        try:
            pending = self.zk.get_children(ZkPaths.DELETE_TOPICS, watch=self._on_deletions_watch)
        except NoNodeError:
            self.zk.ensure_path(ZkPaths.DELETE_TOPICS)
            pending = self.zk.get_children(ZkPaths.DELETE_TOPICS,
                                           watch=self._on_deletions_watch)
        sends: list[Send] = []
        for topic in pending:
            sends += self._delete_topic(topic)
        return sends

    # -- watches (kazoo threads): only enqueue ------------------------------------------

    def _on_topics_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._topics_changed_event)

    def _on_topic_watch(self, event: WatchedEvent) -> None:
        if self.active and event.type == "CHANGED":
            topic = event.path.rsplit("/", 1)[-1]
            self._submit(lambda: self._partitions_changed_event(topic))

    def _on_deletions_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._deletions_event)

    # -- helpers (event thread) ---------------------------------------------------------

    def _watch_topics(self) -> list[str]:
        try:
            return sorted(self.zk.get_children(ZkPaths.BROKER_TOPICS,
                                               watch=self._on_topics_watch))
        except NoNodeError:
            self.zk.ensure_path(ZkPaths.BROKER_TOPICS)
            return sorted(self.zk.get_children(ZkPaths.BROKER_TOPICS,
                                               watch=self._on_topics_watch))

    def _load_topic(self, topic: str) -> None:
        self._load_topics([topic])

    def _read_states(self, keys: list[TopicPartitionKey]) -> None:
        self.context.states.update(read_partition_states_of(self.zk, keys))
        self.context.read.update(keys)

    def _load_topics(self, topics: list[str], with_states: bool = True) -> None:
        """Assignments, configs and partition states of ``topics``, each kind read pipelined
        (as Kafka's controller reads them): three waits for ZooKeeper, however many topics.
        Each assignment read leaves the watch for the topic's growth."""
        assignments = read_topic_assignments(self.zk, topics, watch=self._on_topic_watch)
        configs = read_topic_configs(self.zk, list(assignments))
        keys = []
        for topic, assignment in assignments.items():
            self.context.topic_ids[topic] = (assignment.topic_id if assignment.topic_id
                                             else self._assign_topic_id(topic))
            self.context.assignments[topic] = dict(assignment.partitions)
            for index, adding in assignment.adding.items():
                self.context.moving[(topic, index)] = (adding,
                                                       assignment.removing.get(index, ()))
            self.context.topic_configs[topic] = configs[topic]
            keys += [(topic, index) for index in assignment.partitions]
        if with_states:
            self._read_states(keys)

    def _assign_topic_id(self, topic: str) -> bytes:
        """A topic written before topic IDs (KIP-516) gets one, written into its znode (as
        Kafka's controller does after an upgrade to 2.8+), conditional on the znode's
        version so that a concurrent change (CreatePartitions) is not overwritten: the
        change fires the topic's watch, and the next load assigns the ID then."""
        topic_id = new_topic_id()
        try:
            data, stat = self.zk.get(ZkPaths.topic(topic))
            current = TopicAssignment.from_json(data, topic)
            if current.topic_id is not None:
                return current.topic_id
            self.election.fenced_transaction().set_data(
                ZkPaths.topic(topic), dataclasses.replace(current, topic_id=topic_id).to_json(),
                stat.version).commit()
            log.info("controller: topic %s had no topic id; assigned %s", topic,
                     topic_id_text(topic_id))
        except (NoNodeError, WriteConflictError, ZnodeFormatError) as exc:
            log.warning("controller: could not write a topic id for %s: %s", topic, exc)
        return topic_id

    def _elect_leaders(self, keys: list[tuple[str, int]],
                       exclude: set[int] | frozenset[int] = frozenset()
                       ) -> list[tuple[str, int]]:
        """Elect (new or offline) leaders for ``keys`` and write them; returns what changed.

        Brokers in ``exclude`` count as dead for this decision (bounced brokers).
        """
        context = self.context

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            live = context.live - exclude
            if current is None:
                return elect_leader_for_new_partition(replicas, live, self.epoch)
            if current.leader in live:
                return remove_dead_from_isr(current, live, self.epoch)
            state = elect_leader_for_offline_partition(
                replicas, current, live - context.shutting_down, self.epoch,
                self._unclean_election(key[0]))
            return None if state == current else state

        return self._decide_and_write(keys, decide, create=True)

    def _decide_and_write(self, keys: list[TopicPartitionKey], decide: Decide,
                          create: bool = False) -> list[TopicPartitionKey]:
        """Decide each partition's new state and write it; returns the keys written.

        The one decide-and-write loop: a write refused because the state znode
        moved (a leader changed its ISR since we read it) rereads the znode and
        decides again, up to WRITE_ATTEMPTS times. Only with ``create`` may a
        partition without a state znode get one (a new partition).
        """
        changed = self._write_pipelined(keys, decide, create)
        done = set(changed)
        for key in keys:
            if key in done:
                continue
            for _attempt in range(WRITE_ATTEMPTS):
                replicas = self.context.replicas_of(key)
                found = self.context.states.get(key)
                if replicas is None or (found is None and not create):
                    break
                state = decide(key, found[0] if found else None, tuple(replicas))
                if state is None:
                    if found is None:
                        log.warning("%s-%d: no live replica among %s", *key, list(replicas))
                    break
                written = (self._create_state(key, state) if found is None
                           else self._update_state(key, state))
                if written:
                    changed.append(key)
                    break
                if found is None:
                    break  # a create that failed is not retried (the znode was reloaded)
        return changed

    def _write_pipelined(self, keys: list[TopicPartitionKey], decide: Decide,
                         create: bool) -> list[TopicPartitionKey]:
        """First pass of ``_decide_and_write``: every decided write sent at once.

        Kafka's controller sends one fenced multi per partition, pipelined. Here up
        to MULTI_PARTITIONS partitions share one fenced multi, each write still
        conditional on its own znode's version, and the multis are pipelined: a
        Python ZooKeeper client spends ~0.1 ms of CPU per request, so the 10,000
        writes of a failover at scale were seconds of CPU as requests, and are
        milliseconds as multis. A conflict on one partition fails its whole multi;
        the others in it are sent again at once (ZooKeeper names the failed
        operation), the conflicting one is left to the one-by-one loop, which
        rereads it. A new partition's znode and its state are created in the same
        multi.
        """
        writes: list[tuple[TopicPartitionKey, PartitionState, int]] = []
        parents: set[str] = set()
        for key in keys:
            replicas = self.context.replicas_of(key)
            found = self.context.states.get(key)
            if replicas is None or (found is None and not create):
                continue
            state = decide(key, found[0] if found else None, tuple(replicas))
            if state is None:
                continue
            if found is None:
                parent = ZkPaths.partitions(key[0])
                if parent not in parents:
                    self.zk.ensure_path(parent)
                    parents.add(parent)
            writes.append((key, state, -1 if found is None else found[1]))
        written: list[TopicPartitionKey] = []
        while writes:  # each round drops at least the failed write of each failed multi
            pending = []
            for first in range(0, len(writes), MULTI_PARTITIONS):
                batch = writes[first:first + MULTI_PARTITIONS]
                transaction = self.election.fenced_transaction()
                for (topic, index), state, version in batch:
                    if version < 0:
                        transaction.create(ZkPaths.partition(topic, index))
                        transaction.create(ZkPaths.partition_state(topic, index),
                                           state.to_json())
                    else:
                        transaction.set_data(ZkPaths.partition_state(topic, index),
                                             state.to_json(), version)
                pending.append((batch, transaction, transaction.commit_async()))
            self.zk_multis += len(pending)
            writes = []
            for batch, transaction, sent in pending:
                try:
                    results = transaction.results(sent.get())
                except NotControllerError:
                    raise
                except WriteConflictError as conflict:
                    failed = _failed_write(batch, conflict.results)
                    if failed is not None:
                        writes += [write for write in batch if write[0] != failed]
                    continue
                except Exception:
                    continue  # decided again, one by one, on the current znode
                operation = 0
                for key, state, version in batch:
                    if version < 0:
                        new_version, operation = 0, operation + 2
                    else:
                        new_version = getattr(results[operation], "version", version + 1)
                        operation += 1
                    self.context.states[key] = (state, new_version)
                    written.append(key)
        return written

    def _create_state(self, key: tuple[str, int], state: PartitionState) -> bool:
        topic, index = key
        self.zk.ensure_path(ZkPaths.partition(topic, index))
        try:
            self.election.fenced_transaction().create(
                ZkPaths.partition_state(topic, index), state.to_json()).commit()
        except NotControllerError:
            raise
        except Exception as exc:
            log.warning("%s-%d: state create failed (%s); reloading", topic, index, exc)
            found = read_partition_state(self.zk, topic, index)
            if found is not None:
                self.context.states[key] = found
            return False
        self.context.states[key] = (state, 0)
        return True

    def _update_state(self, key: tuple[str, int], state: PartitionState) -> bool:
        topic, index = key
        _old, version = self.context.states[key]
        try:
            results = self.election.fenced_transaction().set_data(
                ZkPaths.partition_state(topic, index), state.to_json(), version).commit()
        except NotControllerError:
            raise
        except Exception as exc:
            log.warning("%s-%d: state update conflicted (%s); reloading", topic, index, exc)
            found = read_partition_state(self.zk, topic, index)
            if found is not None:
                self.context.states[key] = found
            return False
        new_version = getattr(results[0], "version", version + 1)
        self.context.states[key] = (state, new_version)
        return True

    def _delete_topic(self, topic: str) -> list[Send]:
        partitions = self.context.assignments.get(topic)
        if partitions is None:
            assignment = read_topic_assignment(self.zk, topic)
            partitions = dict(assignment.partitions) if assignment else {}
        sends = self._requests().topic_deletion(topic, partitions)
        self._remove_topic_znodes(topic, partitions)
        self.context.assignments.pop(topic, None)
        self.context.topic_ids.pop(topic, None)
        for index in partitions:
            self.context.states.pop((topic, index), None)
        log.info("controller: deleted topic %s", topic)
        return sends

    def _remove_topic_znodes(self, topic: str, partitions: Iterable[int]) -> None:
        paths = []
        for index in partitions:
            paths += [ZkPaths.partition_state(topic, index), ZkPaths.partition(topic, index)]
        paths += [ZkPaths.partitions(topic), ZkPaths.topic(topic), ZkPaths.topic_config(topic),
                  ZkPaths.delete_topic(topic)]
        for path in paths:
            try:
                self.zk.delete(path, recursive=True)
            except NoNodeError:
                pass
            except (KazooException, NodeExistsError) as exc:
                log.warning("could not delete %s: %s", path, exc)

    def _unclean_election(self, topic: str) -> bool:
        """unclean.leader.election.enable: the topic's override, else the broker's."""
        value = self.context.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None:
            return self.unclean_election
        return value.strip().lower() == "true"

    # -- ISR changes made by leaders ----------------------------------------------------

    def _on_isr_changes_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._isr_changes_event)

    def _isr_changes_event(self) -> list[Send]:
        """A leader wrote an ISR: reread those states, tell every broker (UpdateMetadata)."""
        if not self.election.is_controller:
            return []
        path = ZkPaths.ISR_CHANGE_NOTIFICATION
        self.zk.ensure_path(path)
        children = self.zk.get_children(path, watch=self._on_isr_changes_watch)
        keys: set[tuple[str, int]] = set()
        for child in sorted(children):
            try:
                data, _stat = self.zk.get(f"{path}/{child}")
                keys |= {(r.topic, r.partition)
                         for r in PartitionRefs.from_json(data, path).partitions}
            except NoNodeError:
                continue
            except ZnodeFormatError as exc:
                log.warning("ignoring %s/%s: %s", path, child, exc)
            try:
                self.zk.delete(f"{path}/{child}")
            except NoNodeError:
                pass
        known = sorted(k for k in keys if k[1] in self.context.assignments.get(k[0], {}))
        # Pipelined: a restarted broker rejoins thousands of ISRs at once, and reading
        # their states one round trip after another took the controller tens of seconds.
        self.context.states.update(read_partition_states_of(self.zk, known))
        if not known:
            return []
        named = ", ".join(f"{t}-{p}" for t, p in known[:20])
        log.info("controller: ISR changed for %d partition(s): %s%s", len(known), named,
                 ", ..." if len(known) > 20 else "")
        return self._update_metadata_to_all(known) + self._finish_reassignments(known)

    # -- preferred leaders --------------------------------------------------------------

    def _on_preferred_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._preferred_election_event)

    def _preferred_election_event(self) -> list[Send]:
        """``/admin/preferred_replica_election`` was written: elect, then remove the znode."""
        return self._election_request_event(ZkPaths.PREFERRED_REPLICA_ELECTION,
                                            self._on_preferred_watch, self._elect_preferred)

    def _on_unclean_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._unclean_election_event)

    def _unclean_election_event(self) -> list[Send]:
        """``/admin/unclean_leader_election`` was written: elect, then remove the znode."""
        return self._election_request_event(ZkPaths.UNCLEAN_LEADER_ELECTION,
                                            self._on_unclean_watch, self._elect_unclean)

    def _election_request_event(self, path: str, watch: Callable[[WatchedEvent], None],
                                elect: Callable[[list[tuple[str, int]]], list[Send]]
                                ) -> list[Send]:
        """An election asked for through ``path`` (its partitions, or all): run it, remove
        the znode (which tells whoever asked that it is done), watch for the next."""
        if not self.election.is_controller:
            return []
        if self.zk.exists(path, watch=watch) is None:
            return []
        try:
            data, _stat = self.zk.get(path)
            refs = PartitionRefs.from_json(data, path).partitions
            keys = [(r.topic, r.partition) for r in refs] or self._all_partitions()
        except NoNodeError:
            return []
        except ZnodeFormatError as exc:
            log.warning("ignoring %s: %s", path, exc)
            keys = []
        sends = elect(keys)
        try:
            self.zk.delete(path)
        except NoNodeError:
            pass
        self.zk.exists(path, watch=watch)
        return sends

    def _elect_unclean(self, keys: list[tuple[str, int]]) -> list[Send]:
        """Leaders for offline partitions, out of sync replicas allowed (Kafka's
        ElectionType.UNCLEAN); partitions whose leader is live are left alone."""
        context = self.context

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None  # _decide_and_write creates nothing here
            live = context.live - context.shutting_down
            if current.leader in live:
                return None
            state = elect_leader_for_offline_partition(replicas, current, live, self.epoch,
                                                       unclean=True)
            return None if state == current else state

        changed = self._decide_and_write(keys, decide)
        if not changed:
            return []
        log.warning("controller: unclean leader election for %s",
                    ", ".join(f"{t}-{p}" for t, p in changed))
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _elect_preferred(self, keys: list[tuple[str, int]]) -> list[Send]:
        context = self.context

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None  # _decide_and_write creates nothing here
            return elect_preferred_leader(current, replicas, context.live,
                                          context.shutting_down, self.epoch)

        changed = self._decide_and_write(keys, decide)
        if not changed:
            return []
        log.info("controller: preferred leaders elected for %s",
                 ", ".join(f"{t}-{p}" for t, p in changed))
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _rebalance_event(self) -> list[Send]:
        """auto.leader.rebalance.enable: preferred elections where a broker's imbalance is high."""
        if not self.election.is_controller:
            return []
        preferred_of: dict[int, list[tuple[str, int]]] = {}
        for key, replicas in self._replicas_items():
            if replicas and key in self.context.states:
                preferred_of.setdefault(replicas[0], []).append(key)
        keys = []
        for broker_id, its in sorted(preferred_of.items()):
            if broker_id not in self.context.brokers or broker_id in self.context.shutting_down:
                continue
            elsewhere = [k for k in its if self.context.states[k][0].leader != broker_id]
            if elsewhere and 100 * len(elsewhere) / len(its) > self.imbalance_percentage:
                keys += elsewhere
        return self._elect_preferred(keys) if keys else []

    # -- partition reassignment (KIP-455, as ZooKeeper-mode Kafka runs it) -------------

    def _on_reassignment_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._reassignment_event)

    def _reassignment_event(self) -> list[Send]:
        """``/admin/reassign_partitions`` appeared or changed: start what is new in it."""
        if not self.election.is_controller:
            return []
        path = ZkPaths.REASSIGN_PARTITIONS
        wanted: dict[TopicPartitionKey, list[int]] = {}
        try:
            if self.zk.exists(path, watch=self._on_reassignment_watch) is not None:
                data, _stat = self.zk.get(path, watch=self._on_reassignment_watch)
                wanted = parse_reassignment_json(data)
        except NoNodeError:
            pass
        except AssignmentError as exc:
            log.warning("removing unreadable %s: %s", path, exc)
            self._delete_quietly(path)
        sends: list[Send] = []
        started = []
        for key, target in sorted(wanted.items()):
            replicas = self.context.replicas_of(key)
            if replicas is None or key not in self.context.states:
                log.warning("reassignment of unknown partition %s-%d dropped", *key)
                continue
            if self.context.reassigning.get(key) == tuple(target):
                continue
            self.context.reassigning[key] = tuple(target)
            started.append(key)
        # Moving partitions no longer listed were cancelled (also while no controller ran:
        # the topic znodes still name their adding replicas).
        cancelled = [key for key in set(self.context.reassigning) | set(self.context.moving)
                     if key not in wanted]
        if cancelled:
            sends += self._cancel_reassignments(sorted(cancelled))
        if started:
            sends += self._start_reassignments(started)
            sends += self._finish_reassignments(started)  # already in sync: done at once
        if wanted and not self.context.reassigning:
            self._write_pending_reassignments(
                {k: tuple(t) for k, t in wanted.items()})  # nothing valid in it
        return sends

    def _auto_reassign_event(self) -> list[Send]:
        """Automatic mode (``auto_reassign``): plan and start a reassignment if membership
        changed for good and none is in flight; clear the throttles of a finished one."""
        if not self.election.is_controller:
            return []
        context = self.context
        assignments = {k: r for k, r in context.replicas_items() if k[0] not in context.deleting}
        now = self.clock()
        self.membership.observe(context.live, {b for r in assignments.values() for b in r}, now)
        if context.reassigning or context.moving or self.zk.exists(
                ZkPaths.REASSIGN_PARTITIONS) is not None:
            return []  # one at a time
        if self._auto_throttled is not None:
            topics, brokers = self._auto_throttled
            clear_throttles(self.zk, topics, brokers)
            self._auto_throttled = None
            log.info("controller: automatic reassignment done; throttles cleared")
        try:
            moves = plan_automatic_moves(assignments, context.live,
                                         {b: info.rack for b, info in context.brokers.items()},
                                         self.membership, now, self.auto_reassign)
        except AssignmentError as exc:
            log.warning("controller: no automatic reassignment: %s", exc)
            return []
        if not moves:
            return []
        current = {k: assignments[k] for k in moves}
        write_throttles(self.zk, current, moves, self.auto_reassign.throttle)
        self._auto_throttled = (sorted({t for t, _ in moves}),
                                throttled_brokers(current, moves))
        try:
            self.zk.create(ZkPaths.REASSIGN_PARTITIONS,
                           reassignment_json(moves, log_dirs=False).encode(), makepath=True)
        except NodeExistsError:
            return []  # an operator was quicker: theirs runs, ours is planned again later
        log.info("controller: automatic reassignment of %d partitions (live brokers %s, "
                 "gone %s)", len(moves), sorted(context.live),
                 sorted(self.membership.gone_since))
        return self._reassignment_event()

    def _start_reassignments(self, keys: list[TopicPartitionKey]) -> list[Send]:
        """Assignment RS = TRS + ORS, leader epoch bumped, everyone told."""
        for topic in sorted({t for t, _ in keys}):
            current = self.context.assignments[topic]
            new = dict(current)
            for key in keys:
                if key[0] == topic:
                    target = self.context.reassigning[key]
                    new[key[1]] = replicas_during(current[key[1]], target)
                    if key not in self.context.moving:  # else resumed: the znode knows ORS
                        original = current[key[1]]
                        self.context.moving[key] = (
                            tuple(r for r in target if r not in original),
                            tuple(r for r in original if r not in target))
            if new != current:
                self._write_assignment(topic, new)
        context = self.context

        def bump(key: TopicPartitionKey, current: PartitionState | None,
                 replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None
            return PartitionState(current.leader, current.leader_epoch + 1, current.isr,
                                  self.epoch)

        changed = self._decide_and_write(keys, bump)
        log.info("controller: reassigning %s", ", ".join(
            f"{t}-{p} to {list(context.reassigning[(t, p)])}" for t, p in keys))
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _finish_reassignments(self, keys: list[TopicPartitionKey]) -> list[Send]:
        """Partitions whose target replicas are all in sync: drop the leaving replicas."""
        context = self.context
        ready = [k for k in keys if k in context.reassigning and k in context.states
                 and set(context.reassigning[k]) <= set(context.states[k][0].isr)]
        if not ready:
            return []

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None
            state = finish_reassignment(current, context.reassigning[key], context.live,
                                        self.epoch)
            if state is None or (state.leader == current.leader and state.isr == current.isr
                                 and set(replicas) == set(context.reassigning[key])):
                return None  # nothing leaves; the assignment below is all there is to do
            return state

        self._decide_and_write(ready, decide)
        sends: list[Send] = []
        leaving: dict[int, list[TopicPartitionKey]] = {}
        done = []
        for key in ready:
            target = context.reassigning[key]
            state = context.states[key][0]
            if not set(state.isr) <= set(target) or state.leader not in target:
                continue  # the write conflicted; the next ISR change retries
            for replica in context.replicas_of(key) or ():
                if replica not in target:
                    leaving.setdefault(replica, []).append(key)
            done.append(key)
        for topic in sorted({t for t, _ in done}):
            new = dict(context.assignments[topic])
            for key in done:
                if key[0] == topic:
                    new[key[1]] = context.reassigning[key]
                    context.moving.pop(key, None)
            self._write_assignment(topic, new)
        sends += self._leader_and_isr(done)
        sends += self._requests().stop_replicas(leaving, delete=True)
        sends += self._update_metadata_to_all(done)
        finished = {key: context.reassigning.pop(key) for key in done}
        self._write_pending_reassignments(finished)
        log.info("controller: reassignment done for %s",
                 ", ".join(f"{t}-{p}" for t, p in done))
        return sends

    def _cancel_reassignments(self, keys: list[TopicPartitionKey]) -> list[Send]:
        """Partitions taken out of the znode before they finished (AlterPartitionReassignments
        with null replicas): back to the original replicas; the added ones are deleted."""
        context = self.context
        originals: dict[TopicPartitionKey, tuple[int, ...]] = {}
        adding: dict[int, list[TopicPartitionKey]] = {}
        for key in keys:
            context.reassigning.pop(key, None)
            added = context.moving.pop(key, ((), ()))[0]
            originals[key] = tuple(r for r in context.replicas_of(key) or () if r not in added)
            for replica in added:
                adding.setdefault(replica, []).append(key)

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None
            return revert_reassignment(current, originals[key], context.live, self.epoch)

        self._decide_and_write(keys, decide)
        for topic in sorted({t for t, _ in keys}):
            new = dict(context.assignments[topic])
            for key in keys:
                if key[0] == topic and originals[key]:
                    new[key[1]] = originals[key]
            self._write_assignment(topic, new)
        log.info("controller: reassignment cancelled for %s",
                 ", ".join(f"{t}-{p}" for t, p in keys))
        return (self._leader_and_isr(keys) + self._requests().stop_replicas(adding, delete=True)
                + self._update_metadata_to_all(keys))

    def _write_assignment(self, topic: str, partitions: dict[int, tuple[int, ...]]) -> None:
        moving = {k[1]: v for k, v in self.context.moving.items() if k[0] == topic}
        assignment = TopicAssignment(dict(partitions), {p: a for p, (a, _r) in moving.items()},
                                     {p: r for p, (_a, r) in moving.items()},
                                     topic_id=self.context.topic_ids.get(topic))
        self.election.fenced_transaction().set_data(
            ZkPaths.topic(topic), assignment.to_json()).commit()
        self.context.assignments[topic] = dict(partitions)

    def _write_pending_reassignments(self, done: dict[TopicPartitionKey, tuple[int, ...]]
                                     ) -> None:
        """Remove the finished partitions from the znode, or the znode once empty (as Kafka
        does). Conditional on its version: a request adding partitions meanwhile is kept."""
        path = ZkPaths.REASSIGN_PARTITIONS
        for _attempt in range(WRITE_ATTEMPTS * 2):
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                break
            try:
                pending = parse_reassignment_json(data)
            except AssignmentError:
                pending = {}
            for key, target in done.items():
                if tuple(pending.get(key, ())) == tuple(target):
                    del pending[key]
            try:
                if pending:
                    self.zk.set(path, reassignment_json(pending, log_dirs=False).encode(),
                                version=stat.version)
                else:
                    self.zk.delete(path, version=stat.version)
                break
            except BadVersionError:
                continue  # someone added to it: read again
            except NoNodeError:
                break
        self.zk.exists(path, watch=self._on_reassignment_watch)

    def _delete_quietly(self, path: str) -> None:
        try:
            self.zk.delete(path)
        except NoNodeError:
            pass

    # -- controlled shutdown ------------------------------------------------------------

    def _on_controlled_shutdown_watch(self, _event: WatchedEvent) -> None:
        if self.active:
            self._submit(self._controlled_shutdown_event)

    def _controlled_shutdown_event(self) -> list[Send]:
        """Brokers about to stop: move their leaderships away, drop them from ISRs."""
        if not self.election.is_controller:
            return []
        self.zk.ensure_path(CONTROLLED_SHUTDOWN_PATH)
        children = self.zk.get_children(CONTROLLED_SHUTDOWN_PATH,
                                        watch=self._on_controlled_shutdown_watch)
        announced = {int(c) for c in children if c.isdigit()} & set(self.context.brokers)
        new = announced - self.context.shutting_down
        self.context.shutting_down = announced
        if not new:
            return []
        context = self.context
        involved = [key for key, (state, _version) in sorted(context.states.items())
                    if (set(state.isr) | {state.leader}) & new]

        def decide(key: TopicPartitionKey, current: PartitionState | None,
                   replicas: tuple[int, ...]) -> PartitionState | None:
            assert current is not None  # _decide_and_write creates nothing here
            return elect_for_controlled_shutdown(current, replicas, context.live,
                                                 context.shutting_down, self.epoch)

        changed = self._decide_and_write(involved, decide)
        log.info("controller: controlled shutdown of %s moved %d partitions", sorted(new),
                 len(changed))
        if not changed:
            return []
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _all_partitions(self) -> list[tuple[str, int]]:
        return self.context.all_partitions()

    def _replicas_items(self) -> list[tuple[tuple[str, int], tuple[int, ...]]]:
        return self.context.replicas_items()

    def _update_metadata_to_all(self, keys: list[tuple[str, int]]) -> list[Send]:
        return self._requests().update_metadata_to_all(keys)

    def _leader_and_isr(self, keys: list[tuple[str, int]],
                        only: set[int] | None = None) -> list[Send]:
        return self._requests().leader_and_isr(keys, only)


def read_topic_config(zk: KazooClient, topic: str) -> dict[str, str]:
    """A topic's overrides from ``/config/topics/<t>`` ({} when there are none)."""
    try:
        data, _stat = zk.get(ZkPaths.topic_config(topic))
    except NoNodeError:
        return {}
    return dict(TopicConfig.from_json(data, topic).config)


def read_topic_configs(zk: KazooClient, topics: list[str]) -> dict[str, dict[str, str]]:
    """``read_topic_config`` for many topics, pipelined; an unreadable one counts as no
    overrides (broker defaults), with a warning."""
    sent = [(topic, zk.get_async(ZkPaths.topic_config(topic))) for topic in topics]
    configs: dict[str, dict[str, str]] = {}
    for topic, answer in sent:
        try:
            data, _stat = answer.get()
            configs[topic] = dict(TopicConfig.from_json(data, topic).config)
        except NoNodeError:
            configs[topic] = {}
        except ZnodeFormatError as exc:
            log.warning("topic %s: unreadable config (%s); using broker defaults", topic, exc)
            configs[topic] = {}
    return configs


def _failed_write(batch: list[tuple[TopicPartitionKey, PartitionState, int]],
                  results: list[object]) -> TopicPartitionKey | None:
    """The partition whose operation failed a multi of ``batch`` (ZooKeeper reports the
    first failure; the operations before it come back rolled back, those after it
    unattempted)."""
    operation = 0
    for key, _state, version in batch:
        count = 2 if version < 0 else 1
        for result in results[operation:operation + count]:
            if isinstance(result, Exception) and not isinstance(
                    result, (RolledBackError, RuntimeInconsistency)):
                return key
        operation += count
    return None
