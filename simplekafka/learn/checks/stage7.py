"""Stage 7 checks: the learner's replication rules against the broker's, then KIP-101 replayed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from simplekafka.broker import isr as broker_rules
from simplekafka.learn import kip101
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
