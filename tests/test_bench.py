"""``simplekafka bench``: the whole suite runs to the end in tiny mode, so it never rots.

Figures are never asserted (they depend on the machine and its neighbours);
what is asserted is that every scenario ran, wrote its figures, its JSON and
its plots, with the C client and the Redis peer in the same run, and that the
command refuses a busy machine unless told --noisy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simplekafka.cli import main
from tests.test_bench_latency_clients import rows as lead_table_rows

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_whole_suite_runs_in_tiny_mode(tmp_path):
    out = tmp_path / "bench"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-m", "simplekafka", "bench", "all", "--tiny", "--out", str(out)],
        capture_output=True, text=True, timeout=850, check=False, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "load average" in result.stdout
    run = json.loads((out / "bench.json").read_text())
    assert run["failures"] == []
    assert run["mode"] == "tiny" and run["representative"] is False
    assert len(run["load_before"]) == 3 and run["machine"]["cores"]
    assert "not representative" in (out / "bench.md").read_text()
    scenarios = {figure["scenario"] for figure in run["figures"]}
    assert {"produce", "consume", "latency", "replication", "scale", "connections",
            "message sizes", "groups"} <= scenarios
    names = " | ".join(figure["name"] for figure in run["figures"])
    # bench latency leads with the Python clients' table, Redis Streams beside us, then the
    # C tool's, its pacing thread at SCHED_IDLE first (tests/test_bench_latency_clients.py).
    latency = [f["name"] for f in run["figures"] if f["scenario"] == "latency"]
    assert latency[0] == "Python clients, two processes: Redis Streams (redis-py) p50", latency
    assert "Python clients, two processes: RF 3 / 1 broker p99" in latency
    c_rows = [name for name in latency if name.startswith("C client")]
    assert c_rows[0] == "C client, pacing thread at SCHED_IDLE p50", c_rows[:3]
    assert "| SimpleKafka, 3 brokers RF 3, acks=all |" in result.stdout
    # The lead table (Python clients against Redis): printed before the figures' table,
    # each system's numbers parse, with the ratios, the load average and sleeping pacers.
    printed = result.stdout
    assert printed.index("Python clients, two processes") < printed.index(
        "simplekafka bench (tiny)")
    for system, (p50, p99, p999, top, ratio) in lead_table_rows(printed).items():
        assert 0 < p50 <= p99 <= p999 <= top and ratio > 0, system
    assert re.search(r"RF 3 acks=all / 1 broker at p99: [\d.]+", printed)
    assert re.search(r"load average [\d.]+ at the start, [\d.]+ at the end", printed)
    assert "pacing by sleeping" in printed and f"{os.cpu_count()} cores" in printed
    for ratio in ("1 broker / Redis p99", "1 broker linger.ms=0 / Redis p99",
                  "RF 3 / Redis p99", "RF 3 / 1 broker p99"):
        assert f"Python clients, two processes: {ratio}" in latency
    # Sleeping pacers: no producer process near a whole core (a spinning one is at 100 %).
    shares = [f["value"] for f in run["figures"] if f["scenario"] == "latency"
              and f["name"].endswith("producer process CPU")]
    assert len(shares) == 4 and all(share < 90 for share in shares), shares
    assert (out / "latency_clients.md").read_text().strip() in printed
    # The peers ran in the same run: the C client (built by tools/bootstrap.sh) and Redis.
    assert "rdkafka_performance (C)" in names and "Redis Streams (C)" in names, run["notes"]
    assert "C client, 1 broker, acks=1 p99" in names
    assert "broker GC pauses over 1 ms" in names  # the collector's share of the tail
    # ... and the machine's: who had the CPUs, and how long the broker waited for one.
    assert "broker reactor thread wait for a CPU per time slice" in names
    assert "C producer pacing loop (main thread) CPU" in names
    assert "C client, pacing thread at SCHED_IDLE p99" in names
    # ... and the floor: how late any sleeping thread wakes, idle and under the runs.
    assert "wake-up lateness of a 1 ms sleep, idle machine p99.9" in names
    assert "wake-up lateness of a 1 ms sleep, during the C client's runs p99.9" in names
    assert "C client, 3 brokers RF 3, acks=all p99" in names
    assert "C client, 3 brokers RF 3, acks=all, pacing thread at SCHED_IDLE p99" in names
    for plot in ("produce", "consume", "latency_histogram", "latency_pacer", "latency_python",
                 "replication",
                 "message_sizes_mb", "scale_creation", "scale_controller_failover"):
        assert (out / f"{plot}.png").stat().st_size > 1000, plot


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_command_runs_the_suite_as_a_script_from_the_checkout(monkeypatch, tmp_path):
    """No sys.path edit, no import of benchmarks/: ``python -m benchmarks.suite`` there."""
    from simplekafka.cli import bench_cmd

    source = Path(bench_cmd.__file__).read_text()
    assert "sys.path" not in source and "import_module" not in source
    calls = []
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(subprocess, "run",
                        lambda command, **kw: calls.append((command, kw)) or
                        subprocess.CompletedProcess(command, 0))
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "produce", "--tiny", "--out", "out", "--no-plots"]) == 0
    (command, kw), = calls
    assert command[:4] == [sys.executable, "-m", "benchmarks.suite", "produce"]
    assert command[command.index("--out") + 1] == str(tmp_path / "out")
    assert "--mode" in command and "tiny" in command and "--no-plots" in command
    assert kw["cwd"] == ROOT
    monkeypatch.undo()
    # ... and that command finds the suite from the checkout with no help from PYTHONPATH.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    helped = subprocess.run([sys.executable, "-m", "benchmarks.suite", "--help"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60, check=False)
    assert helped.returncode == 0 and "produce" in helped.stdout, helped.stderr


def test_a_busy_machine_is_refused_without_noisy(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 2.0, 1.0))
    assert main(["bench", "produce", "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "3.50" in error and "--noisy" in error
    assert not (tmp_path / "bench.json").exists()


def test_an_unknown_scenario_is_one_line(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["bench", "speed"])
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "speed" in error


def test_the_latency_pacer_sleeps_instead_of_spinning(monkeypatch):
    """A spinning pacer held a core and the consumer thread's GIL (its delays were ours)."""
    from benchmarks import bench_broker

    now = [0.0]
    reads = [0]
    slept = []

    def perf_counter() -> float:
        reads[0] += 1
        now[0] += 1e-6  # reading the clock costs a microsecond
        return now[0]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds + 50e-6  # a sleep overshoots a little, as Linux's do

    monkeypatch.setattr(bench_broker.time, "perf_counter", perf_counter)
    monkeypatch.setattr(bench_broker.time, "sleep", sleep)
    sent = list(bench_broker.paced(10_000, 1000))
    assert sent == list(range(1000))
    assert 0.09 <= now[0] <= 0.12  # paced at the rate
    assert reads[0] <= 3 * len(slept) + 3  # every clock reading is followed by a sleep


def test_a_run_is_judged_by_the_load_it_started_in():
    """The load at the end counts the run's own brokers and clients, so only the load
    at the start (other work on the machine) decides whether figures are representative."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite.core import Run

    idle_start = Run(mode="small", scenarios=["all"], started=0.0,
                     load_before=(0.4, 0.5, 0.6), load_after=(2.6, 1.9, 1.2))
    busy_start = Run(mode="small", scenarios=["all"], started=0.0,
                     load_before=(1.7, 1.5, 1.2), load_after=(2.6, 1.9, 1.2))
    tiny = Run(mode="tiny", scenarios=["all"], started=0.0,
               load_before=(0.1, 0.1, 0.1), load_after=(0.1, 0.1, 0.1))
    assert idle_start.representative
    assert not busy_start.representative
    assert not tiny.representative


def test_the_failover_phases_come_from_zookeepers_timestamps():
    """The scale scenario splits a failover by the znodes' own times: the new /controller's
    creation, and the last new leader written among the victim's partitions."""
    from types import SimpleNamespace

    from benchmarks.suite.scale import failover_phases

    class Answer:
        def __init__(self, mtime: int) -> None:
            self.stat = SimpleNamespace(mtime=mtime)

        def get(self):
            return b"{}", self.stat

    class ZooKeeper:
        def get(self, path):
            assert path == "/controller"
            return b"{}", SimpleNamespace(ctime=106_500)

        def get_async(self, path):
            return Answer({"/brokers/topics/t/partitions/0/state": 107_000,
                           "/brokers/topics/t/partitions/3/state": 108_250}[path])

    phases = failover_phases(ZooKeeper(), [("t", 0), ("t", 3)], killed_at=100.0)
    assert phases == {"failover: new controller elected (s)": 6.5,
                      "failover: last new leader in ZooKeeper (s)": 8.25}


def test_the_benchmark_pages_idle_latency_command_runs_the_lead_table(monkeypatch, tmp_path):
    """The one command docs/benchmarks.md gives for the idle figures parses and becomes the
    suite run that rewrites the file the page includes; --latency-seconds/--latency-runs
    reach the suite."""
    import re
    import shlex

    page = (ROOT / "docs/benchmarks.md").read_text()
    line, = re.findall(r"^\$ (simplekafka bench latency .*)$", page, re.MULTILINE)
    included = re.findall(r"\{include\} (_static/bench_full/latency/latency_clients\.md)", page)
    assert included and (ROOT / "docs" / included[0]).is_file()
    calls = []
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    monkeypatch.setattr(subprocess, "run",
                        lambda command, **kw: calls.append(command) or
                        subprocess.CompletedProcess(command, 0))
    monkeypatch.chdir(ROOT)  # the page's path is relative to the checkout
    assert main([*shlex.split(line)[1:], "--latency-seconds", "5", "--latency-runs", "2"]) == 0
    command, = calls
    assert command[3:4] == ["latency"] and command[command.index("--mode") + 1] == "full"
    assert command[command.index("--out") + 1] == str(ROOT / "docs/_static/bench_full/latency")
    assert command[command.index("--latency-seconds") + 1] == "5.0"
    assert command[command.index("--latency-runs") + 1] == "2"
    for bad in ("0", "-1", "x", "inf"):
        with pytest.raises(SystemExit):
            main(["bench", "latency", "--latency-seconds", bad])


def test_brokers_from_a_directory_without_the_package_is_one_line(monkeypatch, capsys,
                                                                   tmp_path):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert main(["bench", "latency", "--brokers-from", str(tmp_path),
                 "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--brokers-from" in error and str(tmp_path) in error


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_brokers_from_another_checkout_run_that_checkouts_code(monkeypatch, tmp_path):
    """An A/B of two trees through one harness: the suite passes the other checkout on, and
    a broker started with ``checkout_launcher`` imports that checkout's package."""
    import shutil

    from simplekafka.cluster import LocalCluster, checkout_launcher

    other = tmp_path / "other"
    shutil.copytree(ROOT / "simplekafka", other / "simplekafka",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "simplekafka" / "__init__.py", "a") as init:
        init.write("\nimport os as _os\n_mark = _os.environ.get('SIMPLEKAFKA_TEST_MARK')\n"
                   "if _mark:\n    open(_mark, 'a').write(__file__ + '\\n')\n")
    calls = []
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(subprocess, "run",
                        lambda command, **kw: calls.append(command) or
                        subprocess.CompletedProcess(command, 0))
    assert main(["bench", "latency", "--brokers-from", str(other), "--out",
                 str(tmp_path / "out")]) == 0
    (command,) = calls
    assert command[command.index("--brokers-from") + 1] == str(other)
    monkeypatch.undo()
    mark = tmp_path / "imported"
    monkeypatch.setenv("SIMPLEKAFKA_TEST_MARK", str(mark))
    with LocalCluster(brokers=1, base_dir=tmp_path / "cluster", metrics=False,
                      launcher=checkout_launcher(other)) as cluster:
        assert cluster.broker_pids
    imported = mark.read_text().split()
    assert imported and all(Path(path).is_relative_to(other) for path in imported), imported
    with pytest.raises(ValueError, match="no simplekafka package"):
        checkout_launcher(tmp_path / "cluster")
