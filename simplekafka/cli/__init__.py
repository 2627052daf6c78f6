"""The ``simplekafka`` command line.

Each subcommand lives in its own module under ``simplekafka.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed arguments and returning an exit code. Add new modules to
``SUBCOMMAND_MODULES`` and their terminal help (description and examples) to
``simplekafka.cli.help_texts``; nothing else here needs to change.

``-b``/``--bootstrap-server`` may also come before the command, as kcat takes
it (``simplekafka -b HOST:PORT produce T``); given in both places, the one
after the command wins.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Each command and the module that registers it, in the order ``--help`` lists them.
#: A process started for one command registers (imports) only that command's module: a
#: broker process (hundreds in the suite) then imports the broker without the clients,
#: console, cluster launcher and dissector the other commands import, and a client
#: command (hundreds too) no longer imports the broker (about 2 s of CPU down to 0.45 s).
#: What it parses and prints is the same; ``--help``, ``-b X COMMAND`` and an unknown
#: command still get every command.
COMMAND_MODULES: dict[str, str] = {
    "inspect": "simplekafka.cli.inspect_cmd",
    "cluster": "simplekafka.cli.cluster_cmd",
    "zk": "simplekafka.cli.zk_cmd",
    "spark": "simplekafka.cli.spark_cmd",
    "broker": "simplekafka.cli.broker_cmd",
    "topics": "simplekafka.cli.topics_cmd",
    "configs": "simplekafka.cli.configs_cmd",
    "quotas": "simplekafka.cli.quotas_cmd",
    "acls": "simplekafka.cli.acls_cmd",
    "users": "simplekafka.cli.users_cmd",
    "certs": "simplekafka.cli.certs_cmd",
    "produce": "simplekafka.cli.produce_cmd",
    "consume": "simplekafka.cli.consume_cmd",
    "groups": "simplekafka.cli.groups_cmd",
    "dump-log": "simplekafka.cli.dump_log_cmd",
    "leader-election": "simplekafka.cli.leader_election_cmd",
    "reassign": "simplekafka.cli.reassign_cmd",
    "learn": "simplekafka.cli.learn_cmd",
    "console": "simplekafka.cli.console_cmd",
    "bench": "simplekafka.cli.bench_cmd",
}
SUBCOMMAND_MODULES: list[str] = list(COMMAND_MODULES.values())


class CliError(Exception):
    """A user mistake on the command line: printed as one line, exit code 2."""


def int_at_least(minimum: int, text: str) -> int:
    """An argparse ``type``: a whole number of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
    return value


def positive_int(text: str) -> int:
    return int_at_least(1, text)


def positive_float(text: str) -> float:
    """An argparse ``type``: a number above zero (seconds, a rate)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be above zero, not {text}")
    return value


def non_negative_int(text: str) -> int:
    return int_at_least(0, text)


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def key_value(pair: str, option: str) -> tuple[str, str]:
    """``KEY=VALUE`` from a repeatable option (``--set``, ``--config``, ``--header``).

    The key is stripped and may not be empty; the value is kept as given.
    """
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise CliError(f"{option} expects KEY=VALUE, got {pair!r}")
    return key.strip(), value


def key_values(pairs: Sequence[str], option: str) -> dict[str, str]:
    """Every ``KEY=VALUE`` of a repeated option, later ones winning."""
    return dict(key_value(pair, option) for pair in pairs)


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr rather than a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _apply_help_texts(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Give ``parser`` and every subcommand parser its terminal description and examples."""
    from simplekafka.cli.help_texts import HELP

    found = HELP.get(path)
    if found is not None:
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.description = found.description
        parser.epilog = "examples:\n" + found.examples
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                _apply_help_texts(child, f"{path} {name}".strip())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser, or only ``command``'s when it is one (COMMAND_MODULES)."""
    parser = _OneLineParser(prog="simplekafka")
    parser.add_argument(
        "-b", "--bootstrap-server", dest="global_bootstrap_server", default=None,
        metavar="HOST:PORT[,...]",
        help="brokers for the client commands (also accepted after the command)",
    )
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_OneLineParser
    )
    subparsers.required = True
    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else SUBCOMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    _apply_help_texts(parser)
    return parser


def _bootstrap_before_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Hand ``simplekafka -b X COMMAND`` to the command's own --bootstrap-server."""
    given = args.global_bootstrap_server
    del args.global_bootstrap_server
    if given is None:
        return
    if not hasattr(args, "bootstrap_server"):
        parser.error(f"-b/--bootstrap-server does not apply to '{args.command}'")
    if args.bootstrap_server is None:
        args.bootstrap_server = given


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    _bootstrap_before_command(parser, args)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"simplekafka {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
