"""Stage 7 checks: the learner's replication rules against the broker's, then KIP-101 replayed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

from simplekafka.broker import isr as broker_rules
from simplekafka.broker.replica_fetcher import truncate_by_epoch
from simplekafka.learn import kip101
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed
from simplekafka.storage.epochs import LeaderEpochCache

HW_CASES = [
    ([1, 2, 3], 1, 10, {2: 7, 3: 9}),
    ([1, 3], 1, 10, {2: 2, 3: 9}),
    ([1, 2], 1, 10, {}),
    ([1], 1, 10, {2: 2}),
    ([2, 1, 3], 1, 5, {2: 5, 3: 5}),
    ([3, 1], 1, 4, {3: 6}),
]

OUT_OF_SYNC_CASES = [  # isr, leader, leader LEO, follower LEOs, caught up at, now, lag max
    ([1, 2, 3], 1, 10, {2: 5, 3: 5}, {2: 9_000.0, 3: 1_000.0}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5, 3: 10}, {2: 9_000.0, 3: 1_000.0}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5}, {}, 10_000.0, 2_000.0),
    ([1, 2, 3], 1, 10, {2: 5, 3: 5}, {2: 8_000.0, 3: 7_999.0}, 10_000.0, 2_000.0),
    ([3, 2, 1], 1, 0, {}, {}, 50_000.0, 2_000.0),
]

JOIN_CASES = [(10, 10, 0), (9, 10, 0), (10, 8, 12), (12, 8, 12), (0, 0, 0), (5, 3, 4)]

EPOCH_TABLES = [
    ([(0, 0), (2, 5), (3, 9)], 12),
    ([(1, 4)], 6),
    ([], 0),
]


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


def _ids(values):
    return [_fresh(v) for v in values]


def _broker_truncation(entries: list[tuple[int, int]], leo: int, asked: int,
                       leader_epoch: int, leader_end: int) -> int:
    """Where the broker's own truncate_by_epoch leaves a follower's log end."""
    cache = LeaderEpochCache(None, lambda: leo)
    for epoch, start in entries:
        cache.assign(epoch, start)

    class Follower:  # what truncate_by_epoch reads and calls
        log = SimpleNamespace(leader_epochs=cache)
        log_end_offset = leo
        cut = leo

        def truncate_to(self, offset: int) -> None:
            self.cut = min(self.cut, offset)

    follower = Follower()
    truncate_by_epoch(follower, asked, leader_epoch, leader_end)  # type: ignore[arg-type]
    return follower.cut


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


def check_truncation_cases(learner: ModuleType) -> None:
    """truncation_offset against the broker's truncate_by_epoch, answer by answer."""
    for entries, leo in FOLLOWER_TABLES:
        asked = entries[-1][0] if entries else -1
        for leader_epoch, leader_end in _leader_answers(entries, leo, asked):
            expected = _broker_truncation(entries, leo, asked, leader_epoch, leader_end)
            got = learner.truncation_offset(list(entries), leo, _fresh(asked),
                                            _fresh(leader_epoch), _fresh(leader_end))
            if got != expected:
                raise _describe(f"truncation_offset(epochs={entries}, log_end_offset={leo}, "
                                f"asked_epoch={asked}, leader_epoch={leader_epoch}, "
                                f"leader_end_offset={leader_end})", expected, got)


def _describe(call: str, expected: object, got: object) -> ExerciseFailed:
    return ExerciseFailed(call, [f"expected: {expected!r}", f"got:      {got!r}"])


def check_high_watermark(learner: ModuleType, _workdir: Path) -> None:
    for isr, leader, leo, followers in HW_CASES + HW_MORE_CASES:
        expected = broker_rules.high_watermark(isr, leader, leo, followers)
        got = learner.high_watermark(_ids(isr), _fresh(leader), leo, dict(followers))
        if got != expected:
            raise _describe(f"high_watermark(isr={isr}, leader_id={leader}, "
                            f"leader_end_offset={leo}, follower_end_offsets={followers})",
                            expected, got)


def check_isr_rules(learner: ModuleType, _workdir: Path) -> None:
    for isr, leader, leo, ends, caught, now, lag in OUT_OF_SYNC_CASES + OUT_OF_SYNC_MORE_CASES:
        expected = broker_rules.out_of_sync_replicas(isr, leader, leo, ends, caught, now, lag)
        got = learner.out_of_sync_replicas(_ids(isr), _fresh(leader), leo, dict(ends),
                                           dict(caught), now, lag)
        if list(got) != expected:
            raise _describe(f"out_of_sync_replicas(isr={isr}, leader_id={leader}, "
                            f"leader_end_offset={leo}, follower_end_offsets={ends}, "
                            f"caught_up_ms={caught}, now={now}, lag_max_ms={lag})",
                            expected, list(got))
    for follower_leo, hw, epoch_start in JOIN_CASES:
        expected = broker_rules.may_join_isr(follower_leo, hw, epoch_start)
        got = learner.may_join_isr(follower_leo, hw, epoch_start)
        if bool(got) != expected:
            raise _describe(f"may_join_isr(follower_end_offset={follower_leo}, "
                            f"high_watermark={hw}, leader_epoch_start_offset={epoch_start})",
                            expected, got)


def check_truncation_by_epoch(learner: ModuleType, workdir: Path) -> None:
    for entries, leo in EPOCH_TABLES:
        cache = LeaderEpochCache(None, lambda leo=leo: leo)
        for epoch, start in entries:
            cache.assign(epoch, start)
        for asked in range(-1, 6):
            expected = tuple(cache.end_offset_for(asked))
            got = tuple(learner.end_offset_for_epoch(list(entries), leo, asked))
            if got != expected:
                raise _describe(f"end_offset_for_epoch(epochs={entries}, log_end_offset={leo}, "
                                f"epoch={asked})", expected, got)
    for entries, leo in EPOCH_MORE_TABLES:
        cache = LeaderEpochCache(None, lambda leo=leo: leo)
        for epoch, start in entries:
            cache.assign(epoch, start)
        for asked in range(entries[1][0] - 1, entries[-1][0] + 2):  # fresh ints past 256
            expected = tuple(cache.end_offset_for(asked))
            got = tuple(learner.end_offset_for_epoch(list(entries), leo, asked))
            if got != expected:
                raise _describe(f"end_offset_for_epoch(epochs={entries}, log_end_offset={leo}, "
                                f"epoch={asked})", expected, got)
    check_truncation_cases(learner)
    kip101.lost_acknowledged_write(learner)
    kip101.diverged_logs(learner)


STAGE = Stage(7, "Replication rules", "stage7_replication", "stages/stage7_cluster/README.md", (
    Exercise(1, "high watermark",
             "the HW as the lowest log end offset over the ISR",
             ("high_watermark",), check_high_watermark,
             hints=("Read the chapter's section on the high watermark (replication rule 1).",
                    "Every ISR member's LEO counts, the leader's included; a follower the "
                    "leader has not heard from holds the HW at 0.")),
    Exercise(2, "ISR shrink and join",
             "which followers leave the ISR and when one may join",
             ("out_of_sync_replicas", "may_join_isr"), check_isr_rules,
             hints=("Read the chapter's section on the ISR (replication rules 2 and 5).",
                    "Lag is time since the follower was last at the leader's LEO, not a "
                    "count of records; joining needs the HW and the current epoch's start.")),
    Exercise(3, "truncation by leader epoch",
             "answer OffsetsForLeaderEpoch and truncate by it: KIP-101's scenarios hold",
             ("end_offset_for_epoch", "truncation_offset"), check_truncation_by_epoch,
             hints=("Read the chapter's section on leader epochs (replication rule 4).",
                    "Never cut at your own HW; when the leader answers an older epoch, your "
                    "own end of that epoch may be lower than the leader's.")),
), mutants=(
    Mutant("hw-from-the-leaders-leo-alone", 1, "    return min(ends)\n",
           "    return leader_end_offset\n"),
    Mutant("isr-lag-boundary", 2, "if now - caught_up_ms.get(replica, 0.0) > lag_max_ms:",
           "if now - caught_up_ms.get(replica, 0.0) >= lag_max_ms:"),
    Mutant("join-ignores-the-epoch-start", 2,
           "    return (follower_end_offset >= high_watermark\n"
           "            and follower_end_offset >= leader_epoch_start_offset)",
           "    return follower_end_offset >= high_watermark"),
    Mutant("epoch-end-is-always-the-log-end", 3, "    if epoch == epochs[-1][0]:",
           "    if epoch <= epochs[-1][0]:"),
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
))
