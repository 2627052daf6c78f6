"""A test that failed and passed on its rerun shows its first failure at the end of the run
(tests/rerun_text.py), with pytest-xdist's workers as run_tests.sh runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration  # runs pytest as a process

FLAKY = '''
from pathlib import Path


def test_fails_once():
    flag = Path(__file__).with_name("ran-once")
    if not flag.exists():
        flag.write_text("")
        assert 1 + 1 == 3, "the first run: no flag yet"


def test_passes():
    assert True
'''


def _run(tmp_path: Path, *plugin: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_flaky.py").write_text(FLAKY)
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, "--reruns", "1", "-rR", "-n", "2",
         "-p", "no:randomly", "-p", "no:cacheprovider", "test_flaky.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_first_failure_of_a_rerun_test_is_printed(tmp_path):
    result = _run(tmp_path, "-p", "tests.rerun_text")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 rerun" in result.stdout
    section = result.stdout.split("the failures that were rerun, as they first failed", 1)
    assert len(section) == 2, result.stdout[-3000:]
    assert "--- test_flaky.py::test_fails_once" in section[1]
    assert "the first run: no flag yet" in section[1]


def test_pytest_rerunfailures_alone_keeps_the_first_failure_to_itself(tmp_path):
    plain = _run(tmp_path)
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert "test_fails_once" in plain.stdout  # named in the rerun summary (-rR)
    assert "the first run: no flag yet" not in plain.stdout
