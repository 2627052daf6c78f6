"""How late a sleeping thread wakes on this machine: the floor under every latency figure.

A record crosses at least four threads that sleep until it arrives (the
producer's I/O thread, the broker's reactor, the consumer's I/O and
application threads); each wakes only when the kernel gives it a CPU. A
process of its own sleeps 1 ms again and again and notes by how much each
sleep overran: once on the idle machine (before the runs, the broker idle) and
once during the C client's runs. Its percentiles are what one wake-up costs
here whatever the broker does, so a p99.9 near the aim for a whole record
says the aim is the machine's, not the broker's (``cyclictest`` from rt-tests
measures the same, in C).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection

from benchmarks.suite.core import Figure, percentile

SLEEP = 0.001
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))


def _sleep_and_note(stop: Connection, out: Connection, limit: float) -> None:
    """In the probe's process: overruns (µs) of 1 ms sleeps until told to stop."""
    late: list[float] = []
    clock = time.perf_counter
    out.send("ready")
    deadline = clock() + limit
    while not stop.poll() and clock() < deadline:
        before = clock()
        time.sleep(SLEEP)
        late.append((clock() - before - SLEEP) * 1e6)
    out.send(late)


@contextmanager
def wakeups(limit: float = 600.0) -> Iterator[list[float]]:
    """Probe while the block runs; the list holds each wake-up's overrun (µs) after it.

    ``limit`` bounds the probe's life (seconds) if the block never ends cleanly.
    """
    spawn = multiprocessing.get_context("spawn")
    stop_reader, stop_writer = spawn.Pipe(duplex=False)
    result_reader, result_writer = spawn.Pipe(duplex=False)
    probe = spawn.Process(target=_sleep_and_note, args=(stop_reader, result_writer, limit),
                          daemon=True)
    probe.start()
    found: list[float] = []
    if not result_reader.poll(60):  # the block measures from the probe's first sleep
        probe.kill()
        raise RuntimeError("the wake-up probe did not start within 60 s")
    result_reader.recv()
    try:
        yield found
    finally:
        stop_writer.send(True)
        if result_reader.poll(30):
            found.extend(result_reader.recv())
        probe.join(10)
        if probe.is_alive():
            probe.kill()


def idle_floor(seconds: float) -> list[float]:
    """Overruns (µs) on the machine as it is now, with nothing of the benchmark running."""
    with wakeups() as found:
        time.sleep(seconds)
    return found


def figures(label: str, late: list[float]) -> list[Figure]:
    """Percentiles of the overruns, in ms like the latency figures beside them."""
    if not late:
        return [Figure("latency", f"wake-up lateness, {label}: no sample", float("nan"), "ms")]
    return [Figure("latency", f"wake-up lateness of a 1 ms sleep, {label} {name}",
                   percentile(late, fraction) / 1000, "ms", f"{len(late):,} wake-ups")
            for name, fraction in PERCENTILES]
