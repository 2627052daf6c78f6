"""The transaction coordinator: transactional ids, their epochs and their two-phase commit.

Which broker coordinates a transactional id is decided by
``__transaction_state``: the leader of partition ``partition_for(id, N)``.
The protocol (KIP-98), as ZooKeeper-mode Kafka's ``TransactionCoordinator``:

1. InitProducerId: the first call gives the id a producer id; every call bumps
   its epoch, which fences any older producer with the same id (a zombie). An
   id with a transaction still open is first aborted (the answer is
   CONCURRENT_TRANSACTIONS, and the client retries).
2. AddPartitionsToTxn / AddOffsetsToTxn before the first write to a partition
   (or to the group's ``__consumer_offsets`` partition): the id is Ongoing.
3. EndTxn: PrepareCommit (or PrepareAbort) is written to the log, which is the
   decision, and answered; the marker channel then writes a COMMIT (ABORT)
   control batch to every partition of the transaction, and once all are
   written, CompleteCommit (CompleteAbort) is logged.

A transaction Ongoing for longer than its ``transaction.timeout.ms`` is
aborted by the coordinator, with a bumped epoch so that its producer is fenced.
Every change is persisted (acks=all) before it is answered; while one is in
flight, other requests for the id get CONCURRENT_TRANSACTIONS. The
coordinator returns result values, ``apis/transactions.py`` builds answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.collaborators import Config, Reactor, ZooKeeperHandle
from simplekafka.broker.coordinator.runtime import (
    CoordinatorPartitions,
    InternalTopicReplicas,
    now_ms,
)
from simplekafka.broker.group.records import OFFSETS_TOPIC
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.transaction.metadata_manager import TransactionStateManager
from simplekafka.broker.transaction.records import TRANSACTION_STATE_TOPIC
from simplekafka.broker.transaction.state import (
    COMPLETED,
    MAX_EPOCH,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransition,
)
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.structs import Node

if TYPE_CHECKING:
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

S = TransactionState


class TransactionListing(NamedTuple):
    """ListTransactions' answer: an error, the state names not known, (id, pid, state)."""

    error_code: ErrorCode
    unknown_states: list[str]
    transactions: list[tuple[str, int, str]]


class InitProducerIdResult(NamedTuple):
    error_code: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class MarkerSender(Protocol):
    """Writes transaction markers to partition leaders (``TransactionMarkerChannel``)."""

    def send(self, producer_id: int, producer_epoch: int, committed: bool,
             partitions: Iterable[TopicPartition], coordinator_epoch: int,
             still_wanted: Callable[[], bool]) -> defer.Deferred: ...


# Each answers now, or with a Deferred of its answer once the change is replicated.
InitAnswer: TypeAlias = "InitProducerIdResult | defer.Deferred"
PartitionsAnswer: TypeAlias = "dict[TopicPartition, ErrorCode] | defer.Deferred"
CodeAnswer: TypeAlias = "ErrorCode | defer.Deferred"
ProducerIdSource = Callable[[], "int | defer.Deferred"]  # or raises KafkaError


class TransactionCoordinator:
    """Every transactional id whose ``__transaction_state`` partition this broker leads."""

    def __init__(self, config: Config, cache: MetadataCache, replicas: InternalTopicReplicas,
                 reactor: Reactor, zookeeper: ZooKeeperHandle,
                 producer_ids: ProducerIdSource, markers: MarkerSender,
                 offsets_partition_of: Callable[[str], int],
                 clock: Callable[[], int] = now_ms,
                 ensure_offsets_topic: Callable[[], None] = lambda: None):
        self.config = config
        self.cache = cache
        self.replicas = replicas
        self.reactor = reactor
        self.producer_ids = producer_ids
        self.markers = markers
        self.offsets_partition_of = offsets_partition_of
        self.ensure_offsets_topic = ensure_offsets_topic
        self.clock = clock
        self.state_log = TransactionStateManager(replicas, cache, config, reactor, zookeeper)
        self.transactions: dict[str, TransactionMetadata] = {}
        self.ownership = CoordinatorPartitions(
            TRANSACTION_STATE_TOPIC, reactor,
            local_leader=lambda index: self.state_log.local_leader(index),
            led_partitions=lambda: self.state_log.topic_log.led_partitions(),
            load=self._load_partition, unload=self._unload_partition)
        cache.listeners.append(self.sync_ownership)

    # -- ownership (``coordinator.runtime``): which ids this broker coordinates -------------

    def partition_of(self, transactional_id: str) -> int:
        return self.state_log.partition_of(transactional_id)

    def check_owner(self, transactional_id: str) -> ErrorCode | None:
        """None if this broker coordinates the id now; else the error to answer."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        return self.ownership.check(self.partition_of(transactional_id))

    def _still_owner(self, transactional_id: str, coordinator_epoch: int) -> bool:
        return self.ownership.loaded.get(self.partition_of(transactional_id)) == coordinator_epoch

    def sync_ownership(self) -> None:
        """After a metadata change: drop partitions no longer led, load newly led ones."""
        self.ownership.sync()

    def _load_partition(self, index: int, partition: Partition) -> None:
        """Rebuild one partition's transactional ids; finish the commits and aborts
        the previous coordinator had decided but not completed."""
        found = self.state_log.read_partition(partition)
        for transactional_id, transition in found.items():
            meta = TransactionMetadata(transactional_id, transition.producer_id,
                                       transition.producer_epoch, transition.timeout_ms)
            meta.apply(transition)
            self.transactions[transactional_id] = meta
        log.info("%s-%d loaded: %d transactional ids", TRANSACTION_STATE_TOPIC, index,
                 len(found))
        for transactional_id in found:
            meta = self.transactions[transactional_id]
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._send_markers(meta, partition.leader_epoch)

    def _unload_partition(self, index: int) -> None:
        for transactional_id in [t for t in self.transactions if self.partition_of(t) == index]:
            del self.transactions[transactional_id]
        log.info("%s-%d: transactional ids unloaded (no longer the leader)",
                 TRANSACTION_STATE_TOPIC, index)

    # -- ListTransactions, DescribeTransactions (KIP-664) -----------------------------------

    def list_transactions(self, producer_ids: set[int], state_names: set[str],
                          older_than_ms: int = -1) -> TransactionListing:
        """The transactional ids this coordinator holds, filtered as Kafka's
        ``listTransactionStates``: by producer id, by state name (names Kafka does not have
        are returned as unknown), by running for longer than ``older_than_ms`` (-1: any);
        a Dead id never shows. COORDINATOR_LOAD_IN_PROGRESS while a partition loads."""
        known = {state.kafka_name: state for state in TransactionState}
        unknown = sorted(name for name in state_names if name not in known)
        if self.ownership.loading:
            return TransactionListing(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, unknown, [])
        states = {known[name] for name in state_names if name in known}
        now = self.clock()
        found = [(tid, meta.producer_id, meta.state.kafka_name)
                 for tid, meta in sorted(self.transactions.items())
                 if meta.state != S.DEAD
                 and (not producer_ids or meta.producer_id in producer_ids)
                 and (not states or meta.state in states)
                 and (older_than_ms < 0 or now - meta.start_ms > older_than_ms)]
        return TransactionListing(ErrorCode.NONE, unknown, found)

    def describe_transaction(self, transactional_id: str
                             ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """The coordinator's state of one transactional id (Kafka's
        ``handleDescribeTransactions``): NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
        as for any request, TRANSACTIONAL_ID_NOT_FOUND for an id it does not know."""
        code = self.check_owner(transactional_id)
        if code is not None:
            return code, None
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.state == S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, meta

    # -- FindCoordinator --------------------------------------------------------------------

    def find_coordinator(self, transactional_id: str) -> tuple[ErrorCode, Node | None]:
        """The broker coordinating ``transactional_id`` (or why there is none)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        if TRANSACTION_STATE_TOPIC not in self.cache.topics:
            self.state_log.ensure_topic()
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        state = self.cache.partition(TRANSACTION_STATE_TOPIC, self.partition_of(transactional_id))
        if state is None or state.leader < 0 or not self.cache.is_alive(state.leader):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        return ErrorCode.NONE, self.cache.brokers[state.leader]

    # -- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] = (-1, -1)) -> InitAnswer:
        """An InitProducerIdResult, now or once the new epoch is replicated.

        ``expected`` (InitProducerId v3+, KIP-360) is the producer id and epoch the
        producer holds: a producer resuming after an error bumps its own epoch, and one
        that is not the current holder is fenced (PRODUCER_FENCED)."""
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.config["transaction.max.timeout.ms"]:
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        code = self.check_owner(transactional_id)
        if code is not None:
            return InitProducerIdResult(code)
        meta = self.transactions.get(transactional_id)
        if meta is not None:
            if expected[0] >= 0 and meta.producer_epoch >= 0 and (
                    expected[0] != meta.producer_id or expected[1] != meta.producer_epoch):
                return InitProducerIdResult(ErrorCode.PRODUCER_FENCED)
            return self._bump_epoch(meta, timeout_ms)

        def allocated(producer_id: int) -> InitAnswer:
            code = self.check_owner(transactional_id)
            if code is not None:
                return InitProducerIdResult(code)
            meta = self.transactions.setdefault(
                transactional_id,
                TransactionMetadata(transactional_id, producer_id, -1, timeout_ms))
            return self._bump_epoch(meta, timeout_ms)

        return self._with_new_producer_id(allocated)

    def _with_new_producer_id(self, then: Callable[[int], InitAnswer]) -> InitAnswer:
        try:
            producer_id = self.producer_ids()
        except KafkaError as exc:
            return InitProducerIdResult(exc.error_code or ErrorCode.UNKNOWN_SERVER_ERROR)
        if isinstance(producer_id, defer.Deferred):
            def failed(failure: Failure) -> InitProducerIdResult:
                failure.trap(KafkaError)
                return InitProducerIdResult(failure.value.error_code)

            return producer_id.addCallbacks(then, failed)
        return then(producer_id)

    def _bump_epoch(self, meta: TransactionMetadata, timeout_ms: int) -> InitAnswer:
        if meta.pending is not None or meta.state in (
                S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state == S.ONGOING:
            # A producer with this id is (or was) mid-transaction: fence it and abort; the
            # new producer retries and gets its epoch once the abort is complete.
            self._fence_and_abort(meta)
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state not in COMPLETED:
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.producer_epoch + 1 > MAX_EPOCH:
            # Epochs exhausted: a new producer id, epoch 0 (Kafka does the same).
            return self._with_new_producer_id(
                lambda producer_id: self._write_empty(meta, producer_id, 0, timeout_ms))
        return self._write_empty(meta, meta.producer_id, meta.producer_epoch + 1, timeout_ms)

    def _write_empty(self, meta: TransactionMetadata, producer_id: int, epoch: int,
                     timeout_ms: int) -> InitAnswer:
        if meta.pending is not None:
            return InitProducerIdResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        transition = meta.prepare(S.EMPTY, self.clock(), producer_id=producer_id,
                                  producer_epoch=epoch, timeout_ms=timeout_ms,
                                  partitions=frozenset(), start_ms=-1)

        def stored(code: ErrorCode) -> InitProducerIdResult:
            if code != ErrorCode.NONE:
                return InitProducerIdResult(code)
            log.info("transactional id %r: producer id %d, epoch %d", meta.transactional_id,
                     producer_id, epoch)
            return InitProducerIdResult(ErrorCode.NONE, producer_id, epoch)

        return self._store(meta, transition).addCallback(stored)

    # -- AddPartitionsToTxn, AddOffsetsToTxn ----------------------------------------------

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: list[TopicPartition]) -> PartitionsAnswer:
        """Each partition's ErrorCode (a dict), now or once the change is replicated."""

        def everyone(code: ErrorCode) -> dict[TopicPartition, ErrorCode]:
            return dict.fromkeys(partitions, code)

        meta, code = self._checked(transactional_id, producer_id, producer_epoch)
        if code is not None:
            return everyone(code)
        assert meta is not None
        if meta.pending is not None or meta.state in (
                S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return everyone(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state == S.ONGOING and set(partitions) <= meta.partitions:
            return everyone(ErrorCode.NONE)
        unknown = {tp for tp in partitions if self.cache.partition(*tp) is None}
        if unknown:
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown
                    else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in partitions}
        now = self.clock()
        ongoing = meta.state == S.ONGOING
        transition = meta.prepare(
            S.ONGOING, now, partitions=frozenset(meta.partitions if ongoing else ()) | set(
                partitions), start_ms=meta.start_ms if ongoing else now)
        return self._store(meta, transition).addCallback(everyone)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ with ``verify_only`` (KIP-890), as Kafka 3.9's
        ``handleVerifyPartitionsInTransaction``: is each partition in the ongoing
        transaction (NONE) or not (TRANSACTION_ABORTABLE)? Nothing is written."""
        meta, code = self._checked(transactional_id, producer_id, producer_epoch)
        if code is None and meta is not None and meta.state in (S.PREPARE_COMMIT,
                                                                S.PREPARE_ABORT):
            code = ErrorCode.CONCURRENT_TRANSACTIONS
        if code is not None or meta is None:
            return dict.fromkeys(partitions, code or ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        return {tp: ErrorCode.NONE if tp in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE
                for tp in partitions}

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                    group_id: str) -> CodeAnswer:
        """The group's ``__consumer_offsets`` partition joins the transaction."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        partition = (OFFSETS_TOPIC, self.offsets_partition_of(group_id))
        if self.cache.partition(*partition) is None:
            self.ensure_offsets_topic()  # a transaction may be a group's first use of it
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        answer = self.add_partitions(transactional_id, producer_id, producer_epoch, [partition])
        if isinstance(answer, defer.Deferred):
            return answer.addCallback(lambda codes: codes[partition])
        return answer[partition]

    # -- EndTxn -------------------------------------------------------------------------------

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        committed: bool) -> CodeAnswer:
        """An ErrorCode once the decision (PrepareCommit/PrepareAbort) is replicated; the
        markers follow in the background."""
        meta, code = self._checked(transactional_id, producer_id, producer_epoch)
        if code is not None:
            return code
        assert meta is not None
        if meta.pending is not None:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = meta.state
        if state == S.ONGOING:
            return self._prepare_end(meta, committed)
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):  # a retry after a lost answer
            return ErrorCode.NONE if (state == S.COMPLETE_COMMIT) == committed \
                else ErrorCode.INVALID_TXN_STATE
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS if (state == S.PREPARE_COMMIT) == committed \
                else ErrorCode.INVALID_TXN_STATE
        if state == S.PREPARE_EPOCH_FENCE:
            return ErrorCode.PRODUCER_FENCED
        return ErrorCode.INVALID_TXN_STATE  # Empty: no transaction to end

    def _prepare_end(self, meta: TransactionMetadata, committed: bool) -> defer.Deferred:
        target = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
        transition = meta.prepare(target, self.clock())
        coordinator_epoch = self.ownership.epoch(self.partition_of(meta.transactional_id))

        def stored(code: ErrorCode) -> ErrorCode:
            if code == ErrorCode.NONE:
                log.info("transactional id %r: %s, %d partitions", meta.transactional_id,
                         target.kafka_name, len(transition.partitions))
                self._send_markers(meta, coordinator_epoch)
            return code

        return self._store(meta, transition).addCallback(stored)

    def _send_markers(self, meta: TransactionMetadata, coordinator_epoch: int) -> None:
        committed = meta.state == S.PREPARE_COMMIT
        transactional_id = meta.transactional_id
        producer_epoch = meta.producer_epoch
        written = self.markers.send(
            meta.producer_id, producer_epoch, committed, sorted(meta.partitions),
            coordinator_epoch, lambda: self._still_owner(transactional_id, coordinator_epoch))

        def complete(_: object) -> defer.Deferred | None:
            current = self.transactions.get(transactional_id)
            if current is not meta or not self._still_owner(transactional_id,
                                                            coordinator_epoch):
                return None
            target = S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT
            transition = meta.prepare(target, self.clock(), partitions=frozenset())
            return self._store(meta, transition)

        def failed(failure: Failure) -> None:
            log.info("markers for %r not completed: %s", transactional_id,
                     failure.getErrorMessage())

        written.addCallbacks(complete, failed)

    # -- timeouts -------------------------------------------------------------------------------

    def abort_timed_out(self) -> None:
        """Abort every transaction Ongoing past its timeout, fencing its producer."""
        now = self.clock()
        for meta in list(self.transactions.values()):
            if meta.state == S.PREPARE_EPOCH_FENCE and meta.pending is None:
                self._prepare_end(meta, committed=False)  # the abort's write failed: again
            elif meta.is_expired(now):
                log.info("transactional id %r timed out after %d ms: aborting",
                         meta.transactional_id, now - meta.start_ms)
                self._fence_and_abort(meta)

    def _fence_and_abort(self, meta: TransactionMetadata) -> None:
        """Bump the epoch (PrepareEpochFence, in memory as in Kafka), then PrepareAbort."""
        if meta.producer_epoch >= MAX_EPOCH:
            log.warning("transactional id %r: epoch exhausted, aborting without a bump",
                        meta.transactional_id)
        else:
            meta.complete(meta.prepare(S.PREPARE_EPOCH_FENCE, self.clock(),
                                       producer_epoch=meta.producer_epoch + 1))
        self._prepare_end(meta, committed=False)

    # -- shared checks and writes ------------------------------------------------------------

    def _checked(self, transactional_id: str, producer_id: int, producer_epoch: int
                 ) -> tuple[TransactionMetadata | None, ErrorCode | None]:
        code = self.check_owner(transactional_id)
        if code is not None:
            return None, code
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != meta.producer_epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return meta, None

    def _store(self, meta: TransactionMetadata, transition: TxnTransition) -> defer.Deferred:
        """Write ``transition``; complete it if replicated, else drop it. Fires with the code."""

        def stored(code: ErrorCode) -> ErrorCode:
            if meta.pending == transition:
                if code == ErrorCode.NONE:
                    meta.complete(transition)
                else:
                    meta.abandon()
            return code

        return self.state_log.store(meta.transactional_id, transition).addCallback(stored)
