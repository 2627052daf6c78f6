"""One transactional id as its coordinator holds it, and the states it may move through.

The states are Kafka's (``TransactionState``)::

    Empty --AddPartitions--> Ongoing --EndTxn(commit)--> PrepareCommit --> CompleteCommit
      ^                       |  |                                            (markers written)
      |                       |  +--EndTxn(abort), timeout--> PrepareAbort --> CompleteAbort
      |                       +--InitProducerId (fence)--> PrepareEpochFence --> PrepareAbort
      +-------- InitProducerId (new epoch) <-- CompleteCommit, CompleteAbort, Empty

A change is made in two steps, as Kafka's ``prepareTransitionTo`` and
``completeTransitionTo``: ``prepare`` checks the transition against
``VALID_PREVIOUS_STATES`` and returns the :class:`TxnTransition` to write to
``__transaction_state``, remembering it as pending (any other request in the
meantime gets CONCURRENT_TRANSACTIONS); ``complete`` applies it once the write
is replicated, ``abandon`` drops it if the write failed. An illegal transition
raises :class:`IllegalStateTransition`: a coordinator bug fails loudly.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict

from simplekafka.broker.coordinator.runtime import IllegalStateTransition

if TYPE_CHECKING:
    from typing_extensions import Unpack


class TransactionState(enum.IntEnum):
    """Kafka's states, numbered as ``__transaction_state`` stores them."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


S = TransactionState
COMPLETED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})

# The states a transactional id may enter each state from (Kafka's validPreviousStates).
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: COMPLETED,
    S.ONGOING: COMPLETED | {S.ONGOING},
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: COMPLETED,
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

MAX_EPOCH = 32_766  # Kafka's Short.MaxValue - 1: one epoch stays free for a bump

TopicPartition = tuple[str, int]


class TxnChanges(TypedDict, total=False):
    """What a transition may change besides its state and time (``TxnTransition``'s)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partitions: frozenset[TopicPartition]
    start_ms: int


@dataclass(frozen=True)
class TxnTransition:
    """What one change makes of a transactional id: the record written to the log."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int


@dataclass
class TransactionMetadata:
    """One transactional id: its producer id and epoch, state and partitions."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    pending: TxnTransition | None = None

    def snapshot(self) -> TxnTransition:
        return TxnTransition(self.producer_id, self.producer_epoch, self.timeout_ms,
                             self.state, frozenset(self.partitions), self.start_ms,
                             self.update_ms)

    def prepare(self, state: TransactionState, now_ms: int, **changes: Unpack[TxnChanges]
                ) -> TxnTransition:
        """Check and remember the transition to ``state``; returns what to write."""
        if self.pending is not None:
            raise IllegalStateTransition(
                f"{self.transactional_id}: {self.pending.state.kafka_name} is still pending")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name}")
        transition = replace(self.snapshot(), state=state, update_ms=now_ms, **changes)
        self.pending = transition
        return transition

    def complete(self, transition: TxnTransition) -> None:
        """The transition's record is replicated: it is now the state."""
        if self.pending != transition:
            raise IllegalStateTransition(
                f"{self.transactional_id}: completing {transition.state.kafka_name}, "
                f"which is not the pending transition")
        self.pending = None
        self.apply(transition)

    def abandon(self) -> None:
        """The pending transition's record could not be written: keep the old state."""
        self.pending = None

    def apply(self, transition: TxnTransition) -> None:
        self.producer_id = transition.producer_id
        self.producer_epoch = transition.producer_epoch
        self.timeout_ms = transition.timeout_ms
        self.state = transition.state
        self.partitions = set(transition.partitions)
        self.start_ms = transition.start_ms
        self.update_ms = transition.update_ms

    def is_expired(self, now_ms: int) -> bool:
        """Ongoing for longer than its timeout (the coordinator aborts it)."""
        return (self.state == S.ONGOING and self.pending is None
                and now_ms - self.start_ms > self.timeout_ms)
