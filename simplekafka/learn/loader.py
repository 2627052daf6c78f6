"""Import a learner's module from their directory, fresh each time, without touching sys.path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


class LearnerModuleError(Exception):
    """The learner's module is missing or does not import; the message says which and why."""


def load_learner_module(directory: Path, name: str) -> ModuleType:
    path = Path(directory) / f"{name}.py"
    if not path.exists():
        raise LearnerModuleError(f"{path} does not exist (run: simplekafka learn start first)")
    qualified = f"simplekafka_learner_{name}"
    spec = importlib.util.spec_from_file_location(qualified, path)
    if spec is None or spec.loader is None:
        raise LearnerModuleError(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(qualified, None)
        raise LearnerModuleError(f"{path} does not import: {type(exc).__name__}: {exc}") from exc
    return module
