"""What the client subcommands (topics, produce, consume...) share: options and error manners.

Where the cluster is (the bootstrap servers) comes from the first of:

1. ``--bootstrap-server``/``-b`` (Kafka's tools' spelling; ``-b`` like kcat),
   given after the command or before it (``simplekafka -b HOST:PORT produce T``);
2. the ``SIMPLEKAFKA_BOOTSTRAP`` environment variable;
3. the ``cluster.json`` that ``simplekafka cluster up`` keeps in
   ``./simplekafka-cluster`` (or the ``--dir`` given), while that cluster runs;
4. ``localhost:9092``, Kafka's quick-start address.

A Kafka error (unreachable broker, unknown topic...) is one line on stderr and
exit code 1, and names where the address came from when the cluster could not
be reached; a bad argument is a ``CliError`` (exit code 2).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from simplekafka.cli import CliError, positive_int
from simplekafka.client.client import parse_bootstrap_servers
from simplekafka.client.errors import KafkaError

DEFAULT_BOOTSTRAP = "localhost:9092"
BOOTSTRAP_ENV = "SIMPLEKAFKA_BOOTSTRAP"
DEFAULT_CLUSTER_DIR = Path("simplekafka-cluster")
CLUSTER_STATE_FILE = "cluster.json"  # what cluster_cmd writes (its STATE_FILE)


def add_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-b", "--bootstrap-server", dest="bootstrap_server", default=None,
        metavar="HOST:PORT[,...]",
        help=f"brokers to start from (default: ${BOOTSTRAP_ENV}, else the cluster "
             f"of --dir, else {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--dir", dest="cluster_dir", type=Path, default=None, metavar="DIR",
        help=f"without -b or ${BOOTSTRAP_ENV}: use the running 'cluster up' of DIR "
             f"(default ./{DEFAULT_CLUSTER_DIR})",
    )
    parser.add_argument(
        "--timeout-ms", dest="request_timeout_ms", type=positive_int, default=10_000,
        metavar="MS", help="give up on the cluster after this long (default 10000)",
    )


def _from_cluster_dir(directory: Path) -> str | None:
    """The bootstrap servers of the running cluster recorded in ``directory``, if any."""
    from simplekafka.coordination.processes import pid_alive

    try:
        state = json.loads((directory / CLUSTER_STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(state, dict) or state.get("status") != "running"
            or not state.get("bootstrap_servers") or not pid_alive(state.get("supervisor_pid"))):
        return None
    return str(state["bootstrap_servers"])


def resolve_bootstrap(args: argparse.Namespace) -> tuple[str, str]:
    """(bootstrap servers, where they came from), by the order in this module's docstring.

    An explicit ``--dir`` without a running cluster in it is a CliError: the
    user named a cluster, and a silent fall-back to localhost:9092 could reach
    another one.
    """
    given = getattr(args, "bootstrap_server", None)
    if given:
        return given, "--bootstrap-server"
    from_env = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if from_env:
        return from_env, f"${BOOTSTRAP_ENV}"
    directory = getattr(args, "cluster_dir", None)
    explicit = directory is not None
    directory = directory or DEFAULT_CLUSTER_DIR
    found = _from_cluster_dir(directory)
    if found:
        return found, f"the running cluster in {directory}/{CLUSTER_STATE_FILE}"
    if explicit:
        raise CliError(f"no running cluster recorded in {directory / CLUSTER_STATE_FILE} "
                       f"(start one with 'simplekafka cluster up --dir {directory}')")
    return DEFAULT_BOOTSTRAP, (f"the default: no -b, no ${BOOTSTRAP_ENV}, "
                               f"no running cluster in ./{DEFAULT_CLUSTER_DIR}")


def bootstrap(args: argparse.Namespace) -> str:
    """The validated bootstrap list (a CliError if it does not parse).

    Where it came from is kept in ``args.bootstrap_source`` for error messages.
    """
    servers, source = resolve_bootstrap(args)
    try:
        parse_bootstrap_servers(servers)
    except ValueError as exc:
        raise CliError(f"{exc} (from {source})") from None
    args.bootstrap_server = servers
    args.bootstrap_source = source
    return servers


def _unreachable(exc: KafkaError) -> bool:
    """True for the errors that mean "no broker answered" rather than "the broker said no"."""
    from simplekafka.client.errors import KafkaConnectionError, KafkaTimeoutError

    return isinstance(exc, (KafkaConnectionError, KafkaTimeoutError))


def kafka_errors_are_one_line(command: str) -> Callable:
    """Decorate a subcommand: a ``KafkaError`` becomes one stderr line and exit code 1.

    When no broker could be reached the line says which address was tried and
    where it came from (``-b``, the environment, a cluster.json, the default).
    """

    def decorate(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(func)
        def run(args: argparse.Namespace) -> int:
            try:
                return func(args)
            except KafkaError as exc:
                line = f"simplekafka {command}: error: {type(exc).__name__}: {exc}"
                source = getattr(args, "bootstrap_source", None)
                if source and _unreachable(exc):
                    line += f" (bootstrap {args.bootstrap_server}, from {source})"
                print(line, file=sys.stderr)
                return 1
            except BrokenPipeError:
                return 0

        return run

    return decorate
