"""The benchmark suite behind ``simplekafka bench``: scenarios, a table, JSON and plots.

Each scenario reuses the measuring code of the ``benchmarks/bench_*.py``
scripts and returns figures (printed as a table and written to
``bench.json``) and curves (drawn to PNG files). ``--tiny`` runs every
scenario in seconds, which is how the test suite keeps the benchmarks from
rotting; its figures mean nothing and are never asserted.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from benchmarks.suite.core import QUIET_LOAD, SIZES, Context, Curve, Figure, Run, load_average

Scenario = Callable[[Context], tuple[list[Figure], list[Curve]]]


def scenarios() -> dict[str, Scenario]:
    from benchmarks.suite import latency, replication, scale, throughput

    return {"produce": throughput.produce, "consume": throughput.consume,
            "latency": latency.latency, "replication": replication.replication,
            "scale": scale.scale}


NAMES = ("produce", "consume", "latency", "replication", "scale")


def run(names: list[str], mode: str, out_dir: Path, bootstrap_server: str | None = None,
        noisy: bool = False, plots: bool = True, progress: bool = True,
        latency_seconds: float | None = None, latency_runs: int | None = None,
        launcher: list[str] | None = None) -> Run:
    """Run the named scenarios; write ``bench.json`` and the PNGs into ``out_dir``.

    ``latency_seconds``/``latency_runs`` override the mode's length of the lead
    latency table (Python clients against Redis), the one figure worth a long run.
    ``launcher`` starts the brokers (``checkout_launcher``: another tree's code, for an A/B).
    """
    sizes = SIZES[mode]
    if latency_seconds is not None:
        sizes = dataclasses.replace(sizes, client_seconds=latency_seconds)
    if latency_runs is not None:
        sizes = dataclasses.replace(sizes, client_runs=latency_runs)
    table = scenarios()
    record = Run(mode=mode, scenarios=names, started=time.time(), load_before=load_average(),
                 noisy=noisy)
    with _Progress(len(names), enabled=progress) as bar:
        ctx = Context(sizes=sizes, mode=mode, out_dir=out_dir,
                      bootstrap_server=bootstrap_server, launcher=launcher, step=bar.step)
        if launcher:
            ctx.note(f"the brokers ran with: {' '.join(launcher[:2])} ... {launcher[-1]}")
        try:
            for name in names:
                bar.scenario(name)
                try:
                    figures, curves = table[name](ctx)
                except Exception as exc:
                    record.failures.append(f"{name}: {type(exc).__name__}: {exc}")
                    record.notes.append(traceback.format_exc(limit=4))
                    continue
                record.figures += figures
                record.curves += curves
        finally:
            ctx.close()
    record.notes += ctx.notes
    record.tables += ctx.tables
    record.load_after = load_average()
    out_dir.mkdir(parents=True, exist_ok=True)
    record.write_json(out_dir / "bench.json")
    record.write_markdown(out_dir / "bench.md")
    if plots and record.curves:
        from benchmarks.suite.plots import draw

        record.plots = [str(p) for p in draw(record, out_dir)]
    return record


def print_table(record: Run) -> None:
    """The figures as a table, with the conditions they were taken under."""
    import sys

    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=140)
    for text in record.tables:  # plain, so the Markdown reads (and parses) as written
        print(text, flush=True)
    table = Table(title=f"simplekafka bench ({record.mode})")
    for column, justify in (("scenario", "left"), ("figure", "left"), ("value", "right"),
                            ("unit", "left"), ("note", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for figure in record.figures:
        value = figure.value
        shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"
        table.add_row(figure.scenario, figure.name, shown, figure.unit, figure.note)
    console.print(table)
    before, after = record.load_before, record.load_after
    console.print(f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
                  f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")
    if record.mode == "tiny":
        console.print("tiny mode: these figures only show that the scenarios run")
    elif not record.representative:
        console.print(f"NOT representative: the load average was above {QUIET_LOAD:g} "
                      "at the start (the machine was busy with other work)")
    for note in record.notes:
        console.print(f"note: {note.strip()}")
    for failure in record.failures:
        console.print(f"[red]failed[/red]: {failure}")


class _Progress:
    """A rich progress bar over scenarios, whose text says what runs now."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self._progress = None
        self._task = None
        self._started = False

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.completed}/{task.total}"),
                                      TimeElapsedColumn(), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("starting", total=self.total)
        return self

    def scenario(self, name: str) -> None:
        if self._progress is not None:
            if self._started:
                self._progress.advance(self._task)
            self._started = True
            self._progress.update(self._task, description=name)

    def step(self, what: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=what)

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)
            self._progress.stop()
