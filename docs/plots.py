"""Benchmark plots, drawn with matplotlib while the site builds, from the figures in figures/.

Each ``figures/<name>.json`` holds one benchmark's last recorded figures:
``title``, ``unit``, ``recorded`` (when and under what load), ``command`` (the
script that printed them), ``groups`` (the bars' labels), ``series`` (name ->
one value per group) and ``aims`` (label -> a target drawn as a line). The
pages use them as ``{plot} plots.py <name>``.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

# matplotlib's plot directive runs this file with exec() in docs/, without __file__.
FIGURES = (Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()) / "figures"
COLOURS = ["#5a78a8", "#e0a458", "#4f8a4f", "#b85c5c"]


def grouped_bars(name: str) -> None:
    figure = json.loads((FIGURES / f"{name}.json").read_text())
    groups, series = figure["groups"], figure["series"]
    height = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(groups) * len(series) + 1.4))
    for index, (label, values) in enumerate(series.items()):
        positions = [g + index * height for g in range(len(groups))]
        ax.barh(positions, values, height=height * 0.92, label=label,
                color=COLOURS[index % len(COLOURS)])
    for label, value in figure.get("aims", {}).items():
        ax.axvline(value, color="#333333", linestyle="--", linewidth=1, label=label)
    ax.set_yticks([g + height * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    ax.invert_yaxis()
    ax.set_xlabel(figure["unit"])
    ax.xaxis.set_major_formatter(lambda value, _pos: f"{value:,.0f}")
    ax.set_title(figure["title"], fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.text(0.01, 0.005, f"{figure['command']} · {figure['recorded']}", fontsize=7,
             color="#666666")
    fig.tight_layout(rect=(0, 0.03, 1, 1))


def protocol() -> None:
    grouped_bars("protocol")


def storage() -> None:
    grouped_bars("storage")


def broker() -> None:
    grouped_bars("broker")


def client() -> None:
    grouped_bars("client")


def replication() -> None:
    grouped_bars("replication")
