"""How long the garbage collector stops the broker: every collection timed, by generation.

A Python broker's requests all wait while the collector runs on the reactor
thread, so its pauses are part of the latency tail. ``gc.callbacks`` are
called at the start and the end of every collection; the time between them
goes into a histogram (``python_gc_pause_seconds``, scraped with the broker's
metrics) that shows whether a tail in the latency benchmark coincides with
collections. The broker keeps long-lived objects out of full collections
with ``gc.freeze()`` (after start-up and each LeaderAndIsr), which is what
keeps these pauses short.
"""

from __future__ import annotations

import bisect
import gc
import time

#: Pause buckets, in seconds (a young collection takes tens of microseconds).
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)


class GcPauses:
    """Times every collection while installed (``install``/``uninstall``)."""

    def __init__(self) -> None:
        self.counts = [[0] * (len(BUCKETS) + 1) for _ in range(3)]  # per generation
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = 0.0
        self._started = 0.0

    def install(self) -> GcPauses:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)
        return self

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        generation = min(max(int(info.get("generation", 0)), 0), 2)
        self.counts[generation][bisect.bisect_left(BUCKETS, pause)] += 1
        self.seconds[generation] += pause
        self.longest = max(self.longest, pause)

    def total(self, generation: int) -> int:
        return sum(self.counts[generation])
