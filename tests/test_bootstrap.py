"""The demo's set-up installs only what the demo needs; the test command's installs the rest.

``./run_cluster.sh`` (the README's first command) calls ``tools/bootstrap.sh --demo``;
``./run_tests.sh`` (and ``.ci/run``, which runs it) calls the full ``tools/bootstrap.sh``.
These tests read which arguments each command passes to the bootstrap, run the
bootstrap with them in ``--dry-run`` mode (it prints one line per step, whether or not
the step is done already, and changes nothing: ``sudo``, ``apt-get`` and the Python
that would create the virtualenv are stubs here that record any call), and check the
plan: the demo's has no Chromium, docker-compose, Redis, rdkafka_performance build or
test/docs extras; the test command's still has every one of them. The planted
violations show each check failing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent

#: Steps only the tests, the docs, the notebooks and the benchmarks need.
TEST_ONLY_STEPS = {"apt chromium", "apt docker-compose", "apt redis-server", "apt redis-tools",
                   "apt kcat", "apt graphviz", "build rdkafka_performance"}
#: Extras the demo must not pull in (directly or through another extra).
TEST_ONLY_EXTRAS = {"all", "test", "docs", "notebooks", "bench", "clients"}
#: What the demo does need: Java for ZooKeeper, the Spark extra (pyspark also carries
#: the ZooKeeper jars) and confluent-kafka (``--secure``'s clients).
DEMO_NEEDS_STEPS = {"apt openjdk-17-jre-headless"}
DEMO_NEEDS_EXTRAS = {"spark"}
DEMO_NEEDS_REQUIREMENTS = {"pyspark", "confluent-kafka"}
#: What the full set-up has always installed.
FULL_EXTRAS = {"spark", "docs", "notebooks", "clients", "bench", "test"}


# -- the checks, on a plan (the dry run's lines) and pyproject.toml's extras ----------

def extras_closure(pyproject: dict, extra: str) -> tuple[set[str], set[str]]:
    """(extras, requirement names) that ``pip install -e .[extra]`` installs."""
    table = pyproject["project"]["optional-dependencies"]
    name = pyproject["project"]["name"]
    extras, requirements, todo = set(), set(), [extra]
    while todo:
        current = todo.pop()
        if current in extras:
            continue
        extras.add(current)
        for requirement in table[current]:
            match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
            assert match, requirement
            if match.group(1) == name:
                todo.extend(e.strip() for e in (match.group(2) or "").split(","))
            else:
                requirements.add(match.group(1).lower())
    return extras, requirements


def pip_extras(plan: set[str], pyproject: dict) -> tuple[set[str], set[str]]:
    extras, requirements = set(), set()
    for line in plan:
        if line.startswith("pip "):
            more, reqs = extras_closure(pyproject, line.split()[1])
            extras |= more
            requirements |= reqs
    return extras, requirements


def demo_violations(plan: set[str], pyproject: dict) -> list[str]:
    """What is wrong with the demo's plan: test-only steps or extras, or a need left out."""
    extras, requirements = pip_extras(plan, pyproject)
    wrong = [f"installs {step!r}, which only the tests use"
             for step in sorted(plan & TEST_ONLY_STEPS)]
    wrong += [f"installs the {extra!r} extra" for extra in sorted(extras & TEST_ONLY_EXTRAS)]
    wrong += [f"leaves out {step!r}" for step in sorted(DEMO_NEEDS_STEPS - plan)]
    wrong += [f"leaves out the {extra!r} extra" for extra in sorted(DEMO_NEEDS_EXTRAS - extras)]
    wrong += [f"leaves out {req}" for req in sorted(DEMO_NEEDS_REQUIREMENTS - requirements)]
    return wrong


def full_violations(plan: set[str], pyproject: dict) -> list[str]:
    """What the test command's plan lacks of everything the bootstrap has always installed."""
    extras, _ = pip_extras(plan, pyproject)
    wrong = [f"leaves out {step!r}" for step in sorted((TEST_ONLY_STEPS | DEMO_NEEDS_STEPS) - plan)]
    wrong += [f"leaves out the {extra!r} extra" for extra in sorted(FULL_EXTRAS - extras)]
    return wrong


# -- reading a command's bootstrap path ------------------------------------------------

def bootstrap_calls(script: Path) -> list[list[str]]:
    """The argument lists with which a shell script calls tools/bootstrap.sh."""
    calls = []
    for line in script.read_text().splitlines():
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if "tools/bootstrap.sh" not in code:
            continue
        words = shlex.split(code)
        at = next(i for i, word in enumerate(words) if word.endswith("tools/bootstrap.sh"))
        calls.append(words[at + 1:])
    return calls


def dry_run_plan(root: Path, command: str, tmp_path: Path) -> set[str]:
    """Every step the bootstrap would take for ``command`` (run_cluster.sh, run_tests.sh)."""
    calls = bootstrap_calls(root / command)
    assert calls, f"{command} does not call tools/bootstrap.sh"
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    record = tmp_path / "stub-calls"
    for name in ("sudo", "apt-get", "pip", "pip3", "python3", "fake-python"):
        stub = stubs / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{record}"\nexit 1\n')
        stub.chmod(0o755)
    venv = tmp_path / "venv"
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}",
           "SIMPLEKAFKA_VENV": str(venv), "PYTHON": str(stubs / "fake-python")}
    plan: set[str] = set()
    for args in calls:
        result = subprocess.run(["bash", str(root / "tools/bootstrap.sh"), *args, "--dry-run"],
                                env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        plan |= {line.strip() for line in result.stdout.splitlines() if line.strip()}
    assert not record.exists(), f"the dry run installed something: {record.read_text()}"
    assert not venv.exists(), "the dry run created the virtualenv"
    return plan


def load_pyproject(root: Path) -> dict:
    with (root / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


# -- the real repository -----------------------------------------------------------------

@pytest.mark.integration  # runs bash (the bootstrap's dry run; nothing is installed)
def test_the_demo_installs_only_what_the_demo_needs(tmp_path):
    plan = dry_run_plan(ROOT, "run_cluster.sh", tmp_path)
    assert demo_violations(plan, load_pyproject(ROOT)) == [], plan


@pytest.mark.integration  # runs bash (the bootstrap's dry run; nothing is installed)
def test_the_test_command_still_installs_everything(tmp_path):
    assert "./run_tests.sh" in (ROOT / ".ci/run").read_text()
    plan = dry_run_plan(ROOT, "run_tests.sh", tmp_path)
    assert full_violations(plan, load_pyproject(ROOT)) == [], plan


def test_the_demo_extra_is_part_of_all():
    """The stamp logic counts "all" as covering "demo": so it must."""
    pyproject = load_pyproject(ROOT)
    demo, _ = extras_closure(pyproject, "demo")
    everything, _ = extras_closure(pyproject, "all")
    assert demo <= everything


# -- planted violations: each check fails on a repository copy that breaks it ------------

def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    (copy / "tools").mkdir(parents=True)
    for name in ("run_cluster.sh", "run_tests.sh", "pyproject.toml", "tools/bootstrap.sh"):
        shutil.copy2(ROOT / name, copy / name)
    return copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} is no longer in {path.name}: update the planted violation"
    path.write_text(text.replace(old, new, 1))


JAVA = 'apt_packages "a Java runtime for ZooKeeper" java openjdk-17-jre-headless'
DEMO_PLANTS = {
    "run_cluster.sh runs the full bootstrap": (
        "run_cluster.sh", '"$ROOT/tools/bootstrap.sh" --demo', '"$ROOT/tools/bootstrap.sh"'),
    "the demo mode installs chromium": (
        "tools/bootstrap.sh", JAVA, JAVA + " chromium chromium"),
    "the demo mode builds rdkafka_performance": (
        "tools/bootstrap.sh", 'niced).\nif [ "$MODE" = full ]; then', 'niced).\nif true; then'),
    "the demo extra pulls in the test extra": (
        "pyproject.toml", 'demo = ["simplekafka[spark]"', 'demo = ["simplekafka[spark,test]"'),
    "the demo extra leaves out confluent-kafka": (
        "pyproject.toml", 'demo = ["simplekafka[spark]", "confluent-kafka>=2.3"]',
        'demo = ["simplekafka[spark]"]'),
}


@pytest.mark.integration  # runs bash (the bootstrap's dry run; nothing is installed)
@pytest.mark.parametrize("plant", DEMO_PLANTS)
def test_a_planted_demo_violation_is_caught(tmp_path, plant):
    copy = _copy(tmp_path)
    name, old, new = DEMO_PLANTS[plant]
    _edit(copy / name, old, new)
    plan = dry_run_plan(copy, "run_cluster.sh", tmp_path)
    assert demo_violations(plan, load_pyproject(copy)) != [], plant


@pytest.mark.integration  # runs bash (the bootstrap's dry run; nothing is installed)
def test_a_test_command_that_runs_the_demo_bootstrap_is_caught(tmp_path):
    copy = _copy(tmp_path)
    _edit(copy / "run_tests.sh", '"$ROOT/tools/bootstrap.sh"', '"$ROOT/tools/bootstrap.sh" --demo')
    plan = dry_run_plan(copy, "run_tests.sh", tmp_path)
    assert full_violations(plan, load_pyproject(copy)) != []


def test_the_checks_on_bad_plans():
    pyproject = load_pyproject(ROOT)
    good_demo = {"apt openjdk-17-jre-headless", "pip demo"}
    assert demo_violations(good_demo, pyproject) == []
    assert demo_violations(good_demo | {"apt redis-server"}, pyproject) == [
        "installs 'apt redis-server', which only the tests use"]
    assert "installs the 'test' extra" in demo_violations(
        {"apt openjdk-17-jre-headless", "pip all"}, pyproject)
    assert demo_violations({"pip demo"}, pyproject) == ["leaves out 'apt openjdk-17-jre-headless'"]
    assert full_violations(good_demo, pyproject) != []


# -- the virtualenv's stamp: the demo's extra first, the full set later ------------------

@pytest.mark.integration  # runs bash (the real bootstrap, against stubs: nothing is installed)
def test_the_full_set_after_the_demo_installs_the_rest_into_the_same_virtualenv(tmp_path):
    stubs, record = tmp_path / "stubs", tmp_path / "calls"
    venv = tmp_path / "venv"
    stubs.mkdir()
    (venv / "bin").mkdir(parents=True)
    (venv / "opt").mkdir()
    for path in (stubs / "sudo", stubs / "apt-get", venv / "bin/python", venv / "bin/pip",
                 venv / "opt/rdkafka_performance"):
        name = path.name
        body = 'exec "$@"' if name == "sudo" else f'echo "{name} $*" >> "{record}"'
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "SIMPLEKAFKA_VENV": str(venv)}
    stamp = venv / ".simplekafka-installed"

    def bootstrap(*args: str) -> list[str]:
        """The pip installs one bootstrap run made (apt-get calls are stubbed and ignored)."""
        record.unlink(missing_ok=True)
        result = subprocess.run(["bash", str(ROOT / "tools/bootstrap.sh"), *args], env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        calls = record.read_text().splitlines() if record.exists() else []
        return [call.rsplit("[", 1)[1].rstrip("]") for call in calls if call.startswith("pip ")]

    assert bootstrap("--demo") == ["demo"]
    assert bootstrap("--demo") == []          # done already
    assert bootstrap() == ["all"]             # the test command installs the rest
    assert bootstrap() == []
    assert bootstrap("--demo") == []          # "all" covers the demo
    digest = stamp.read_text().split()[0]
    stamp.write_text(digest + "\n")           # a stamp from before the modes: it was "all"
    assert bootstrap() == []
    stamp.write_text("0" * 64 + " all\n")     # the packaging files changed
    assert bootstrap("--demo") == ["demo"]
    assert bootstrap() == ["all"]
