"""Stage 7 exercise 4: the learner's follower against a real leader broker, step by step.

Two real brokers (1 and 2, LocalCluster with ZooKeeper) hold a partition
assigned to replicas 1, 2 and 3; broker 3 never runs: the learner's
``Follower`` is replica 3. It fetches from the real leader with SimpleKafka's
client into SimpleKafka's ``Log``. Beside it SimpleKafka's own follower (the
reference solution's, calling SimpleKafka's ``truncation_offset``) runs on a
shadow log and is given, step by step, the very answers the learner's follower
got, as long as it asks the same; after every step both logs, HWs and
``truncated`` flags must agree. The scenario: catch up; restart (the HW starts
at 0); broker 2 paused while broker 1 takes three more records with acks=1
that replica 3 copies (broker 2 may still get the first, from a fetch that was
under way); broker 1 killed, broker 2 leads a new epoch without the rest and
takes other records at their offsets, so the follower must cut them; then a
batch the leader never had is slipped into the follower's log, past the
leader's log end (OFFSET_OUT_OF_RANGE, truncation again).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from simplekafka.learn.report import Steps
from simplekafka.learn.solutions import stage7_replication as reference
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import build_batch, parse_batches

if TYPE_CHECKING:
    from simplekafka.cluster import LocalCluster
    from simplekafka.storage import Log

FetchAnswer = reference.FetchAnswer

TOPIC = "learn-follower"
REPLICA_ID = 3  # the learner's follower: assigned, never a running broker
MAX_STEPS = 40  # per phase; catching up takes one step per batch
CONFIG = {
    "zookeeper.session.timeout.ms": "10000",
    # Long: broker 2 stays in the ISR while it is paused, so it can lead cleanly.
    "replica.lag.time.max.ms": "60000",
}


class Leader(Protocol):
    """What a follower asks of its leader (SimpleKafka's given ``Leader``, or a script)."""

    @property
    def leader_epoch(self) -> int: ...
    def offsets_for_leader_epoch(self, epoch: int) -> tuple[int, int, int]: ...
    def fetch(self, fetch_offset: int) -> FetchAnswer: ...


class Follower(Protocol):
    """The exercise's contract: what the check reads and calls of the learner's Follower."""

    log: Log
    high_watermark: int
    truncated: bool

    def follow(self, leader: Leader) -> None: ...
    def step(self) -> None: ...


class _Mismatch(Exception):
    """The reference follower asked something else than the learner's did."""


@dataclass
class _Call:
    api: str  # "OffsetForLeaderEpoch" or "Fetch"
    argument: int  # the epoch asked, or the fetch offset
    answer: FetchAnswer | tuple[int, ...]  # Fetch's, or OffsetForLeaderEpoch's

    def describe(self) -> str:
        answer = self.answer
        if isinstance(answer, FetchAnswer):
            error = "" if answer.error_code == ErrorCode.NONE else \
                f"error {ErrorCode(answer.error_code).name}, "
            offsets = _offsets(answer.records)
            got = f"records at {offsets[0]}..{offsets[-1]}" if offsets else "no records"
            return f"Fetch(offset {self.argument}) -> {error}{got}, HW {answer.high_watermark}"
        code, epoch, end = answer
        shown = f"error {ErrorCode(code).name}" if code else f"({epoch}, {end})"
        return f"OffsetForLeaderEpoch(epoch {self.argument}) -> {shown}"


def _offsets(records: bytes) -> list[int]:
    return [r.offset for batch in parse_batches(records) for r in batch]


class _Recording:
    """The learner's follower's leader: the real one, each call noted."""

    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        self.calls: list[_Call] = []

    @property
    def leader_epoch(self) -> int:
        return self.leader.leader_epoch

    def __getattr__(self, name: str) -> object:  # the rest of the leader, as it is
        return getattr(self.leader, name)

    def offsets_for_leader_epoch(self, epoch: int) -> tuple[int, int, int]:
        answer = self.leader.offsets_for_leader_epoch(epoch)
        self.calls.append(_Call("OffsetForLeaderEpoch", epoch, tuple(answer)))
        return answer

    def fetch(self, fetch_offset: int) -> FetchAnswer:
        answer = self.leader.fetch(fetch_offset)
        self.calls.append(_Call("Fetch", fetch_offset, answer))
        return answer


class _Replay:
    """SimpleKafka's follower's leader: the learner's answers, if it asks the same."""

    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        self.calls: list[_Call] = []
        self.asked: list[str] = []

    @property
    def leader_epoch(self) -> int:
        return self.leader.leader_epoch

    def __getattr__(self, name: str) -> object:  # the rest of the leader, as it is
        return getattr(self.leader, name)

    def _answer(self, api: str, argument: int) -> FetchAnswer | tuple[int, ...]:
        self.asked.append(f"{api}({'epoch' if api != 'Fetch' else 'offset'} {argument})")
        if not self.calls or (self.calls[0].api, self.calls[0].argument) != (api, argument):
            raise _Mismatch
        return self.calls.pop(0).answer

    def offsets_for_leader_epoch(self, epoch: int) -> tuple[int, int, int]:
        answer = self._answer("OffsetForLeaderEpoch", epoch)
        assert isinstance(answer, tuple)  # (recorded from the same call)
        error, found_epoch, end = answer
        return error, found_epoch, end

    def fetch(self, fetch_offset: int) -> FetchAnswer:
        answer = self._answer("Fetch", fetch_offset)
        assert isinstance(answer, FetchAnswer)  # (recorded from the same call)
        return answer


def _contents(log: Log) -> list[tuple[int, int, bytes | None]]:
    """(offset, leader epoch, value) of every record in a Log."""
    data = log.read(log.log_start_offset, 1 << 30)
    return [(r.offset, batch.header.partition_leader_epoch, r.value)
            for batch in parse_batches(data) for r in batch]


def _state(follower: Follower | reference.Follower) -> dict:
    log = follower.log
    return {"log end offset": log.log_end_offset,
            "epochs": [tuple(e) for e in log.leader_epochs.entries],
            "high watermark": follower.high_watermark, "truncated": follower.truncated,
            "records (offset, epoch, value)": _contents(log)}


class Pair:
    """The learner's follower and SimpleKafka's, stepped together on the same answers."""

    def __init__(self, learner: ModuleType, workdir: Path, steps: Steps) -> None:
        from simplekafka.storage import Log

        self.learner = learner
        self.steps = steps
        self.logs = (Log.open(workdir / "your-follower" / f"{TOPIC}-0"),
                     Log.open(workdir / "simplekafka-follower" / f"{TOPIC}-0"))
        self.restart()
        self.number = 0

    def restart(self) -> None:
        """New Follower objects on the same logs (the HW starts at 0 again)."""
        self.mine: Follower = self.learner.Follower(self.logs[0])
        self.theirs = reference.Follower(self.logs[1])

    def follow(self, leader: Leader) -> None:
        self.recording, self.replay = _Recording(leader), _Replay(leader)
        self.mine.follow(self.recording)
        self.theirs.follow(self.replay)  # type: ignore[arg-type]  # answers as a Leader does

    def close(self) -> None:
        for log in self.logs:
            log.close()

    def step(self) -> list[_Call]:
        self.number += 1
        self.recording.calls = []
        before = self.mine.log.log_end_offset
        try:
            self.mine.step()
        except (NotImplementedError, _Mismatch):
            raise
        except Exception as exc:
            done = "; ".join(c.describe() for c in self.recording.calls) or "nothing sent"
            raise self.steps.fail(
                f"step {self.number}: your follower raised {type(exc).__name__}: {exc} "
                f"(after: {done})", "no exception", f"{type(exc).__name__}: {exc}") from exc
        calls = list(self.recording.calls)
        self.replay.calls, self.replay.asked = list(calls), []
        try:
            self.theirs.step()
            extra = self.replay.calls
        except _Mismatch:
            extra = None
        sent = [f"{c.api}({'offset' if c.api == 'Fetch' else 'epoch'} {c.argument})"
                for c in calls]
        if extra is None or extra:
            self.steps.step(f"step {self.number}: your follower sent "
                            f"{', '.join(sent) or 'nothing'}")
            raise self.steps.fail(
                f"step {self.number}: your follower's requests differ from SimpleKafka's",
                f"SimpleKafka's follower sends: {', '.join(self.replay.asked) or 'nothing'}",
                f"yours sent: {', '.join(sent) or 'nothing'}")
        after = self.mine.log.log_end_offset
        what = "; ".join(c.describe() for c in calls) or "no request"
        self.steps.step(f"step {self.number}: {what}; your log end {before} -> {after}, "
                        f"HW {self.mine.high_watermark}")
        expected, got = _state(self.theirs), _state(self.mine)
        if expected != got:
            differ = [key for key in expected if expected[key] != got[key]]
            raise self.steps.fail(f"step {self.number}: your follower's {', '.join(differ)} "
                                  f"{'differs' if len(differ) == 1 else 'differ'} from "
                                  f"SimpleKafka's after the same answers",
                                  {k: expected[k] for k in differ}, {k: got[k] for k in differ})
        return calls

    def until_caught_up(self, what: str) -> None:
        """Step until a fetch brings nothing new without an error (bounded)."""
        self.steps.step(what)
        for _ in range(MAX_STEPS):
            calls = self.step()
            last = calls[-1] if calls else None
            if last is not None and isinstance(last.answer, FetchAnswer) \
                    and not last.answer.records and last.answer.error_code == ErrorCode.NONE:
                return
            if last is not None and _is_error(last):
                time.sleep(0.1)  # the leader is not ready yet: as the fetcher backs off
        raise self.steps.fail(f"{what}: your follower did not catch up in {MAX_STEPS} steps",
                              "a fetch that brings nothing new", "still fetching")


def _is_error(call: _Call) -> bool:
    if isinstance(call.answer, FetchAnswer):
        return call.answer.error_code != ErrorCode.NONE
    return call.answer[0] != ErrorCode.NONE


def _leader_contents(cluster: LocalCluster, broker: int) -> list[tuple[int, int, bytes | None]]:
    from simplekafka.cluster.checker import read_partition_dir

    return [(r.offset, r.leader_epoch, r.value)
            for r in read_partition_dir(cluster.partition_dir(broker, TOPIC, 0))]


def _produce(cluster: LocalCluster, broker: int, values: list[bytes], steps: Steps) -> int:
    """One batch per value, acks=1, through ``broker`` only (the other may be paused)."""
    from simplekafka.producer import Producer

    with Producer(cluster.brokers[broker].address, acks=1, linger_ms=0,
                  request_timeout_ms=10_000, delivery_timeout_ms=60_000) as producer:
        offsets = [producer.send(TOPIC, value=value, partition=0).result(60).offset
                   for value in values]
    steps.step(f"broker {broker} takes {[v.decode() for v in values]} with acks=1 "
               f"at offsets {offsets}")
    return offsets[0]


def _leader_epoch(cluster: LocalCluster) -> int:
    state = cluster.partition_state(TOPIC, 0)
    if state is None:  # (the topic is made before anything asks)
        raise RuntimeError(f"{TOPIC}-0 has no state znode")
    return state.leader_epoch


@contextmanager
def _leader(cluster: LocalCluster, broker: int) -> Iterator[reference.Leader]:
    from simplekafka.client import KafkaClient

    client = KafkaClient(cluster.brokers[broker].address, client_id="learn-follower",
                         request_timeout_ms=10_000)
    try:
        yield reference.Leader(client, -1, TOPIC, 0, REPLICA_ID, _leader_epoch(cluster))
    finally:
        client.close()


class _ScriptedLeader:
    """A leader that answers from a script: the errors a healthy real leader seldom gives."""

    leader_epoch = 0

    def __init__(self, fetches: list[FetchAnswer], epochs: list[tuple[int, int, int]]) -> None:
        self.fetches, self.epochs = list(fetches), list(epochs)

    def offsets_for_leader_epoch(self, epoch: int) -> tuple[int, int, int]:
        return self.epochs.pop(0) if self.epochs else (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)

    def fetch(self, fetch_offset: int) -> FetchAnswer:
        if self.fetches:
            return self.fetches.pop(0)
        return FetchAnswer(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, records=b"",
                           high_watermark=-1)


def _fetch_answer(error: int, high_watermark: int, records: bytes = b"") -> FetchAnswer:
    return FetchAnswer(error_code=int(error), records=records, high_watermark=high_watermark)


def _scripted(learner: ModuleType, workdir: Path, steps: Steps) -> None:
    """Errors from Fetch and OffsetForLeaderEpoch change nothing; OFFSET_OUT_OF_RANGE alone
    sends the follower back to truncation."""
    steps.step("a scripted leader first (no broker): Fetch answers 3 records (2 batches) "
               "and HW 1, then NOT_LEADER_OR_FOLLOWER, UNKNOWN_SERVER_ERROR (-1) and "
               "OFFSET_OUT_OF_RANGE, each with HW 3; OffsetForLeaderEpoch answers "
               "UNKNOWN_SERVER_ERROR (-1), NOT_LEADER_OR_FOLLOWER, then (epoch 0, end 2)")
    pair = Pair(learner, workdir / "scripted", steps)
    try:
        pair.follow(_ScriptedLeader([
            _fetch_answer(ErrorCode.NONE, 1, build_batch(
                [(None, b"s0"), (None, b"s1")], partition_leader_epoch=0) + build_batch(
                [(None, b"s2")], base_offset=2, partition_leader_epoch=0)),
            _fetch_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER, 3),
            _fetch_answer(ErrorCode.UNKNOWN_SERVER_ERROR, 3),
            _fetch_answer(ErrorCode.OFFSET_OUT_OF_RANGE, 3)],
            [(ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1), (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1),
             (ErrorCode.NONE, 0, 2)]))
        for _ in range(8):  # truncate (empty log), 4 fetches, 3 epoch questions
            pair.step()
    finally:
        pair.close()


def run(learner: ModuleType, workdir: Path) -> None:
    """The whole scenario; raises ExerciseFailed (via Steps) at the first wrong step."""
    from simplekafka.cluster.faults import Faults
    from simplekafka.cluster.local import LocalCluster
    from simplekafka.coordination.topics import create_topic_znodes

    steps = Steps()
    _scripted(learner, workdir, steps)
    cluster = LocalCluster(brokers=2, base_dir=workdir / "cluster", broker_config=CONFIG,
                           metrics=False)
    steps.step("start ZooKeeper and brokers 1 and 2 (real processes); "
               f"{TOPIC}-0 on replicas [1, 2, 3]: yours is replica 3")
    cluster.start()
    faults = Faults(cluster, seed=0, announce=False)
    pair = None
    try:
        create_topic_znodes(cluster.zk, TOPIC, {0: [1, 2, 3]}, {"min.insync.replicas": "1"})
        cluster.wait_for(lambda: cluster.leader_of(TOPIC, 0) == 1, "broker 1 to lead", 30)
        _produce(cluster, 1, [f"a{i}".encode() for i in range(4)], steps)
        pair = Pair(learner, workdir, steps)
        with _leader(cluster, 1) as leader:
            pair.follow(leader)
            pair.until_caught_up("your follower starts empty and follows broker 1 (epoch 0)")
            _expect_same_log(steps, pair, cluster, 1)
            pair.restart()
            pair.follow(leader)
            pair.until_caught_up("your follower restarts (its HW starts at 0) and follows "
                                 "broker 1 again")
            faults.pause(2)
            steps.step("broker 2 is paused (SIGSTOP): it copies nothing more")
            paused_at = _produce(cluster, 1, [f"b{i}".encode() for i in range(3)], steps)
            pair.until_caught_up("your follower copies them; broker 2 does not")
            _expect_same_log(steps, pair, cluster, 1)
        faults.kill(1)
        faults.resume(2)
        faults.expire_session(1)
        new_leader = cluster.wait_for_leader(TOPIC, 0, not_=1, timeout=60)
        steps.step(f"broker 1 is killed, broker 2 resumes; broker {new_leader} leads epoch "
                   f"{_leader_epoch(cluster)}")
        start = _produce(cluster, 2, [f"c{i}".encode() for i in range(2)], steps)
        steps.step(f"(broker 2 had copied {start - paused_at} of b0..b2 when it was paused: "
                   f"your follower's records from offset {start} on are not on it)")
        with _leader(cluster, 2) as leader:
            pair.follow(leader)
            pair.until_caught_up("your follower follows broker 2: it must cut what broker 2 "
                                 "does not have and copy c0, c1")
            _expect_same_log(steps, pair, cluster, 2)
            epoch = leader.leader_epoch
            for log in pair.logs:
                end = log.log_end_offset
                log.append_as_follower(build_batch([(None, b"stray")], base_offset=end,
                                                   partition_leader_epoch=epoch))
            steps.step(f"a batch the leader never had (epoch {epoch}, offset "
                       f"{pair.logs[0].log_end_offset - 1}) is slipped into your log")
            pair.until_caught_up("your follower fetches past the leader's log end: "
                                 "OFFSET_OUT_OF_RANGE, then truncation again")
            _expect_same_log(steps, pair, cluster, 2)
    finally:
        if pair is not None:
            pair.close()
        faults.heal()
        cluster.cleanup()


def _expect_same_log(steps: Steps, pair: Pair, cluster: LocalCluster, broker: int) -> None:
    steps.expect(f"your follower's log differs from broker {broker}'s (the leader's)",
                 _leader_contents(cluster, broker), _contents(pair.mine.log))
