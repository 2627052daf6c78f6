"""Consumer groups with real clients on a real broker: commit, restart, resume; kcat -G.

Each of confluent-kafka (librdkafka), kafka-python, aiokafka and our Consumer
subscribes with a group id, processes part of a topic, commits exactly what it
processed, closes; a second instance of the same client in the same group then
resumes exactly after the last commit: together they see every record once.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
PARTITIONS = 3
RECORDS = 60
SESSION_MS = 6000


@pytest.fixture(scope="module")
def group_cluster(tmp_path_factory):
    """One broker whose groups do not wait 3 s for more members before the first rebalance."""
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("groups"),
                      broker_config={"group.initial.rebalance.delay.ms": 200}) as cluster:
        yield cluster


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def topic(group_cluster):
    """A fresh topic with RECORDS records, values b'0'..b'59', spread over the partitions."""
    name = unique("groups")
    bootstrap = group_cluster.bootstrap_servers
    with Admin(bootstrap) as admin:
        admin.create_topic(name, num_partitions=PARTITIONS)
    producer = Producer(bootstrap_servers=bootstrap)
    for i in range(RECORDS):
        producer.send(name, str(i).encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    return name


# -- one session of each client: consume up to `limit` records, commit them, close -------


def ck_session(bootstrap: str, topic: str, group: str, limit: int) -> list[int]:
    from confluent_kafka import Consumer as CkConsumer
    from confluent_kafka import TopicPartition as CkTP

    consumer = CkConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "session.timeout.ms": SESSION_MS})
    consumer.subscribe([topic])
    seen, last = [], {}
    deadline = time.monotonic() + 60
    try:
        while len(seen) < limit and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                if len(seen) and limit >= RECORDS and time.monotonic() > deadline - 50:
                    break
                continue
            seen.append(int(message.value()))
            last[message.partition()] = message.offset()
        if last:
            consumer.commit(offsets=[CkTP(topic, p, o + 1) for p, o in last.items()],
                            asynchronous=False)
    finally:
        consumer.close()
    return seen


def kp_session(bootstrap: str, topic: str, group: str, limit: int) -> list[int]:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KpTP

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000,
                             consumer_timeout_ms=10_000)
    seen, last = [], {}
    try:
        for message in consumer:
            seen.append(int(message.value))
            last[message.partition] = message.offset
            if len(seen) >= limit:
                break
        if last:
            consumer.commit({KpTP(topic, p): OffsetAndMetadata(o + 1, None, -1)
                             for p, o in last.items()})
    finally:
        consumer.close()
    return seen


def aio_session(bootstrap: str, topic: str, group: str, limit: int) -> list[int]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTP

    async def run() -> list[int]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000)
        await consumer.start()
        seen, last = [], {}
        try:
            deadline = time.monotonic() + 30
            while len(seen) < limit and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=1000, max_records=limit - len(seen))
                if not batch and seen and time.monotonic() > deadline - 20:
                    break
                for messages in batch.values():
                    for message in messages:
                        seen.append(int(message.value))
                        last[message.partition] = message.offset
            if last:
                await consumer.commit({AioTP(topic, p): o + 1 for p, o in last.items()})
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(asyncio.wait_for(run(), 90))


def our_session(bootstrap: str, topic: str, group: str, limit: int) -> list[int]:
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000)
    consumer.subscribe([topic])
    seen = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) < limit and time.monotonic() < deadline:
            records = consumer.poll(500, max_records=limit - len(seen))
            if not records and seen and time.monotonic() > deadline - 20:
                break
            seen += [int(r.value) for r in records]
        consumer.commit()  # the positions: one past each record returned
    finally:
        consumer.close()
    return seen


SESSIONS = {"confluent-kafka": ck_session, "kafka-python": kp_session,
            "aiokafka": aio_session, "simplekafka": our_session}


@pytest.mark.parametrize("client", sorted(SESSIONS))
def test_resume_exactly_after_the_last_commit(group_cluster, topic, client):
    session = SESSIONS[client]
    group = unique(f"resume-{client}")
    first = session(group_cluster.bootstrap_servers, topic, group, 25)
    assert len(first) == 25, f"{client} consumed {len(first)} records in its first session"
    # The rest, and no more: a record read twice (a commit behind) comes before the new
    # ones of its partition, so it takes a new one's place and the check below sees it;
    # asking for all RECORDS would idle 10 s after the last one, for records that cannot come.
    second = session(group_cluster.bootstrap_servers, topic, group, RECORDS - len(first))
    assert not set(first) & set(second), "records after the commit were processed twice"
    assert sorted(first + second) == list(range(RECORDS)), "a record was skipped"


def test_our_committed_offsets_are_what_others_read(group_cluster, topic):
    """Committed by us, read back by kafka-python's committed() (and the other way round)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTP

    group = unique("cross")
    bootstrap = group_cluster.bootstrap_servers
    ours = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    ours.commit({(topic, 0): 7, (topic, 1): 3})
    assert ours.committed((topic, 0)) == 7
    assert ours.committed((topic, 2)) is None
    theirs = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        assert theirs.committed(KpTP(topic, 0)) == 7
        assert theirs.committed(KpTP(topic, 1)) == 3
    finally:
        theirs.close()
    ours.close()


def test_auto_commit_and_async_commit(group_cluster, topic):
    bootstrap = group_cluster.bootstrap_servers
    group = unique("auto")
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=True, auto_commit_interval_ms=200)
    consumer.subscribe(topic)
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < RECORDS and time.monotonic() < deadline:
        seen += consumer.poll(300)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # polls drive the auto-commit
        consumer.poll(100)
        committed = [consumer.committed((topic, p)) for p in range(PARTITIONS)]
        if committed == [RECORDS // PARTITIONS] * PARTITIONS:
            break
    assert committed == [RECORDS // PARTITIONS] * PARTITIONS
    results = []
    future = consumer.commit({(topic, 0): 5}, asynchronous=True,
                             callback=lambda offsets, error: results.append(error))
    assert future.result(10) is None
    assert results == [None]
    assert consumer.committed((topic, 0)) == 5
    consumer.close(autocommit=False)


def test_kcat_balanced_consumer_reads_everything(group_cluster, topic):
    output = subprocess.run(
        [KCAT, "-b", group_cluster.bootstrap_servers, "-G", unique("kcat"),
         "-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000",
         "-c", str(RECORDS), "-f", "%s\n", "-q", topic],
        capture_output=True, timeout=90, check=True).stdout
    values = sorted(int(v) for v in output.split())
    assert values == list(range(RECORDS))


def test_pattern_subscription_callbacks_and_misuse(group_cluster, topic):
    bootstrap = group_cluster.bootstrap_servers
    group = unique("pattern")
    events = []
    consumer = Consumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                        enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                        heartbeat_interval_ms=500)
    consumer.subscribe(pattern=topic.replace("groups-", "gro.ps-"),
                       on_assign=lambda tps: events.append(("assign", sorted(tps))),
                       on_revoke=lambda tps: events.append(("revoke", sorted(tps))))
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < RECORDS and time.monotonic() < deadline:
        seen += consumer.poll(300)
    assert len(seen) == RECORDS
    assert consumer.subscription() == [topic]
    assert events[0][0] == "assign" and len(events[0][1]) == PARTITIONS
    # A second member joins: the first gives everything back, then gets its share.
    other = Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                     session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
    other.subscribe([topic])
    import threading

    joining = threading.Thread(target=other.poll, args=(15_000,))
    joining.start()
    deadline = time.monotonic() + 20
    while len(events) < 3 and time.monotonic() < deadline:
        consumer.poll(200)
    joining.join(30)
    assert [e[0] for e in events[:3]] == ["assign", "revoke", "assign"]
    mine, theirs = consumer.assignment(), other.assignment()
    assert not mine & theirs and len(mine | theirs) == PARTITIONS
    other.close()
    consumer.unsubscribe()
    assert consumer.assignment() == set()
    with pytest.raises(ValueError):
        consumer.subscribe(["a"], pattern="b")
    consumer.close()
    with pytest.raises(ValueError, match="group_id"):
        Consumer(bootstrap_servers=bootstrap).subscribe([topic])
    with pytest.raises(ValueError, match="heartbeat"):
        Consumer(bootstrap_servers=bootstrap, group_id="x", session_timeout_ms=1000,
                 heartbeat_interval_ms=2000)


def test_a_member_that_stops_polling_leaves_after_max_poll_interval(group_cluster, topic):
    """Heartbeats alone do not keep a stuck application in the group (as in Kafka)."""
    import threading

    bootstrap = group_cluster.bootstrap_servers
    group = unique("stuck")

    def member() -> Consumer:
        consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                            enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                            heartbeat_interval_ms=300, max_poll_interval_ms=3000)
        consumer.subscribe([topic])
        return consumer

    stuck, busy = member(), member()
    stop = threading.Event()

    def keep_polling() -> None:
        while not stop.is_set():
            busy.poll(100)

    poller = threading.Thread(target=keep_polling, daemon=True)
    poller.start()
    deadline = time.monotonic() + 30
    while not (stuck.assignment() and busy.assignment()) and time.monotonic() < deadline:
        stuck.poll(100)
    assert stuck.assignment() and busy.assignment()
    time.sleep(3.0 + 2.0)  # the stuck one does not poll past max_poll_interval_ms
    deadline = time.monotonic() + 15
    while len(busy.assignment()) < PARTITIONS and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(busy.assignment()) == PARTITIONS, "the busy member did not take over"

    def shared() -> bool:
        mine, theirs = stuck.assignment(), busy.assignment()
        return bool(mine and theirs) and not mine & theirs and len(mine | theirs) == PARTITIONS

    deadline = time.monotonic() + 30
    while not shared() and time.monotonic() < deadline:
        stuck.poll(100)  # polling again gives up the stale partitions and rejoins
    assert shared()
    stop.set()
    poller.join(10)
    stuck.close()
    busy.close()
