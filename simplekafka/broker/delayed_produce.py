"""The acks=all produces waiting on one partition's high watermark (Kafka's DelayedProduce).

Kafka parks such a produce in a purgatory, watched by its partitions, with a
timer wheel for the request timeout. Ours is one queue per partition, because
what each waiter wants is an offset the high watermark must pass, and appends
come in offset order: the queue is sorted by construction. So

* registering a waiter appends to the right (a retried duplicate batch, whose
  offset is lower, is inserted in its place);
* a high-watermark advance completes waiters from the left and stops at the
  first one still above it: the cost is the number of waiters it completes,
  not the number waiting (scanning every waiter per produce made a leader that
  fell behind slower the further it fell);
* the request timeout is one reactor timer per queue, set for the earliest
  deadline it holds, not one timer per produce request. When it fires it
  answers REQUEST_TIMED_OUT to every waiter past its deadline and sets itself
  for the next one; waiters completed meanwhile are simply gone.

A waiter is a plain call, ``done(code, context)``, not a Deferred: the
acks=all produce joins its partitions' waits itself (``replica_manager``) and
makes the one Deferred its handler answers through; a Deferred per partition
with a callback to join it cost a callback round more per partition. Each
waiter is in exactly one place (this queue, until completed, failed or timed
out), so each is called once.

Each round of completions runs inside ``completing``, a context manager the
owner hands over (the ReplicaManager's, so that the answers one advance
releases leave together: ``answers_together.py``); by default, none.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import DelayedCall, Reactor

from simplekafka.protocol.errors import ErrorCode

# What a waiter calls when it is done: (its code, the context it was added with).
Done = Callable[[ErrorCode, Any], object]


class _Waiter:
    __slots__ = ("context", "deadline", "done", "min_insync", "offset")

    def __init__(self, offset: int, min_insync: int, deadline: float | None, done: Done,
                 context: object):
        self.offset = offset  # the high watermark this produce needs (its last offset + 1)
        self.min_insync = min_insync
        self.deadline = deadline  # clock seconds, None: no timeout
        self.done = done
        self.context = context


_NO_WAITERS: tuple[_Waiter, ...] = ()
_NO_BLOCK: AbstractContextManager[object] = nullcontext()


class DelayedProduceQueue:
    """One partition's acks=all waiters in offset order, with one timer for their timeouts.

    The deque is made at the first waiter: an empty one takes 760 bytes, and a
    broker hosts thousands of partitions that never see an acks=all produce."""

    def __init__(self, clock: Reactor | None = None,
                 completing: AbstractContextManager[object] | None = None):
        self.clock = clock  # an IReactorTime; None: the global reactor, when a timeout is asked
        self.completing = completing if completing is not None else _NO_BLOCK
        self._waiters: deque[_Waiter] | tuple[_Waiter, ...] = _NO_WAITERS
        self._timer: DelayedCall | None = None  # the one DelayedCall, for the earliest deadline
        self._timer_at = 0.0

    def __len__(self) -> int:
        return len(self._waiters)

    def add(self, offset: int, min_insync: int, timeout: float | None, done: Done,
            context: object = None) -> None:
        """Call ``done(code, context)`` once the high watermark reaches ``offset`` (see
        ``complete``), or with REQUEST_TIMED_OUT after ``timeout`` seconds (None: never)."""
        deadline = None
        if timeout is not None:
            clock = self._clock()
            deadline = clock.seconds() + max(timeout, 0.0)
        waiter = _Waiter(offset, min_insync, deadline, done, context)
        waiters = self._waiters
        if not isinstance(waiters, deque):
            waiters = self._waiters = deque()
        if not waiters or waiters[-1].offset <= offset:
            waiters.append(waiter)
        else:  # a duplicate batch's retry: rare, and only it pays for the walk
            index = len(waiters)
            while index > 0 and waiters[index - 1].offset > offset:
                index -= 1
            waiters.insert(index, waiter)
        if deadline is not None:
            self._schedule(deadline)

    def complete(self, high_watermark: int, code_for: Callable[[int], ErrorCode]) -> None:
        """Answer every waiter the high watermark has passed, ``code_for(min_insync)`` each."""
        waiters = self._waiters
        if not isinstance(waiters, deque):
            return
        with self.completing:
            while waiters and waiters[0].offset <= high_watermark:
                waiter = waiters.popleft()
                waiter.done(code_for(waiter.min_insync), waiter.context)

    def fail_all(self, code: ErrorCode) -> None:
        """Answer every waiter with ``code`` (the partition is no longer led here)."""
        waiters, self._waiters = self._waiters, _NO_WAITERS
        self._cancel_timer()
        for waiter in waiters:
            waiter.done(code, waiter.context)

    # -- timeouts ---------------------------------------------------------------------------

    def _clock(self) -> Reactor:
        if self.clock is None:
            from twisted.internet import reactor
            self.clock = cast("Reactor", reactor)
        return self.clock

    def _schedule(self, deadline: float) -> None:
        timer = self._timer
        if timer is not None and timer.active():
            if deadline >= self._timer_at:
                return  # the timer fires earlier and will look again
            timer.cancel()
        clock = self._clock()
        self._timer_at = deadline
        self._timer = clock.callLater(max(deadline - clock.seconds(), 0.0), self._expire)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _expire(self) -> None:
        """Time out the waiters past their deadline; set the timer for the next deadline."""
        self._timer = None
        now = self._clock().seconds()
        kept: deque[_Waiter] = deque()
        expired = []
        for waiter in self._waiters:
            if waiter.deadline is not None and waiter.deadline <= now:
                expired.append(waiter)
            else:
                kept.append(waiter)
        self._waiters = kept if kept else _NO_WAITERS
        deadlines = [w.deadline for w in kept if w.deadline is not None]
        if deadlines:
            self._schedule(min(deadlines))
        for waiter in expired:
            waiter.done(ErrorCode.REQUEST_TIMED_OUT, waiter.context)
