"""The four example pipelines on real Spark and real brokers, checked against Python.

Each pipeline plays its scenario (act one on time, act two newer events and
late ones, each act followed by an ``availableNow`` run from the same
checkpoint); its output must equal the same aggregate computed in Python from
the records on the topic (``reference``), including which late rows the
watermark dropped, and Spark's own count of them.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from stages.stage8_spark import events, reference, scenarios
from stages.stage8_spark.events import START

# Each test plays two acts; on a loaded two-core machine that can take minutes.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def bootstrap(cluster) -> str:
    """The module's one-broker cluster, with the pipelines' topics (two partitions each)."""
    events.create_topics(cluster.bootstrap_servers, partitions=2)
    return cluster.bootstrap_servers


def played(name: str, spark, bootstrap: str, tmp_path) -> tuple:
    done = scenarios.play(name, spark, bootstrap, tmp_path / "checkpoint")
    got = scenarios.spark_outcome(done, bootstrap)
    expected = scenarios.reference_outcome(done, bootstrap)
    assert got.result == expected.result
    assert got.dropped == expected.dropped
    return done, got, expected


def test_product_views_per_minute_drop_views_behind_the_watermark(spark, bootstrap, tmp_path):
    done, got, expected = played("product-views", spark, bootstrap, tmp_path)
    # Act two's views from 09:01-09:03 came after the watermark passed 09:07: dropped
    # (the /cart one was never counted); the 09:08:31 view is behind the newest time
    # but its window ends after the watermark: counted.
    assert expected.dropped == 3
    windows = reference.replay_windows(
        done.batches(bootstrap), delay=timedelta(minutes=2), size=timedelta(minutes=1),
        keep=lambda fields: fields["url"].startswith("/product/"))
    assert {(start - START) // timedelta(minutes=1) for _, _, start in windows.dropped} == {
        1, 2, 3}
    tolerated = START + timedelta(minutes=8)
    assert any(row.fields["user"] == "user-94" for row in windows.groups[(None, tolerated)])
    assert got.result[tolerated] == len(windows.groups[(None, tolerated)])
    assert len(got.result) == 15  # minutes 09:00 to 09:14
    # Spark's watermark after the last batch is the newest view minus two minutes.
    newest = max(e.time for act in done.scenario.acts for e in act
                 if e.as_dict()["url"].startswith("/product/"))
    assert got.watermark == newest - timedelta(minutes=2) == expected.watermark


def test_sensor_moving_averages_slide_every_minute(spark, bootstrap, tmp_path):
    _done, got, expected = played("sensor-averages", spark, bootstrap, tmp_path)
    # Act one ends near 09:09:42, so the watermark is near 09:07:42. sensor-1's 09:02:30
    # reading: all five of its windows had closed. sensor-2's 09:06:30 reading: only
    # its window ending 09:07 had closed, so it still moves four averages.
    assert expected.dropped == 5 + 1
    assert {sensor for sensor, _ in got.result} == {"sensor-1", "sensor-2", "sensor-3"}
    start = START + timedelta(minutes=4)
    averaged, readings = got.result[("sensor-2", start)]
    assert readings == 15 + 1  # three readings a minute for five minutes, and the late one
    assert averaged == expected.result[("sensor-2", start)][0]


def test_sessions_close_after_five_minutes_without_a_click(spark, bootstrap, tmp_path):
    _done, got, expected = played("sessions", spark, bootstrap, tmp_path)
    # user-04's click at 09:00:30 and user-02's at 09:03:20 came after their sessions
    # could have closed: dropped; user-03's 09:10:30 click was still in time.
    assert expected.dropped == 2
    users = {user for user, _, _ in got.result}
    assert {"user-01", "user-02", "user-03"} <= users
    for (_, start, end), clicks in got.result.items():
        assert end - start >= timedelta(minutes=5) and clicks >= 1
    # Append mode: only sessions the watermark has closed are out; the rest wait.
    assert all(end <= got.watermark for _, _, end in got.result)


def test_fraud_alerts_are_written_to_their_topic_once_each(spark, bootstrap, tmp_path):
    done, got, _expected = played("fraud-alerts", spark, bootstrap, tmp_path)
    produced = [json.loads(e.value()) for act in done.scenario.acts for e in act]
    over = [tx for tx in produced if tx["amount"] > events.FRAUD_THRESHOLD]
    assert len(over) == (10 + 3) * 5 // 7 and len(produced) == (10 + 3) * 5
    assert sorted(got.result) == sorted(tx["transaction_id"] for tx in over)
    for tx in over:
        alert = got.result[tx["transaction_id"]]
        assert alert["amount"] == tx["amount"] and alert["event_time"] == tx["event_time"]
