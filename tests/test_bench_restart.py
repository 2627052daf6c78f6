"""benchmarks/bench_restart.py runs to the end in --tiny mode (real processes): a broker of
three restarted after a SIGKILL and after a clean shutdown, each line with the load average."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks/bench_restart.py"


@pytest.mark.integration
def test_bench_restart_tiny():
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny"], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("30 partitions")]
    assert len(lines) == 2, done.stdout
    killed, clean = lines
    assert "after SIGKILL" in killed and "after clean shutdown" in clean
    for line in lines:
        assert "until serving" in line and "until back in every ISR" in line
        assert "load average" in line


def test_a_bad_partition_list_is_one_line(capsys):
    from benchmarks.bench_restart import main

    with pytest.raises(SystemExit) as done:
        main(["--partitions", "1k"])
    assert done.value.code == 2
    assert "--partitions takes numbers" in capsys.readouterr().err
