"""A time limit on a check: a learner function that never returns fails, naming itself.

The limit is a real-time interval timer (SIGALRM) on the main thread: its
handler raises :class:`CheckTimedOut` in whatever Python code is running,
a ``time.sleep``, a busy loop or a blocking ``recv`` alike, with the stack at
that moment. It derives from BaseException, so a learner's ``except
Exception`` cannot swallow it, and the check's own ``finally`` blocks still
run (servers it started are stopped).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType


class CheckTimedOut(BaseException):
    """The check ran past its limit; ``stack`` is where the code was at that moment."""

    def __init__(self, seconds: float, stack: traceback.StackSummary):
        super().__init__(f"did not finish within {seconds:g} s")
        self.seconds = seconds
        self.stack = stack

    def culprit(self, directory: Path) -> traceback.FrameSummary | None:
        """The innermost frame in the learner's own files, if the stack has one."""
        own = own_frames(self.stack, directory)
        return own[-1] if own else None


def own_frames(frames: Iterable[traceback.FrameSummary],
               directory: Path) -> list[traceback.FrameSummary]:
    """The frames that run code from the learner's own files (under ``directory``)."""
    mine = directory.resolve()
    return [frame for frame in frames if Path(frame.filename).resolve().is_relative_to(mine)]


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CheckTimedOut in this (main) thread after ``seconds``; no limit off the main thread."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def expire(_signum: int, frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise CheckTimedOut(seconds, traceback.extract_stack(frame))

    # An outer timer (pytest-timeout's, say) is put back with what is left of it.
    previous = signal.signal(signal.SIGALRM, expire)
    began = time.monotonic()
    outer, _interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 0.001))
