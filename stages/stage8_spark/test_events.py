"""The event generator and the Python reference the pipeline tests compare Spark with."""

from __future__ import annotations

import json
from collections import namedtuple
from datetime import timedelta

import pytest

from stages.stage8_spark import events, reference, scenarios
from stages.stage8_spark.events import START, EventGenerator

Record = namedtuple("Record", "partition offset value")


def records(*pairs: tuple[float, dict], partition: int = 0) -> list[Record]:
    """Fake consumer records: (seconds after START, fields) each."""
    out = []
    for offset, (seconds, fields) in enumerate(pairs):
        moment = START + timedelta(seconds=seconds)
        value = json.dumps({**fields, "event_time": events.iso_millis(moment)}).encode()
        out.append(Record(partition, offset, value))
    return out


def test_the_same_seed_gives_the_same_events():
    first = EventGenerator(seed=3).page_views(0, 5)
    assert first == EventGenerator(seed=3).page_views(0, 5)
    assert first != EventGenerator(seed=4).page_views(0, 5)


def test_events_are_json_with_an_iso_event_time_that_spark_reads():
    view = EventGenerator().page_views(2, 1)[0]
    body = json.loads(view.value())
    assert set(body) == {"user", "url", "referrer", "event_time"}
    assert body["event_time"].endswith("Z") and len(body["event_time"]) == 24
    assert events.parse_event_time(body["event_time"]) == view.time
    assert START + timedelta(minutes=2) <= view.time < START + timedelta(minutes=3)


def test_page_views_include_product_pages_and_others():
    urls = [e.as_dict()["url"] for e in EventGenerator().page_views(0, 10)]
    products = [u for u in urls if u.startswith("/product/")]
    assert 0.25 < len(products) / len(urls) < 0.75


def test_sensor_readings_come_from_every_sensor_in_time_order():
    readings = EventGenerator().sensor_readings(0, 3, sensors=3, every_seconds=20)
    assert len(readings) == 3 * 9
    assert [e.time for e in readings] == sorted(e.time for e in readings)
    assert {e.key for e in readings} == {"sensor-1", "sensor-2", "sensor-3"}


def test_some_transactions_are_over_ten_thousand_and_the_rest_far_below():
    payments = EventGenerator().transactions(0, 10, per_minute=5, fraud_every=7)
    amounts = [e.as_dict()["amount"] for e in payments]
    large = [a for a in amounts if a > events.FRAUD_THRESHOLD]
    assert len(large) == 50 // 7
    assert all(a < 1_000 for a in amounts if a <= events.FRAUD_THRESHOLD)
    ids = [e.as_dict()["transaction_id"] for e in payments]
    assert len(set(ids)) == len(ids)


def test_late_moves_event_time_back_and_keeps_the_rest():
    click = EventGenerator().clicks("user-01", 600, 1)[0]
    [moved] = events.late([click], timedelta(minutes=9))
    assert moved.time == click.time - timedelta(minutes=9)
    assert moved.key == click.key and json.loads(moved.value())["user"] == "user-01"


def test_window_starts_follow_sparks_epoch_aligned_windows():
    moment = START + timedelta(minutes=3, seconds=10)
    minute, five = timedelta(minutes=1), timedelta(minutes=5)
    assert reference.window_starts(moment, minute, minute) == [START + timedelta(minutes=3)]
    assert reference.window_starts(moment, five, minute) == [
        START + timedelta(minutes=m) for m in (-1, 0, 1, 2, 3)]


def test_replayed_windows_drop_rows_whose_window_closed_before_they_came():
    # Batch 0 moves the watermark to 09:08:10 (newest 09:10:10 minus 2 minutes).
    batch0 = records((10, {}), (70, {}), (610, {}))
    # 09:00:30's window [09:00, 09:01) ended long before; 09:08:05's window ends at 09:09.
    batch1 = records((30, {}), (485, {}), partition=1)
    result = reference.replay_windows([batch0, batch1], delay=timedelta(minutes=2),
                                      size=timedelta(minutes=1))
    counts = {start.strftime("%H:%M"): len(rows) for (_, start), rows in result.groups.items()}
    assert counts == {"09:00": 1, "09:01": 1, "09:10": 1, "09:08": 1}
    assert result.dropped_rows == 1
    assert [w.strftime("%H:%M:%S") for w in result.watermarks] == ["09:08:10", "09:08:10"]


def test_sliding_windows_judge_each_window_and_count_like_partial_aggregation():
    batch0 = records((610, {"sensor": "a"}))
    late = records((30, {"sensor": "a"}), (40, {"sensor": "a"}), (450, {"sensor": "a"}))
    result = reference.replay_windows(
        [batch0, late], delay=timedelta(minutes=2), size=timedelta(minutes=5),
        slide=timedelta(minutes=1), key=lambda fields: fields["sensor"])
    # 09:00:30 and 09:00:40 share their five windows, all closed: five aggregated rows.
    # 09:07:30's windows end 09:08 (closed, the watermark is 09:08:10) to 09:12 (open).
    assert result.dropped_rows == 5 + 1
    kept = sorted(start.strftime("%H:%M") for (_, start), rows in result.groups.items()
                  if any(r.time.minute == 7 for r in rows))
    assert kept == ["09:04", "09:05", "09:06", "09:07"]


def test_replayed_sessions_close_at_the_watermark_and_drop_late_clicks():
    batch0 = records((10, {"user": "a"}), (70, {"user": "a"}), (130, {"user": "b"}),
                     (610, {"user": "a"}))
    batch1 = records((30, {"user": "a"}), (450, {"user": "c"}), (485, {"user": "c"}),
                     (1200, {"user": "b"}))
    result = reference.replay_sessions([batch0, batch1], delay=timedelta(minutes=2),
                                       gap=timedelta(minutes=5))
    emitted = {(s.user, s.start.strftime("%H:%M:%S"), s.clicks) for s in result.emitted}
    assert emitted == {("a", "09:00:10", 2), ("b", "09:02:10", 1), ("c", "09:07:30", 2),
                       ("a", "09:10:10", 1)}
    assert [(s.user, s.clicks) for s in result.still_open] == [("b", 1)]
    assert result.dropped == [(0, "a", START + timedelta(seconds=30))]


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_each_scenario_has_two_acts_and_late_events_only_in_the_second(name):
    scenario = scenarios.SCENARIOS[name](EventGenerator())
    first, second = scenario.acts
    newest_first = max(e.time for e in first)
    assert all(e.time < newest_first for e in scenario.late)
    assert all(e in second for e in scenario.late)
    topic = {e.topic for act in scenario.acts for e in act}
    assert len(topic) == 1
