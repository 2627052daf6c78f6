"""``simplekafka configs --describe|--alter``: kafka-configs.sh for topics and brokers."""

from __future__ import annotations

import argparse

from simplekafka.admin import Admin
from simplekafka.admin.configs import ConfigEntry
from simplekafka.cli import CliError
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "configs", help="describe or alter topic and broker configs",
        description=__doc__.strip("`"))
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true",
                        help="print the entity's dynamic configs, then all of them")
    action.add_argument("--alter", action="store_true",
                        help="set (--add-config) or remove (--delete-config) configs")
    parser.add_argument("--entity-type", choices=["topics", "brokers"], required=True,
                        help="what --entity-name names: a topic or a broker")
    parser.add_argument("--entity-name", help="a topic name or broker id")
    parser.add_argument("--entity-default", action="store_true",
                        help="the cluster-wide default of broker configs")
    parser.add_argument("--add-config", metavar="K=V,...", default="",
                        help="keys to set, comma-separated")
    parser.add_argument("--delete-config", metavar="K,...", default="",
                        help="keys to remove, comma-separated")
    add_bootstrap_argument(parser)
    parser.set_defaults(func=configs_main)


def _pairs(text: str) -> dict[str, str]:
    pairs = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--add-config wants K=V[,K=V...], got {item!r}")
        pairs[key] = value
    return pairs


@kafka_errors_are_one_line("configs")
def configs_main(args: argparse.Namespace) -> int:
    kind = "topic" if args.entity_type == "topics" else "broker"
    if args.entity_default:
        if kind != "broker":
            raise CliError("--entity-default applies to --entity-type brokers only")
        name = ""
    elif args.entity_name:
        name = args.entity_name
    else:
        raise CliError("give --entity-name (or --entity-default for brokers)")
    if kind == "broker" and name and not name.isdigit():
        raise CliError(f"--entity-name for brokers is a broker id, not {name!r}")
    shown = name or "<default>"
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        if args.alter:
            to_set = _pairs(args.add_config)
            to_delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
            if not to_set and not to_delete:
                raise CliError("--alter needs --add-config or --delete-config")
            admin.alter_configs(kind, name, to_set, to_delete)
            print(f"Completed updating config for {args.entity_type[:-1]} {shown}.")
            return 0
        entries = admin.describe_configs(kind, name)
    print(f"Dynamic configs for {args.entity_type[:-1]} {shown} are:")
    for entry in entries.values():
        if entry.source.startswith("DYNAMIC"):
            print(f"  {entry.name}={_shown(entry)} ({entry.source}"
                  f"{', sensitive' if entry.is_sensitive else ''})")
    print("All configs:")
    for entry in entries.values():
        print(f"  {entry.name}={_shown(entry)} ({entry.source}"
              f"{', sensitive' if entry.is_sensitive else ''}"
              f"{', read-only' if entry.read_only else ''})")
    return 0


def _shown(entry: ConfigEntry) -> str:
    """The value as kafka-configs prints it: a sensitive one (never sent) is ``null``."""
    return "null" if entry.is_sensitive or entry.value is None else entry.value
