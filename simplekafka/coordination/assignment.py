"""Replica assignment: which brokers hold each partition of a new topic.

The same idea as Kafka's ``AdminUtils.assignReplicasToBrokers`` (written anew
here): walk the brokers round-robin for the first replica (the preferred
leader) so leaders spread evenly, and place the other replicas at a shift from
it that grows every time the partition count wraps around the broker list, so
followers spread too. With racks, the broker list is first interleaved rack by
rack (r1, r2, r3, r1, r2, r3, ...) and a follower is skipped while its rack, or
the broker itself, already holds a replica of the partition and another rack
(or broker) does not.

Pure functions, no ZooKeeper: easy to test over many shapes with hypothesis.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

__all__ = ["AssignmentError", "assign_replicas", "rack_alternated_brokers"]


class AssignmentError(ValueError):
    """The requested assignment is impossible (bad counts, mixed rack information)."""


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: the first of each rack, then the second of each, ...

    Racks and the brokers within a rack are taken in sorted order, so the result
    is deterministic.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    arranged: list[int] = []
    for round_ in range(max(map(len, queues), default=0)):
        arranged.extend(queue[round_] for queue in queues if round_ < len(queue))
    return arranged


def _follower_index(first: int, shift: int, replica: int, brokers: int) -> int:
    """Where the ``replica``-th follower sits: never on the first replica's index."""
    return (first + 1 + (shift + replica) % (brokers - 1)) % brokers


def assign_replicas(
    broker_ids: Iterable[int],
    racks: Mapping[int, str | None] | None,
    partitions: int,
    replication_factor: int,
    start_index: int | None = None,
    replica_shift: int | None = None,
    first_partition: int = 0,
) -> dict[int, list[int]]:
    """Map each partition id to its replica list (the first entry is the preferred leader).

    ``racks`` maps broker id to rack name (or None). Rack-aware placement is used
    when every broker has a rack; when only some do, that is an error (as in
    Kafka). ``start_index`` and ``replica_shift`` are random unless given, so
    that many topics do not all put their first leader on the same broker; pass
    them to get a reproducible assignment.
    """
    brokers = sorted(set(broker_ids))
    if partitions <= 0:
        raise AssignmentError(f"number of partitions must be at least 1, got {partitions}")
    if replication_factor <= 0:
        raise AssignmentError(f"replication factor must be at least 1, got {replication_factor}")
    if replication_factor > len(brokers):
        raise AssignmentError(
            f"replication factor {replication_factor} is larger than the number of "
            f"available brokers ({len(brokers)})"
        )
    racks = dict(racks or {})
    with_rack: dict[int, str] = {b: rack for b in brokers if (rack := racks.get(b)) is not None}
    if with_rack and len(with_rack) != len(brokers):
        missing = sorted(set(brokers) - set(with_rack))
        raise AssignmentError(f"brokers {missing} have no rack while others do; "
                              "give every broker a rack or none")
    count = len(brokers)
    start = random.randrange(count) if start_index is None else start_index % count
    shift = random.randrange(count) if replica_shift is None else replica_shift % count
    if with_rack:
        arranged = rack_alternated_brokers(with_rack)
        rack_of = with_rack
    else:
        arranged = brokers
        rack_of = {}
    rack_count = len(set(rack_of.values()))
    assignment: dict[int, list[int]] = {}
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1  # each full pass over the brokers moves followers one step further
        first = (partition + start) % count
        replicas = [arranged[first]]
        if rack_of:
            _place_rack_aware_followers(arranged, rack_of, rack_count, first, shift,
                                        replication_factor, replicas)
        else:
            replicas += [arranged[_follower_index(first, shift, j, count)]
                         for j in range(replication_factor - 1)]
        assignment[partition] = replicas
    return assignment


def _place_rack_aware_followers(arranged: list[int], rack_of: Mapping[int, str],
                                rack_count: int, first: int, shift: int,
                                replication_factor: int, replicas: list[int]) -> None:
    """Append followers, preferring racks (then brokers) that hold no replica yet."""
    count = len(arranged)
    used_racks = {rack_of[replicas[0]]}
    candidate = 0
    while len(replicas) < replication_factor:
        broker = arranged[_follower_index(first, shift * rack_count, candidate, count)]
        candidate += 1
        rack_is_new = rack_of[broker] not in used_racks or len(used_racks) == rack_count
        if rack_is_new and broker not in replicas:
            replicas.append(broker)
            used_racks.add(rack_of[broker])
