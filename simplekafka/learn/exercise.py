"""What an exercise is: the functions a learner writes, its check, hints, limit and plugs.

Each stage's check module (``simplekafka/learn/checks/stageN.py``) declares
its ``STAGE`` with these, and the mistakes its checks must catch as
``MUTANTS``; :mod:`simplekafka.learn.catalog` only collects them, so a stage
is added in one file (and its reference solution).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

Check = Callable[[ModuleType, Path], None]

DEFAULT_TIME_LIMIT = 60.0  # seconds for one exercise's whole check


@dataclass(frozen=True)
class Exercise:
    number: int
    title: str
    goal: str
    functions: tuple[str, ...]  # what the learner writes: functions, or Class.method
    check: Check
    # Graded hints for ``learn hint``: the chapter section first, then the idea;
    # never the solution.
    hints: tuple[str, ...] = ()
    time_limit: float = DEFAULT_TIME_LIMIT
    # Where each learner function goes in the real SimpleKafka once the exercise
    # passes: learner name -> ("package.module:attribute", ...). ``learn
    # cluster`` and later stages' checks run with these installed (plug.py).
    plugs: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Mutant:
    """A mistake a learner makes, as an edit of the reference solution, and who must catch it."""

    name: str
    exercise: int
    old: str  # occurs exactly once in the solution module
    new: str


@dataclass(frozen=True)
class Stage:
    number: int
    title: str
    module: str  # the learner's module (and the solution's) without .py
    chapter: str
    exercises: tuple[Exercise, ...]
    mutants: tuple[Mutant, ...] = field(default=())
    # The checks start real processes (ZooKeeper, brokers, kcat, Spark):
    # the tests mark them integration.
    real_processes: bool = False

    def exercise(self, number: int) -> Exercise:
        for exercise in self.exercises:
            if exercise.number == number:
                return exercise
        raise KeyError(number)
