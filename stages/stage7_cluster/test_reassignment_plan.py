"""The reassignment plan (pure, no ZooKeeper): distinct replicas, racks kept, brokers
balanced, leaders spread, and as little movement as balance allows."""

from __future__ import annotations

from collections import Counter, deque

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simplekafka.coordination import AssignmentError, assign_replicas
from simplekafka.coordination.reassignment import plan_reassignment, replicas_moved

MANY = settings(max_examples=150, deadline=None)


@st.composite
def cluster_change(draw, racks: int = 0):
    """A current assignment made on one broker list, and a new broker list."""
    old = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8, unique=True))
    new = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8, unique=True))
    rf = draw(st.integers(1, min(3, len(old), len(new))))
    rack_of = {b: f"r{b % racks}" for b in range(1, 13)} if racks else None
    current = {}
    for topic in range(draw(st.integers(1, 4))):
        partitions = draw(st.integers(1, 12))
        start, shift = draw(st.integers(0, 20)), draw(st.integers(0, 20))
        for p, replicas in assign_replicas(old, None, partitions, rf, start, shift).items():
            current[(f"t{topic}", p)] = replicas
    return current, sorted(new), rack_of


def spread(counter: Counter, brokers) -> int:
    counts = [counter.get(b, 0) for b in brokers]
    return max(counts) - min(counts)


def minimum_moves(current, brokers) -> int:
    """The fewest replicas any plan creates with distinct replicas and every broker
    within one: a min-cost flow (successive shortest paths, written apart from the
    plan's cycle cancelling) from partitions to brokers, keeping a replica costs 0 and
    creating one 1; each broker's first ``floor`` units earn a large bonus, so all are
    filled, and ``extra`` brokers take one more."""
    keys = sorted(current)
    total = sum(len(current[k]) for k in keys)
    floor, extra = divmod(total, len(brokers))
    big = total + 1
    source, sink = "source", "sink"
    graph: dict = {}

    def edge(a, b, capacity, cost):
        graph.setdefault(a, []).append([b, capacity, cost, len(graph.setdefault(b, []))])
        graph[b].append([a, 0, -cost, len(graph[a]) - 1])

    for key in keys:
        edge(source, key, len(current[key]), 0)
        for b in brokers:
            edge(key, ("broker", b), 1, 0 if b in current[key] else 1)
    for b in brokers:
        edge(("broker", b), sink, floor, -big)
        edge(("broker", b), sink, 1 if extra else 0, 0)
    cost = 0
    for _ in range(total):
        distance, parent, queue = {source: 0}, {}, deque([source])
        while queue:  # Bellman-Ford with a queue: costs may be negative
            node = queue.popleft()
            for index, (to, capacity, c, _) in enumerate(graph[node]):
                if capacity and distance[node] + c < distance.get(to, float("inf")):
                    distance[to], parent[to] = distance[node] + c, (node, index)
                    queue.append(to)
        node = sink
        while node != source:
            previous, index = parent[node]
            forward = graph[previous][index]
            forward[1] -= 1
            graph[node][forward[3]][1] += 1
            node = previous
        cost += distance[sink]
    return cost + big * floor * len(brokers)


@MANY
@given(cluster_change())
def test_without_racks_distinct_balanced_leaders_spread_and_minimal(change):
    current, brokers, _ = change
    plan = plan_reassignment(current, brokers)
    assert set(plan) == set(current)
    for key, replicas in plan.items():
        assert len(replicas) == len(current[key]) == len(set(replicas))
        assert set(replicas) <= set(brokers)
    assert spread(Counter(b for rs in plan.values() for b in rs), brokers) <= 1
    assert replicas_moved(current, plan) == minimum_moves(current, brokers)


def test_minimal_where_the_greedy_fill_took_a_detour():
    """Found by hypothesis: t0-3 lost both replicas; filling it on 1 and moving t0-0's
    replica off 1 for balance created one more replica than handing t0-3 to 6."""
    current = {("t0", p): rs for p, rs in enumerate(
        [[1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 1], [1, 3], [2, 4], [3, 5], [4, 6]])}
    plan = plan_reassignment(current, [1, 2, 3, 6])
    assert replicas_moved(current, plan) == minimum_moves(current, [1, 2, 3, 6]) == 7


def test_minimum_counts_distinct_brokers():
    """Broker 3 alone has room, but t0-3 needs two distinct new brokers: one replica
    elsewhere must make way, so 3 moves, not the 2 a count of loads alone suggests."""
    current = {("t0", 0): [1, 2], ("t0", 1): [1, 2], ("t0", 2): [1, 2], ("t0", 3): [4, 5]}
    assert minimum_moves(current, [1, 2, 3]) == 3
    plan = plan_reassignment(current, [1, 2, 3])
    assert replicas_moved(current, plan) == 3
    assert spread(Counter(b for rs in plan.values() for b in rs), [1, 2, 3]) <= 1


@MANY
@given(cluster_change())
def test_leaders_within_one_when_every_broker_can_lead_anything(change):
    """Full replication: every broker holds every partition, so leaders must spread evenly."""
    current, brokers, _ = change
    rotated = {key: brokers[:] for key in current}  # every partition led by the same broker
    plan = plan_reassignment(rotated, brokers)
    assert spread(Counter(rs[0] for rs in plan.values()), brokers) <= 1
    assert replicas_moved(rotated, plan) == 0


@MANY
@given(cluster_change())
def test_leaders_balanced_after_a_plan(change):
    current, brokers, _ = change
    plan = plan_reassignment(current, brokers)
    leaders = Counter(rs[0] for rs in plan.values())
    rf = len(next(iter(plan.values())))
    if rf > 1 and len(plan) >= len(brokers):
        assert spread(leaders, brokers) <= 1, plan


@MANY
@given(cluster_change(racks=3))
def test_racks_spread_as_far_as_they_go(change):
    current, brokers, rack_of = change
    plan = plan_reassignment(current, brokers, rack_of)
    racks_there = len({rack_of[b] for b in brokers})
    for key, replicas in plan.items():
        assert len(set(replicas)) == len(replicas) == len(current[key])
        assert len({rack_of[b] for b in replicas}) == min(len(replicas), racks_there)


@MANY
@given(per_rack=st.integers(1, 3), extra=st.integers(1, 3), topics=st.integers(1, 5))
def test_equal_racks_stay_balanced_and_spread(per_rack, extra, topics):
    rack_of = {b: f"r{b % 3}" for b in range(30)}
    old = list(range(3 * per_rack))
    new = list(range(3 * (per_rack + extra)))
    current = {(f"t{t}", p): rs for t in range(topics)
               for p, rs in assign_replicas(old, rack_of, 12, 3, t, t).items()}
    plan = plan_reassignment(current, new, rack_of)
    assert spread(Counter(b for rs in plan.values() for b in rs), new) <= 1
    for replicas in plan.values():
        assert len({rack_of[b] for b in replicas}) == 3


@MANY
@given(cluster_change(), st.integers(0, 50))
def test_never_moves_more_than_a_from_scratch_assignment(change, seed):
    """From scratch = Kafka's walk over every moved partition in one sequence, started
    anywhere; compared where it is balanced too (an unbalanced plan can move less)."""
    current, brokers, _ = change
    plan = plan_reassignment(current, brokers)
    keys = sorted(current)
    rf = len(current[keys[0]])
    fresh = assign_replicas(brokers, None, len(keys), rf, seed, seed)
    scratch = {key: fresh[i] for i, key in enumerate(keys)}
    assume(spread(Counter(b for rs in scratch.values() for b in rs), brokers) <= 1)
    assert replicas_moved(current, plan) <= replicas_moved(current, scratch)


@MANY
@given(n=st.integers(1, 9), rf=st.integers(1, 3), topics=st.integers(1, 6),
       partitions=st.integers(1, 24))
def test_one_broker_added_to_n_moves_about_one_in_n_plus_one(n, rf, topics, partitions):
    if rf > n:
        rf = n
    brokers = list(range(1, n + 1))
    flat = assign_replicas(brokers, None, topics * partitions, rf, 0, 0)  # balanced
    current = {(f"t{i // partitions}", i % partitions): rs for i, rs in flat.items()}
    assume(spread(Counter(b for rs in current.values() for b in rs), brokers) <= 1)
    total = sum(len(rs) for rs in current.values())
    moved = replicas_moved(current, plan_reassignment(current, [*brokers, n + 1]))
    assert abs(moved - total / (n + 1)) <= 1


def test_unchanged_broker_list_moves_nothing():
    current = {("a", p): rs for p, rs in assign_replicas([1, 2, 3], None, 12, 2, 0, 0).items()}
    assert replicas_moved(current, plan_reassignment(current, [1, 2, 3])) == 0


@pytest.mark.parametrize("brokers, racks, message", [
    ([], None, "empty"),
    ([1], None, "replication factor 2"),
    ([1, 2], {1: "a"}, "no rack"),
])
def test_impossible_plans_say_why(brokers, racks, message):
    with pytest.raises(AssignmentError, match=message):
        plan_reassignment({("a", 0): [1, 2]}, brokers, racks)
