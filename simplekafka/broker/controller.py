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
  partitions dropped from every metadata cache, then the znodes removed.

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
    PartitionState,
    TopicConfig,
    ZkPaths,
)
from simplekafka.protocol.api import ApiKey

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 2
UPDATE_METADATA_VERSION = 5
STOP_REPLICA_VERSION = 1
PLAINTEXT = 0  # security protocol id in UpdateMetadata endpoints
RELOAD_DELAY = 1.0  # seconds before reloading after a ZooKeeper error

# One request for the channel: (target broker, api key, api version, body).
Send = tuple[int, ApiKey, int, dict]


class Controller:
    """Controller state and decisions; methods ending in ``_event`` run on the event thread."""

    def __init__(self, broker_id: int, election: ControllerElection,
                 send: Callable[[list[Send]], None], unclean_election: bool = False,
                 call_later: Callable[..., Any] | None = None):
        self.broker_id = broker_id
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

    # -- election callbacks (reactor thread) --------------------------------------------

    def on_elected(self, epoch: int) -> None:
        self.active = True
        self.epoch = epoch
        self._submit(self._startup_event)

    def on_resigned(self) -> None:
        self.active = False
        self._submit(self._reset)

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
        changed = self._elect_leaders(list(self.states_keys_needing_leaders()))
        sends = self._update_metadata_to_all(self._all_partitions())
        sends += self._leader_and_isr(self._all_partitions())
        log.info("controller %d (epoch %d) loaded %d topics, elected %d leaders",
                 self.broker_id, self.epoch, len(self.assignments), len(changed))
        sends += self._deletions_event()
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
        affected = set()
        # Dead brokers leave every ISR they were in; partitions they led need a new leader.
        for key, (state, _version) in list(self.states.items()):
            if state.leader in gone or state.leader not in live or set(state.isr) & gone:
                affected.add(key)
        changed = self._elect_leaders(sorted(affected))
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
        for index in assignment.partitions:
            found = read_partition_state(self.zk, topic, index)
            if found is not None:
                self.states[(topic, index)] = found

    def _elect_leaders(self, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """Elect (new or offline) leaders for ``keys`` and write them; returns what changed."""
        live = set(self.brokers)
        changed = []
        for key in keys:
            replicas = self.assignments.get(key[0], {}).get(key[1])
            if replicas is None:
                continue
            current = self.states.get(key)
            if current is None:
                state = elect_leader_for_new_partition(replicas, live, self.epoch)
                if state is None:
                    log.warning("%s-%d: no live replica among %s", *key, list(replicas))
                    continue
                if self._create_state(key, state):
                    changed.append(key)
                continue
            old, _version = current
            if old.leader in live:
                # The leader stays; dead members leave the ISR, and the leader epoch rises.
                isr = tuple(r for r in old.isr if r in live)
                if isr == old.isr:
                    continue
                state = PartitionState(old.leader, old.leader_epoch + 1, isr, self.epoch)
            else:
                state = elect_leader_for_offline_partition(
                    replicas, old, live, self.epoch, self.unclean_election)
                if state == old:
                    continue
            if self._update_state(key, state):
                changed.append(key)
        return changed

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
