"""Stage 9 exercises: what a read_committed consumer may see, and a transactional producer.

Read stages/stage9_transactions/README.md and docs/transactions.md first. A
transaction touches three places, and you write one piece of each:

1. the partition (broker side): the *last stable offset* (LSO), below which
   read_committed consumers read, and which aborted transactions a
   read_committed fetch must be told about (the ``.txnindex`` search);
2. the consumer: dropping the records of aborted transactions, and the
   control batches (markers), from a fetch answer;
3. the producer: Kafka's client-side transaction state machine
   (Uninitialized, Ready, InTransaction, Committing/Aborting, AbortableError,
   FatalError) driving InitProducerId, AddPartitionsToTxn, Produce and EndTxn
   against SimpleKafka's real transaction coordinator.

``simplekafka learn check 9`` compares exercises 1 and 2 with SimpleKafka's own
code over many logs (step by step: each batch appended, each HW, each fetched
batch), and for exercise 3 starts a real one-broker cluster (ZooKeeper and a
broker as processes on 127.0.0.1), drives your producer through a commit, an
abort and two fencings, and reads the topic back with read_committed.

Everything else is given, imported from SimpleKafka: the rest of the
producer-state table and of the transaction index (your classes extend
theirs), the record batch codec, the error codes.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence

from simplekafka.broker import producer_state
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import BatchHeader
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.records import Record, build_batch, parse_control_marker
from simplekafka.storage import txn_index
from simplekafka.storage.txn_index import AbortedTxn

# --- exercise 1: the last stable offset and the aborted-transactions index ----------------


class ProducerStateTable(producer_state.ProducerStateTable):
    """One partition's producer state, as every replica keeps it (``record``,
    ``complete_txn`` and the rest are SimpleKafka's); you write its LSO.

    The two facts the LSO depends on, kept up to date by the given methods:

    * ``self.ongoing``: producer id -> the first offset of its open transaction
      on this partition (set by its first transactional batch, removed by the
      marker that ends it);
    * ``self._unreplicated``: transactions a marker has ended (``CompletedTxn``:
      producer_id, first_offset, last_offset = the marker's offset, aborted)
      whose marker may not yet be below the high watermark.
    """

    def last_stable_offset(self, high_watermark: int) -> int:
        """Where read_committed consumers stop: the smallest of

        * ``high_watermark`` (nothing at or past it is readable at all),
        * the first offset of every open transaction (``self.ongoing``),
        * the first offset of every ended transaction in ``self._unreplicated``
          whose marker is at or past the HW (``last_offset >= high_watermark``):
          its marker is not replicated yet, and a new leader might not have it.

        With no transaction at all, the LSO is the HW.
        """
        lso = high_watermark
        for first in self.ongoing.values():
            if first < lso:
                lso = first
        for txn in self._unreplicated:
            if txn.last_offset >= high_watermark and txn.first_offset < lso:
                lso = txn.first_offset
        return lso


class TransactionIndex(txn_index.TransactionIndex):
    """One segment's ``.txnindex`` (opening, ``append``, ``entries`` are SimpleKafka's);
    you write the search a read_committed Fetch makes in it."""

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping the fetched range [fetch_offset, upper_bound),
        and whether the search may stop at this segment.

        ``self.entries`` are AbortedTxn (producer_id, first_offset, last_offset =
        the abort marker's offset, last_stable_offset = the LSO right after the
        abort), oldest marker first. An entry overlaps the range when its marker
        is at or after ``fetch_offset`` and its first offset is before
        ``upper_bound``. Go through the entries in order, keeping those that
        overlap; as soon as an entry's ``last_stable_offset`` is at or past
        ``upper_bound`` (that entry kept first if it overlaps), no later
        transaction can start inside the range: answer (found, True). Having
        gone through all: (found, False), and the log searches the next segment.
        """
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                return found, True
        return found, False


# --- exercise 2: the consumer drops aborted records and markers ---------------------------


class AbortedFilter:
    """Which batches of one read_committed fetch answer the application must not see.

    The consumer makes one per partition answer, from the answer's
    ``aborted_transactions`` (producer id, first offset), then calls
    ``drops`` for each batch of the answer in offset order.
    """

    def __init__(self, aborted: Sequence[tuple[int, int]]):
        """``aborted``: (producer id, first offset) of each aborted transaction in the
        answer, in any order (the broker lists them by their markers' offsets)."""
        self.pending = sorted(aborted, key=lambda txn: txn[1])
        self.aborting: set[int] = set()

    def drops(self, header: BatchHeader, records: list[Record]) -> bool:
        """True if the batch is not for the application (Kafka's consumer rule).

        * a batch without a producer (producer id < 0) is kept (False);
        * every aborted transaction whose first offset is at or before this
          batch's last offset has begun by now: its producer is *aborting*;
        * a control batch is always dropped (True); when its record is an ABORT
          marker (``parse_control_marker(records[0])``, ``commit`` False) it ends
          its producer's aborted transaction: the producer is no longer aborting;
        * a transactional data batch of an aborting producer is dropped; any
          other batch is kept.
        """
        if header.producer_id < 0:
            return False
        while self.pending and self.pending[0][1] <= header.last_offset:
            self.aborting.add(self.pending.pop(0)[0])
        if header.is_control:
            marker = parse_control_marker(records[0]) if records else None
            if marker is not None and not marker.commit:
                self.aborting.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self.aborting


# --- exercise 3: the transactional producer's state machine -------------------------------


class TxnState(enum.Enum):
    """Kafka's producer-side transaction states (``TransactionManager.State``)."""

    UNINITIALIZED = "Uninitialized"
    INITIALIZING = "Initializing"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING_TRANSACTION = "CommittingTransaction"
    ABORTING_TRANSACTION = "AbortingTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


T = TxnState
# The states each state may be entered from (Kafka's ``isTransitionValid``); FatalError
# may be entered from any state.
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    T.INITIALIZING: frozenset({T.UNINITIALIZED}),
    T.READY: frozenset({T.INITIALIZING, T.COMMITTING_TRANSACTION, T.ABORTING_TRANSACTION}),
    T.IN_TRANSACTION: frozenset({T.READY}),
    T.COMMITTING_TRANSACTION: frozenset({T.IN_TRANSACTION}),
    T.ABORTING_TRANSACTION: frozenset({T.IN_TRANSACTION, T.ABORTABLE_ERROR}),
    T.ABORTABLE_ERROR: frozenset({T.IN_TRANSACTION, T.COMMITTING_TRANSACTION,
                                  T.ABORTING_TRANSACTION, T.ABORTABLE_ERROR}),
    T.FATAL_ERROR: frozenset(TxnState),
}

# Answers after which this producer may never write again (a newer producer with the same
# transactional id fenced it: PRODUCER_FENCED since KIP-588, INVALID_PRODUCER_EPOCH before).
FATAL_CODES = frozenset({
    ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_TRANSACTION_TIMEOUT, ErrorCode.TRANSACTION_COORDINATOR_FENCED,
})
# How long a retriable answer (CONCURRENT_TRANSACTIONS while markers are written...) is
# asked again, and how often.
RETRY_FOR_S = 20.0
RETRY_BACKOFF_S = 0.05


class IllegalStateError(Exception):
    """A transactional method called in a state that does not allow it (a usage error)."""


class TransactionError(Exception):
    """The broker refused a transactional request; ``fatal``: the producer is done for."""

    def __init__(self, code: ErrorCode, what: str, fatal: bool):
        super().__init__(f"{what}: {code.name}" + (" (fatal)" if fatal else " (abortable)"))
        self.code = code
        self.fatal = fatal


def error_code_of(api_key: ApiKey, answer: Struct) -> ErrorCode:
    """The one error code of an answer (the first failed partition's, for per-partition ones)."""
    if api_key == ApiKey.PRODUCE:
        codes = [p.error_code for t in answer.responses for p in t.partition_responses]
    elif api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        codes = [p.partition_error_code for t in answer.results_by_topic_v3_and_below
                 for p in t.results_by_partition]
        codes.sort(key=lambda c: c == ErrorCode.OPERATION_NOT_ATTEMPTED)
    else:
        codes = [answer.error_code]
    return ErrorCode.of(next((c for c in codes if c), 0))


Request = Callable[[ApiKey, dict], Struct]  # sends one request where it belongs, returns the answer


class TransactionalProducer:
    """One ``transactional_id``'s producer: its state, producer id and epoch, partitions.

    ``request(api_key, body)`` is given (by the check: SimpleKafka's client):
    it sends ``body`` (a dict of the request's fields, Kafka's names) to the
    transaction coordinator, or a Produce to the partition's leader, and returns
    the decoded answer (attribute access). ``call`` (given) wraps it, retrying
    retriable answers. The request bodies:

    * InitProducerId: {transactional_id, transaction_timeout_ms}; the answer
      has producer_id, producer_epoch;
    * AddPartitionsToTxn: {v3_and_below_transactional_id,
      v3_and_below_producer_id, v3_and_below_producer_epoch,
      v3_and_below_topics: [{name, partitions: [index]}]};
    * Produce: {transactional_id, acks -1, timeout_ms, topic_data: [{name,
      partition_data: [{index, records}]}]}, ``records`` one batch from
      ``build_batch(records, producer_id=, producer_epoch=, base_sequence=,
      is_transactional=True)``; the answer's
      responses[0].partition_responses[0].base_offset is where it went;
    * EndTxn: {transactional_id, producer_id, producer_epoch, committed}.
    """

    def __init__(self, transactional_id: str, request: Request,
                 transaction_timeout_ms: int = 60_000):
        self.transactional_id = transactional_id
        self.request = request
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = TxnState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.partitions: set[tuple[str, int]] = set()  # added to the current transaction
        self.sequences: dict[tuple[str, int], int] = {}  # next sequence number, per partition
        self.error: TransactionError | None = None  # what put it in an error state

    def call(self, api_key: ApiKey, body: dict) -> tuple[ErrorCode, Struct]:
        """Send one request; (its error code, the answer), after retrying retriable codes."""
        deadline = time.monotonic() + RETRY_FOR_S
        while True:
            answer = self.request(api_key, body)
            code = error_code_of(api_key, answer)
            if not code.retriable or time.monotonic() > deadline:
                return code, answer
            time.sleep(RETRY_BACKOFF_S)

    def require(self, *states: TxnState) -> None:
        """Raise unless in one of ``states``: the fatal error itself when in FatalError."""
        if self.state == TxnState.FATAL_ERROR and self.error is not None:
            raise self.error
        if self.state not in states:
            raise IllegalStateError(f"state is {self.state.value}, this needs "
                                    + " or ".join(s.value for s in states)
                                    + (f" ({self.error})" if self.error else ""))

    def commit_transaction(self) -> None:
        self.end_transaction(True)

    def abort_transaction(self) -> None:
        self.end_transaction(False)

    # -- yours -------------------------------------------------------------------------

    def transition_to(self, target: TxnState) -> None:
        """Move to ``target`` if ``VALID_PREVIOUS`` allows it from the current state.

        FatalError is entered from anywhere. Otherwise: in FatalError, raise the
        fatal error (``self.error``); from a state not in
        ``VALID_PREVIOUS[target]``, raise IllegalStateError and stay.
        """
        if target != TxnState.FATAL_ERROR:
            self.require(*VALID_PREVIOUS[target])
        self.state = target

    def fail(self, code: ErrorCode, what: str) -> TransactionError:
        """A request (``what``: "InitProducerId", "Produce"...) was answered ``code``
        (not NONE, not retriable): record and return the error for the caller to raise.

        Fatal (``fatal=True``, state FatalError) when ``code`` is in FATAL_CODES or
        the producer was Initializing; else abortable (state AbortableError: only
        ``abort_transaction`` may follow). ``self.error`` is the error either way.
        """
        fatal = code in FATAL_CODES or self.state == TxnState.INITIALIZING
        self.error = TransactionError(code, what, fatal)
        self.transition_to(TxnState.FATAL_ERROR if fatal else TxnState.ABORTABLE_ERROR)
        return self.error

    def init_transactions(self) -> None:
        """Initializing, InitProducerId (with ``self.transaction_timeout_ms``), then Ready
        with the answer's producer id and epoch. A refusal raises ``fail``'s error."""
        self.transition_to(TxnState.INITIALIZING)
        code, answer = self.call(ApiKey.INIT_PRODUCER_ID, {
            "transactional_id": self.transactional_id,
            "transaction_timeout_ms": self.transaction_timeout_ms})
        if code != ErrorCode.NONE:
            raise self.fail(code, "InitProducerId")
        self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
        self.transition_to(TxnState.READY)

    def begin_transaction(self) -> None:
        """Ready -> InTransaction; no request (the coordinator hears of the transaction
        with its first AddPartitionsToTxn)."""
        self.transition_to(TxnState.IN_TRANSACTION)

    def send(self, topic: str, partition: int,
             records: Sequence[tuple[bytes | None, bytes | None]]) -> int:
        """Write ``records`` (key, value) to ``topic``/``partition`` inside the transaction;
        returns the base offset the broker gave the batch.

        Only in InTransaction (``require``). A partition not yet in this
        transaction is first added (AddPartitionsToTxn), once per transaction.
        Then one transactional batch under the producer id and epoch, its
        base sequence the partition's next sequence (``self.sequences``, 0 at
        first; it goes on counting records across the transactions of one
        epoch), acks -1; the next sequence moves on only once it is written.
        A refusal of either request raises ``fail``'s error.
        """
        self.require(TxnState.IN_TRANSACTION)
        tp = (topic, partition)
        if tp not in self.partitions:
            code, _answer = self.call(ApiKey.ADD_PARTITIONS_TO_TXN, {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.producer_epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": [partition]}]})
            if code != ErrorCode.NONE:
                raise self.fail(code, "AddPartitionsToTxn")
            self.partitions.add(tp)
        sequence = self.sequences.get(tp, 0)
        batch = build_batch(list(records), producer_id=self.producer_id,
                            producer_epoch=self.producer_epoch, base_sequence=sequence,
                            is_transactional=True)
        code, answer = self.call(ApiKey.PRODUCE, {
            "transactional_id": self.transactional_id, "acks": -1, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": batch}]}]})
        if code != ErrorCode.NONE:
            raise self.fail(code, "Produce")
        self.sequences[tp] = sequence + len(records)
        return answer.responses[0].partition_responses[0].base_offset

    def end_transaction(self, commit: bool) -> None:
        """Commit (CommittingTransaction) or abort (AbortingTransaction), then Ready.

        EndTxn(committed=commit) is sent only if a partition was added: a
        transaction that wrote nothing is unknown to the coordinator (which
        would answer INVALID_TXN_STATE). A refusal raises ``fail``'s error.
        The next transaction starts with no partition added.
        """
        self.transition_to(TxnState.COMMITTING_TRANSACTION if commit
                           else TxnState.ABORTING_TRANSACTION)
        if self.partitions:
            code, _answer = self.call(ApiKey.END_TXN, {
                "transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "committed": commit})
            if code != ErrorCode.NONE:
                raise self.fail(code, "EndTxn")
        self.partitions.clear()
        self.error = None
        self.transition_to(TxnState.READY)
