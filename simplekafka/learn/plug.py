"""Put a learner's passed exercises into the real SimpleKafka: later stages run on their code.

Each exercise names where its functions live in SimpleKafka (``Exercise.plugs``:
learner name -> ``"package.module:attribute"`` targets, ``Class.method`` for a
method). :func:`install` loads the learner's module of every stage whose
exercise has passed (``.learn-progress.json``) and sets those attributes, so
a broker started afterwards in this process (``learn cluster``'s brokers, a
later stage's check) calls the learner's functions. It returns the list it
installed, which the commands print first: the learner sees exactly which of
their functions are in use.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from simplekafka.learn.catalog import STAGES
from simplekafka.learn.loader import load_learner_module
from simplekafka.learn.progress import load_progress


@dataclass(frozen=True)
class Plugged:
    stage: int
    exercise: int
    function: str  # the learner's name
    target: str  # where it now runs in SimpleKafka

    def __str__(self) -> str:
        return (f"stage {self.stage} exercise {self.exercise}: your {self.function} "
                f"runs as {self.target}")


def _resolve(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _set(target: str, value: object) -> None:
    module_name, _, attribute = target.partition(":")
    owner_path, _, name = attribute.rpartition(".")
    owner: object = importlib.import_module(module_name)
    if owner_path:
        owner = _resolve(owner, owner_path)
    if not hasattr(owner, name):
        raise AttributeError(f"plug target {target} does not exist")
    setattr(owner, name, value)


def plugs_for(directory: Path, stages: Iterable[int] | None = None) -> list[Plugged]:
    """What :func:`install` would install: every passed exercise's functions and targets."""
    progress = load_progress(directory)
    found = []
    for number in sorted(STAGES if stages is None else stages):
        stage = STAGES[number]
        done = set(progress.get(str(number), []))
        for exercise in stage.exercises:
            if exercise.number not in done:
                continue
            for function, targets in exercise.plugs:
                found += [Plugged(number, exercise.number, function, t) for t in targets]
    return found


def install(directory: Path, stages: Iterable[int] | None = None) -> list[Plugged]:
    """Set each passed exercise's learner functions into SimpleKafka; returns what was set."""
    plugged = plugs_for(directory, stages)
    modules: dict[int, ModuleType] = {}
    for plug in plugged:
        if plug.stage not in modules:
            modules[plug.stage] = load_learner_module(directory, STAGES[plug.stage].module)
        _set(plug.target, _resolve(modules[plug.stage], plug.function))
    return plugged
