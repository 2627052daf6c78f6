"""``simplekafka zk start|stop|status|tree``: the embedded ZooKeeper from the command line.

``start`` runs a standalone ZooKeeper from the jars in the pyspark wheel, in the
background, and returns once it answers; its pid and port are recorded in the
data directory, which is how ``stop`` and ``status`` find it again. ``tree``
prints the znodes of any ZooKeeper (``--zookeeper host:port[/chroot]``).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
from pathlib import Path

from simplekafka.cli import CliError
from simplekafka.coordination.zk_security import (
    CLIENT_JAAS_FILE,
    client_jaas_text,
    kafka_opts_for,
)

DEFAULT_DATA_DIR = Path("var") / "zookeeper"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("zk", help="start, stop or inspect the embedded ZooKeeper",
                                   description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="zk_action", metavar="ACTION",
                                    parser_class=type(parser))
    actions.required = True

    start = actions.add_parser("start", help="start ZooKeeper in the background")
    start.add_argument("--port", type=int, default=2181,
                       help="client port (default 2181; 0 picks a free one)")
    start.add_argument("--host", default="127.0.0.1", help="address to listen on")
    start.add_argument("--timeout", type=float, default=60.0,
                       help="seconds to wait until it answers")
    start.add_argument("--sasl", action="store_true",
                       help="take SASL logins (user kafka, a fresh password); writes the "
                            "brokers' JAAS file and prints the KAFKA_OPTS to export")
    _data_dir_argument(start)
    start.set_defaults(func=_start)

    stop = actions.add_parser("stop", help="stop the ZooKeeper started from --data-dir")
    _data_dir_argument(stop)
    stop.set_defaults(func=_stop)

    status = actions.add_parser("status", help="is it running, and what does it say")
    _data_dir_argument(status)
    status.set_defaults(func=_status)

    tree = actions.add_parser("tree", help="print the znode tree")
    tree.add_argument("--zookeeper", default="127.0.0.1:2181", help="host:port[/chroot]")
    tree.add_argument("--path", default="/", help="where to start (default /)")
    tree.set_defaults(func=_tree)


def _data_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"ZooKeeper's data directory (default {DEFAULT_DATA_DIR})")


def _start(args: argparse.Namespace) -> int:
    from simplekafka.coordination.zookeeper_server import EmbeddedZooKeeper, ZooKeeperLaunchError

    if not 0 <= args.port < 65536:
        raise CliError(f"--port must be between 0 (any free port) and 65535, got {args.port}")
    login = ("kafka", secrets.token_urlsafe(12)) if args.sasl else None
    server = EmbeddedZooKeeper(port=args.port, data_dir=args.data_dir, host=args.host,
                               detach=True, sasl_users=dict([login]) if login else None)
    try:
        server.start(timeout=args.timeout)
    except (ZooKeeperLaunchError, OSError) as exc:
        raise CliError(str(exc)) from None
    print(f"ZooKeeper running on {server.connect_string} (pid {server.pid}); "
          f"data and log in {server.data_dir}")
    if login:
        client_file = server.data_dir / CLIENT_JAAS_FILE
        descriptor = os.open(client_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(client_jaas_text(*login))
        print(f"SASL logins only for user {login[0]}; its JAAS file is {client_file}. "
              "For brokers (with zookeeper.set.acl=true) and simplekafka commands:")
        print(f"export KAFKA_OPTS='{kafka_opts_for(client_file)}'")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from simplekafka.coordination.zookeeper_server import stop_recorded_server

    pid = stop_recorded_server(args.data_dir)
    if pid is None:
        print(f"no ZooKeeper is running from {args.data_dir}")
    else:
        print(f"stopped ZooKeeper (pid {pid})")
    return 0


def _status(args: argparse.Namespace) -> int:
    from simplekafka.coordination.zookeeper_server import (
        four_letter_word,
        is_zookeeper_process,
        pid_alive,
        read_pid_file,
    )

    recorded = read_pid_file(args.data_dir)
    if recorded is None or not pid_alive(recorded[0]) or not is_zookeeper_process(recorded[0]):
        print(f"not running (nothing recorded in {args.data_dir})")
        return 1
    pid, port = recorded
    try:
        answer = four_letter_word("127.0.0.1", port, "srvr")
    except OSError as exc:
        print(f"pid {pid} is alive but does not answer on port {port}: {exc}")
        return 1
    facts = dict(line.split(": ", 1) for line in answer.splitlines() if ": " in line)
    print(f"running: pid {pid}, 127.0.0.1:{port}, {facts.get('Mode', '?')}, "
          f"{facts.get('Node count', '?')} znodes, "
          f"version {facts.get('Zookeeper version', '?').split(',')[0]}")
    return 0


def _tree(args: argparse.Namespace) -> int:
    from simplekafka.coordination import ZooKeeperConnectError, connect_zookeeper, format_tree

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # our own error says it in one line
    if not args.path.startswith("/"):
        raise CliError(f"--path must start with '/', got {args.path!r}")
    try:
        zk = connect_zookeeper(args.zookeeper, timeout=10)
    except ZooKeeperConnectError as exc:
        raise CliError(str(exc)) from None
    try:
        if not zk.exists(args.path):
            raise CliError(f"no znode {args.path}")
        print(format_tree(zk, args.path))
    finally:
        zk.stop()
        zk.close()
    return 0
