"""Stage 6 checks: the learner's partitioner and accumulator against the producer's, step by
step, then a group of the learner's members on a real broker's group coordinator."""

from __future__ import annotations

import contextlib
import random
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Protocol

from simplekafka.client.client import KafkaClient, coordinator_connection
from simplekafka.client.group_protocol import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    find_coordinator,
)
from simplekafka.consumer.assignors import RangeAssignor
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps
from simplekafka.learn.solutions import stage6_apis as reference
from simplekafka.producer import accumulator as real_accumulator
from simplekafka.producer import partitioner as real_partitioner
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import TopicPartition

# SimpleKafka's own functions, kept from before any plug.install put a learner's in their place.
REFERENCE_MURMUR2 = real_partitioner.murmur2
REFERENCE_PARTITIONER_CALL = real_partitioner.DefaultPartitioner.__call__

# --- exercise 1: murmur2 and the partitioner --------------------------------------------

# Kafka's own test vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
# (stages/stage6_apis/test_partitioner.py checks SimpleKafka's murmur2 against the same).
JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

PARTITION_COUNTS = [1, 2, 3, 4, 5, 6, 7, 10, 12, 16, 31, 50, 97, 1000, 2**31 - 1]


def murmur2_keys() -> list[bytes]:
    """Every length from 0 to 20 (each tail case, one to five whole words), random bytes,
    bytes with the high bit set, text keys and non-ASCII UTF-8."""
    rng = random.Random(6)
    keys = [b""]
    for length in range(21):
        keys += [bytes(rng.randrange(256) for _ in range(length)) for _ in range(5)]
        keys += [b"\xff" * length, b"\x80" * length, bytes(range(length))]
    keys += [text.encode() for text in (
        "customer-1", "order-42", "ключ", "키", "鍵-7", "clé", "🙂", "naïve café", " ")]
    keys += [f"key-{n}".encode() for n in range(60)]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(21, 200))) for _ in range(20)]
    return keys + list(BOUNDARY_KEYS)


# 4-byte keys whose murmur2 is -2**31, 2**31 - 1, 2**31 - 2, -2**31 + 1, 0 and -1 (found by
# running the hash's steps backwards: each is invertible): the signed result's boundaries.
BOUNDARY_KEYS = (b"\xa7\xd6Pl", b"\x02}SC", b"\x14{Z\x0f", b"34\xf6\xa5", b"\xe3\x87\x18D",
                 b"\xa5\xd40\\")


def _show(key: bytes) -> str:
    return repr(key) if len(key) <= 40 else f"{key[:40]!r}... ({len(key)} bytes)"


def check_partitioner(learner: ModuleType, _workdir: Path) -> None:
    for key, expected in JAVA_VECTORS:
        got = learner.murmur2(key)
        if got != expected:
            raise ExerciseFailed(f"murmur2({key!r}), a test vector of Kafka's UtilsTest.java: "
                                 f"{len(key)} bytes, {len(key) // 4} whole words and a tail "
                                 f"of {len(key) % 4}", [
                f"expected: {expected}  (0x{expected & 0xFFFFFFFF:08x})",
                f"got:      {got!r}" + (f"  (0x{got & 0xFFFFFFFF:08x})"
                                        if isinstance(got, int) else "")])
    keys = murmur2_keys()
    for key in keys:
        expected = REFERENCE_MURMUR2(key)
        got = learner.murmur2(key)
        if got != expected or type(got) is not int:
            tail = len(key) % 4
            raise ExerciseFailed(
                f"murmur2({_show(key)}): {len(key)} bytes, {len(key) // 4} whole words and "
                f"a tail of {tail}", [f"expected: {expected}  (0x{expected & 0xFFFFFFFF:08x})",
                                      f"got:      {got!r}"])
    for count in PARTITION_COUNTS:
        for key in keys:
            expected = (REFERENCE_MURMUR2(key) & 0x7FFFFFFF) % count
            got = learner.partition_for_key(key, count)
            if got != expected:
                raise ExerciseFailed(
                    f"partition_for_key({_show(key)}, {count})",
                    [f"murmur2 of the key: {REFERENCE_MURMUR2(key)}",
                     f"expected: {expected}  ((murmur2(key) & 0x7fffffff) % {count})",
                     f"got:      {got!r}"])
    for seed in range(8):
        _check_sticky(learner, seed)


def _sticky_script(seed: int) -> list[tuple]:
    """Calls of a producer: null keys, keyed records, batches sent, partitions that change."""
    rng = random.Random(seed)
    six, three = list(range(6)), list(range(3))
    script: list[tuple] = [("call", "orders", None, six)] * 4
    script += [("call", "orders", b"customer-1", six), ("call", "orders", b"", six),
               ("call", "orders", None, six), ("sent", "orders", six),
               ("call", "orders", None, six), ("call", "clicks", None, three),
               ("call", "orders", None, six), ("sent", "clicks", three),
               ("call", "clicks", None, three), ("call", "orders", None, [0, 1]),
               ("call", "orders", None, [0, 1]), ("call", "orders", None, six)]
    for _ in range(40):
        topic, partitions = rng.choice([("orders", six), ("clicks", three)])
        what = rng.random()
        if what < 0.2:
            script.append(("sent", topic, partitions))
        else:
            key = None if what < 0.7 else f"k{rng.randrange(50)}".encode()
            script.append(("call", topic, key, partitions))
    return script


def _check_sticky(learner: ModuleType, seed: int) -> None:
    steps = Steps()
    reference = real_partitioner.DefaultPartitioner(random.Random(seed))
    mine = learner.DefaultPartitioner(random.Random(seed))
    steps.step(f"partitioner = DefaultPartitioner(random.Random({seed}))")
    last: dict[str, tuple[int, int]] = {}  # topic -> (reference's, learner's) last null-key answer
    for action in _sticky_script(seed):
        if action[0] == "sent":
            _, topic, partitions = action
            if topic not in last:
                continue
            ours, theirs = last[topic]
            steps.step(f"the batch of {topic}-{theirs} is sent: "
                       f"on_new_batch({topic!r}, {theirs}, {partitions})")
            reference.on_new_batch(topic, ours, partitions)
            mine.on_new_batch(topic, theirs, partitions)
            continue
        _, topic, key, partitions = action
        call = f"partitioner({topic!r}, {key!r}, {partitions})"
        expected = REFERENCE_PARTITIONER_CALL(reference, topic, key, list(partitions))
        got = mine(topic, key, list(partitions))
        steps.step(f"{call} -> {got!r}")
        steps.expect(call, expected, got)
        if key is None:
            last[topic] = (expected, got)


# --- exercise 2: the record accumulator -------------------------------------------------


class ScriptedClock:
    """Stands in for the ``time`` module in SimpleKafka's accumulator; the check sets ``now``."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, _seconds: float) -> None:
        return None


@contextlib.contextmanager
def scripted_clock() -> Iterator[ScriptedClock]:
    clock = ScriptedClock()
    saved = real_accumulator.time
    real_accumulator.time = clock  # type: ignore[assignment]
    try:
        yield clock
    finally:
        real_accumulator.time = saved


TOPIC_PARTITIONS = [TopicPartition("orders", 0), TopicPartition("orders", 1),
                    TopicPartition("clicks", 0), TopicPartition("orders", 2)]


class Batch(Protocol):
    """Exercise 2's contract: a batch of the learner's Accumulator (or SimpleKafka's)."""

    @property
    def tp(self) -> TopicPartition: ...
    @property
    def created(self) -> float: ...
    @property
    def records(self) -> Sequence[object]: ...
    @property
    def size(self) -> int: ...


class Accumulator(Protocol):
    """Exercise 2's contract: the learner's Accumulator."""

    queues: dict[TopicPartition, list[Batch]]

    def append(self, tp: TopicPartition, record: Record, size: int, now: float) -> Batch: ...
    def ready(self, now: float) -> object: ...
    def drain(self, now: float) -> Iterable[Batch]: ...


def _values(records: Iterable[object]) -> list:
    return [getattr(r, "value", r) for r in records]


def _batch_view(batch: Batch) -> tuple:
    """What a batch looks like from outside: (partition, created, records, size)."""
    return (str(batch.tp), batch.created, [v.decode() for v in _values(batch.records)], batch.size)


def _queues_view(queues: dict) -> dict[str, list[tuple]]:
    return {str(tp): [_batch_view(b)[1:] for b in queue] for tp, queue in queues.items() if queue}


def _scripted_timeline() -> tuple[int, float, list[tuple]]:
    p0, p1 = TOPIC_PARTITIONS[0], TOPIC_PARTITIONS[1]
    ops: list[tuple] = [("append", 0.0, p0, 121), ("ready", 0.0), ("ready", 0.125)]
    ops += [("append", 0.125, p0, 121)] * 6
    ops += [("append", 0.125, p1, 121), ("ready", 0.1875), ("ready", 0.25),
            ("append", 0.25, p0, 121), ("ready", 0.25), ("drain", 0.25), ("ready", 0.25),
            ("drain", 0.3125), ("drain", 0.375), ("drain", 0.4375), ("drain", 0.5),
            ("ready", 0.5), ("append", 0.5, p1, 939), ("ready", 0.5),
            ("append", 0.5, p1, 50), ("append", 0.5, p0, 2000), ("ready", 0.5),
            ("drain", 0.5), ("ready", 0.5), ("drain", 0.5), ("append", 0.625, p0, 100),
            ("append", 0.625, p0, 839), ("ready", 0.625), ("drain", 0.75), ("drain", 1.0),
            ("ready", 2.0)]
    return 1000, 250.0, ops


def _random_timeline(seed: int) -> tuple[int, float, list[tuple]]:
    rng = random.Random(seed)
    batch_size, linger_ms = rng.choice([(1024, 125.0), (512, 62.5), (4096, 0.0), (300, 500.0)])
    now = 0.0
    ops: list[tuple] = []
    for _ in range(250):
        now += rng.choice([0.0, 0.0, 1 / 64, 1 / 32, 1 / 16, 0.125])
        what = rng.random()
        if what < 0.6:
            size = rng.choice([21, 50, 121, 200, 300, 451, 963, 1100, 3000])
            ops.append(("append", now, rng.choice(TOPIC_PARTITIONS), size))
        elif what < 0.8:
            ops.append(("ready", now))
        else:
            ops.append(("drain", now))
    return batch_size, linger_ms, ops


def _show_steps(steps: Steps, keep: int = 30) -> None:
    """A long timeline keeps its last steps (numbered as they were)."""
    if len(steps.done) > keep:
        cut = len(steps.done) - keep
        steps.done = [f"({cut} earlier steps)", *steps.done[cut:]]


def _run_timeline(learner: ModuleType, batch_size: int, linger_ms: float,
                  ops: list[tuple]) -> None:
    steps = Steps()
    steps.step(f"accumulator = Accumulator(batch_size={batch_size}, linger_ms={linger_ms})")
    with scripted_clock() as clock:
        reference = real_accumulator.RecordAccumulator(batch_size=batch_size,
                                                       linger_ms=linger_ms)
        mine: Accumulator = learner.Accumulator(batch_size=batch_size, linger_ms=linger_ms)
        for number, op in enumerate(ops, 1):
            kind, now = op[0], op[1]
            clock.now = now
            try:
                _one_step(steps, reference, mine, number, op)
            except Mismatch as exc:
                _show_steps(steps)
                raise steps.fail(exc.summary, exc.expected, exc.got) from None
            if kind != "ready":
                with reference.condition:
                    expected_queues = _queues_view(reference._queues)
                got_queues = _queues_view(mine.queues)
                if got_queues != expected_queues:
                    _show_steps(steps)
                    raise steps.fail(f"the queues after step {len(steps.done)} "
                                     "(partition: [(created, records, size), ...])",
                                     expected_queues, got_queues)


class Mismatch(Exception):
    """One step's answer differs from SimpleKafka's (the timeline is printed around it)."""

    def __init__(self, summary: str, expected: object, got: object) -> None:
        super().__init__(summary)
        self.summary, self.expected, self.got = summary, expected, got


def _one_step(steps: Steps, reference: real_accumulator.RecordAccumulator, mine: Accumulator,
              number: int, op: tuple) -> None:
    kind, now = op[0], op[1]
    got: object  # what the learner's Accumulator answered, as compared
    if kind == "append":
        tp, size = op[2], op[3]
        record = Record(0, 0, None, f"r{number}".encode(), [])
        call = f"t={now:g}: append({tp}, r{number}, {size}, now={now:g})"
        future = reference.append(tp, record, size, 1.0)
        got_batch = mine.append(tp, record, size, now)
        steps.step(call)
        expected, got = _batch_view(future._batch), _batch_view(got_batch)
        if expected != got:
            raise Mismatch(f"{call} returned the batch "
                                   "(partition, created, records, size)", expected, got)
    elif kind == "ready":
        call = f"t={now:g}: ready(now={now:g})"
        with reference.condition:
            ready, wait = reference.ready_partitions(now)
        expected = ([str(tp) for tp in ready], wait)
        answer = mine.ready(now)
        got = ([str(tp) for tp in answer[0]], answer[1]) if isinstance(answer, tuple) \
            else answer
        steps.step(f"{call} -> {got!r}")
        if expected != got:
            raise Mismatch(f"{call}: (ready partitions, seconds to wait)",
                            expected, got)
    else:
        call = f"t={now:g}: drain(now={now:g})"
        with reference.condition:
            ready, _wait = reference.ready_partitions(now)
            drained = [reference.pop(tp) for tp in ready]
        expected_batches = [_batch_view(b) for b in drained]
        got_batches = [_batch_view(b) for b in mine.drain(now)]
        steps.step(f"{call} -> {len(got_batches)} batch(es)")
        if expected_batches != got_batches:
            raise Mismatch(f"{call}: the batches taken "
                                   "(partition, created, records, size)", expected_batches,
                           got_batches)


def check_accumulator(learner: ModuleType, _workdir: Path) -> None:
    _run_timeline(learner, *_scripted_timeline())
    _run_timeline(learner, 16_384, 0.0, [("append", 0.0, TOPIC_PARTITIONS[0], 100),
                                         ("ready", 0.0), ("drain", 0.0), ("ready", 0.0)])
    for seed in range(12):
        _run_timeline(learner, *_random_timeline(seed))


# --- exercise 3: a group of the learner's members on a real coordinator -----------------

PARTITIONS = 4
HEARTBEAT_EVERY = 0.1  # seconds between a member's heartbeats
SETTLE_TIMEOUT = 25.0  # seconds for a group to settle after each event
REBALANCE_TIMEOUT_MS = 3_000  # how long the coordinator waits for a member that does not rejoin
SESSION_TIMEOUT_MS = 10_000
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0"}


class ProtocolBroken(BaseException):
    """A member broke the group protocol (raised in its thread; BaseException: a learner's
    ``except Exception`` must not swallow it)."""

    def __init__(self, summary: str, expected: object, got: object) -> None:
        super().__init__(summary)
        self.summary, self.expected, self.got = summary, expected, got


def short(member_id: str) -> str:
    """A member id as the timeline shows it: the client id and the start of the uuid."""
    if not member_id:
        return "''"
    name, _, rest = member_id.partition("-")
    return f"{name}-{rest[:6]}" if rest else member_id


#: A coordinator's answer: a decoded Struct, or a stand-in with its fields (scripted runs).
Answer = Struct | SimpleNamespace


class Member(Protocol):
    """Exercise 3's contract: the learner's group Member."""

    member_id: str
    generation: int
    leader_id: str
    assignment: list[TopicPartition]

    def join(self) -> list[TopicPartition]: ...
    def heartbeat(self) -> bool: ...
    def leave(self) -> None: ...


def _code(answer: Answer) -> ErrorCode:
    return ErrorCode.of(answer.error_code)


REJOIN_AS_NEW = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION)


class Tracked:
    """One learner member in the check: its client, thread, and the protocol rules it must keep."""

    def __init__(self, name: str, group: GroupUnderTest) -> None:
        self.name = name
        self.group = group
        self.client = KafkaClient(group.bootstrap, client_id=name,
                                  request_timeout_ms=REBALANCE_TIMEOUT_MS + 10_000)
        self.client.refresh_metadata(None, 30_000)
        self.stop = threading.Event()
        self.pause = threading.Lock()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.error_at = 0  # how many steps the timeline had when it went wrong
        self.last: tuple[ApiKey, dict, Struct] | None = None  # the last request and its answer
        self.synced: tuple[str, int, list[TopicPartition]] | None = None  # id, generation, tps
        self.heartbeat_generation: int | None = None  # set when the check makes it stale
        self.logged_heartbeat = False
        self.member: Member  # set by start()
        self.first_id = ""  # the member id it starts with ("": a new member)

    # -- the send function the learner's Member gets --------------------------------------

    def send(self, api_key: ApiKey, body: dict) -> Struct:
        api = ApiKey(api_key)
        self._before(api, body)
        if api is not ApiKey.HEARTBEAT:
            self.group.steps.step(f"{self.name} -> {api.name} {self._describe_request(api, body)}")
        hook = self.group.hooks.pop((self.name, api), None)
        if hook is not None:
            hook()
        answer = self.client.request(self.group.coordinator, api, body,
                                     timeout_ms=REBALANCE_TIMEOUT_MS + 5_000)
        self._after(api, body, answer)
        return answer

    def _describe_request(self, api: ApiKey, body: dict) -> str:
        text = f"member_id={short(body.get('member_id', ''))}"
        if api in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT):
            text += f" generation={body.get('generation_id')}"
        if api is ApiKey.SYNC_GROUP:
            text += f" assignments={self._assignments_shown(body.get('assignments') or [])}"
        return text

    @staticmethod
    def _assignments_shown(assignments: list) -> dict[str, list[int]]:
        return {short(a["member_id"]): [tp.partition for tp in decode_assignment(a["assignment"])]
                for a in assignments}

    def _after(self, api: ApiKey, body: dict, answer: Struct) -> None:
        code = _code(answer)
        if api is ApiKey.HEARTBEAT:
            if code != ErrorCode.NONE or not self.logged_heartbeat:
                self.group.steps.step(
                    f"{self.name} -> HEARTBEAT member_id={short(body.get('member_id', ''))} "
                    f"generation={body.get('generation_id')} <- {code.name}"
                    + ("  (later heartbeats answered NONE not shown)"
                       if code == ErrorCode.NONE else ""))
                self.logged_heartbeat = code == ErrorCode.NONE
        elif api is ApiKey.JOIN_GROUP:
            detail = f"member_id={short(answer.member_id)}"
            if code == ErrorCode.NONE:
                detail += (f" generation={answer.generation_id} leader={short(answer.leader)}"
                           f" members={[short(m.member_id) for m in answer.members]}")
            self.group.steps.step(f"{self.name} <- JOIN_GROUP {code.name} {detail}")
        elif api is ApiKey.SYNC_GROUP:
            detail = ""
            if code == ErrorCode.NONE:
                partitions = decode_assignment(answer.assignment)
                detail = f" partitions={[tp.partition for tp in partitions]}"
                self.synced = (body["member_id"], body["generation_id"], partitions)
                self.logged_heartbeat = False
            self.group.steps.step(f"{self.name} <- SYNC_GROUP {code.name}{detail}")
        else:
            self.group.steps.step(f"{self.name} <- {api.name} {code.name}")
        self.last = (api, body, answer)

    # -- the rules: what this member may send next ------------------------------------------

    def _broken(self, summary: str, expected: object, got: object) -> ProtocolBroken:
        return ProtocolBroken(f"{self.name}: {summary}", expected, got)

    def _before(self, api: ApiKey, body: dict) -> None:
        sent = f"{api.name} member_id={body.get('member_id', '')!r}"
        if api is ApiKey.LEAVE_GROUP:
            return
        if self.last is None:
            if api is not ApiKey.JOIN_GROUP or body.get("member_id") != self.first_id:
                raise self._broken("the first request: join with the member id it starts with",
                                   f"JOIN_GROUP member_id={self.first_id!r}", sent)
            return
        last_api, last_body, answer = self.last
        code = _code(answer)
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            wanted = answer.member_id
            if api is not ApiKey.JOIN_GROUP or body.get("member_id") != wanted:
                raise self._broken("after MEMBER_ID_REQUIRED, join again with the member id the "
                                   "answer gave", f"JOIN_GROUP member_id={wanted!r}", sent)
        elif code in REJOIN_AS_NEW:
            if api is not ApiKey.JOIN_GROUP or body.get("member_id"):
                raise self._broken(f"after {code.name} to {last_api.name}, forget the member id "
                                   "and join again", "JOIN_GROUP member_id=''", sent)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            wanted = last_body.get("member_id")
            if api is not ApiKey.JOIN_GROUP or body.get("member_id") != wanted:
                raise self._broken(f"after REBALANCE_IN_PROGRESS to {last_api.name}, join again "
                                   "with the same member id", f"JOIN_GROUP member_id={wanted!r}",
                                   sent)
        elif last_api is ApiKey.JOIN_GROUP:
            self._check_sync(api, body, answer, sent)
        else:  # SyncGroup or Heartbeat answered NONE: in the group, heartbeating
            member_id, generation, _tps = self.synced or ("", -1, [])
            if self.heartbeat_generation is not None:
                generation = self.heartbeat_generation
            got = (api.name, body.get("member_id"), body.get("generation_id"))
            if got != ("HEARTBEAT", member_id, generation):
                raise self._broken(f"in generation {generation}, a heartbeat with this member's "
                                   "id and generation",
                                   ("HEARTBEAT", member_id, generation), got)

    def _check_sync(self, api: ApiKey, body: dict, answer: Struct, sent: str) -> None:
        wanted = ("SYNC_GROUP", answer.member_id, answer.generation_id)
        got = (api.name, body.get("member_id"), body.get("generation_id"))
        if got != wanted:
            raise self._broken("after JoinGroup answered NONE, SyncGroup with the member id and "
                               "generation of that answer", wanted, got)
        sent_plan = self._assignments_shown(body.get("assignments") or [])
        if answer.leader == answer.member_id:
            subscriptions = {m.member_id: decode_subscription(m.metadata) for m in answer.members}
            plan = RangeAssignor().assign(subscriptions, {self.group.topic: PARTITIONS})
            wanted_plan = {short(m): [tp.partition for tp in tps] for m, tps in plan.items()}
            if sent_plan != wanted_plan:
                raise self._broken("as the leader (JoinGroup's leader is this member), send "
                                   "plan(answer) in SyncGroup", wanted_plan, sent_plan)
        elif sent_plan:
            raise self._broken("a member that is not the leader sends no assignments", {},
                               sent_plan)

    # -- what the learner's methods return -------------------------------------------------

    def joined(self, returned: Iterable[TopicPartition] | None) -> None:
        member_id, generation, partitions = self.synced or ("", -1, [])
        self.heartbeat_generation = None
        state = (list(returned) if returned is not None else None, self.member.member_id,
                 self.member.generation, list(self.member.assignment))
        wanted = (partitions, member_id, generation, partitions)
        if state != wanted:
            raise self._broken("join() returns the partitions SyncGroup gave and keeps them "
                               "(returned, member_id, generation, assignment)", wanted, state)
        self.group.steps.step(f"{self.name}: join() returned partitions "
                              f"{[tp.partition for tp in partitions]}")

    def heartbeat_returned(self, returned: object, before: tuple[str, int]) -> None:
        assert self.last is not None
        code = _code(self.last[2])
        if code == ErrorCode.NONE:
            wanted = (True, *before)
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            wanted = (False, *before)
        else:
            wanted = (False, "", -1)
        got = (returned, self.member.member_id, self.member.generation)
        if got != wanted:
            raise self._broken(f"heartbeat() after {code.name}: (returned, member_id, "
                               "generation)", wanted, got)

    # -- the member's life: join, then heartbeat; rejoin when told -------------------------

    def run(self) -> None:
        try:
            self.joined(self.member.join())
            while not self.stop.wait(HEARTBEAT_EVERY):
                with self.pause:
                    if self.stop.is_set():
                        break
                    before = (self.member.member_id, self.member.generation)
                    stay = self.member.heartbeat()
                    self.heartbeat_returned(stay, before)
                    if not stay:
                        self.joined(self.member.join())
        except BaseException as exc:  # reported by the main thread, with the timeline
            if not self.stop.is_set() or isinstance(exc, ProtocolBroken):
                self.error_at = len(self.group.steps.done)  # the other members go on meanwhile
                self.error = exc

    def start(self, learner: ModuleType, member_id: str = "") -> None:
        self.member = learner.Member(self.send, self.group.group_id, [self.group.topic],
                                     lambda topics: {t: PARTITIONS for t in topics},
                                     session_timeout_ms=SESSION_TIMEOUT_MS,
                                     rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        self.first_id = self.member.member_id = member_id
        remembered = f" with member_id={short(member_id)}" if member_id else ""
        self.group.steps.step(f"check: {self.name} starts{remembered} (Member(...), then join())")
        self.thread = threading.Thread(target=self.run, name=f"learn-member-{self.name}",
                                       daemon=True)
        self.thread.start()

    def halt(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=REBALANCE_TIMEOUT_MS / 1000 + 10)

    def close(self) -> None:
        self.stop.set()
        self.client.close()


class GroupUnderTest:
    """The learner's members in one group on a real broker, and the check's view of them."""

    def __init__(self, learner: ModuleType, bootstrap: str, steps: Steps) -> None:
        self.learner = learner
        self.bootstrap = bootstrap
        self.steps = steps
        self.topic = f"learn-stage6-{uuid.uuid4().hex[:8]}"
        self.group_id = f"learn-group-{uuid.uuid4().hex[:8]}"
        self.client = KafkaClient(bootstrap, client_id="learn-check")
        self.coordinator = coordinator_connection(find_coordinator(self.client, self.group_id,
                                                                   30_000))
        self.members: dict[str, Tracked] = {}
        self.generation = 0  # the last settled generation
        self.hooks: dict[tuple[str, ApiKey], Callable[[], None]] = {}

    def start(self, name: str, member_id: str = "") -> Tracked:
        tracked = self.members[name] = Tracked(name, self)
        tracked.start(self.learner, member_id)
        return tracked

    def remove(self, tracked: Tracked) -> None:
        """LeaveGroup for a member, sent by the check: as if its session had timed out."""
        member_id = tracked.member.member_id
        self.steps.step(f"check: {tracked.name} ({short(member_id)}) is removed from the group "
                        "behind its back (LeaveGroup sent by the check, as a session timeout "
                        "would)")
        self.client.request(self.coordinator, ApiKey.LEAVE_GROUP, {
            "group_id": self.group_id, "member_id": member_id,
            "members": [{"member_id": member_id, "group_instance_id": None}]},
            timeout_ms=10_000)

    def live(self) -> list[Tracked]:
        return [t for t in self.members.values() if not t.stop.is_set()]

    def raise_member_errors(self) -> None:
        """The first member that went wrong, with the timeline up to that moment."""
        failed = [t for t in self.members.values() if t.error is not None]
        if failed:
            tracked = min(failed, key=lambda t: t.error_at)
            error = tracked.error
            del self.steps.done[tracked.error_at:]
            if isinstance(error, ProtocolBroken):
                raise self.steps.fail(error.summary, error.expected, error.got)
            if isinstance(error, (NotImplementedError, ExerciseFailed)):
                raise error
            frames = [f for f in traceback.extract_tb(error.__traceback__ if error else None)
                      if f.filename == getattr(self.learner, "__file__", None)]
            failure = self.steps.fail(f"{tracked.name}'s member raised {type(error).__name__}: "
                                      f"{error}", "no exception",
                                      f"{type(error).__name__}: {error}")
            if frames:
                failure.lines += ["where, in your code:", *"".join(
                    traceback.format_list(frames[-3:])).rstrip().splitlines()]
            raise failure

    def state(self) -> str:
        answer = self.client.request(self.coordinator, ApiKey.DESCRIBE_GROUPS,
                                     {"groups": [self.group_id]}, timeout_ms=10_000)
        return answer.groups[0].group_state

    def settle(self, what: str) -> None:
        """Wait until every live member heartbeats in one generation with the range plan's share."""
        self.steps.step(f"check: waiting for the group to settle ({what})")
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            self.raise_member_errors()
            live = self.live()
            settled = [t.synced for t in live if t.last is not None
                       and t.last[0] is ApiKey.HEARTBEAT and _code(t.last[2]) == ErrorCode.NONE]
            generations = {s[1] for s in settled if s}
            if len(settled) == len(live) and len(generations) == 1 \
                    and min(generations) > self.generation:
                break
            if time.monotonic() > deadline:
                raise self.steps.fail(
                    f"the group did not settle within {SETTLE_TIMEOUT:g} s ({what})",
                    f"every member heartbeating in one generation after {self.generation}",
                    {t.name: (t.last[0].name, _code(t.last[2]).name) if t.last else "nothing"
                     for t in live})
            time.sleep(0.05)
        subscriptions = {t.synced[0]: Subscription([self.topic]) for t in live if t.synced}
        plan = RangeAssignor().assign(subscriptions, {self.topic: PARTITIONS})
        wanted = {t.name: [tp.partition for tp in plan.get(t.synced[0], [])]
                  for t in live if t.synced}
        got = {t.name: [tp.partition for tp in t.member.assignment] for t in live}
        generation = self.generation = live[0].synced[1] if live and live[0].synced else -1
        self.steps.step(f"check: generation {generation}: {got}")
        self.steps.expect(f"each member's partitions in generation {generation} (the range "
                          f"plan over {len(live)} members, {PARTITIONS} partitions)",
                          wanted, got)

    def until(self, condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self.raise_member_errors()
            if time.monotonic() > deadline:
                raise self.steps.fail(f"timed out waiting: {what}", what, "not within "
                                      f"{timeout:g} s")
            time.sleep(0.05)

    def close(self) -> None:
        for tracked in self.members.values():
            tracked.close()
        for tracked in self.members.values():
            if tracked.thread is not None:
                tracked.thread.join(timeout=5)
        self.client.close()


@contextlib.contextmanager
def _paused(group: GroupUnderTest, tracked: Tracked) -> Iterator[None]:
    if not tracked.pause.acquire(timeout=REBALANCE_TIMEOUT_MS / 1000 + 10):
        group.raise_member_errors()
        raise group.steps.fail(f"{tracked.name} could not be paused", "a heartbeat or join "
                               "that returns", "still running")
    try:
        yield
    finally:
        tracked.pause.release()


# -- exercise 3, scripted first: the answers a healthy coordinator seldom gives ---------

SCRIPT_TOPIC = "scripted"


class ScriptEnded(Exception):
    """The member asked again after the scripted coordinator's last answer."""


def _join_answer(code: int, member_id: str = "m-2", generation: int = 5,
                 leader: str = "a-leader") -> SimpleNamespace:
    members = [SimpleNamespace(member_id=m, metadata=encode_subscription(
        Subscription([SCRIPT_TOPIC]))) for m in sorted({member_id, leader})]
    return SimpleNamespace(error_code=code, member_id=member_id, generation_id=generation,
                           leader=leader, members=members)


def _sync_answer(code: int, partitions: tuple[int, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(error_code=code, assignment=encode_assignment(
        [TopicPartition(SCRIPT_TOPIC, p) for p in partitions]))


def _code_text(code: int) -> str:
    return f"{ErrorCode.of(code).name} ({code})"


# (what, the member's member_id and generation before, the call, the coordinator's answers)
MEMBER_SCRIPTS: list[tuple[str, str, int, str, list[tuple[ApiKey, SimpleNamespace]]]] = [
    ("JoinGroup answers UNKNOWN_MEMBER_ID, then GROUP_MAX_SIZE_REACHED", "m-old", 4, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.UNKNOWN_MEMBER_ID)),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.GROUP_MAX_SIZE_REACHED))]),
    ("JoinGroup answers UNKNOWN_SERVER_ERROR (-1)", "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.UNKNOWN_SERVER_ERROR))]),
    ("JoinGroup answers FENCED_INSTANCE_ID", "m-2", 3, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.FENCED_INSTANCE_ID))]),
    ("JoinGroup NONE (leader a-leader, not us), SyncGroup ILLEGAL_GENERATION, then JoinGroup "
     "GROUP_MAX_SIZE_REACHED", "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE)),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.ILLEGAL_GENERATION)),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.GROUP_MAX_SIZE_REACHED))]),
    ("JoinGroup NONE (we lead), SyncGroup UNKNOWN_MEMBER_ID, then JoinGroup UNKNOWN_SERVER_ERROR",
     "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE, "m-2", 6, "m-2")),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.UNKNOWN_MEMBER_ID)),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.UNKNOWN_SERVER_ERROR))]),
    ("JoinGroup NONE, SyncGroup GROUP_MAX_SIZE_REACHED", "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE)),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.GROUP_MAX_SIZE_REACHED, (1,)))]),
    ("JoinGroup NONE, SyncGroup UNKNOWN_SERVER_ERROR (-1)", "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE)),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.UNKNOWN_SERVER_ERROR, (1,)))]),
    ("JoinGroup MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, NONE (leader z-leader, not us); "
     "SyncGroup REBALANCE_IN_PROGRESS; again NONE; SyncGroup NONE", "", -1, "join",
     [(ApiKey.JOIN_GROUP, _join_answer(ErrorCode.MEMBER_ID_REQUIRED, "m-2", -1, "")),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.REBALANCE_IN_PROGRESS)),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE, "m-2", 7, "z-leader")),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.REBALANCE_IN_PROGRESS)),
      (ApiKey.JOIN_GROUP, _join_answer(ErrorCode.NONE, "m-2", 8, "z-leader")),
      (ApiKey.SYNC_GROUP, _sync_answer(ErrorCode.NONE, (0, 2)))]),
    *[(f"Heartbeat answers {_code_text(code)}", "m-2", 5, "heartbeat",
       [(ApiKey.HEARTBEAT, SimpleNamespace(error_code=code))])
      for code in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID,
                   ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_SERVER_ERROR,
                   ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.COORDINATOR_NOT_AVAILABLE)],
]


def _describe_request(api_key: ApiKey, body: dict) -> str:
    if api_key is ApiKey.SYNC_GROUP:
        plan = {a["member_id"]: [tp.partition for tp in decode_assignment(a["assignment"])]
                for a in body["assignments"]}
        return (f"SyncGroup(member_id={body['member_id']!r}, generation_id="
                f"{body['generation_id']}, assignments={plan})")
    if api_key is ApiKey.JOIN_GROUP:
        return f"JoinGroup(member_id={body['member_id']!r})"
    return (f"{ApiKey(api_key).name.title()}(member_id={body.get('member_id')!r}, "
            f"generation_id={body.get('generation_id')})")


def _run_member_script(module: ModuleType, member_id: str, generation: int, call: str,
                       answers: list[tuple[ApiKey, SimpleNamespace]]) -> list[str]:
    """What a member asks and ends with, answered by a scripted coordinator."""
    said: list[str] = []
    script = list(answers)

    def send(api_key: ApiKey, body: dict) -> SimpleNamespace:
        said.append(_describe_request(api_key, body))
        if not script:
            raise ScriptEnded
        wanted, answer = script.pop(0)
        if api_key != wanted:
            raise ScriptEnded
        said.append(f"  answer: {_code_text(answer.error_code)}")
        return answer

    member: Member = module.Member(send, "scripted-group", [SCRIPT_TOPIC],
                           lambda topics: {t: 3 for t in topics})
    member.member_id, member.generation = member_id, generation
    try:
        outcome = getattr(member, call)()
        if call == "join":
            outcome = [(tp.topic, tp.partition) for tp in outcome]
        said.append(f"{call}() returned {outcome!r}")
    except ScriptEnded:
        said.append("(asked again after the coordinator's last scripted answer)")
    except Exception as exc:  # the learner's error is the outcome shown
        code = getattr(exc, "error_code", None)
        said.append(f"{call}() raised {type(exc).__name__}"
                    + (f" ({_code_text(code)})" if code is not None else f": {exc}"))
    said.append(f"then member_id={member.member_id!r}, generation={member.generation}, "
                f"leader_id={member.leader_id!r}")
    return said


def _check_scripted_member(learner: ModuleType, steps: Steps) -> None:
    for what, member_id, generation, call, answers in MEMBER_SCRIPTS:
        steps.step(f"scripted coordinator (no broker): a member (member_id={member_id!r}, "
                   f"generation={generation}) calls {call}(); {what}")
        steps.expect(f"{call}(): {what}: the requests, answers and outcome",
                     _run_member_script(reference, member_id, generation, call, answers),
                     _run_member_script(learner, member_id, generation, call, answers))


def check_group_member(learner: ModuleType, workdir: Path) -> None:
    from simplekafka.admin import Admin
    from simplekafka.cluster import LocalCluster

    steps = Steps()
    _check_scripted_member(learner, steps)
    steps.step(f"start a SimpleKafka broker (LocalCluster, logs under {workdir / 'cluster'})")
    with LocalCluster(brokers=1, base_dir=workdir / "cluster", broker_config=BROKER_CONFIG,
                      metrics=False) as cluster:
        group = None
        try:
            with Admin(cluster.bootstrap_servers) as admin:
                group = GroupUnderTest(learner, cluster.bootstrap_servers, steps)
                admin.create_topic(group.topic, num_partitions=PARTITIONS)
            steps.step(f"check: topic {group.topic} ({PARTITIONS} partitions), group "
                       f"{group.group_id}, members use the range assignor")
            _group_scenario(group)
        finally:
            if group is not None:
                group.close()


def _group_scenario(group: GroupUnderTest) -> None:
    steps = group.steps
    alice = group.start("alice")
    group.settle("alice alone")
    group.start("bob")
    group.settle("bob joined")

    def dave_joins_while_alice_syncs() -> None:
        steps.step("check: before alice's SyncGroup reaches the coordinator, dave joins")
        group.start("dave")
        group.until(lambda: group.state() == "PreparingRebalance",
                    "the group rebalancing for dave")

    group.hooks[("alice", ApiKey.SYNC_GROUP)] = dave_joins_while_alice_syncs
    group.start("carol")
    group.settle("carol and dave joined")

    bob = group.members["bob"]
    bobs_id = bob.member.member_id
    steps.step("check: bob stops and leaves (LeaveGroup)")
    bob.halt()
    bob.member.leave()
    group.settle("bob left")

    carol = group.members["carol"]
    group.hooks[("carol", ApiKey.SYNC_GROUP)] = lambda: group.remove(carol)
    group.start("erin", bobs_id)  # a consumer that kept the member id of an earlier life
    group.settle("erin joined; carol was removed before her SyncGroup")

    with _paused(group, carol):
        group.remove(carol)
    group.settle("carol rejoined as a new member")

    dave = group.members["dave"]
    with _paused(group, dave):
        stale = dave.member.generation - 1
        steps.step(f"check: dave's generation set back to {stale} (as if he had missed a "
                   "rebalance)")
        dave.member.generation = stale
        dave.heartbeat_generation = stale
    group.settle("dave rejoined after ILLEGAL_GENERATION")
    assert alice.member is not None


STAGE = Stage(6, "Producer, consumer and groups", "stage6_apis", "stages/stage6_apis/README.md", (
    Exercise(1, "murmur2 partitioning",
             "hash keys as the Java client does, and stick keyless records to a partition",
             ("murmur2", "partition_for_key", "DefaultPartitioner.__call__"), check_partitioner,
             hints=("Read the chapter's section on where a record goes (the producer).",
                    "Python's ints never overflow: mask every product to 32 bits, and turn "
                    "the result into a signed int only at the end; the tail bytes fall "
                    "through like Java's switch. The partition clears the sign bit, then "
                    "takes the remainder."),
             plugs=(("murmur2", ("simplekafka.producer.partitioner:murmur2",
                                 "simplekafka.producer:murmur2")),
                    ("partition_for_key", ("simplekafka.producer.partitioner:partition_for_key",
                                           "simplekafka.producer:partition_for_key")),
                    ("DefaultPartitioner.__call__",
                     ("simplekafka.producer.partitioner:DefaultPartitioner.__call__",)))),
    Exercise(2, "record accumulator",
             "batch records per partition; a batch goes when full or when it has lingered",
             ("Accumulator.append", "Accumulator.ready", "Accumulator.drain"),
             check_accumulator,
             hints=("Read the chapter's section on the producer: send now, batch later.",
                    "Linger counts from a batch's first record, not its last; only the oldest "
                    "batch of a partition can be ready, and a batch followed by a newer one "
                    "takes no more records.")),
    Exercise(3, "group member",
             "join, sync, heartbeat and rejoin against a real group coordinator",
             ("Member.join", "Member.heartbeat"), check_group_member,
             hints=("Read the chapter's section on consumer groups: sharing partitions.",
                    "Each error code says who you are afterwards: a member id to use, no "
                    "member id at all, or the same one in a new round; only the leader "
                    "computes the assignment."),
             time_limit=180.0),
), mutants=(
    Mutant("member-plans-when-not-the-leader", 3,
           "assignments = self.plan(answer) if answer.leader == self.member_id else []",
           "assignments = self.plan(answer)"),
    Mutant("member-forgets-its-id-but-not-its-generation", 3,
           '                self.member_id, self.generation = "", -1\n'
           "                continue\n            if code == ErrorCode.REBALANCE_IN_PROGRESS:\n"
           "                continue\n            if code != ErrorCode.NONE:\n"
           "                raise error_for(code, f\"joining",
           '                self.member_id = ""\n'
           "                continue\n            if code == ErrorCode.REBALANCE_IN_PROGRESS:\n"
           "                continue\n            if code != ErrorCode.NONE:\n"
           "                raise error_for(code, f\"joining"),
    Mutant("member-takes-a-sync-error-for-success", 3,
           '            if code != ErrorCode.NONE:\n'
           '                raise error_for(code, f"syncing',
           '            if False:\n                raise error_for(code, f"syncing'),
    Mutant("murmur2-unsigned", 1, "    return h - (1 << 32) if h >= 0x80000000 else h\n",
           "    return h\n"),
    Mutant("murmur2-sign-boundary-off-by-one", 1,
           "    return h - (1 << 32) if h >= 0x80000000 else h\n",
           "    return h - (1 << 32) if h > 0x80000000 else h\n"),
    Mutant("murmur2-big-endian-words", 1, 'k = int.from_bytes(data[i : i + 4], "little")',
           'k = int.from_bytes(data[i : i + 4], "big")'),
    Mutant("murmur2-tail-does-not-fall-through", 1, "    if left >= 2:\n",
           "    elif left == 2:\n"),
    Mutant("murmur2-tail-not-multiplied", 1,
           "        h ^= data[whole]\n        h = (h * M) & MASK32\n",
           "        h ^= data[whole]\n"),
    Mutant("murmur2-product-not-masked", 1, "        k = (M * k) & MASK32\n",
           "        k = M * k\n"),
    Mutant("partition-precedence", 1, "    return (murmur2(key) & 0x7FFFFFFF) % partition_count",
           "    return murmur2(key) & 0x7FFFFFFF % partition_count"),
    Mutant("partition-abs-not-to-positive", 1,
           "    return (murmur2(key) & 0x7FFFFFFF) % partition_count",
           "    return abs(murmur2(key)) % partition_count"),
    Mutant("sticky-kept-when-its-partition-is-gone", 1,
           "        if sticky is None or sticky not in partitions:",
           "        if sticky is None:"),
    Mutant("null-key-never-sticks", 1,
           "                sticky = self._rng.choice(list(partitions))\n"
           "                self._sticky[topic] = sticky\n",
           "                sticky = self._rng.choice(list(partitions))\n"),
    Mutant("linger-from-the-last-record", 2,
           "        batch.size += size\n        return batch",
           "        batch.size += size\n        batch.created = now\n        return batch"),
    Mutant("full-only-over-batch-size", 2, "head.size >= self.batch_size",
           "head.size > self.batch_size"),
    Mutant("batch-may-not-reach-batch-size", 2, "queue[-1].size + size > self.batch_size",
           "queue[-1].size + size >= self.batch_size"),
    Mutant("linger-boundary", 2, "            if due <= now:", "            if due < now:"),
    Mutant("newer-batch-does-not-make-the-head-ready", 2,
           "if len(queue) > 1 or head.size >= self.batch_size:",
           "if head.size >= self.batch_size:"),
    Mutant("drain-takes-every-batch", 2,
           "        return [self.queues[tp].popleft() for tp in ready]",
           "        taken = [b for tp in ready for b in self.queues[tp]]\n"
           "        for tp in ready:\n            self.queues[tp].clear()\n"
           "        return taken"),
    Mutant("wait-is-the-linger", 2, "                wait = min(wait, due - now)",
           "                wait = min(wait, self.linger)"),
    Mutant("heartbeat-ignores-rebalance", 3,
           "        if code == ErrorCode.REBALANCE_IN_PROGRESS:\n            return False\n",
           "        if code == ErrorCode.REBALANCE_IN_PROGRESS:\n            return True\n"),
    Mutant("member-id-required-retried-without-the-id", 3,
           "            if code == ErrorCode.MEMBER_ID_REQUIRED:\n"
           "                self.member_id = answer.member_id\n",
           "            if code == ErrorCode.MEMBER_ID_REQUIRED:\n"),
    Mutant("unknown-member-keeps-its-id", 3,
           "            self.member_id, self.generation = \"\", -1\n            return False\n",
           "            return False\n"),
    Mutant("join-unknown-member-keeps-its-id", 3,
           "                self.member_id = answer.member_id\n                continue\n"
           "            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):\n"
           "                self.member_id, self.generation = \"\", -1\n",
           "                self.member_id = answer.member_id\n                continue\n"
           "            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):\n"),
    Mutant("sync-unknown-member-keeps-its-id", 3,
           "            code = ErrorCode.of(synced.error_code)\n"
           "            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):\n"
           "                self.member_id, self.generation = \"\", -1\n",
           "            code = ErrorCode.of(synced.error_code)\n"
           "            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):\n"),
    Mutant("leader-test-inverted", 3,
           "assignments = self.plan(answer) if answer.leader == self.member_id else []",
           "assignments = self.plan(answer) if answer.leader != self.member_id else []"),
    Mutant("sync-rebalance-is-an-error", 3,
           "            if code == ErrorCode.REBALANCE_IN_PROGRESS:\n                continue\n"
           "            if code != ErrorCode.NONE:\n"
           "                raise error_for(code, f\"syncing",
           "            if code != ErrorCode.NONE:\n"
           "                raise error_for(code, f\"syncing"),
    Mutant("generation-not-taken-from-the-join", 3,
           "            self.generation = answer.generation_id\n",
           "            self.generation = max(self.generation, 0)\n"),
), real_processes=True)
