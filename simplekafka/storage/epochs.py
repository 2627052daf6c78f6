"""The leader epoch cache: at which offset each leader epoch began.

A new leader records ``(epoch, log end offset)`` before it appends; every batch
it writes carries the epoch. A follower that comes back asks the leader "where
did my latest epoch end?" (OffsetForLeaderEpoch) and truncates there, instead
of trusting its own high watermark, which is how Kafka stopped losing and
diverging data (KIP-101). The cache is persisted to ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from simplekafka.storage.checkpoints import read_epoch_checkpoint, write_epoch_checkpoint
from simplekafka.storage.errors import CheckpointError

logger = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
CHECKPOINT_NAME = "leader-epoch-checkpoint"


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def end_offset_for_epoch(epochs: Sequence[tuple[int, int]], log_end_offset: int,
                         epoch: int) -> tuple[int, int]:
    """``(epoch, end offset)`` as OffsetForLeaderEpoch answers for ``epoch``.

    ``epochs`` are (epoch, start offset) entries, oldest first. For the latest
    epoch the end is ``log_end_offset``. For an older epoch it is the start
    offset of the first newer epoch, paired with the largest epoch we know that
    is <= the one asked for (the asked epoch itself when none is). An epoch
    newer than all we know, or -1, or an empty cache gives (-1, -1). A plain
    function of the entries (the cache calls it) so that it can be checked, and
    replaced by a learner's (``simplekafka learn``), on its own.
    """
    if epoch == UNDEFINED_EPOCH or not epochs:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    if epoch == epochs[-1][0]:
        return epoch, log_end_offset
    higher = next((entry for entry in epochs if entry[0] > epoch), None)
    if higher is None:
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET
    floor = [entry for entry in epochs if entry[0] <= epoch]
    return (floor[-1][0] if floor else epoch), higher[1]


class LeaderEpochCache:
    """Ordered ``epoch -> start offset`` entries, both strictly increasing.

    ``log_end_offset`` is a callable because the answer for the latest epoch is
    "the log end", which moves with every append.
    """

    def __init__(self, path: Path | None, log_end_offset: Callable[[], int]):
        self._path = path
        self._log_end_offset = log_end_offset
        self._entries: list[EpochEntry] = []
        self._unsynced = False  # the file is behind the entries, or not fsynced
        if path is not None:
            try:
                self._entries = [EpochEntry(*entry) for entry in read_epoch_checkpoint(path)]
            except CheckpointError as exc:
                # Like a missing file: followers fall back to truncating at the high watermark.
                logger.warning("ignoring unreadable leader epoch checkpoint: %s", exc)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or -1 when no leader has written anything yet."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        An entry that would break monotonicity wins over older entries with an
        epoch or a start offset at least as large, which are dropped (they came
        from a leader whose log we are being told to overwrite).
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch and start offset must be >= 0, got ({epoch}, {start_offset})")
        latest = self.latest_entry
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            return False
        self._entries = [
            entry
            for entry in self._entries
            if entry.epoch < epoch and entry.start_offset < start_offset
        ]
        self._entries.append(EpochEntry(epoch, start_offset))
        # Not fsynced here (Kafka 3.7 does the same, KAFKA-15046): a new leader would
        # otherwise pay two fsyncs per partition; the log's next flush makes it durable,
        # and recovery re-learns epochs from the batches it re-reads.
        self._flush(durable=False)
        return True

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` as OffsetForLeaderEpoch answers for ``epoch``
        (:func:`end_offset_for_epoch` over this cache's entries and log end)."""
        return end_offset_for_epoch(list(self._entries), self._log_end_offset(), epoch)

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch the record at ``offset`` was written in (-1 if before every entry)."""
        found = UNDEFINED_EPOCH
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (the log was truncated there)."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            # Written by the log's next flush, not now (Kafka 3.7's
            # truncateFromEndAsyncFlush, KAFKA-15046): a lost truncation only brings back
            # entries past the log end, which the next load truncates again. Every log
            # opened after a crash may truncate here, and a write, a rename and two fsyncs
            # per replica made a restart at thousands of replicas slow.
            self._unsynced = True

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop older epochs, clamp the one covering it."""
        before = [entry for entry in self._entries if entry.start_offset <= start_offset]
        if not before or (len(before) == 1 and before[0].start_offset == start_offset):
            return
        after = self._entries[len(before) :]
        self._entries = [EpochEntry(before[-1].epoch, start_offset), *after]
        self._unsynced = True  # as truncate_from_end: written at the next flush

    def clear(self) -> None:
        self._entries = []
        self._flush()

    def _flush(self, durable: bool = True) -> None:
        if self._path is not None:
            write_epoch_checkpoint(self._path, self._entries, durable)
            self._unsynced = not durable

    def sync(self) -> None:
        """Write and fsync what changed since (called by the log's flush and close)."""
        if self._unsynced:
            self._flush()
