"""The broker as a tree of Twisted services (Kafka's ``KafkaServer.startup``/``shutdown``).

Twisted's idiom for a process's long-lived parts is a ``MultiService`` of
``IService`` children; periodic work is a ``TimerService``. Kafka's broker
starts its parts in an order (logs, socket server, ZooKeeper, controller, ...)
and stops them in the reverse one, each step finished before the next begins.
Twisted's own ``MultiService`` starts its children without waiting and stops
them all at once, so the broker's tree is a ``BrokerServices``: a child's start
or stop may return a Deferred, and the next child waits for it. A start that
fails stops, in reverse, the children that had started, and fails with the
error; a stop stops every started child, in reverse, logging (not raising) a
child's failure, so one broken part never keeps the rest running.

``PeriodicTask`` is a ``TimerService`` whose first call comes one interval
after the start (Kafka's scheduled tasks have an initial delay; Twisted's
timer calls at once). ``Steps`` is a child that is just a call at its start
and one at its place in the shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, cast

from twisted.application import service
from twisted.application.internet import TimerService
from twisted.internet import defer, task
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from simplekafka.broker.collaborators import Reactor

#: A start or stop step: done when it returns, or when the Deferred it returns fires.
Step = Callable[[], "defer.Deferred | None"]

log = logging.getLogger(__name__)


class BrokerServices(service.MultiService):
    """Children start in the order added, each after the previous one's start finished,
    and stop in the reverse order, each after the next one's stop finished."""

    def __init__(self) -> None:
        super().__init__()
        self._started: list[service.Service] = []
        self._stop_asked = False

    def startService(self) -> defer.Deferred:
        """Start the children in order; fires when all run, fails when one could not."""
        service.Service.startService(self)
        self._stop_asked = False
        return self._start_from(0)

    def _start_from(self, index: int) -> defer.Deferred:
        children = list(self)
        while index < len(children):
            if self._stop_asked:  # stopService came while a child was starting
                return defer.succeed(None)
            child = children[index]
            try:
                started = child.startService()
            except Exception:
                return self._start_failed(child)
            self._started.append(child)
            index += 1
            if isinstance(started, defer.Deferred):
                return started.addCallbacks(
                    lambda _, at=index: self._start_from(at),
                    lambda failure, which=child: self._start_failed(which, failure))
        return defer.succeed(None)

    def _start_failed(self, child: service.Service,
                      failure: Failure | None = None) -> defer.Deferred:
        failure = failure if failure is not None else Failure()
        if child in self._started:
            self._started.remove(child)  # its start did not finish: nothing to stop
        log.error("%s did not start: %s", _name(child), failure.getErrorMessage())
        self.running = 0
        return self._stop_started().addCallback(lambda _: failure)

    def stopService(self) -> defer.Deferred:
        """Stop the started children in reverse order, one after another."""
        service.Service.stopService(self)
        self._stop_asked = True
        return self._stop_started()

    def _stop_started(self) -> defer.Deferred:
        @defer.inlineCallbacks
        def stop_each() -> Generator[defer.Deferred, object, None]:
            while self._started:
                child = self._started.pop()
                try:
                    yield defer.maybeDeferred(_stop_of(child))
                except Exception as exc:
                    log.error("stopping %s failed: %s", _name(child), exc)

        return stop_each()


class PeriodicTask(TimerService):
    """``callable`` every ``seconds``, the first call one interval after the start; a call
    that returns a Deferred is waited for, and a stop waits for the call in progress."""

    def __init__(self, name: str, seconds: float, callable: Callable[[], object],
                 clock: Reactor) -> None:
        super().__init__(seconds, callable)
        self.setName(name)
        self.clock = clock

    def startService(self) -> None:
        service.Service.startService(self)
        function, args, kwargs = self.call
        self._loop = task.LoopingCall(function, *args, **kwargs)
        # Twisted names its reactor types as zope interfaces, which a Protocol cannot name.
        self._loop.clock = cast("IReactorTime", self.clock)
        self._loopFinished = self._loop.start(self.step, now=False)
        self._loopFinished.addErrback(self._failed)

    def _failed(self, why: Failure) -> None:
        self._loop.running = False  # as TimerService: no second stop of a dead loop
        log.error("periodic task %s failed: %s", self.name, why.getTraceback())


class Steps(service.Service):
    """A child of the tree that is a call at its start and one at its stop (either may
    return a Deferred; ``start`` None: nothing to start)."""

    def __init__(self, name: str, stop: Step, start: Step | None = None) -> None:
        self.setName(name)
        self._start, self._stop = start, stop

    def startService(self) -> defer.Deferred | None:
        service.Service.startService(self)
        return self._start() if self._start is not None else None

    def stopService(self) -> defer.Deferred | None:
        service.Service.stopService(self)
        return self._stop()


def _stop_of(child: service.Service) -> Callable[[], object]:
    return child.stopService


def _name(child: object) -> str:
    return getattr(child, "name", None) or type(child).__name__
