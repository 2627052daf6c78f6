"""The source's and sink's options, named and checked as Spark's Kafka source names them.

Spark hands a Python data source its options lowercased, as strings; this
module turns them into typed settings once, on the driver, and raises
``SparkOptionError`` with a one-line message for anything missing or
contradictory, so that ``load()`` fails with that line and nothing else.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# Kafka's (and Spark's) markers in per-partition offset JSON are ListOffsets' timestamps
from simplekafka.protocol.api import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP


class SparkOptionError(ValueError):
    """A missing, malformed or contradictory option: the message is one line naming it."""


def one_line(error: BaseException) -> BaseException:
    """``error``, to be raised in a Spark Python worker that then reports it without traceback.

    Spark's workers print an exception's traceback unless ``SPARK_HIDE_TRACEBACK``
    is set in their environment when they format it; the streaming source's
    worker is one process per query, which ends after reporting the error.
    """
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    return error


@dataclass(frozen=True)
class StartingPoint:
    """``earliest``, ``latest`` or per-partition offsets (``-2``/``-1`` allowed per partition)."""

    kind: str  # "earliest", "latest" or "offsets"
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceOptions:
    """What a read asks for; picklable (only plain values) so readers can carry it."""

    bootstrap_servers: str
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: StartingPoint = StartingPoint("latest")
    ending: StartingPoint | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    group_id: str | None = None
    client: dict[str, str] = field(default_factory=dict)  # kafka.* without the prefix

    def matches(self, topic: str) -> bool:
        """Whether a topic belongs to the subscription (assign is handled by partition)."""
        if self.subscribe:
            return topic in self.subscribe
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None
        return self.assign is not None and topic in self.assign

    def client_int(self, name: str, default: int) -> int:
        """A numeric ``kafka.*`` option (e.g. ``fetch.max.bytes``), or ``default``."""
        text = self.client.get(name)
        if text is None:
            return default
        try:
            return int(text)
        except ValueError:
            raise SparkOptionError(
                f"option kafka.{name} must be an integer, not {text!r}"
            ) from None


@dataclass(frozen=True)
class SinkOptions:
    """What a write asks for."""

    bootstrap_servers: str
    topic: str | None = None
    dedup: bool = True
    dedup_scan_records: int = 10_000
    client: dict[str, str] = field(default_factory=dict)
    exactly_once: bool = False
    transactional_id: str = "simplekafka-spark"  # the prefix; the query id completes it


_SOURCE_KNOWN = {
    "kafka.bootstrap.servers", "subscribe", "subscribepattern", "assign", "startingoffsets",
    "endingoffsets", "maxoffsetspertrigger", "minpartitions", "failondataloss",
    "includeheaders", "path",
}
# Spark's Kafka source options we accept for compatibility but that change nothing here.
_SOURCE_IGNORED = {
    "startingtimestamp", "startingoffsetsbytimestamp", "endingtimestamp",
    "endingoffsetsbytimestamp", "kafkaconsumer.polltimeoutms", "fetchoffset.numretries",
    "fetchoffset.retryintervalms", "groupidprefix", "minoffsetspertrigger", "maxtriggerdelay",
    "startingoffsetsbytimestampstrategy", "maxrecordsperpartition",
}
# kafka.* settings the reader uses (simplekafka.spark.source.read_partition); numbers.
_SOURCE_CLIENT_INTS = ("fetch.max.bytes", "max.partition.fetch.bytes", "fetch.max.wait.ms",
                       "request.timeout.ms", "read.timeout.ms")
_SINK_KNOWN = {"kafka.bootstrap.servers", "topic", "dedup", "dedup.scanrecords", "path",
               "checkpointlocation", "includeheaders", "exactlyonce"}


def _bool(options: Mapping[str, str], name: str, default: bool, shown: str) -> bool:
    text = options.get(name)
    if text is None:
        return default
    value = text.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise SparkOptionError(f"option {shown} must be true or false, not {text!r}")


def _positive_int(options: Mapping[str, str], name: str, shown: str) -> int | None:
    text = options.get(name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise SparkOptionError(f"option {shown} must be a positive integer, not {text!r}") from None
    if value < 1:
        raise SparkOptionError(f"option {shown} must be a positive integer, not {text!r}")
    return value


def _client_options(options: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    servers = (options.get("kafka.bootstrap.servers") or "").strip()
    if not servers:
        raise SparkOptionError(
            "option kafka.bootstrap.servers is required (e.g. 127.0.0.1:9092,127.0.0.1:9093)"
        )
    for entry in servers.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SparkOptionError(
                f"option kafka.bootstrap.servers: {entry.strip()!r} is not host:port"
            )
    client = {k[len("kafka."):]: v for k, v in options.items()
              if k.startswith("kafka.") and k != "kafka.bootstrap.servers"}
    return servers, client


def _parse_offsets(
    text: str, shown: str, allow_latest: bool, allow_earliest: bool
) -> StartingPoint:
    value = text.strip()
    lowered = value.lower()
    if lowered == "earliest":
        if not allow_earliest:
            raise SparkOptionError(f"option {shown} cannot be 'earliest'")
        return StartingPoint("earliest")
    if lowered == "latest":
        if not allow_latest:
            raise SparkOptionError(f"option {shown} cannot be 'latest'")
        return StartingPoint("latest")
    try:
        parsed = json.loads(value)
    except ValueError:
        raise SparkOptionError(
            f"option {shown} must be 'earliest', 'latest' or JSON like "
            f'{{"topic":{{"0":23,"1":-2}}}}, not {text!r}'
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise SparkOptionError(f'option {shown}: expected JSON like {{"topic":{{"0":23}}}}')
    offsets: dict[str, dict[int, int]] = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise SparkOptionError(
                f'option {shown}: topic {topic!r} needs an object of partition: offset'
            )
        for part, offset in parts.items():
            try:
                index = int(part)
            except (TypeError, ValueError):
                raise SparkOptionError(
                    f"option {shown}: {part!r} of topic {topic!r} is not a partition number"
                ) from None
            if (not isinstance(offset, int) or isinstance(offset, bool)
                    or offset < EARLIEST_TIMESTAMP):
                raise SparkOptionError(
                    f"option {shown}: offset of {topic}-{index} must be an integer >= -2, "
                    f"not {offset!r}"
                )
            if offset == LATEST_TIMESTAMP and not allow_latest:
                raise SparkOptionError(f"option {shown}: {topic}-{index} cannot be -1 (latest)")
            if offset == EARLIEST_TIMESTAMP and not allow_earliest:
                raise SparkOptionError(f"option {shown}: {topic}-{index} cannot be -2 (earliest)")
            offsets.setdefault(topic, {})[index] = offset
    return StartingPoint("offsets", offsets)


def parse_source_options(options: Mapping[str, str], streaming: bool | None) -> SourceOptions:
    """Check and type the read options; ``streaming`` None means "not known yet".

    Raises ``SparkOptionError`` naming the first bad option.
    """
    options = {k.lower(): v for k, v in options.items()}
    servers, client = _client_options(options)
    unknown = sorted(k for k in options if k not in _SOURCE_KNOWN and k not in _SOURCE_IGNORED
                     and not k.startswith("kafka."))
    if unknown:
        raise SparkOptionError(
            f"unknown option {unknown[0]!r} for format simplekafka (options: subscribe, "
            "subscribePattern, assign, startingOffsets, endingOffsets, maxOffsetsPerTrigger, "
            "minPartitions, failOnDataLoss, includeHeaders, kafka.*)"
        )
    given = [name for name in ("subscribe", "subscribepattern", "assign")
             if (options.get(name) or "").strip()]
    if len(given) != 1:
        shown = {"subscribe": "subscribe", "subscribepattern": "subscribePattern",
                 "assign": "assign"}
        if not given:
            raise SparkOptionError(
                "one of the options subscribe, subscribePattern or assign is required"
            )
        raise SparkOptionError(
            "give only one of subscribe, subscribePattern and assign, not "
            + " and ".join(shown[g] for g in given)
        )
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign: dict[str, tuple[int, ...]] | None = None
    if given[0] == "subscribe":
        subscribe = tuple(t.strip() for t in options["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise SparkOptionError("option subscribe names no topic")
    elif given[0] == "subscribepattern":
        pattern = options["subscribepattern"].strip()
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SparkOptionError(f"option subscribePattern is not a regex: {exc}") from None
    else:
        assign = _parse_assign(options["assign"])
    starting = _parse_offsets(options.get("startingoffsets", "latest" if streaming else "earliest"),
                              "startingOffsets", allow_latest=True, allow_earliest=True)
    ending = None
    if "endingoffsets" in options:
        if streaming:
            raise SparkOptionError("option endingOffsets is for batch reads only (spark.read)")
        ending = _parse_offsets(options["endingoffsets"], "endingOffsets",
                                allow_latest=True, allow_earliest=False)
    if streaming is False and starting.kind == "latest":
        raise SparkOptionError("option startingOffsets cannot be 'latest' for a batch read")
    for point, option in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if point is not None and point.kind == "offsets" and assign is not None:
            extra = [f"{t}-{p}" for t, parts in point.offsets.items() for p in parts
                     if p not in assign.get(t, ())]
            if extra:
                raise SparkOptionError(f"option {option} names {extra[0]}, which assign does not")
    for name in _SOURCE_CLIENT_INTS:
        _positive_int(options, "kafka." + name, "kafka." + name)
    max_per_trigger = _positive_int(options, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    if max_per_trigger is not None and streaming is False:
        raise SparkOptionError("option maxOffsetsPerTrigger is for streaming reads only")
    return SourceOptions(
        bootstrap_servers=servers,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_per_trigger,
        min_partitions=_positive_int(options, "minpartitions", "minPartitions"),
        fail_on_data_loss=_bool(options, "failondataloss", True, "failOnDataLoss"),
        include_headers=_bool(options, "includeheaders", False, "includeHeaders"),
        group_id=client.pop("group.id", None),
        client=client,
    )


def _parse_assign(text: str) -> dict[str, tuple[int, ...]]:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed or not all(
        isinstance(parts, list) and parts
        and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts)
        for parts in parsed.values()
    ):
        raise SparkOptionError(
            f'option assign must be JSON like {{"topic":[0,1]}}, not {text.strip()!r}'
        )
    return {topic: tuple(sorted(set(parts))) for topic, parts in parsed.items()}


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check and type the write options (``SparkOptionError`` naming the first bad one)."""
    options = {k.lower(): v for k, v in options.items()}
    servers, client = _client_options(options)
    unknown = sorted(k for k in options if k not in _SINK_KNOWN and not k.startswith("kafka."))
    if unknown:
        raise SparkOptionError(
            f"unknown option {unknown[0]!r} for the simplekafka sink (options: topic, dedup, "
            "dedup.scanRecords, exactlyOnce, kafka.*)"
        )
    topic = (options.get("topic") or "").strip() or None
    scan = _positive_int(options, "dedup.scanrecords", "dedup.scanRecords")
    transactional_id = client.pop("transactional.id", None)
    exactly_once = _bool(options, "exactlyonce", transactional_id is not None, "exactlyOnce")
    if transactional_id is not None:
        transactional_id = transactional_id.strip()
        if not transactional_id:
            raise SparkOptionError("option kafka.transactional.id must not be empty")
        if not exactly_once:
            raise SparkOptionError("option kafka.transactional.id needs exactlyOnce=true")
    return SinkOptions(
        bootstrap_servers=servers,
        topic=topic,
        dedup=_bool(options, "dedup", True, "dedup"),
        dedup_scan_records=scan if scan is not None else 10_000,
        client=client,
        exactly_once=exactly_once,
        transactional_id=transactional_id or "simplekafka-spark",
    )
