"""Stage 8 exercises: the streaming reader of SimpleKafka's Spark source, piece by piece.

Read stages/stage8_spark/README.md first ("How Spark's Kafka source works"
and "How ours maps onto it"). A Structured Streaming query asks its source,
before every micro-batch, where the batch ends; the source answers with one
offset per partition (the JSON Spark keeps in its checkpoint), then turns the
batch's [start, end) into one task per partition, and each task reads its
range from the partition's leader.

You write the parts that decide and read the ranges:

1. where a query starts: ``startingOffsets`` (``earliest``, ``latest`` or JSON
   per partition) resolved to one offset per partition (``ClusterView.resolve``);
2. where the next micro-batch ends: the current end offsets, new partitions
   and ``maxOffsetsPerTrigger`` split across partitions exactly as Spark's
   Kafka source splits it (``rate_limit``, ``next_batch_end``);
3. the read: one partition's range fetched with SimpleKafka's client into
   Spark rows, stopping exactly at the range's end (``read_range``);
4. the reader Spark calls (``StreamReader.latestOffset``, ``partitions``,
   ``read``), run by ``learn check 8`` on a real SparkSession against a real
   SimpleKafka broker, batch by batch.

Offsets are ``{(topic, partition): offset}`` dicts (``PartitionOffsets``) until
they go to Spark, where ``to_json_dict`` makes them ``{"topic": {"0": 23}}``.
Everything else (options, the cluster connection, the checkpoint, the task
plan) is SimpleKafka's, imported below.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from simplekafka.client.client import KafkaClient, wait_for
from simplekafka.client.errors import error_for
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.records import parse_batches
from simplekafka.protocol.structs import TopicPartition
from simplekafka.spark import kafka_schema
from simplekafka.spark.fetching import fetch_body
from simplekafka.spark.offsets import (
    PartitionOffsets,
    from_json_dict,
    plan_ranges,
    to_json_dict,
)
from simplekafka.spark.options import (
    SparkOptionError,
    StartingPoint,
    one_line,
    parse_source_options,
)
from simplekafka.spark.source import ClusterView as SimpleKafkaClusterView
from simplekafka.spark.source import KafkaInputPartition, KafkaStreamReader, shared_client

# --- exercise 1: where a query starts ------------------------------------------------------


class ClusterView(SimpleKafkaClusterView):
    """The driver's view of the cluster; ``offsets`` (given) asks the brokers (ListOffsets)."""

    def resolve(self, point: StartingPoint, tps: list[TopicPartition]) -> PartitionOffsets:
        """``startingOffsets`` as one offset per partition of ``tps``: the first batch's start.

        ``self.offsets(tps, EARLIEST_TIMESTAMP)`` gives each partition's log
        start, ``self.offsets(tps, LATEST_TIMESTAMP)`` its high watermark, as
        ``{(topic, partition): offset}``; use nothing else of ``self``.

        * ``point.kind == "earliest"``: every partition at its log start;
          ``"latest"``: every partition at its high watermark.
        * ``point.kind == "offsets"``: ``point.offsets`` is ``{topic: {partition:
          offset}}``. An offset -2 means that partition's log start, -1 its high
          watermark, any other number is taken as it is (even past the end: a
          later step reports data loss). A partition of ``tps`` the JSON leaves
          out starts at its log start. A partition the JSON names that is not in
          ``tps`` is a mistake: raise ``SparkOptionError("offsets given for
          TOPIC-P, which is not subscribed or does not exist")`` for the first
          such one in the JSON's order (wrapped in ``one_line``, which keeps
          Spark's report of it to one line).

        The answer has exactly the partitions of ``tps``.
        """
        if point.kind in ("earliest", "latest"):
            return self.offsets(tps, EARLIEST_TIMESTAMP if point.kind == "earliest"
                                else LATEST_TIMESTAMP)
        given = {(t, p): o for t, parts in point.offsets.items() for p, o in parts.items()}
        known = set(tps)
        unknown = [f"{t}-{p}" for (t, p) in given if TopicPartition(t, p) not in known]
        if unknown:
            raise one_line(SparkOptionError(
                f"offsets given for {unknown[0]}, which is not subscribed or does not exist"))
        earliest = self.offsets(tps, EARLIEST_TIMESTAMP)
        latest = self.offsets(tps, LATEST_TIMESTAMP)
        result = {}
        for tp in tps:
            key = (tp.topic, tp.partition)
            wanted = given.get(key, EARLIEST_TIMESTAMP)
            if wanted == EARLIEST_TIMESTAMP:
                result[key] = earliest[key]
            elif wanted == LATEST_TIMESTAMP:
                result[key] = latest[key]
            else:
                result[key] = wanted
        return result


# --- exercise 2: where the next micro-batch ends ---------------------------------------------


def rate_limit(start: PartitionOffsets, end: PartitionOffsets, limit: int) -> PartitionOffsets:
    """``end`` capped so the batch holds about ``limit`` records (``maxOffsetsPerTrigger``).

    Exactly Spark's Kafka source rule. A partition's backlog is ``end[tp] -
    start[tp]`` (0 when ``start`` lacks the partition); ``total`` is the sum of
    the positive backlogs. When ``total <= limit`` the answer is ``end``
    unchanged (a new dict). Otherwise each partition of ``end``:

    * without a start, or with a backlog <= 0: keeps ``end[tp]``;
    * else its share is ``limit * (backlog / total)``, computed in floating
      point exactly so; a share under 1 is rounded up (``math.ceil``, so no
      partition with records starves), any other share rounded down
      (``math.floor``); it ends at ``min(end[tp], start[tp] + rounded share)``.

    So the batch may pass ``limit`` by at most one record per partition.
    """
    sizes = {tp: end[tp] - start.get(tp, end[tp]) for tp in end}
    total = sum(size for size in sizes.values() if size > 0)
    if total <= limit:
        return dict(end)
    capped = {}
    for tp, until in end.items():
        begin = start.get(tp)
        size = sizes[tp]
        if begin is None or size <= 0:
            capped[tp] = until
            continue
        share = limit * (size / total)
        share_count = math.ceil(share) if share < 1 else math.floor(share)
        capped[tp] = min(until, begin + share_count)
    return capped


def next_batch_end(start: PartitionOffsets, latest: PartitionOffsets,
                   earliest: PartitionOffsets, max_rows: int | None) -> PartitionOffsets:
    """Where the micro-batch that begins at ``start`` ends (what ``latestOffset`` answers).

    ``start`` is the last batch's end (Spark's checkpoint), ``latest`` every
    subscribed partition's high watermark now, ``earliest`` the log start of
    partitions (at least those ``start`` lacks; ignore its other entries).

    1. The batch begins at ``start``; a partition of ``latest`` that ``start``
       lacks is new (a partition or topic created since): it begins at
       ``earliest[tp]``.
    2. Each partition of ``latest`` ends at ``max(latest[tp], its beginning)``
       (never before it begins, even when a log went backwards).
    3. With ``max_rows`` (not None), the ends are capped by
       ``rate_limit(beginnings, ends, max_rows)``.
    4. A partition of ``start`` missing from ``latest`` (gone from the
       metadata) ends where it begins.

    Returns a new dict; ``start`` is left as it was.
    """
    begin = dict(start)
    for tp in latest:
        if tp not in begin:
            begin[tp] = earliest[tp]
    end = {tp: max(offset, begin[tp]) for tp, offset in latest.items()}
    if max_rows is not None:
        end = rate_limit(begin, end, max_rows)
    for tp, offset in begin.items():
        end.setdefault(tp, offset)
    return end


# --- exercise 3: the read --------------------------------------------------------------------

FETCH_MAX_WAIT_MS = 200
FETCH_MAX_BYTES = 1024 * 1024
PARTITION_MAX_BYTES = 64 * 1024  # small: a range of any size takes several fetches
REQUEST_TIMEOUT_S = 30.0
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def read_range(client: KafkaClient, topic: str, partition: int, start: int,
               end: int) -> Iterator[tuple]:
    """Yield the records with ``start <= offset < end`` of ``topic``-``partition`` as Spark rows.

    A row is ``(key, value, topic, partition, offset, timestamp,
    timestampType)``, Spark's Kafka schema without headers: ``key`` and
    ``value`` bytes or None, ``timestamp`` the aware UTC datetime ``EPOCH +
    timedelta(milliseconds=ms)``, ``timestampType`` 0 (CreateTime: the record's
    own timestamp) or 1 (LogAppendTime: the batch's max timestamp, which the
    broker stamped, stands for every record of the batch).

    Fetch from the partition's leader (``client.leader_for``) with
    ``client.send(leader, ApiKey.FETCH, fetch_body(TopicPartition(topic,
    partition), position, FETCH_MAX_WAIT_MS, FETCH_MAX_BYTES,
    PARTITION_MAX_BYTES))`` and ``wait_for(future, REQUEST_TIMEOUT_S)``; the
    answer's ``responses[0].partitions[0]`` holds ``error_code`` (not NONE:
    raise ``error_for(code, ...)``) and ``records`` (bytes or None:
    ``parse_batches`` gives the whole batches in it). Fetch again from the
    offset after the last batch you got until you reach ``end``.

    * A fetch answers whole batches, so the first one may begin before
      ``start`` and the last one run past ``end``: yield neither those records
      nor any at ``end`` or after it, and never fetch again once at ``end``
      (``start == end`` yields nothing).
    * Control batches (a transaction's commit or abort marker) are not records
      of the stream: skip them; their offsets are never rows. Records of
      aborted transactions are rows (read_uncommitted, as Spark's Kafka source
      reads by default).
    * Out of scope: leader changes and retries, data loss (the range is below
      the high watermark when Spark plans it), headers (includeHeaders).
    """
    tp = TopicPartition(topic, partition)
    position = start
    while position < end:
        leader = client.leader_for(topic, partition)
        future = client.send(leader, ApiKey.FETCH, fetch_body(
            tp, position, FETCH_MAX_WAIT_MS, FETCH_MAX_BYTES, PARTITION_MAX_BYTES))
        answer = wait_for(future, REQUEST_TIMEOUT_S).responses[0].partitions[0]
        if answer.error_code != ErrorCode.NONE:
            raise error_for(answer.error_code, f"fetching {tp} at {position}")
        for batch in parse_batches(answer.records or b""):
            if batch.next_offset <= position:
                continue
            if not batch.is_control:
                for record in batch:
                    if record.offset < position:
                        continue
                    if record.offset >= end:
                        break
                    if batch.timestamp_type == 1:
                        stamp, kind = batch.header.max_timestamp, 1
                    else:
                        stamp, kind = record.timestamp or 0, 0  # parsed: always set
                    yield (record.key, record.value, topic, partition, record.offset,
                           EPOCH + timedelta(milliseconds=stamp), kind)
            position = batch.next_offset
            if position >= end:
                return


# --- exercise 4: the reader Spark calls ------------------------------------------------------


class StreamReader(KafkaStreamReader):
    """SimpleKafka's streaming reader with your pieces in it; Spark calls these methods.

    Given (inherited from ``simplekafka.spark.source.KafkaStreamReader``):
    ``self.options`` (the parsed options: ``max_offsets_per_trigger``,
    ``min_partitions``, ``starting``...), ``initialOffset`` (which calls your
    ``resolve`` through ``self.view``), ``getDefaultReadLimit`` (``ReadMaxRows``
    when maxOffsetsPerTrigger is set), ``prepareForTriggerAvailableNow``,
    ``self._latest()`` (every subscribed partition's high watermark, new
    partitions included; fixed at the start of an availableNow run),
    ``commit`` and ``stop``.
    """

    _view: ClusterView | None = None  # yours (the base class's holds its own kind)

    @property
    def view(self) -> ClusterView:
        """Your ClusterView (its ``resolve`` is yours), made once per reader."""
        if self._view is None:
            self._view = ClusterView(self.options)
        return self._view

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """The end of the micro-batch that begins at ``start`` (Spark's JSON, or None).

        ``start`` is the JSON of the last batch's end; ``limit`` is
        ``ReadMaxRows`` (its ``max_rows``) with maxOffsetsPerTrigger, otherwise
        no cap. Look up the log start of the partitions ``start`` lacks
        (``self.view.offsets(new, EARLIEST_TIMESTAMP)``; an empty list asks
        nothing) and answer ``next_batch_end``'s offsets as JSON (``to_json_dict``).
        """
        begin = from_json_dict(start or {})
        latest = self._latest()
        new = [TopicPartition(t, p) for (t, p) in latest if (t, p) not in begin]
        earliest = self.view.offsets(new, EARLIEST_TIMESTAMP)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return to_json_dict(next_batch_end(begin, latest, earliest, max_rows))

    def partitions(self, start: dict, end: dict) -> list[KafkaInputPartition]:
        """The batch ``[start, end)`` (Spark's JSON) as tasks: one input partition per range.

        A partition that ``start`` lacks begins at its log start, and a start
        retention has removed is data loss: ``self.view.check_range_start(begin,
        until)`` (given) settles both and answers where each range really
        begins. Then ``plan_ranges(begin, until, self.options.min_partitions)``
        (given) plans the ranges (empty ones left out); each becomes
        ``KafkaInputPartition(topic, partition, start, end)``.
        """
        begin = from_json_dict(start)
        until = from_json_dict(end)
        begin = self.view.check_range_start(begin, until)
        return [KafkaInputPartition(r.topic, r.partition, r.start, r.end)
                for r in plan_ranges(begin, until, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        """One task (run in a Spark Python worker): the partition's range as rows.

        ``shared_client(self.options)`` is the worker's client; ``read_range``
        is yours.
        """
        assert isinstance(partition, KafkaInputPartition)  # planned by partitions() above
        client = shared_client(self.options)
        return read_range(client, partition.topic, partition.partition, partition.start,
                          partition.end)


class LearnerSource(DataSource):
    """``format("simplekafka-learner")``: a streaming source made of your StreamReader."""

    @classmethod
    def name(cls) -> str:
        return "simplekafka-learner"

    def schema(self) -> StructType:
        return kafka_schema(False)

    def streamReader(self, schema: StructType) -> StreamReader:
        return StreamReader(parse_source_options(self.options, streaming=True))
