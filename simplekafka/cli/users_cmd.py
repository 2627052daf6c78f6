"""``simplekafka users add|delete|list``: SCRAM users in ZooKeeper (kafka-configs, users).

``add NAME --password P [--mechanism SCRAM-SHA-256] [--iterations 4096]``
writes ``/config/users/NAME`` with a fresh salt and only the salted keys, as
``kafka-configs --zookeeper Z --alter --add-config
'SCRAM-SHA-256=[iterations=4096,password=P]' --entity-type users
--entity-name NAME`` does, and notifies every broker through
``/config/changes``: the user can log in at once, no restart. ``delete NAME
[--mechanism M]`` removes one mechanism's credential (all by default);
``list`` prints each user with its mechanisms and iterations, never a key.
"""

from __future__ import annotations

import argparse

from simplekafka.cli import CliError
from simplekafka.protocol.sasl import SCRAM_MECHANISMS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "users", help="add, delete or list SCRAM users (kafka-configs --entity-type users)",
        description=__doc__.strip("`"))
    parser.add_argument("action", choices=["add", "delete", "list"],
                        help="add or replace a user's credential, delete it, list users")
    parser.add_argument("name", nargs="?", help="the user (add and delete)")
    parser.add_argument("--password", help="the user's password (add)")
    parser.add_argument("--mechanism", type=str.upper, choices=sorted(SCRAM_MECHANISMS),
                        default=None, help="SCRAM-SHA-256 (default for add) or SCRAM-SHA-512")
    parser.add_argument("--iterations", type=int, default=4096,
                        help="PBKDF2 iterations, 4096..16384 (default 4096, Kafka's minimum)")
    parser.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/CHROOT]",
                        help="the cluster's ZooKeeper")
    parser.set_defaults(func=users_main)


def users_main(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException

    from simplekafka.coordination import ZooKeeperConnectError, connect_zookeeper
    from simplekafka.coordination.zk_security import explain_refusal

    if args.action in ("add", "delete") and not args.name:
        raise CliError(f"users {args.action} needs the user's NAME")
    if args.action == "add" and not args.password:
        raise CliError("users add needs --password")
    if args.action == "add":
        from simplekafka.protocol.sasl import make_credential

        try:  # checked before ZooKeeper is touched
            credential = make_credential(SCRAM_MECHANISMS[args.mechanism or "SCRAM-SHA-256"],
                                         args.password, args.iterations)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    try:
        zk = connect_zookeeper(args.zookeeper, timeout=10)
    except ZooKeeperConnectError as exc:
        raise CliError(str(exc)) from None
    try:
        return _run(zk, args, credential if args.action == "add" else None)
    except KazooException as exc:
        raise CliError(explain_refusal(exc)) from None
    finally:
        zk.stop()
        zk.close()


def _run(zk, args: argparse.Namespace, credential) -> int:
    from simplekafka.coordination.users import (
        delete_scram_credential,
        list_users,
        read_user_credentials,
        set_scram_credential,
    )

    if args.action == "add":
        mechanism = args.mechanism or "SCRAM-SHA-256"
        set_scram_credential(zk, args.name, mechanism, credential)
        print(f"Completed updating config for user {args.name}: {mechanism} "
              f"(iterations={credential.iterations}).")
        return 0
    if args.action == "delete":
        if not delete_scram_credential(zk, args.name, args.mechanism):
            raise CliError(f"user {args.name} has no "
                           f"{args.mechanism or 'SCRAM'} credential")
        print(f"Completed updating config for user {args.name}: "
              f"{args.mechanism or 'all SCRAM mechanisms'} removed.")
        return 0
    for user in list_users(zk):
        credentials = read_user_credentials(zk, user)
        if credentials:
            shown = ", ".join(f"{m} (iterations={c.iterations})"
                              for m, c in sorted(credentials.items()))
            print(f"{user}: {shown}")
    return 0
