"""Who had the CPUs during a latency run: each thread's CPU time and its wait for a CPU.

Linux keeps, per thread, the time it ran and the time it sat runnable waiting
for a CPU (``/proc/<pid>/task/<tid>/schedstat``: run ns, wait ns, time slices).
A record's path crosses the producer's I/O thread, the broker's reactor and
the consumer's threads; whenever one of them waits for a CPU, the record waits
with it, and no timing inside the broker sees it. These counts say how much of
the tail is the machine rather than the broker's work.

On 2 cores the C producer's pacing loop is the big consumer: at 10,000
records/s ``rdkafka_performance -r`` polls with a zero timeout until the next
record is due, so its main thread spins a whole core.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.suite.core import Figure

PROC = Path("/proc")


@dataclass
class ThreadTimes:
    """Run time, run-queue wait (seconds) and time slices of a group of threads."""

    cpu: float = 0.0
    wait: float = 0.0
    slices: int = 0

    def add(self, other: ThreadTimes) -> None:
        self.cpu += other.cpu
        self.wait += other.wait
        self.slices += other.slices


def thread_times(pid: int, tid: int) -> ThreadTimes | None:
    """One thread's run time, run-queue wait and time slices so far (None: gone)."""
    try:
        run, wait, slices = (PROC / str(pid) / "task" / str(tid) / "schedstat"
                             ).read_text().split()[:3]
    except (OSError, ValueError):
        return None
    return ThreadTimes(int(run) / 1e9, int(wait) / 1e9, int(slices))


@dataclass
class CpuShare:
    """Samples the broker's threads and the C clients' (children named rdkafka_perform)
    every ``interval`` seconds inside each ``with``; ``totals`` sums them per role over
    every ``with`` (one per run), ``wall`` their duration."""

    broker_pid: int
    interval: float = 0.1
    _first: dict[tuple[int, int], ThreadTimes] = field(default_factory=dict)
    _last: dict[tuple[int, int], tuple[str, ThreadTimes]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    wall: float = 0.0
    totals: dict[str, ThreadTimes] = field(default_factory=dict)

    def _roles(self) -> list[tuple[int, int, str]]:
        found = []
        for tid in _tids(self.broker_pid):
            found.append((self.broker_pid, tid, "broker reactor thread"
                          if tid == self.broker_pid else "broker other threads"))
        for child in psutil.Process().children(recursive=True):
            try:
                if not child.name().startswith("rdkafka_perform"):
                    continue
                side = "producer" if "-P" in child.cmdline() else "consumer"
            except psutil.Error:
                continue
            for tid in _tids(child.pid):
                part = ("main thread" if side == "consumer" else "pacing loop (main thread)"
                        ) if tid == child.pid else "librdkafka threads"
                found.append((child.pid, tid, f"C {side} {part}"))
        return found

    def sample(self) -> None:
        for pid, tid, role in self._roles():
            times = thread_times(pid, tid)
            if times is None:
                continue
            key = (pid, tid)
            if key not in self._first:
                # The broker's threads existed before: count from the first sample.
                # The clients start during the run: count from their start.
                self._first[key] = times if pid == self.broker_pid else ThreadTimes()
            self._last[key] = (role, times)

    def __enter__(self) -> CpuShare:
        self._first.clear()
        self._last.clear()
        self._stop.clear()
        self.sample()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="cpu-share")
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.sample()
        self.wall += time.monotonic() - self._started
        for key, (role, last) in self._last.items():
            first = self._first[key]
            self.totals.setdefault(role, ThreadTimes()).add(ThreadTimes(
                last.cpu - first.cpu, last.wait - first.wait, last.slices - first.slices))


def _tids(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in (PROC / str(pid) / "task").iterdir()]
    except OSError:
        return []


def figures(share: CpuShare, records: int, label: str) -> list[Figure]:
    """Per role: CPU (share of a core over the runs) and mean wait for a CPU per time slice."""
    found = []
    wall = max(share.wall, 1e-9)
    note = f"{label}, {records:,} records, {wall:.1f} s (/proc schedstat)"
    total = 0.0
    for role, times in sorted(share.totals.items()):
        total += times.cpu
        found.append(Figure("latency", f"{role} CPU", 100 * times.cpu / wall,
                            "% of a core", note))
        if times.slices:
            found.append(Figure("latency", f"{role} wait for a CPU per time slice",
                                times.wait / times.slices * 1e6, "µs",
                                f"{times.wait * 1000:.0f} ms over {times.slices:,} slices"))
    found.append(Figure("latency", "CPU used by broker and C clients", total / wall,
                        "cores", f"{note}; ZooKeeper and the rest of the machine not counted"))
    if records:
        broker = sum(t.cpu for r, t in share.totals.items() if r.startswith("broker"))
        found.append(Figure("latency", "broker CPU per record", broker / records * 1e6,
                            "µs", note))
    return found
