"""``simplekafka reassign``: plan replica moves, with Kafka's kafka-reassign-partitions flags.

``--generate --topics-to-move-json-file F --broker-list 1,2,4`` reads the current
assignment of the topics in F from the cluster and prints it, then the proposed
one, as Kafka's reassignment JSON (``--output PLAN`` also writes the proposed one
to PLAN). Unlike Kafka's from-scratch proposal, ours keeps every replica that
may stay and moves only what balance needs (``coordination.reassignment``).

``--execute --reassignment-json-file PLAN`` prints the current assignment (keep
it to roll back) and sends PLAN as AlterPartitionReassignments; with
``--zookeeper Z`` it writes ``/admin/reassign_partitions`` itself, as Kafka's
tool did before 3.0. The controller carries either out.
``--throttle BYTES_PER_S`` (with ``--execute``) first sets the replication
throttles of the moves, as Kafka's tool does: the rates on every broker involved,
the throttled replicas on each topic (``coordination.throttles``).
``--verify --reassignment-json-file PLAN`` (over ``--bootstrap-server``) exits 0
once every partition has exactly the planned replicas, and then removes the
throttles (topic and broker configs); it exits 1 while any is moving.
``--cancel --reassignment-json-file PLAN`` puts the partitions of PLAN that still
move back on their original replicas.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from simplekafka.cli import CliError
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)

if TYPE_CHECKING:
    from simplekafka.admin import Admin


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reassign", help="plan partition reassignments (kafka-reassign-partitions)",
        description=__doc__.strip("`"))
    add_bootstrap_argument(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--generate", action="store_true",
                        help="propose an assignment of the topics onto --broker-list")
    action.add_argument("--execute", action="store_true",
                        help="start the moves of --reassignment-json-file")
    action.add_argument("--verify", action="store_true",
                        help="exit 0 when every move of --reassignment-json-file is done, 1 if not")
    action.add_argument("--cancel", action="store_true",
                        help="cancel the moves of --reassignment-json-file still in progress")
    parser.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                        help="--execute writes the cluster's ZooKeeper directly")
    parser.add_argument("--topics-to-move-json-file", metavar="FILE",
                        help='{"topics": [{"topic": "name"}, ...], "version": 1}')
    parser.add_argument("--broker-list", metavar="ID,ID,...",
                        help="the brokers to place the replicas on")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="ignore the brokers' racks")
    parser.add_argument("--reassignment-json-file", metavar="FILE",
                        help="a plan, for --execute/--verify/--cancel")
    parser.add_argument("--output", metavar="PLAN", help="also write the proposed plan here")
    parser.add_argument("--throttle", metavar="BYTES_PER_S",
                        help="--execute: cap the moving replicas' replication at this rate "
                             "(--verify removes the throttle once every move is done)")
    parser.set_defaults(func=reassign)


def parse_broker_list(text: str) -> list[int]:
    """``1,2,4`` as distinct broker ids (a CliError otherwise)."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise CliError(f"--broker-list expects ids like 1,2,4, got {text!r}") from None
    if len(set(ids)) != len(ids):
        raise CliError(f"--broker-list names a broker twice: {text!r}")
    if any(i < 0 for i in ids):
        raise CliError(f"--broker-list ids are not negative: {text!r}")
    return ids


@kafka_errors_are_one_line("reassign")
def reassign(args: argparse.Namespace) -> int:
    if args.cancel:
        return _cancel(args)
    if args.execute:
        return _execute(args)
    if args.verify:
        return _verify(args)
    return _generate(args)


def _read_plan(args: argparse.Namespace) -> dict:
    from simplekafka.coordination import AssignmentError
    from simplekafka.coordination.reassignment import parse_reassignment_json

    if not args.reassignment_json_file:
        raise CliError("--execute, --verify and --cancel need --reassignment-json-file")
    try:
        text = Path(args.reassignment_json_file).read_text()
    except OSError as exc:
        raise CliError(f"cannot read {args.reassignment_json_file}: {exc.strerror}") from None
    try:
        plan = parse_reassignment_json(text)
    except AssignmentError as exc:
        raise CliError(f"{args.reassignment_json_file}: {exc}") from None
    if not plan:
        raise CliError(f"{args.reassignment_json_file}: no partitions to move")
    return plan


def _execute(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException, NodeExistsError

    from simplekafka.coordination import ZooKeeperConnectError, connect_zookeeper
    from simplekafka.coordination.reassignment import reassignment_json
    from simplekafka.coordination.throttles import write_throttles
    from simplekafka.coordination.topics import live_brokers, read_topic_assignment
    from simplekafka.coordination.zk_security import explain_refusal
    from simplekafka.coordination.znodes import ZkPaths

    plan = _read_plan(args)
    rate = _throttle_rate(args)
    if not args.zookeeper:
        return _execute_over_kafka_protocol(args, plan, rate)
    try:
        zk = connect_zookeeper(args.zookeeper, timeout=10)
    except ZooKeeperConnectError as exc:
        raise CliError(str(exc)) from None
    try:
        live = set(live_brokers(zk))
        current = {}
        for topic in sorted({t for t, _ in plan}):
            assignment = read_topic_assignment(zk, topic)
            if assignment is None:
                raise CliError(f"topic {topic!r} does not exist")
            for (t, p) in plan:
                if t == topic:
                    if p not in assignment.partitions:
                        raise CliError(f"topic {topic!r} has no partition {p}")
                    current[(t, p)] = list(assignment.partitions[p])
        unknown = sorted({b for replicas in plan.values() for b in replicas} - live)
        if unknown:
            raise CliError(f"brokers {unknown} are not live (live: {sorted(live)})")
        if rate is not None:
            write_throttles(zk, current, plan, rate)
        try:
            zk.create(ZkPaths.REASSIGN_PARTITIONS,
                      reassignment_json(plan, log_dirs=False).encode(), makepath=True)
        except NodeExistsError:
            raise CliError("a reassignment is already running "
                           f"({ZkPaths.REASSIGN_PARTITIONS} exists)") from None
    except KazooException as exc:
        raise CliError(explain_refusal(exc)) from None
    finally:
        zk.stop()
        zk.close()
    print("Current partition replica assignment")
    print()
    print(reassignment_json(current))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")
    _print_throttle(rate)
    print("Successfully started partition reassignments for "
          + ",".join(f"{t}-{p}" for t, p in sorted(plan)))
    return 0


def _throttle_rate(args: argparse.Namespace) -> int | None:
    from simplekafka.coordination.throttles import ThrottleConfigError, parse_rate

    if args.throttle is None:
        return None
    try:
        return parse_rate(args.throttle)
    except ThrottleConfigError:
        raise CliError(f"--throttle expects a positive number of bytes per second, "
                       f"got {args.throttle!r}") from None


def _print_throttle(rate: int | None) -> None:
    if rate is not None:
        print("Warning: You must run --verify periodically, until the reassignment "
              "completes, to ensure the throttle is removed.")
        print(f"The inter-broker throttle limit was set to {rate} B/s")


def _set_throttles_over_kafka_protocol(admin: Admin, current: dict, plan: dict,
                                       rate: int) -> None:
    from simplekafka.coordination.throttles import (
        RATE_KEYS,
        reassignment_throttles,
        throttled_brokers,
    )

    for topic, configs in reassignment_throttles(current, plan).items():
        admin.alter_configs("topic", topic, configs)
    for broker in throttled_brokers(current, plan):
        admin.alter_configs("broker", str(broker), dict.fromkeys(RATE_KEYS, str(rate)))


def _execute_over_kafka_protocol(args: argparse.Namespace, plan: dict,
                                 rate: int | None) -> int:
    from simplekafka.admin import Admin
    from simplekafka.coordination.reassignment import reassignment_json

    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        topics = sorted({t for t, _ in plan})
        known = set(admin.list_topics(include_internal=True))
        missing = [t for t in topics if t not in known]
        if missing:
            raise CliError(f"topics {missing} do not exist")
        described = admin.describe_topics(topics)
        current = {(t, p.partition): list(p.replicas)
                   for t, d in described.items() for p in d.partitions if (t, p.partition) in plan}
        absent = sorted(set(plan) - set(current))
        if absent:
            raise CliError(f"no such partitions: {', '.join(f'{t}-{p}' for t, p in absent)}")
        if rate is not None:
            _set_throttles_over_kafka_protocol(admin, current, plan, rate)
        outcomes = admin.alter_partition_reassignments(plan)
    print("Current partition replica assignment")
    print()
    print(reassignment_json(current))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")
    _print_throttle(rate)
    failed = {key: error for key, error in sorted(outcomes.items()) if error is not None}
    started = [key for key in sorted(plan) if key not in failed]
    if started:
        print("Successfully started partition reassignments for "
              + ",".join(f"{t}-{p}" for t, p in started))
    for (topic, partition), error in failed.items():
        print(f"Error reassigning partition {topic}-{partition}: {error}")
    return 1 if failed else 0


def _cancel(args: argparse.Namespace) -> int:
    from simplekafka.admin import Admin
    from simplekafka.client.errors import NoReassignmentInProgressError

    plan = _read_plan(args)
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        outcomes = admin.alter_partition_reassignments(dict.fromkeys(plan))
    cancelled = [k for k, error in sorted(outcomes.items()) if error is None]
    idle = [k for k, error in sorted(outcomes.items())
            if isinstance(error, NoReassignmentInProgressError)]
    failed = {k: e for k, e in sorted(outcomes.items())
              if e is not None and not isinstance(e, NoReassignmentInProgressError)}
    if cancelled:
        print("Successfully cancelled partition reassignments for "
              + ",".join(f"{t}-{p}" for t, p in cancelled))
    if idle:
        print("None of the specified partition reassignments are active: "
              + ",".join(f"{t}-{p}" for t, p in idle))
    for (topic, partition), error in failed.items():
        print(f"Error cancelling reassignment of {topic}-{partition}: {error}")
    return 1 if failed else 0


def _verify(args: argparse.Namespace) -> int:
    from simplekafka.admin import Admin

    plan = _read_plan(args)
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        known = set(admin.list_topics(include_internal=True))
        missing = sorted({t for t, _ in plan} - known)
        if missing:
            raise CliError(f"topics {missing} do not exist")
        described = admin.describe_topics(sorted({t for t, _ in plan}))
        replicas = {(t, p.partition): list(p.replicas)
                    for t, d in described.items() for p in d.partitions}
        print("Status of partition reassignment:")
        moving = 0
        for key, target in sorted(plan.items()):
            if key not in replicas:
                raise CliError(f"topic {key[0]!r} has no partition {key[1]}")
            if replicas[key] == list(target):
                print(f"Reassignment of partition {key[0]}-{key[1]} is completed.")
            else:
                moving += 1
                print(f"Reassignment of partition {key[0]}-{key[1]} is still in progress.")
        if moving:
            return 1
        _remove_throttles(admin, sorted({t for t, _ in plan}))
    return 0


def _remove_throttles(admin: Admin, topics: list[str]) -> None:
    """Every move is done: clear the throttles --execute --throttle set (Kafka's --verify)."""
    from simplekafka.coordination.throttles import RATE_KEYS, REPLICAS_KEYS

    brokers = sorted(node.node_id for node in admin.describe_cluster().brokers)
    print("Clearing broker-level throttles on brokers " + ",".join(map(str, brokers)))
    for broker in brokers:
        admin.alter_configs("broker", str(broker), delete=RATE_KEYS)
    for topic in topics:
        print(f"Clearing topic-level throttles on topic {topic}")
        admin.alter_configs("topic", topic, delete=REPLICAS_KEYS)


def _generate(args: argparse.Namespace) -> int:
    from simplekafka.admin import Admin
    from simplekafka.coordination import AssignmentError
    from simplekafka.coordination.reassignment import (
        parse_topics_to_move,
        plan_reassignment,
        reassignment_json,
    )

    if not args.topics_to_move_json_file or not args.broker_list:
        raise CliError("--generate needs --topics-to-move-json-file and --broker-list")
    brokers = parse_broker_list(args.broker_list)
    try:
        text = Path(args.topics_to_move_json_file).read_text()
    except OSError as exc:
        raise CliError(f"cannot read {args.topics_to_move_json_file}: {exc.strerror}") from None
    try:
        topics = parse_topics_to_move(text)
    except AssignmentError as exc:
        raise CliError(f"{args.topics_to_move_json_file}: {exc}") from None
    with Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms) as admin:
        known = set(admin.list_topics(include_internal=True))
        missing = [t for t in topics if t not in known]
        if missing:
            raise CliError(f"topics {missing} do not exist")
        described = admin.describe_topics(topics)
        nodes = {node.node_id: node for node in admin.describe_cluster().brokers}
    unknown = [b for b in brokers if b not in nodes]
    if unknown:
        raise CliError(f"brokers {unknown} are not in the cluster (live: {sorted(nodes)})")
    current = {(topic, p.partition): list(p.replicas)
               for topic, description in described.items() for p in description.partitions}
    racks = None if args.disable_rack_aware else {b: nodes[b].rack for b in brokers}
    try:
        proposed = plan_reassignment(current, brokers, racks)
    except AssignmentError as exc:
        raise CliError(str(exc)) from None
    print("Current partition replica assignment")
    print(reassignment_json(current))
    print()
    print("Proposed partition reassignment configuration")
    print(reassignment_json(proposed))
    if args.output:
        try:
            Path(args.output).write_text(reassignment_json(proposed) + "\n")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror}") from None
    return 0
