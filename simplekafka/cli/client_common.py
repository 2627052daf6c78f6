"""What the client subcommands (topics, produce, consume) share: options and error manners.

``--bootstrap-server`` (Kafka's tools' spelling; ``-b`` like kcat) defaults to
``$SIMPLEKAFKA_BOOTSTRAP`` or ``localhost:9092``. A Kafka error (unreachable
broker, unknown topic...) is one line on stderr and exit code 1; a bad argument
is a ``CliError`` (exit code 2).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable

from simplekafka.cli import CliError, positive_int
from simplekafka.client.client import parse_bootstrap_servers
from simplekafka.client.errors import KafkaError

DEFAULT_BOOTSTRAP = "localhost:9092"


def add_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", "-b", dest="bootstrap_server",
        default=os.environ.get("SIMPLEKAFKA_BOOTSTRAP", DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT[,HOST:PORT...]",
        help="brokers to start from (default: $SIMPLEKAFKA_BOOTSTRAP or localhost:9092)",
    )
    parser.add_argument(
        "--timeout-ms", dest="request_timeout_ms", type=positive_int, default=10_000,
        metavar="MS", help="give up on the cluster after this long (default 10000)",
    )


def bootstrap(args: argparse.Namespace) -> str:
    """The validated bootstrap list (a CliError if it does not parse)."""
    try:
        parse_bootstrap_servers(args.bootstrap_server)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return args.bootstrap_server


def kafka_errors_are_one_line(command: str) -> Callable:
    """Decorate a subcommand: a ``KafkaError`` becomes one stderr line and exit code 1."""

    def decorate(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(func)
        def run(args: argparse.Namespace) -> int:
            try:
                return func(args)
            except KafkaError as exc:
                print(f"simplekafka {command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
            except BrokenPipeError:
                return 0

        return run

    return decorate
