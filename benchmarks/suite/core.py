"""What every scenario shares: the run's context, its results, the load average, JSON.

A scenario is a function ``(ctx) -> (figures, curves)``. It reads its sizes from
``ctx.sizes`` (tiny, small or full), starts what it needs through ``ctx``
(one LocalCluster per shape, reused between scenarios), reports progress
through ``ctx.step`` and returns figures; it never asserts anything about
them. A figure is a row of the printed table; a ``Curve`` is what a plot draws.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

#: Above this one-minute load average a run is "noisy": its figures say more about
#: the neighbours than about the broker.
QUIET_LOAD = 1.0


@dataclass
class Figure:
    """One measured value, with what it measures and under which conditions."""

    scenario: str
    name: str
    value: float
    unit: str
    note: str = ""


@dataclass
class Curve:
    """A series for a plot: y against x, one line per label."""

    plot: str  # file stem of the PNG it belongs to
    label: str
    x: list[float]
    y: list[float]
    x_label: str
    y_label: str
    log_x: bool = False
    log_y: bool = False
    kind: str = "line"  # "line", "bar" (one value), or "hist" (x: bin edges, y: counts)


@dataclass
class Sizes:
    """How big each scenario runs: tiny (seconds, for the test), small, full."""

    messages: int
    latency_seconds: float
    latency_rate: int
    partitions: tuple[int, ...]
    message_sizes: tuple[int, ...]
    idle_connections: int
    active_clients: int
    group_members: int
    seconds: float
    runs: int
    #: The lead latency table (Python clients, two processes): seconds per run, runs.
    client_seconds: float = 20.0
    client_runs: int = 3


SIZES = {
    "tiny": Sizes(messages=2_000, latency_seconds=1.0, latency_rate=1_000,
                  partitions=(4, 12), message_sizes=(10, 1_000, 100_000),
                  idle_connections=20, active_clients=2, group_members=3, seconds=0.5,
                  runs=1, client_seconds=2.0, client_runs=1),
    "small": Sizes(messages=200_000, latency_seconds=10.0, latency_rate=10_000,
                   partitions=(100, 300, 1_000), message_sizes=(10, 100, 1_000, 10_000,
                                                                100_000, 1_000_000),
                   idle_connections=200, active_clients=10, group_members=20, seconds=3.0,
                   runs=1),
    "full": Sizes(messages=1_000_000, latency_seconds=30.0, latency_rate=10_000,
                  partitions=(1_000, 5_000, 10_000),
                  message_sizes=(10, 100, 1_000, 10_000, 100_000, 1_000_000),
                  idle_connections=1_000, active_clients=50, group_members=100, seconds=5.0,
                  runs=3),
}


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def machine() -> dict[str, Any]:
    """What the figures were taken on, for the JSON and the docs."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        memory = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    return {"cpu": model, "cores": os.cpu_count(), "memory_bytes": memory,
            "kernel": platform.release(), "python": platform.python_version()}


@dataclass
class Context:
    """The run: sizes, where results go, the clusters it started, progress reporting."""

    sizes: Sizes
    mode: str
    out_dir: Path
    bootstrap_server: str | None = None
    #: what starts each broker (``checkout_launcher``: another tree's code); None, this tree's
    launcher: list[str] | None = None
    step: Callable[[str], None] = lambda _what: None
    notes: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    _clusters: dict[str, LocalCluster] = field(default_factory=dict)
    _tmp: tempfile.TemporaryDirectory | None = None

    def scratch(self) -> Path:
        """A directory for files a scenario writes (removed at the end of the run)."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="simplekafka-bench-")
        return Path(self._tmp.name)

    def note(self, text: str) -> None:
        """Something the reader of the figures must know (a peer missing, a skipped part)."""
        if text not in self.notes:
            self.notes.append(text)

    def cluster(self, brokers: int = 1, config: dict[str, str] | None = None) -> LocalCluster:
        """A LocalCluster of this shape, started once per run and shared by the scenarios."""
        key = f"{brokers}:{sorted((config or {}).items())}"
        if key not in self._clusters:
            self.step(f"starting {brokers} broker(s)")
            cluster = LocalCluster(brokers=brokers, broker_config=config,
                                   launcher=self.launcher)
            self._clusters[key] = cluster.start()
        return self._clusters[key]

    @contextlib.contextmanager
    def own_cluster(self, brokers: int, config: dict[str, str] | None = None
                    ) -> Iterator[LocalCluster]:
        """A LocalCluster for one scenario alone (it kills or fills brokers)."""
        self.step(f"starting {brokers} broker(s)")
        with LocalCluster(brokers=brokers, broker_config=config,
                          launcher=self.launcher) as cluster:
            yield cluster

    def bootstrap(self) -> str:
        """Where the single-broker scenarios send: --bootstrap-server, or a cluster we start."""
        return self.bootstrap_server or self.cluster(1).bootstrap_servers

    def close(self) -> None:
        for cluster in self._clusters.values():
            cluster.stop()
        self._clusters.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


_topic_counter = iter(range(1, 1 << 30))


def new_topic(bootstrap: str, prefix: str, partitions: int = 1, replication: int = 1,
              config: dict[str, str] | None = None, timeout_s: float = 120.0) -> str:
    """A fresh topic (unique name per run), created and with a leader for each partition."""
    name = f"bench-{prefix}-{os.getpid()}-{next(_topic_counter)}"
    with Admin(bootstrap, request_timeout_ms=int(timeout_s * 1000)) as admin:
        admin.create_topic(name, partitions, replication, config or {},
                           timeout_ms=int(timeout_s * 1000))
    return name


@dataclass
class Run:
    """Everything one ``simplekafka bench`` writes: figures, curves, conditions."""

    mode: str
    scenarios: list[str]
    started: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    noisy: bool = False
    figures: list[Figure] = field(default_factory=list)
    curves: list[Curve] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Compact tables a scenario leads with (Markdown), printed before the figures.
    tables: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=machine)

    @property
    def representative(self) -> bool:
        # The load at the start says whether other work shares the machine; the load at
        # the end also counts this run's own brokers and clients, so it is reported, not
        # judged (a run on an idle 2-core machine ends well above 1 by its own doing).
        return self.load_before[0] <= QUIET_LOAD and self.mode != "tiny"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["representative"] = self.representative
        data["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started))
        return data

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")

    def write_markdown(self, path: Path) -> None:
        """The figures as a Markdown table with their conditions (the docs include it)."""
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started))
        m = self.machine
        load = (f"{self.load_before[0]:.2f} before, {self.load_after[0]:.2f} after "
                f"(the run's own processes included)")
        verdict = ("representative" if self.representative else
                   "**not representative** (tiny mode)" if self.mode == "tiny" else
                   f"**not representative**: load average above {QUIET_LOAD:g} at the start")
        lines = [f"Run of {started}, `{self.mode}` sizes, on {m.get('cpu') or 'an unknown CPU'}"
                 f" ({m.get('cores')} cores, {m.get('memory_bytes', 0) / 2**30:.1f} GiB, "
                 f"Linux {m.get('kernel')}, Python {m.get('python')}); one-minute load "
                 f"average {load}: {verdict}.", "",
                 "| scenario | figure | value | unit | note |", "|---|---|---:|---|---|"]
        for f in self.figures:
            value = f"{f.value:,.0f}" if abs(f.value) >= 100 else f"{f.value:,.3g}"
            lines.append(f"| {f.scenario} | {f.name} | {value} | {f.unit} | {f.note} |")
        lines += [""] + [f"- {note.strip().splitlines()[-1]}" for note in self.notes]
        lines += [f"- failed: {failure}" for failure in self.failures]
        path.write_text("\n".join(lines).rstrip() + "\n")


def histogram_bins(samples: list[float], bins: int = 60) -> tuple[list[float], list[float]]:
    """Log-spaced bin edges and counts: latencies span decades, and the tail is the point."""
    positive = [s for s in samples if s > 0]
    if not positive:
        return [], []
    low, high = min(positive) / 1.05, max(positive) * 1.05
    ratio = (high / low) ** (1 / bins)
    edges = [low * ratio**i for i in range(bins + 1)]
    counts = [0.0] * bins
    log_ratio = math.log(ratio)
    for sample in positive:
        index = min(bins - 1, max(0, int(math.log(sample / low) / log_ratio)))
        counts[index] += 1
    return edges, counts


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank percentile (0 < fraction <= 1) of unsorted samples."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]
