"""``simplekafka groups list|describe|delete|reset-offsets``: like kafka-consumer-groups.sh.

``describe GROUP`` prints Kafka's table: one line per partition the group
committed or owns (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG
CONSUMER-ID HOST CLIENT-ID); ``--members`` one line per member (``--verbose``
adds its assignment), ``--state`` the group's coordinator, assignor and state.
An unknown group is an error (exit code 1).

``reset-offsets GROUP`` works as Kafka's tool: it prints the plan (GROUP TOPIC
PARTITION NEW-OFFSET) and changes nothing unless ``--execute`` is given
(``--dry-run`` says so explicitly). The partitions: ``--all-topics`` (those
the group committed) or ``--topic T`` / ``--topic T:P,P`` (repeatable), or the
rows of ``--from-file``. The new offsets: ``--to-earliest``, ``--to-latest``,
``--to-offset N``, ``--to-datetime`` (ISO 8601, e.g. 2024-05-01T12:00:00.000,
local time unless it names a zone; ListOffsets by timestamp), ``--by-duration``
(ISO 8601 duration back from now, e.g. PT1H or P1DT30M), ``--shift-by N``
(from the committed offset, N may be negative), ``--to-current``, or
``--from-file`` (CSV lines ``topic,partition,offset``, as ``--export``
prints). An offset outside a partition's log is moved to its nearest end, and
a time with no record after it gives the log end offset. Like Kafka's tool it
refuses while the group has members: they would overwrite the reset.
"""

from __future__ import annotations

import argparse
import sys
import time

from simplekafka.admin import Admin
from simplekafka.admin import groups as admin_groups
from simplekafka.admin.groups import GroupDescription, MemberDescription
from simplekafka.cli import CliError, non_negative_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)
from simplekafka.cli.table import print_table
from simplekafka.protocol.structs import TopicPartition

INACTIVE = ("Empty", "Dead")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "groups", help="list, describe, delete consumer groups; reset their offsets",
        description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every group in the cluster")
    add_bootstrap_argument(listing)
    describe = actions.add_parser("describe", help="offsets and lag, members, or state of a group")
    describe.add_argument("group", help="the group id")
    shown = describe.add_mutually_exclusive_group()
    shown.add_argument("--offsets", action="store_true",
                       help="one line per partition: offsets, lag, owner (the default)")
    shown.add_argument("--members", action="store_true", help="one line per member")
    shown.add_argument("--state", action="store_true",
                       help="coordinator, assignor, state and number of members")
    describe.add_argument("--verbose", action="store_true",
                          help="with --members: the group instance id and the assignment")
    add_bootstrap_argument(describe)
    delete = actions.add_parser("delete", help="delete groups without members")
    delete.add_argument("group", nargs="+", help="the group ids")
    add_bootstrap_argument(delete)
    reset = actions.add_parser(
        "reset-offsets", help="plan (or with --execute, make) new offsets for an inactive group",
        # argparse cannot wrap a long choice of options: the usage, by hand
        usage=("simplekafka groups reset-offsets GROUP (--all-topics | --topic TOPIC[:P,P])\n"
               "    TARGET [--execute | --dry-run] [--export] [-b HOST:PORT[,...]]\n"
               "    [--dir DIR] [--timeout-ms MS]\n"
               "  TARGET: one of the options marked 'to:' below"))
    reset.add_argument("group", help="the group id")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has committed offsets for")
    scope.add_argument("--topic", "-t", action="append", default=None, metavar="TOPIC[:P,P]",
                       help="this topic, or these partitions of it (repeatable)")
    where = reset.add_mutually_exclusive_group(required=True)
    where.add_argument("--to-earliest", action="store_true", help="to: the log start offset")
    where.add_argument("--to-latest", action="store_true", help="to: the log end offset")
    where.add_argument("--to-offset", type=non_negative_int, metavar="N", help="to: offset N")
    where.add_argument("--to-datetime", metavar="TIME",
                       help="to: the first record at or after this time (YYYY-MM-DDTHH:mm:SS.sss)")
    where.add_argument("--by-duration", metavar="DURATION",
                       help="to: the first record at or after this long ago (PnDTnHnMnS: PT1H)")
    where.add_argument("--shift-by", type=int, metavar="N",
                       help="to: the committed offset plus N (N may be negative)")
    where.add_argument("--to-current", action="store_true",
                       help="to: the committed offset (the log end if none)")
    where.add_argument("--from-file", metavar="CSV",
                       help="to: offsets from lines topic,partition,offset (as --export prints)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    mode.add_argument("--dry-run", action="store_true",
                      help="only print the plan (what happens without --execute)")
    reset.add_argument("--export", action="store_true",
                       help="print the plan as CSV lines topic,partition,offset")
    add_bootstrap_argument(reset)
    parser.set_defaults(func=groups_command)


@kafka_errors_are_one_line("groups")
def groups_command(args: argparse.Namespace) -> int:
    if args.action == "reset-offsets":
        _check_reset_arguments(args)
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        if args.action == "list":
            print_table(["GROUP", "PROTOCOL-TYPE"],
                        [(group_id, protocol_type or None)
                         for group_id, protocol_type in admin.list_groups()])
        elif args.action == "describe":
            return _describe(admin, args)
        elif args.action == "delete":
            admin.delete_groups(args.group)
            for group_id in args.group:
                print(f"deleted group {group_id}")
        else:
            return _reset(admin, args)
    return 0


def _error(message: str) -> int:
    """What the cluster's state refuses: one line on stderr, exit code 1."""
    print(f"simplekafka groups: error: {message}", file=sys.stderr)
    return 1


# ----- describe -----------------------------------------------------------------------


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_group(args.group)
    if group.state == "Dead" and not group.members and not group.offsets:
        return _error(f"consumer group {args.group!r} does not exist")
    if args.verbose and not args.members:
        raise CliError("--verbose goes with --members")
    if args.state:
        _print_state(admin, group)
        return 0
    if group.state in INACTIVE:
        print(f"Consumer group {group.group_id!r} has no active members.\n")
    elif group.state in ("PreparingRebalance", "CompletingRebalance"):
        print(f"Warning: consumer group {group.group_id!r} is rebalancing.\n")
    if args.members:
        _print_members(group, args.verbose)
    else:
        _print_offsets(group)
    return 0


def _print_offsets(group: GroupDescription) -> None:
    owners = {tp: m for m in group.members for tp in m.assignment}
    rows: list[tuple[object, ...]] = []
    for tp, offsets in group.offsets.items():
        owner = owners.get(tp)
        who = (owner.member_id, owner.client_host, owner.client_id) if owner else (None,) * 3
        rows.append((group.group_id, tp.topic, tp.partition, offsets.committed, offsets.end,
                     offsets.lag, *who))
    for member in group.members:  # Kafka's tool shows members without partitions too
        if not member.assignment:
            rows.append((group.group_id, None, None, None, None, None, member.member_id,
                         member.client_host, member.client_id))
    print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                 "CONSUMER-ID", "HOST", "CLIENT-ID"], rows)


def assignment_text(member: MemberDescription) -> str | None:
    """Kafka's ASSIGNMENT column: ``topic(0,1),other(2)``; None when empty."""
    by_topic: dict[str, list[int]] = {}
    for tp in member.assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ",".join(f"{topic}({','.join(map(str, sorted(parts)))})"
                    for topic, parts in sorted(by_topic.items())) or None


def _print_members(group: GroupDescription, verbose: bool) -> None:
    if verbose:
        print_table(["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                     "#PARTITIONS", "ASSIGNMENT"],
                    [(group.group_id, m.member_id, m.group_instance_id, m.client_host,
                      m.client_id, len(m.assignment), assignment_text(m))
                     for m in group.members])
    else:
        print_table(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                    [(group.group_id, m.member_id, m.client_host, m.client_id,
                      len(m.assignment)) for m in group.members])


def _print_state(admin: Admin, group: GroupDescription) -> None:
    brokers = {b.node_id: b for b in admin.describe_cluster().brokers}
    node = brokers.get(group.coordinator)
    where = f"{node.host}:{node.port} ({node.node_id})" if node else f"({group.coordinator})"
    print_table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                [(group.group_id, where, group.protocol or None, group.state,
                  len(group.members))])


# ----- reset-offsets --------------------------------------------------------------------


def _check_reset_arguments(args: argparse.Namespace) -> None:
    """Mistakes found before asking the cluster anything (CliError: exit code 2)."""
    if args.from_file is None and not args.all_topics and not args.topic:
        raise CliError("say which partitions: --all-topics or --topic TOPIC[:P,P]")
    if args.from_file is not None and (args.all_topics or args.topic):
        raise CliError("--from-file names its partitions: leave out --all-topics and --topic")
    for text in args.topic or []:
        _topic_scope(text)
    if args.to_datetime is not None:
        args.timestamp_ms = parse_datetime(args.to_datetime)
    elif args.by_duration is not None:
        args.timestamp_ms = int(time.time() * 1000) - parse_duration(args.by_duration)


def _topic_scope(text: str) -> tuple[str, list[int] | None]:
    """``T`` (every partition) or ``T:P,P`` from ``--topic``."""
    topic, colon, parts = text.partition(":")
    if not topic:
        raise CliError(f"--topic wants TOPIC or TOPIC:P,P, not {text!r}")
    if not colon:
        return topic, None
    try:
        partitions = [int(p) for p in parts.split(",")]
    except ValueError:
        raise CliError(f"--topic wants TOPIC:P,P with partition numbers, not {text!r}") from None
    if any(p < 0 for p in partitions):
        raise CliError(f"partition numbers are 0 or more: {text!r}")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """``--to-datetime``: milliseconds since the epoch (local time if it names no zone)."""
    try:
        return admin_groups.parse_datetime(text)
    except ValueError as exc:
        raise CliError(f"--to-datetime: {exc}") from None


def parse_duration(text: str) -> int:
    """``--by-duration``: milliseconds in an ISO 8601 duration (PnDTnHnMn.nS)."""
    try:
        return admin_groups.parse_duration(text)
    except ValueError as exc:
        raise CliError(f"--by-duration: {exc}") from None


def _read_plan(path: str, group_id: str) -> dict[TopicPartition, int]:
    """``--from-file``: lines ``topic,partition,offset`` (or ``group,topic,partition,offset``,
    Kafka's several-groups form, of which only this group's lines count)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise CliError(f"--from-file: cannot read {path}: {exc.strerror}") from None
    plan: dict[TopicPartition, int] = {}
    for number, line in enumerate(lines, start=1):
        fields = [f.strip() for f in line.split(",")]
        if not line.strip():
            continue
        if len(fields) == 4:
            if fields[0] != group_id:
                continue
            fields = fields[1:]
        try:
            topic, partition, offset = fields[0], int(fields[1]), int(fields[2])
            if not topic or partition < 0 or offset < 0:
                raise ValueError
        except (ValueError, IndexError):
            raise CliError(f"--from-file {path} line {number}: expected "
                           f"topic,partition,offset, got {line!r}") from None
        plan[TopicPartition(topic, partition)] = offset
    return plan


def _partitions(admin: Admin, args: argparse.Namespace,
                committed: dict[TopicPartition, int]) -> list[TopicPartition]:
    """The partitions ``--all-topics`` or ``--topic`` name (checked against the cluster)."""
    if args.all_topics:
        return sorted(committed)
    wanted: set[TopicPartition] = set()
    for text in args.topic:
        topic, partitions = _topic_scope(text)
        known = admin.client.partitions_for(topic, args.request_timeout_ms)
        for p in known if partitions is None else partitions:
            if p not in known:
                raise CliError(f"topic {topic!r} has partitions 0..{len(known) - 1}, not {p}")
            wanted.add(TopicPartition(topic, p))
    return sorted(wanted)


def _plan(admin: Admin, args: argparse.Namespace, group: GroupDescription
          ) -> dict[TopicPartition, int]:
    """The new offset of every partition in scope (``admin.groups.plan_reset``, the one
    planner the console uses too)."""
    committed = {tp: o.committed for tp, o in group.offsets.items() if o.committed is not None}
    if args.from_file is not None:
        requested = _read_plan(args.from_file, args.group)
        partitions = sorted(requested)
        target = admin_groups.ResetTarget("explicit", offsets=requested)
    else:
        partitions = _partitions(admin, args, committed)
        target = _target(args)
    try:
        return admin_groups.plan_reset(admin.client, group, partitions, target,
                                       args.request_timeout_ms)
    except admin_groups.ResetPlanError as exc:
        raise CliError(str(exc)) from None


def _target(args: argparse.Namespace) -> admin_groups.ResetTarget:
    """The --to-.../--by-duration/--shift-by option as a ``ResetTarget``."""
    if args.to_earliest:
        return admin_groups.ResetTarget("earliest")
    if args.to_latest:
        return admin_groups.ResetTarget("latest")
    if args.to_offset is not None:
        return admin_groups.ResetTarget("offset", args.to_offset)
    if args.to_datetime is not None or args.by_duration is not None:
        return admin_groups.ResetTarget("timestamp", args.timestamp_ms)
    if args.shift_by is not None:
        return admin_groups.ResetTarget("shift", args.shift_by)
    return admin_groups.ResetTarget("current")


def _reset(admin: Admin, args: argparse.Namespace) -> int:
    group = admin.describe_group(args.group)
    if group.state not in INACTIVE:
        return _error(f"offsets can only be reset while group {args.group!r} is inactive, "
                      f"but it is {group.state} with {len(group.members)} members; stop them "
                      "first")
    plan = _plan(admin, args, group)
    if args.execute:
        admin_groups.commit_offsets(admin.client, args.group, plan,
                                    args.request_timeout_ms)
    if args.export:
        for tp, offset in sorted(plan.items()):
            print(f"{tp.topic},{tp.partition},{offset}")
    else:
        print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                    [(args.group, tp.topic, tp.partition, offset)
                     for tp, offset in sorted(plan.items())])
    if not args.execute and not args.dry_run:
        print("(a plan only: nothing was changed; add --execute to apply it, or --dry-run "
              "to say plainly that you want only the plan)", file=sys.stderr)
    return 0
