"""``simplekafka console``: the REST API under /api and the web console at /, one process.

It reaches the cluster only through the Kafka protocol (the bootstrap servers),
so it works against any Kafka-compatible cluster. Stop it with Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simplekafka.cli import CliError, port_number

DEFAULT_PORT = 8080


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console", help="serve the REST API and the web console",
        description=__doc__.splitlines()[0].strip("`"))
    parser.add_argument("-b", "--bootstrap-server", default=None, metavar="HOST:PORT[,...]",
                        help="brokers to bootstrap from (default: $SIMPLEKAFKA_BOOTSTRAP, "
                             "else the cluster 'simplekafka cluster up' runs from --dir, "
                             "else localhost:9092)")
    parser.add_argument("--dir", dest="cluster_dir", type=Path, default=None, metavar="DIR",
                        help="the directory of a 'simplekafka cluster up' to serve "
                             "(default: ./simplekafka-cluster)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                        help=f"port to listen on, 0 for any free one (default {DEFAULT_PORT})")
    parser.set_defaults(func=console)


def console(args: argparse.Namespace) -> int:
    from twisted.internet.error import CannotListenError

    from simplekafka.cli.client_common import bootstrap
    from simplekafka.console.server import serve

    bootstrap(args)  # resolved as the client commands do; a CliError if it does not parse

    def listening(port: int) -> None:
        print(f"console: http://{args.host}:{port}/ (REST API under /api, docs at /api/docs), "
              f"cluster {args.bootstrap_server}", flush=True)

    try:
        serve(args.bootstrap_server, args.host, args.port, on_listening=listening)
    except CannotListenError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.socketError}") from None
    return 0
