"""Every ``simplekafka ... --help`` is written for the terminal.

Each command and subcommand parser is rendered as ``--help`` prints it: none
may show reStructuredText (the module docstrings are rst for the docs; the
terminal texts live in ``simplekafka.cli.help_texts``), every option and
positional argument has a help text, and every command ends with examples.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from simplekafka.cli import COMMAND_MODULES, build_parser
from simplekafka.cli.help_texts import HELP

RST_MARKUP = {
    "``double backticks``": re.compile(r"``"),
    ":role:`x`": re.compile(r":[a-z][\w-]*:`"),
    "a trailing '::'": re.compile(r"::\s*$", re.MULTILINE),
    "a '|' table or substitution": re.compile(r"^\s*\||\|\s*$|\|[\w-]+\|", re.MULTILINE),
    ".. directive": re.compile(r"^\s*\.\. \w", re.MULTILINE),
}


def _parsers(top: argparse.ArgumentParser | None = None,
             ) -> list[tuple[str, argparse.ArgumentParser]]:
    """(command path, parser) for the top level and every command and subcommand."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}".strip())

    walk(top or build_parser(), "")
    return found


PARSERS = _parsers()
IDS = [path or "simplekafka" for path, _ in PARSERS]


@pytest.mark.parametrize("command", sorted(COMMAND_MODULES))
def test_a_command_registered_alone_parses_and_helps_as_among_all(command):
    """A process registers only its own command (fewer imports); nothing else may change."""
    alone = dict(_parsers(build_parser(command)))
    among_all = dict(PARSERS)
    assert set(alone) == {""} | {path for path in among_all if path.split()[:1] == [command]}
    for path in alone:
        if path:
            assert alone[path].format_help() == among_all[path].format_help()


def test_every_command_is_registered_alone_and_parses_as_among_all():
    assert set(COMMAND_MODULES) == {path for path, _ in PARSERS if path and " " not in path}
    for argv in (["broker", "--broker-id", "7"], ["topics", "list"],
                 ["leader-election", "--preferred", "--timeout", "2"]):
        assert build_parser(argv[0]).parse_args(argv) == build_parser().parse_args(argv)


def test_every_command_is_found():
    paths = {path for path, _ in PARSERS}
    assert {"topics create", "groups reset-offsets", "cluster up", "produce", "consume",
            "acls", "learn hint"} <= paths
    assert len(paths) > 35


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_help_has_no_rst_markup(path, parser):
    text = parser.format_help()
    for name, pattern in RST_MARKUP.items():
        found = pattern.search(text)
        assert found is None, (
            f"'simplekafka {path} --help' shows {name}: "
            f"{text[max(0, found.start() - 60):found.end() + 20]!r}")


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_every_option_has_help(path, parser):
    missing = [action.option_strings[0] if action.option_strings else action.dest
               for action in parser._actions
               if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
               and not action.help]
    assert not missing, f"'simplekafka {path}': no help for {missing}"


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_help_starts_with_a_summary_and_ends_with_examples(path, parser):
    assert path in HELP, f"no terminal help for 'simplekafka {path}' in help_texts.HELP"
    text = parser.format_help()
    description = HELP[path].description
    summary = description.split("\n\n")[0]
    assert summary.endswith(".") and len(summary) <= 160, summary
    head, _, examples = text.rpartition("\nexamples:\n")
    assert head, f"'simplekafka {path} --help' does not end with examples"
    assert all(line.startswith("  ") for line in examples.splitlines()), examples
    assert f"simplekafka {path}".strip() in examples or path == "", examples
    assert max(map(len, text.splitlines())) <= 100


@pytest.mark.integration
def test_help_lines_of_the_installed_command():
    """The real command prints the same: one subprocess for the top level and one command."""
    for args in (["--help"], ["topics", "create", "--help"]):
        result = subprocess.run([sys.executable, "-m", "simplekafka", *args],
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert "``" not in result.stdout and "examples:" in result.stdout
    assert "--partitions N" in result.stdout and "how many partitions" in result.stdout
