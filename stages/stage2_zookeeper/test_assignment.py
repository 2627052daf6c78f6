"""Replica assignment (pure, no ZooKeeper): racks honoured, leaders and followers spread."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.coordination import AssignmentError, assign_replicas, rack_alternated_brokers

# Per-test settings (not a global profile: other stages share the session).
MANY = settings(max_examples=200, deadline=None)


@st.composite
def racked_cluster(draw, racks: int = 3, min_per_rack: int = 1, max_per_rack: int = 4):
    """Brokers with distinct ids, spread over ``racks`` racks, each rack non-empty."""
    sizes = [draw(st.integers(min_per_rack, max_per_rack)) for _ in range(racks)]
    ids = draw(st.lists(st.integers(0, 10_000), min_size=sum(sizes), max_size=sum(sizes),
                        unique=True))
    rack_of, position = {}, 0
    for rack, size in enumerate(sizes):
        for broker in ids[position:position + size]:
            rack_of[broker] = f"rack-{rack}"
        position += size
    return rack_of


@MANY
@given(rack_of=racked_cluster(), partitions=st.integers(1, 120),
       start=st.integers(0, 50), shift=st.integers(0, 50))
def test_three_racks_rf3_every_partition_on_three_racks_and_leaders_even(
        rack_of, partitions, start, shift):
    assignment = assign_replicas(rack_of, rack_of, partitions, 3, start, shift)
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == 3 and len(set(replicas)) == 3
        assert {rack_of[b] for b in replicas} == {"rack-0", "rack-1", "rack-2"}
    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders.get(b, 0) for b in rack_of]
    assert max(counts) - min(counts) <= 1, leaders


@MANY
@given(per_rack=st.integers(1, 4), racks=st.integers(2, 4), rounds=st.integers(1, 6),
       start=st.integers(0, 50), shift=st.integers(0, 50))
def test_equal_racks_spread_every_replica_evenly(per_rack, racks, rounds, start, shift):
    """With equal racks and partitions a multiple of the brokers, every broker holds the
    same number of replicas and of leaders."""
    # Sorted ids group the racks (r0 r0 r1 r1 ...): the interleaving must come from the code.
    rack_of = {b: f"r{b // per_rack}" for b in range(per_rack * racks)}
    replication = min(3, racks)
    partitions = rounds * len(rack_of)
    assignment = assign_replicas(rack_of, rack_of, partitions, replication, start, shift)
    replicas = Counter(b for rs in assignment.values() for b in rs)
    leaders = Counter(rs[0] for rs in assignment.values())
    assert set(replicas.values()) == {partitions * replication // len(rack_of)}
    assert set(leaders.values()) == {rounds}
    for rs in assignment.values():
        assert len({rack_of[b] for b in rs}) == replication


@MANY
@given(brokers=st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True),
       data=st.data())
def test_without_racks_replicas_are_distinct_and_leaders_even(brokers, data):
    replication = data.draw(st.integers(1, len(brokers)))
    partitions = data.draw(st.integers(1, 100))
    assignment = assign_replicas(brokers, None, partitions, replication)
    for replicas in assignment.values():
        assert len(replicas) == replication == len(set(replicas))
        assert set(replicas) <= set(brokers)
    leaders = Counter(rs[0] for rs in assignment.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


def test_fixed_start_is_reproducible_and_shift_moves_followers():
    brokers = [1, 2, 3, 4]
    first = assign_replicas(brokers, None, 8, 2, start_index=0, replica_shift=0)
    assert first == assign_replicas(brokers, None, 8, 2, start_index=0, replica_shift=0)
    assert [first[p][0] for p in range(4)] == [1, 2, 3, 4]
    # After a full pass over the brokers the followers move one step further.
    assert [first[p][1] for p in range(4)] == [2, 3, 4, 1]
    assert [first[p][1] for p in range(4, 8)] == [3, 4, 1, 2]


def test_rack_alternated_list_interleaves_racks():
    racks = {1: "a", 2: "a", 3: "b", 4: "c", 5: "c", 6: "c"}
    assert rack_alternated_brokers(racks) == [1, 3, 4, 2, 5, 6]


@pytest.mark.parametrize(("brokers", "racks", "partitions", "replication", "message"), [
    ([1, 2], None, 0, 1, "partitions must be at least 1"),
    ([1, 2], None, 3, 0, "replication factor must be at least 1"),
    ([1, 2], None, 3, 3, "larger than the number of available brokers"),
    ([1, 2, 3], {1: "a", 2: "b"}, 3, 2, "have no rack"),
])
def test_impossible_requests_are_refused(brokers, racks, partitions, replication, message):
    with pytest.raises(AssignmentError, match=message):
        assign_replicas(brokers, racks, partitions, replication)
