"""``simplekafka produce TOPIC``: each line of stdin becomes a record (like kafka-console-producer).

With ``--key-separator SEP`` the text before the first SEP is the key. A line
without SEP stops the command (``--on-bad-line fail``, the default, as Kafka's
tool with parse.key=true: exit code 2, saying how many records were sent) or
is skipped with a warning on stderr (``--on-bad-line skip``). Records are
batched; the command waits until every record is acknowledged and ends with
``sent N, failed M`` on stderr (exit code 1 if any failed).

Like any Kafka producer it lets the broker create a topic it does not know
(Metadata with allow_auto_topic_creation), so producing to a new topic works
at once on a broker with ``auto.create.topics.enable=true``.
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
from simplekafka.client.client import KafkaClient
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
    parser.add_argument("--on-bad-line", choices=["fail", "skip"], default="fail",
                        help="a line without the key separator: stop with exit code 2 "
                             "(fail, the default) or warn and go on (skip)")
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


class _Tally:
    """Records sent (acknowledged), failed, and the first failure's error."""

    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0
        self.error: BaseException | None = None

    def settle(self, producer: Producer, futures: list, timeout_ms: int) -> None:
        """Wait (up to ``timeout_ms``) for ``futures``, count their outcomes, forget them."""
        late: KafkaError | None = None
        try:
            producer.flush(timeout_ms / 1000)
        except KafkaError as exc:  # what is not acknowledged by now counts as failed
            late = exc
        for future in futures:
            if not future.done():
                self.fail(late or KafkaError("not acknowledged"))
            elif future.exception() is None:
                self.sent += 1
            else:
                self.fail(future.exception())
        futures.clear()

    def fail(self, error: BaseException) -> None:
        self.failed += 1
        if self.error is None:
            self.error = error

    def __str__(self) -> str:
        return f"sent {self.sent}, failed {self.failed}"


@kafka_errors_are_one_line("produce")
def produce(args: argparse.Namespace) -> int:
    headers = [_header(h) for h in args.header]
    servers = bootstrap(args)
    if args.key_separator == "":
        raise CliError("--key-separator must not be empty")
    # As Kafka's producer: the broker may create a topic it does not know yet.
    client = KafkaClient(servers, client_id="simplekafka-producer",
                         request_timeout_ms=args.request_timeout_ms,
                         allow_auto_topic_creation=True)
    try:
        producer = _producer(args, servers, client)
    except BaseException:
        client.close()
        raise
    tally = _Tally()
    futures: list = []
    bad_line = None
    try:
        # As Kafka's producer does: a Metadata request naming the topic, allowing the
        # broker to create it (the client's own refreshes ask for all topics).
        client.refresh_metadata([args.topic])
        sep = None if args.key_separator is None else args.key_separator.encode()
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            line = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            key = None
            if sep is not None:
                if sep not in line:
                    problem = f"line {number} has no key separator {args.key_separator!r}"
                    if args.on_bad_line == "fail":
                        bad_line = problem
                        break
                    print(f"simplekafka produce: warning: {problem}; skipped", file=sys.stderr)
                    continue
                key, line = line.split(sep, 1)
            try:
                futures.append(producer.send(args.topic, line, key=key, headers=headers,
                                             partition=args.partition))
            except KafkaError as exc:  # no metadata, buffer full...: the rest would fail too
                tally.fail(exc)
                break
            if len(futures) >= 10_000:
                tally.settle(producer, futures, args.request_timeout_ms * 3)
        tally.settle(producer, futures, args.request_timeout_ms * 3)
    finally:
        producer.close(5)
        client.close()
    if bad_line is not None:
        raise CliError(f"{bad_line}: stopped ({tally})")
    if tally.error is not None:
        error = tally.error
        print(f"simplekafka produce: error: {type(error).__name__}: {error} ({tally})",
              file=sys.stderr)
        return 1
    print(tally, file=sys.stderr)
    return 0


def _producer(args: argparse.Namespace, servers: str, client: KafkaClient) -> Producer:
    return Producer(
        servers,
        acks=args.acks,
        compression_type=None if args.compression == "none" else args.compression,
        linger_ms=args.linger_ms,
        request_timeout_ms=args.request_timeout_ms,
        max_block_ms=args.request_timeout_ms,
        delivery_timeout_ms=max(args.request_timeout_ms * 3, 30_000),
        client=client,
    )
