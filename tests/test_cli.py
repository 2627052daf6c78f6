"""The command line's manners: bad arguments get one line and a non-zero exit."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration  # starts real processes


def _simplekafka(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "simplekafka", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )


def test_unknown_subcommand_is_one_line_and_exit_2():
    result = _simplekafka("no-such-command")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_help_lists_subcommands():
    result = _simplekafka("--help")
    assert result.returncode == 0
    assert "inspect" in result.stdout


def test_the_broker_raises_its_open_files_limit_to_the_hard_one():
    """Thousands of partitions need thousands of descriptors (issue 19): soft := hard at start."""
    import resource

    from simplekafka.cli.broker_cmd import raise_open_files_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
    try:
        assert raise_open_files_limit() == (hard, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
