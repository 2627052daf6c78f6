"""``learn start``, ``check`` and ``list``: write starters, run the checks, keep progress."""

from __future__ import annotations

import shutil
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from simplekafka.learn.catalog import STAGES, Exercise, Stage
from simplekafka.learn.limits import CheckTimedOut, own_frames, time_limit
from simplekafka.learn.loader import LearnerModuleError, load_learner_module
from simplekafka.learn.progress import hints_seen, load_progress, record_check, record_hint
from simplekafka.learn.report import ExerciseFailed
from simplekafka.learn.skeleton import make_starter

DEFAULT_DIR = Path("my-simplekafka")
WORK_DIR = ".learn-work"
SOLUTIONS = Path(__file__).resolve().parent / "solutions"


class LearnError(Exception):
    """A bad stage or exercise number, or a directory we cannot use: one line for the user."""


def stage_of(number: int) -> Stage:
    if number not in STAGES:
        raise LearnError(f"stage {number} has no exercises; stages with exercises: "
                         f"{', '.join(map(str, sorted(STAGES)))}")
    return STAGES[number]


def starter_source(stage: Stage) -> str:
    """The learner's starter module for ``stage``, made from the reference solution."""
    source = (SOLUTIONS / f"{stage.module}.py").read_text()
    to_write = {name: f"exercise {exercise.number} ({exercise.title}): write {name}"
                for exercise in stage.exercises for name in exercise.functions}
    banner = (f"# Your stage {stage.number} ({stage.title}), written by `simplekafka learn start "
              f"{stage.number}`.\n# Replace each NotImplementedError, then run "
              f"`simplekafka learn check {stage.number}`.\n# The chapter: {stage.chapter}\n")
    return make_starter(source, to_write, banner)


def start(number: int, directory: Path) -> list[str]:
    """Write the starter into ``directory``; never overwrite. Returns lines to print."""
    stage = stage_of(number)
    if directory.exists() and not directory.is_dir():
        raise LearnError(f"{directory} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{stage.module}.py"
    if target.exists():
        return [f"{target} exists: left as it is (delete it to start over)"]
    target.write_text(starter_source(stage))
    lines = [f"wrote {target}", f"stage {stage.number}, {stage.title}: read {stage.chapter}"]
    lines += [f"  exercise {e.number}: {e.title}: {e.goal}" for e in stage.exercises]
    lines.append(f"then: simplekafka learn check {stage.number} {directory}")
    return lines


@dataclass
class CheckResult:
    stage: Stage
    passed: list[int] = field(default_factory=list)
    failed: Exercise | None = None
    report: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failed is None


def check(number: int, directory: Path, only: int | None = None) -> CheckResult:
    """Run the stage's exercises in order (or just ``only``); stop at the first failure."""
    stage = stage_of(number)
    if only is not None:
        try:
            exercises: tuple[Exercise, ...] = (stage.exercise(only),)
        except KeyError:
            raise LearnError(f"stage {number} has exercises "
                             f"{', '.join(str(e.number) for e in stage.exercises)}, "
                             f"not {only}") from None
    else:
        exercises = stage.exercises
    result = CheckResult(stage)
    try:
        module = load_learner_module(directory, stage.module)
    except LearnerModuleError as exc:
        result.failed = exercises[0]
        result.report = [_headline(stage, exercises[0]), f"  {exc}"]
        _save_progress(directory, result)
        return result
    for exercise in exercises:
        workdir = directory / WORK_DIR / f"stage{stage.number}" / f"exercise{exercise.number}"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        try:
            with time_limit(exercise.time_limit):
                exercise.check(module, workdir)
        except CheckTimedOut as exc:
            result.failed = exercise
            result.report = [_headline(stage, exercise), *_timed_out(exc, exercise, directory)]
            break
        except ExerciseFailed as exc:
            result.failed = exercise
            result.report = [_headline(stage, exercise), f"  {exc.summary}",
                             *("  " + line for line in "\n".join(exc.lines).splitlines())]
            break
        except NotImplementedError as exc:
            result.failed = exercise
            result.report = [_headline(stage, exercise),
                             f"  not written yet: {exc or 'NotImplementedError'}"]
            break
        except Exception as exc:
            result.failed = exercise
            result.report = [_headline(stage, exercise),
                             f"  your code raised {type(exc).__name__}: {exc}",
                             *("  " + line for line in _learner_frames(exc, directory))]
            break
        result.passed.append(exercise.number)
    _save_progress(directory, result)
    return result


def _headline(stage: Stage, exercise: Exercise) -> str:
    return (f"FAILED stage {stage.number} exercise {exercise.number} ({exercise.title}): "
            f"{exercise.goal}")


def _timed_out(exc: CheckTimedOut, exercise: Exercise, directory: Path) -> list[str]:
    """Which function did not return, and the stack it was stuck in."""
    culprit = exc.culprit(directory)
    if culprit is not None:
        where = f"{Path(culprit.filename).name}:{culprit.lineno}"
        lines = [f"  your {culprit.name} did not return within {exc.seconds:g} s "
                 f"(stuck at {where}); the stack:"]
        frames = own_frames(exc.stack, directory)
    else:
        lines = [f"  the check did not finish within {exc.seconds:g} s, waiting on the "
                 f"system your {', '.join(exercise.functions)} runs in; the stack:"]
        frames = list(exc.stack)[-4:]
    lines += ["  " + line for line in "".join(traceback.format_list(frames)).splitlines()]
    return lines


def _learner_frames(exc: BaseException, directory: Path) -> list[str]:
    """The traceback, cut to the frames in the learner's own files when there are any."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = own_frames(frames, directory)
    return traceback.format_list(own or frames[-3:])


def _save_progress(directory: Path, result: CheckResult) -> None:
    failed = result.failed.number if result.failed is not None else None
    record_check(directory, result.stage.number, result.passed, failed)


def listing(directory: Path) -> list[str]:
    """Every stage's exercises with their goals, marked done from the learner's progress."""
    progress = load_progress(directory)
    lines = []
    for stage in STAGES.values():
        done = set(progress.get(str(stage.number), []))
        started = (directory / f"{stage.module}.py").exists()
        state = f"{len(done)}/{len(stage.exercises)} done" if started else "not started"
        lines.append(f"stage {stage.number}: {stage.title} ({state}; {stage.chapter})")
        for exercise in stage.exercises:
            mark = "x" if exercise.number in done else " "
            lines.append(f"  [{mark}] {exercise.number}. {exercise.title}: {exercise.goal}")
    return lines


def hint(number: int, exercise_number: int, directory: Path, level: int | None = None) -> list[str]:
    """The next hint (or hint ``level``) for an exercise: the chapter first, then the idea."""
    stage = stage_of(number)
    try:
        exercise = stage.exercise(exercise_number)
    except KeyError:
        raise LearnError(f"stage {number} has exercises "
                         f"{', '.join(str(e.number) for e in stage.exercises)}, "
                         f"not {exercise_number}") from None
    if not exercise.hints:
        return [f"stage {number} exercise {exercise_number} has no hints: read {stage.chapter}"]
    if level is None:
        level = min(hints_seen(directory, number, exercise_number) + 1, len(exercise.hints))
    if not 1 <= level <= len(exercise.hints):
        raise LearnError(f"exercise {exercise_number} has hints 1 to {len(exercise.hints)}, "
                         f"not {level}")
    record_hint(directory, number, exercise_number, level)
    lines = [f"stage {number} exercise {exercise_number} ({exercise.title}), "
             f"hint {level} of {len(exercise.hints)}:", f"  {exercise.hints[level - 1]}"]
    if level < len(exercise.hints):
        lines.append(f"(again for the next: simplekafka learn hint {number} {exercise_number})")
    return lines
