"""``simplekafka groups list|describe|delete|reset-offsets``: like kafka-consumer-groups.sh.

``describe GROUP`` prints one line per partition the group committed or owns:
topic, partition, committed offset, end offset, lag, and the member that owns
it. ``reset-offsets GROUP --topic T`` commits ``--to-earliest``,
``--to-latest`` or ``--to-offset N`` for every partition of T (or
``--partition P``); like Kafka's tool it needs the group to have no members.
"""

from __future__ import annotations

import argparse

from simplekafka.admin import Admin
from simplekafka.cli import CliError, non_negative_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "groups", help="list, describe, delete consumer groups; reset their offsets",
        description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every group in the cluster")
    add_bootstrap_argument(listing)
    describe = actions.add_parser("describe", help="members, offsets and lag of a group")
    describe.add_argument("group", help="the group id")
    add_bootstrap_argument(describe)
    delete = actions.add_parser("delete", help="delete groups without members")
    delete.add_argument("group", nargs="+", help="the group ids")
    add_bootstrap_argument(delete)
    reset = actions.add_parser("reset-offsets", help="move an inactive group's offsets")
    reset.add_argument("group", help="the group id")
    reset.add_argument("--topic", "-t", required=True, help="the topic whose offsets to move")
    reset.add_argument("--partition", "-p", type=non_negative_int, action="append",
                       help="only this partition (repeatable; default: all)")
    where = reset.add_mutually_exclusive_group(required=True)
    where.add_argument("--to-earliest", action="store_true",
                       help="to each partition's first offset (the log start)")
    where.add_argument("--to-latest", action="store_true",
                       help="to each partition's end (skip everything there now)")
    where.add_argument("--to-offset", type=non_negative_int, metavar="N",
                       help="to offset N in each partition")
    add_bootstrap_argument(reset)
    parser.set_defaults(func=groups_command)


@kafka_errors_are_one_line("groups")
def groups_command(args: argparse.Namespace) -> int:
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        if args.action == "list":
            for group_id, protocol_type in admin.list_groups():
                print(f"{group_id}\t{protocol_type or '-'}")
        elif args.action == "describe":
            _describe(admin, args.group)
        elif args.action == "delete":
            admin.delete_groups(args.group)
            for group_id in args.group:
                print(f"deleted group {group_id}")
        else:
            to: str | int = "earliest" if args.to_earliest else (
                "latest" if args.to_latest else args.to_offset)
            try:
                done = admin.reset_offsets(args.group, args.topic, to, args.partition)
            except ValueError as exc:
                raise CliError(str(exc)) from None
            print("TOPIC\tPARTITION\tNEW-OFFSET")
            for tp, offset in sorted(done.items()):
                print(f"{tp.topic}\t{tp.partition}\t{offset}")
    return 0


def _describe(admin: Admin, group_id: str) -> None:
    group = admin.describe_group(group_id)
    owners = {tp: m for m in group.members for tp in m.assignment}
    print(f"group {group.group_id}: {group.state}, {len(group.members)} members, "
          f"assignor {group.protocol or '-'}, coordinator broker {group.coordinator}")
    print("TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
    for tp, offsets in group.offsets.items():
        owner = owners.get(tp)
        print("\t".join(str(x) for x in (
            tp.topic, tp.partition, "-" if offsets.committed is None else offsets.committed,
            offsets.end, "-" if offsets.lag is None else offsets.lag,
            owner.member_id if owner else "-", owner.client_host if owner else "-",
            owner.client_id if owner else "-")))
