"""Adding partitions to a topic: its assignment znode extended, nothing else written.

``/brokers/topics/<t>`` keeps the replica list of every partition. Adding
partitions (what ``kafka-topics --alter --partitions`` did in ZooKeeper mode)
rewrites it with the new partitions appended, conditional on the version read,
so two concurrent changes cannot lose one another. The controller watches each
topic's znode, notices partitions it has no state for, and elects their
leaders as for a new topic. New replicas go on the live brokers, rack-aware,
continuing the topic's own round (start index: partition 0's first replica).
"""

from __future__ import annotations

from collections.abc import Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from simplekafka.coordination.assignment import AssignmentError, assign_replicas
from simplekafka.coordination.topics import TopicError, live_brokers, validate_topic_name
from simplekafka.coordination.znodes import TopicAssignment, ZkPaths
from simplekafka.protocol.errors import ErrorCode


def add_partitions(zk: KazooClient, topic: str, total: int,
                   assignments: Sequence[Sequence[int]] | None = None,
                   validate_only: bool = False) -> TopicAssignment:
    """Grow ``topic`` to ``total`` partitions; ``assignments`` gives the new partitions'
    replicas (else they are placed like Kafka's). Raises TopicError with Kafka's code."""
    validate_topic_name(topic)
    path = ZkPaths.topic(topic)
    try:
        data, stat = zk.get(path)
    except NoNodeError:
        raise TopicError(f"topic {topic!r} does not exist",
                         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
    if zk.exists(ZkPaths.delete_topic(topic)):
        raise TopicError(f"topic {topic!r} is being deleted", ErrorCode.INVALID_TOPIC_EXCEPTION)
    current = TopicAssignment.from_json(data, topic)
    existing = len(current.partitions)
    if total <= existing:
        raise TopicError(f"topic {topic!r} has {existing} partitions; the new count must be "
                         f"larger, got {total}", ErrorCode.INVALID_PARTITIONS)
    brokers = live_brokers(zk)
    new = _new_replicas(current, total, brokers, assignments)
    grown = TopicAssignment({**current.partitions, **new}, topic_id=current.topic_id)
    if validate_only:
        return grown
    try:
        zk.set(path, grown.to_json(), version=stat.version)
    except BadVersionError:
        raise TopicError(f"topic {topic!r} changed meanwhile; try again",
                         ErrorCode.REASSIGNMENT_IN_PROGRESS) from None
    return grown


def _new_replicas(current: TopicAssignment, total: int, brokers: dict,
                  assignments: Sequence[Sequence[int]] | None) -> dict[int, tuple[int, ...]]:
    existing = len(current.partitions)
    factor = current.replication_factor
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if assignments is not None:
        if len(assignments) != total - existing:
            raise TopicError(f"{len(assignments)} assignments given for "
                             f"{total - existing} new partitions", code)
        new: dict[int, tuple[int, ...]] = {}
        for offset, replicas in enumerate(assignments):
            replicas = tuple(replicas)
            if len(replicas) != factor or len(set(replicas)) != len(replicas):
                raise TopicError(f"each new partition needs {factor} distinct replicas, "
                                 f"got {list(replicas)}", code)
            unknown = sorted(set(replicas) - set(brokers))
            if unknown:
                raise TopicError(f"unknown brokers {unknown} in the assignment", code)
            new[existing + offset] = replicas
        return new
    if factor > len(brokers):
        raise TopicError(f"replication factor {factor} is larger than the number of live "
                         f"brokers ({len(brokers)})", ErrorCode.INVALID_REPLICATION_FACTOR)
    ids = sorted(brokers)
    first = current.partitions[min(current.partitions)][0]
    start = ids.index(first) if first in ids else 0
    try:
        placed = assign_replicas(ids, {b: i.rack for b, i in brokers.items()},
                                 total - existing, factor, start_index=start,
                                 first_partition=existing)
    except AssignmentError as exc:
        raise TopicError(str(exc), code) from exc
    return {p: tuple(r) for p, r in placed.items()}
