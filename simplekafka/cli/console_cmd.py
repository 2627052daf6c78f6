"""``simplekafka console``: the REST API under /api and the web console at /, one process.

It reaches the cluster only through the Kafka protocol (the bootstrap servers),
so it works against any Kafka-compatible cluster. Stop it with Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse

from simplekafka.cli import CliError, port_number

DEFAULT_PORT = 8080


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console", help="serve the REST API and the web console",
        description=__doc__.splitlines()[0].strip("`"))
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]",
                        help="brokers to bootstrap from")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                        help=f"port to listen on, 0 for any free one (default {DEFAULT_PORT})")
    parser.set_defaults(func=console)


def console(args: argparse.Namespace) -> int:
    from twisted.internet.error import CannotListenError

    from simplekafka.client.client import parse_bootstrap_servers
    from simplekafka.console.server import serve

    try:
        parse_bootstrap_servers(args.bootstrap_server)
    except ValueError as exc:
        raise CliError(str(exc)) from None

    def listening(port: int) -> None:
        print(f"console: http://{args.host}:{port}/ (REST API under /api, docs at /api/docs), "
              f"cluster {args.bootstrap_server}", flush=True)

    try:
        serve(args.bootstrap_server, args.host, args.port, on_listening=listening)
    except CannotListenError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.socketError}") from None
    return 0
