"""Reassignment plans: move as few replicas as possible to a new broker list.

Kafka's ``kafka-reassign-partitions --generate`` assigns the moved topics from
scratch, so most replicas move even when one broker joins. This plan keeps
every replica that may stay and moves only what balance requires (written anew
here, pure functions, no ZooKeeper):

1. keep each partition's replicas that are on a broker of the new list;
2. fill the missing ones on the least-loaded broker, preferring a rack the
   partition does not use yet;
3. repair rack spread: where a partition uses fewer racks than it could, move
   one replica of a doubled rack to a rack it lacks;
4. balance: while one broker holds two replicas more than another, move one
   replica from the fullest to the emptiest, never losing a rack;
5. undo detours: the greedy steps can move a replica where handing a replica
   along a chain of partitions would have kept one more in place, so cancel
   such chains while one exists (a negative cycle of moves, as in min-cost flow;
   with none left the movement is the least that balance allows);
6. order each partition's replicas so preferred leaders (first replica) are
   spread within one of each other where the replica sets allow it, by
   shifting leadership along chains of partitions. Reordering moves no data.

A replica "moves" when a broker gains a partition it did not hold: that is the
data the cluster copies.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Iterable, Mapping

from simplekafka.coordination.assignment import AssignmentError

__all__ = ["Assignment", "PartitionKey", "parse_reassignment_json", "parse_topics_to_move",
           "plan_reassignment", "reassignment_json", "replicas_during", "replicas_moved"]

PartitionKey = tuple[str, int]
Assignment = dict[PartitionKey, list[int]]


def replicas_moved(current: Mapping[PartitionKey, list[int]],
                   proposed: Mapping[PartitionKey, list[int]]) -> int:
    """How many (partition, broker) replicas the proposal creates that did not exist."""
    return sum(len(set(replicas) - set(current.get(key, ())))
               for key, replicas in proposed.items())


def plan_reassignment(current: Mapping[PartitionKey, Iterable[int]],
                      brokers: Iterable[int],
                      racks: Mapping[int, str | None] | None = None) -> Assignment:
    """The proposed replicas of every partition in ``current``, on ``brokers`` only.

    Each partition keeps its replication factor. ``racks`` maps broker id to rack
    (or None); as in topic creation, either every broker has a rack or none.
    """
    targets = sorted(set(brokers))
    if not targets:
        raise AssignmentError("the broker list is empty")
    rack_of = _racks_of(targets, racks)
    plan: Assignment = {}
    for key in sorted(current):
        replicas = list(current[key])
        if len(set(replicas)) != len(replicas) or not replicas:
            raise AssignmentError(f"partition {key[0]}-{key[1]} has replicas {replicas}")
        if len(replicas) > len(targets):
            raise AssignmentError(
                f"partition {key[0]}-{key[1]} has replication factor {len(replicas)}, "
                f"more than the {len(targets)} brokers in the list")
        plan[key] = [b for b in replicas if b in targets]
    wanted = {key: len(list(current[key])) for key in current}
    load = Counter({b: 0 for b in targets})
    load.update(b for replicas in plan.values() for b in replicas)
    _fill(plan, wanted, targets, rack_of, load)
    _repair_racks(plan, targets, rack_of, load)
    _balance(plan, targets, rack_of, load)
    _cancel_detours(plan, current, targets, rack_of, load)
    _balance_leaders(plan, targets)
    return plan


def _racks_of(brokers: list[int], racks: Mapping[int, str | None] | None) -> dict[int, str]:
    """Each broker's rack; without racks every broker is its own rack."""
    given = {b: r for b, r in (racks or {}).items() if b in brokers and r is not None}
    if given and len(given) != len(brokers):
        missing = sorted(set(brokers) - set(given))
        raise AssignmentError(f"brokers {missing} have no rack while others do; "
                              "give every broker a rack or none")
    return given or {b: f"broker-{b}" for b in brokers}


def _fill(plan: Assignment, wanted: Mapping[PartitionKey, int], brokers: list[int],
          rack_of: Mapping[int, str], load: Counter) -> None:
    """Add the replicas lost with removed brokers on the least-loaded brokers."""
    # Partitions missing the most replicas first, so their choices are the widest.
    for key in sorted(plan, key=lambda k: (len(plan[k]) - wanted[k], k)):
        replicas = plan[key]
        while len(replicas) < wanted[key]:
            used = {rack_of[b] for b in replicas}
            free = [b for b in brokers if b not in replicas]
            broker = min(free, key=lambda b: (rack_of[b] in used, load[b], b))
            replicas.append(broker)
            load[broker] += 1


def _rack_room(replicas: list[int], rack_of: Mapping[int, str], rack_count: int) -> bool:
    """Whether the partition could use more racks than it does."""
    return len({rack_of[b] for b in replicas}) < min(len(replicas), rack_count)


def _repair_racks(plan: Assignment, brokers: list[int], rack_of: Mapping[int, str],
                  load: Counter) -> None:
    rack_count = len(set(rack_of.values()))
    for replicas in plan.values():
        while _rack_room(replicas, rack_of, rack_count):
            seen = Counter(rack_of[b] for b in replicas)
            doubled = [b for b in replicas if seen[rack_of[b]] > 1]
            leaving = max(doubled, key=lambda b: (load[b], b))
            fresh = [b for b in brokers if rack_of[b] not in seen]
            joining = min(fresh, key=lambda b: (load[b], b))
            replicas[replicas.index(leaving)] = joining
            load[leaving] -= 1
            load[joining] += 1


def _balance(plan: Assignment, brokers: list[int], rack_of: Mapping[int, str],
             load: Counter) -> None:
    """Move single replicas from full brokers to empty ones until within one."""
    rack_count = len(set(rack_of.values()))
    for _ in range(sum(load.values()) + 1):  # every move narrows the spread; bounded anyway
        move = _best_move(plan, brokers, rack_of, rack_count, load)
        if move is None:
            return
        key, leaving, joining = move
        replicas = plan[key]
        replicas[replicas.index(leaving)] = joining
        load[leaving] -= 1
        load[joining] += 1


def _best_move(plan: Assignment, brokers: list[int], rack_of: Mapping[int, str],
               rack_count: int, load: Counter) -> tuple[PartitionKey, int, int] | None:
    """A (partition, from, to) move from a broker two above another, keeping racks."""
    holdings: dict[int, set[PartitionKey]] = {b: set() for b in brokers}
    for key, replicas in plan.items():
        for b in replicas:
            holdings[b].add(key)
    by_load = sorted(brokers, key=lambda b: (load[b], b))
    for joining in by_load:
        for leaving in reversed(by_load):
            if load[leaving] - load[joining] < 2:
                break
            for key in sorted(holdings[leaving] - holdings[joining]):
                replicas = plan[key]
                after = [joining if b == leaving else b for b in replicas]
                racks_before = len({rack_of[b] for b in replicas})
                if len({rack_of[b] for b in after}) >= racks_before:
                    return key, leaving, joining
    return None


_SLACK = -1  # the node standing for "whichever brokers hold the one extra replica"
Step = tuple[int, int, "PartitionKey | None"]  # (from, to, partition; None through _SLACK)


def _cancel_detours(plan: Assignment, current: Mapping[PartitionKey, Iterable[int]],
                    brokers: list[int], rack_of: Mapping[int, str], load: Counter) -> None:
    """Apply chains of single-replica moves that keep every load (or swap which
    brokers hold the one extra) and leave fewer replicas to copy."""
    original = {key: set(current[key]) for key in plan}
    created = sum(len(set(plan[key]) - original[key]) for key in plan)
    for _ in range(created + 1):  # each cycle saves a replica
        cycle = _negative_cycle(plan, original, brokers, rack_of, load)
        if cycle is None:
            return
        moves = [(leaving, joining, key) for leaving, joining, key in cycle if key is not None]
        after = {key: [joining if b == leaving else b for b in plan[key]]
                 for leaving, joining, key in moves}
        if any(len({rack_of[b] for b in after[key]}) < len({rack_of[b] for b in plan[key]})
               for key in after):
            return  # a split chain would lose a rack: keep the plan as it is
        plan.update(after)
        for leaving, joining, _ in moves:  # the slack node's edges move nothing
            load[leaving] -= 1
            load[joining] += 1


def _move_cost(original: set[int], leaving: int, joining: int) -> int:
    """Change in replicas created when a partition's replica goes from one broker to another."""
    return (joining not in original) - (leaving not in original)


def _negative_cycle(plan: Assignment, original: Mapping[PartitionKey, set[int]],
                    brokers: list[int], rack_of: Mapping[int, str],
                    load: Counter) -> list[Step] | None:
    """Bellman-Ford over brokers: an edge a->b is the cheapest partition on a, not on b,
    whose replica may go to b without losing a rack; the slack node links brokers at
    the floor to those holding the extra replica."""
    best: dict[tuple[int, int], tuple[int, PartitionKey]] = {}
    for key in sorted(plan):
        replicas = plan[key]
        racks_before = len({rack_of[b] for b in replicas})
        for leaving in replicas:
            for joining in brokers:
                if joining in replicas:
                    continue
                after = {rack_of[b] for b in replicas if b != leaving} | {rack_of[joining]}
                if len(after) < racks_before:
                    continue
                cost = _move_cost(original[key], leaving, joining)
                if (leaving, joining) not in best or cost < best[(leaving, joining)][0]:
                    best[(leaving, joining)] = (cost, key)
    edges: list[tuple[int, int, int, PartitionKey | None]] = [
        (a, b, cost, via) for (a, b), (cost, via) in best.items()]
    low, high = min(load[b] for b in brokers), max(load[b] for b in brokers)
    if high == low + 1:
        edges += [(b, _SLACK, 0, None) for b in brokers if load[b] == low]
        edges += [(_SLACK, b, 0, None) for b in brokers if load[b] == high]
    nodes = [*brokers, _SLACK]
    distance = dict.fromkeys(nodes, 0)
    parent: dict[int, tuple[int, PartitionKey | None]] = {}
    changed: int | None = None
    for _ in range(len(nodes)):
        changed = None
        for a, b, cost, via in edges:
            if distance[a] + cost < distance[b]:
                distance[b] = distance[a] + cost
                parent[b] = (a, via)
                changed = b
        if changed is None:
            return None
    assert changed is not None  # still relaxing after |nodes| rounds: a negative cycle
    node = changed
    for _ in range(len(nodes)):  # step back onto the cycle itself
        node = parent[node][0]
    cycle: list[Step] = []
    at = node
    while True:
        previous, via = parent[at]
        cycle.append((previous, at, via))
        at = previous
        if at == node:
            break
    cycle.reverse()
    return _distinct_partitions(cycle, original)


def _distinct_partitions(cycle: list[Step],
                         original: Mapping[PartitionKey, set[int]]) -> list[Step]:
    """A negative cycle using one partition twice splits into two cycles (the partition
    shortcut each way) of the same total cost; keep the cheaper until all differ."""
    while True:
        first: dict[PartitionKey, int] = {}
        for i, (leaving, joining, key) in enumerate(cycle):
            if key is None:
                continue
            if key in first:
                j = first[key]
                leaving_before, joining_before, _ = cycle[j]
                inner: list[Step] = [(leaving_before, joining, key), *cycle[i + 1:], *cycle[:j]]
                outer: list[Step] = [(leaving, joining_before, key), *cycle[j + 1:i]]
                cycle = min(inner, outer, key=lambda c: _cycle_cost(c, original))
                break
            first[key] = i
        else:
            return cycle


def _cycle_cost(cycle: list[Step],
                original: Mapping[PartitionKey, set[int]]) -> int:
    return sum(_move_cost(original[key], a, b) for a, b, key in cycle if key is not None)


def _balance_leaders(plan: Assignment, brokers: list[int]) -> None:
    """Choose first replicas so each broker leads within one of the others where possible.

    Start from the current first replicas (no change where none is needed); then,
    while a path exists from a broker leading the most partitions to one leading
    two fewer (each step: a partition led by this broker, handed to another of its
    replicas), shift leadership along it. Each shift lowers the maximum or its
    count, so the loop ends.
    """
    leads = Counter({b: 0 for b in brokers})
    leads.update(replicas[0] for replicas in plan.values())
    for _ in range(len(plan) * len(brokers) + 1):
        path = _leadership_path(plan, brokers, leads)
        if path is None:
            return
        for key, new_leader in path:
            replicas = plan[key]
            leads[replicas[0]] -= 1
            replicas.remove(new_leader)
            replicas.insert(0, new_leader)
            leads[new_leader] += 1


def _leadership_path(plan: Assignment, brokers: list[int],
                     leads: Counter) -> list[tuple[PartitionKey, int]] | None:
    """Breadth-first search from the busiest leaders to one leading two fewer."""
    led_by: dict[int, list[PartitionKey]] = {b: [] for b in brokers}
    for key in sorted(plan):
        led_by[plan[key][0]].append(key)
    most = max(leads.values())
    starts = [b for b in brokers if leads[b] == most]
    came_from: dict[int, tuple[int, PartitionKey] | None] = {b: None for b in starts}
    queue = deque(starts)
    while queue:
        broker = queue.popleft()
        for key in led_by[broker]:
            for other in plan[key][1:]:
                if other in came_from:
                    continue
                came_from[other] = (broker, key)
                if leads[other] <= most - 2:
                    path: list[tuple[PartitionKey, int]] = []
                    step: int = other
                    while came_from[step] is not None:
                        previous, via = came_from[step]  # type: ignore[misc]
                        path.append((via, step))
                        step = previous
                    return list(reversed(path))
                queue.append(other)
    return None


def reassignment_json(assignment: Mapping[PartitionKey, Iterable[int]],
                      log_dirs: bool = True) -> str:
    """Kafka's reassignment JSON: the tool's files (with ``log_dirs``) and
    ``/admin/reassign_partitions`` (without)."""
    partitions = []
    for (topic, partition), replicas in sorted(assignment.items()):
        entry: dict = {"topic": topic, "partition": partition, "replicas": list(replicas)}
        if log_dirs:
            entry["log_dirs"] = ["any"] * len(entry["replicas"])
        partitions.append(entry)
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def parse_topics_to_move(text: str) -> list[str]:
    """The topic names of ``{"topics": [{"topic": "a"}, ...], "version": 1}``."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise AssignmentError(f"not JSON: {exc}") from None
    entries = document.get("topics") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise AssignmentError('expected {"topics": [{"topic": "name"}, ...], "version": 1}')
    names = []
    for entry in entries:
        name = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise AssignmentError(f"a topics entry without a topic name: {entry!r}")
        if name in names:
            raise AssignmentError(f"topic {name!r} is listed twice")
        names.append(name)
    return names


def parse_reassignment_json(text: str | bytes) -> Assignment:
    """``{"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}`` (the
    tool's plan files and ``/admin/reassign_partitions``) as target replicas."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise AssignmentError(f"not JSON: {exc}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise AssignmentError('expected {"version": 1, "partitions": [{"topic": ..., '
                              '"partition": ..., "replicas": [...]}, ...]}')
    plan: Assignment = {}
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        replicas = entry.get("replicas") if isinstance(entry, dict) else None
        if (not isinstance(topic, str) or not topic or type(partition) is not int
                or not isinstance(replicas, list) or not replicas
                or not all(type(r) is int and r >= 0 for r in replicas)):
            raise AssignmentError(f"a partitions entry needs topic, partition and replicas: "
                                  f"{entry!r}")
        if len(set(replicas)) != len(replicas):
            raise AssignmentError(f"{topic}-{partition}: replicas {replicas} repeat a broker")
        if (topic, partition) in plan:
            raise AssignmentError(f"{topic}-{partition} is listed twice")
        plan[(topic, partition)] = list(replicas)
    return plan


def replicas_during(original: Iterable[int], target: Iterable[int]) -> tuple[int, ...]:
    """RS = TRS + ORS while a partition moves (KIP-455): targets first, then the leaving."""
    target = list(target)
    return tuple(target + [r for r in original if r not in target])
