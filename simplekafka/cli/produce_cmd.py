"""``simplekafka produce TOPIC``: each line of stdin becomes a record (like kafka-console-producer).

With ``--key-separator SEP`` the text before the first SEP is the key (a line
without SEP is an error, as in Kafka's tool with parse.key=true). Records are
batched; the command exits after every record is acknowledged, non-zero if any
failed.
"""

from __future__ import annotations

import argparse
import sys

from simplekafka.cli import CliError, key_value, non_negative_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)
from simplekafka.client.errors import KafkaError
from simplekafka.producer import Producer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "produce", help="send lines from stdin to a topic", description=__doc__.splitlines()[0]
    )
    parser.add_argument("topic", help="the topic to send to")
    parser.add_argument("--key-separator", default=None, metavar="SEP",
                        help="split each line into KEY SEP VALUE")
    parser.add_argument("--partition", "-p", type=non_negative_int, default=None,
                        help="send every record to this partition (default: by key / sticky)")
    parser.add_argument("--acks", choices=["0", "1", "all"], default="all",
                        help="acknowledgement to wait for: none, the leader's, or every "
                             "in-sync replica's (default all)")
    parser.add_argument("--compression", choices=CODECS, default="none",
                        help="compress batches with this codec (default none)")
    parser.add_argument("--linger-ms", type=non_negative_int, default=5, metavar="MS",
                        help="wait up to MS for a batch to fill (default 5)")
    parser.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                        help="add this header to every record (repeatable)")
    add_bootstrap_argument(parser)
    parser.set_defaults(func=produce)


def _header(pair: str) -> tuple[str, bytes]:
    key, value = key_value(pair, "--header")
    return key, value.encode()


@kafka_errors_are_one_line("produce")
def produce(args: argparse.Namespace) -> int:
    headers = [_header(h) for h in args.header]
    servers = bootstrap(args)
    if args.key_separator == "":
        raise CliError("--key-separator must not be empty")
    producer = Producer(
        servers,
        acks=args.acks,
        compression_type=None if args.compression == "none" else args.compression,
        linger_ms=args.linger_ms,
        request_timeout_ms=args.request_timeout_ms,
        max_block_ms=args.request_timeout_ms,
        delivery_timeout_ms=max(args.request_timeout_ms * 3, 30_000),
    )
    futures = []
    try:
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            line = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            key = None
            if args.key_separator is not None:
                sep = args.key_separator.encode()
                if sep not in line:
                    raise CliError(f"line {number} has no key separator {args.key_separator!r}")
                key, line = line.split(sep, 1)
            futures.append(
                producer.send(args.topic, line, key=key, headers=headers, partition=args.partition)
            )
            if len(futures) >= 10_000:
                _check(futures)
        producer.flush(args.request_timeout_ms * 3 / 1000)
        _check(futures)
    finally:
        producer.close(5)
    return 0


def _check(futures: list) -> None:
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error if isinstance(error, KafkaError) else KafkaError(str(error))
    futures.clear()
