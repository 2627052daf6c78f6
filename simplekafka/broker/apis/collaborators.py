"""What the request handlers need from the rest of the broker, as small Protocols.

A handler is given exactly the collaborators it uses (the finger tutorial's
``IFingerService``, in today's typing): ``KafkaBroker`` passes its real parts,
a unit test may pass a small fake of one Protocol instead of a whole broker.
The metadata cache needs no Protocol: it is plain data (``MetadataCache``),
cheap to build for real in a test. The Protocols the domain shares (reactor,
config, record appender, ZooKeeper handle) are ``broker.collaborators``'s,
re-exported here so a handler imports its collaborators from one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from twisted.internet import defer

# Re-exported (``as`` marks it) for the handlers; documented with broker.collaborators.
from simplekafka.broker.collaborators import Config as Config
from simplekafka.broker.collaborators import DelayedCall as DelayedCall
from simplekafka.broker.collaborators import Flag as Flag
from simplekafka.broker.collaborators import LogConfigSource as LogConfigSource
from simplekafka.broker.collaborators import Reactor as Reactor
from simplekafka.broker.collaborators import RecordAppender as RecordAppender
from simplekafka.broker.collaborators import ZooKeeperHandle as ZooKeeperHandle
from simplekafka.broker.collaborators import in_worker_thread as in_worker_thread
from simplekafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from simplekafka.broker.dispatch import RequestContext
    from simplekafka.broker.partition import Partition
    from simplekafka.protocol.acls import AclOperation, ResourceType


class Leaders(Protocol):
    """Finds the local partitions a request is about (``ReplicaManager``)."""

    def leader_partition(self, topic: str, partition: int) -> Partition: ...

    def get_partition(self, topic: str, partition: int) -> Partition | None: ...


class RecordDeleter(Protocol):
    """Moves log start offsets for DeleteRecords (``ReplicaManager``)."""

    def delete_records(self, topic: str, partition: int, offset: int,
                       timeout_ms: int) -> defer.Deferred: ...


class Authorizer(Protocol):
    """May the request's principal do this (``broker.security.authorizer``)? Every handler
    asks this one object; with no ``authorizer.class.name`` it allows everything."""

    enabled: bool

    def authorize(self, context: RequestContext, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool: ...

    def authorize_any(self, context: RequestContext, operation: AclOperation,
                      resource_type: ResourceType) -> bool: ...

    def authorized_operations(self, context: RequestContext, resource_type: ResourceType,
                              name: str) -> int: ...


class TopicCreator(Protocol):
    """Metadata's auto-creation of an unknown topic (``TopicAdmin``)."""

    def auto_create(self, name: str) -> ErrorCode: ...
