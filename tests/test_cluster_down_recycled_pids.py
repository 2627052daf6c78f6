"""``simplekafka cluster down`` signals only its own cluster's processes, even when a recorded
pid has been recycled by the same kind of process of another cluster.

Pids wrap (``/proc/sys/kernel/pid_max`` is 32768 on many machines, and a test run
starts thousands of processes), so a broker pid read back from ``cluster.json``
may by then be held by another cluster's broker, whose command line also says
``simplekafka broker``. Real processes stand in for the brokers and the
supervisor: their command lines carry the words and directories a real one's
would.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from simplekafka.cli.cluster_cmd import STATE_FILE, _stop_orphans, cluster_down
from simplekafka.coordination.processes import command_line, wait_until

pytestmark = pytest.mark.integration  # real processes


@contextmanager
def sleeping(*words: str) -> Iterator[subprocess.Popen]:
    """A process whose command line ends with ``words``, killed afterwards if still there.

    Popen returns once the child's exec has passed the point where its inherited
    descriptors close, which on Linux comes before the new program's arguments are
    set: for a moment ``/proc/<pid>/cmdline`` is empty. A real recorded pid is long
    past that, so the stand-in is only handed over once its command line shows.
    """
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *words])
    try:
        wait_until(lambda: " ".join(words) in command_line(process.pid),
                   f"pid {process.pid}'s command line", 10.0)
        yield process
    finally:
        process.kill()
        process.wait(10)


def broker_words(directory: Path, broker_id: int) -> tuple[str, ...]:
    return ("simplekafka", "broker", "--broker-id", str(broker_id),
            "--data-dir", str(directory / f"broker-{broker_id}" / "data"))


def test_a_pid_held_by_another_clusters_broker_is_left_alone(tmp_path):
    ours, other = tmp_path / "ours", tmp_path / "other"
    with sleeping(*broker_words(other, 1)) as stranger, \
            sleeping(*broker_words(ours, 2)) as orphan:
        state = {"brokers": {"1": {"pid": stranger.pid}, "2": {"pid": orphan.pid}}}
        assert _stop_orphans(state, ours) == [orphan.pid]
        assert orphan.wait(10) is not None
        assert stranger.poll() is None  # still running


def test_down_leaves_a_recorded_supervisor_pid_that_is_no_longer_its_supervisor(tmp_path,
                                                                                 capsys):
    directory = (tmp_path / "c").resolve()
    directory.mkdir()
    with sleeping("simplekafka", "cluster", "up", "--foreground", "--dir",
                  str(tmp_path / "elsewhere")) as stranger:
        (directory / STATE_FILE).write_text(json.dumps(
            {"supervisor_pid": stranger.pid, "brokers": {}, "status": "running"}))
        assert cluster_down(argparse.Namespace(dir=directory)) == 0
        assert stranger.poll() is None
    assert "is not running" in capsys.readouterr().out
