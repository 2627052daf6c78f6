"""The learner's progress in their directory: which exercises passed, which hints were shown."""

from __future__ import annotations

import json
from pathlib import Path

PROGRESS_FILE = ".learn-progress.json"


def _path(directory: Path) -> Path:
    return directory / PROGRESS_FILE


def _read(directory: Path) -> dict:
    try:
        found = json.loads(_path(directory).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write(directory: Path, data: dict) -> None:
    if directory.is_dir():
        _path(directory).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def load_progress(directory: Path) -> dict[str, list[int]]:
    """Stage number (as text) -> the exercises that passed in the last check of that stage."""
    return {key: value for key, value in _read(directory).items() if key.isdigit()}


def record_check(directory: Path, stage: int, passed: list[int], failed: int | None) -> None:
    data = _read(directory)
    done = set(data.get(str(stage), [])) | set(passed)
    if failed is not None:
        done.discard(failed)
    data[str(stage)] = sorted(done)
    _write(directory, data)


def hints_seen(directory: Path, stage: int, exercise: int) -> int:
    return int(_read(directory).get("hints", {}).get(f"{stage}.{exercise}", 0))


def record_hint(directory: Path, stage: int, exercise: int, level: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)  # a hint may come before the first start
    data = _read(directory)
    seen = data.setdefault("hints", {})
    key = f"{stage}.{exercise}"
    seen[key] = max(int(seen.get(key, 0)), level)
    _write(directory, data)
