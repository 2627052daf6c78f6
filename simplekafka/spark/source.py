"""The readers: Spark's Kafka source, as a PySpark Python data source on our client.

Where each piece runs (Spark's process model for Python data sources):

* the driver's long-lived Python process calls ``initialOffset``,
  ``latestOffset``, ``partitions`` and ``commit``: :class:`ClusterView` holds
  its one connection to the cluster (partition discovery, offset lookups);
* executors run ``read()``, one task per :class:`KafkaInputPartition` (one
  partition's offset range), fetching from the partition's leader with
  :class:`~simplekafka.spark.fetching.RangeReader` and yielding Arrow batches.

Readers are pickled into the tasks: clients are made lazily and dropped by
``__getstate__``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator

from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from simplekafka.admin.groups import list_offsets
from simplekafka.client.client import KafkaClient
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from simplekafka.protocol.structs import TopicPartition
from simplekafka.spark.arrow_records import to_arrow
from simplekafka.spark.fetching import (
    DataLossError,
    RangeReader,
    report_data_loss,
)
from simplekafka.spark.offsets import (
    PartitionOffsets,
    from_json_dict,
    next_batch_end,
    plan_ranges,
    to_json_dict,
)
from simplekafka.spark.options import (
    SourceOptions,
    SparkOptionError,
    StartingPoint,
    one_line,
)

log = logging.getLogger("simplekafka.spark")

_clients: dict[tuple, KafkaClient] = {}
_clients_lock = threading.Lock()


def shared_client(options: SourceOptions) -> KafkaClient:
    """One client per cluster per worker process, reused by the tasks the worker runs."""
    key = (os.getpid(), options.bootstrap_servers,
           options.client_int("request.timeout.ms", 30_000))
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = KafkaClient(
                options.bootstrap_servers,
                client_id=options.client.get("client.id", "simplekafka-spark"),
                request_timeout_ms=key[2],
            )
        return client


class KafkaInputPartition(InputPartition):
    """One task's work: ``[start, end)`` of one partition (picklable plain values)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


class ClusterView:
    """The driver's view of the subscription: which partitions, which offsets."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.client = KafkaClient(
            options.bootstrap_servers,
            client_id=options.client.get("client.id", "simplekafka-spark-driver"),
            request_timeout_ms=options.client_int("request.timeout.ms", 30_000),
        )

    def partitions(self) -> list[TopicPartition]:
        """The subscribed partitions now (metadata refreshed: new ones show up here)."""
        options = self.options
        timeout = self.client.request_timeout_ms
        if options.assign is not None:
            return [TopicPartition(t, p) for t, parts in sorted(options.assign.items())
                    for p in parts]
        snapshot = self.client.refresh_metadata(None, timeout)
        found = []
        for name, topic in sorted(snapshot.topics.items()):
            if topic.is_internal or topic.error_code or not options.matches(name):
                continue
            found += [TopicPartition(name, p) for p in sorted(topic.partitions)]
        return found

    def offsets(self, tps: list[TopicPartition], timestamp: int) -> PartitionOffsets:
        """Earliest (-2) or latest (-1: the high watermark) offset of each partition."""
        if not tps:
            return {}
        found = list_offsets(self.client, {tp: timestamp for tp in tps},
                             self.client.request_timeout_ms)
        return {(tp.topic, tp.partition): offset for tp, offset in found.items()}

    def resolve(self, point: StartingPoint, tps: list[TopicPartition]) -> PartitionOffsets:
        """``earliest``/``latest``/per-partition JSON -> an offset for every partition.

        Partitions the JSON leaves out start at the earliest offset (as new
        partitions do).
        """
        if point.kind in ("earliest", "latest"):
            return self.offsets(tps, EARLIEST_TIMESTAMP if point.kind == "earliest"
                                else LATEST_TIMESTAMP)
        given = {(t, p): o for t, parts in point.offsets.items() for p, o in parts.items()}
        unknown = [f"{t}-{p}" for (t, p) in given if TopicPartition(t, p) not in set(tps)]
        if unknown:
            raise one_line(SparkOptionError(
                f"offsets given for {unknown[0]}, which is not subscribed or does not exist"))
        earliest = self.offsets(tps, EARLIEST_TIMESTAMP)
        latest = self.offsets([tp for tp in tps if given.get(tp) == LATEST_TIMESTAMP],
                              LATEST_TIMESTAMP)
        result = {}
        for tp in tps:
            key = (tp.topic, tp.partition)
            wanted = given.get(key, EARLIEST_TIMESTAMP)
            result[key] = (earliest[key] if wanted == EARLIEST_TIMESTAMP
                           else latest[key] if wanted == LATEST_TIMESTAMP else wanted)
        return result

    def check_range_start(self, start: PartitionOffsets, end: PartitionOffsets) -> PartitionOffsets:
        """Where each range can really start; data loss reported as ``failOnDataLoss`` says.

        Records retention removed before the batch ran are detected here, on the
        driver, so a failing query says so in one line instead of a task error.
        """
        tps = [TopicPartition(t, p) for (t, p) in end]
        earliest = self.offsets(tps, EARLIEST_TIMESTAMP)
        checked = {}
        for key, until in end.items():
            begin = start.get(key, earliest[key])
            if begin < earliest[key] and begin < until:
                report_data_loss(self.options.fail_on_data_loss, key[0], key[1], begin,
                                 min(earliest[key], until) - 1)
                begin = min(earliest[key], until)
            if until < begin:  # the log went backwards (topic recreated?)
                report_data_loss(self.options.fail_on_data_loss, key[0], key[1], until, begin - 1)
                begin = until
            checked[key] = begin
        return checked

    def commit_group(self, offsets: PartitionOffsets) -> None:
        """Commit the query's progress as the consumer group ``kafka.group.id``'s offsets."""
        from simplekafka.consumer.consumer import Consumer

        group = Consumer(bootstrap_servers=self.options.bootstrap_servers,
                         group_id=self.options.group_id, client=self.client,
                         enable_auto_commit=False)
        group.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})

    def close(self) -> None:
        self.client.close()


def read_partition(options: SourceOptions, partition: KafkaInputPartition) -> Iterator:
    """An executor's ``read()``: the range as Arrow record batches."""
    client = shared_client(options)
    reader = RangeReader(
        client,
        TopicPartition(partition.topic, partition.partition),
        partition.start,
        partition.end,
        fail_on_data_loss=options.fail_on_data_loss,
        max_bytes=options.client_int("fetch.max.bytes", 64 * 1024 * 1024),
        partition_max_bytes=options.client_int("max.partition.fetch.bytes", 4 * 1024 * 1024),
        max_wait_ms=options.client_int("fetch.max.wait.ms", 200),
        timeout_s=options.client_int("read.timeout.ms", 120_000) / 1000,
        check_crcs=options.client.get("check.crcs", "true").lower() != "false",
    )
    for decoded in reader:
        yield to_arrow(decoded, partition.topic, partition.partition, options.include_headers)


class _ViewHolder:
    """Lazily made driver connection, dropped when pickled (readers travel to executors)."""

    options: SourceOptions
    _view: ClusterView | None = None

    @property
    def view(self) -> ClusterView:
        if self._view is None:
            self._view = ClusterView(self.options)
        return self._view

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_view", None)
        return state

    def close_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None


class KafkaStreamReader(_ViewHolder, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads: offsets in Spark's checkpoint, admission by maxOffsetsPerTrigger."""

    def __init__(self, options: SourceOptions | None, error: Exception | None = None) -> None:
        self.options = options  # type: ignore[assignment]
        self._error = error
        self._available_now: PartitionOffsets | None = None
        self._reported: PartitionOffsets = {}

    def _check(self) -> None:
        if self._error is not None:
            raise one_line(self._error)

    def initialOffset(self) -> dict:
        self._check()
        tps = self.view.partitions()
        return to_json_dict(self.view.resolve(self.options.starting, tps))

    def getDefaultReadLimit(self) -> ReadLimit:
        self._check()
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._check()
        tps = self.view.partitions()
        self._available_now = self.view.offsets(tps, LATEST_TIMESTAMP)

    def _latest(self) -> PartitionOffsets:
        if self._available_now is not None:
            return dict(self._available_now)
        tps = self.view.partitions()
        return self.view.offsets(tps, LATEST_TIMESTAMP)

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        self._check()
        begin = from_json_dict(start or {})
        # ``start`` is the end of the last batch, which has run to completion: Spark
        # plans a batch only after the one before it committed. (``commit`` comes
        # only when another batch is planned, so an idle query would never report.)
        self._report_progress(begin)
        latest = self._latest()
        new = [TopicPartition(t, p) for (t, p) in latest if (t, p) not in begin]
        earliest = {}
        if new:  # partitions or topics that appeared: read them from their start
            log.info("simplekafka source: new partitions %s", ", ".join(map(str, new)))
            earliest = self.view.offsets(new, EARLIEST_TIMESTAMP)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return to_json_dict(next_batch_end(begin, latest, earliest, max_rows))

    def partitions(self, start: dict, end: dict) -> list[KafkaInputPartition]:
        self._check()
        begin = from_json_dict(start)
        until = from_json_dict(end)
        try:
            begin = self.view.check_range_start(begin, until)
        except DataLossError as exc:
            raise one_line(exc) from None
        return [KafkaInputPartition(r.topic, r.partition, r.start, r.end)
                for r in plan_ranges(begin, until, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, KafkaInputPartition)  # planned by partitions() above
        return read_partition(self.options, partition)

    def commit(self, end: dict) -> None:
        self._report_progress(from_json_dict(end))

    def _report_progress(self, offsets: PartitionOffsets) -> None:
        """``kafka.group.id``: the progress as the group's committed offsets (best effort)."""
        if not self.options.group_id or not offsets or offsets == self._reported:
            return
        try:
            self.view.commit_group(offsets)
            self._reported = dict(offsets)
        except Exception as exc:  # progress reporting must never stop the query
            log.warning("simplekafka source: committing group offsets failed: %s", exc)

    def stop(self) -> None:
        if self._error is None:
            self.close_view()


class KafkaBatchReader(_ViewHolder, DataSourceReader):
    """A batch read: ``startingOffsets`` (default earliest) to ``endingOffsets`` (latest)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[KafkaInputPartition]:
        try:
            tps = self.view.partitions()
            begin = self.view.resolve(self.options.starting, tps)
            until = self.view.resolve(self.options.ending or StartingPoint("latest"), tps)
            begin = self.view.check_range_start(begin, until)
            return [KafkaInputPartition(r.topic, r.partition, r.start, r.end)
                    for r in plan_ranges(begin, until, self.options.min_partitions)]
        finally:
            self.close_view()

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, KafkaInputPartition)  # planned by partitions() above
        return read_partition(self.options, partition)
