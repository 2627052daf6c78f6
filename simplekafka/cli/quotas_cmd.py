"""``simplekafka quotas describe|alter``: client quotas, as kafka-configs.sh sets them.

``alter`` sets (``--add K=V,...``) or removes (``--delete K,...``) the quotas of one
entity: a user, a client id, or both (``--user-default`` and
``--client-id-default`` name the defaults). ``describe`` prints every entity with
quotas, or those the same options select. Both ask a broker (AlterClientQuotas,
DescribeClientQuotas), which writes ``/config/users`` and ``/config/clients`` in
ZooKeeper as Kafka does; every broker applies the change at once.
"""

from __future__ import annotations

import argparse

from simplekafka.admin import Admin
from simplekafka.cli import CliError
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)

KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
        "controller_mutation_rate")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "quotas", help="describe or alter client quotas (user, client id or both)",
        description=__doc__.strip("`"))
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (("describe", "print the quotas of every entity, or of those named"),
                       ("alter", "set or remove one entity's quotas")):
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument("--user", help="a user principal's name (alice for User:alice)")
        sub.add_argument("--user-default", action="store_true",
                         help="the default user (applies to users without their own)")
        sub.add_argument("--client-id", help="a client id")
        sub.add_argument("--client-id-default", action="store_true",
                         help="the default client id")
        if name == "alter":
            sub.add_argument("--add", metavar="K=V,...", default="",
                             help=f"quotas to set, comma-separated ({', '.join(KEYS)})")
            sub.add_argument("--delete", metavar="K,...", default="",
                             help="quotas to remove, comma-separated")
        add_bootstrap_argument(sub)
        sub.set_defaults(func=quotas_main)


def _entity(args: argparse.Namespace) -> dict[str, str | None]:
    entity: dict[str, str | None] = {}
    for entity_type, name, default in (("user", args.user, args.user_default),
                                       ("client-id", args.client_id, args.client_id_default)):
        if name is not None and default:
            raise CliError(f"give --{entity_type} or --{entity_type}-default, not both")
        if name is not None:
            if not name:
                raise CliError(f"--{entity_type} must not be empty")
            entity[entity_type] = name
        elif default:
            entity[entity_type] = None
    return entity


def _values(text: str) -> dict[str, float]:
    values = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in KEYS:
            raise CliError(f"--add wants K=V[,K=V...] with K one of {', '.join(KEYS)}; "
                           f"got {item!r}")
        try:
            values[key] = float(value)
        except ValueError:
            raise CliError(f"{key} must be a number, not {value!r}") from None
        if values[key] <= 0:
            raise CliError(f"{key} must be positive, not {value}")
    return values


def described(entity: tuple[tuple[str, str | None], ...]) -> str:
    """How kafka-configs names an entity: "user-principal 'alice', client-id 'app'"."""
    words = {"user": "user-principal", "client-id": "client-id"}
    return ", ".join(f"the default {words[t]}" if n is None else f"{words[t]} '{n}'"
                     for t, n in entity)


@kafka_errors_are_one_line("quotas")
def quotas_main(args: argparse.Namespace) -> int:
    entity = _entity(args)
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        if args.action == "alter":
            if not entity:
                raise CliError("quotas alter needs --user, --client-id or a default")
            to_set = _values(args.add)
            to_delete = [k.strip() for k in args.delete.split(",") if k.strip()]
            if not to_set and not to_delete:
                raise CliError("quotas alter needs --add or --delete")
            admin.alter_client_quotas(entity, to_set, to_delete)
            print(f"Completed updating quotas for {described(tuple(entity.items()))}.")
            return 0
        found = admin.describe_client_quotas(entity)
    for name, values in sorted(found.items(), key=lambda item: repr(item[0])):
        shown = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        print(f"Quota configs for {described(name)} are {shown}")
    return 0
