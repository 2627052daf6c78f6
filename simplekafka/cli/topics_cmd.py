"""``simplekafka topics create|list|describe|alter|delete``: kafka-topics.sh, roughly."""

from __future__ import annotations

import argparse

from simplekafka.admin import Admin
from simplekafka.cli import key_values, positive_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "topics", help="create, list, describe, alter or delete topics",
        description=__doc__.strip("`")
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    create = actions.add_parser("create", help="create a topic")
    create.add_argument("topic", help="name of the new topic")
    create.add_argument("--partitions", type=positive_int, default=1, metavar="N",
                        help="how many partitions (default 1)")
    create.add_argument("--replication-factor", type=positive_int, default=1, metavar="N",
                        help="copies of each partition, on different brokers (default 1)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config such as retention.ms=60000 (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed quietly if the topic exists")
    add_bootstrap_argument(create)
    create.set_defaults(func=topics_create)

    listing = actions.add_parser("list", help="list topic names")
    add_bootstrap_argument(listing)
    listing.set_defaults(func=topics_list)

    describe = actions.add_parser("describe", help="partitions, leaders, replicas, ISR")
    describe.add_argument("topics", nargs="*", metavar="TOPIC", help="default: every topic")
    add_bootstrap_argument(describe)
    describe.set_defaults(func=topics_describe)

    alter = actions.add_parser("alter", help="add partitions to a topic")
    alter.add_argument("topic", help="the topic to grow")
    alter.add_argument("--partitions", type=positive_int, required=True, metavar="N",
                       help="the new total number of partitions (larger than today's)")
    add_bootstrap_argument(alter)
    alter.set_defaults(func=topics_alter)

    delete = actions.add_parser("delete", help="delete topics")
    delete.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to delete")
    add_bootstrap_argument(delete)
    delete.set_defaults(func=topics_delete)


def _admin(args: argparse.Namespace) -> Admin:
    return Admin(bootstrap(args), request_timeout_ms=args.request_timeout_ms)


@kafka_errors_are_one_line("topics create")
def topics_create(args: argparse.Namespace) -> int:
    from simplekafka.client.errors import TopicAlreadyExistsError

    configs = key_values(args.config, "--config")
    with _admin(args) as admin:
        try:
            admin.create_topic(
                args.topic, args.partitions, args.replication_factor, configs,
                timeout_ms=args.request_timeout_ms,
            )
        except TopicAlreadyExistsError:
            if not args.if_not_exists:
                raise
            return 0
    print(f"Created topic {args.topic}.")
    return 0


@kafka_errors_are_one_line("topics list")
def topics_list(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        for name in admin.list_topics():
            print(name)
    return 0


@kafka_errors_are_one_line("topics describe")
def topics_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        described = admin.describe_topics(args.topics or None)
    for name, topic in described.items():
        print(f"Topic: {name}\tPartitionCount: {len(topic.partitions)}\t"
              f"ReplicationFactor: {len(topic.partitions[0].replicas) if topic.partitions else 0}")
        for p in topic.partitions:
            print(f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {p.leader}\t"
                  f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}")
    return 0


@kafka_errors_are_one_line("topics alter")
def topics_alter(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.create_partitions({args.topic: args.partitions},
                                timeout_ms=args.request_timeout_ms)
    print(f"Topic {args.topic} now has {args.partitions} partitions.")
    return 0


@kafka_errors_are_one_line("topics delete")
def topics_delete(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.delete_topics(args.topics, timeout_ms=args.request_timeout_ms)
    for name in args.topics:
        print(f"Deleted topic {name}.")
    return 0
