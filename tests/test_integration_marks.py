"""`-m "not integration"` runs without real processes, and stays that way.

The root ``conftest.py`` enforces it twice: at collection, a test that uses a
process-starting fixture must be marked ``integration``; while a test runs, an
unmarked one that starts a process fails at once. These tests show both guards
work (they are unmarked themselves, so the second guard is active here).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import PROCESS_FIXTURES, RealProcessInUnitTest, unmarked_process_tests


def test_an_unmarked_test_cannot_start_a_process():
    with pytest.raises(RealProcessInUnitTest, match="not marked integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


class _Item:
    def __init__(self, nodeid: str, fixturenames: list[str], marked: bool):
        self.nodeid, self.fixturenames, self.marked = nodeid, fixturenames, marked

    def get_closest_marker(self, name: str) -> object | None:
        return object() if self.marked and name == "integration" else None


def test_collection_names_unmarked_tests_that_use_process_fixtures():
    items = [_Item("a", ["tmp_path"], False), _Item("b", ["zk", "zookeeper"], False),
             _Item("c", ["cluster"], True), _Item("d", ["spark"], False)]
    assert unmarked_process_tests(items) == ["b", "d"]  # type: ignore[arg-type]
    assert {"zookeeper", "cluster", "spark"} <= PROCESS_FIXTURES


def test_this_session_has_no_unmarked_process_tests(request):
    """Whatever this run collected (e.g. with -m "not integration"), nothing starts processes."""
    collected = request.session.items
    assert request.node in collected
    assert unmarked_process_tests(collected) == []
    if request.config.getoption("-m") == "not integration":
        assert all(item.get_closest_marker("integration") is None for item in collected)
