"""What the broker's parts need from each other, as small Protocols (the domain's side).

The coordinators, their metadata managers, the ReplicaManager and the security
stores are given exactly the collaborators they use: a reactor for timers and
worker threads, configuration by Kafka key, a way to append records, the
ZooKeeper handle. They live here, not in ``apis``, so that the domain never
imports the request handlers; the handlers' own Protocols (``Leaders``,
``Authorizer``, ...) are in ``apis.collaborators``, which re-exports these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from twisted.internet import defer, threads

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from twisted.internet.address import IPv4Address, IPv6Address
    from twisted.internet.interfaces import IReactorFromThreads
    from twisted.python.threadpool import ThreadPool

    from simplekafka.storage import LogConfig


class DelayedCall(Protocol):
    """A timer ``callLater`` set (Twisted's IDelayedCall)."""

    def active(self) -> bool: ...

    def cancel(self) -> None: ...

    def getTime(self) -> float: ...

    def reset(self, seconds_from_now: float) -> None: ...


class Clock(Protocol):
    """The reactor's time (Twisted's IReactorTime.seconds; a test's ``task.Clock``)."""

    def seconds(self) -> float: ...


class Reactor(Protocol):
    """The part of Twisted's reactor the broker uses: timers and the worker-thread pool."""

    def callLater(self, delay: float, callable: Callable[..., object], *args: object,
                  **kw: object) -> DelayedCall: ...

    def callFromThread(self, callable: Callable[..., object], *args: object,
                       **kw: object) -> None: ...

    def seconds(self) -> float: ...

    def getThreadPool(self) -> ThreadPool: ...


class ListeningPort(Protocol):
    """A bound listening port (Twisted's IListeningPort)."""

    def getHost(self) -> IPv4Address | IPv6Address: ...

    def stopListening(self) -> defer.Deferred[None] | None: ...


class ServingReactor(Reactor, Protocol):
    """The whole reactor the composition root holds: it also listens and runs threads."""

    def listenTCP(self, port: int, factory: object, backlog: int = 50,
                  interface: str = "") -> ListeningPort: ...

    def listenSSL(self, port: int, factory: object, contextFactory: object,
                  backlog: int = 50, interface: str = "") -> ListeningPort: ...

    def callInThread(self, callable: Callable[..., object], *args: object,
                     **kw: object) -> None: ...


class Config(Protocol):
    """Broker configuration values by their Kafka key (``BrokerConfig``)."""

    # The value's type depends on the key (an int, a list of str, None...): truly dynamic.
    def __getitem__(self, key: str) -> Any: ...


class RecordAppender(Protocol):
    """Appends batches at their leaders and waits per acks (``ReplicaManager``)."""

    def append_records(self, entries: Mapping[tuple[str, int], bytes | None], acks: int,
                       timeout_ms: int, internal: bool = False,
                       api_version: int | None = None,
                       respond: Callable[[Any], Any] | None = None) -> defer.Deferred: ...


# Read when asked, because they change after the parts are built.
ZooKeeperHandle = Callable[[], "KazooClient"]  # the connected KazooClient, or None
Flag = Callable[[], bool]
LogConfigSource = Callable[[], "LogConfig"]


_T = TypeVar("_T")


def in_worker_thread(reactor: Reactor, fn: Callable[..., _T],
                     *args: object) -> defer.Deferred[_T]:
    """Run blocking ``fn`` (ZooKeeper, fsync) on the reactor's thread pool; the Deferred
    fires on the reactor thread."""
    # Twisted types its reactors as zope interfaces, which a Protocol cannot name.
    return threads.deferToThreadPool(cast("IReactorFromThreads", reactor),
                                     reactor.getThreadPool(), fn, *args)
