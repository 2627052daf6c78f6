"""One partition as this broker sees it: its log, its role, its high watermark.

The controller tells the broker, through LeaderAndIsr, who leads each partition,
at which leader epoch, and who is in sync. A Partition holds that state next to
the partition's Log and does the leader's work on it: stamp and append produced
batches (never decoding their records), keep the high watermark (the lowest log
end offset in the ISR: what consumers may read), and wake whoever waits for new
data (a long-polling fetch) or for the high watermark (an acks=all produce).

As leader it also records what each follower's fetches say (its log end offset,
when it was last caught up) and proposes ISR changes, which the ReplicaManager
writes to ZooKeeper before ``apply_isr`` uses them. As follower it appends the
leader's batches exactly at its log end and truncates by leader epoch
(the replica fetcher drives both).

Transactions: each replica keeps, in its producer state, the first offset of
every open transaction, and so the last stable offset (LSO), below which
read_committed consumers read. Control batches (commit and abort markers) come
only from the broker's own appends (``internal``, as Kafka's
AppendOrigin.Coordinator), on the leader, or from the leader's log, on a
follower; both paths, and the replay at start-up, end the transaction in the
producer state and put aborted ones into the segment's ``.txnindex``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple

from twisted.internet import defer

from simplekafka.broker.action_queue import ActionQueue
from simplekafka.broker.delayed_produce import DelayedProduceQueue, Done
from simplekafka.broker.isr import high_watermark, may_join_isr, now_ms, out_of_sync_replicas
from simplekafka.broker.producer_state import ProducerStateTable
from simplekafka.protocol.batch_header import (
    HEADER_SIZE,
    MAGIC_V2,
    BatchHeader,
    iter_batch_positions,
    read_header,
    validate_batch,
    validate_batches,
    validated_spans,
    whole_batches_length,
)
from simplekafka.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression
from simplekafka.protocol.errors import CorruptBatchError, ErrorCode, KafkaError, error_for
from simplekafka.protocol.records import ControlMarker, parse_batch, parse_control_marker
from simplekafka.storage import AbortedTxn, FileRegion, Log, OffsetOutOfRangeError
from simplekafka.storage.log import wall_clock_ms
from simplekafka.storage.producer_snapshot import (
    delete_snapshots_above,
    latest_snapshot,
    write_snapshot,
)
from simplekafka.storage.validator import needs_record_checks, validate_records

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.fetch_messages import FetchPartition

log = logging.getLogger(__name__)

NO_LEADER = -1
# How far back (in offsets) producer state is rebuilt from the log at start-up.
PRODUCER_STATE_REPLAY_OFFSETS = 100_000


class AppendResult(NamedTuple):
    """What a produce gets back: where the batch landed (or landed before, if a retry)."""

    base_offset: int
    last_offset: int
    log_start_offset: int
    duplicate: bool = False
    log_append_time: int = -1  # what ProduceResponse answers; -1 unless LogAppendTime


class Partition:
    """Leader or follower state of one partition, around its storage Log."""

    def __init__(self, topic: str, index: int, local_broker_id: int, log_: Log,
                 clock: Reactor | None = None,
                 completing: AbstractContextManager[object] | None = None):
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
        # Produced batches are decoded only to check records (validator.py), up to this.
        self.max_decompressed_bytes = DEFAULT_MAX_DECOMPRESSED_BYTES
        # Zero-copy fetches (fetch.zero.copy.enable): reads of at least this many bytes from
        # one segment answer with a FileRegion the connection sends by sendfile; None: bytes.
        self.zero_copy_from: int | None = None
        # The ReplicaManager's (it hands it over): parked fetches woken at the end of a bulk
        # append (action_queue.py).
        self.actions = ActionQueue()
        # What the leader knows of each follower: the LEO its last fetch asked from, when it
        # was last caught up (ms), and (time, leader LEO) at its previous fetch.
        self.follower_end_offsets: dict[int, int] = {}
        self.follower_log_starts: dict[int, int] = {}  # as each follower's fetch says
        # The high watermark each follower's last fetch answer carried: a parked follower
        # fetch is answered as soon as the HW passes it, so followers learn it promptly.
        self.follower_known_hw: dict[int, int] = {}
        self._low_watermark_waiters: list[tuple[int, defer.Deferred]] = []
        self.follower_caught_up_ms: dict[int, float] = {}
        self._follower_last_fetch: dict[int, tuple[float, int]] = {}
        self.isr_change_pending = False  # an ISR write to ZooKeeper is in flight
        # Proposes an ISR change (partition, new ISR, why): the ReplicaManager's ZooKeeper
        # write (Kafka's AlterPartitionManager). None: fetches propose none (unit tests).
        self.alter_isr: Callable[[Partition, list[int], str], None] | None = None
        self._append_listeners: list[Callable[[Partition], None]] = []
        # acks=all produces waiting for the HW, in offset order (``clock`` times them out);
        # each round of completions inside ``completing`` (the ReplicaManager's block).
        self._hw_waiters = DelayedProduceQueue(clock, completing)
        self._snapshot_offset = -1  # where the last producer snapshot was taken
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
        if self._is_stale(leader_epoch, partition_epoch):
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
            # Followers start from "unknown" (LEO 0 until they fetch); ISR members count
            # as caught up now, so they get replica.lag.time.max.ms to show up (as Kafka).
            now = now_ms()
            self.follower_end_offsets = {
                replica: 0 for replica in replicas if replica != self.local_broker_id}
            self.follower_log_starts = {}
            self.follower_known_hw = {}
            self.follower_caught_up_ms = {
                replica: (now if replica in isr else 0.0)
                for replica in replicas if replica != self.local_broker_id}
            self._follower_last_fetch = {}
            self.isr_change_pending = False
        self.maybe_advance_high_watermark()
        self._check_hw_waiters()
        return True

    def make_follower(self, leader_id: int, leader_epoch: int, isr: list[int],
                      replicas: list[int], partition_epoch: int, controller_epoch: int) -> bool:
        """Apply a LeaderAndIsr naming another broker (or none) leader; False if stale."""
        if self._is_stale(leader_epoch, partition_epoch):
            return False
        was_leader = self.is_leader
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.partition_epoch = partition_epoch
        self.controller_epoch = controller_epoch
        self.isr_change_pending = False
        if was_leader:
            self._fail_hw_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            self._fire_low_watermark_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return True

    def _is_stale(self, leader_epoch: int, partition_epoch: int) -> bool:
        """An older leader epoch, or the same one with an older state znode version (an ISR
        this leader has since changed itself) is not applied."""
        return leader_epoch < self.leader_epoch or (
            leader_epoch == self.leader_epoch and partition_epoch < self.partition_epoch)

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Fence a client or follower that knows a different leader epoch (KIP-320)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise error_for(ErrorCode.FENCED_LEADER_EPOCH)
        raise error_for(ErrorCode.UNKNOWN_LEADER_EPOCH)

    # -- produce ------------------------------------------------------------------------

    def append_as_leader(self, records: bytes | None, required_acks: int, min_insync: int,
                         max_batch_bytes: int, api_version: int | None = None,
                         internal: bool = False) -> AppendResult:
        """Validate the header of the one batch in ``records``, stamp it and append it.

        ``api_version`` is the client's Produce version (zstd needs v7); None for
        the broker's own appends. Only ``internal`` appends (the broker's own,
        Kafka's AppendOrigin.Coordinator) may be control batches. Errors carry
        their wire code (``.error_code``).
        """
        if self.leader_id != self.local_broker_id:  # not self.is_leader: a call less
            raise error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if not records:
            raise error_for(ErrorCode.INVALID_RECORD, "produce without a record batch")
        if len(records) > max_batch_bytes:
            raise error_for(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {len(records)} bytes over max.message.bytes {max_batch_bytes}",
            )
        header = _single_batch_header(records)
        try:
            compression = header.compression
            if compression > Compression.ZSTD or (
                    compression == Compression.ZSTD
                    and api_version is not None and api_version < 7):
                raise error_for(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            marker = None
            if header.is_control:
                if not internal:
                    raise error_for(ErrorCode.INVALID_RECORD,
                                    "clients may not write control batches")
                marker = _end_txn_marker(records)
                self.producers.check_marker(header.producer_id, header.producer_epoch,
                                            marker.coordinator_epoch)
            if required_acks == -1 and len(self.isr) < min_insync:
                raise error_for(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"ISR {self.isr} is smaller than min.insync.replicas {min_insync}",
                )
            # The broker's own transactional batches (TxnOffsetCommit) carry no sequence of
            # the producer's: as Kafka's AppendOrigin.Coordinator, they skip the check.
            duplicate = None if marker is not None or internal else self.producers.check(header)
        except KafkaError:
            _raise_if_corrupt(records)  # a damaged batch is reported as such first
            raise
        if duplicate is not None:
            _raise_if_corrupt(records)
            return AppendResult(duplicate.base_offset, duplicate.last_offset,
                                self.log_start_offset, duplicate=True)
        try:
            if marker is None and needs_record_checks(self.log.config):
                validate_records(records, self.log.config, wall_clock_ms(),
                                 f"{self.topic}-{self.index}", self.max_decompressed_bytes)
            info = self.log.append(records, self.leader_epoch)  # checks the CRC; writes or not
        except CorruptBatchError as exc:
            raise error_for(exc.error_code, str(exc)) from None
        if marker is not None:
            self._end_transaction(header, info.base_offset, marker)
        else:
            self.producers.record(header, info.base_offset)
        self.maybe_advance_high_watermark()
        self._notify_append()
        return AppendResult(info.base_offset, info.last_offset, self.log.log_start_offset,
                            log_append_time=info.log_append_time)

    # -- DeleteRecords ------------------------------------------------------------------

    def delete_records_on_leader(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1: the high watermark); the new start.

        As Kafka's ``deleteRecordsOnLeader``: only committed records can be
        deleted (an offset above the high watermark, or negative, is
        OFFSET_OUT_OF_RANGE); whole segments below the new start go at once,
        and followers move theirs when a fetch answer tells them.
        """
        if not self.is_leader:
            raise error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        target = self.high_watermark if offset == -1 else offset
        if target < 0 or target > self.high_watermark:
            raise error_for(ErrorCode.OFFSET_OUT_OF_RANGE,
                            f"offset {offset} is outside 0..high watermark {self.high_watermark}")
        start = self.log.delete_records_before(target)
        self._notify_append()  # a follower's settled session partition has news: the start
        return start

    def low_watermark(self) -> int:
        """The lowest log start offset among the leader and its ISR (-1: a follower not heard)."""
        starts = [self.log_start_offset]
        starts += [self.follower_log_starts.get(replica, -1)
                   for replica in self.isr if replica != self.local_broker_id]
        return min(starts)

    def wait_for_low_watermark(self, offset: int) -> defer.Deferred:
        """Fires with (ErrorCode.NONE, low watermark) once every ISR member's log starts at
        ``offset`` or later (Kafka's DelayedDeleteRecords); the caller times it out."""
        waiter: defer.Deferred = defer.Deferred()
        self._low_watermark_waiters = [w for w in self._low_watermark_waiters
                                       if not w[1].called]
        self._low_watermark_waiters.append((offset, waiter))
        self._fire_low_watermark_waiters()
        return waiter

    def _fire_low_watermark_waiters(self, code: ErrorCode = ErrorCode.NONE) -> None:
        if not self._low_watermark_waiters:
            return
        low = self.low_watermark()
        waiting = []
        for offset, waiter in self._low_watermark_waiters:
            if waiter.called:
                continue
            if code != ErrorCode.NONE or low >= offset:
                waiter.callback((code, low))
            else:
                waiting.append((offset, waiter))
        self._low_watermark_waiters = waiting

    def maybe_increment_log_start_offset(self, leader_log_start: int) -> None:
        """A follower follows its leader's log start (DeleteRecords), up to its own HW."""
        target = min(leader_log_start, self.high_watermark)
        if target > self.log.log_start_offset:
            self.log.delete_records_before(target)

    # -- high watermark -----------------------------------------------------------------

    def maybe_advance_high_watermark(self) -> bool:
        """HW = lowest log end offset over the ISR (leader included); it never goes back."""
        # The leader check and log end read here, not through the properties: this runs on
        # every append and every follower fetch, and a property is a call more each time.
        if self.leader_id != self.local_broker_id:
            return False
        if len(self.isr) == 1 and self.isr[0] == self.local_broker_id:
            new_hw = self.log.log_end_offset  # alone in the ISR: all appended is committed
            if new_hw <= self.high_watermark:
                return False
            self.high_watermark = new_hw
            if self._hw_waiters:
                self._complete_hw_waiters()
            return True
        new_hw = high_watermark(self.isr, self.local_broker_id, self.log.log_end_offset,
                                self.follower_end_offsets)
        if new_hw <= self.high_watermark:
            return False
        self.high_watermark = new_hw
        # Consumers read below the HW: a new HW is new data for their parked fetches, which
        # are answered first, then the acks=all produces (Kafka's checkAndCompleteAll order):
        # building and sending a read's worth of produce answers took 0.4 ms (p50) that
        # every consumer answer waited behind (benchmarks/replication_stages.py).
        self._notify_append()
        if self._hw_waiters:
            self._complete_hw_waiters()
        return True

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the HW, or the first offset of the oldest
        transaction not yet ended (with its marker below the HW); never below the log start
        (DeleteRecords or retention may pass an open transaction's start, as in Kafka)."""
        if not self.producers.may_hold_back_lso:  # every fetch answer carries the LSO
            return self.high_watermark
        return max(self.producers.last_stable_offset(self.high_watermark),
                   min(self.log_start_offset, self.high_watermark))

    def _end_transaction(self, header: BatchHeader, offset: int, marker: ControlMarker) -> None:
        """A marker now sits at ``offset``: end the transaction; index it if aborted."""
        completed = self.producers.complete_txn(header.producer_id, header.producer_epoch,
                                                marker.coordinator_epoch, offset, marker.commit,
                                                self.high_watermark)
        if completed.aborted:
            self.log.append_aborted_txn(AbortedTxn(
                completed.producer_id, completed.first_offset, completed.last_offset,
                self.producers.last_stable_offset_after(completed)))

    def _learn_batch(self, data: bytes, pos: int, header: BatchHeader) -> None:
        """Producer state from a batch already in the log (a follower's copy, or a replay)."""
        if header.producer_id < 0:
            return
        if not header.is_control:
            self.producers.record(header, header.base_offset)
            return
        try:
            marker = _end_txn_marker(data[pos:pos + header.size])
        except KafkaError as exc:
            log.warning("%s: control batch at %d not understood (%s)", self,
                        header.base_offset, exc)
            return
        if marker is not None:
            self._end_transaction(header, header.base_offset, marker)

    def restore_high_watermark(self, checkpointed: int) -> None:
        """Take a checkpointed HW back after a restart (bounded by what the log holds)."""
        self.high_watermark = max(self.log_start_offset, min(checkpointed, self.log_end_offset))

    def wait_for_high_watermark(self, offset: int, min_insync: int = 1,
                                timeout: float | None = None) -> defer.Deferred:
        """A Deferred firing with an ErrorCode once HW >= ``offset`` (acks=all).

        Like Kafka's delayed produce: when the HW passes the batch the answer is
        NONE if the ISR still has ``min_insync`` members, and
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if it shrank below that meanwhile (the
        batch was written, but fewer replicas than asked for hold it);
        REQUEST_TIMED_OUT after ``timeout`` seconds (None: never).
        """
        waited: defer.Deferred = defer.Deferred()
        self.on_high_watermark(offset, min_insync, timeout, _fire_unless_called, waited)
        return waited

    def on_high_watermark(self, offset: int, min_insync: int, timeout: float | None,
                          done: Done, context: object = None) -> None:
        """``wait_for_high_watermark`` as a plain call, ``done(code, context)``, at once if
        the HW is there: the acks=all produce path joins its partitions' waits without a
        Deferred each (``ReplicaManager.append_records``)."""
        if self.high_watermark >= offset:
            done(self._acks_code(min_insync), context)
        else:
            self._hw_waiters.add(offset, min_insync, timeout, done, context)

    def _acks_code(self, min_insync: int) -> ErrorCode:
        if len(self.isr) < min_insync:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def _complete_hw_waiters(self) -> None:
        self._hw_waiters.complete(self.high_watermark, self._acks_code)

    def _check_hw_waiters(self) -> None:
        if self._hw_waiters:
            self._complete_hw_waiters()

    def _fail_hw_waiters(self, code: ErrorCode) -> None:
        self._hw_waiters.fail_all(code)

    # -- fetch --------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, replica_id: int = -1,
             follower_log_start: int = -1, leader_only: bool = True,
             read_committed: bool = False) -> bytes | FileRegion:
        """Whole batches from ``fetch_offset``: consumers up to the HW (read_committed ones
        up to the LSO), followers to the LEO. A big read from one segment comes as a
        FileRegion when zero-copy is on (``zero_copy_from``): the answer's writer sends it.

        ``leader_only=False``: a consumer that may read from any replica (KIP-392) is
        served by a follower too, up to the HW the follower learnt from its leader.
        """

        # Not self.is_leader: a property is a call more on every fetch.
        if self.leader_id != self.local_broker_id and (
                leader_only or replica_id >= 0 or self.leader_id < 0):
            raise error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        log_start, log_end = self.log.log_start_offset, self.log.log_end_offset
        if not log_start <= fetch_offset <= log_end:
            raise error_for(ErrorCode.OFFSET_OUT_OF_RANGE,
                            f"offset {fetch_offset} outside {log_start}..{log_end}")
        if replica_id >= 0:
            self.record_follower_fetch(replica_id, fetch_offset, None, follower_log_start)
            upper = None
        else:
            upper = self.last_stable_offset if read_committed else self.high_watermark
            if fetch_offset >= upper:  # nothing a consumer may see yet
                return b""
        try:
            data = self.log.read(fetch_offset, max_bytes, upper, self.zero_copy_from)
        except OffsetOutOfRangeError as exc:
            raise error_for(ErrorCode.OFFSET_OUT_OF_RANGE, str(exc)) from None
        if isinstance(data, FileRegion):
            return data
        return bytes(data) if data else b""

    def fetch_records(self, fetch_offset: int, max_bytes: int, replica_id: int = -1,
                      follower_log_start: int = -1, leader_only: bool = True,
                      read_committed: bool = False, held_back: bool = False
                      ) -> bytes | FileRegion:
        """``read`` for a fetch (Kafka's ``fetchRecords``): a follower's fetch also records
        where its log ends, which may move the high watermark, and proposes it for the ISR
        once it may join. ``held_back``: a throttled follower, only its position recorded."""
        if held_back:
            self.record_follower_fetch(replica_id, fetch_offset, log_start=follower_log_start)
            return b""
        records = self.read(fetch_offset, max_bytes, replica_id, follower_log_start,
                            leader_only, read_committed)
        # (An ISR member cannot join it: the usual follower fetch proposes nothing.)
        if replica_id >= 0 and self.alter_isr is not None and replica_id not in self.isr:
            new_isr = self.isr_to_expand(replica_id)
            if new_isr is not None:
                self.alter_isr(self, new_isr, "expand")
        return records

    def record_quiet_follower_fetch(self, replica_id: int, wanted: FetchPartition,
                                    now: float) -> bool:
        """Whether a caught-up, in-sync follower asks again, in its fetch session, about
        this partition with nothing moved since its last answer; if so only its fetch is
        recorded (it stays caught up in our eyes) and no answer is built. At 10,000
        partitions this is most of an idle follower fetch, twice per
        ``replica.fetch.wait.max.ms``."""
        if (self.leader_id != self.local_broker_id  # not the leader (no property call)
                or wanted.fetch_offset != self.log.log_end_offset
                # We already have this offset for it: recording it moves no HW.
                or self.follower_end_offsets.get(replica_id) != wanted.fetch_offset
                or wanted.high_watermark != self.high_watermark
                or wanted.response_log_start_offset != self.log_start_offset
                or wanted.last_stable_offset != self.last_stable_offset
                or replica_id not in self.isr
                or wanted.current_leader_epoch not in (-1, self.leader_epoch)):
            return False
        if not self.record_caught_up_fetch(replica_id, wanted.fetch_offset,
                                           wanted.log_start_offset, now):
            self.record_follower_fetch(replica_id, wanted.fetch_offset, now,
                                       log_start=wanted.log_start_offset)
        return True

    def aborted_transactions(self, fetch_offset: int, records: bytes | FileRegion
                             ) -> list[AbortedTxn]:
        """The aborted transactions a read_committed consumer needs for ``records`` read
        from ``fetch_offset`` (those overlapping the offsets they span)."""
        if isinstance(records, FileRegion):  # unread: the read noted where its records end
            return self.log.collect_aborted_txns(fetch_offset, records.next_offset)
        spans = iter_batch_positions(records) if records else []
        if not spans:
            return []
        upper = read_header(records, spans[-1][0]).next_offset
        return self.log.collect_aborted_txns(fetch_offset, upper)

    def record_caught_up_fetch(self, replica_id: int, fetch_offset: int, log_start: int,
                               now: float) -> bool:
        """``record_follower_fetch`` for a follower asking again from our log end, as its
        last fetch did: it is caught up now, nothing else moves. False (nothing done)
        unless that is so; the caller then records the fetch in full."""
        if (self.follower_end_offsets.get(replica_id) != fetch_offset
                or fetch_offset != self.log.log_end_offset
                or (log_start >= 0 and self.follower_log_starts.get(replica_id) != log_start)):
            return False
        self.follower_caught_up_ms[replica_id] = now
        self._follower_last_fetch[replica_id] = (now, fetch_offset)
        return True

    def record_follower_fetch(self, replica_id: int, fetch_offset: int,
                              now: float | None = None, log_start: int = -1) -> None:
        """A follower fetched from ``fetch_offset``: that is its LEO; maybe it caught up.

        As Kafka: caught up now if it asked for our LEO; caught up as of its
        previous fetch if it asked for at least what our LEO was then.
        """
        if replica_id not in self.replicas or replica_id == self.local_broker_id:
            return  # not a replica of this partition: nothing to record
        now = now_ms() if now is None else now
        leader_end = self.log.log_end_offset
        ends = self.follower_end_offsets
        moved = ends.get(replica_id) != fetch_offset
        ends[replica_id] = fetch_offset
        previous = self._follower_last_fetch.get(replica_id)
        if fetch_offset >= leader_end:
            self.follower_caught_up_ms[replica_id] = now
        elif previous is not None and fetch_offset >= previous[1]:
            self.follower_caught_up_ms[replica_id] = max(
                self.follower_caught_up_ms.get(replica_id, 0.0), previous[0])
        self._follower_last_fetch[replica_id] = (now, leader_end)
        # Every other input of the HW (the ISR, our log end) moves it where it changes: the
        # same offset again (a parked fetch's read when it is answered, twice per follower
        # fetch) cannot move it.
        if moved:
            self.maybe_advance_high_watermark()
        if log_start >= 0:
            self.follower_log_starts[replica_id] = log_start
            self._fire_low_watermark_waiters()

    def follower_caught_up_until(self, replica_id: int, at_ms: float) -> None:
        """A follower whose fetches of this partition were not recorded one by one (a
        settled partition of its fetch session, see fetch_session.py) was caught up at
        ``at_ms``, its last fetch: what an ISR check after an idle spell must know."""
        if self.follower_caught_up_ms.get(replica_id, at_ms) < at_ms:
            self.follower_caught_up_ms[replica_id] = at_ms

    def high_watermark_for(self, replica_id: int) -> int:
        """The HW a fetch answer carries; a follower's is remembered (see follower_behind_hw)."""
        if replica_id >= 0:
            self.follower_known_hw[replica_id] = self.high_watermark
        return self.high_watermark

    def follower_behind_hw(self, replica_id: int) -> bool:
        """Whether ``replica_id`` was last told a HW below the current one."""
        return self.follower_known_hw.get(replica_id, -1) < self.high_watermark

    # -- ISR ----------------------------------------------------------------------------

    def current_epoch_start_offset(self) -> int:
        """Where this leader's epoch began in its log (its LEO when it became leader)."""
        entry = self.log.leader_epochs.latest_entry
        if entry is not None and entry.epoch == self.leader_epoch:
            return entry.start_offset
        return self.log_end_offset

    def isr_to_expand(self, replica_id: int) -> list[int] | None:
        """The ISR with ``replica_id`` added, if it may join now (replication rule 5), else None."""
        if (not self.is_leader or self.isr_change_pending or replica_id in self.isr
                or replica_id not in self.replicas):
            return None
        end = self.follower_end_offsets.get(replica_id, 0)
        if may_join_isr(end, self.high_watermark, self.current_epoch_start_offset()):
            return [r for r in self.replicas if r in self.isr or r == replica_id]
        return None

    def isr_to_shrink(self, lag_max_ms: float, now: float | None = None) -> list[int] | None:
        """The ISR without followers that lag (replica.lag.time.max.ms), or None."""
        if not self.is_leader or self.isr_change_pending:
            return None
        now = now_ms() if now is None else now
        lagging = out_of_sync_replicas(
            self.isr, self.local_broker_id, self.log_end_offset, self.follower_end_offsets,
            self.follower_caught_up_ms, now, lag_max_ms)
        if not lagging:
            return None
        return [r for r in self.isr if r not in lagging]

    def apply_isr(self, isr: list[int], partition_epoch: int) -> None:
        """Use an ISR that ZooKeeper now holds (at ``partition_epoch``); replication rule 2."""
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self.isr_change_pending = False
        self.maybe_advance_high_watermark()
        self._check_hw_waiters()
        self._fire_low_watermark_waiters()  # a follower out of the ISR is waited for no more

    # -- follower -----------------------------------------------------------------------

    def append_as_follower(self, records: bytes, leader_high_watermark: int,
                           leader_log_start: int = -1) -> int:
        """Append batches copied from the leader exactly at our LEO; HW = min(leader HW, LEO).

        Returns how many bytes were appended. Producer state learns each batch,
        so idempotence holds if this replica becomes leader. The leader's log
        start offset (moved by DeleteRecords) moves ours too, as in Kafka.
        """
        appended = whole_batches_length(records) if records else 0
        if appended:  # whole batches only: a fetch may end in the middle of one
            data = records[:appended] if appended != len(records) else records
            headers = validated_spans(data)  # read once: for the log and for producer state
            self.log.append_as_follower(data, headers)
            for pos, header in headers:
                self._learn_batch(data, pos, header)
        new_hw = min(leader_high_watermark, self.log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            self._notify_append()  # consumers reading from this follower may go on (KIP-392)
        if leader_log_start > self.log.log_start_offset:
            self.maybe_increment_log_start_offset(leader_log_start)
        return appended

    def truncate_to(self, offset: int) -> None:
        """Drop the log from ``offset`` (a follower's diverged tail); HW not above the LEO."""
        if offset < self.log_end_offset:
            log.info("%s: truncating from %d to %d", self, self.log_end_offset, offset)
            self.log.truncate_to(offset)
            self.producers = ProducerStateTable()
            self._snapshot_offset = -1
            self._rebuild_producer_state()
        # Epochs that start at the log end hold no record (a leader's epoch with no writes):
        # forget them, or the next OffsetForLeaderEpoch would ask about them again.
        self.log.leader_epochs.truncate_from_end(self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    def start_over_at(self, offset: int) -> None:
        """A follower behind its leader's log start: empty the log, start it at ``offset``.

        The producer state goes with the log (Kafka's ``truncateFullyAndStartAt``):
        what it knew belonged to offsets this replica no longer has.
        """
        self.log.truncate_fully_and_start_at(offset)
        self.producers = ProducerStateTable()
        self._snapshot_offset = -1
        delete_snapshots_above(self.log.directory, -1)
        self.high_watermark = offset

    def add_append_listener(self, listener: Callable[[Partition], None]) -> None:
        self._append_listeners.append(listener)

    def remove_append_listener(self, listener: Callable[[Partition], None]) -> None:
        try:
            self._append_listeners.remove(listener)
        except ValueError:
            pass

    def _notify_append(self) -> None:
        if not self._append_listeners or self.actions.defer_wakeup(self):
            return  # nobody listens, or a bulk append wakes them at its end (action_queue)
        for listener in list(self._append_listeners):
            listener(self)

    def wake_listeners(self) -> None:
        """Run the append listeners now (the end of a bulk append, see action_queue)."""
        for listener in list(self._append_listeners):
            listener(self)

    # -- life cycle ---------------------------------------------------------------------

    def _rebuild_producer_state(self) -> None:
        """Replay batch headers so idempotence and open transactions survive a restart.

        Replay starts at the newest producer snapshot at or below the log end
        (``<offset>.snapshot``, see ``storage.producer_snapshot``), else at
        the last PRODUCER_STATE_REPLAY_OFFSETS offsets, which bounds the
        start-up work: a producer last seen before them is simply unknown
        (it may continue at any sequence). Snapshots are taken while
        transactions are open and at shutdown, so a transaction opened long
        before the end is still known. The replay also ends the transactions
        whose markers it meets and writes each aborted one into ``.txnindex``
        if it is not there (recovery may have cut the file, or the crash came
        between the marker and its entry), so the LSO and the aborted index
        come back from the log itself.
        """
        end = self.log.log_end_offset
        offset = max(self.log.log_start_offset, end - PRODUCER_STATE_REPLAY_OFFSETS)
        try:
            # One listing of the directory for both (at thousands of replicas a restart
            # spent seconds listing each partition's directory again).
            kept = delete_snapshots_above(self.log.directory, end,
                                          self.log.take_snapshot_listing())
            found = latest_snapshot(self.log.directory, end, self.log.log_start_offset, kept)
            if found is not None:
                offset, entries = found
                self.producers = ProducerStateTable.from_snapshot(entries)
                self._snapshot_offset = offset
            while offset < end:
                chunk = self.log.read(offset, 1 << 20)
                spans = iter_batch_positions(chunk)
                if not spans:
                    break
                for pos, _size in spans:
                    header = read_header(chunk, pos)
                    self._learn_batch(chunk, pos, header)
                    offset = max(offset, header.next_offset)
        except Exception as exc:
            log.warning("%s: producer state not rebuilt (%s)", self, exc)

    def maybe_snapshot_producers(self, force: bool = False) -> bool:
        """Write ``<LEO>.snapshot`` while a transaction is open (``force``: whenever there is
        producer state), unless one is already at the log end; True if written."""
        end = self.log_end_offset
        if end == self._snapshot_offset or not (self.producers.ongoing or (force and len(
                self.producers))):
            return False
        try:
            write_snapshot(self.log.directory, end, self.producers.snapshot())
        except OSError as exc:
            log.warning("%s: producer snapshot not written (%s)", self, exc)
            return False
        self._snapshot_offset = end
        return True

    def close_waiters(self) -> None:
        self._append_listeners.clear()
        self._fail_hw_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._fire_low_watermark_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)


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
        raise error_for(exc.error_code, str(exc)) from None
    raise error_for(ErrorCode.INVALID_RECORD,
                     f"a produce must carry exactly one batch, got {len(headers)}")


def _end_txn_marker(batch: bytes) -> ControlMarker:
    """The end-transaction marker in a control batch (INVALID_RECORD if it holds none)."""
    try:
        records = parse_batch(batch).records
        marker = parse_control_marker(records[0]) if len(records) == 1 else None
    except CorruptBatchError as exc:
        raise error_for(exc.error_code, str(exc)) from None
    if marker is None:
        raise error_for(ErrorCode.INVALID_RECORD,
                        "a control batch must hold one commit or abort marker")
    return marker


def _fire_unless_called(code: ErrorCode, waited: defer.Deferred) -> None:
    """``wait_for_high_watermark``'s Deferred fired (unless its holder cancelled it)."""
    if not waited.called:
        waited.callback(code)


def _raise_if_corrupt(records: bytes) -> None:
    """Check the CRC now (the append would have): integrity errors come before the rest."""
    try:
        validate_batch(records)
    except CorruptBatchError as exc:
        raise error_for(exc.error_code, str(exc)) from None

