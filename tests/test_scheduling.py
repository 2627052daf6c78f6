"""The order the pytest-xdist workers take the units in: the longest first.

conftest.py groups tests into units (``worker_group``) and hands them out by the seconds
each took in a recorded full run (tools/test_durations.json, written by
tools/test_durations.py from a junit XML), so that no long unit starts last and ends the
run alone.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DURATIONS, UNKNOWN_TEST_SECONDS, longest_first, unit_seconds, worker_group

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("test_durations_tool",
                                               ROOT / "tools" / "test_durations.py")
assert _spec is not None and _spec.loader is not None
_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_tool)
node_id = _tool.node_id

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="stages.stage8_spark.test_sink" name="test_a" time="10.5"/>
<testcase classname="stages.stage8_spark.test_source" name="test_b[x-1]" time="4.5"/>
<testcase classname="stages.stage8_spark.test_standalone" name="test_c" time="30"/>
<testcase classname="tests.test_cli.TestParser" name="test_d" time="2"/>
<testcase classname="tests.test_cli" name="test_e" time="1"/>
</testsuite></testsuites>
"""


def test_units_go_out_longest_first_and_unknown_ones_by_their_test_count():
    units = {"small": {"a": False}, "big": {"b": False}, "new": {f"n{i}": False for i in range(7)}}
    seconds = {"small": 3.0, "big": 500.0}
    assert [unit for unit, _ in longest_first(units, seconds)] == ["big", "new", "small"]
    assert UNKNOWN_TEST_SECONDS * 7 > seconds["small"]


def test_junit_names_map_back_to_node_ids_and_units():
    assert node_id("tests.test_cli.TestParser", "test_d") == "tests/test_cli.py::TestParser::test_d"
    assert node_id("stages.stage8_spark.test_sink", "test_a[p]") == \
        "stages/stage8_spark/test_sink.py::test_a[p]"
    assert worker_group(node_id("stages.stage8_spark.test_sink", "test_a")) == "spark"


@pytest.mark.integration  # runs the tool as a process, on a copy of the tree's conftest
def test_the_tool_sums_a_junit_run_per_unit(tmp_path):
    (tmp_path / "tools").mkdir()
    for name in ("conftest.py", "tools/test_durations.py", "tools/jvm_cds.py"):  # conftest's
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "run.xml").write_text(JUNIT)
    result = subprocess.run([sys.executable, "tools/test_durations.py", "run.xml", "--top", "1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "tools" / "test_durations.json").read_text())
    assert written == {"stages/stage8_spark/test_standalone.py": 30.0, "spark": 15.0,
                       "tests/test_cli.py": 3.0}
    assert list(written) == ["stages/stage8_spark/test_standalone.py", "spark",
                             "tests/test_cli.py"]
    assert "30.0  stages/stage8_spark/test_standalone.py" in result.stdout
    bad = subprocess.run([sys.executable, "tools/test_durations.py", "missing.xml"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         check=False)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_the_recorded_durations_know_the_longest_units():
    recorded = unit_seconds()
    assert DURATIONS.exists() and recorded
    assert {"spark", "stages/stage8_spark/test_standalone.py"} <= set(recorded)
