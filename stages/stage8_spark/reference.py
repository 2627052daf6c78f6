"""The pipelines' aggregates computed again in plain Python, straight from the topic.

This is the tests' oracle and the chapter's explanation of what Spark does with
late data. Records are read with our Consumer and split into the micro-batches
Spark saw (each ``availableNow`` run read up to the end offsets of its time);
then Spark's rules are applied batch by batch:

- the watermark used by batch ``k`` is the largest event time of batches
  ``0..k-1`` minus the delay (no watermark in batch 0);
- a row whose window ends at or before the watermark is dropped as late (for a
  sliding window, each of its windows is judged on its own; for a session
  window, the row's own session ``[t, t + gap)``);
- after a batch, a window or session whose end is at or before the new
  watermark is final: append mode emits it then and forgets it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from stages.stage8_spark import events

#: Before the first batch there is no watermark: nothing is late.
NO_WATERMARK = datetime(1970, 1, 1, tzinfo=timezone.utc)
Offsets = dict[int, int]


def end_offsets(bootstrap_servers: str, topic: str) -> Offsets:
    """Each partition's end offset now (the offset its next record will get)."""
    from simplekafka.consumer import Consumer

    with Consumer(bootstrap_servers=bootstrap_servers) as consumer:
        partitions = [(topic, p) for p in consumer.partitions_for(topic)]
        return {tp.partition: end for tp, end in consumer.end_offsets(partitions).items()}


def read_records(bootstrap_servers: str, topic: str, start: Offsets, end: Offsets,
                 timeout: float = 60.0) -> list[Any]:
    """Every record of ``topic`` from ``start`` up to ``end`` (per partition), in offset order."""
    import time

    from simplekafka.consumer import Consumer

    wanted = {p: (start.get(p, 0), stop) for p, stop in end.items() if stop > start.get(p, 0)}
    if not wanted:
        return []
    records: list[Any] = []
    with Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([(topic, p) for p in wanted])
        for partition, (first, _) in wanted.items():
            consumer.seek((topic, partition), first)
        deadline = time.monotonic() + timeout
        while any(consumer.position((topic, p)) < stop for p, (_, stop) in wanted.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topic} up to {end} within {timeout} s")
            records.extend(r for r in consumer.poll(500) if r.offset < wanted[r.partition][1])
    return sorted(records, key=lambda r: (r.partition, r.offset))


def read_batches(bootstrap_servers: str, topic: str, start: Offsets,
                 ends: Sequence[Offsets]) -> list[list[Any]]:
    """The records of each run: run ``k`` read from the end of run ``k-1`` to ``ends[k]``."""
    batches, previous = [], start
    for end in ends:
        batches.append(read_records(bootstrap_servers, topic, previous, end))
        previous = end
    return batches


@dataclass(frozen=True)
class Row:
    """One parsed event and the partition its record came from."""

    partition: int
    time: datetime
    fields: dict

    @classmethod
    def of(cls, record: Any) -> Row:
        fields = json.loads(record.value)
        return cls(record.partition, events.parse_event_time(fields["event_time"]), fields)


def window_starts(moment: datetime, size: timedelta, slide: timedelta) -> list[datetime]:
    """Starts of the windows (aligned on the epoch, as Spark's ``window``) holding ``moment``."""
    since_epoch = moment - NO_WATERMARK
    last = NO_WATERMARK + (since_epoch // slide) * slide
    starts = []
    start = last
    while start + size > moment:
        starts.append(start)
        start -= slide
    return sorted(starts)


@dataclass
class Windowed:
    """A window aggregation replayed: the rows kept per (key, window start), and those dropped."""

    groups: dict[tuple, list[Row]] = field(default_factory=lambda: defaultdict(list))
    #: (partition, key, window start) of every row-and-window pair dropped as late.
    dropped: list[tuple] = field(default_factory=list)
    watermarks: list[datetime] = field(default_factory=list)

    @property
    def dropped_rows(self) -> int:
        """What Spark reports as numRowsDroppedByWatermark: rows after partial aggregation.

        Each input partition aggregates its rows by group before the stateful
        operator sees them, so late rows of one group in one partition count once.
        """
        return len(set(self.dropped))


def replay_windows(batches: Iterable[Iterable[Any]], *, delay: timedelta, size: timedelta,
                   slide: timedelta | None = None,
                   key: Callable[[dict], Any] = lambda fields: None,
                   keep: Callable[[dict], bool] = lambda fields: True) -> Windowed:
    """``groupBy(key, window(event_time, size, slide))`` behind a watermark, batch by batch."""
    slide = slide or size
    result = Windowed()
    watermark = NO_WATERMARK
    for batch in batches:
        newest = None
        for row in map(Row.of, batch):
            if not keep(row.fields):
                continue
            newest = row.time if newest is None else max(newest, row.time)
            group = key(row.fields)
            for start in window_starts(row.time, size, slide):
                if start + size <= watermark:
                    result.dropped.append((row.partition, group, start))
                else:
                    result.groups[(group, start)].append(row)
        if newest is not None:
            watermark = max(watermark, newest - delay)
        result.watermarks.append(watermark)
    return result


@dataclass
class Session:
    user: str
    start: datetime
    end: datetime
    clicks: int


@dataclass
class Sessions:
    """A session-window aggregation replayed in append mode."""

    emitted: list[Session] = field(default_factory=list)
    still_open: list[Session] = field(default_factory=list)
    dropped: list[tuple] = field(default_factory=list)
    watermarks: list[datetime] = field(default_factory=list)

    @property
    def dropped_rows(self) -> int:
        return len(set(self.dropped))


def replay_sessions(batches: Iterable[Iterable[Any]], *, delay: timedelta,
                    gap: timedelta) -> Sessions:
    """``groupBy(user, session_window(event_time, gap))`` behind a watermark, append mode."""
    result = Sessions()
    open_sessions: dict[str, list[Session]] = defaultdict(list)
    watermark = NO_WATERMARK
    for batch in batches:
        newest = None
        for row in map(Row.of, batch):
            newest = row.time if newest is None else max(newest, row.time)
            user = row.fields["user"]
            if row.time + gap <= watermark:
                result.dropped.append((row.partition, user, row.time))
                continue
            open_sessions[user].append(Session(user, row.time, row.time + gap, 1))
        for user, sessions in open_sessions.items():
            open_sessions[user] = _merge(sessions)
        if newest is not None:
            watermark = max(watermark, newest - delay)
        result.watermarks.append(watermark)
        for user, sessions in open_sessions.items():
            result.emitted.extend(s for s in sessions if s.end <= watermark)
            open_sessions[user] = [s for s in sessions if s.end > watermark]
    result.still_open = [s for sessions in open_sessions.values() for s in sessions]
    return result


def _merge(sessions: list[Session]) -> list[Session]:
    """Overlapping sessions of one user become one (the union of their clicks)."""
    merged: list[Session] = []
    for session in sorted(sessions, key=lambda s: s.start):
        if merged and session.start < merged[-1].end:
            last = merged[-1]
            last.end = max(last.end, session.end)
            last.clicks += session.clicks
        else:
            merged.append(Session(session.user, session.start, session.end, session.clicks))
    return merged


def flagged_transactions(batches: Iterable[Iterable[Any]]) -> list[dict]:
    """The payments the fraud pipeline must flag: amount over the threshold, in any batch."""
    return [row.fields for batch in batches for row in map(Row.of, batch)
            if row.fields["amount"] > events.FRAUD_THRESHOLD]
