"""``simplekafka leader-election``: preferred (or, over the Kafka protocol, unclean) elections.

Like Kafka's ``kafka-preferred-replica-election.sh --zookeeper``, it writes
``/admin/preferred_replica_election`` (the partitions, or all of them) and
waits until the controller has acted and removed the znode. The controller
makes the first replica of each partition's assignment its leader where that
replica is live and in the ISR. With ``--bootstrap-server`` instead, like
Kafka's ``kafka-leader-election.sh``, it sends the ElectLeaders request
(``Admin.elect_leaders``), which the brokers carry out the same way; there
``--election-type UNCLEAN`` gives partitions without a live leader one, out-of-sync
replicas allowed (``--preferred`` is ``--election-type PREFERRED``).
"""

from __future__ import annotations

import argparse

from simplekafka.cli import CliError
from simplekafka.coordination.processes import wait_until

DEFAULT_TIMEOUT = 30.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leader-election", help="elect preferred replicas as leaders",
        description=__doc__.strip("`"))
    parser.add_argument("--preferred", action="store_true",
                        help="elect the preferred (first assigned) replica")
    parser.add_argument("--election-type", type=str.lower, choices=["preferred", "unclean"],
                        help="PREFERRED, or UNCLEAN (leaders for partitions without a live "
                             "one, out-of-sync replicas allowed; needs --bootstrap-server)")
    parser.add_argument("--all-topic-partitions", action="store_true",
                        help="every partition (the default without --topic)")
    parser.add_argument("--topic", help="only this topic (default: every partition)")
    parser.add_argument("--partition", type=int, help="only this partition (needs --topic)")
    parser.add_argument("--zookeeper", help="host:port[/chroot] of the cluster's ZooKeeper")
    parser.add_argument("--bootstrap-server",
                        help="host:port of a broker: use the ElectLeaders request instead")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help=f"seconds to wait for the controller (default {DEFAULT_TIMEOUT:g})")
    parser.set_defaults(func=leader_election)


def leader_election(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException, NodeExistsError

    from simplekafka.coordination import ZooKeeperConnectError, connect_zookeeper
    from simplekafka.coordination.topics import (
        list_topics,
        read_partition_state,
        read_topic_assignment,
    )
    from simplekafka.coordination.zk_security import explain_refusal
    from simplekafka.coordination.znodes import PartitionRef, PartitionRefs, ZkPaths

    if args.partition is not None and not args.topic:
        raise CliError("--partition needs --topic")
    if args.all_topic_partitions and args.topic:
        raise CliError("--all-topic-partitions and --topic exclude each other")
    if args.preferred and args.election_type == "unclean":
        raise CliError("--preferred and --election-type UNCLEAN exclude each other")
    if not args.preferred and args.election_type is None:
        raise CliError("leader-election needs --election-type PREFERRED|UNCLEAN (or --preferred)")
    if args.election_type == "unclean" and (args.zookeeper or not args.bootstrap_server):
        raise CliError("unclean elections go through --bootstrap-server (ElectLeaders), "
                       "not --zookeeper")
    if args.bootstrap_server and not args.zookeeper:
        return _elect_over_kafka_protocol(args)
    if not args.zookeeper:
        raise CliError("leader-election needs --zookeeper host:port[/chroot] "
                       "or --bootstrap-server host:port")
    try:
        zk = connect_zookeeper(args.zookeeper, timeout=10)
    except ZooKeeperConnectError as exc:
        raise CliError(str(exc)) from None
    try:
        topics = [args.topic] if args.topic else list_topics(zk)
        wanted: list[tuple[str, int]] = []
        for topic in topics:
            assignment = read_topic_assignment(zk, topic)
            if assignment is None:
                raise CliError(f"topic {topic!r} does not exist")
            for index in sorted(assignment.partitions):
                if args.partition is None or index == args.partition:
                    wanted.append((topic, index))
        if not wanted:
            raise CliError(f"topic {args.topic!r} has no partition {args.partition}")
        refs = PartitionRefs(tuple(PartitionRef(t, p) for t, p in wanted))
        try:
            zk.create(ZkPaths.PREFERRED_REPLICA_ELECTION, refs.to_json(), makepath=True)
        except NodeExistsError:
            raise CliError("a preferred replica election is already in progress") from None
        wait_until(lambda: not zk.exists(ZkPaths.PREFERRED_REPLICA_ELECTION),
                   "the controller", args.timeout,
                   error=lambda _: CliError(f"the controller did not act within "
                                            f"{args.timeout:g} s (is a broker running?)"))
        moved: list[str] = []
        stayed: list[str] = []
        for topic, index in wanted:
            assignment = read_topic_assignment(zk, topic)
            if assignment is None:
                raise CliError(f"topic {topic!r} was deleted during the election")
            replicas = assignment.partitions[index]
            found = read_partition_state(zk, topic, index)
            leader = found[0].leader if found else -1
            (moved if replicas and leader == replicas[0] else stayed).append(
                f"{topic}-{index}" + ("" if leader == replicas[0] else
                                      f" (leader {leader}, preferred {replicas[0]})"))
        if moved:
            print("Preferred replicas lead: " + ", ".join(moved))
        if stayed:
            print("Preferred replica not live or not in sync, leader kept: " + ", ".join(stayed))
        return 0
    except KazooException as exc:
        raise CliError(explain_refusal(exc)) from None
    finally:
        zk.stop()
        zk.close()


def _elect_over_kafka_protocol(args: argparse.Namespace) -> int:
    from simplekafka.admin import Admin
    from simplekafka.client.errors import ElectionNotNeededError, KafkaError

    timeout_ms = int(args.timeout * 1000)
    try:
        with Admin(args.bootstrap_server, request_timeout_ms=min(timeout_ms, 10_000)) as admin:
            wanted = None
            if args.topic:
                partitions = admin.describe_topics([args.topic])[args.topic].partitions
                indexes = [p.partition for p in partitions]
                if args.partition is not None:
                    if args.partition not in indexes:
                        raise CliError(f"topic {args.topic!r} has no partition {args.partition}")
                    indexes = [args.partition]
                wanted = {args.topic: indexes}
            outcomes = admin.elect_leaders(wanted, timeout_ms=timeout_ms,
                                           election_type=args.election_type or "preferred")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except KafkaError as exc:
        raise CliError(f"ElectLeaders via {args.bootstrap_server}: {exc}") from None
    if args.election_type == "unclean":
        return _report_unclean(outcomes)
    lead = [f"{t}-{p}" for (t, p), error in sorted(outcomes.items())
            if error is None or isinstance(error, ElectionNotNeededError)]
    kept = [f"{t}-{p} ({error})" for (t, p), error in sorted(outcomes.items())
            if error is not None and not isinstance(error, ElectionNotNeededError)]
    if lead:
        print("Preferred replicas lead: " + ", ".join(lead))
    if kept:
        print("Preferred replica not live or not in sync, leader kept: " + ", ".join(kept))
    return 0


def _report_unclean(outcomes: dict) -> int:
    """Kafka's tool's wording; exit code 1 when some partition still has no leader."""
    from simplekafka.client.errors import ElectionNotNeededError

    done = [f"{t}-{p}" for (t, p), error in sorted(outcomes.items()) if error is None]
    live = [f"{t}-{p}" for (t, p), error in sorted(outcomes.items())
            if isinstance(error, ElectionNotNeededError)]
    failed = [f"{t}-{p}: {error}" for (t, p), error in sorted(outcomes.items())
              if error is not None and not isinstance(error, ElectionNotNeededError)]
    if done:
        print("Successfully completed leader election (UNCLEAN) for partitions "
              + ", ".join(done))
    if live:
        print("Valid replica already elected for partitions " + ", ".join(live))
    for line in failed:
        print(f"Error completing leader election (UNCLEAN) for partition: {line}")
    return 1 if failed else 0
