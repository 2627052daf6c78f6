"""What the request handlers need from the rest of the broker, as small Protocols.

A handler is given exactly the collaborators it uses (the finger tutorial's
``IFingerService``, in today's typing): ``KafkaBroker`` passes its real parts,
a unit test may pass a small fake of one Protocol instead of a whole broker.
The metadata cache needs no Protocol: it is plain data (``MetadataCache``),
cheap to build for real in a test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from twisted.internet import defer, threads

from simplekafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from twisted.python.threadpool import ThreadPool

    from simplekafka.broker.partition import Partition
    from simplekafka.protocol.acls import AclOperation, ResourceType
    from simplekafka.storage import LogConfig


class DelayedCall(Protocol):
    """A timer ``callLater`` set (Twisted's IDelayedCall)."""

    def active(self) -> bool: ...

    def cancel(self) -> None: ...

    def getTime(self) -> float: ...

    def reset(self, seconds_from_now: float) -> None: ...


class Reactor(Protocol):
    """The part of Twisted's reactor handlers use: timers and the worker-thread pool."""

    def callLater(self, delay: float, callable: Callable[..., Any], *args: Any,
                  **kw: Any) -> DelayedCall: ...

    def seconds(self) -> float: ...

    def getThreadPool(self) -> ThreadPool: ...


class Config(Protocol):
    """Broker configuration values by their Kafka key (``BrokerConfig``)."""

    def __getitem__(self, key: str) -> Any: ...


class Leaders(Protocol):
    """Finds the local partitions a request is about (``ReplicaManager``)."""

    def leader_partition(self, topic: str, partition: int) -> Partition: ...

    def get_partition(self, topic: str, partition: int) -> Partition | None: ...


class RecordAppender(Protocol):
    """Appends batches at their leaders and waits per acks (``ReplicaManager``)."""

    def append_records(self, entries: Mapping[tuple[str, int], bytes | None], acks: int,
                       timeout_ms: int, internal: bool = False,
                       api_version: int | None = None) -> defer.Deferred: ...


class RecordDeleter(Protocol):
    """Moves log start offsets for DeleteRecords (``ReplicaManager``)."""

    def delete_records(self, topic: str, partition: int, offset: int,
                       timeout_ms: int) -> defer.Deferred: ...


class Authorizer(Protocol):
    """May the request's principal do this (``broker.security.authorizer``)? Every handler
    asks this one object; with no ``authorizer.class.name`` it allows everything."""

    enabled: bool

    def authorize(self, context: Any, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool: ...

    def authorize_any(self, context: Any, operation: AclOperation,
                      resource_type: ResourceType) -> bool: ...

    def authorized_operations(self, context: Any, resource_type: ResourceType,
                              name: str) -> int: ...


class TopicCreator(Protocol):
    """Metadata's auto-creation of an unknown topic (``TopicAdmin``)."""

    def auto_create(self, name: str) -> ErrorCode: ...


# Read when asked, because they change after the handlers are built.
ZooKeeperHandle = Callable[[], Any]  # the connected KazooClient, or None
Flag = Callable[[], bool]
LogConfigSource = Callable[[], "LogConfig"]


def in_worker_thread(reactor: Reactor, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
    """Run blocking ``fn`` (ZooKeeper, fsync) on the reactor's thread pool; the Deferred
    fires on the reactor thread."""
    # Twisted types its reactors as zope interfaces, which a Protocol cannot name.
    return threads.deferToThreadPool(cast(Any, reactor), reactor.getThreadPool(), fn, *args)
