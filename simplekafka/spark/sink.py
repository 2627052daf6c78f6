"""The sink: Spark's Kafka sink columns written with our Producer, replays not written twice.

Columns as Spark's Kafka sink takes them: ``value`` (required, string or
binary), optional ``key`` (string or binary), ``topic`` (string; else the
``topic`` option), ``partition`` (int) and ``headers``
(array<struct<key string, value binary>>). Other columns are ignored.

At least once, like Spark's: a task's records are acknowledged (``acks=all``
unless ``kafka.acks`` says otherwise) before the task reports success. Beyond
Spark, a streaming batch that is replayed after a crash does not write its
records twice (``dedup``, on by default): every record carries the header
``simplekafka.spark.batch`` = ``<query id>:<batch id>:<task partition>``;
before writing, a task reads back the tail of each target topic's partitions
and skips the records that an earlier attempt of the same task already wrote
(matched by content, counted with multiplicity). The scan walks back until it
meets an earlier batch of the same query, or ``dedup.scanRecords`` records of
others (default 10,000). docs/design-notes.md has the why.

Exactly once (``exactlyOnce=true``, or ``kafka.transactional.id`` given):
each micro-batch is one Kafka transaction, written by the driver when Spark
commits the batch. The tasks only collect their rows (so a batch must fit the
driver's memory); ``commit`` opens a transaction with the transactional id
``<kafka.transactional.id, default simplekafka-spark>-<query id>`` (stable
across restarts from the checkpoint), writes every record, and in the same
transaction commits ``batch id + 1`` as the offset of the sink topic's
partition 0 in the group ``simplekafka-spark-sink-<query id>``. After a crash,
the restarted driver's ``init_transactions()`` fences the old one and aborts
a transaction it left open (its records are never visible to read_committed
readers); a replayed batch whose transaction did commit finds its batch id in
that group and writes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from simplekafka.admin.groups import list_offsets
from simplekafka.client.client import KafkaClient
from simplekafka.producer.producer import Producer
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from simplekafka.protocol.structs import TopicPartition
from simplekafka.spark.arrow_records import to_arrow
from simplekafka.spark.fetching import RangeReader
from simplekafka.spark.options import SinkOptions, SparkOptionError

log = logging.getLogger("simplekafka.spark")

BATCH_HEADER = "simplekafka.spark.batch"

# kafka.<name> options the Producer understands, and how to convert them.
_PRODUCER_OPTIONS: dict[str, tuple[str, Callable[[str], object]]] = {
    "acks": ("acks", str),
    "linger.ms": ("linger_ms", float),
    "batch.size": ("batch_size", int),
    "compression.type": ("compression_type", str),
    "enable.idempotence": ("enable_idempotence", lambda v: v.lower() == "true"),
    "max.request.size": ("max_request_size", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "buffer.memory": ("buffer_memory", int),
    "client.id": ("client_id", str),
}

_producers: dict[tuple, Producer] = {}
_producers_lock = threading.Lock()


def producer_settings(options: SinkOptions) -> dict:
    """Producer keyword arguments from ``kafka.*`` options (``SparkOptionError`` if bad)."""
    settings: dict = {"acks": "all", "linger_ms": 5, "client_id": "simplekafka-spark-sink"}
    for name, text in options.client.items():
        if name not in _PRODUCER_OPTIONS:
            log.warning("simplekafka sink: option kafka.%s is not used by the producer", name)
            continue
        keyword, convert = _PRODUCER_OPTIONS[name]
        try:
            settings[keyword] = convert(text)
        except ValueError:
            raise SparkOptionError(f"option kafka.{name}: bad value {text!r}") from None
    return settings


def shared_producer(options: SinkOptions) -> Producer:
    """One producer per worker process and configuration, reused by its tasks."""
    settings = producer_settings(options)
    key = (os.getpid(), options.bootstrap_servers, tuple(sorted(settings.items())))
    with _producers_lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = Producer(options.bootstrap_servers, **settings)
        return producer


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """The columns Spark's Kafka sink requires, checked before any task runs."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    text = (StringType, BinaryType)
    if "value" not in fields:
        raise SparkOptionError("the simplekafka sink needs a 'value' column (string or binary)")
    for name in ("value", "key"):
        if name in fields and not isinstance(fields[name], text):
            raise SparkOptionError(
                f"column '{name}' must be string or binary, not {fields[name].simpleString()}"
            )
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise SparkOptionError("column 'topic' must be a string")
    if "topic" not in fields and options.topic is None:
        raise SparkOptionError("no topic: give the sink option topic or a 'topic' column")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise SparkOptionError("column 'partition' must be an int")
    if "headers" in fields:
        kind = fields["headers"]
        element = kind.elementType if isinstance(kind, ArrayType) else None
        if not (isinstance(element, StructType)
                and [f.name for f in element.fields] == ["key", "value"]
                and isinstance(element.fields[0].dataType, StringType)
                and isinstance(element.fields[1].dataType, (BinaryType, StringType))):
            raise SparkOptionError(
                "column 'headers' must be array<struct<key: string, value: binary>>"
            )


def _as_bytes(data) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    return bytes(data)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task wrote: records sent, and records skipped as already written; in
    exactly-once mode the task's records themselves (the driver writes them) and its query."""

    written: int
    skipped: int
    records: list | None = None
    query_id: str | None = None


Outgoing = tuple[str, bytes | None, bytes | None, int | None, tuple]


def _rows_to_records(rows: Iterable, default_topic: str | None) -> list[Outgoing]:
    records = []
    for row in rows:
        data = row.asDict() if hasattr(row, "asDict") else dict(row)
        topic = data.get("topic") or default_topic
        if topic is None:
            raise ValueError("a row has a null topic and the sink has no topic option")
        headers = tuple((h["key"], _as_bytes(h["value"])) for h in data.get("headers") or ())
        records.append((topic, _as_bytes(data.get("key")), _as_bytes(data["value"]),
                        data.get("partition"), headers))
    return records


def _content(topic: str, key, value, headers) -> tuple:
    return (topic, key, value, tuple(h for h in headers if h[0] != BATCH_HEADER))


def already_written(client: KafkaClient, topics: set[str], marker: str, query_id: str,
                    batch_id: int, scan_records: int) -> Counter:
    """Records an earlier attempt of this task wrote (by content), from the partitions' tails."""
    found: Counter = Counter()
    query_prefix = f"{query_id}:"
    for topic in topics:
        tps = [TopicPartition(topic, p) for p in client.partitions_for(topic)]
        starts = list_offsets(client, {tp: EARLIEST_TIMESTAMP for tp in tps},
                              client.request_timeout_ms)
        ends = list_offsets(client, {tp: LATEST_TIMESTAMP for tp in tps},
                            client.request_timeout_ms)
        for tp in tps:
            until = ends[tp]
            unrelated = 0
            chunk = min(scan_records, 5_000)
            while until > starts[tp] and unrelated < scan_records:
                begin = max(starts[tp], until - chunk)
                earlier_batch = False
                for decoded in RangeReader(client, tp, begin, until, fail_on_data_loss=False):
                    table = to_arrow(decoded, topic, tp.partition, include_headers=True)
                    keys = table.column("key").to_pylist()
                    values = table.column("value").to_pylist()
                    for key, value, headers in zip(keys, values,
                                                   table.column("headers").to_pylist()):
                        tag = next((h["value"] for h in headers if h["key"] == BATCH_HEADER),
                                   None)
                        tag_text = tag.decode() if tag else ""
                        if not tag_text.startswith(query_prefix):
                            unrelated += 1
                            continue
                        if tag_text == marker:
                            pairs = [(h["key"], h["value"]) for h in headers]
                            found[_content(topic, key, value, pairs)] += 1
                        elif int(tag_text.split(":")[1]) < batch_id:
                            earlier_batch = True
                if earlier_batch:
                    break
                until = begin
    return found


def write_rows(options: SinkOptions, rows: Iterator, streaming: bool) -> SinkCommitMessage:
    """One task's write: dedup against an earlier attempt, send, wait for every ack."""
    from pyspark import TaskContext

    records = _rows_to_records(rows, options.topic)
    context = TaskContext.get()
    if options.exactly_once:  # the driver writes them, in the batch's transaction
        query = context.getLocalProperty("sql.streaming.queryId") if context else None
        return SinkCommitMessage(written=0, skipped=0, records=records, query_id=query)
    batch_id = context.getLocalProperty("streaming.sql.batchId") if context else None
    query_id = context.getLocalProperty("sql.streaming.queryId") if context else None
    marker = None
    skip: Counter = Counter()
    producer = shared_producer(options)
    if streaming and context is not None and batch_id is not None and query_id:
        marker = f"{query_id}:{batch_id}:{context.partitionId()}"
        if options.dedup and records:
            skip = already_written(producer.client, {r[0] for r in records}, marker,
                                   query_id, int(batch_id), options.dedup_scan_records)
    futures = []
    skipped = 0
    for topic, key, value, partition, headers in records:
        if marker is not None:
            headers = (*headers, (BATCH_HEADER, marker.encode()))
        content = _content(topic, key, value, headers)
        if skip[content] > 0:
            skip[content] -= 1
            skipped += 1
            continue
        futures.append(producer.send(topic, value=value, key=key, headers=list(headers),
                                     partition=partition))
    producer.flush()
    for future in futures:
        future.result(timeout=0)  # raises the first failed record's error
    if skipped:
        log.warning("simplekafka sink: batch %s task %s: %d records were already written "
                    "by an earlier attempt; not written again", batch_id,
                    context.partitionId() if context else "?", skipped)
    return SinkCommitMessage(written=len(futures), skipped=skipped)


_transactional: dict[str, Producer] = {}


def transactional_producer(options: SinkOptions, query_id: str) -> Producer:
    """The driver's producer for this query, initialized once per driver process: its
    ``init_transactions()`` fences an earlier driver and aborts what that one left open."""
    transactional_id = f"{options.transactional_id}-{query_id}"
    with _producers_lock:
        producer = _transactional.get(transactional_id)
        if producer is None:
            settings = {k: v for k, v in producer_settings(options).items() if k != "acks"}
            producer = Producer(options.bootstrap_servers, transactional_id=transactional_id,
                                **settings)
            producer.init_transactions()
            _transactional[transactional_id] = producer
        return producer


def batch_group(query_id: str) -> str:
    """The group whose committed offset says which batch of the query committed last."""
    return f"simplekafka-spark-sink-{query_id}"


def committed_batches(producer: Producer, group_id: str, tp: TopicPartition) -> int:
    """How many batches of the query committed (the offset its transactions commit), 0 if
    none."""
    from simplekafka.admin.groups import fetch_offsets
    from simplekafka.client.group_protocol import find_coordinator

    client = producer.client

    def attempt(deadline) -> int:  # a coordinator still loading its partition answers
        remaining = max(1, int(deadline.remaining() * 1000))  # a retriable error
        coordinator = find_coordinator(client, group_id, remaining)
        offsets = fetch_offsets(client, coordinator, group_id, [tp], remaining)
        return max(offsets.get(tp, 0), 0)

    return client.call_with_retries(attempt, client.request_timeout_ms)


def commit_exactly_once(options: SinkOptions, messages: list, batch_id: int) -> None:
    """Write the batch's records and its batch id in one transaction (see the docstring)."""
    records = [r for m in messages if m is not None for r in (m.records or ())]
    query_id = next((m.query_id for m in messages if m is not None and m.query_id), None)
    if not records or query_id is None:
        return
    producer = transactional_producer(options, query_id)
    group_id = batch_group(query_id)
    marker = TopicPartition(options.topic or min(r[0] for r in records), 0)
    if committed_batches(producer, group_id, marker) > batch_id:
        log.warning("simplekafka sink: batch %d of query %s was committed before a crash; "
                    "not written again", batch_id, query_id)
        return
    producer.begin_transaction()
    try:
        for topic, key, value, partition, headers in records:
            producer.send(topic, value=value, key=key, headers=list(headers),
                          partition=partition)
        producer.flush()
        _fault_injection_pause(batch_id)
        producer.send_offsets_to_transaction({marker: batch_id + 1}, group_id)
        producer.commit_transaction()
    except Exception:
        with contextlib.suppress(Exception):
            producer.abort_transaction()
        raise
    log.info("simplekafka sink: batch %d: %d records committed in one transaction",
             batch_id, len(records))


def _fault_injection_pause(batch_id: int) -> None:
    """Tests only: with SIMPLEKAFKA_SPARK_SINK_STALL=<batch id>:<file>, touch the file and
    wait (to be SIGKILLed) with that batch's transaction open."""
    setting = os.environ.get("SIMPLEKAFKA_SPARK_SINK_STALL")
    if not setting:
        return
    wanted, _, path = setting.partition(":")
    if wanted == str(batch_id) and not os.path.exists(path):
        with open(path, "w"):
            pass
        time.sleep(600)


class KafkaStreamWriter(DataSourceStreamWriter):
    """``writeStream``: at least once, and a replayed batch is not written twice."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return write_rows(self.options, iterator, streaming=True)

    def commit(self, messages: list, batchId: int) -> None:
        if self.options.exactly_once:
            commit_exactly_once(self.options, messages, batchId)
            return
        written = sum(m.written for m in messages if m is not None)
        skipped = sum(m.skipped for m in messages if m is not None)
        log.info("simplekafka sink: batch %d: %d records written, %d already there",
                 batchId, written, skipped)

    def abort(self, messages: list, batchId: int) -> None:
        log.warning("simplekafka sink: batch %d aborted; its replay writes what is missing",
                    batchId)


class KafkaBatchWriter(DataSourceWriter):
    """``write``: every row once per successful task attempt (at least once)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return write_rows(self.options, iterator, streaming=False)
