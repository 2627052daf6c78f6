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
* on ``/admin/delete_topics/<t>``: StopReplica (delete) to the replicas, the
  partitions dropped from every metadata cache, then the znodes removed;
* on ``/isr_change_notification`` (a leader changed an ISR): reread those state
  znodes and send UpdateMetadata to every broker;
* on ``/admin/preferred_replica_election``, and periodically when a broker's
  leader imbalance is over ``leader.imbalance.per.broker.percentage``: move
  leadership to the first replica of the assignment where it is live and in
  the ISR;
* on ``/admin/controlled_shutdown/<id>`` (a broker about to stop cleanly): move
  its leaderships to the first other live ISR member, drop it from the ISRs it
  follows in (never emptying one), and leave it out of elections until it goes.

Every write is a fenced multi (``/controller_epoch`` version checked) and
conditional on the state znode's version; a write that conflicts (a leader
changed the ISR meanwhile) rereads the znode and decides again.

With a single broker the controller sends these requests to itself through the
very same channel and request handlers a remote broker would use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from simplekafka.broker.metadata_cache import LEADER_DURING_DELETE
from simplekafka.coordination.election import ControllerElection, NotControllerError
from simplekafka.coordination.topics import (
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    live_brokers,
    read_partition_state,
    read_topic_assignment,
)
from simplekafka.coordination.znodes import (
    BrokerInfo,
    PartitionRefs,
    PartitionState,
    TopicConfig,
    ZkPaths,
    ZnodeFormatError,
)
from simplekafka.protocol.api import ApiKey

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 2
UPDATE_METADATA_VERSION = 5
STOP_REPLICA_VERSION = 1
PLAINTEXT = 0  # security protocol id in UpdateMetadata endpoints
RELOAD_DELAY = 1.0  # seconds before reloading after a ZooKeeper error
WRITE_ATTEMPTS = 3  # decide-and-write rounds per partition when the state znode moved
# Not a Kafka path: a broker stopping cleanly announces itself here (ephemeral
# znode) instead of sending Kafka's ControlledShutdown request (see docs).
CONTROLLED_SHUTDOWN_PATH = "/admin/controlled_shutdown"

# One request for the channel: (target broker, api key, api version, body).
Send = tuple[int, ApiKey, int, dict]


class Controller:
    """Controller state and decisions; methods ending in ``_event`` run on the event thread."""

    def __init__(self, broker_id: int, election: ControllerElection,
                 send: Callable[[list[Send]], None], unclean_election: bool = False,
                 call_later: Callable[..., Any] | None = None,
                 auto_rebalance: bool = False, imbalance_check_seconds: float = 300.0,
                 imbalance_percentage: int = 10):
        self.broker_id = broker_id
        self.auto_rebalance = auto_rebalance
        self.imbalance_check_seconds = imbalance_check_seconds
        self.imbalance_percentage = imbalance_percentage
        self._rebalance_timer: Any = None
        self._call_later = call_later
        self.election = election
        self.zk = election.zk
        self._send = send
        self.unclean_election = unclean_election
        self.active = False
        self.epoch = -1
        self._reset()

    def _reset(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.broker_epochs: dict[int, int] = {}
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.states: dict[tuple[str, int], tuple[PartitionState, int]] = {}
        self.deleting: set[str] = set()
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.shutting_down: set[int] = set()

    # -- election callbacks (reactor thread) --------------------------------------------

    def on_elected(self, epoch: int) -> None:
        self.active = True
        self.epoch = epoch
        self._submit(self._startup_event)
        self._schedule_rebalance_check()

    def on_resigned(self) -> None:
        self.active = False
        self._submit(self._reset)
        if self._rebalance_timer is not None and self._rebalance_timer.active():
            self._rebalance_timer.cancel()
        self._rebalance_timer = None

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

    def _reload(self) -> None:
        if self.active:
            self._submit(self._startup_event)

    def on_brokers_changed(self, changes: Any) -> None:
        if self.active:
            self._submit(lambda: self._brokers_changed_event(changes))

    def _submit(self, fn: Callable[[], list[Send] | None]) -> None:
        """Run ``fn`` on the election's event thread; send what it returns."""
        future = self.election.submit(fn)

        def done(result: Any) -> None:
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
        self._reset()
        self.broker_epochs = dict(self.election.live_brokers)
        self.brokers = live_brokers(self.zk)
        for topic in self._watch_topics():
            self._load_topic(topic)
        # Partitions without a live leader need one; dead brokers still listed in an ISR
        # (they died while no controller was watching) leave it, as on a broker failure.
        live = set(self.brokers)
        stale_isr = [key for key, (state, _v) in self.states.items()
                     if state.leader in live and set(state.isr) - live]
        changed = self._elect_leaders(self.states_keys_needing_leaders() + stale_isr)
        sends = self._update_metadata_to_all(self._all_partitions())
        sends += self._leader_and_isr(self._all_partitions())
        log.info("controller %d (epoch %d) loaded %d topics, elected %d leaders",
                 self.broker_id, self.epoch, len(self.assignments), len(changed))
        sends += self._deletions_event()
        sends += self._controlled_shutdown_event()
        sends += self._isr_changes_event()
        sends += self._preferred_election_event()
        return sends

    def states_keys_needing_leaders(self) -> list[tuple[str, int]]:
        live = set(self.brokers)
        needing = []
        for topic, partitions in self.assignments.items():
            for index in partitions:
                current = self.states.get((topic, index))
                if current is None or current[0].leader not in live:
                    needing.append((topic, index))
        return needing

    def _brokers_changed_event(self, changes: Any) -> list[Send]:
        if not self.election.is_controller:
            return []
        self.broker_epochs = dict(changes.live)
        self.brokers = live_brokers(self.zk)
        live = set(self.brokers)
        gone = set(changes.dead) | set(changes.bounced)
        arrived = (set(changes.new) | set(changes.bounced)) & live
        self.shutting_down -= gone | arrived  # a bounced broker starts afresh
        affected = set()
        # Dead brokers leave every ISR they were in; partitions they led need a new leader.
        for key, (state, _version) in list(self.states.items()):
            if state.leader in gone or state.leader not in live or set(state.isr) & gone:
                affected.add(key)
        # A bounced broker (same id, new czxid) is handled as a failure, then a start-up:
        # it may have lost its unflushed tail, so it leaves every ISR and leadership
        # moves to another in-sync replica first; if it was the last one, it is
        # elected again below (at yet another epoch), as Kafka does.
        bounced = set(changes.bounced) & live
        changed = self._elect_leaders(sorted(affected), exclude=bounced)
        if bounced:
            again = self._elect_leaders(self.states_keys_needing_leaders())
            changed += [key for key in again if key not in changed]
        sends = self._leader_and_isr(changed)
        sends += self._update_metadata_to_all(self._all_partitions())
        if arrived:
            theirs = [key for key, replicas in self._replicas_items() if set(replicas) & arrived]
            sends += self._leader_and_isr(theirs, only=arrived)
        if gone or arrived:
            log.info("controller: brokers joined %s, left %s; %d partitions changed",
                     sorted(arrived), sorted(gone), len(changed))
        return sends

    def _topics_changed_event(self) -> list[Send]:
        if not self.election.is_controller:
            return []
        current = set(self._watch_topics())
        new = sorted(current - set(self.assignments))
        for topic in new:
            self._load_topic(topic)
        keys = [(t, p) for t in new for p in self.assignments.get(t, {})]
        changed = self._elect_leaders([k for k in keys if k not in self.states
                                       or self.states[k][0].leader not in self.brokers])
        if not new:
            return []
        log.info("controller: new topics %s, %d leaders elected", new, len(changed))
        # LeaderAndIsr first, as Kafka does: a broker named leader in metadata must
        # already know it leads, or clients meet NOT_LEADER_OR_FOLLOWER in between.
        sends = self._leader_and_isr(keys)
        sends += self._update_metadata_to_all(keys)
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

    def _on_topics_watch(self, _event: Any) -> None:
        if self.active:
            self._submit(self._topics_changed_event)

    def _on_deletions_watch(self, _event: Any) -> None:
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
        assignment = read_topic_assignment(self.zk, topic)
        if assignment is None:
            return
        self.assignments[topic] = dict(assignment.partitions)
        try:
            self.topic_configs[topic] = read_topic_config(self.zk, topic)
        except ZnodeFormatError as exc:
            log.warning("topic %s: unreadable config (%s); using broker defaults", topic, exc)
            self.topic_configs[topic] = {}
        for index in assignment.partitions:
            found = read_partition_state(self.zk, topic, index)
            if found is not None:
                self.states[(topic, index)] = found

    def _elect_leaders(self, keys: list[tuple[str, int]],
                       exclude: set[int] | frozenset[int] = frozenset()
                       ) -> list[tuple[str, int]]:
        """Elect (new or offline) leaders for ``keys`` and write them; returns what changed.

        A write refused because the state znode moved (a leader changed its ISR
        since we read it) rereads the znode and decides again.
        """
        changed = []
        for key in keys:
            for _attempt in range(WRITE_ATTEMPTS):
                outcome = self._elect_one(key, exclude)
                if outcome is not None:
                    if outcome:
                        changed.append(key)
                    break
        return changed

    def _elect_one(self, key: tuple[str, int],
                   exclude: set[int] | frozenset[int] = frozenset()) -> bool | None:
        """One decision for ``key``: True written, False nothing to do, None conflict.

        Brokers in ``exclude`` count as dead for this decision (bounced brokers).
        """
        live = set(self.brokers) - exclude
        replicas = self.assignments.get(key[0], {}).get(key[1])
        if replicas is None:
            return False
        current = self.states.get(key)
        if current is None:
            state = elect_leader_for_new_partition(replicas, live, self.epoch)
            if state is None:
                log.warning("%s-%d: no live replica among %s", *key, list(replicas))
                return False
            return self._create_state(key, state)
        old, _version = current
        if old.leader in live:
            # The leader stays; dead members leave the ISR (never emptied), the epoch rises.
            isr = tuple(r for r in old.isr if r in live)
            if isr == old.isr or not isr:
                return False
            state = PartitionState(old.leader, old.leader_epoch + 1, isr, self.epoch)
        else:
            state = elect_leader_for_offline_partition(
                replicas, old, live - self.shutting_down, self.epoch,
                self._unclean_election(key[0]))
            if state == old:
                return False
        return True if self._update_state(key, state) else None

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
                self.states[key] = found
            return False
        self.states[key] = (state, 0)
        return True

    def _update_state(self, key: tuple[str, int], state: PartitionState) -> bool:
        topic, index = key
        _old, version = self.states[key]
        try:
            results = self.election.fenced_transaction().set_data(
                ZkPaths.partition_state(topic, index), state.to_json(), version).commit()
        except NotControllerError:
            raise
        except Exception as exc:
            log.warning("%s-%d: state update conflicted (%s); reloading", topic, index, exc)
            found = read_partition_state(self.zk, topic, index)
            if found is not None:
                self.states[key] = found
            return False
        new_version = getattr(results[0], "version", version + 1)
        self.states[key] = (state, new_version)
        return True

    def _delete_topic(self, topic: str) -> list[Send]:
        partitions = self.assignments.get(topic)
        if partitions is None:
            assignment = read_topic_assignment(self.zk, topic)
            partitions = dict(assignment.partitions) if assignment else {}
        live = set(self.brokers)
        sends: list[Send] = []
        replicas_by_broker: dict[int, list[int]] = {}
        for index, replicas in partitions.items():
            for replica in replicas:
                if replica in live:
                    replicas_by_broker.setdefault(replica, []).append(index)
        for broker_id, indexes in sorted(replicas_by_broker.items()):
            sends.append((broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, {
                "controller_id": self.broker_id, "controller_epoch": self.epoch,
                "broker_epoch": self.broker_epochs.get(broker_id, -1),
                "delete_partitions": True,
                "topics": [{"name": topic, "partition_indexes": sorted(indexes)}],
            }))
        gone = [{"partition_index": index, "controller_epoch": self.epoch,
                 "leader": LEADER_DURING_DELETE, "leader_epoch": 0, "isr": [],
                 "zk_version": 0, "replicas": list(replicas), "offline_replicas": []}
                for index, replicas in partitions.items()]
        sends += [(b, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION,
                   self._update_metadata_body(b, [{"topic_name": topic,
                                                   "partition_states": gone}]))
                  for b in sorted(live)]
        self._remove_topic_znodes(topic, partitions)
        self.assignments.pop(topic, None)
        for index in partitions:
            self.states.pop((topic, index), None)
        log.info("controller: deleted topic %s", topic)
        return sends

    def _remove_topic_znodes(self, topic: str, partitions: dict[int, Any]) -> None:
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
        value = self.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if value is None:
            return self.unclean_election
        return value.strip().lower() == "true"

    # -- ISR changes made by leaders ----------------------------------------------------

    def _on_isr_changes_watch(self, _event: Any) -> None:
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
        known = sorted(k for k in keys if k[1] in self.assignments.get(k[0], {}))
        for key in known:
            found = read_partition_state(self.zk, *key)
            if found is not None:
                self.states[key] = found
        if not known:
            return []
        log.info("controller: ISR changed for %s", ", ".join(f"{t}-{p}" for t, p in known))
        return self._update_metadata_to_all(known)

    # -- preferred leaders --------------------------------------------------------------

    def _on_preferred_watch(self, _event: Any) -> None:
        if self.active:
            self._submit(self._preferred_election_event)

    def _preferred_election_event(self) -> list[Send]:
        """``/admin/preferred_replica_election`` was written: elect, then remove the znode."""
        if not self.election.is_controller:
            return []
        path = ZkPaths.PREFERRED_REPLICA_ELECTION
        if self.zk.exists(path, watch=self._on_preferred_watch) is None:
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
        sends = self._elect_preferred(keys)
        try:
            self.zk.delete(path)
        except NoNodeError:
            pass
        self.zk.exists(path, watch=self._on_preferred_watch)
        return sends

    def _elect_preferred(self, keys: list[tuple[str, int]]) -> list[Send]:
        changed = []
        for key in keys:
            for _attempt in range(WRITE_ATTEMPTS):
                outcome = self._move_leader(key, self._preferred_choice)
                if outcome is not None:
                    if outcome:
                        changed.append(key)
                    break
        if not changed:
            return []
        log.info("controller: preferred leaders elected for %s",
                 ", ".join(f"{t}-{p}" for t, p in changed))
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _preferred_choice(self, key: tuple[str, int], state: PartitionState,
                          replicas: tuple[int, ...]) -> PartitionState | None:
        preferred = replicas[0] if replicas else -1
        if (state.leader == preferred or preferred not in self.brokers
                or preferred not in state.isr or preferred in self.shutting_down):
            return None
        return PartitionState(preferred, state.leader_epoch + 1, state.isr, self.epoch)

    def _move_leader(self, key: tuple[str, int], choose: Callable[..., PartitionState | None]
                     ) -> bool | None:
        """Write ``choose``'s new state for ``key``: True written, False no change, None
        conflict (the znode moved; reread, so the caller may decide again)."""
        current = self.states.get(key)
        replicas = self.assignments.get(key[0], {}).get(key[1])
        if current is None or replicas is None:
            return False
        state = choose(key, current[0], tuple(replicas))
        if state is None:
            return False
        return True if self._update_state(key, state) else None

    def _rebalance_event(self) -> list[Send]:
        """auto.leader.rebalance.enable: preferred elections where a broker's imbalance is high."""
        if not self.election.is_controller:
            return []
        preferred_of: dict[int, list[tuple[str, int]]] = {}
        for key, replicas in self._replicas_items():
            if replicas and key in self.states:
                preferred_of.setdefault(replicas[0], []).append(key)
        keys = []
        for broker_id, its in sorted(preferred_of.items()):
            if broker_id not in self.brokers or broker_id in self.shutting_down:
                continue
            elsewhere = [k for k in its if self.states[k][0].leader != broker_id]
            if elsewhere and 100 * len(elsewhere) / len(its) > self.imbalance_percentage:
                keys += elsewhere
        return self._elect_preferred(keys) if keys else []

    # -- controlled shutdown ------------------------------------------------------------

    def _on_controlled_shutdown_watch(self, _event: Any) -> None:
        if self.active:
            self._submit(self._controlled_shutdown_event)

    def _controlled_shutdown_event(self) -> list[Send]:
        """Brokers about to stop: move their leaderships away, drop them from ISRs."""
        if not self.election.is_controller:
            return []
        self.zk.ensure_path(CONTROLLED_SHUTDOWN_PATH)
        children = self.zk.get_children(CONTROLLED_SHUTDOWN_PATH,
                                        watch=self._on_controlled_shutdown_watch)
        announced = {int(c) for c in children if c.isdigit()} & set(self.brokers)
        new = announced - self.shutting_down
        self.shutting_down = announced
        if not new:
            return []
        changed = []
        for key, (state, _version) in sorted(self.states.items()):
            if not (set(state.isr) | {state.leader}) & new:
                continue
            for _attempt in range(WRITE_ATTEMPTS):
                outcome = self._move_leader(key, self._shutdown_choice)
                if outcome is not None:
                    if outcome:
                        changed.append(key)
                    break
        log.info("controller: controlled shutdown of %s moved %d partitions", sorted(new),
                 len(changed))
        if not changed:
            return []
        return self._leader_and_isr(changed) + self._update_metadata_to_all(changed)

    def _shutdown_choice(self, key: tuple[str, int], state: PartitionState,
                         replicas: tuple[int, ...]) -> PartitionState | None:
        staying = [r for r in state.isr if r not in self.shutting_down and r in self.brokers]
        if state.leader in self.shutting_down:
            candidates = [r for r in replicas if r in staying]
            if not candidates:
                return None  # nobody else in sync: it leads until it goes (then offline)
            return PartitionState(candidates[0], state.leader_epoch + 1, tuple(staying),
                                  self.epoch)
        isr = tuple(r for r in state.isr if r not in self.shutting_down)
        if isr == state.isr or not isr:
            return None
        return PartitionState(state.leader, state.leader_epoch + 1, isr, self.epoch)

    def _all_partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t, parts in self.assignments.items() for p in parts]

    def _replicas_items(self) -> list[tuple[tuple[str, int], tuple[int, ...]]]:
        return [((t, p), r) for t, parts in self.assignments.items() for p, r in parts.items()]

    def _partition_state_entry(self, key: tuple[str, int], with_offline: bool) -> dict | None:
        found = self.states.get(key)
        if found is None:
            return None
        state, version = found
        replicas = list(self.assignments.get(key[0], {}).get(key[1], ()))
        entry = {"partition_index": key[1], "controller_epoch": state.controller_epoch,
                 "leader": state.leader, "leader_epoch": state.leader_epoch,
                 "isr": list(state.isr), "zk_version": version, "replicas": replicas}
        if with_offline:
            entry["offline_replicas"] = [r for r in replicas if r not in self.brokers]
        else:
            entry["is_new"] = False
        return entry

    def _grouped(self, keys: list[tuple[str, int]], with_offline: bool) -> list[dict]:
        topics: dict[str, list[dict]] = {}
        for key in keys:
            entry = self._partition_state_entry(key, with_offline)
            if entry is not None:
                topics.setdefault(key[0], []).append(entry)
        return [{"topic_name": t, "partition_states": states} for t, states in topics.items()]

    def _update_metadata_body(self, broker_id: int, topic_states: list[dict]) -> dict:
        return {
            "controller_id": self.broker_id, "controller_epoch": self.epoch,
            "broker_epoch": self.broker_epochs.get(broker_id, -1),
            "topic_states": topic_states,
            "live_brokers": [
                {"id": b.broker_id, "rack": b.rack,
                 "endpoints": [{"port": b.port, "host": b.host, "listener": b.listener,
                                "security_protocol": PLAINTEXT}]}
                for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)
            ],
        }

    def _update_metadata_to_all(self, keys: list[tuple[str, int]]) -> list[Send]:
        topic_states = self._grouped(keys, with_offline=True)
        return [(b, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION,
                 self._update_metadata_body(b, topic_states)) for b in sorted(self.brokers)]

    def _leader_and_isr(self, keys: list[tuple[str, int]],
                        only: set[int] | None = None) -> list[Send]:
        """LeaderAndIsr to every live replica of ``keys`` (or only to brokers in ``only``)."""
        per_broker: dict[int, list[tuple[str, int]]] = {}
        for key in keys:
            for replica in self.assignments.get(key[0], {}).get(key[1], ()):
                if replica in self.brokers and (only is None or replica in only):
                    per_broker.setdefault(replica, []).append(key)
        sends: list[Send] = []
        for broker_id, its_keys in sorted(per_broker.items()):
            leaders = {self.states[k][0].leader for k in its_keys if k in self.states}
            sends.append((broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, {
                "controller_id": self.broker_id, "controller_epoch": self.epoch,
                "broker_epoch": self.broker_epochs.get(broker_id, -1),
                "topic_states": self._grouped(its_keys, with_offline=False),
                "live_leaders": [{"broker_id": b, "host_name": self.brokers[b].host,
                                  "port": self.brokers[b].port}
                                 for b in sorted(leaders) if b in self.brokers],
            }))
        return sends


def read_topic_config(zk: Any, topic: str) -> dict[str, str]:
    """A topic's overrides from ``/config/topics/<t>`` ({} when there are none)."""
    try:
        data, _stat = zk.get(ZkPaths.topic_config(topic))
    except NoNodeError:
        return {}
    return dict(TopicConfig.from_json(data, topic).config)
