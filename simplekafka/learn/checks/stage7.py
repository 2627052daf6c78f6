"""Stage 7 checks: the learner's replication rules against the broker's, then KIP-101 replayed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from simplekafka.broker import isr as broker_rules
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


def _describe(call: str, expected: object, got: object) -> ExerciseFailed:
    return ExerciseFailed(call, [f"expected: {expected!r}", f"got:      {got!r}"])


def check_high_watermark(learner: ModuleType, _workdir: Path) -> None:
    for isr, leader, leo, followers in HW_CASES:
        expected = broker_rules.high_watermark(isr, leader, leo, followers)
        got = learner.high_watermark(list(isr), leader, leo, dict(followers))
        if got != expected:
            raise _describe(f"high_watermark(isr={isr}, leader_id={leader}, "
                            f"leader_end_offset={leo}, follower_end_offsets={followers})",
                            expected, got)


def check_isr_rules(learner: ModuleType, _workdir: Path) -> None:
    for isr, leader, leo, ends, caught, now, lag in OUT_OF_SYNC_CASES:
        expected = broker_rules.out_of_sync_replicas(isr, leader, leo, ends, caught, now, lag)
        got = learner.out_of_sync_replicas(list(isr), leader, leo, dict(ends), dict(caught),
                                           now, lag)
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
    Mutant("follower-never-truncates", 3, "    return min(cut, log_end_offset)",
           "    return log_end_offset"),
))
