"""Stage 8 checks: the learner's streaming-reader pieces against SimpleKafka's Spark source.

Exercises 1 and 2 are pure: the learner's offsets against SimpleKafka's own
functions over many cases, the micro-batch timeline first. Exercise 3 reads
ranges of a real broker (a LocalCluster) with the learner's ``read_range``
and with SimpleKafka's ``RangeReader``, every range of the first offsets
included. Exercise 4 registers the learner's source with a real SparkSession
(one per process, local[2]) and runs a streaming query with
maxOffsetsPerTrigger against a real broker, twice (the second run from the
checkpoint, after a partition was added): each micro-batch must hold exactly
the records SimpleKafka's own source plans and reads.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from simplekafka.protocol.structs import TopicPartition
from simplekafka.spark import offsets as sk_offsets
from simplekafka.spark.options import StartingPoint, parse_source_options
from simplekafka.spark.source import ClusterView

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from simplekafka.client.client import KafkaClient
    from simplekafka.cluster import LocalCluster

Offsets = dict[tuple[str, int], int]

# --- exercise 1: startingOffsets ------------------------------------------------------------


class _FakeView:
    """What ``resolve`` may use of its ClusterView: ``offsets`` from two fixed tables."""

    def __init__(self, earliest: Offsets, latest: Offsets) -> None:
        self.earliest = earliest
        self.latest = latest

    def offsets(self, tps: list[TopicPartition], timestamp: int) -> Offsets:
        if timestamp == EARLIEST_TIMESTAMP:
            table = self.earliest
        elif timestamp == LATEST_TIMESTAMP:
            table = self.latest
        else:
            raise ValueError(f"offsets(timestamp={timestamp}): only -2 and -1 are looked up")
        return {(tp.topic, tp.partition): table[(tp.topic, tp.partition)] for tp in tps}


TPS = [TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("orders", 2),
       TopicPartition("audit", 0)]
EARLIEST = {("orders", 0): 0, ("orders", 1): 7, ("orders", 2): 3, ("audit", 0): 12}
LATEST = {("orders", 0): 40, ("orders", 1): 7, ("orders", 2): 25, ("audit", 0): 30}

RESOLVE_CASES: list[tuple[str, dict]] = [
    ("earliest", {}),
    ("latest", {}),
    ("offsets", {"orders": {0: 5}}),
    ("offsets", {"orders": {0: -1, 1: -2, 2: 9}, "audit": {0: -1}}),
    ("offsets", {"orders": {0: -2, 2: -1}}),
    ("offsets", {"audit": {0: 0}}),
    ("offsets", {"orders": {2: 99}, "audit": {0: -2}}),
    ("offsets", {"orders": {0: 0, 1: 0, 2: 0}, "audit": {0: 0}}),
    ("offsets", {"orders": {3: 1}}),
    ("offsets", {"orders": {0: 1}, "payments": {0: 1, 1: 2}}),
    ("offsets", {"audit": {1: -1}, "orders": {5: 0}}),
    ("offsets", {"audit": {0: 4}, "orders": {0: -1, 7: -2}}),
]


def _call_resolve(function: Callable, view: _FakeView, point: StartingPoint,
                  tps: list[TopicPartition]) -> tuple[str, object]:
    """("ok", answer) or ("error", "Type: message"); NotImplementedError goes on up."""
    try:
        return "ok", function(view, point, list(tps))
    except NotImplementedError:
        raise
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def _show_point(point: StartingPoint) -> str:
    if point.kind != "offsets":
        return repr(point.kind)
    return json.dumps({t: {str(p): o for p, o in parts.items()}
                       for t, parts in point.offsets.items()})


def _resolve_cases() -> Iterator[tuple[StartingPoint, list[TopicPartition], Offsets, Offsets]]:
    for kind, given in RESOLVE_CASES:
        yield StartingPoint(kind, given), TPS, EARLIEST, LATEST
    # Every mix of -2, -1, a number and "left out" over three partitions.
    tps = TPS[:3]
    choices = (None, -2, -1, 17)
    for combo in itertools.product(choices, repeat=3):
        given = {p: o for p, o in enumerate(combo) if o is not None}
        point = StartingPoint("offsets", {"orders": given}) if given else StartingPoint("latest")
        yield point, tps, EARLIEST, LATEST
    # Only some partitions subscribed; log starts equal to the ends.
    yield StartingPoint("offsets", {"audit": {0: -1}}), [TPS[3]], LATEST, LATEST
    yield StartingPoint("earliest"), [TPS[1], TPS[3]], EARLIEST, LATEST
    yield StartingPoint("latest"), [], EARLIEST, LATEST
    # Kinds made at run time, as from a user's option text: equal to the literals, not the
    # same objects (a kind compared with `is` takes "earliest" for "latest").
    for kind in ("earliest", "latest"):
        yield StartingPoint("".join(list(kind))), TPS, EARLIEST, LATEST


def check_starting_offsets(learner: ModuleType, _workdir: Path) -> None:
    mine = learner.ClusterView.resolve
    for point, tps, earliest, latest in _resolve_cases():
        view = _FakeView(earliest, latest)
        expected = _call_resolve(ClusterView.resolve, view, point, tps)
        got = _call_resolve(mine, view, point, tps)
        if got[0] == "ok" and isinstance(got[1], dict):
            got = ("ok", dict(got[1]))
        if got != expected:
            subscribed = [f"{tp.topic}-{tp.partition}" for tp in tps]
            raise ExerciseFailed(
                f"resolve(startingOffsets={_show_point(point)}, tps={subscribed})",
                [f"log starts (offsets(tps, -2)):     {_table(earliest, tps)}",
                 f"high watermarks (offsets(tps, -1)): {_table(latest, tps)}",
                 f"expected: {_outcome(expected)}",
                 f"got:      {_outcome(got)}"])


def _table(offsets: Offsets, tps: list[TopicPartition] | None = None) -> str:
    keys = sorted(offsets) if tps is None else [(tp.topic, tp.partition) for tp in tps]
    return "{" + ", ".join(f"{t}-{p}: {offsets[(t, p)]}" for t, p in keys
                           if (t, p) in offsets) + "}"


def _outcome(outcome: tuple[str, object]) -> str:
    kind, value = outcome
    if kind == "error":
        return f"raises {value}"
    return _table(value) if isinstance(value, dict) and all(
        isinstance(k, tuple) and len(k) == 2 for k in value) else repr(value)


# --- exercise 2: the next micro-batch -------------------------------------------------------

RATE_CASES: list[tuple[Offsets, Offsets, int]] = [
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10, ("t", 1): 10}, 20),  # exactly the limit
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10, ("t", 1): 10}, 19),
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 10, ("t", 1): 10}, 21),
    ({("t", 0): 0, ("t", 1): 5}, {("t", 0): 100, ("t", 1): 6}, 10),  # a share under 1
    ({("t", 0): 0, ("t", 1): 0, ("t", 2): 0}, {("t", 0): 1, ("t", 1): 1, ("t", 2): 1}, 2),
    ({("t", 0): 3, ("t", 1): 9}, {("t", 0): 20, ("t", 1): 4}, 5),  # a partition behind
    ({("t", 0): 0}, {("t", 0): 50, ("t", 1): 50}, 10),  # no start: kept
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 7, ("t", 1): 0}, 3),
    ({("t", 0): 10, ("t", 1): 10}, {("t", 0): 10, ("t", 1): 10}, 1),
    ({("a", 0): 0, ("b", 0): 0, ("b", 1): 0}, {("a", 0): 300, ("b", 0): 30, ("b", 1): 3}, 100),
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 2, ("t", 1): 1}, 1),
    ({("t", 0): 0, ("t", 1): 0, ("t", 2): 50}, {("t", 0): 30, ("t", 1): 12, ("t", 2): 20}, 21),
    # The backlog exactly the limit where floating point shares fall short: 22 * (15 / 22) is
    # 14.999..., so capping anyway would end partition 0 one record early; and above 256.
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 15, ("t", 1): 7}, 22),
    ({("t", 0): 100, ("t", 1): 0}, {("t", 0): 323, ("t", 1): 36}, 259),
]

NEXT_CASES: list[tuple[Offsets, Offsets, Offsets, int | None]] = [
    ({("t", 0): 5, ("t", 1): 0}, {("t", 0): 25, ("t", 1): 4}, {("t", 0): 0, ("t", 1): 0}, None),
    ({("t", 0): 5, ("t", 1): 0}, {("t", 0): 25, ("t", 1): 4}, {("t", 0): 0, ("t", 1): 0}, 10),
    ({("t", 0): 5}, {("t", 0): 5, ("t", 1): 30}, {("t", 0): 0, ("t", 1): 8}, 10),  # new one
    ({("t", 0): 5}, {("t", 0): 9, ("t", 1): 30}, {("t", 0): 2, ("t", 1): 30}, None),
    ({("t", 0): 40, ("t", 1): 3}, {("t", 0): 12, ("t", 1): 9}, {("t", 0): 0, ("t", 1): 0}, 4),
    ({("t", 0): 40, ("t", 1): 3}, {("t", 0): 12, ("t", 1): 9}, {("t", 0): 0, ("t", 1): 0}, None),
    ({("t", 0): 7, ("gone", 0): 11}, {("t", 0): 9}, {("t", 0): 0}, None),  # a topic deleted
    ({("t", 0): 7, ("gone", 0): 11}, {("t", 0): 90}, {("t", 0): 0}, 5),
    ({}, {("t", 0): 20, ("t", 1): 20}, {("t", 0): 15, ("t", 1): 0}, 6),
    ({("t", 0): 0}, {("t", 0): 0}, {("t", 0): 0}, 1),
    ({("t", 0): 3, ("t", 1): 3}, {("t", 0): 4, ("t", 1): 100}, {("t", 0): 50, ("t", 1): 50}, 3),
]

# A query's life: before each batch, the high watermarks now (a partition appears at batch 3).
TIMELINE_LATEST: list[Offsets] = [
    {("clicks", 0): 37, ("clicks", 1): 11},
    {("clicks", 0): 37, ("clicks", 1): 11},
    {("clicks", 0): 41, ("clicks", 1): 12},
    {("clicks", 0): 41, ("clicks", 1): 30, ("clicks", 2): 6},
    {("clicks", 0): 41, ("clicks", 1): 30, ("clicks", 2): 6},
    {("clicks", 0): 41, ("clicks", 1): 30, ("clicks", 2): 6},
    {("clicks", 0): 41, ("clicks", 1): 30, ("clicks", 2): 6},
]
TIMELINE_EARLIEST: Offsets = {("clicks", 0): 0, ("clicks", 1): 0, ("clicks", 2): 2}
TIMELINE_START: Offsets = {("clicks", 0): 2, ("clicks", 1): 0}
TIMELINE_LIMIT = 10


def _copy(offsets: Offsets) -> Offsets:
    return dict(offsets)


def _check_timeline(learner: ModuleType) -> None:
    """A query's micro-batches, maxOffsetsPerTrigger 10: the learner's ends batch by batch."""
    steps = Steps()
    steps.step(f"the query starts at {_table(TIMELINE_START)} with maxOffsetsPerTrigger "
               f"{TIMELINE_LIMIT}; log starts {_table(TIMELINE_EARLIEST)}")
    start = dict(TIMELINE_START)
    for batch, latest in enumerate(TIMELINE_LATEST):
        expected = sk_offsets.next_batch_end(start, latest, TIMELINE_EARLIEST, TIMELINE_LIMIT)
        got = learner.next_batch_end(_copy(start), _copy(latest), _copy(TIMELINE_EARLIEST),
                                     TIMELINE_LIMIT)
        if got != expected:
            raise steps.fail(
                f"batch {batch}: next_batch_end(start={_table(start)}, latest={_table(latest)}, "
                f"earliest=..., max_rows={TIMELINE_LIMIT})", _table(expected),
                _table(got) if isinstance(got, dict) else got)
        rows = sum(expected[tp] - start.get(tp, TIMELINE_EARLIEST[tp]) for tp in expected)
        steps.step(f"batch {batch}: high watermarks {_table(latest)} -> ends at "
                   f"{_table(expected)} ({rows} records)")
        start = expected


def _random_offsets(rng: random.Random) -> tuple[Offsets, Offsets]:
    start, end = {}, {}
    for p in range(rng.randint(1, 5)):
        tp = ("t", p)
        begin = rng.randint(0, 60)
        end[tp] = max(0, begin + rng.randint(-6, 70))
        if rng.random() < 0.85:
            start[tp] = begin
    if rng.random() < 0.2:
        start[("old", 0)] = rng.randint(0, 9)
    return start, end


def check_next_batch(learner: ModuleType, _workdir: Path) -> None:
    for start, end, limit in RATE_CASES:
        _same_rate_limit(learner, start, end, limit)
    for start, latest, earliest, max_rows in NEXT_CASES:
        _same_next_end(learner, start, latest, earliest, max_rows)
    _check_timeline(learner)
    rng = random.Random(8)
    for _ in range(600):
        start, end = _random_offsets(rng)
        limit = rng.choice([1, 2, 3, 7, 10, 25, 64, 100, 250])
        _same_rate_limit(learner, {tp: o for tp, o in start.items() if tp in end}, end, limit)
        earliest = {tp: rng.randint(0, 5) for tp in end}
        _same_next_end(learner, start, end, earliest, rng.choice([None, limit]))


def _same_rate_limit(learner: ModuleType, start: Offsets, end: Offsets, limit: int) -> None:
    expected = sk_offsets.rate_limit(start, end, limit)
    got = learner.rate_limit(_copy(start), _copy(end), limit)
    if got != expected:
        backlog = {tp: end[tp] - start.get(tp, end[tp]) for tp in end}
        raise ExerciseFailed(
            f"rate_limit(start={_table(start)}, end={_table(end)}, limit={limit})",
            [f"backlogs: {_table(backlog)} (total of the positive ones: "
             f"{sum(b for b in backlog.values() if b > 0)})",
             f"expected: {_table(expected)}",
             f"got:      {_table(got) if isinstance(got, dict) else repr(got)}"])


def _same_next_end(learner: ModuleType, start: Offsets, latest: Offsets, earliest: Offsets,
                   max_rows: int | None) -> None:
    expected = sk_offsets.next_batch_end(start, latest, earliest, max_rows)
    before = dict(start)
    got = learner.next_batch_end(start, _copy(latest), _copy(earliest), max_rows)
    call = (f"next_batch_end(start={_table(before)}, latest={_table(latest)}, "
            f"earliest={_table(earliest)}, max_rows={max_rows})")
    if got != expected:
        raise ExerciseFailed(call, [f"expected: {_table(expected)}",
                                    f"got:      {_table(got) if isinstance(got, dict) else got!r}"])
    if start != before:
        raise ExerciseFailed(f"{call} changed its start argument",
                             [f"before: {_table(before)}", f"after:  {_table(start)}"])


# --- real processes: a broker, SimpleKafka's reader -----------------------------------------

HOST = "127.0.0.1"
CLUSTER_START_TIMEOUT = 60.0


@contextlib.contextmanager
def _cluster(workdir: Path, steps: Steps) -> Iterator[LocalCluster]:
    """A one-broker LocalCluster (ZooKeeper and a broker process on 127.0.0.1); stopped after."""
    from simplekafka.cluster import LocalCluster

    began = time.monotonic()
    cluster = LocalCluster(brokers=1, base_dir=workdir / "cluster",
                           broker_config={"transaction.state.log.num.partitions": 1},
                           start_timeout=CLUSTER_START_TIMEOUT, metrics=False)
    cluster.start()
    steps.step(f"a SimpleKafka broker process at {cluster.bootstrap_servers} "
               f"(started in {time.monotonic() - began:.1f} s; logs in {workdir / 'cluster'})")
    try:
        yield cluster
    finally:
        cluster.stop()


def _topic(cluster: LocalCluster, name: str, partitions: int = 1,
           config: dict | None = None) -> None:
    from simplekafka.admin import Admin

    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, 1, config=config)
    for p in range(partitions):
        cluster.wait_for_leader(name, p, timeout=30)


def _reference_rows(client: KafkaClient, topic: str, partition: int, start: int,
                    end: int) -> list[tuple]:
    """SimpleKafka's own read of the range (``RangeReader`` and ``to_arrow``) as row tuples."""
    from simplekafka.spark.arrow_records import to_arrow
    from simplekafka.spark.fetching import RangeReader

    rows = []
    reader = RangeReader(client, TopicPartition(topic, partition), start, end, timeout_s=30)
    for decoded in reader:
        for row in to_arrow(decoded, topic, partition, False).to_pylist():
            rows.append((row["key"], row["value"], row["topic"], row["partition"], row["offset"],
                         row["timestamp"].astimezone(timezone.utc), row["timestampType"]))
    return rows


def _log_layout(client: KafkaClient, topic: str, end: int) -> list[str]:
    """The partition's batches, as the learner's fetches will see them."""
    from simplekafka.client.client import wait_for
    from simplekafka.protocol.api import ApiKey
    from simplekafka.protocol.records import parse_batches
    from simplekafka.spark.fetching import fetch_body

    lines: list[str] = []
    position = 0
    while position < end:
        answer = wait_for(client.send(client.leader_for(topic, 0), ApiKey.FETCH, fetch_body(
            TopicPartition(topic, 0), position, 100, 1 << 22, 1 << 22)), 30)
        batches = parse_batches(answer.responses[0].partitions[0].records or b"")
        if not batches:
            break
        for batch in batches:
            kind = ("control batch (a transaction marker)" if batch.is_control
                    else "transactional batch" if batch.is_transactional else "batch")
            stamp = " LogAppendTime" if batch.timestamp_type == 1 else ""
            if len(lines) == 16:
                lines.append("...")
            if len(lines) > 16:
                position = batch.next_offset
                continue
            lines.append(f"offsets {batch.base_offset}-{batch.last_offset}: {kind}, "
                         f"{len(batch)} record(s){stamp}")
            position = batch.next_offset
    return lines


def _fill_read_topics(cluster: LocalCluster) -> None:
    from simplekafka.producer import Producer

    servers = cluster.bootstrap_servers
    _topic(cluster, "reads")
    _topic(cluster, "stamped", config={"message.timestamp.type": "LogAppendTime"})
    base = 1_600_000_000_000
    with Producer(servers, acks="all", linger_ms=20) as producer:
        keyed = [(b"k0", b"v0"), (None, b"v1"), (b"", b""), (b"k3", None), (b"k4", b"v4"),
                 (b"k5", b"v5")]
        for i, (key, value) in enumerate(keyed):
            producer.send("reads", value=value, key=key, partition=0, timestamp=base + i,
                          headers=[("h", b"x")] if i == 4 else None)
        producer.flush()
        for i in range(3):
            producer.send("reads", value=b"w%d" % i, key=b"w", partition=0,
                          timestamp=base + 100 + i)
        producer.flush()
    with Producer(servers, transactional_id="learn-stage8") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send("reads", value=b"committed-%d" % i, partition=0, timestamp=base + 200)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(2):
            producer.send("reads", value=b"aborted-%d" % i, partition=0, timestamp=base + 300)
        producer.flush()
        producer.abort_transaction()
    with Producer(servers, acks="all", linger_ms=20) as producer:
        for i in range(2):
            producer.send("reads", value=b"after-%d" % i, partition=0, timestamp=base + 400 + i)
        producer.flush()
        big = bytes(range(256)) * 24  # 6 KiB: the tail takes several 64 KiB fetches
        for i in range(40):
            producer.send("reads", value=b"%d:" % i + big, key=b"big", partition=0,
                          timestamp=base + 500 + i)
        producer.flush()
        for _flush in range(2):
            for i in range(3):
                producer.send("stamped", value=b"s%d" % i, partition=0,
                              timestamp=1_500_000_000_000 + i)
            producer.flush()


def _short(row: object) -> str:
    if not isinstance(row, tuple) or len(row) != 7:
        return repr(row)[:200]
    key, value, *rest = row
    if isinstance(value, bytes) and len(value) > 24:
        value = value[:20] + b"..."
    return repr((key, value, *rest))


def _compare_rows(steps: Steps, what: str, expected: list[tuple], got: Sequence[object]) -> None:
    if got == expected:
        return
    at = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b),
              min(len(expected), len(got)))
    lines = ["steps:"] + [f"  {n}. {text}" for n, text in enumerate(steps.done, 1)]
    lines.append(f"expected {len(expected)} rows, got {len(got)}; first difference at row {at}:")
    if at:
        lines.append(f"  the row before (equal): {_short(expected[at - 1])}")
    lines += [f"  expected: {_short(expected[at]) if at < len(expected) else '(no more rows)'}",
              f"  got:      {_short(got[at]) if at < len(got) else '(no more rows)'}"]
    raise ExerciseFailed(what, lines)


def _learner_rows(steps: Steps, read_range: Callable, client: KafkaClient, topic: str,
                  start: int, end: int, most: int) -> list[object]:
    call = f"read_range(client, {topic!r}, 0, {start}, {end})"
    try:
        return list(itertools.islice(read_range(client, topic, 0, start, end), most))
    except NotImplementedError:
        raise
    except Exception as exc:
        raise steps.fail(f"{call} raised {type(exc).__name__}: {exc}", "rows",
                         f"{type(exc).__name__}: {exc}") from exc


def check_read(learner: ModuleType, workdir: Path) -> None:
    from simplekafka.admin.groups import list_offsets
    from simplekafka.client.client import KafkaClient

    steps = Steps()
    with _cluster(workdir, steps) as cluster:
        _fill_read_topics(cluster)
        client = KafkaClient(cluster.bootstrap_servers, client_id="learn-check-reference")
        mine = KafkaClient(cluster.bootstrap_servers, client_id="learn-check-yours")
        try:
            ends = {}
            for topic in ("reads", "stamped"):
                tp = TopicPartition(topic, 0)
                ends[topic] = list_offsets(client, {tp: LATEST_TIMESTAMP}, 30_000)[tp]
                layout = _log_layout(client, topic, ends[topic])
                steps.step(f"{topic}-0 holds offsets 0 to {ends[topic] - 1}:\n      "
                           + "\n      ".join(layout))
            ranges = [("reads", 0, ends["reads"]), ("stamped", 0, ends["stamped"])]
            ranges += [("reads", s, e) for s in range(0, 19) for e in range(s, 19)]
            ranges += [("reads", s, ends["reads"]) for s in (5, 9, 12, 13, 14, 15, 17, 30)]
            ranges += [("reads", ends["reads"] - 1, ends["reads"]),
                       ("reads", ends["reads"], ends["reads"]), ("reads", 18, 40)]
            ranges += [("stamped", s, e) for s in range(0, 6) for e in range(s, 7)]
            for n, (topic, start, end) in enumerate(ranges):
                expected = _reference_rows(client, topic, 0, start, end)
                got = _learner_rows(steps, learner.read_range, mine, topic, start, end,
                                    len(expected) + 5)
                what = f"read_range(client, {topic!r}, 0, {start}, {end})"
                if n < 2 or got != expected:
                    steps.step(f"{what}: {len(expected)} rows expected")
                _compare_rows(steps, f"the rows of {what}", expected, got)
            steps.step(f"{len(ranges) - 2} more ranges read alike")
        finally:
            client.close()
            mine.close()


# --- exercise 4: the whole reader on real Spark ---------------------------------------------

QUERY_TIMEOUT = 100  # seconds
WORKER_START_FAILED = "Python worker failed to connect back"
WORKER_START_ATTEMPTS = 3
MAX_PER_TRIGGER = 10


def _spark(steps: Steps) -> SparkSession:
    """The process's one SparkSession (local[2]), started on first use."""
    from simplekafka.spark.session import local_spark

    began = time.monotonic()
    spark: SparkSession = local_spark("simplekafka-learn-stage8", cores=2)
    spark.conf.set("spark.sql.streaming.stopTimeout", "30s")
    steps.step(f"SparkSession local[2], Spark {spark.version} "
               f"(ready in {time.monotonic() - began:.1f} s)")
    return spark


def _register(spark: SparkSession, learner: ModuleType) -> str:
    """Register the learner's source; its module travels to Spark's Python workers by value."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(learner)
    spark.dataSource.register(learner.LearnerSource)
    return str(learner.LearnerSource.name())


def _expected_batches(servers: str, topic: str, start: Offsets | None, options: dict,
                      limit: int) -> tuple[list[tuple[Offsets, Offsets, list[tuple]]], Offsets]:
    """SimpleKafka's own plan of an availableNow run: each batch's begin, end and rows."""
    from simplekafka.client.client import KafkaClient

    parsed = parse_source_options({"kafka.bootstrap.servers": servers, "subscribe": topic,
                                   **options}, streaming=True)
    view = ClusterView(parsed)
    client = KafkaClient(servers, client_id="learn-check-reference")
    try:
        tps = view.partitions()
        if start is None:
            start = view.resolve(parsed.starting, tps)
        latest = view.offsets(tps, LATEST_TIMESTAMP)
        batches: list[tuple[Offsets, Offsets, list[tuple]]] = []
        while True:
            new = [TopicPartition(t, p) for (t, p) in latest if (t, p) not in start]
            earliest = view.offsets(new, EARLIEST_TIMESTAMP)
            end = sk_offsets.next_batch_end(start, latest, earliest, limit)
            if sk_offsets.to_json_dict(end) == sk_offsets.to_json_dict(start):
                return batches, start
            begin = view.check_range_start(start, end)
            rows = []
            for r in sk_offsets.plan_ranges(begin, end, None):
                rows += _reference_rows(client, r.topic, r.partition, r.start, r.end)
            batches.append((begin, end, sorted(rows, key=lambda row: (row[3], row[4]))))
            start = end
    finally:
        view.close()
        client.close()


def _row_summary(rows: list[tuple]) -> str:
    """Per partition: first..last offset (count)."""
    parts: dict[int, list[int]] = {}
    for row in rows:
        parts.setdefault(row[3], []).append(row[4])
    return ", ".join(f"partition {p}: {min(o)}..{max(o)} ({len(o)} rows)"
                     for p, o in sorted(parts.items())) or "no rows"


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _bytes(data: bytes | bytearray | None) -> bytes | None:
    """Spark hands binary columns over as bytearray."""
    return None if data is None else bytes(data)


def _run_query(steps: Steps, spark: SparkSession, source: str, servers: str, topic: str,
               checkpoint: Path, options: dict) -> list[list[tuple]]:
    """One availableNow run of the learner's source; the rows of each non-empty batch."""
    batches: dict[int, list[tuple]] = {}
    lock = threading.Lock()

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows = [(_bytes(r.key), _bytes(r.value), r.topic, r.partition, r.offset,
                 EPOCH + timedelta(microseconds=r.ts), r.timestampType)
                for r in frame.collect()]
        with lock:
            batches[batch_id] = sorted(rows, key=lambda row: (row[3], row[4]))

    reader = (spark.readStream.format(source).option("kafka.bootstrap.servers", servers)
              .option("subscribe", topic))
    for key, value in options.items():
        reader = reader.option(key, value)
    frame = reader.load().selectExpr("key", "value", "topic", "partition", "offset",
                                     "unix_micros(timestamp) AS ts", "timestampType")
    for attempt in range(1, WORKER_START_ATTEMPTS + 1):
        query = (frame.writeStream.foreachBatch(collect)
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        failure: BaseException | None = None
        try:
            finished = query.awaitTermination(QUERY_TIMEOUT)
        except Exception as exc:  # StreamingQueryException: the query failed
            finished, failure = True, exc
        finally:
            if query.isActive:
                query.stop()
        failure = failure or query.exception()
        if failure is None:
            break
        text = str(failure).split("=== Streaming Query ===")[0].strip()
        if WORKER_START_FAILED in text and attempt < WORKER_START_ATTEMPTS:
            # A busy machine: Spark waits only 10 s for a Python worker to start. The
            # checkpoint makes the retry resume after the last committed batch.
            steps.step(f"Spark's Python worker did not start in time (a busy machine): "
                       f"the query again from its checkpoint, attempt {attempt + 1}")
            continue
        raise _spark_failure(steps, text)
    if not finished:
        raise steps.fail(f"the query did not finish within {QUERY_TIMEOUT:.0f} s",
                         "every available record read", f"batches so far: {sorted(batches)}")
    with lock:
        return [rows for _batch, rows in sorted(batches.items()) if rows]


WORKER_ERROR = "An exception was thrown from the Python worker:"


def _spark_failure(steps: Steps, text: str) -> ExerciseFailed:
    """The query's error: what a Python worker raised when that is it, else Spark's words."""
    if WORKER_ERROR in text:
        text = text.rsplit(WORKER_ERROR, 1)[1].replace(" SQLSTATE: 39000", "")
        text = text.replace(" SQLSTATE: XXKST", "").strip()
        summary = "the query failed: your code raised in a Spark Python worker"
    else:
        summary = "the query failed"
    lines = ["steps:"] + [f"  {n}. {step}" for n, step in enumerate(steps.done, 1)]
    lines += ["Spark reported:"] + ["  " + line for line in text[-2000:].splitlines()]
    return ExerciseFailed(summary, lines)


def _compare_batches(steps: Steps, run: str, expected: list, got: list[list[tuple]]) -> None:
    for n, (begin, end, rows) in enumerate(expected):
        ranges = ", ".join(f"{t}-{p} [{begin[(t, p)]}, {end[(t, p)]})" for t, p in sorted(end)
                           if end[(t, p)] > begin[(t, p)])
        if n >= len(got):
            raise steps.fail(f"{run}: micro-batch {n} is missing (offsets {ranges})",
                             _row_summary(rows), f"{len(got)} batches with rows")
        if got[n] != rows:
            _compare_rows(steps, f"{run}: the rows of micro-batch {n} (offsets {ranges}); "
                          f"expected {_row_summary(rows)}; got {_row_summary(got[n])}",
                          rows, got[n])
        steps.step(f"{run}, micro-batch {n}: {_row_summary(rows)}")
    if len(got) > len(expected):
        raise steps.fail(f"{run}: more micro-batches than SimpleKafka's source plans",
                         f"{len(expected)} batches",
                         f"{len(got)}; the extra one: {_row_summary(got[len(expected)])}")


def check_on_spark(learner: ModuleType, workdir: Path) -> None:
    from simplekafka.admin import Admin
    from simplekafka.producer import Producer

    steps = Steps()
    topic = "clicks"
    with _cluster(workdir, steps) as cluster:
        servers = cluster.bootstrap_servers
        _topic(cluster, topic, partitions=2)
        with Producer(servers, acks="all") as producer:
            for p, count in ((0, 23), (1, 4)):
                for i in range(count):
                    producer.send(topic, value=b"p%d-%d" % (p, i), key=b"u%d" % (i % 3),
                                  partition=p, timestamp=1_700_000_000_000 + i)
            producer.flush()
        steps.step(f"{topic}: 23 records in partition 0, 4 in partition 1")
        spark = _spark(steps)
        source = _register(spark, learner)
        options = {"startingOffsets": json.dumps({topic: {"0": 3}}),
                   "maxOffsetsPerTrigger": str(MAX_PER_TRIGGER)}
        steps.step(f"run 1: readStream.format({source!r}) subscribe={topic}, "
                   f"startingOffsets={options['startingOffsets']}, maxOffsetsPerTrigger="
                   f"{MAX_PER_TRIGGER}, trigger(availableNow=True), foreachBatch")
        expected, reached = _expected_batches(servers, topic, None, options, MAX_PER_TRIGGER)
        got = _run_query(steps, spark, source, servers, topic, workdir / "checkpoint", options)
        _compare_batches(steps, "run 1", expected, got)
        with Admin(servers) as admin:
            admin.create_partitions({topic: 3})
        cluster.wait_for_leader(topic, 2, timeout=30)
        with Producer(servers, acks="all") as producer:
            for p, count in ((1, 3), (2, 12)):
                for i in range(count):
                    producer.send(topic, value=b"p%d-late-%d" % (p, i), partition=p,
                                  timestamp=1_700_000_100_000 + i)
            producer.flush()
        steps.step(f"{topic} grows to 3 partitions; 3 more records in partition 1, "
                   f"12 in the new partition 2")
        steps.step("run 2: the same query again, from its checkpoint")
        expected, _ = _expected_batches(servers, topic, reached, options, MAX_PER_TRIGGER)
        got = _run_query(steps, spark, source, servers, topic, workdir / "checkpoint", options)
        _compare_batches(steps, "run 2", expected, got)


CHAPTER = "stages/stage8_spark/README.md"

STAGE = Stage(8, "The Spark source", "stage8_spark", CHAPTER, (
    Exercise(1, "startingOffsets",
             "resolve earliest, latest and per-partition JSON to the first batch's start",
             ("ClusterView.resolve",), check_starting_offsets,
             hints=("Read the chapter's section on how Spark's Kafka source works (offsets "
                    "as JSON, the checkpoint) and the startingOffsets option in "
                    "simplekafka/spark/__init__.py.",
                    "-2 and -1 are markers, not offsets: look both tables up and pick per "
                    "partition; a partition the JSON leaves out starts at its log start; "
                    "check the JSON's partitions against tps before anything else."),
             plugs=(("ClusterView.resolve", ("simplekafka.spark.source:ClusterView.resolve",)),)),
    Exercise(2, "the next micro-batch",
             "where the next batch ends: new partitions, maxOffsetsPerTrigger split by backlog",
             ("rate_limit", "next_batch_end"), check_next_batch,
             hints=("Read the chapter's section on how Spark's Kafka source works "
                    "(admission control: maxOffsetsPerTrigger).",
                    "Each partition's share is limit * (backlog / total), a float; round a "
                    "share under 1 up and others down; partitions with nothing to read keep "
                    "their end; a new partition begins at its log start."),
             plugs=(("rate_limit", ("simplekafka.spark.offsets:rate_limit",)),
                    ("next_batch_end", ("simplekafka.spark.offsets:next_batch_end",
                                        "simplekafka.spark.source:next_batch_end")))),
    Exercise(3, "the read",
             "one partition's offset range from a real broker as Spark rows, stopping at the end",
             ("read_range",), check_read, time_limit=150.0,
             hints=("Read the chapter's section on how ours maps onto Spark's connector "
                    "(read(partition): Fetch from the leader up to the range end).",
                    "A fetch answers whole batches: drop records before start and from end on, "
                    "continue from the last batch's next offset, skip control batches, and take "
                    "a LogAppendTime batch's max timestamp.")),
    Exercise(4, "the reader on Spark",
             "your reader run by a real SparkSession against a real broker, batch by batch",
             ("StreamReader.latestOffset", "StreamReader.partitions", "StreamReader.read"),
             check_on_spark, time_limit=420.0,
             hints=("Read the chapter's section on how ours maps onto Spark's connector "
                    "(which method Spark calls where) and on admission control.",
                    "latestOffset: the limit is a ReadMaxRows only with maxOffsetsPerTrigger, "
                    "and new partitions need their log start; partitions: let "
                    "check_range_start settle where each range begins.")),
), mutants=(
    Mutant("starting-earliest-and-latest-swapped", 1,
           'EARLIEST_TIMESTAMP if point.kind == "earliest"',
           'EARLIEST_TIMESTAMP if point.kind == "latest"'),
    Mutant("left-out-partitions-start-at-latest", 1,
           "wanted = given.get(key, EARLIEST_TIMESTAMP)",
           "wanted = given.get(key, LATEST_TIMESTAMP)"),
    Mutant("starting-kind-compared-with-is", 1,
           'EARLIEST_TIMESTAMP if point.kind == "earliest"',
           'EARLIEST_TIMESTAMP if point.kind is "earliest"'),
    Mutant("json-minus-one-read-as-earliest", 1,
           "            elif wanted == LATEST_TIMESTAMP:\n"
           "                result[key] = latest[key]",
           "            elif wanted == LATEST_TIMESTAMP:\n"
           "                result[key] = earliest[key]"),
    Mutant("unknown-partitions-accepted", 1,
           "        if unknown:\n            raise one_line(",
           "        if False:\n            raise one_line("),
    Mutant("max-offsets-not-split", 2,
           "capped[tp] = min(until, begin + share_count)",
           "capped[tp] = min(until, begin + limit)"),
    Mutant("limit-reached-still-capped", 2, "    if total <= limit:\n",
           "    if total < limit:\n"),
    Mutant("small-shares-starve", 2,
           "share_count = math.ceil(share) if share < 1 else math.floor(share)",
           "share_count = math.floor(share)"),
    Mutant("shares-rounded-to-nearest", 2,
           "share_count = math.ceil(share) if share < 1 else math.floor(share)",
           "share_count = max(round(share), 1)"),
    Mutant("behind-partitions-count-in-the-total", 2,
           "total = sum(size for size in sizes.values() if size > 0)",
           "total = sum(sizes.values())"),
    Mutant("max-offsets-ignored", 2, "    if max_rows is not None:\n        end = rate_limit(",
           "    if False:\n        end = rate_limit("),
    Mutant("new-partitions-start-at-latest", 2, "            begin[tp] = earliest[tp]",
           "            begin[tp] = latest[tp]"),
    Mutant("earliest-overrides-the-checkpoint", 2,
           "    for tp in latest:\n        if tp not in begin:\n"
           "            begin[tp] = earliest[tp]",
           "    begin.update(earliest)"),
    Mutant("end-may-fall-behind-the-start", 2,
           "end = {tp: max(offset, begin[tp]) for tp, offset in latest.items()}",
           "end = dict(latest)"),
    Mutant("gone-partitions-forgotten", 2,
           "    for tp, offset in begin.items():\n        end.setdefault(tp, offset)\n", ""),
    Mutant("read-one-past-the-end", 3, "if record.offset >= end:", "if record.offset > end:"),
    Mutant("read-from-the-batch-start", 3,
           "                    if record.offset < position:\n                        continue\n",
           ""),
    Mutant("control-batches-as-rows", 3, "            if not batch.is_control:",
           "            if True:"),
    Mutant("log-append-time-ignored", 3, "if batch.timestamp_type == 1:", "if False:"),
    Mutant("one-fetch-only", 3, "            if position >= end:\n                return",
           "            if position >= end:\n                return\n        return"),
    Mutant("spark-limit-ignored", 4,
           "max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None",
           "max_rows = None"),
    Mutant("spark-new-partitions-from-latest", 4,
           "earliest = self.view.offsets(new, EARLIEST_TIMESTAMP)",
           "earliest = self.view.offsets(new, LATEST_TIMESTAMP)"),
    Mutant("spark-range-start-not-settled", 4,
           "        begin = self.view.check_range_start(begin, until)\n", ""),
), real_processes=True)
