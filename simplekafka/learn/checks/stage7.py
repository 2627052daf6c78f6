"""Stage 7 checks: the learner's replication rules against the broker's, KIP-101 replayed,
and the learner's follower against a real leader broker."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from simplekafka.broker import isr as broker_isr
from simplekafka.broker import replica_fetcher
from simplekafka.learn import follower_check, kip101
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed
from simplekafka.storage import epochs as storage_epochs

# SimpleKafka's own rules, taken at import, before plug.install can put a learner's there.
BROKER_HIGH_WATERMARK = broker_isr.high_watermark
BROKER_OUT_OF_SYNC_REPLICAS = broker_isr.out_of_sync_replicas
BROKER_MAY_JOIN_ISR = broker_isr.may_join_isr
BROKER_END_OFFSET_FOR_EPOCH = storage_epochs.end_offset_for_epoch
BROKER_TRUNCATION_OFFSET = replica_fetcher.truncation_offset

# Hand-picked cases first (their failures read best), then grids over the boundaries.
HW_CASES = [
    ([1, 2, 3], 1, 10, {2: 7, 3: 9}),
    ([1, 3], 1, 10, {2: 2, 3: 9}),
    ([1, 2], 1, 10, {}),
    ([1], 1, 10, {2: 2}),
    ([2, 1, 3], 1, 5, {2: 5, 3: 5}),
    ([3, 1], 1, 4, {3: 6}),
    ([2, 3], 1, 8, {2: 9, 3: 9}),
]

OUT_OF_SYNC_CASES = [  # isr, leader, leader LEO, follower LEOs, caught up at, now, lag max
    ([1, 2, 3], 1, 10, {2: 5, 3: 5}, {2: 9_000.0, 3: 1_000.0}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5, 3: 10}, {2: 9_000.0, 3: 1_000.0}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5}, {}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5, 3: 5}, {2: 8_000.0, 3: 7_999.0}, 10_000.0, 2_000.0),
    ([3, 2, 1], 1, 0, {}, {}, 50_000.0, 2_000.0),
]

JOIN_CASES = [(10, 10, 0), (9, 10, 0), (10, 8, 12), (12, 8, 12), (0, 0, 0), (5, 3, 4)]

EPOCH_TABLES = [  # a replica's (epoch, start offset) entries and its log end offset
    ([(0, 0), (2, 5), (3, 9)], 12),
    ([(1, 4)], 6),
    ([], 0),
    ([], 3),
    ([(0, 0)], 5),
    ([(0, 0), (2, 5)], 8),
    ([(2, 3), (5, 7)], 7),
    ([(0, 0), (1, 3), (4, 6)], 10),
]

# The follower that ignores its own end of the epoch the leader answered keeps 8 here.
TRUNCATION_CASES = [  # follower's epochs, its LEO, epoch asked, the leader's answer
    ([(0, 0), (2, 5)], 8, 2, 1, 10),
    ([(0, 0), (2, 5)], 8, 2, 2, 6),
    ([(0, 0), (2, 5)], 8, 2, 2, 12),
    ([(0, 0), (2, 5)], 8, 2, -1, -1),
    ([(0, 0), (2, 5)], 8, 2, -1, 3),
    ([(0, 0), (2, 5)], 8, 2, 0, 4),
]
LEADER_ENDS = (-1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15)


# Broker ids as Kafka generates them (1001 on) and the leader not the smallest: ids are
# compared by value (``is`` holds only for CPython's cached small ints), and "the leader"
# is not "the first" or "the smallest".
HW_MORE_CASES = [
    ([1001, 1002, 1003], 1002, 10, {1001: 4, 1003: 9}),
    ([3, 1, 2], 2, 7, {1: 7, 3: 7}),
]

OUT_OF_SYNC_MORE_CASES = [
    ([1001, 1002, 1003], 1003, 10, {1001: 5, 1002: 10}, {1001: 1_000.0, 1002: 9_000.0},
     10_000.0, 2_000.0),
    ([1, 2], 1, 10, {2: 12}, {2: 0.0}, 10_000.0, 2_000.0),  # ahead of a new leader: stays
    ([1, 3, 2], 1, 10, {3: 10, 2: 5}, {3: 10_000.0, 2: 1_000.0}, 10_000.0, 2_000.0),
    ([1, 2], 1, 10, {2: 5}, {}, 2_000.0, 2_000.0),  # never caught up: lag counts from 0
    ([1, 2], 1, 10, {2: 5}, {}, 2_000.5, 2_000.0),
]

EPOCH_MORE_TABLES = [([(0, 0), (300, 4), (301, 9)], 12)]  # epochs past CPython's small ints

# Follower epoch tables for truncation_offset, each asked about its latest epoch.
FOLLOWER_TABLES = [
    ([(0, 0), (2, 5), (3, 9)], 12),
    ([(1, 4)], 6),
    ([(0, 0), (1, 3)], 3),
    ([(2, 0), (3, 5)], 8),  # the leader may know only an epoch older than all of these
    ([], 4),
]


def _fresh(value: int) -> int:
    """The same int as a new object, as a learner's caller would pass it."""
    return int(str(value))


def _copy(value: object) -> object:
    """An argument as a learner's caller would pass it: new containers and new int objects,
    so that comparing broker ids or epochs with ``is`` fails past CPython's small ints."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return _fresh(value)
    if isinstance(value, dict):
        return {_copy(k): _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def _leader_answers(entries: list[tuple[int, int]], leo: int,
                    asked: int) -> list[tuple[int, int]]:
    """Answers a leader may give about ``asked``: it knows it, an older one, or none."""
    ends = sorted({0, 2, 3, max(leo - 1, 0), leo, leo + 3})
    answers = [(-1, -1)] + [(-1, end) for end in ends]
    if asked >= 0:
        answers += [(asked, end) for end in ends]
        older = {epoch for epoch, _ in entries if epoch < asked} | {asked - 1, entries[0][0] - 1}
        answers += [(epoch, end) for epoch in sorted(older) if 0 <= epoch < asked
                    for end in ends]
    return answers


def _describe(call: str, expected: object, got: object) -> ExerciseFailed:
    return ExerciseFailed(call, [f"expected (SimpleKafka's broker): {expected!r}",
                                 f"got (yours):                     {got!r}"])


def _isrs(replicas: Iterable[int]) -> list[list[int]]:
    """Every subset of ``replicas``, in order and reversed (order must not matter, or must)."""
    found: list[list[int]] = []
    replicas = list(replicas)
    for size in range(len(replicas) + 1):
        for chosen in itertools.combinations(replicas, size):
            found.append(list(chosen))
            if size > 1:
                found.append(list(reversed(chosen)))
    return found


def _maps(keys: list[int], values: Iterable[object]) -> list[dict]:
    """Every map of ``keys`` to one of ``values`` (None: the key is missing)."""
    values = list(values)
    return [{k: v for k, v in zip(keys, chosen) if v is not None}
            for chosen in itertools.product(values, repeat=len(keys))]


def hw_cases() -> list[tuple]:
    cases = list(HW_CASES + HW_MORE_CASES)
    for leo in (0, 5):
        for isr in _isrs([1, 2, 3]):
            for ends in _maps([2, 3], [None, 0, 4, 5, 6]):
                cases.append((isr, 1, leo, ends))
    return cases


def out_of_sync_cases() -> list[tuple]:
    cases = list(OUT_OF_SYNC_CASES + OUT_OF_SYNC_MORE_CASES)
    now, lag = 10_000.0, 2_000.0
    for leo in (0, 10):
        ends_choices = _maps([2, 3], [None, max(leo - 1, 0), leo, leo + 1])
        caught_choices = _maps([2, 3], [None, now - lag - 1, now - lag, now - lag + 1])
        for isr in _isrs([1, 2, 3]):
            for ends in ends_choices:
                for caught in caught_choices:
                    cases.append((isr, 1, leo, ends, caught, now, lag))
    return cases


def join_cases() -> list[tuple]:
    return JOIN_CASES + list(itertools.product(range(4), repeat=3))


def end_offset_cases() -> list[tuple]:
    cases = [(entries, leo, asked) for entries, leo in EPOCH_TABLES for asked in range(-1, 8)]
    for entries, leo in EPOCH_MORE_TABLES:  # epochs past CPython's cached small ints
        cases += [(entries, leo, asked)
                  for asked in range(entries[1][0] - 1, entries[-1][0] + 2)]
    return cases


def truncation_cases() -> list[tuple]:
    cases = list(TRUNCATION_CASES)
    for entries, leo in EPOCH_TABLES:
        latest = entries[-1][0] if entries else -1
        for asked in sorted({latest, latest + 1, *(e for e, _ in entries)}):
            for leader_epoch in range(-1, 7):
                for end in LEADER_ENDS:
                    cases.append((entries, leo, asked, leader_epoch, end))
    for entries, leo in FOLLOWER_TABLES:
        asked = entries[-1][0] if entries else -1
        for leader_epoch, end in _leader_answers(entries, leo, asked):
            cases.append((entries, leo, asked, leader_epoch, end))
    return cases


def _compare(name: str, cases: Iterable[tuple], broker: Callable, learner: Callable,
             shape: Callable = lambda x: x, fields: tuple[str, ...] = ()) -> None:
    for case in cases:
        expected = shape(broker(*case))
        copies = [_copy(a) for a in case]
        got = shape(learner(*copies))
        if got != expected:
            arguments = ", ".join(f"{f}={a!r}" for f, a in zip(fields, case))
            raise _describe(f"{name}({arguments})", expected, got)


def check_high_watermark(learner: ModuleType, _workdir: Path) -> None:
    _compare("high_watermark", hw_cases(), BROKER_HIGH_WATERMARK, learner.high_watermark,
             fields=("isr", "leader_id", "leader_end_offset", "follower_end_offsets"))


def check_isr_rules(learner: ModuleType, _workdir: Path) -> None:
    _compare("out_of_sync_replicas", out_of_sync_cases(), BROKER_OUT_OF_SYNC_REPLICAS,
             learner.out_of_sync_replicas, shape=list,
             fields=("isr", "leader_id", "leader_end_offset", "follower_end_offsets",
                     "caught_up_ms", "now", "lag_max_ms"))
    _compare("may_join_isr", join_cases(), BROKER_MAY_JOIN_ISR, learner.may_join_isr,
             shape=bool, fields=("follower_end_offset", "high_watermark",
                                 "leader_epoch_start_offset"))


def check_truncation_by_epoch(learner: ModuleType, _workdir: Path) -> None:
    _compare("end_offset_for_epoch", end_offset_cases(), BROKER_END_OFFSET_FOR_EPOCH,
             learner.end_offset_for_epoch, shape=tuple,
             fields=("epochs", "log_end_offset", "epoch"))
    _compare("truncation_offset", truncation_cases(), BROKER_TRUNCATION_OFFSET,
             learner.truncation_offset,
             fields=("epochs", "log_end_offset", "asked_epoch", "leader_epoch",
                     "leader_end_offset"))
    kip101.lost_acknowledged_write(learner)
    kip101.diverged_logs(learner)


def check_follower(learner: ModuleType, workdir: Path) -> None:
    follower_check.run(learner, workdir)


STAGE = Stage(7, "Replication rules", "stage7_replication", "stages/stage7_cluster/README.md", (
    Exercise(1, "high watermark",
             "the HW as the lowest log end offset over the ISR",
             ("high_watermark",), check_high_watermark,
             hints=("Read the chapter's section on the high watermark (replication rule 1).",
                    "Every ISR member's LEO counts, the leader's included; a follower the "
                    "leader has not heard from holds the HW at 0."),
             plugs=(("high_watermark", ("simplekafka.broker.partition:high_watermark",)),)),
    Exercise(2, "ISR shrink and join",
             "which followers leave the ISR and when one may join",
             ("out_of_sync_replicas", "may_join_isr"), check_isr_rules,
             hints=("Read the chapter's section on the ISR (replication rules 2 and 5).",
                    "Lag is time since the follower was last at the leader's LEO, not a "
                    "count of records; joining needs the HW and the current epoch's start."),
             plugs=(("out_of_sync_replicas",
                     ("simplekafka.broker.partition:out_of_sync_replicas",)),
                    ("may_join_isr", ("simplekafka.broker.partition:may_join_isr",)))),
    Exercise(3, "truncation by leader epoch",
             "answer OffsetsForLeaderEpoch and truncate by it: KIP-101's scenarios hold",
             ("end_offset_for_epoch", "truncation_offset"), check_truncation_by_epoch,
             hints=("Read the chapter's section on leader epochs (replication rule 4).",
                    "Never cut at your own HW; when the leader answers an older epoch, your "
                    "own end of that epoch may be lower than the leader's."),
             plugs=(("end_offset_for_epoch", ("simplekafka.storage.epochs:end_offset_for_epoch",
                                              "simplekafka.broker.replica_fetcher:"
                                              "end_offset_for_epoch")),
                    ("truncation_offset", ("simplekafka.broker.replica_fetcher:"
                                           "truncation_offset",)))),
    # No plugs: SimpleKafka's replica fetcher is one Twisted loop per leader broker with
    # fetch sessions; a blocking one-partition Follower has no place in it.
    Exercise(4, "the follower's fetch loop",
             "fetch, append and truncate by leader epoch against a real leader broker",
             ("Follower.truncate_once", "Follower.fetch_once"), check_follower,
             hints=("Read the chapter's sections on leader epochs and on coming back "
                    "(replication rule 4), and simplekafka/broker/replica_fetcher.py.",
                    "Ask about the latest epoch in your own log, not the leader's; fetch "
                    "from your log end, never your HW; a follower's HW is never above its "
                    "own log end."),
             time_limit=240.0),
), mutants=(
    Mutant("hw-from-the-leaders-leo-alone", 1, "    return min(ends)\n",
           "    return leader_end_offset\n"),
    Mutant("hw-counts-a-silent-follower-as-the-leaders-leo", 1,
           "            ends.append(follower_end_offsets.get(replica, 0))",
           "            ends.append(follower_end_offsets.get(replica, leader_end_offset))"),
    Mutant("hw-counts-replicas-outside-the-isr", 1, "    for replica in isr:\n"
           "        if replica != leader_id:\n            ends.append(",
           "    for replica in set(isr) | set(follower_end_offsets):\n"
           "        if replica != leader_id:\n            ends.append("),
    Mutant("isr-lag-boundary", 2, "if now - caught_up_ms.get(replica, 0.0) > lag_max_ms:",
           "if now - caught_up_ms.get(replica, 0.0) >= lag_max_ms:"),
    Mutant("isr-missing-follower-counts-as-0-like-the-hw", 2,
           "if follower_end_offsets.get(replica, -1) >= leader_end_offset:",
           "if follower_end_offsets.get(replica, 0) >= leader_end_offset:"),
    Mutant("isr-drops-by-lag-alone", 2,
           "        if follower_end_offsets.get(replica, -1) >= leader_end_offset:\n"
           "            continue\n", ""),
    Mutant("join-ignores-the-epoch-start", 2,
           "    return (follower_end_offset >= high_watermark\n"
           "            and follower_end_offset >= leader_epoch_start_offset)",
           "    return follower_end_offset >= high_watermark"),
    Mutant("epoch-end-is-always-the-log-end", 3, "    if epoch == epochs[-1][0]:",
           "    if epoch <= epochs[-1][0]:"),
    Mutant("epoch-floor-is-the-asked-epoch", 3,
           "    return (floor[-1][0] if floor else epoch), higher[1]",
           "    return epoch, higher[1]"),
    Mutant("hw-compares-broker-ids-with-is", 1, "        if replica != leader_id:\n",
           "        if replica is not leader_id:\n"),
    Mutant("isr-drops-a-follower-ahead-of-the-leader", 2,
           "if follower_end_offsets.get(replica, -1) >= leader_end_offset:",
           "if follower_end_offsets.get(replica, -1) == leader_end_offset:"),
    Mutant("truncation-keeps-everything-when-the-leader-knows-no-epoch", 3,
           "cut = leader_end_offset if leader_end_offset >= 0 else log_end_offset",
           "cut = log_end_offset"),
    Mutant("follower-never-truncates", 3, "    return min(cut, log_end_offset)",
           "    return log_end_offset"),
    Mutant("truncation-ignores-own-epoch-end", 3,
           "        cut = min(leader_end_offset, own_end)\n",
           "        cut = leader_end_offset\n"),
    Mutant("truncation-to-the-leaders-end-may-pass-the-log-end", 3,
           "    return min(cut, log_end_offset)", "    return cut"),
    Mutant("follower-appends-despite-a-fetch-error", 4,
           "        if answer.error_code != ErrorCode.NONE:\n            return\n", ""),
    Mutant("follower-truncates-despite-an-epoch-error", 4,
           "        if error != ErrorCode.NONE:\n            return\n", ""),
    Mutant("follower-takes-any-fetch-error-for-out-of-range", 4,
           "        if answer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:",
           "        if answer.error_code != ErrorCode.NONE:"),
    Mutant("follower-fetches-from-its-hw", 4,
           "        answer = self.leader.fetch(self.log.log_end_offset)",
           "        answer = self.leader.fetch(self.high_watermark)"),
    Mutant("follower-hw-is-the-leaders", 4,
           "        self.high_watermark = min(answer.high_watermark, self.log.log_end_offset)",
           "        self.high_watermark = answer.high_watermark"),
    Mutant("follower-skips-truncation", 4,
           "        latest = self.log.leader_epochs.latest_epoch\n        if latest < 0:",
           "        latest = self.log.leader_epochs.latest_epoch\n        if True:"),
    Mutant("follower-truncates-to-its-hw", 4,
           "        self.log.truncate_to(truncation_offset(\n"
           "            self.log.leader_epochs.entries, self.log.log_end_offset, latest, "
           "leader_epoch,\n            end_offset))",
           "        self.log.truncate_to(self.high_watermark)"),
    Mutant("follower-asks-about-the-leaders-epoch", 4,
           "self.leader.offsets_for_leader_epoch(latest)",
           "self.leader.offsets_for_leader_epoch(self.leader.leader_epoch)"),
    Mutant("follower-ignores-out-of-range", 4,
           "        if answer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:\n"
           "            self.truncated = False\n            return\n", ""),
), real_processes=True)
