"""tools/learn_mutation_score.py: cosmic-ray mutants of the reference solutions, at a reduced size.

The scores themselves are not asserted (they are in docs/learn.md with when and
how they were taken); these tests pin that the tool runs the learner checks
against real mutants, prints its table, and writes the survivors file in the
format the docs link to. The tool runs each check in worker processes, so the
runs are integration tests; the mutants themselves are made in this process.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simplekafka.learn.catalog import STAGES

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "learn_mutation_score.py"
ROW = re.compile(r"^\| (\d+) \| (\d+) [^|]+ \| (\d+)(?: of (\d+))? \| (\d+) \(\d+ by time-out\) "
                 r"\| (\d+) \((\d+)\) \| [\d.]+ \| [\d.]+ \| .*load [\d.]+→[\d.]+ \|$", re.M)


def _tool():
    spec = importlib.util.spec_from_file_location("learn_mutation_score", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_tool(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def check_survivors_file(path: Path, stage: int, exercises: list[int]) -> None:
    text = path.read_text()
    assert text.startswith("# Surviving mutants of the learner checks\n")
    assert "Command: `python tools/learn_mutation_score.py" in text
    for number in exercises:
        assert re.search(rf"^## Stage {stage}, exercise {number}: ", text, re.M), text
    # Each survivor: its id as a heading, a one-line reason, and its diff.
    for block in re.findall(r"^### .*?(?=^##|\Z)", text, re.M | re.S):
        assert re.match(r"### `\d+/\d+/[\w.]+/\w+/\d+`\n\n[^\n]+ \(line \d+, core/\w+\)\n\n"
                        r"```diff\n--- a/\w+\.py\n\+\+\+ b/\w+\.py\n", block), block


@pytest.mark.integration
def test_a_reduced_run_prints_the_table_and_writes_the_survivors(tmp_path):
    out = tmp_path / "survivors.md"
    result = run_tool("--stage", "1", "--sample", "5", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = ROW.findall(result.stdout)
    assert [(int(s), int(e)) for s, e, *_ in rows] == [
        (1, exercise.number) for exercise in STAGES[1].exercises], result.stdout
    for _stage, _exercise, ran, total, killed, survived, _explained in rows:
        assert int(ran) == 5 and int(total) > 5  # a seeded sample of the mutants
        assert int(killed) + int(survived) == 5
    assert "| stage | exercise | mutants | killed |" in result.stdout
    assert f"written to {out}" in result.stdout
    check_survivors_file(out, 1, [e.number for e in STAGES[1].exercises])


def test_mutants_change_only_the_exercise_bodies_and_have_stable_ids():
    tool = _tool()
    stage = STAGES[1]
    source = (tool.SOLUTIONS / f"{stage.module}.py").read_text()
    exercise = stage.exercises[0]
    places = tool.find_places(stage.number, exercise.number, exercise.functions, source)
    ids = [p.id for p in places]
    assert len(ids) == len(set(ids)) and len(ids) > 10
    assert ids == [p.id for p in tool.find_places(stage.number, exercise.number,
                                                  exercise.functions, source)]
    spans = tool.function_bodies(source, exercise.functions)
    for place in places[::7]:  # making a mutant parses the module: a spread of them
        mutant = tool.materialize(place, source, stage.module)
        if mutant is None:
            continue
        first, last = spans[mutant.function]
        assert mutant.id.startswith(f"1/{exercise.number}/{mutant.function}/")
        changed = [n for n, (a, b) in enumerate(zip(source.splitlines(),
                                                    mutant.source.splitlines()), 1) if a != b]
        assert changed and all(first <= n <= last for n in changed), mutant.id
        assert mutant.diff.startswith(f"--- a/{stage.module}.py\n")


def test_every_explained_survivor_is_still_a_mutant():
    """A reason for a mutant that no longer exists is stale: the solution moved under it."""
    tool = _tool()
    ids = set()
    for number in {int(key.split("/")[0]) for key in tool.SURVIVOR_REASONS} & set(STAGES):
        stage = STAGES[number]
        source = (tool.SOLUTIONS / f"{stage.module}.py").read_text()
        for exercise in stage.exercises:
            ids |= {p.id for p in tool.find_places(stage.number, exercise.number,
                                                   exercise.functions, source)}
    stale = [key for key in tool.SURVIVOR_REASONS
             if int(key.split("/")[0]) in STAGES and key not in ids]
    assert not stale


def test_the_survivors_file_names_each_survivor_with_its_reason_and_diff(tmp_path):
    tool = _tool()
    reason_id = next(iter(tool.SURVIVOR_REASONS))
    explained = tool.MutantSpec(reason_id, 1, 1, "encode_varint", "core/NumberReplacer", 2, 26,
                                "", "--- a/stage1_protocol.py\n+++ b/stage1_protocol.py\n"
                                "@@ -1 +1 @@\n-x = 63\n+x = 64\n")
    gap = dataclass_replace(explained, id="1/1/encode_varint/NumberReplacer/99")
    result = tool.ExerciseResult(1, 1, "varints", total=10, ran=10, killed=8,
                                 survivors=[explained, gap])
    path = tmp_path / "m.md"
    path.write_text(tool.survivors_markdown([result], ["Command: `python "
                                                       "tools/learn_mutation_score.py`"]))
    check_survivors_file(path, 1, [1])
    text = path.read_text()
    assert tool.SURVIVOR_REASONS[reason_id] in text
    assert "unexplained (line 26" in text
    row = "| 1 | 1 varints | 10 | 8 (0 by time-out) | 2 (1) | 80.0 | 88.9 |"
    assert row in tool.table([result])


def dataclass_replace(spec, **changes):
    import dataclasses

    return dataclasses.replace(spec, **changes)


@pytest.mark.integration
def test_a_real_process_stage_runs_one_sampled_mutant(tmp_path):
    real = sorted(n for n, stage in STAGES.items() if stage.real_processes)
    assert real, "some stage's checks start processes (ZooKeeper, brokers, Spark)"
    stage = STAGES[real[0]]
    first = stage.exercises[0].number
    out = tmp_path / "survivors.md"
    result = run_tool("--stage", str(stage.number), "--exercise", str(first), "--sample", "1",
                      "--jobs", "1", "--out", str(out), timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = ROW.findall(result.stdout)
    assert [(int(s), int(e)) for s, e, *_ in rows] == [(stage.number, first)], result.stdout
    check_survivors_file(out, stage.number, [first])


def test_a_reference_that_fails_its_check_is_reported_not_scored():
    """A stage whose reference does not pass (a broken environment, say) runs no mutant."""
    import argparse

    tool = _tool()

    class FailingWorker:
        def run(self, job, deadline):
            return {"killed": True, "why": "boom", "seconds": 0.0}

    stage = STAGES[1]
    args = argparse.Namespace(sample=3, sample_real=0, seed="s", time_limit=0.0, verbose=False)
    source = (tool.SOLUTIONS / f"{stage.module}.py").read_text()
    result = tool.score_exercise(stage, stage.exercises[0], source, args, [FailingWorker()],
                                 lambda _message: None)
    assert result.error.endswith("boom") and result.ran == 0 and not result.survivors
    assert "the reference fails its own check: boom" in tool.table([result])
    assert "Not scored: the reference fails" in tool.survivors_markdown([result], [])


def test_full_runs_every_mutant_of_one_exercise_under_a_sample():
    """--full S/E: a pure exercise of a sampled stage is scored whole, the others sampled."""
    import argparse

    tool = _tool()

    class KillingWorker:
        def run(self, job, deadline):  # the reference passes, each mutant fails, at once
            return {"killed": job["source"] != source, "why": "", "seconds": 0.0}

    stage = STAGES[1]
    source = (tool.SOLUTIONS / f"{stage.module}.py").read_text()
    exercise = stage.exercises[1]
    args = argparse.Namespace(sample=3, sample_real=0, seed="s", time_limit=0.0, verbose=False,
                              full=[f"1/{exercise.number}"])
    whole = tool.score_exercise(stage, exercise, source, args, [KillingWorker()],
                                lambda _message: None)
    assert whole.ran == whole.total > 3 and whole.killed == whole.ran
    sampled = tool.score_exercise(stage, stage.exercises[0], source, args, [KillingWorker()],
                                  lambda _message: None)
    assert sampled.ran == 3 < sampled.total
