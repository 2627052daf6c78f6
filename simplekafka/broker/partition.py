"""One partition as this broker sees it: its log, its role, its high watermark.

The controller tells the broker, through LeaderAndIsr, who leads each partition,
at which leader epoch, and who is in sync. A Partition holds that state next to
the partition's Log and does the leader's work on it: stamp and append produced
batches (never decoding their records), keep the high watermark (the lowest log
end offset in the ISR: what consumers may read), and wake whoever waits for new
data (a long-polling fetch) or for the high watermark (an acks=all produce).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from twisted.internet import defer

from simplekafka.broker.errors import KafkaError
from simplekafka.broker.producer_state import ProducerStateTable
from simplekafka.protocol.batch_header import (
    HEADER_SIZE,
    MAGIC_V2,
    BatchHeader,
    iter_batch_positions,
    read_header,
    validate_batch,
    validate_batches,
)
from simplekafka.protocol.compression import Compression
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode

log = logging.getLogger(__name__)

NO_LEADER = -1


class AppendResult(NamedTuple):
    """What a produce gets back: where the batch landed (or landed before, if a retry)."""

    base_offset: int
    last_offset: int
    log_start_offset: int
    duplicate: bool = False


class Partition:
    """Leader or follower state of one partition, around its storage Log."""

    def __init__(self, topic: str, index: int, local_broker_id: int, log_: object):
        self.topic = topic
        self.index = index
        self.local_broker_id = local_broker_id
        self.log = log_
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = 0
        self.controller_epoch = -1
        self.isr: list[int] = []
        self.replicas: list[int] = []
        self.high_watermark = 0
        self.producers = ProducerStateTable()
        # LEOs followers reported with their fetches (stage 7 moves followers in and out)
        self.follower_end_offsets: dict[int, int] = {}
        self._append_listeners: list[Callable[[Partition], None]] = []
        self._hw_waiters: list[tuple[int, defer.Deferred]] = []
        self._rebuild_producer_state()

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return f"<Partition {self.topic}-{self.index} {role} epoch {self.leader_epoch}>"

    # -- role ---------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def make_leader(self, leader_epoch: int, isr: list[int], replicas: list[int],
                    partition_epoch: int, controller_epoch: int) -> bool:
        """Apply a LeaderAndIsr naming this broker leader; False if the epoch is stale."""
        if leader_epoch < self.leader_epoch:
            return False
        new_epoch = leader_epoch > self.leader_epoch or not self.is_leader
        self.leader_id = self.local_broker_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.partition_epoch = partition_epoch
        self.controller_epoch = controller_epoch
        if new_epoch:
            # A new leader records (epoch, LEO): offsets from here on belong to this epoch.
            self.log.leader_epochs.assign(leader_epoch, self.log_end_offset)
            self.follower_end_offsets = {
                replica: self.follower_end_offsets.get(replica, 0)
                for replica in replicas if replica != self.local_broker_id
            }
        self.maybe_advance_high_watermark()
        return True

    def make_follower(self, leader_id: int, leader_epoch: int, isr: list[int],
                      replicas: list[int], partition_epoch: int, controller_epoch: int) -> bool:
        """Apply a LeaderAndIsr naming another broker (or none) leader; False if stale."""
        if leader_epoch < self.leader_epoch:
            return False
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.partition_epoch = partition_epoch
        self.controller_epoch = controller_epoch
        self._fail_hw_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return True

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Fence a client or follower that knows a different leader epoch (KIP-320)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH)
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    # -- produce ------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | None, required_acks: int, min_insync: int,
                         max_batch_bytes: int, api_version: int) -> AppendResult:
        """Validate the header of the one batch in ``records``, stamp it and append it."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not records:
            raise KafkaError(ErrorCode.INVALID_RECORD, "produce without a record batch")
        if len(records) > max_batch_bytes:
            raise KafkaError(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {len(records)} bytes over message.max.bytes {max_batch_bytes}",
            )
        header = _single_batch_header(records)
        try:
            if header.compression > Compression.ZSTD or (
                    header.compression == Compression.ZSTD and api_version < 7):
                raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            if header.is_transactional or header.is_control:
                raise KafkaError(ErrorCode.INVALID_RECORD, "transactions are not supported")
            if required_acks == -1 and len(self.isr) < min_insync:
                raise KafkaError(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"ISR {self.isr} is smaller than min.insync.replicas {min_insync}",
                )
            duplicate = self.producers.check(header)
        except KafkaError:
            _raise_if_corrupt(records)  # a damaged batch is reported as such first
            raise
        if duplicate is not None:
            _raise_if_corrupt(records)
            return AppendResult(duplicate.base_offset, duplicate.last_offset,
                                self.log_start_offset, duplicate=True)
        try:
            info = self.log.append(records, self.leader_epoch)  # checks the CRC; writes or not
        except CorruptBatchError as exc:
            raise KafkaError(exc.error_code, str(exc)) from None
        self.producers.record(header, info.base_offset)
        self.maybe_advance_high_watermark()
        self._notify_append()
        return AppendResult(info.base_offset, info.last_offset, self.log_start_offset)

    # -- high watermark -----------------------------------------------------------------

    def maybe_advance_high_watermark(self) -> bool:
        """HW = lowest log end offset over the ISR (leader included); it never goes back."""
        if not self.is_leader:
            return False
        if len(self.isr) == 1 and self.isr[0] == self.local_broker_id:
            new_hw = self.log_end_offset  # alone in the ISR: everything appended is committed
            if new_hw <= self.high_watermark:
                return False
            self.high_watermark = new_hw
            if self._hw_waiters:
                self._complete_hw_waiters()
            return True
        end_offsets = [self.log_end_offset]
        end_offsets += [self.follower_end_offsets.get(replica, 0)
                        for replica in self.isr if replica != self.local_broker_id]
        new_hw = min(end_offsets)
        if new_hw <= self.high_watermark:
            return False
        self.high_watermark = new_hw
        self._complete_hw_waiters()
        return True

    def restore_high_watermark(self, checkpointed: int) -> None:
        """Take a checkpointed HW back after a restart (bounded by what the log holds)."""
        self.high_watermark = max(self.log_start_offset, min(checkpointed, self.log_end_offset))

    def wait_for_high_watermark(self, offset: int) -> defer.Deferred:
        """A Deferred that fires (with ErrorCode.NONE) once HW >= ``offset``."""
        if self.high_watermark >= offset:
            return defer.succeed(ErrorCode.NONE)
        waiter: defer.Deferred = defer.Deferred()
        self._hw_waiters.append((offset, waiter))
        return waiter

    def _complete_hw_waiters(self) -> None:
        ready = [(o, d) for o, d in self._hw_waiters if o <= self.high_watermark]
        if not ready:
            return
        self._hw_waiters = [(o, d) for o, d in self._hw_waiters if o > self.high_watermark]
        for _, waiter in ready:
            if not waiter.called:
                waiter.callback(ErrorCode.NONE)

    def _fail_hw_waiters(self, code: ErrorCode) -> None:
        waiters, self._hw_waiters = self._hw_waiters, []
        for _, waiter in waiters:
            if not waiter.called:
                waiter.callback(code)

    # -- fetch --------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, replica_id: int = -1) -> bytes:
        """Whole batches from ``fetch_offset``: consumers up to the HW, followers to the LEO."""
        from simplekafka.storage import OffsetOutOfRangeError

        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not self.log_start_offset <= fetch_offset <= self.log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {fetch_offset} outside {self.log_start_offset}..{self.log_end_offset}",
            )
        if replica_id >= 0:
            self.follower_end_offsets[replica_id] = fetch_offset
            self.maybe_advance_high_watermark()
            upper = None
        else:
            upper = self.high_watermark
            if fetch_offset >= upper and fetch_offset <= self.log_end_offset:
                return b""
        try:
            data = self.log.read(fetch_offset, max_bytes, upper)
        except OffsetOutOfRangeError as exc:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from None
        return bytes(data) if data else b""

    def add_append_listener(self, listener: Callable[[Partition], None]) -> None:
        self._append_listeners.append(listener)

    def remove_append_listener(self, listener: Callable[[Partition], None]) -> None:
        try:
            self._append_listeners.remove(listener)
        except ValueError:
            pass

    def _notify_append(self) -> None:
        if not self._append_listeners:
            return
        for listener in list(self._append_listeners):
            listener(self)

    # -- life cycle ---------------------------------------------------------------------

    def _rebuild_producer_state(self) -> None:
        """Replay batch headers so idempotence survives a restart.

        Only the last two segments are read (Kafka keeps producer snapshots
        instead), which bounds the start-up work; a producer last seen before
        them is simply unknown, and an unknown producer may continue at any
        sequence.
        """
        segments = getattr(self.log, "segments", ())
        start = segments[-2].base_offset if len(segments) >= 2 else self.log.log_start_offset
        offset = max(start, self.log.log_start_offset)
        end = self.log.log_end_offset
        try:
            while offset < end:
                chunk = self.log.read(offset, 1 << 20)
                spans = iter_batch_positions(chunk)
                if not spans:
                    break
                for pos, _size in spans:
                    header = read_header(chunk, pos)
                    if header.producer_id >= 0:
                        self.producers.record(header, header.base_offset)
                    offset = max(offset, header.next_offset)
        except Exception as exc:
            log.warning("%s: producer state not rebuilt (%s)", self, exc)

    def close_waiters(self) -> None:
        self._append_listeners.clear()
        self._fail_hw_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)


def _single_batch_header(records: bytes) -> BatchHeader:
    """The header of the one batch a produce carries (Kafka: exactly one per partition).

    Only the header is read here; the CRC is checked once, by the log's append.
    Anything that is not exactly one plausible batch goes through the full
    validation, which names what is wrong.
    """
    header = read_header(records, 0) if len(records) >= HEADER_SIZE else None
    if header is not None and header.magic == MAGIC_V2 and header.size == len(records):
        return header
    try:
        headers = validate_batches(records)
    except CorruptBatchError as exc:
        raise KafkaError(exc.error_code, str(exc)) from None
    raise KafkaError(ErrorCode.INVALID_RECORD,
                     f"a produce must carry exactly one batch, got {len(headers)}")


def _raise_if_corrupt(records: bytes) -> None:
    """Check the CRC now (the append would have): integrity errors come before the rest."""
    try:
        validate_batch(records)
    except CorruptBatchError as exc:
        raise KafkaError(exc.error_code, str(exc)) from None

