"""A pytest plugin: what each rerun test printed when it failed, at the end of the run.

``run_tests.sh`` gives a failed test one rerun (``--reruns 1``). pytest-rerunfailures
names a test that passed on its rerun (``-rR``) but keeps the first failure's
traceback to itself, and a flaky test can only be mended from that text. This
prints it, the last lines of each, in a section of its own at the end of the run
(under pytest-xdist too: the workers' reports reach the controller's hook).
The root ``conftest.py`` loads it.
"""

from __future__ import annotations

import pytest

#: The last lines of each first failure that are printed.
LINES = 60


class RerunText:
    def __init__(self) -> None:
        self.failures: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.outcome == "rerun":
            self.failures.append((report.nodeid, report.longreprtext))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.failures:
            return
        terminalreporter.section("the failures that were rerun, as they first failed")
        for nodeid, text in self.failures:
            terminalreporter.write_line(f"--- {nodeid}")
            for line in text.splitlines()[-LINES:]:
                terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(RerunText(), "simplekafka-rerun-text")
