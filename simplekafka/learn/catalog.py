"""The exercises, stage by stage: collected from each stage's check module (its ``STAGE``).

Every module ``simplekafka/learn/checks/stageN.py`` declares one stage; a stage
is added by adding its module (and its reference solution), nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil

from simplekafka.learn import checks
from simplekafka.learn.exercise import Check, Exercise, Mutant, Stage

__all__ = ["STAGES", "Check", "Exercise", "Mutant", "Stage"]


def _collect() -> dict[int, Stage]:
    found = []
    for info in pkgutil.iter_modules(checks.__path__):
        if info.name.startswith("stage") and info.name[5:].isdigit():
            module = importlib.import_module(f"{checks.__name__}.{info.name}")
            found.append(module.STAGE)
    return {stage.number: stage for stage in sorted(found, key=lambda s: s.number)}


STAGES: dict[int, Stage] = _collect()
