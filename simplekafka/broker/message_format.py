"""Old clients: message sets (formats v0/v1) in, v2 batches stored, message sets out.

Kafka 0.11 moved the log to RecordBatch v2, and from then on a broker kept
one format on disk and converted at the edges for clients older than that
(Kafka's ``LogValidator`` on the way in, ``RecordsUtil.downConvert`` on the
way out). Kafka 3.9 still does both; this module is where SimpleKafka does,
the Produce and Fetch handlers calling it for their old versions only.

Produce v0-2 (:func:`to_record_batches`): each partition's message set is
parsed (every message's CRC checked: one bad message and the partition gets
CORRUPT_MESSAGE with nothing appended) and rebuilt as one v2 batch, with the
wrapper's codec. The broker assigns the offsets, as for any batch. v0
messages have no timestamp (-1); the log stamps the append time over it when
the topic's ``message.timestamp.type`` is LogAppendTime.

Fetch v0-3 (:func:`down_convert_answers`): v0 sets for Fetch v0-1, v1 sets
for v2-3, one message set per stored batch (its codec kept; headers, which
the old formats cannot carry, dropped). Transactions do not exist before v2:
control batches are left out, and aborted records are served, because an old
fetcher reads as read_uncommitted (it has no isolation level to ask for).
A topic with ``message.downconversion.enable=false`` answers
UNSUPPORTED_VERSION instead, before anything is read into Python: the cost
(every fetched byte decoded and re-encoded by the broker, and no zero-copy)
is the reason that switch exists (docs/further/old-message-formats.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simplekafka.broker.fetch_messages import FetchPartitionData, FetchResult, FetchSource
from simplekafka.broker.replica_manager import PartitionResponse
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode
from simplekafka.protocol.legacy_records import (
    NO_TIMESTAMP,
    build_message_set,
    is_message_set,
    parse_message_set,
)
from simplekafka.protocol.records import Record, build_batch, parse_batches
from simplekafka.storage import FileRegion

if TYPE_CHECKING:
    from simplekafka.protocol.message_types import FetchRequest, ProduceRequest

FIRST_V2_PRODUCE = 3  # Produce v3+ carries RecordBatch v2 only
FIRST_V2_FETCH = 4  # Fetch v4+ answers RecordBatch v2 as stored


def fetch_magic(api_version: int) -> int:
    """The message format a Fetch version's client reads: v0 for Fetch v0-1, v1 for v2-3."""
    return 0 if api_version < 2 else 1


# ---------------------------------------------------------------- in: Produce v0-2


def up_convert(records: bytes | None,
               max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes | None:
    """One v2 batch holding the message set's messages (a v2 batch, or nothing, unchanged).

    Raises CorruptBatchError (its ``error_code`` is the answer) for a bad message.
    """
    if not records or not is_message_set(records):
        return records
    messages = parse_message_set(records, True, max_decompressed_bytes)
    if not messages:
        raise CorruptBatchError("the message set holds no whole message",
                                ErrorCode.INVALID_RECORD, expected="at least one message")
    codec = next((m.codec for m in messages if m.codec), Compression.NONE)
    return build_batch([Record(timestamp=m.timestamp if m.magic else NO_TIMESTAMP,
                               key=m.key, value=m.value) for m in messages],
                       compression=codec)


def to_record_batches(request: ProduceRequest) -> dict[tuple[str, int], PartitionResponse]:
    """Convert a Produce v0-2 request's message sets in place; the partitions refused.

    A refused partition (a corrupt message) is not appended; the others are.
    """
    refused = {}
    for topic in request["topic_data"]:
        for data in topic["partition_data"]:
            records = data["records"]
            if records is not None and not isinstance(records, bytes):
                continue  # decoded sets are bytes: nothing else to convert
            try:
                data["records"] = up_convert(records)  # in place, as the request is read
            except CorruptBatchError as exc:
                response = PartitionResponse(exc.error_code)
                response.error_message = str(exc)
                refused[(topic["name"], data["index"])] = response
    return refused


# ---------------------------------------------------------------- out: Fetch v0-3


def down_convert(records: bytes | bytearray | memoryview, magic: int,
                 fetch_offset: int = 0) -> bytes:
    """The v2 batches of ``records`` as one v0/v1 message set for an old fetcher.

    Control batches are dropped; so are records before ``fetch_offset`` (a
    fetch landing inside a batch) and a partial trailing batch. Raises
    CorruptBatchError (UNSUPPORTED_COMPRESSION_TYPE) for zstd, which v0/v1
    cannot carry, as Kafka answers a pre-zstd fetcher.
    """
    out = []
    for batch in parse_batches(records):
        if batch.is_control:
            continue
        if batch.compression is Compression.ZSTD:
            raise CorruptBatchError("zstd-compressed records cannot be read by a fetcher of "
                                    f"message format v{magic}",
                                    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        kept = [(r.offset, r.timestamp, r.key, r.value) for r in batch
                if r.offset >= fetch_offset]
        if kept:
            out.append(build_message_set(
                kept, magic, batch.compression, batch.timestamp_type,
                batch.header.max_timestamp))
    return b"".join(out)


def _bytes(records: bytes | FileRegion) -> bytes:
    if isinstance(records, FileRegion):
        try:
            return records.read()
        finally:
            records.close()
    return records


def down_convert_answers(result: FetchResult, api_version: int, request: FetchRequest,
                         replicas: FetchSource) -> FetchResult:
    """Each partition's records as message sets of ``api_version``'s format, in place.

    A partition of a topic whose ``message.downconversion.enable`` is false
    answers UNSUPPORTED_VERSION and no records, as Kafka does.
    """
    magic = fetch_magic(api_version)
    offsets = {(topic["topic"], wanted["partition"]): wanted["fetch_offset"]
               for topic in request["topics"] for wanted in topic["partitions"]}
    for topic, answers in result[0]:
        for answer in answers:
            local = replicas.get_partition(topic, answer.partition_index)
            allowed = local is None or local.log.config.message_downconversion_enable
            _convert_one(answer, magic, allowed,
                         offsets.get((topic, answer.partition_index), 0))
    return result


def _convert_one(answer: FetchPartitionData, magic: int, allowed: bool,
                 fetch_offset: int) -> None:
    if answer.error_code not in (ErrorCode.NONE, None):
        return
    if not allowed:
        if isinstance(answer.records, FileRegion):
            answer.records.close()
        answer.records = b""
        answer.error_code = ErrorCode.UNSUPPORTED_VERSION
        return
    answer.aborted_transactions = []
    if not answer.records:
        return
    data = _bytes(answer.records)
    try:
        answer.records = down_convert(data, magic, fetch_offset)
    except CorruptBatchError as exc:
        answer.records = b""
        answer.error_code = exc.error_code
