"""The wake-up probe under the latency figures: it samples while its block runs, stops
when the block ends (or at its time limit) and turns overruns into figures in ms."""

from __future__ import annotations

import time

from benchmarks.suite import wakeup


def test_the_probe_samples_only_while_its_block_runs():
    started = time.monotonic()
    with wakeup.wakeups() as late:
        time.sleep(0.5)
        assert late == []  # filled when the block ends
    assert time.monotonic() - started < 30
    # ~1 ms a sleep plus a spawned interpreter's start-up: some, never more than 500.
    assert 100 < len(late) <= 500  # sampling began before the block
    assert min(late) > -50  # an overrun, never a sleep cut short (µs; clock rounding aside)


def test_the_time_limit_ends_a_probe_whose_block_outlives_it():
    with wakeup.wakeups(limit=0.2) as late:
        time.sleep(1.0)
    assert 0 < len(late) <= 200


def test_figures_are_percentiles_in_ms():
    found = wakeup.figures("idle machine", [float(us) for us in range(1, 2001)])
    assert [f.name.rsplit(" ", 1)[1] for f in found] == ["p50", "p99", "p99.9", "max"]
    assert [round(f.value, 3) for f in found] == [1.0, 1.98, 1.998, 2.0]
    assert all(f.unit == "ms" and f.scenario == "latency" for f in found)
    assert "no sample" in wakeup.figures("idle machine", [])[0].name
