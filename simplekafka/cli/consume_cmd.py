"""``simplekafka consume TOPIC``: print records, one per line (like kafka-console-consumer).

Starts at the end of each partition (only new records) unless
``--from-beginning`` or ``--offset`` says otherwise; ``--offset`` takes a
number, ``earliest`` or ``latest`` and, like Kafka's tool, wants
``--partition``. Stops after ``--max-messages`` records, or after
``--idle-timeout-ms`` without any (default: never), or on Ctrl-C.

With ``--group G`` it joins consumer group G instead: the group's members
share the partitions, each starts where the group last committed (else as
``--from-beginning`` says), and offsets are committed as records are printed.
"""

from __future__ import annotations

import argparse
import sys

from simplekafka.cli import CliError, non_negative_int, positive_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)
from simplekafka.consumer import Consumer
from simplekafka.protocol.structs import TopicPartition


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "consume", help="print records of a topic", description=__doc__.splitlines()[0]
    )
    parser.add_argument("topic", help="the topic to read")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest record, not the end")
    parser.add_argument("--partition", "-p", type=non_negative_int, default=None,
                        help="read only this partition (default: all)")
    parser.add_argument("--offset", "-o", default=None,
                        help="start offset in --partition: a number, earliest or latest")
    parser.add_argument("--max-messages", "-c", type=positive_int, default=None,
                        help="exit after this many records")
    parser.add_argument("--idle-timeout-ms", type=positive_int, default=None,
                        help="exit after this long without a record")
    parser.add_argument("--print-key", action="store_true", help="print KEY<sep>VALUE")
    parser.add_argument("--print-offset", action="store_true",
                        help="print partition and offset before each record")
    parser.add_argument("--key-separator", default="\t", metavar="SEP",
                        help="between key and value with --print-key (default: tab)")
    parser.add_argument("--group", "-g", default=None, metavar="GROUP",
                        help="consume as a member of this consumer group (commits offsets)")
    add_bootstrap_argument(parser)
    parser.set_defaults(func=consume)


def _start(args: argparse.Namespace) -> int | str:
    if args.offset is None:
        return "earliest" if args.from_beginning else "latest"
    if args.partition is None:
        raise CliError("--offset needs --partition")
    if args.offset in ("earliest", "beginning"):
        return "earliest"
    if args.offset in ("latest", "end"):
        return "latest"
    try:
        offset = int(args.offset)
    except ValueError:
        raise CliError(f"--offset wants a number, earliest or latest: {args.offset!r}") from None
    if offset < 0:
        raise CliError(f"--offset must be 0 or more, not {offset}")
    return offset


@kafka_errors_are_one_line("consume")
def consume(args: argparse.Namespace) -> int:
    start = _start(args)
    servers = bootstrap(args)
    if args.group is not None:
        if not args.group:
            raise CliError("--group needs a non-empty group id")
        if args.partition is not None or args.offset is not None:
            raise CliError("--group shares partitions among members: "
                           "leave out --partition and --offset")
        return _consume_in_group(args, servers, start)
    with Consumer(
        bootstrap_servers=servers,
        request_timeout_ms=args.request_timeout_ms,
        auto_offset_reset="earliest" if start == "earliest" else "latest",
    ) as consumer:
        partitions = consumer.partitions_for(args.topic)
        if args.partition is not None:
            if args.partition not in partitions:
                raise CliError(
                    f"topic {args.topic!r} has partitions 0..{len(partitions) - 1}, "
                    f"not {args.partition}"
                )
            partitions = [args.partition]
        tps = [TopicPartition(args.topic, p) for p in partitions]
        consumer.assign(tps)
        if isinstance(start, int):
            consumer.seek(tps[0], start)
        elif start == "earliest":
            consumer.seek_to_beginning(*tps)
        else:
            consumer.seek_to_end(*tps)
        seen = _print_records(consumer, args, commit=False)
    print(f"Processed a total of {seen} messages", file=sys.stderr)
    return 0


def _consume_in_group(args: argparse.Namespace, servers: str, start: int | str) -> int:
    with Consumer(
        bootstrap_servers=servers,
        request_timeout_ms=args.request_timeout_ms,
        group_id=args.group,
        auto_offset_reset="earliest" if start == "earliest" else "latest",
        enable_auto_commit=False,
    ) as consumer:
        consumer.subscribe([args.topic])
        seen = _print_records(consumer, args, commit=True)
    print(f"Processed a total of {seen} messages", file=sys.stderr)
    return 0


def _print_records(consumer: Consumer, args: argparse.Namespace, commit: bool) -> int:
    """Poll and print until --max-messages, --idle-timeout-ms or Ctrl-C; the count printed."""
    out = sys.stdout.buffer
    seen = 0
    idle = 0.0
    try:
        while args.max_messages is None or seen < args.max_messages:
            wanted = None if args.max_messages is None else args.max_messages - seen
            records = consumer.poll(500, max_records=wanted)
            if not records:
                idle += 500
                if args.idle_timeout_ms is not None and idle >= args.idle_timeout_ms:
                    break
                continue
            idle = 0.0
            for record in records:
                out.write(_format(record, args))
            seen += len(records)
            out.flush()
            if commit:  # what was printed is done: the group resumes after it
                consumer.commit()
    except KeyboardInterrupt:
        pass
    return seen


def _format(record, args: argparse.Namespace) -> bytes:
    parts = []
    if args.print_offset:
        parts.append(f"{record.partition}:{record.offset}\t".encode())
    if args.print_key:
        key = b"null" if record.key is None else record.key
        parts.append(key + args.key_separator.encode())
    parts.append(b"null" if record.value is None else record.value)
    parts.append(b"\n")
    return b"".join(parts)
