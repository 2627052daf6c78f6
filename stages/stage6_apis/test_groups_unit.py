"""Groups without sockets: assignors, the __consumer_offsets format, the coordinator's rules.

The coordinator runs here on a real Partition and Log (in a temp dir) with
Twisted's ``task.Clock`` for time, so session timeouts, the initial rebalance
delay and offset expiry are stepped through deterministically.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet import defer, task

from simplekafka.broker.apis.groups import GroupApis
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.broker.group.coordinator import (
    MAX_SESSION_TIMEOUT_MS,
    GroupCoordinator,
    PartitionCommit,
)
from simplekafka.broker.group.records import (
    OFFSETS_TOPIC,
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    java_string_hash,
    partition_for,
)
from simplekafka.broker.group.state import GroupState
from simplekafka.broker.metadata_cache import CachedPartitionState
from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.client.group_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from simplekafka.consumer.assignors import ASSIGNORS, StickyAssignor, assignor_for
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.structs import Node, TopicPartition
from simplekafka.storage import LogConfig, LogManager

# -- the record format and the partition of a group ---------------------------------------


def test_java_string_hash_matches_java():
    # Values of "...".hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    # Over UTF-16 code units: a character outside the BMP counts as two.
    assert java_string_hash("é😀") == ((0xE9 * 31 + 0xD83D) * 31 + 0xDE00)
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    assert partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50


@settings(max_examples=150, deadline=None)
@given(group=st.text(max_size=30), topic=st.text(max_size=30),
       partition=st.integers(0, 2**31 - 1), offset=st.integers(-1, 2**63 - 1),
       epoch=st.integers(-1, 2**31 - 1), metadata=st.text(max_size=40),
       ts=st.integers(-1, 2**62))
def test_offset_records_round_trip(group, topic, partition, offset, epoch, metadata, ts):
    key = OffsetKey(group, topic, partition)
    value = OffsetValue(offset, epoch, metadata, ts)
    assert decode_key(encode_offset_key(key)) == key
    assert decode_offset_value(encode_offset_value(value)) == value


@settings(max_examples=100, deadline=None)
@given(group=st.text(max_size=20), generation=st.integers(0, 2**31 - 1),
       members=st.lists(st.tuples(st.text(max_size=10), st.binary(max_size=20),
                                  st.binary(max_size=20)), max_size=4))
def test_group_records_round_trip(group, generation, members):
    value = GroupValue("consumer", generation, "range", members[0][0] if members else None, 7,
                       [MemberValue(m, None, "client", "/127.0.0.1", 300000, 10000, sub, asg)
                        for m, sub, asg in members])
    assert decode_key(encode_group_key(GroupKey(group))) == GroupKey(group)
    assert decode_group_value(encode_group_value(value)) == value


# -- assignors ---------------------------------------------------------------------------

subscriptions = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4),
    st.lists(st.sampled_from(["t1", "t2", "t3"]), min_size=1, max_size=3, unique=True),
    min_size=1, max_size=6)
counts = st.fixed_dictionaries({"t1": st.integers(1, 8), "t2": st.integers(1, 8),
                                "t3": st.integers(1, 8)})


@settings(max_examples=200, deadline=None)
@given(subs=subscriptions, partition_counts=counts, name=st.sampled_from(sorted(ASSIGNORS)))
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(subs, partition_counts, name):
    plan = assignor_for(name).assign({m: Subscription(t) for m, t in subs.items()},
                                     partition_counts)
    assert set(plan) == set(subs)
    given_out = [tp for tps in plan.values() for tp in tps]
    assert len(given_out) == len(set(given_out))
    wanted = {TopicPartition(t, p) for ts in subs.values() for t in ts
              for p in range(partition_counts[t])}
    assert set(given_out) == wanted
    for member, tps in plan.items():
        assert all(tp.topic in subs[member] for tp in tps)


@settings(max_examples=200, deadline=None)
@given(members=st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=7,
                        unique=True),
       partitions=st.integers(1, 30), name=st.sampled_from(["roundrobin", "sticky"]))
def test_roundrobin_and_sticky_are_balanced_with_one_topic(members, partitions, name):
    plan = assignor_for(name).assign({m: Subscription(["t"]) for m in members},
                                     {"t": partitions})
    sizes = [len(tps) for tps in plan.values()]
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=150, deadline=None)
@given(members=st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=2, max_size=7,
                        unique=True),
       partitions=st.integers(1, 30), leaving=st.integers(0, 6))
def test_sticky_moves_only_the_partitions_of_a_member_that_left(members, partitions, leaving):
    sticky = StickyAssignor()
    before = sticky.assign({m: Subscription(["t"]) for m in members}, {"t": partitions})
    gone = members[leaving % len(members)]
    remaining = {m: sticky.subscription(["t"], before[m]) for m in members if m != gone}
    after = sticky.assign(remaining, {"t": partitions})
    for member, tps in after.items():
        kept = set(before[member]) & set(tps)
        # Everyone keeps what they had, unless balance forces giving some up.
        assert len(kept) >= min(len(before[member]), len(tps))


@settings(max_examples=200, deadline=None)
@given(members=st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=6,
                        unique=True),
       partitions=st.integers(1, 12), newcomers=st.integers(0, 2), leaving=st.integers(0, 2))
def test_cooperative_sticky_hands_partitions_over_in_two_rounds(members, partitions,
                                                               newcomers, leaving):
    """Round one never gives a partition to anyone while another member still owns it;
    after the owners revoke, round two completes a balanced assignment."""
    assignor = assignor_for("cooperative-sticky")
    counts = {"t": partitions}
    first = assignor.assign({m: Subscription(["t"], b"", ()) for m in members}, counts)
    group = list(members[leaving:]) + [f"new{i}" for i in range(newcomers)] or ["x"]
    owned = {m: first.get(m, []) for m in group}
    subs = {m: decode_subscription(encode_subscription(assignor.subscription(["t"], owned[m])))
            for m in group}
    second = assignor.assign(subs, counts)
    for member, tps in second.items():
        for tp in tps:
            holders = [m for m in group if tp in owned[m]]
            assert holders in ([], [member]), f"{tp} given to {member} while {holders} own it"
    # The owners revoked what round two did not give them; each now owns its round-two share.
    subs = {m: assignor.subscription(["t"], second[m]) for m in group}
    third = assignor.assign(subs, counts)
    sizes = sorted(len(tps) for tps in third.values())
    assert sizes[-1] - sizes[0] <= 1
    assert sorted(tp for tps in third.values() for tp in tps) == [
        TopicPartition("t", p) for p in range(partitions)]


def test_consumer_protocol_bytes_round_trip_and_reject_truncation():
    sub = Subscription(["b", "a"], b"\x01\x02")
    assert decode_subscription(encode_subscription(sub)) == Subscription(["a", "b"], b"\x01\x02")
    tps = [TopicPartition("a", 1), TopicPartition("a", 0), TopicPartition("b", 3)]
    assert decode_assignment(encode_assignment(tps)) == sorted(tps)
    assert decode_assignment(b"") == []
    with pytest.raises(ValueError):
        decode_assignment(encode_assignment(tps)[:9])
    with pytest.raises(ValueError):
        assignor_for("cooperative-magic")


# -- the coordinator on a task.Clock -----------------------------------------------------


class CoordinatorOnTheWire:
    """A GroupCoordinator whose group requests go through GroupApis, as the dispatcher's do."""

    def __init__(self, coordinator: GroupCoordinator):
        self.coordinator = coordinator
        self.apis = GroupApis(coordinator)

    def __getattr__(self, name: str):
        return getattr(self.apis if hasattr(GroupApis, name) else self.coordinator, name)


class FakeConfig(dict):
    min_insync_replicas = 1


@pytest.fixture
def broker(tmp_path):
    clock = task.Clock()
    logs = LogManager([tmp_path], LogConfig())
    partitions = {}
    for index in range(3):
        part = Partition(OFFSETS_TOPIC, index, 1, logs.get_or_create(OFFSETS_TOPIC, index))
        part.make_leader(0, [1], [1], 0, 0)
        partitions[(OFFSETS_TOPIC, index)] = part
    cache = SimpleNamespace(
        listeners=[], deletion_listeners=[],
        topics={OFFSETS_TOPIC: {i: CachedPartitionState(OFFSETS_TOPIC, i, 1, 0, (1,), (1,))
                                for i in range(3)},
                "t": {0: CachedPartitionState("t", 0, 1, 0, (1,), (1,))}},
        brokers={1: Node(1, "127.0.0.1", 9092)})
    cache.partition = lambda t, p: cache.topics.get(t, {}).get(p)
    cache.is_alive = lambda b: b in cache.brokers
    cache.brokers_on = lambda listener: cache.brokers  # one listener
    replica_manager = ReplicaManager(1, logs, cache, reactor=clock)
    replica_manager.partitions.update(partitions)
    fake = SimpleNamespace(
        reactor=clock, metadata_cache=cache, replica_manager=replica_manager, zk=None,
        topic_config=lambda topic: {},
        config=FakeConfig({"offsets.topic.num.partitions": 3, "message.max.bytes": 1 << 20,
                           "group.initial.rebalance.delay.ms": 100,
                           "offsets.retention.minutes": 1}))
    fake.new_coordinator = lambda: CoordinatorOnTheWire(GroupCoordinator(
        fake.config, cache, replica_manager, clock, lambda: None))
    fake.coordinator = fake.new_coordinator()
    fake.logs = logs
    yield fake
    logs.close()


def ctx(version: int = 5, client_id: str = "test"):
    return SimpleNamespace(api_version=version, client_id=client_id, peer="127.0.0.1:5555",
                           listener="PLAINTEXT", principal="User:ANONYMOUS")


class req(dict):
    """A decoded request as the handlers read it: by field name (``request["group_id"]``),
    or as an attribute."""

    __getattr__ = dict.__getitem__

    def __missing__(self, key: str) -> None:
        return None  # a field the test leaves out is null, as the decoder's default


def join(coordinator, member_id="", protocols=(("range", b"m"),), version=5,
         protocol_type="consumer", group="g", session=10_000, instance=None):
    return coordinator.join_group(ctx(version), req(
        group_id=group, session_timeout_ms=session, rebalance_timeout_ms=10_000,
        member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
        protocols=[req(name=n, metadata=m) for n, m in protocols]))


def result(value):
    """The value of a fired Deferred (or the plain answer)."""
    if isinstance(value, defer.Deferred):
        out = []
        value.addCallback(out.append)
        assert out, "the answer has not come yet"
        return out[0]
    return value


def load(broker):
    broker.coordinator.check_owner("g")
    broker.reactor.advance(0)


def test_first_join_needs_a_member_id_then_the_group_becomes_stable(broker):
    coordinator = broker.coordinator
    assert coordinator.check_owner("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    broker.reactor.advance(0)
    first = result(join(coordinator))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["member_id"]
    waiting = join(coordinator, first["member_id"])
    assert not waiting.called  # the initial rebalance delay
    broker.reactor.advance(0.1)
    joined = result(waiting)
    assert joined["generation_id"] == 1 and joined["leader"] == first["member_id"]
    assert [m["metadata"] for m in joined["members"]] == [b"m"]
    group = coordinator.groups["g"]
    assert group.state is GroupState.COMPLETING_REBALANCE
    synced = coordinator.sync_group(ctx(3), req(
        group_id="g", generation_id=1, member_id=first["member_id"],
        assignments=[req(member_id=first["member_id"], assignment=b"A")]))
    assert result(synced) == {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                              "assignment": b"A"}
    assert group.state is GroupState.STABLE


def stable_member(broker) -> str:
    load(broker)
    member = result(join(broker.coordinator))["member_id"]
    waiting = join(broker.coordinator, member)
    broker.reactor.advance(0.1)
    result(waiting)
    result(broker.coordinator.sync_group(ctx(3), req(
        group_id="g", generation_id=1, member_id=member,
        assignments=[req(member_id=member, assignment=b"A")])))
    return member


def commit(broker, member, generation, offset=5, topic="t"):
    answer = result(broker.coordinator.offset_commit(ctx(7), req(
        group_id="g", generation_id_or_member_epoch=generation, member_id=member,
        topics=[req(name=topic, partitions=[req(partition_index=0, committed_offset=offset,
                                                committed_leader_epoch=-1,
                                                committed_metadata="m")])])))
    return answer["topics"][0]["partitions"][0]["error_code"]


def fetch(broker, group="g"):
    answer = broker.coordinator.offset_fetch(ctx(5), req(
        group_id=group, topics=[req(name="t", partition_indexes=[0])]))
    return answer["topics"][0]["partitions"][0]["committed_offset"]


def test_commits_are_checked_against_member_and_generation(broker):
    member = stable_member(broker)
    assert commit(broker, member, 1, offset=5) == ErrorCode.NONE
    assert commit(broker, "stranger", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(broker, member, 0) == ErrorCode.ILLEGAL_GENERATION
    assert commit(broker, member, 1, topic="no-such-topic") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert fetch(broker) == 5
    beat = broker.coordinator.heartbeat(ctx(3), req(group_id="g", generation_id=2,
                                                    member_id=member))
    assert beat["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert broker.coordinator.groups["g"].generation == 1


def test_no_common_protocol_is_inconsistent(broker):
    stable_member(broker)
    answer = result(join(broker.coordinator, protocols=(("sticky", b""),)))
    assert answer["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    answer = result(join(broker.coordinator, protocol_type="connect"))
    assert answer["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_silent_member_is_removed_after_its_session_timeout(broker):
    member = stable_member(broker)
    broker.reactor.advance(9.9)
    assert broker.coordinator.groups["g"].members
    broker.reactor.advance(0.2)
    group = broker.coordinator.groups["g"]
    assert not group.members and group.state is GroupState.EMPTY and group.generation == 2
    beat = broker.coordinator.heartbeat(ctx(3), req(group_id="g", generation_id=1,
                                                    member_id=member))
    assert beat["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_new_leader_loads_the_groups_and_a_former_one_drops_them(broker):
    member = stable_member(broker)
    assert commit(broker, member, 1, offset=42) == ErrorCode.NONE
    coordinator = broker.new_coordinator()  # a broker that just became leader
    assert coordinator.check_owner("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    broker.reactor.advance(0)
    assert coordinator.check_owner("g") is None
    group = coordinator.groups["g"]
    assert group.state is GroupState.STABLE and group.generation == 1
    assert list(group.members) == [member] and group.members[member].assignment == b"A"
    assert group.offsets[("t", 0)].offset == 42
    index = coordinator.partition_of("g")
    broker.replica_manager.partitions[(OFFSETS_TOPIC, index)].make_follower(2, 1, [2], [1, 2],
                                                                           1, 0)
    coordinator.sync_ownership()
    assert "g" not in coordinator.groups
    assert coordinator.check_owner("g") == ErrorCode.NOT_COORDINATOR


def test_offsets_of_an_empty_group_expire(broker):
    load(broker)
    assert commit(broker, "", -1, offset=9) == ErrorCode.NONE  # a consumer outside any group
    assert fetch(broker) == 9
    broker.coordinator.expire_offsets()
    assert fetch(broker) == 9  # too recent
    group = broker.coordinator.groups["g"]
    group.offsets[("t", 0)] = group.offsets[("t", 0)]._replace(commit_timestamp=0)
    group.state_timestamp = 0
    broker.coordinator.expire_offsets()
    assert fetch(broker) == -1 and "g" not in broker.coordinator.groups


def test_a_deleted_topic_takes_the_groups_offsets_with_it(broker):
    """Kafka's handleDeletedPartitions: a topic re-created under the same name must not
    inherit old offsets (its consumers would skip its first records)."""
    member = stable_member(broker)
    assert commit(broker, member, 1, offset=42) == ErrorCode.NONE
    for listener in broker.metadata_cache.deletion_listeners:
        listener([("t", 0), ("other", 3)])
    assert fetch(broker) == -1
    coordinator = broker.new_coordinator()  # the tombstone is in the log
    coordinator.check_owner("g")
    broker.reactor.advance(0)
    assert ("t", 0) not in coordinator.groups["g"].offsets
    assert coordinator.groups["g"].members  # the group itself stays


def test_a_stable_offset_fetch_waits_out_pending_commits(broker):
    """KIP-447's require_stable, as Kafka 3.9's getOffsets: a partition with a commit in
    an open transaction (or one still being written) answers -1 and
    UNSTABLE_OFFSET_COMMIT; without the flag, the last committed offset. Asking for all
    partitions lists only those with a committed offset, as Kafka's allOffsets."""
    load(broker)
    coordinator = broker.coordinator
    coordinator.check_owner("fresh")  # a group of its own, perhaps on another partition
    broker.reactor.advance(0)
    assert commit(broker, "", -1, offset=5) == ErrorCode.NONE
    pending = coordinator.txn_offset_commit("g", 7, 0, [PartitionCommit("t", 0, 9)])
    assert result(pending) == [("t", 0, ErrorCode.NONE)]
    assert result(coordinator.txn_offset_commit("fresh", 7, 0, [PartitionCommit("t", 0, 3)])
                  ) == [("t", 0, ErrorCode.NONE)]
    asked = [req(name="t", partition_indexes=[0])]

    def answers(version, stable, topics=asked, group="g"):
        """(offset, error) of t-0 in a v7 and in a v8 (several groups) answer."""
        if version < 8:
            body = coordinator.offset_fetch(ctx(version), req(
                group_id=group, topics=topics, require_stable=stable))
            parts = [p for t in body["topics"] for p in t["partitions"]]
        else:
            body = coordinator.offset_fetch(ctx(version), req(
                groups=[req(group_id=group, topics=topics)], require_stable=stable))
            assert body["groups"][0]["error_code"] == ErrorCode.NONE
            parts = [p for t in body["groups"][0]["topics"] for p in t["partitions"]]
        return [(p["committed_offset"], p["error_code"]) for p in parts]

    unstable = [(-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)]
    for version in (7, 8):
        assert answers(version, True) == unstable
        assert answers(version, True, topics=None) == unstable
        assert answers(version, False) == [(5, ErrorCode.NONE)]
        assert answers(version, True, group="fresh") == unstable
        assert answers(version, True, topics=None, group="fresh") == []  # nothing committed
    assert answers(6, True) == [(5, ErrorCode.NONE)]  # before v7 there is no such flag
    coordinator.complete_transaction(7, coordinator.partition_of("g"), committed=True)
    coordinator.complete_transaction(7, coordinator.partition_of("fresh"), committed=True)
    for version in (7, 8):
        assert answers(version, True) == answers(version, False) == [(9, ErrorCode.NONE)]
    # An OffsetCommit still being written counts too (Kafka's pendingOffsetCommits).
    writing: defer.Deferred = defer.Deferred()
    coordinator.coordinator._in_flight("g", [("t", 0)], writing)
    assert answers(7, True) == unstable and answers(7, False) == [(9, ErrorCode.NONE)]
    writing.callback(ErrorCode.NONE)
    assert answers(7, True) == [(9, ErrorCode.NONE)] and not coordinator.commits_in_flight


def test_cooperative_and_eager_members_meet_on_a_protocol_all_support(broker):
    """KIP-429's upgrade path: a member offering cooperative-sticky and range next to one
    offering only range makes the group use range (eager); once every member offers
    cooperative-sticky first, the group uses it. The broker never looks inside."""
    load(broker)
    coordinator = broker.coordinator
    both = result(join(coordinator, protocols=(("cooperative-sticky", b"c"), ("range", b"r"))))
    first = join(coordinator, both["member_id"],
                 protocols=(("cooperative-sticky", b"c"), ("range", b"r")))
    eager = result(join(coordinator, protocols=(("range", b"r2"),)))
    second = join(coordinator, eager["member_id"], protocols=(("range", b"r2"),))
    broker.reactor.pump([0.1] * 3)
    first, second = result(first), result(second)
    assert first["protocol_name"] == second["protocol_name"] == "range"
    leader = first if first["members"] else second
    assert {m["metadata"] for m in leader["members"]} == {b"r", b"r2"}
    assert result(join(coordinator, protocols=(("sticky", b""),)))["error_code"] \
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


# -- static membership (KIP-345) ------------------------------------------------------------


def static_group(broker) -> tuple[str, str]:
    """A Stable group of two static members, "a" (the leader) and "b"; their member ids."""
    load(broker)
    coordinator = broker.coordinator
    first = join(coordinator, instance="a")  # no MEMBER_ID_REQUIRED round for static members
    second = join(coordinator, instance="b", protocols=(("range", b"n"),))
    broker.reactor.pump([0.1] * 3)  # the initial delay, extended once for the second member
    a, b = result(first), result(second)
    assert a["error_code"] == b["error_code"] == ErrorCode.NONE
    assert a["member_id"].startswith("a-") and a["leader"] == a["member_id"]
    assert {m["group_instance_id"] for m in a["members"]} == {"a", "b"}
    for member in (b["member_id"], a["member_id"]):
        synced = coordinator.sync_group(ctx(3), req(
            group_id="g", generation_id=1, member_id=member, group_instance_id=None,
            assignments=[req(member_id=a["member_id"], assignment=b"A"),
                         req(member_id=b["member_id"], assignment=b"B")]
            if member == a["member_id"] else []))
    assert result(synced)["assignment"] == b"A"
    assert coordinator.groups["g"].state is GroupState.STABLE
    return a["member_id"], b["member_id"]


def beat(broker, member, instance=None, generation=1):
    return broker.coordinator.heartbeat(ctx(3), req(
        group_id="g", generation_id=generation, member_id=member,
        group_instance_id=instance))["error_code"]


def test_a_restarted_static_member_takes_its_place_without_a_rebalance(broker):
    a, b = static_group(broker)
    group = broker.coordinator.groups["g"]
    rejoined = result(join(broker.coordinator, instance="b", protocols=(("range", b"n"),)))
    new_b = rejoined["member_id"]
    assert rejoined["error_code"] == ErrorCode.NONE and new_b != b
    # The same generation, the old leader named (so the member does not assign), no members.
    assert (rejoined["generation_id"], rejoined["leader"], rejoined["members"]) == (1, a, [])
    assert group.state is GroupState.STABLE and group.generation == 1
    synced = result(broker.coordinator.sync_group(ctx(3), req(
        group_id="g", generation_id=1, member_id=new_b, group_instance_id="b", assignments=[])))
    assert synced["assignment"] == b"B"  # its previous partitions
    assert beat(broker, a, "a") == ErrorCode.NONE  # the others see nothing
    assert beat(broker, new_b, "b") == ErrorCode.NONE
    # The old incarnation is fenced everywhere.
    assert beat(broker, b, "b") == ErrorCode.FENCED_INSTANCE_ID
    assert commit_as(broker, b, "b") == ErrorCode.FENCED_INSTANCE_ID
    assert result(join(broker.coordinator, b, instance="b"))["error_code"] \
        == ErrorCode.FENCED_INSTANCE_ID
    assert commit_as(broker, new_b, "b") == ErrorCode.NONE


def commit_as(broker, member, instance):
    answer = result(broker.coordinator.offset_commit(ctx(7), req(
        group_id="g", generation_id_or_member_epoch=1, member_id=member,
        group_instance_id=instance,
        topics=[req(name="t", partitions=[req(partition_index=0, committed_offset=3,
                                                committed_leader_epoch=-1,
                                                committed_metadata="")])])))
    return answer["topics"][0]["partitions"][0]["error_code"]


def test_a_restarted_static_leader_is_not_told_to_assign(broker):
    a, _ = static_group(broker)
    rejoined = result(join(broker.coordinator, instance="a"))
    assert rejoined["leader"] == a != rejoined["member_id"] and rejoined["members"] == []
    group = broker.coordinator.groups["g"]
    assert group.leader_id == rejoined["member_id"]  # it leads the next rebalance
    assert group.state is GroupState.STABLE and group.generation == 1


def test_the_replaced_member_id_is_persisted_in_the_group_record(broker):
    a, b = static_group(broker)
    new_b = result(join(broker.coordinator, instance="b", protocols=(("range", b"n"),))
                   )["member_id"]
    coordinator = broker.new_coordinator()  # a broker that just became leader reads it back
    coordinator.check_owner("g")
    broker.reactor.advance(0)
    group = coordinator.groups["g"]
    assert sorted(group.members) == sorted([a, new_b])
    assert group.members[new_b].group_instance_id == "b"
    assert group.members[new_b].assignment == b"B"
    assert group.is_fenced(b, "b") and not group.is_fenced(new_b, "b")


def test_a_static_member_that_does_not_come_back_is_removed_after_its_session(broker):
    a, _ = static_group(broker)
    for _ in range(12):
        broker.reactor.advance(1)
        beat(broker, a, "a")
    group = broker.coordinator.groups["g"]
    assert list(group.members) == [a] and group.state is GroupState.PREPARING_REBALANCE


def test_a_static_member_joining_during_a_rebalance_just_joins_it(broker):
    a, b = static_group(broker)
    group = broker.coordinator.groups["g"]
    leader = join(broker.coordinator, a, instance="a")  # the leader asks for a rebalance
    assert group.state is GroupState.PREPARING_REBALANCE
    answer = result(join(broker.coordinator, instance="b", protocols=(("range", b"n"),)))
    assert answer["error_code"] == ErrorCode.NONE and answer["generation_id"] == 2
    assert {m["member_id"] for m in result(leader)["members"]} == {a, answer["member_id"]}
    assert group.static_member("b").member_id == answer["member_id"] != b


def test_leave_group_v3_takes_a_batch_of_static_members_by_instance_id(broker):
    a, b = static_group(broker)
    answer = broker.coordinator.leave_group(ctx(3), req(group_id="g", members=[
        req(member_id="", group_instance_id="b"),
        req(member_id="someone-else", group_instance_id="a"),
        req(member_id="", group_instance_id="nobody"),
        req(member_id=a, group_instance_id=None)]))
    assert [(m["member_id"], m["group_instance_id"], m["error_code"])
            for m in answer["members"]] == [
        (b, "b", ErrorCode.NONE), ("someone-else", "a", ErrorCode.FENCED_INSTANCE_ID),
        ("", "nobody", ErrorCode.UNKNOWN_MEMBER_ID), (a, None, ErrorCode.NONE)]
    group = broker.coordinator.groups["g"]
    assert not group.members


# -- hostile but well-formed requests: an answer that encodes, never an exception -----------

names = st.sampled_from(["g", "h", "", "t", "x" * 300])
members = st.sampled_from(["", "m-1", "test-0000", "x" * 100])
int32s = st.integers(-(2**31), 2**31 - 1)


def _group_requests():
    instances = st.sampled_from([None, None, "i-1", "i-2", ""])  # static members too
    protocols = st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from(["range", "roundrobin", "", "x"]),
         "metadata": st.binary(max_size=20)}), max_size=3)
    partitions = st.lists(st.fixed_dictionaries(
        {"partition_index": int32s, "committed_offset": st.integers(-(2**63), 2**63 - 1),
         "committed_leader_epoch": int32s, "commit_timestamp": st.integers(-1, 2**40),
         "committed_metadata": st.one_of(st.none(), st.text(max_size=10),
                                         st.just("m" * 5000))}), max_size=3)
    return st.one_of(
        st.tuples(st.just(ApiKey.FIND_COORDINATOR), st.integers(0, 2), st.fixed_dictionaries(
            {"key": names, "key_type": st.integers(-1, 2)})),
        st.tuples(st.just(ApiKey.JOIN_GROUP), st.integers(0, 5), st.fixed_dictionaries(
            {"group_id": names, "session_timeout_ms": int32s, "rebalance_timeout_ms": int32s,
             "member_id": members, "group_instance_id": instances,
             "protocol_type": st.sampled_from(["consumer", "", "connect"]),
             "protocols": protocols})),
        st.tuples(st.just(ApiKey.SYNC_GROUP), st.integers(0, 3), st.fixed_dictionaries(
            {"group_id": names, "generation_id": int32s, "member_id": members,
             "group_instance_id": instances,
             "assignments": st.lists(st.fixed_dictionaries(
                 {"member_id": members, "assignment": st.binary(max_size=10)}), max_size=3)})),
        st.tuples(st.just(ApiKey.HEARTBEAT), st.integers(0, 3), st.fixed_dictionaries(
            {"group_id": names, "generation_id": int32s, "member_id": members,
             "group_instance_id": instances})),
        st.tuples(st.just(ApiKey.LEAVE_GROUP), st.integers(0, 3), st.fixed_dictionaries(
            {"group_id": names, "member_id": members, "members": st.lists(
                st.fixed_dictionaries({"member_id": members, "group_instance_id": instances}),
                max_size=3)})),
        st.tuples(st.just(ApiKey.OFFSET_COMMIT), st.integers(2, 7), st.fixed_dictionaries(
            {"group_id": names, "generation_id_or_member_epoch": int32s, "member_id": members,
             "group_instance_id": instances, "retention_time_ms": st.integers(-1, 10**9),
             "topics": st.lists(st.fixed_dictionaries(
                 {"name": st.sampled_from(["t", "nope", ""]), "partitions": partitions}),
                 max_size=2)})),
        st.tuples(st.just(ApiKey.OFFSET_FETCH), st.integers(1, 5), st.fixed_dictionaries(
            {"group_id": names, "topics": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
                {"name": st.sampled_from(["t", "nope"]),
                 "partition_indexes": st.lists(int32s, max_size=3)}), max_size=2))})),
        st.tuples(st.just(ApiKey.DESCRIBE_GROUPS), st.integers(0, 4), st.fixed_dictionaries(
            {"groups": st.lists(names, max_size=3), "include_authorized_operations":
             st.booleans()})),
        st.tuples(st.just(ApiKey.LIST_GROUPS), st.integers(0, 2), st.just({})),
        st.tuples(st.just(ApiKey.DELETE_GROUPS), st.integers(0, 1), st.fixed_dictionaries(
            {"groups_names": st.lists(names, max_size=3)})),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests=st.lists(_group_requests(), min_size=1, max_size=12))
def test_hostile_group_requests_get_answers_that_encode(broker, requests):
    dispatcher = RequestDispatcher()
    broker.coordinator.register(dispatcher)
    load(broker)
    for correlation_id, (api_key, version, body) in enumerate(requests):
        if api_key == ApiKey.OFFSET_FETCH and version < 2 and body["topics"] is None:
            body = dict(body, topics=[])
        payload = encode_request(api_key, version, correlation_id, "fuzz", body)
        answer = dispatcher(payload)
        broker.reactor.advance(0.5)
        if isinstance(answer, defer.Deferred):
            # Let every rebalance and initial-delay timer run out. A v0 JoinGroup waits up
            # to its session timeout (no rebalance timeout in v0), which may be 30 minutes.
            broker.reactor.advance(MAX_SESSION_TIMEOUT_MS / 1000 + 30)
            answers = []
            answer.addBoth(answers.append)
            assert answers, f"{api_key.name} v{version} never answered"
            answer = answers[0]
        assert isinstance(answer, bytes), f"{api_key.name} v{version}: {answer!r}"
        decode_response(api_key, version, answer)
