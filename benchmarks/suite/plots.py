"""PNG plots of a run's curves, one file per plot name, for the docs' benchmark page.

Every plot carries the load average and, when the run was not representative,
says so in its title: a figure without its conditions misleads.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from benchmarks.suite.core import Curve, Run


def draw(run: Run, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_plot: dict[str, list[Curve]] = defaultdict(list)
    for curve in run.curves:
        by_plot[curve.plot].append(curve)
    load = run.load_before[0]
    condition = f"load average {load:.2f} at the start" + ("" if run.representative else
                                              " (not representative)")
    written = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for plot, curves in sorted(by_plot.items()):
        figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
        kind = curves[0].kind
        if kind == "bar":
            labels = [c.label for c in curves]
            axes.barh(labels, [c.y[0] for c in curves], color="tab:blue")
            axes.set_xlabel(curves[0].y_label)
            axes.invert_yaxis()
        elif kind == "hist":
            for curve in curves:
                if curve.y:
                    axes.stairs(curve.y, curve.x, label=curve.label, linewidth=1.2)
            axes.set_xscale("log")
            axes.set_yscale("log")
            axes.set_xlabel(curves[0].x_label)
            axes.set_ylabel(curves[0].y_label)
            axes.legend(fontsize="small")
        else:
            for curve in curves:
                axes.plot(curve.x, curve.y, marker="o", label=curve.label)
            if curves[0].log_x:
                axes.set_xscale("log")
            if curves[0].log_y:
                axes.set_yscale("log")
            axes.set_xlabel(curves[0].x_label)
            axes.set_ylabel(curves[0].y_label)
            if len(curves) > 1:
                axes.legend(fontsize="small")
        axes.set_title(f"{plot.replace('_', ' ')} ({run.mode}; {condition})", fontsize="medium")
        axes.grid(True, alpha=0.3)
        figure.tight_layout()
        path = out_dir / f"{plot}.png"
        figure.savefig(path)
        plt.close(figure)
        written.append(path)
    return written
