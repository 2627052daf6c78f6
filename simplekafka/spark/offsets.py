"""Offsets as Spark's checkpoint keeps them, and how a micro-batch's ranges are planned.

An offset is ``{"topic": {"0": 23, "1": 42}}``: for each partition the next
offset to read, the same JSON as Spark's Kafka source writes into
``checkpoint/offsets/N``. The checkpoint is the source of truth: a restarted
query resumes at the last committed batch's end, and a replayed batch re-reads
exactly its recorded range (docs/design-notes.md, "Spark: offsets in the
checkpoint").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PartitionOffsets = dict[tuple[str, int], int]


def to_json_dict(offsets: PartitionOffsets) -> dict[str, dict[str, int]]:
    """``{(topic, p): o}`` -> ``{"topic": {"p": o}}`` (what Spark stores)."""
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def from_json_dict(data: dict) -> PartitionOffsets:
    """The inverse of :func:`to_json_dict`."""
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition: one task's work (``read()`` input)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def rate_limit(start: PartitionOffsets, end: PartitionOffsets, limit: int) -> PartitionOffsets:
    """Cap the batch at about ``limit`` records, shared by backlog as Spark's Kafka source does.

    Each partition gets ``limit * backlog / total``; a share under one record
    is rounded up so no partition starves, others down (so the total may pass
    ``limit`` by at most the number of partitions).
    """
    sizes = {tp: end[tp] - start.get(tp, end[tp]) for tp in end}
    total = sum(s for s in sizes.values() if s > 0)
    if total <= limit:
        return dict(end)
    capped = {}
    for tp, until in end.items():
        begin = start.get(tp)
        size = sizes[tp]
        if begin is None or size <= 0:
            capped[tp] = until
            continue
        share = limit * (size / total)
        share_count = math.ceil(share) if share < 1 else math.floor(share)
        capped[tp] = min(until, begin + share_count)
    return capped


def next_batch_end(start: PartitionOffsets, latest: PartitionOffsets,
                   earliest: PartitionOffsets, max_rows: int | None) -> PartitionOffsets:
    """Where the next micro-batch ends: ``latestOffset``'s arithmetic, once the lookups are done.

    ``start`` is where the batch begins (the last batch's end), ``latest`` each
    partition's high watermark now, ``earliest`` the log start of (at least)
    every partition ``start`` does not know yet: those are new, and are read
    from their start. No partition ends before it begins; ``max_rows``
    (``maxOffsetsPerTrigger``) caps the batch by :func:`rate_limit`; a
    partition gone from ``latest`` keeps its offset.
    """
    begin = dict(start)
    for tp in latest:
        if tp not in begin:
            begin[tp] = earliest[tp]
    end = {tp: max(o, begin[tp]) for tp, o in latest.items()}
    if max_rows is not None:
        end = rate_limit(begin, end, max_rows)
    for tp, offset in begin.items():
        end.setdefault(tp, offset)
    return end


def plan_ranges(
    start: PartitionOffsets, end: PartitionOffsets, min_partitions: int | None
) -> list[OffsetRange]:
    """One range per partition with records, split further when ``minPartitions`` asks.

    A split gives a partition's range several tasks in proportion to its size
    (Spark's ``KafkaOffsetRangeCalculator``); the order is stable, so a
    replayed batch plans the very same ranges.
    """
    ranges = [OffsetRange(t, p, start.get((t, p), until), until)
              for (t, p), until in sorted(end.items())]
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    split = []
    for r in ranges:
        parts = max(round(r.size / total * min_partitions), 1)
        remaining = r.size
        begin = r.start
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            stop = min(begin + this, r.end)
            if stop > begin:
                split.append(OffsetRange(r.topic, r.partition, begin, stop))
            begin = stop
    return split
