"""Every Jupyter walkthrough in notebooks/ runs, cell by cell, in a real kernel.

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

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))
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


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3, "notebooks/ should hold the walkthroughs"


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
    notebook = jupytext.read(path)
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
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            # A traceback printed by a thread (not raised) is an error too.
            text = output.get("text", "")
            assert "Traceback (most recent call last)" not in text, f"{path.name} {cell.id}: {text}"
