"""The lead table of ``simplekafka bench latency``: Python clients, Redis beside us.

Real processes throughout: LocalCluster brokers (one, and three with RF 3),
Debian's redis-server, and a producer process and a consumer process per
system (confluent-kafka, redis-py). Figures are never asserted; what is: each
system's row is printed first, before the figures' table, its numbers parse,
the ratios and the load average are there, and the pacers sleep. That the
command runs it first, before the C tool's table, is asserted by the whole
suite's tiny run (tests/test_bench.py).
"""

from __future__ import annotations

import os
import re

import pytest

SYSTEMS = ("Redis Streams (redis-py)", "SimpleKafka, 1 broker, acks=1",
           "SimpleKafka, 3 brokers RF 3, acks=all")


def rows(printed: str) -> dict[str, list[float]]:
    """Each system's numbers from the printed lead table (they must parse)."""
    found = {}
    for system in SYSTEMS:
        row = re.search(rf"^\| {re.escape(system)} \|(.*)\|\s*$", printed, re.MULTILINE)
        assert row, f"no row for {system}:\n{printed}"
        found[system] = [float(cell) for cell in row.group(1).split("|")]
    return found


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_lead_table_runs_python_clients_against_redis_in_tiny_mode(tmp_path, capsys):
    """Real brokers (one; three with RF 3), Debian's redis-server, a producer process and a
    consumer process per system; what ``simplekafka bench latency`` prints first."""
    from benchmarks.suite import latency_clients, print_table
    from benchmarks.suite.core import SIZES, Context, Run, load_average

    assert latency_clients.redis_missing() is None, latency_clients.redis_missing()
    ctx = Context(sizes=SIZES["tiny"], mode="tiny", out_dir=tmp_path)
    record = Run(mode="tiny", scenarios=["latency"], started=0.0, load_before=load_average())
    try:
        record.figures, record.curves = latency_clients.clients(ctx)
    finally:
        ctx.close()
    record.tables, record.notes, record.load_after = ctx.tables, ctx.notes, load_average()
    print_table(record)
    printed = capsys.readouterr().out
    assert printed.index("Python clients, two processes") < printed.index(
        "simplekafka bench (tiny)")  # the lead table comes before the figures' table
    for system, (p50, p99, p999, top, ratio) in rows(printed).items():
        assert 0 < p50 <= p99 <= p999 <= top and ratio > 0, system
    assert re.search(r"RF 3 acks=all / 1 broker at p99: [\d.]+", printed)
    assert re.search(r"load average [\d.]+ at the start, [\d.]+ at the end", printed)
    assert "pacing by sleeping" in printed and f"{os.cpu_count()} cores" in printed
    names = [figure.name for figure in record.figures]
    assert names[0] == "Python clients, two processes: Redis Streams (redis-py) p50"
    for ratio in ("1 broker / Redis p99", "RF 3 / Redis p99", "RF 3 / 1 broker p99"):
        assert f"Python clients, two processes: {ratio}" in names
    # Sleeping pacers: no producer process near a whole core (a spinning one is at 100 %).
    shares = [f.value for f in record.figures if f.name.endswith("producer process CPU")]
    assert len(shares) == 3 and all(share < 90 for share in shares), shares
    assert (tmp_path / "latency_clients.md").read_text() == ctx.tables[0]


def test_the_pacer_sends_each_millisecond_what_fell_due_and_sleeps_between(monkeypatch):
    """Both systems' producers pace with ``ticks``: a group per millisecond, never a spin."""
    from benchmarks.suite import latency_clients

    now = [0.0]
    slept = []
    reads = [0]

    def perf_counter() -> float:
        reads[0] += 1
        now[0] += 1e-6
        return now[0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds + 80e-6  # Linux overshoots a little

    monkeypatch.setattr(latency_clients.time, "perf_counter", perf_counter)
    monkeypatch.setattr(latency_clients.time, "sleep", sleep)
    groups = list(latency_clients.ticks(10_000, 2_000))
    assert sum(groups) == 2_000
    assert 0.19 <= now[0] <= 0.23  # at the rate
    assert max(groups) <= 12 and len(groups) >= 150  # about ten records a millisecond
    assert reads[0] <= 2 * len(slept) + 4  # every clock reading is followed by a sleep
