"""Handing kazoo's threads over to the caller's event loop.

kazoo calls watches and session listeners on its own threads, and its calls
block. An event-loop program (the Twisted broker, an asyncio tool) must never
block its loop, and wants every callback to run on the loop's thread, where its
state lives. The seam is one callable the caller provides, ``call_soon(fn)``,
that runs ``fn()`` on the loop and may be called from any thread:

- asyncio: ``loop.call_soon_threadsafe``
- Twisted: ``reactor.callFromThread``
- plain threads: :func:`call_directly` (runs ``fn`` on the calling thread)

:class:`LoopHandoff` wraps callbacks so they are delivered through it, and runs
blocking ZooKeeper work on a worker thread with the result delivered the same way.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["CallSoon", "LoopHandoff", "call_directly"]

T = TypeVar("T")
P = ParamSpec("P")
CallSoon = Callable[[Callable[[], object]], object]


def call_directly(fn: Callable[[], object]) -> None:
    """The trivial ``call_soon``: run at once, on whatever thread we are on."""
    fn()


class LoopHandoff:
    """Deliver callbacks and results on the caller's loop via its ``call_soon``."""

    def __init__(self, call_soon: CallSoon = call_directly, max_workers: int = 2):
        self.call_soon = call_soon
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="zk-blocking")
        self._closed = threading.Event()

    def deliver(self, fn: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> None:
        """Schedule ``fn(*args, **kwargs)`` on the loop (callable from any thread)."""
        self.call_soon(functools.partial(fn, *args, **kwargs))

    def wrap(self, fn: Callable[P, object]) -> Callable[P, None]:
        """A function that, called on any thread, runs ``fn`` with its arguments on the loop."""

        @functools.wraps(fn)
        def on_loop(*args: P.args, **kwargs: P.kwargs) -> None:
            self.deliver(fn, *args, **kwargs)

        return on_loop

    def run_blocking(
        self,
        fn: Callable[..., T],
        *args: object,
        on_result: Callable[[T], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> concurrent.futures.Future[T]:
        """Run blocking ``fn(*args)`` on a worker thread; report back on the loop.

        ``on_result(value)`` or ``on_error(exception)`` is delivered through
        ``call_soon``; the returned future is there for callers without a loop.
        """
        future = self._executor.submit(fn, *args)

        def report(done: concurrent.futures.Future[T]) -> None:
            error = done.exception()
            if error is not None:
                if on_error is not None:
                    self.deliver(on_error, error)
            elif on_result is not None:
                self.deliver(on_result, done.result())

        future.add_done_callback(report)
        return future

    def close(self) -> None:
        """Stop the worker threads (waiting for running calls)."""
        self._closed.set()
        self._executor.shutdown(wait=True)
