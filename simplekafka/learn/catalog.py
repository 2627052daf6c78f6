"""The exercises, stage by stage: collected from each stage's check module (its ``STAGE``)."""

from __future__ import annotations

from simplekafka.learn.checks import stage1, stage3, stage4, stage7, stage8
from simplekafka.learn.exercise import Check, Exercise, Mutant, Stage

__all__ = ["STAGES", "Check", "Exercise", "Mutant", "Stage"]

STAGES: dict[int, Stage] = {
    module.STAGE.number: module.STAGE
    for module in (stage1, stage3, stage4, stage7, stage8)
}
