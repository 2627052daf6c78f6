"""Static membership (KIP-345) and cooperative rebalancing (KIP-429) with real clients.

Members run in threads of this process (confluent-kafka's librdkafka and our
Consumer) against a real broker process; each logs every record it receives
with the time it arrived, and every rebalance callback. Static: a member closed
and started again with the same ``group.instance.id`` within its session
timeout gets its partitions back and the others see nothing (no callbacks, the
same generation); no record is delivered twice. Cooperative: when a member
joins, the members that keep partitions never stop receiving them.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.coordination.processes import wait_until as _poll
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

PARTITIONS = 4
SESSION_MS = 10_000
HEARTBEAT_MS = 500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("membership"),
                      broker_config={"group.initial.rebalance.delay.ms": 300}) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Member(threading.Thread):
    """One member in a thread: poll, log each record's arrival, commit after every batch."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str,
                 instance: str | None = None, strategy: str = "range") -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.instance, self.strategy = instance, strategy
        self.stop = threading.Event()
        self.owned: set[int] = set()
        self.events: list[tuple[float, str, tuple[int, ...]]] = []  # (time, callback, parts)
        self.received: list[tuple[float, int, int, bytes]] = []  # (time, partition, offset, value)
        self.error: BaseException | None = None

    def on_assign(self, partitions: list[int]) -> None:
        self.events.append((time.monotonic(), "assign", tuple(sorted(partitions))))

    def on_revoke(self, partitions: list[int]) -> None:
        self.events.append((time.monotonic(), "revoke", tuple(sorted(partitions))))

    def run(self) -> None:
        try:
            self.consume()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def close(self) -> None:
        self.stop.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not stop"
        assert self.error is None, f"{self.name} failed: {self.error!r}"


class CkMember(Member):
    def consume(self) -> None:
        from confluent_kafka import Consumer as CkConsumer
        from confluent_kafka import KafkaException

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                  "partition.assignment.strategy": self.strategy}
        if self.instance:
            config["group.instance.id"] = self.instance
        consumer = CkConsumer(config)
        cooperative = self.strategy == "cooperative-sticky"

        def assigned(c, tps):
            self.on_assign([tp.partition for tp in tps])
            if cooperative:
                c.incremental_assign(tps)
            else:
                c.assign(tps)

        def revoked(c, tps):
            self.on_revoke([tp.partition for tp in tps])
            if cooperative:
                c.incremental_unassign(tps)
            else:
                c.unassign()

        consumer.subscribe([self.topic], on_assign=assigned, on_revoke=revoked)
        try:
            while not self.stop.is_set():
                message = consumer.poll(0.1)
                self.owned = {tp.partition for tp in consumer.assignment()}
                if message is None or message.error():
                    continue
                self.received.append((time.monotonic(), message.partition(), message.offset(),
                                      message.value()))
                try:
                    consumer.commit(message=message, asynchronous=False)
                except KafkaException:
                    pass
        finally:
            consumer.close()


class OurMember(Member):
    consumer: Consumer | None = None
    max_poll_interval_ms = 300_000
    commit_synchronously = True  # else async: a sync commit waits behind a JoinGroup

    def consume(self) -> None:
        from simplekafka.client.errors import KafkaError

        self.consumer = consumer = Consumer(
            bootstrap_servers=self.bootstrap, group_id=self.group,
            group_instance_id=self.instance, auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, partition_assignment_strategy=[self.strategy],
            max_poll_interval_ms=self.max_poll_interval_ms)
        consumer.subscribe(
            [self.topic], on_assign=lambda tps: self.on_assign([tp.partition for tp in tps]),
            on_revoke=lambda tps: self.on_revoke([tp.partition for tp in tps]))
        try:
            while not self.stop.is_set():
                records = consumer.poll(100)
                now = time.monotonic()
                self.owned = {tp.partition for tp in consumer.assignment()}
                if not records:
                    continue
                self.received += [(now, r.partition, r.offset, r.value) for r in records]
                try:
                    consumer.commit(asynchronous=not self.commit_synchronously)
                except KafkaError:
                    pass
        finally:
            consumer.close()

    @property
    def generation(self) -> int:
        group = self.consumer._group if self.consumer is not None else None
        return group.generation if group is not None else -1


class Traffic(threading.Thread):
    """Keeps producing numbered records to every partition until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(bootstrap_servers=bootstrap, linger_ms=2)
        self.topic = topic
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        while not self.stop.is_set():
            for p in range(PARTITIONS):
                self.producer.send(self.topic, str(self.sent).encode(), partition=p)
                self.sent += 1
            time.sleep(0.02)
        self.producer.flush()
        self.producer.close()


def wait_until(condition, timeout: float, what: str) -> None:
    _poll(condition, what, timeout=timeout, interval=0.05, error=AssertionError)


def covers_all(*members: Member) -> bool:
    """Every partition owned by exactly one of ``members``, and each owns some."""
    owned = [p for m in members for p in m.owned]
    return sorted(owned) == list(range(PARTITIONS)) and all(m.owned for m in members)


def new_topic(bootstrap: str) -> str:
    topic = unique("membership")
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, num_partitions=PARTITIONS)
    return topic


def receiving(member: Member, since: float) -> bool:
    return any(t > since for t, *_ in member.received)


def test_restarted_static_members_get_their_partitions_back_without_a_rebalance(cluster):
    """confluent-kafka and our Consumer, each restarted within the session timeout."""
    bootstrap = cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), unique("static")
    traffic = Traffic(bootstrap, topic)
    traffic.start()
    ours = OurMember("ours", bootstrap, topic, group, instance="ours")
    ck = CkMember("ck", bootstrap, topic, group, instance="ck")
    ours.start()
    ck.start()
    incarnations: list[Member] = [ours, ck]
    try:
        wait_until(lambda: covers_all(ours, ck) and ours.generation > 0, 60,
                   "both members assigned")
        generation, our_events, ck_owned = ours.generation, len(ours.events), set(ck.owned)

        # Restart the confluent-kafka member: ours sees nothing.
        ck.close()
        ck = CkMember("ck again", bootstrap, topic, group, instance="ck")
        incarnations.append(ck)
        ck.start()
        restarted = time.monotonic()
        wait_until(lambda: receiving(ck, restarted), 30, "the restarted member consuming")
        assert ck.owned == ck_owned
        assert ours.generation == generation and len(ours.events) == our_events

        # Restart ours: confluent-kafka's member sees nothing.
        ck_events, ours_owned = len(ck.events), set(ours.owned)
        ours.close()
        ours = OurMember("ours again", bootstrap, topic, group, instance="ours")
        incarnations.append(ours)
        ours.start()
        restarted = time.monotonic()
        wait_until(lambda: receiving(ours, restarted), 30, "our restarted member consuming")
        assert ours.owned == ours_owned and ours.generation == generation
        assert len(ck.events) == ck_events
        assert [kind for _, kind, _ in ours.events] == ["assign"]  # its own start only
    finally:
        traffic.stop.set()
        traffic.join(30)
    # Every record delivered, none twice (each incarnation committed what it processed).
    wait_until(lambda: sum(len(m.received) for m in incarnations) >= traffic.sent, 60,
               "every record consumed")
    for member in incarnations[-2:]:
        member.close()
    values = Counter(value for m in incarnations for *_, value in m.received)
    assert len(values) == traffic.sent and set(values.values()) == {1}, \
        [v for v, n in values.items() if n > 1][:5]


def kept_partitions_never_stopped(member: Member, before: set[int], joined_at: float,
                                  newcomer: Member) -> set[int]:
    """Check the timeline of a member that was consuming ``before`` when ``newcomer``
    joined at ``joined_at``: the partitions it keeps were never revoked, and it received
    records from each of them while the rebalance was on (from the join until the
    newcomer's first record). Returns the partitions kept."""
    kept = before & member.owned
    assert kept, f"{member.name} kept nothing: {before} -> {member.owned}"
    revoked = {p for t, kind, parts in member.events if t >= joined_at and kind == "revoke"
               for p in parts}
    assert not revoked & kept, f"{member.name} had kept partitions revoked: {member.events}"
    first_of_newcomer = min(t for t, *_ in newcomer.received)
    during = {p for t, p, *_ in member.received if joined_at <= t <= first_of_newcomer}
    assert kept <= during, (f"{member.name} stopped consuming {kept - during} during the "
                            f"rebalance ({joined_at:.2f}-{first_of_newcomer:.2f})")
    return kept


@pytest.mark.parametrize("kinds", [(CkMember, CkMember, CkMember),
                                   (OurMember, CkMember, OurMember)],
                         ids=["confluent-kafka", "ours-with-confluent-kafka"])
def test_cooperative_members_keep_consuming_what_they_keep_while_a_member_joins(cluster,
                                                                               kinds):
    """cooperative-sticky: two members, then a third joins (confluent-kafka only; ours
    and confluent-kafka in one group, where either may lead and assign)."""
    bootstrap = cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), unique("cooperative")
    traffic = Traffic(bootstrap, topic)
    traffic.start()
    first, second = (kind(f"member-{i}", bootstrap, topic, group,
                          strategy="cooperative-sticky") for i, kind in enumerate(kinds[:2]))
    members = [first, second]
    try:
        for member in members:
            member.start()
        wait_until(lambda: covers_all(first, second), 60, "two members sharing the topic")
        before = {m.name: set(m.owned) for m in members}
        time.sleep(0.5)
        third = kinds[2]("member-2", bootstrap, topic, group, strategy="cooperative-sticky")
        joined_at = time.monotonic()
        third.start()
        members.append(third)
        wait_until(lambda: covers_all(first, second, third) and third.received, 60,
                   "three members sharing the topic")
        for member in (first, second):
            kept_partitions_never_stopped(member, before[member.name], joined_at, third)
    finally:
        traffic.stop.set()
        traffic.join(30)
        for member in members:
            member.close()


def test_our_cooperative_member_fetches_while_its_rejoin_waits(cluster):
    """Our Consumer rejoins on a thread: while the follow-up rebalance waits for a member
    that never comes back (until the rebalance timeout), it goes on receiving records
    from the partitions it keeps. Joining inside poll, it would receive nothing then."""
    from simplekafka.client import KafkaClient
    from simplekafka.client.group_protocol import (
        Subscription,
        encode_subscription,
        find_coordinator,
    )
    from simplekafka.protocol.api import ApiKey

    bootstrap = cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), unique("cooperative-wait")
    traffic = Traffic(bootstrap, topic)
    traffic.start()
    ours = OurMember("ours", bootstrap, topic, group, strategy="cooperative-sticky")
    ours.max_poll_interval_ms = 6000  # the group's rebalance timeout
    ours.commit_synchronously = False
    ours.start()
    client = KafkaClient(bootstrap)
    try:
        wait_until(lambda: len(ours.owned) == PARTITIONS, 60, "ours owning every partition")
        coordinator = find_coordinator(client, group, 30_000)
        join = {"group_id": group, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 3000,
                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "cooperative-sticky", "metadata": encode_subscription(
                    Subscription([topic], b"", ()))}]}
        answer = client.request(coordinator, ApiKey.JOIN_GROUP, join, timeout_ms=30_000)
        join["member_id"] = answer.member_id  # MEMBER_ID_REQUIRED, then the real join
        answer = client.request(coordinator, ApiKey.JOIN_GROUP, join, timeout_ms=30_000)
        assert answer.error_code == 0
        client.request(coordinator, ApiKey.SYNC_GROUP, {
            "group_id": group, "generation_id": answer.generation_id,
            "member_id": answer.member_id, "group_instance_id": None, "assignments": []},
            timeout_ms=30_000)
        # This lazy member now never heartbeats nor rejoins. Ours gave up half its
        # partitions and rejoined: the follow-up rebalance waits ~6 s for the lazy one.
        wait_until(lambda: any(kind == "revoke" for _, kind, _ in ours.events), 30,
                   "ours revoking what the newcomer is to get")
        revoked_at = max(t for t, kind, _ in ours.events if kind == "revoke")
        kept = set(ours.owned)
        assert 0 < len(kept) < PARTITIONS
        time.sleep(4)
        during = {p for t, p, *_ in ours.received if revoked_at + 1 <= t <= revoked_at + 4}
        assert kept <= during, (f"ours stopped consuming {kept - during} while rejoining",
                                [(round(t - revoked_at, 2), k, p) for t, k, p in ours.events])
        wait_until(lambda: len(ours.owned) == PARTITIONS, 30,
                   "ours taking everything back once the lazy member is dropped")
    finally:
        client.close()
        traffic.stop.set()
        traffic.join(30)
        ours.close()


def test_a_second_consumer_with_the_same_instance_id_fences_the_first(cluster):
    """Two of ours claiming one group.instance.id: the newer takes the place (and the
    partitions); the older hears FENCED_INSTANCE_ID and its poll raises."""
    from simplekafka.client.errors import KafkaError
    from simplekafka.protocol.errors import ErrorCode

    bootstrap = cluster.bootstrap_servers
    topic, group = new_topic(bootstrap), unique("fenced")

    def static() -> Consumer:
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                            group_instance_id="only-one", session_timeout_ms=SESSION_MS,
                            heartbeat_interval_ms=HEARTBEAT_MS)
        consumer.subscribe([topic])
        return consumer

    older, newer = static(), static()
    try:
        wait_until(lambda: bool(older.poll(100) or older.assignment()), 30, "older assigned")
        wait_until(lambda: bool(newer.poll(100) or newer.assignment()), 30, "newer assigned")
        assert len(newer.assignment()) == PARTITIONS
        with pytest.raises(KafkaError) as fenced:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                older.poll(100)
        assert fenced.value.error_code == ErrorCode.FENCED_INSTANCE_ID
    finally:
        newer.close()
        older.close()
