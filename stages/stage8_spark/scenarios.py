"""Two acts for each pipeline: a stream of on-time events, then newer events with late ones.

After act one the query's watermark trails the newest event time by the
pipeline's delay. Act two brings newer events and, mixed in, events from long
before the watermark (dropped) and from just behind the newest time but still
inside the watermark's tolerance (counted). ``play`` produces each act, runs
the pipeline over it with ``availableNow`` from the same checkpoint, and keeps
the end offsets, so the reference can split the topic exactly as Spark did.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from stages.stage8_spark import events, pipelines, reference
from stages.stage8_spark.events import Event, EventGenerator
from stages.stage8_spark.pipelines import PIPELINES, Pipeline, RunResult, run_available


@dataclass(frozen=True)
class Scenario:
    """The events of each act in the order they are produced; ``late``: act two's late ones."""

    acts: tuple[list[Event], ...]
    late: tuple[Event, ...] = ()


def _views(gen: EventGenerator, user: str, seconds: float, url: str) -> Event:
    return gen.event(events.PAGE_VIEWS, user, seconds, user=user, url=url, referrer="ad")


def product_views(gen: EventGenerator) -> Scenario:
    """Ten minutes of traffic; then five more, with views from minutes 1-3 and 8 arriving late."""
    first = gen.page_views(0, 10)
    newer = gen.page_views(10, 5)
    too_late = [_views(gen, "user-90", 75.0, "/product/7"),
                _views(gen, "user-91", 130.5, "/product/3"),
                _views(gen, "user-92", 190.25, "/product/7"),
                _views(gen, "user-93", 200.0, "/cart")]
    tolerated = [_views(gen, "user-94", 8 * 60 + 31.5, "/product/12")]
    return Scenario((first, newer[:10] + too_late + tolerated + newer[10:]),
                    tuple(too_late + tolerated))


def _reading(gen: EventGenerator, sensor: str, seconds: float, temperature: float) -> Event:
    return gen.event(events.SENSOR_READINGS, sensor, seconds, sensor=sensor,
                      temperature=temperature, unit="C")


def sensor_averages(gen: EventGenerator) -> Scenario:
    """Ten minutes of three sensors; then four more, with late readings from 02:30 and 06:30."""
    first = gen.sensor_readings(0, 10)
    newer = gen.sensor_readings(10, 4)
    late = [_reading(gen, "sensor-1", 150.0, 35.5), _reading(gen, "sensor-2", 390.0, -4.0)]
    return Scenario((first, newer[:5] + late + newer[5:]), tuple(late))


def sessions(gen: EventGenerator) -> Scenario:
    """Bursts of clicks by four users; act two brings new bursts and three late clicks."""
    first = sorted(gen.clicks("user-01", 0, 6, pause=(10, 60))
                   + gen.clicks("user-02", 60, 3, pause=(20, 50))
                   + gen.clicks("user-03", 120, 8, pause=(5, 40))
                   + gen.clicks("user-01", 600, 4, pause=(10, 60)),
                   key=lambda e: e.time)
    newer = sorted(gen.clicks("user-01", 900, 3, pause=(10, 30))
                   + gen.clicks("user-02", 1200, 2, pause=(10, 30))
                   + gen.clicks("user-04", 1500, 2, pause=(10, 30)),
                   key=lambda e: e.time)
    late = (gen.clicks("user-04", 30, 1) + gen.clicks("user-02", 200, 1)
            + gen.clicks("user-03", 630, 1))
    return Scenario((first, newer[:2] + late + newer[2:]), tuple(late))


def fraud_alerts(gen: EventGenerator) -> Scenario:
    """Ten minutes of payments, then three more; every seventh is over 10,000."""
    return Scenario((gen.transactions(0, 10), gen.transactions(10, 3)))


SCENARIOS: dict[str, Callable[[EventGenerator], Scenario]] = {
    "product-views": product_views,
    "sensor-averages": sensor_averages,
    "sessions": sessions,
    "fraud-alerts": fraud_alerts,
}


@dataclass
class Play:
    """A pipeline run over a scenario: Spark's result per act and the offsets each act ended at."""

    pipeline: Pipeline
    scenario: Scenario
    start: reference.Offsets
    ends: list[reference.Offsets] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)
    #: Where the fraud-alerts topic ended before the play (the alerts written come after).
    alerts_start: reference.Offsets = field(default_factory=dict)

    def batches(self, bootstrap_servers: str) -> list[list[Any]]:
        """The topic's records, split as the runs read them."""
        return reference.read_batches(bootstrap_servers, self.pipeline.topic, self.start,
                                      self.ends)


def play(name: str, spark: Any, bootstrap_servers: str, checkpoint: Path, seed: int = 8,
         source_format: str = "simplekafka",
         after_act: Callable[[Play, int, RunResult], None] | None = None) -> Play:
    """Produce each act of ``name``'s scenario and run the pipeline after it (same checkpoint).

    The query starts at the topic's end offsets as they were before act one,
    so earlier events on the topic (a cluster that already ran this) do not count.
    """
    pipeline = PIPELINES[name]
    scenario = SCENARIOS[name](EventGenerator(seed))
    start = reference.end_offsets(bootstrap_servers, pipeline.topic)
    starting = {pipeline.topic: {str(p): offset for p, offset in start.items()}}
    result = Play(pipeline, scenario, start)
    if name == "fraud-alerts":
        result.alerts_start = reference.end_offsets(bootstrap_servers, events.FRAUD_ALERTS)
    for number, act in enumerate(scenario.acts, start=1):
        events.produce(bootstrap_servers, act)
        result.ends.append(reference.end_offsets(bootstrap_servers, pipeline.topic))
        run = run_available(pipeline, spark, bootstrap_servers, checkpoint, starting,
                            source_format)
        result.runs.append(run)
        if after_act is not None:
            after_act(result, number, run)
    return result



def _utc(moment: Any) -> Any:
    """A timestamp as PySpark collects it (naive, local time) made an aware UTC datetime."""
    return moment.astimezone(timezone.utc)


@dataclass
class Outcome:
    """A pipeline's final answer in a form both Spark's rows and the reference can take.

    ``result`` maps a group (a window, a sensor's window, a session, a
    transaction) to its value; ``dropped`` is the number of late rows.
    """

    result: dict
    dropped: int
    watermark: datetime | None = None


def spark_outcome(done: Play, bootstrap_servers: str) -> Outcome:
    """What Spark produced over all acts (update mode: the last value of each group wins)."""
    name = done.pipeline.name
    rows = [row for run in done.runs for row in run.rows]
    result: dict = {}
    if name == "product-views":
        for row in rows:
            result[_utc(row["window_start"])] = row["views"]
    elif name == "sensor-averages":
        for row in rows:
            result[(row["sensor"], _utc(row["window_start"]))] = (
                round(row["avg_temperature"], 6), row["readings"])
    elif name == "sessions":
        for row in rows:
            key = (row["user"], _utc(row["session_start"]), _utc(row["session_end"]))
            assert key not in result, f"session {key} emitted twice"
            result[key] = row["clicks"]
    else:
        start, end = done.alerts_start, reference.end_offsets(bootstrap_servers,
                                                               events.FRAUD_ALERTS)
        for record in reference.read_records(bootstrap_servers, events.FRAUD_ALERTS, start, end):
            alert = json.loads(record.value)
            assert alert["transaction_id"] not in result, f"{alert} written twice"
            assert record.key == alert["user"].encode(), record
            result[alert.pop("transaction_id")] = alert
    watermark = done.runs[-1].watermark
    return Outcome(result, sum(run.dropped_by_watermark for run in done.runs),
                   events.parse_event_time(watermark) if watermark else None)


def reference_outcome(done: Play, bootstrap_servers: str) -> Outcome:
    """The same answer computed in Python from the records on the topic."""
    batches = done.batches(bootstrap_servers)
    name = done.pipeline.name
    minute = timedelta(minutes=1)
    if name == "product-views":
        windows = reference.replay_windows(
            batches, delay=pipelines.PRODUCT_VIEWS_WATERMARK, size=minute,
            keep=lambda fields: fields["url"].startswith("/product/"))
        return Outcome({start: len(rows) for (_, start), rows in windows.groups.items()},
                       windows.dropped_rows, windows.watermarks[-1])
    if name == "sensor-averages":
        windows = reference.replay_windows(
            batches, delay=pipelines.SENSOR_WATERMARK, size=5 * minute, slide=minute,
            key=lambda fields: fields["sensor"])
        return Outcome(
            {key: (round(sum(r.fields["temperature"] for r in rows) / len(rows), 6), len(rows))
             for key, rows in windows.groups.items()},
            windows.dropped_rows, windows.watermarks[-1])
    if name == "sessions":
        sessions = reference.replay_sessions(batches, delay=pipelines.SESSION_WATERMARK,
                                             gap=pipelines.SESSION_GAP)
        return Outcome({(s.user, s.start, s.end): s.clicks for s in sessions.emitted},
                       sessions.dropped_rows, sessions.watermarks[-1])
    flagged = reference.flagged_transactions(batches)
    return Outcome({tx["transaction_id"]: {
        "user": tx["user"], "amount": tx["amount"], "currency": tx["currency"],
        "merchant": tx["merchant"], "event_time": tx["event_time"],
        "reason": f"amount over {events.FRAUD_THRESHOLD:,}"} for tx in flagged}, 0)
