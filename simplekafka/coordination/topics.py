"""Topics in ZooKeeper: validation, creation, and the partition state znodes.

Creating a topic writes ``/config/topics/<t>`` then ``/brokers/topics/<t>``
(in that order, in one multi, so a watcher never sees an assignment without
its config). Everything is validated first: bad input raises
:class:`TopicError` with the Kafka error code a CreateTopics answer would
carry, and nothing is written.

Partition state znodes belong to the controller: it creates and updates them
through a fenced transaction (see :mod:`simplekafka.coordination.election`),
each update conditional on the znode's version.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import WatchedEvent

from simplekafka.coordination.assignment import AssignmentError, assign_replicas
from simplekafka.coordination.znodes import (
    BrokerInfo,
    PartitionState,
    TopicAssignment,
    TopicConfig,
    ZkPaths,
)
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.topic_ids import new_topic_id

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "TopicError",
    "add_partition_state_creation",
    "create_topic",
    "create_topic_znodes",
    "elect_leader_for_new_partition",
    "elect_leader_for_offline_partition",
    "list_topics",
    "live_brokers",
    "read_partition_state",
    "read_partition_states",
    "read_partition_states_of",
    "read_topic_assignment",
    "read_topic_assignments",
    "validate_topic_name",
]

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicError(ValueError):
    """A topic request that cannot be carried out; ``error_code`` is Kafka's answer."""

    def __init__(self, message: str, error_code: ErrorCode):
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(name: object) -> str:
    """Return ``name`` if Kafka would accept it as a topic name, else raise TopicError.

    Kafka's rules: 1 to 249 characters from ``[a-zA-Z0-9._-]``, and not ``.`` or ``..``.
    """
    code = ErrorCode.INVALID_TOPIC_EXCEPTION
    if not isinstance(name, str):
        raise TopicError(f"topic name must be a string, got {type(name).__name__}", code)
    if not name:
        raise TopicError("topic name is empty", code)
    if name in (".", ".."):
        raise TopicError(f"topic name cannot be {name!r}", code)
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError(f"topic name is {len(name)} characters long; the limit is "
                         f"{MAX_TOPIC_NAME_LENGTH}", code)
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL_TOPIC_NAME.fullmatch(c)})
        raise TopicError(f"topic name {name!r} contains {''.join(bad)!r}; only ASCII letters, "
                         "digits, '.', '_' and '-' are allowed", code)
    return name


def _collision_key(name: str) -> str:
    """'.' and '_' collide in metric names, so Kafka refuses topics differing only there."""
    return name.replace(".", "_")


def check_no_collision(name: str, existing: Iterable[str]) -> None:
    """Raise TopicError (INVALID_TOPIC_EXCEPTION) if ``name`` differs from an existing
    topic only by '.' against '_', as Kafka refuses it."""
    key = _collision_key(name)
    clash = [t for t in existing if t != name and _collision_key(t) == key]
    if clash:
        raise TopicError(f"topic {name!r} collides with existing topic {clash[0]!r} "
                         "('.' and '_' count as the same)", ErrorCode.INVALID_TOPIC_EXCEPTION)


def live_brokers(zk: KazooClient) -> dict[int, BrokerInfo]:
    """The registered brokers, by id (skipping any that vanish while being read)."""
    brokers: dict[int, BrokerInfo] = {}
    try:
        children = zk.get_children(ZkPaths.BROKER_IDS)
    except NoNodeError:
        return brokers
    for child in children:
        if not child.isdigit():
            continue
        try:
            data, _stat = zk.get(ZkPaths.broker(int(child)))
        except NoNodeError:
            continue
        brokers[int(child)] = BrokerInfo.from_json(int(child), data)
    return brokers


def list_topics(zk: KazooClient) -> list[str]:
    try:
        return sorted(zk.get_children(ZkPaths.BROKER_TOPICS))
    except NoNodeError:
        return []


def read_topic_assignment(zk: KazooClient, topic: str) -> TopicAssignment | None:
    try:
        data, _stat = zk.get(ZkPaths.topic(topic))
    except NoNodeError:
        return None
    return TopicAssignment.from_json(data, topic)


def read_partition_state(zk: KazooClient, topic: str,
                         partition: int) -> tuple[PartitionState, int] | None:
    """``(state, znode version)`` or None; pass the version to a conditional update."""
    try:
        data, stat = zk.get(ZkPaths.partition_state(topic, partition))
    except NoNodeError:
        return None
    return PartitionState.from_json(data, topic, partition), stat.version


def read_partition_states(zk: KazooClient, topic: str, partitions: Iterable[int]
                          ) -> dict[int, tuple[PartitionState, int]]:
    """``read_partition_state`` for many partitions of one topic, pipelined."""
    found = read_partition_states_of(zk, [(topic, index) for index in partitions])
    return {index: state for (_topic, index), state in found.items()}


def read_partition_states_of(zk: KazooClient, keys: Iterable[tuple[str, int]]
                             ) -> dict[tuple[str, int], tuple[PartitionState, int]]:
    """``read_partition_state`` for many (topic, partition)s, the reads pipelined (sent
    together, then awaited): a new controller loads 10,000 states in a few round trips.
    Partitions without a state znode are left out."""
    sent = [(key, zk.get_async(ZkPaths.partition_state(*key))) for key in keys]
    found = {}
    for key, answer in sent:
        try:
            data, stat = answer.get()
        except NoNodeError:
            continue
        found[key] = (PartitionState.from_json(data, *key), stat.version)
    return found


def read_topic_assignments(zk: KazooClient, topics: Iterable[str],
                           watch: Callable[[WatchedEvent], object] | None = None
                           ) -> dict[str, TopicAssignment]:
    """``read_topic_assignment`` for many topics, pipelined; topics gone meanwhile are left
    out. With ``watch``, each read also leaves a data watch on the topic's znode (set by the
    read itself, so no change after it goes unseen), as Kafka's controller reads them."""
    sent = [(topic, zk.get_async(ZkPaths.topic(topic), watch=watch)) for topic in topics]
    found = {}
    for topic, answer in sent:
        try:
            data, _stat = answer.get()
        except NoNodeError:
            continue
        found[topic] = TopicAssignment.from_json(data, topic)
    return found


def _validate_assignment(assignment: Mapping[int, list[int] | tuple[int, ...]],
                         known_brokers: set[int] | None) -> dict[int, tuple[int, ...]]:
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if not assignment:
        raise TopicError("a topic needs at least one partition", ErrorCode.INVALID_PARTITIONS)
    partitions = sorted(assignment)
    if partitions != list(range(len(partitions))):
        raise TopicError(f"partitions must be numbered 0..{len(partitions) - 1}, "
                         f"got {partitions}", code)
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise TopicError("every partition needs the same, non-zero number of replicas", code)
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise TopicError(f"partition {partition} lists a broker twice: {list(replicas)}",
                             code)
        if known_brokers is not None and not set(replicas) <= known_brokers:
            unknown = sorted(set(replicas) - known_brokers)
            raise TopicError(f"partition {partition} is assigned to unknown brokers {unknown}",
                             code)
    return {p: tuple(assignment[p]) for p in partitions}


def create_topic_znodes(
    zk: KazooClient,
    topic: str,
    assignment: Mapping[int, list[int] | tuple[int, ...]],
    config: Mapping[str, str] | None = None,
) -> TopicAssignment:
    """Write a new topic's config and replica assignment (validated; nothing written on error)."""
    validate_topic_name(topic)
    # Each topic created gets a new ID (KIP-516): a topic of the same name created after
    # this one is deleted is a different topic, and clients can tell.
    checked = TopicAssignment(_validate_assignment(assignment, None), topic_id=new_topic_id())
    topic_config = TopicConfig({str(k): str(v) for k, v in (config or {}).items()})
    existing = list_topics(zk)
    if topic in existing:
        raise TopicError(f"topic {topic!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
    check_no_collision(topic, existing)
    zk.ensure_path(ZkPaths.CONFIG_TOPICS)
    zk.ensure_path(ZkPaths.BROKER_TOPICS)
    transaction = zk.transaction()
    if zk.exists(ZkPaths.topic_config(topic)):  # a leftover config: overwrite it, as Kafka does
        transaction.set_data(ZkPaths.topic_config(topic), topic_config.to_json())
    else:
        transaction.create(ZkPaths.topic_config(topic), topic_config.to_json())
    transaction.create(ZkPaths.topic(topic), checked.to_json())
    results = transaction.commit()
    failures = [r for r in results if isinstance(r, Exception)]
    if failures:
        raise TopicError(f"topic {topic!r} could not be created: someone else wrote it "
                         f"first ({type(failures[0]).__name__})", ErrorCode.TOPIC_ALREADY_EXISTS)
    return checked


def create_topic(
    zk: KazooClient,
    topic: str,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str] | None = None,
    replica_assignment: Mapping[int, list[int]] | None = None,
) -> TopicAssignment:
    """Create a topic over the live brokers: validate, assign replicas (rack-aware), write.

    This is the admin path (what ``kafka-topics --create --zookeeper`` did); the
    controller notices the new ``/brokers/topics/<t>`` and elects leaders.
    """
    validate_topic_name(topic)
    brokers = live_brokers(zk)
    if replica_assignment is not None:
        return create_topic_znodes(
            zk, topic, _validate_assignment(replica_assignment, set(brokers)), config)
    if not isinstance(partitions, int) or partitions <= 0:
        raise TopicError(f"number of partitions must be at least 1, got {partitions}",
                         ErrorCode.INVALID_PARTITIONS)
    if not isinstance(replication_factor, int) or replication_factor <= 0:
        raise TopicError(f"replication factor must be at least 1, got {replication_factor}",
                         ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor > len(brokers):
        raise TopicError(f"replication factor {replication_factor} is larger than the number "
                         f"of live brokers ({len(brokers)})",
                         ErrorCode.INVALID_REPLICATION_FACTOR)
    try:
        assignment = assign_replicas(brokers, {b: i.rack for b, i in brokers.items()},
                                     partitions, replication_factor)
    except AssignmentError as exc:
        raise TopicError(str(exc), ErrorCode.INVALID_REPLICA_ASSIGNMENT) from exc
    return create_topic_znodes(zk, topic, assignment, config)


class _Creates(Protocol):
    def create(self, path: str, value: bytes = b"", ephemeral: bool = False,
               sequence: bool = False) -> object: ...


def add_partition_state_creation(transaction: _Creates, zk: KazooClient, topic: str,
                                 partition: int, state: PartitionState,
                                 planned: set[str] | None = None) -> None:
    """Add to ``transaction`` the creation of a partition's state znode and missing parents.

    The parents (``.../partitions`` and ``.../partitions/<p>``) go into the same
    (fenced) multi rather than being created beforehand, so a deposed controller
    cannot leave even an empty znode behind. Pass the same ``planned`` set when
    adding several partitions to one transaction, so a parent is created once.
    """
    planned = set() if planned is None else planned
    for parent in (ZkPaths.partitions(topic), ZkPaths.partition(topic, partition)):
        if parent not in planned and zk.exists(parent) is None:
            transaction.create(parent, b"")
            planned.add(parent)
    transaction.create(ZkPaths.partition_state(topic, partition), state.to_json())


def elect_leader_for_new_partition(replicas: tuple[int, ...] | list[int], live: set[int],
                                   controller_epoch: int) -> PartitionState | None:
    """A new partition: leader = first live replica, ISR = the live replicas, epoch 0."""
    isr = tuple(r for r in replicas if r in live)
    if not isr:
        return None
    return PartitionState(leader=isr[0], leader_epoch=0, isr=isr,
                          controller_epoch=controller_epoch)


def elect_leader_for_offline_partition(replicas: tuple[int, ...] | list[int],
                                       current: PartitionState, live: set[int],
                                       controller_epoch: int,
                                       unclean: bool = False) -> PartitionState:
    """A partition whose leader is gone: first replica (assignment order) in ISR ∩ live.

    The new ISR is the old ISR ∩ live, but never empty: with nobody left the
    leader becomes -1 and the ISR is kept. Every change of leader bumps
    ``leader_epoch``. With ``unclean`` the first live replica leads alone.
    """
    live_isr = tuple(r for r in current.isr if r in live)
    candidates = [r for r in replicas if r in live_isr]
    if candidates:
        leader, isr = candidates[0], live_isr
    elif unclean and any(r in live for r in replicas):
        leader = next(r for r in replicas if r in live)
        isr = (leader,)
    else:
        leader, isr = -1, current.isr
    if leader == current.leader and isr == current.isr:
        return current
    return PartitionState(leader=leader, leader_epoch=current.leader_epoch + 1, isr=isr,
                          controller_epoch=controller_epoch)
