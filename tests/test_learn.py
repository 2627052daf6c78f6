"""Learner mode: ``simplekafka learn start`` and ``check`` for every stage, run as a learner would.

The reference solutions pass every exercise; an untouched starter fails at the
first exercise; each broken variant in MUTATIONS (a mistake a learner makes)
fails naming the exercise that catches it. The commands run in this process
(the CLI's ``main``), except where a test is about the real command; stage 4's
checks serve the learner's broker and run kcat and confluent-kafka against it,
so those tests start real processes and are marked integration.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simplekafka.cli import main
from simplekafka.learn.catalog import STAGES

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "simplekafka" / "learn" / "solutions"
REAL_PROCESS_STAGES = {n for n, stage in STAGES.items() if stage.real_processes}


def learn(*args: str, cwd: Path, as_process: bool = False) -> subprocess.CompletedProcess:
    """``simplekafka learn ARGS`` in ``cwd``: in this process, or as the real command."""
    if as_process:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-m", "simplekafka", "learn", *args], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=600, check=False)
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(["learn", *args])
            except SystemExit as exc:  # argparse's own exit on a bad argument
                status = int(exc.code or 0)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["learn", *args], status, out.getvalue(), err.getvalue())


def within_limits(stage: int, exercise: int | None = None) -> list:
    """pytest-timeout's limit for a stage's (or an exercise's) check: its time limits + 60 s."""
    exercises = STAGES[stage].exercises
    if exercise is not None:
        exercises = tuple(e for e in exercises if e.number == exercise)
    return [pytest.mark.timeout(max(300, 60 + sum(e.time_limit for e in exercises)))]


def stage_param(number: int):
    marks = [pytest.mark.integration] if number in REAL_PROCESS_STAGES else []
    return pytest.param(number, marks=marks + within_limits(number), id=f"stage{number}")


def fill_with_reference(tmp_path: Path, stage: int, old: str = "", new: str = "") -> Path:
    """``learn start``, then the starter replaced by the solution (with one edit, if given)."""
    result = learn("start", str(stage), "mine", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    module = STAGES[stage].module
    source = (SOLUTIONS / f"{module}.py").read_text()
    if old:
        assert source.count(old) == 1, f"the mutation's text must occur once in {module}.py"
        source = source.replace(old, new)
    (tmp_path / "mine" / f"{module}.py").write_text(source)
    return tmp_path / "mine"


def headline(stage: int, exercise: int) -> str:
    found = STAGES[stage].exercise(exercise)
    return f"FAILED stage {stage} exercise {exercise} ({found.title})"


@pytest.mark.parametrize("stage", [stage_param(n) for n in STAGES])
def test_an_untouched_starter_fails_at_the_first_exercise(stage, tmp_path):
    result = learn("start", str(stage), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    starter = tmp_path / "my-simplekafka" / f"{STAGES[stage].module}.py"
    assert "NotImplementedError" in starter.read_text()
    result = learn("check", str(stage), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert headline(stage, 1) in result.stdout
    assert "not written yet" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("stage", [stage_param(n) for n in STAGES])
def test_the_starter_filled_with_the_reference_passes_every_exercise(stage, tmp_path):
    directory = fill_with_reference(tmp_path, stage)
    result = learn("check", str(stage), str(directory), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for exercise in STAGES[stage].exercises:
        assert f"ok     stage {stage} exercise {exercise.number} " in result.stdout
    listing = learn("list", str(directory), cwd=tmp_path).stdout
    done = len(STAGES[stage].exercises)
    assert f"({done}/{done} done;" in listing


def test_the_starter_keeps_signatures_docstrings_and_the_given_parts():
    from simplekafka.learn.runner import starter_source

    starter = starter_source(STAGES[4])
    assert "def fetch(self, version: int, request: Struct) -> dict:" in starter
    assert "from simplekafka.learn.segment_log import OffsetOutOfRangeError, SegmentLog" in starter
    assert "def create_topic(self, name: str) -> SegmentLog:" in starter  # given, body kept
    assert "self.logs[name] = SegmentLog.open(self.data_dir" in starter
    assert "raise NotImplementedError('exercise 6 (Fetch): write Broker.fetch')" in starter
    assert "log.read(wanted.fetch_offset" not in starter
    assert "raise NotImplementedError('exercise 1 (framing): write FrameDecoder.feed')" in starter
    assert "self.frames = FrameDecoder(max_frame_bytes)" in starter  # Connection.__init__, given
    assert "del self.buffer[: 4 + length]" not in starter


@pytest.mark.integration
def test_start_never_overwrites_the_learners_file(tmp_path):
    learn("start", "1", cwd=tmp_path, as_process=True)
    mine = tmp_path / "my-simplekafka" / "stage1_protocol.py"
    mine.write_text("# my own work\n")
    result = learn("start", "1", cwd=tmp_path, as_process=True)
    assert result.returncode == 0
    assert "left as it is" in result.stdout
    assert mine.read_text() == "# my own work\n"


def test_check_one_exercise_and_progress_in_list(tmp_path):
    directory = fill_with_reference(tmp_path, 7, "    return min(ends)\n",
                                    "    return leader_end_offset\n")
    result = learn("check", "7", str(directory), "--exercise", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "exercise 2" in result.stdout and "exercise 1" not in result.stdout
    listing = learn("list", str(directory), cwd=tmp_path).stdout
    assert "[x] 2. ISR shrink and join" in listing
    assert "[ ] 1. high watermark" in listing


@pytest.mark.integration
@pytest.mark.parametrize("args, message", [
    (["start", "10"], "stage 10 has no exercises"),
    (["check", "1", "--exercise", "9"], "stage 1 has exercises 1, 2, 3, 4, 5, not 9"),
    (["start", "one"], "invalid int value"),
])
def test_bad_arguments_get_one_line(args, message, tmp_path):
    result = learn(*args, cwd=tmp_path, as_process=True)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_a_module_that_does_not_import_is_reported_not_raised(tmp_path):
    learn("start", "3", cwd=tmp_path)
    (tmp_path / "my-simplekafka" / "stage3_storage.py").write_text("def broken(:\n")
    result = learn("check", "3", cwd=tmp_path)
    assert result.returncode == 1
    assert headline(3, 1) in result.stdout and "does not import: SyntaxError" in result.stdout


MUTATIONS = {mutant.name: (stage.number, mutant)
             for stage in STAGES.values() for mutant in stage.mutants}


def mutation_param(name: str):
    stage, mutant = MUTATIONS[name]
    marks = [pytest.mark.integration] if stage in REAL_PROCESS_STAGES else []
    return pytest.param(name, marks=marks + within_limits(stage, mutant.exercise),
                        id=f"stage{stage}.{mutant.exercise}-{name}")


@pytest.mark.parametrize("name", [mutation_param(n) for n in MUTATIONS])
def test_each_mutation_fails_naming_its_exercise(name, tmp_path):
    stage, mutant = MUTATIONS[name]
    directory = fill_with_reference(tmp_path, stage, mutant.old, mutant.new)
    only = []
    if stage in REAL_PROCESS_STAGES:  # each earlier exercise starts real processes: skip them
        only = ["--exercise", str(mutant.exercise)]
    result = learn("check", str(stage), str(directory), *only, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert headline(stage, mutant.exercise) in result.stdout, result.stdout


def test_every_stage_has_mutations_for_each_exercise():
    caught = {(stage, m.exercise) for stage, m in MUTATIONS.values()}
    wanted = {(s.number, e.number) for s in STAGES.values() for e in s.exercises}
    assert wanted <= caught, sorted(wanted - caught)


def test_the_byte_diff_puts_a_caret_under_the_first_wrong_byte_and_names_the_field(tmp_path):
    _stage, mutation = MUTATIONS["crc-over-the-wrong-range"]
    directory = fill_with_reference(tmp_path, 1, mutation.old, mutation.new)
    out = learn("check", "1", str(directory), cwd=tmp_path).stdout
    assert "first difference at byte 17, in field batch 0.crc" in out
    lines = out.splitlines()
    got_at = next(i for i, line in enumerate(lines) if line.strip().startswith("got ("))
    caret = next(i for i in range(got_at, len(lines)) if lines[i].strip() == "^^")
    row = re.match(r"\s*([0-9a-f]{4})  ", lines[caret - 1])
    assert row, lines[caret - 1]
    column = lines[caret].index("^^") - lines[caret - 1].index(row.group(1)) - 6
    assert int(row.group(1), 16) + column // 3 == 17
    crc_row = next(line for line in lines if " crc : uint32" in line)
    assert crc_row.endswith("<-- first difference")
    assert any("records_count : int32" in line for line in lines)  # the field tree is there




def test_every_stage_from_1_to_9_has_at_least_two_exercises_with_hints():
    assert sorted(STAGES) == list(range(1, 10))
    for stage in STAGES.values():
        assert len(stage.exercises) >= 2, stage.number
        for exercise in stage.exercises:
            assert len(exercise.hints) >= 2, (stage.number, exercise.number)
            assert stage.chapter.split("/")[1] in exercise.hints[0] or "chapter" in \
                exercise.hints[0], (stage.number, exercise.number)


def test_hints_come_one_level_at_a_time_and_never_past_the_last(tmp_path):
    first = learn("hint", "7", "3", cwd=tmp_path)
    assert first.returncode == 0 and "hint 1 of 2" in first.stdout, first.stdout
    assert "chapter" in first.stdout
    second = learn("hint", "7", "3", cwd=tmp_path)
    assert "hint 2 of 2" in second.stdout and "own HW" in second.stdout
    again = learn("hint", "7", "3", cwd=tmp_path)
    assert "hint 2 of 2" in again.stdout
    assert "hint 1 of 2" in learn("hint", "7", "3", "--level", "1", cwd=tmp_path).stdout


def test_a_learner_function_that_never_returns_fails_within_its_limit_naming_it(
        tmp_path, monkeypatch):
    import dataclasses
    import time

    from simplekafka.learn.checks import stage7

    limited = dataclasses.replace(STAGES[7].exercise(1), time_limit=1.5)
    monkeypatch.setitem(STAGES, 7, dataclasses.replace(
        STAGES[7], exercises=(limited, *STAGES[7].exercises[1:])))
    assert stage7  # the stage module stays as it is; only the limit is shortened here
    directory = fill_with_reference(
        tmp_path, 7, "    ends = [leader_end_offset]\n",
        "    import time\n    while True:\n        time.sleep(1)\n")
    began = time.monotonic()
    result = learn("check", "7", str(directory), cwd=tmp_path)
    assert time.monotonic() - began < 10
    assert result.returncode == 1
    assert headline(7, 1) in result.stdout
    assert "your high_watermark did not return within 1.5 s" in result.stdout, result.stdout
    assert "stage7_replication.py" in result.stdout


CALLS = '''

def _called(name):  # added by the test: each call of a learner function leaves a line
    from pathlib import Path
    with open(Path(__file__).with_name("calls.log"), "a") as calls:
        calls.write(name + "\\n")
'''


def _with_call_marks(module: str, marks: dict[str, str]) -> str:
    """The reference solution, each text in ``marks`` preceded by a call of _called(name)."""
    source = (SOLUTIONS / f"{module}.py").read_text()
    for text, name in marks.items():
        assert source.count(text) == 1, text
        indent = text[: len(text) - len(text.lstrip())]
        source = source.replace(text, f"{indent}_called({name!r})\n{text}")
    return source + CALLS


def _exchange(sock, api_key, version: int, correlation_id: int, body: dict):
    from simplekafka.protocol import decode_response, encode_request
    from simplekafka.protocol.framing import encode_frame

    sock.sendall(encode_frame(encode_request(api_key, version, correlation_id, "test", body)))
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = sock.recv(65536)
        assert chunk, "the served broker closed the connection"
        data += chunk
    got_id, answer = decode_response(api_key, version, data[4:])
    assert got_id == correlation_id
    return answer


@pytest.mark.integration
def test_a_served_broker_runs_the_learners_passed_stage_1_and_3_code(tmp_path):
    """Stage 4 served with stages 1 and 3 passed: the learner's Segment and varints do the work."""
    import socket

    from simplekafka.learn.checks.stage4 import served
    from simplekafka.learn.report import Steps
    from simplekafka.protocol import ApiKey
    from simplekafka.protocol.records import build_batch, parse_batches

    directory = tmp_path / "mine"
    for stage in (1, 3, 4):
        assert learn("start", str(stage), str(directory), cwd=tmp_path).returncode == 0
    (directory / "stage1_protocol.py").write_text(_with_call_marks(
        "stage1_protocol", {"    zigzag = 0\n    shift = 0\n": "decode_varint"}))
    (directory / "stage3_storage.py").write_text(_with_call_marks("stage3_storage", {
        "        position = self.log_path.stat().st_size\n": "Segment.append",
        "        position = self.lookup(offset)\n": "Segment.read",
        "        data = self.log_path.read_bytes()\n        position = 0\n": "Segment.recover"}))
    (directory / "stage4_broker.py").write_text((SOLUTIONS / "stage4_broker.py").read_text())
    for stage in (1, 3):
        result = learn("check", str(stage), str(directory), cwd=tmp_path)
        assert result.returncode == 0, result.stdout
    calls = directory / "calls.log"
    calls.unlink()  # the checks called them too: only the served broker's calls count now

    steps = Steps()
    values = [b"one", b"two", b"three"]
    with served(directory, tmp_path / "work", steps) as port:
        with socket.create_connection(("127.0.0.1", port), 10) as sock:
            sock.settimeout(30)
            _exchange(sock, ApiKey.METADATA, 8, 1, {"topics": [{"name": "events"}]})
            produced = _exchange(sock, ApiKey.PRODUCE, 7, 2, {
                "acks": -1, "timeout_ms": 1000, "topic_data": [{"name": "events",
                    "partition_data": [{"index": 0, "records": build_batch(
                        [(None, v) for v in values])}]}]})
            assert produced.responses[0].partition_responses[0].error_code == 0
            fetched = _exchange(sock, ApiKey.FETCH, 11, 3, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                "topics": [{"topic": "events", "partitions": [
                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
    records = fetched.responses[0].partitions[0].records
    assert [r.value for b in parse_batches(records) for r in b] == values
    served_log = (tmp_path / "work" / "served.log").read_text()
    for function in ("Segment.append", "Segment.lookup", "Segment.read", "Segment.recover"):
        assert (f"your {function} runs as simplekafka.learn.segment_log:{function}"
                in served_log), served_log
    assert "stage 1 exercise 1: your decode_varint runs as " \
           "simplekafka.learn.segment_log:decode_varint" in served_log, served_log
    seen = calls.read_text().split()
    assert "Segment.recover" in seen  # the topic's log opened
    assert "Segment.append" in seen and "Segment.read" in seen
    assert seen.count("decode_varint") == len(values)  # one record length each, walked
