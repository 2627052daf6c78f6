"""Fixtures shared by tests/ and every stages/*/test_*.py (at the root, so both see them).

Keep each fixture small and add new ones below the others; several stages share this file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

# Under CI, hypothesis draws the same examples every run, so a red CI is always
# reproducible and never caused by a lucky draw; developers' runs keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Strict encoding (simplekafka.protocol.schema): every encode, in this process and in the
# brokers and clients it starts (they inherit the environment), refuses a dict key that no
# version of the message has, so a misspelt field fails the test that sends it.
os.environ.setdefault("SIMPLEKAFKA_STRICT_ENCODE", "1")

# Every Spark driver the suite starts (this process's SparkSession, and the drivers started
# as processes: restart jobs, demos, notebooks, benchmarks in tiny mode, all of which
# inherit the environment) runs its JVM with the serial collector and the client compiler
# only, as our ZooKeeper and Spark daemons do: a test's queries are small and short, and on
# two busy cores the server compiler's threads cost more than they win (a driver's start
# and first queries took a third to a half less so). Only speed changes, never what a test
# checks.
# The executors a driver starts on a Spark standalone cluster (test_standalone.py, the
# run_cluster.sh demo, the docs' Spark-cluster page: two executor JVMs per driver start)
# get the client compiler only too, through Spark's defaultJavaOptions, which Spark puts
# before the extraJavaOptions that simplekafka.spark.session sets (the serial collector).
# A driver also maps the classes Spark loads from the class-data-sharing archive that
# tools/bootstrap.sh writes (tools/jvm_cds.py: about half a driver start's CPU), and every
# embedded ZooKeeper its own, when they exist; a JVM ignores one that does not match it,
# silently.
_spec = importlib.util.spec_from_file_location(
    "jvm_cds", Path(__file__).resolve().parent / "tools" / "jvm_cds.py")
jvm_cds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jvm_cds)  # type: ignore[union-attr]
SPARK_DRIVER_JAVA_OPTIONS = " ".join(filter(None, [jvm_cds.DRIVER_OPTIONS,
                                                   jvm_cds.use_options(jvm_cds.SPARK_ARCHIVE)]))
os.environ.setdefault("SIMPLEKAFKA_ZOOKEEPER_JVM_OPTIONS",
                      jvm_cds.use_options(jvm_cds.ZOOKEEPER_ARCHIVE))
# The executors and a standalone cluster's master and workers run with Spark's class path
# too (the driver's, the archive's), so they map the driver's archive as well.
SPARK_EXECUTOR_DEFAULT_JAVA_OPTIONS = " ".join(filter(None, [
    "-XX:TieredStopAtLevel=1", jvm_cds.use_options(jvm_cds.SPARK_ARCHIVE)]))
os.environ.setdefault("SIMPLEKAFKA_SPARK_DAEMON_JVM_OPTIONS",
                      jvm_cds.use_options(jvm_cds.SPARK_ARCHIVE))
os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                      f"--driver-java-options '{SPARK_DRIVER_JAVA_OPTIONS}' "
                      f"--conf 'spark.executor.defaultJavaOptions="
                      f"{SPARK_EXECUTOR_DEFAULT_JAVA_OPTIONS}' pyspark-shell")

# Real-ZooKeeper fixtures (zookeeper, zk_connect, zk, zk_client_factory) for every stage;
# and the first failure of each rerun test, printed at the end of the run.
pytest_plugins = ["simplekafka.coordination.pytest_plugin", "tests.rerun_text"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running single-broker LocalCluster (embedded ZooKeeper), one per test module.

    Tests that kill or restart brokers should build their own LocalCluster
    rather than disturb this shared one.
    """
    from simplekafka.cluster import LocalCluster

    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("cluster"))
    local.start()
    try:
        yield local
    finally:
        local.stop()


# -- `-m "not integration"` is a run without real processes ---------------------------
# Tests that start ZooKeeper, brokers, clients, Spark or any other process carry the
# `integration` mark. Two guards keep that true: a test that asks for a fixture that
# starts processes must be marked (checked at collection), and an unmarked test that
# starts a process anyway fails at once (checked while its fixtures and body run).

PROCESS_FIXTURES = frozenset({"zookeeper", "cluster", "spark", "spark_cluster"})


class RealProcessInUnitTest(RuntimeError):
    """An unmarked test tried to start a process: mark it ``integration``."""


def unmarked_process_tests(items: list[pytest.Item]) -> list[str]:
    """The ids of tests that use a process-starting fixture but are not marked integration."""
    return [item.nodeid for item in items
            if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ()))
            and item.get_closest_marker("integration") is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = unmarked_process_tests(items)
    if unmarked:
        raise pytest.UsageError(
            "these tests start real processes through their fixtures but are not marked "
            "@pytest.mark.integration: " + ", ".join(unmarked))


# -- several pytest workers (run_tests.sh runs pytest-xdist) -------------------------------
# Most of the suite's wall time is spent waiting on real processes, so run_tests.sh
# spreads it over a few workers. A module is the unit of distribution (its module-scoped
# cluster is started once, on one worker), and every Spark test (all of stage 8) shares
# one worker, so the run still has one local SparkSession (the standalone-cluster module
# is a unit of its own, so that it runs in parallel with them). (xdist's own "loadgroup" marks do
# not reach its scheduler under pytest 9, so the grouping is a scheduler of our own.)

SPARK_TESTS = "stages/stage8_spark/"
# ...but for the standalone-cluster module: its own unit, run beside the local[2] ones (its
# session is a SparkContext of its own, which one process cannot hold beside theirs).
SPARK_STANDALONE_TESTS = "stages/stage8_spark/test_standalone.py"
# Learner mode's tests are parametrized by stage ("[stage4]", "[stage4.2-<mutant>]"): each
# stage is a unit of its own (its checks start that stage's processes); stage 8's tests that
# reach its exercise 4 (the reader run by Spark) join Spark.
LEARN_TESTS = "tests/test_learn.py::"
LEARN_STAGE = re.compile(r"\[stage(\d+)(?:\.(\d+))?[\]-]")
SPARK_EXERCISE = ("8", "4")


def worker_group(nodeid: str) -> str:
    """The unit a worker takes whole: "spark" for Spark tests, else the test's module."""
    if nodeid.startswith(SPARK_STANDALONE_TESTS):
        return SPARK_STANDALONE_TESTS
    if nodeid.startswith(SPARK_TESTS):
        return "spark"
    if nodeid.startswith(LEARN_TESTS):
        stage = LEARN_STAGE.search(nodeid)
        if stage:
            number, exercise = stage.group(1), stage.group(2)
            if number == SPARK_EXERCISE[0] and exercise in (None, SPARK_EXERCISE[1]):
                return "spark"
            return f"{LEARN_TESTS}stage{number}"
    return nodeid.split("::", 1)[0]


# Longest unit first: a 15-minute unit handed out last would end the run alone, long after
# the other workers ran out of work. xdist orders units by their number of tests; we order
# them by the seconds each took in a full run (tools/test_durations.json, written from a
# run's junit XML by tools/test_durations.py). A unit the file does not know (new, renamed)
# counts UNKNOWN_TEST_SECONDS a test. Only the order depends on the file, never a result.
DURATIONS = Path(__file__).resolve().parent / "tools" / "test_durations.json"
UNKNOWN_TEST_SECONDS = 1.0


def unit_seconds() -> dict[str, float]:
    """Seconds per worker_group unit from the last recorded full run ({} if none)."""
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def longest_first(units: dict[str, dict[str, bool]],
                  seconds: dict[str, float]) -> list[tuple[str, dict[str, bool]]]:
    """``units`` (unit -> its tests) ordered by their expected seconds, the longest first."""
    return sorted(units.items(),
                  key=lambda unit: -seconds.get(unit[0], UNKNOWN_TEST_SECONDS * len(unit[1])))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: fine without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ModuleAndSparkScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first hand-out: the queue is complete now
                units = longest_first(dict(self.workqueue), unit_seconds())
                self.workqueue.clear()
                self.workqueue.update(units)
                self.ordered = True
            super()._assign_work_unit(node)

    return ModuleAndSparkScheduling(config, log)


def _refuse_process(popen: object, args: object, *rest: object, **kwargs: object) -> None:
    raise RealProcessInUnitTest(
        f"this test starts a process ({args!r}) but is not marked integration; "
        "add @pytest.mark.integration (or a module-level pytestmark)")


def _without_processes(item: pytest.Item):
    if item.get_closest_marker("integration") is not None:
        yield
        return
    spawn = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    subprocess.Popen._execute_child = _refuse_process  # type: ignore[attr-defined]
    try:
        yield
    finally:
        subprocess.Popen._execute_child = spawn  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    yield from _without_processes(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield from _without_processes(item)
