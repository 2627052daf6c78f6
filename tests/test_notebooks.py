"""Every Jupyter walkthrough in notebooks/ runs, cell by cell, in a real kernel.

There are nine, one per stage (``01_*.md`` to ``09_*.md``). Each shows at
least one plot and has at least one "now you try" cell (tagged
``now-you-try``) whose answer the next cell (tagged ``check``) checks with
:func:`simplekafka.learn.try_it.check`. The test runs each notebook once, with
the right answer from ``notebooks/answers/<name>.py`` in the try cell, and
right after its check runs the check again on the wrong answer written there,
then on the cell as shipped (``None``), before going on: so a check that
passes a wrong answer, or a later cell that needs the learner's answer, fails
the test.

The notebooks are text notebooks (MyST markdown, read with jupytext), so they are
edited, diffed and linted as text. They start real clusters (ZooKeeper and broker
processes), so running them is an integration test. The kernel is this
interpreter (a kernelspec written to a temporary JUPYTER_PATH), not whatever
``python3`` kernel a machine happens to have registered, so a fresh clone needs
nothing beyond ``pip install -e .[all]``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError
from traitlets.config import Config

from simplekafka.learn.try_it import NOT_YET, RIGHT, WRONG

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))
ANSWERS = ROOT / "notebooks" / "answers"
TRY, CHECK = "now-you-try", "check"
SECTION = re.compile(r"^# --- (right|wrong) (\d+)[ \t]*$", re.M)
KERNEL_NAME = "simplekafka-test"
CELL_TIMEOUT = 240  # seconds; a cell that starts a three-broker cluster on a busy machine
STARTUP_TIMEOUT = 120
# Time the kernel gets to exit by itself after the last cell; its atexit hooks stop any
# LocalCluster a failed notebook left running (stopping three brokers takes a while).
KERNEL_SHUTDOWN_WAIT = 90


def processes_mentioning(path: Path) -> list[int]:
    """Pids of processes whose command line names ``path`` (brokers and ZooKeeper we started)."""
    found = []
    needle = str(path).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return found


def end_processes(pids: list[int], grace: float = 30.0) -> None:
    """SIGTERM, then SIGKILL what is still there after ``grace`` seconds."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.2)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def kernel_path(tmp_path, monkeypatch) -> str:
    """A kernelspec that runs ipykernel in this very interpreter, first on JUPYTER_PATH."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "SimpleKafka tests",
        "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL_NAME


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def answers(path: Path) -> dict[tuple[str, int], str]:
    """The ``# --- right N`` / ``# --- wrong N`` sections of an answers file."""
    text = path.read_text()
    marks = list(SECTION.finditer(text))
    return {(m.group(1), int(m.group(2))): text[m.end():nxt.start() if nxt else len(text)].strip()
            for m, nxt in zip(marks, [*marks[1:], None])}


def harnessed(notebook, answer_text: dict[tuple[str, int], str]):
    """The notebook with each try cell answered right, and its check rerun on wrong and on None.

    Returns the new notebook and, per check run, the id of the cell and the mark
    its output must start with.
    """
    cells, expected = [], []
    tried = 0
    pending_try = None
    for cell in notebook.cells:
        if cell.cell_type == "code" and TRY in tags(cell):
            tried += 1
            pending_try = (tried, cell.source)
            right = nbformat.v4.new_code_cell(answer_text[("right", tried)])
            right.metadata["tags"] = [TRY]
            cells.append(right)
            continue
        cells.append(cell)
        if cell.cell_type == "code" and CHECK in tags(cell) and pending_try:
            number, shipped = pending_try
            expected.append((cell.id, RIGHT))
            for source, mark in ((answer_text[("wrong", number)], WRONG), (shipped, NOT_YET)):
                cells.append(nbformat.v4.new_code_cell(source))
                again = nbformat.v4.new_code_cell(cell.source)
                cells.append(again)
                expected.append((again.id, mark))
            pending_try = None
    changed = nbformat.v4.new_notebook(cells=cells, metadata=notebook.metadata)
    return changed, expected


def mark_problems(executed, expected: list[tuple[str, str]]) -> list[str]:
    """Check runs whose printed output does not start with the mark they must print."""
    by_id = {cell.id: cell for cell in executed.cells}
    problems = []
    for cell_id, mark in expected:
        printed = "".join(o.get("text", "") for o in by_id[cell_id].get("outputs", []))
        if not printed.lstrip().startswith(mark):
            problems.append(f"a check printed {printed.strip()[:200]!r}; it must start with {mark}")
    return problems


def test_nine_notebooks_one_per_stage():
    numbers = [int(re.match(r"(\d\d)_", path.name).group(1)) for path in NOTEBOOKS
               if re.match(r"\d\d_", path.name)]
    assert len(numbers) == len(NOTEBOOKS), "every notebook is named NN_topic.md"
    assert sorted(numbers) == list(range(1, 10))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_has_a_try_cell_a_check_and_answers(path):
    notebook = jupytext.read(path)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    tries = [n for n, cell in enumerate(code) if TRY in tags(cell)]
    assert tries, f"{path.name} has no cell tagged {TRY}"
    for number, at in enumerate(tries, 1):
        assert at + 1 < len(code) and CHECK in tags(code[at + 1]), (
            f"{path.name}: try cell {number} is not followed by a cell tagged {CHECK}")
        assert "None" in code[at].source, f"{path.name}: try cell {number} ships its answer"
        assert "try_it" in code[at + 1].source or "check(" in code[at + 1].source
    written = answers(ANSWERS / f"{path.stem}.py")
    for number in range(1, len(tries) + 1):
        assert written.get(("right", number)) and written.get(("wrong", number)), (
            f"notebooks/answers/{path.stem}.py needs '# --- right {number}' and "
            f"'# --- wrong {number}'")


def _tiny_notebook(check_source: str):
    notebook = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell("answer = None  # 6 times 7")
    first.metadata["tags"] = [TRY]
    second = nbformat.v4.new_code_cell(check_source)
    second.metadata["tags"] = [CHECK]
    notebook.cells = [first, second]
    return notebook


def _run_tiny(notebook, kernel_path) -> None:
    NotebookClient(notebook, kernel_name=kernel_path, timeout=60,
                   startup_timeout=STARTUP_TIMEOUT).execute()


@pytest.mark.integration
def test_the_harness_passes_a_real_check_and_catches_one_that_passes_anything(kernel_path):
    right_and_wrong = {("right", 1): "answer = 42", ("wrong", 1): "answer = 41"}
    real = "from simplekafka.learn.try_it import check\ncheck('six times seven', answer, 42)"
    notebook, expected = harnessed(_tiny_notebook(real), right_and_wrong)
    _run_tiny(notebook, kernel_path)
    assert [mark for _, mark in expected] == [RIGHT, WRONG, NOT_YET]
    assert mark_problems(notebook, expected) == []
    lenient = "from simplekafka.learn.try_it import check\ncheck('anything', answer, answer)"
    notebook, expected = harnessed(_tiny_notebook(lenient), right_and_wrong)
    _run_tiny(notebook, kernel_path)
    assert mark_problems(notebook, expected) == [  # the wrong answer "passes"
        "a check printed '✓ anything: right, 41'; it must start with ✗"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_myst_text_notebooks(path):
    """A jupytext MyST notebook with a Python kernel, so that MyST-NB and Jupyter open it."""
    notebook = jupytext.read(path)
    format_name = jupytext.formats.format_name_for_ext(notebook.metadata, ".md")
    assert format_name == "myst", f"{path.name} is not a MyST notebook"
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["language"] == "python"
    assert any(cell.cell_type == "code" for cell in notebook.cells), f"{path.name} has no code"


@pytest.mark.integration
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_code_is_lint_clean(path):
    """The code cells pass the repository's ruff rules (ruff's notebook mode, cell by cell)."""
    script = jupytext.writes(jupytext.read(path), fmt="ipynb")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--stdin-filename", f"{path.stem}.ipynb", "-"],
        cwd=ROOT, input=script, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, kernel_path, tmp_path, monkeypatch):
    """Every cell runs without an error, each within CELL_TIMEOUT seconds."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The kernel inherits this: clusters and temporary files the notebook makes land here.
    monkeypatch.setenv("TMPDIR", str(run_dir))
    notebook, expected = harnessed(jupytext.read(path), answers(ANSWERS / f"{path.stem}.py"))
    client = NotebookClient(
        notebook,
        kernel_name=kernel_path,
        timeout=CELL_TIMEOUT,
        startup_timeout=STARTUP_TIMEOUT,
        allow_errors=False,
        resources={"metadata": {"path": str(run_dir)}},
        config=Config({"KernelManager": {"shutdown_wait_time": KERNEL_SHUTDOWN_WAIT}}),
    )
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as exc:
        pytest.fail(f"{path.name}: {exc}", pytrace=False)
    finally:
        left_behind = processes_mentioning(run_dir)
        end_processes(left_behind)
    assert not left_behind, f"{path.name} left processes running: {left_behind}"
    assert mark_problems(notebook, expected) == [], path.name
    plots = [o for cell in notebook.cells if cell.cell_type == "code"
             for o in cell.outputs if "image/png" in o.get("data", {})]
    assert plots, f"{path.name} shows no plot"
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            # A traceback printed by a thread (not raised) is an error too.
            text = output.get("text", "")
            assert "Traceback (most recent call last)" not in text, f"{path.name} {cell.id}: {text}"
