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
from typing import TYPE_CHECKING, Any, Protocol, cast

from twisted.internet import defer, threads

if TYPE_CHECKING:
    from twisted.python.threadpool import ThreadPool

    from simplekafka.storage import LogConfig


class DelayedCall(Protocol):
    """A timer ``callLater`` set (Twisted's IDelayedCall)."""

    def active(self) -> bool: ...

    def cancel(self) -> None: ...

    def getTime(self) -> float: ...

    def reset(self, seconds_from_now: float) -> None: ...


class Reactor(Protocol):
    """The part of Twisted's reactor the broker uses: timers and the worker-thread pool."""

    def callLater(self, delay: float, callable: Callable[..., Any], *args: Any,
                  **kw: Any) -> DelayedCall: ...

    def seconds(self) -> float: ...

    def getThreadPool(self) -> ThreadPool: ...


class Config(Protocol):
    """Broker configuration values by their Kafka key (``BrokerConfig``)."""

    def __getitem__(self, key: str) -> Any: ...


class RecordAppender(Protocol):
    """Appends batches at their leaders and waits per acks (``ReplicaManager``)."""

    def append_records(self, entries: Mapping[tuple[str, int], bytes | None], acks: int,
                       timeout_ms: int, internal: bool = False,
                       api_version: int | None = None) -> defer.Deferred: ...


# Read when asked, because they change after the parts are built.
ZooKeeperHandle = Callable[[], Any]  # the connected KazooClient, or None
Flag = Callable[[], bool]
LogConfigSource = Callable[[], "LogConfig"]


def in_worker_thread(reactor: Reactor, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
    """Run blocking ``fn`` (ZooKeeper, fsync) on the reactor's thread pool; the Deferred
    fires on the reactor thread."""
    # Twisted types its reactors as zope interfaces, which a Protocol cannot name.
    return threads.deferToThreadPool(cast(Any, reactor), reactor.getThreadPool(), fn, *args)
