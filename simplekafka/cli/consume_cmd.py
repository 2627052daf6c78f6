"""``simplekafka consume TOPIC``: print records, one per line (like kafka-console-consumer).

Starts at the end of each partition (only new records) unless
``--from-beginning`` or ``--offset`` says otherwise; ``--offset`` takes a
number, ``earliest`` or ``latest`` and, like Kafka's tool, wants
``--partition``. Stops after ``--max-messages`` records, or after
``--idle-timeout-ms`` without any (default: never), or on Ctrl-C.

With ``--group G`` it joins consumer group G instead: the group's members
share the partitions, each starts where the group last committed (else as
``--from-beginning`` says), and offsets are committed as records are printed.

``-f FORMAT`` prints each record as kcat's format string says: ``%t`` topic,
``%p`` partition, ``%o`` offset, ``%k`` key, ``%s`` value, ``%T`` timestamp
(ms, -1 if none), ``%h`` headers (``name=value,...``), ``%S`` value size and
``%K`` key size (-1 for null), ``%R`` value size as 4 big-endian bytes, ``%%``
a percent sign, with the escapes ``\\n \\t \\r \\\\ \\xHH``; as in kcat a
null key or value prints as nothing and no newline is added unless the format
has one. ``-J`` prints one JSON object per record with kcat's fields: topic,
partition, offset, tstype and ts (when the record has a timestamp), broker,
headers (a flat ``[name, value, ...]`` list, when there are any), key and
payload (strings, or null).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from simplekafka.cli import CliError, non_negative_int, positive_int
from simplekafka.cli.client_common import (
    add_bootstrap_argument,
    bootstrap,
    kafka_errors_are_one_line,
)
from simplekafka.consumer import Consumer
from simplekafka.consumer.fetcher import ConsumerRecord
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
    parser.add_argument("--format", "-f", dest="format", default=None, metavar="FORMAT",
                        help="kcat's output format: %%t %%p %%o %%k %%s %%T %%h %%S %%K, "
                             "\\n \\t (e.g. '%%p:%%o %%k=%%s\\n')")
    parser.add_argument("--json", "-J", action="store_true",
                        help="one JSON object per record, with kcat's -J fields")
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
    args.formatter = _formatter(args)
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
                out.write(args.formatter(record, consumer))
            seen += len(records)
            out.flush()
            if commit:  # what was printed is done: the group resumes after it
                consumer.commit()
    except KeyboardInterrupt:
        pass
    return seen


Formatter = Callable[[ConsumerRecord, Consumer], bytes]


def _formatter(args: argparse.Namespace) -> Formatter:
    """How each record is printed: -J, -f FORMAT, or the console consumer's lines."""
    if args.json or args.format is not None:
        if args.print_key or args.print_offset:
            raise CliError("-f and -J say what to print: leave out --print-key and --print-offset")
        if args.json and args.format is not None:
            raise CliError("give -f FORMAT or -J, not both")
    if args.json:
        return _json
    if args.format is not None:
        return kcat_format(args.format)
    return lambda record, _consumer: _plain(record, args)


def _plain(record: ConsumerRecord, args: argparse.Namespace) -> bytes:
    parts = []
    if args.print_offset:
        parts.append(f"{record.partition}:{record.offset}\t".encode())
    if args.print_key:
        key = b"null" if record.key is None else record.key
        parts.append(key + args.key_separator.encode())
    parts.append(b"null" if record.value is None else record.value)
    parts.append(b"\n")
    return b"".join(parts)


def _unescape(text: str) -> bytes:
    r"""kcat's escapes in the literal parts of a format: \n \t \r \xHH, else the character."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            i += 1
            char = text[i]
            if char == "x" and _is_hex(text[i + 1:i + 3]):
                out.append(int(text[i + 1:i + 3], 16))
                i += 3
                continue
            out += {"n": b"\n", "t": b"\t", "r": b"\r"}.get(char, char.encode())
        else:
            out += char.encode()
        i += 1
    return bytes(out)


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def _size(data: bytes | None) -> bytes:
    return str(-1 if data is None else len(data)).encode()


def _headers(record: ConsumerRecord) -> bytes:
    """kcat's %h: ``name=value`` pairs joined by commas; a null value prints NULL."""
    return b",".join(name.encode() + b"=" + (b"NULL" if value is None else value)
                     for name, value in record.headers)


TOKENS: dict[str, Callable[[ConsumerRecord], bytes]] = {
    "t": lambda r: r.topic.encode(),
    "p": lambda r: str(r.partition).encode(),
    "o": lambda r: str(r.offset).encode(),
    "k": lambda r: r.key or b"",
    "s": lambda r: r.value or b"",
    "K": lambda r: _size(r.key),
    "S": lambda r: _size(r.value),
    "R": lambda r: (-1 if r.value is None else len(r.value)).to_bytes(4, "big", signed=True),
    "T": lambda r: str(r.timestamp if r.timestamp is not None and r.timestamp >= 0
                       else -1).encode(),
    "h": _headers,
}


def kcat_format(fmt: str) -> Formatter:
    """A formatter for kcat's ``-f`` string (a CliError for an unknown ``%`` token)."""
    parts: list[bytes | Callable[[ConsumerRecord], bytes]] = []
    literal = []
    i = 0
    while i < len(fmt):
        if fmt[i] != "%":
            literal.append(fmt[i])
            i += 1
            continue
        if i + 1 == len(fmt):
            raise CliError("-f: a format may not end with a lone %")
        token = fmt[i + 1]
        i += 2
        if token == "%":
            literal.append("%")
            continue
        if token not in TOKENS:
            raise CliError(f"-f: unknown token %{token} (known: "
                           f"{' '.join('%' + t for t in TOKENS)} %%)")
        if literal:
            parts.append(_unescape("".join(literal)))
            literal = []
        parts.append(TOKENS[token])
    if literal:
        parts.append(_unescape("".join(literal)))

    def render(record: ConsumerRecord, _consumer: Consumer) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(record) for p in parts)

    return render


TIMESTAMP_TYPES = {0: "create", 1: "logappend"}


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def _json(record: ConsumerRecord, consumer: Consumer) -> bytes:
    """kcat's -J object: topic, partition, offset, tstype, ts, broker, headers, key, payload."""
    doc: dict = {"topic": record.topic, "partition": record.partition, "offset": record.offset}
    if record.timestamp is not None and record.timestamp >= 0:
        doc["tstype"] = TIMESTAMP_TYPES.get(record.timestamp_type, "unknown")
        doc["ts"] = record.timestamp
    leader = consumer.client.metadata.leader_for(record.topic, record.partition)
    doc["broker"] = -1 if leader is None else leader
    if record.headers:
        doc["headers"] = [x for name, value in record.headers for x in (name, _text(value))]
    doc["key"] = _text(record.key)
    doc["payload"] = _text(record.value)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
