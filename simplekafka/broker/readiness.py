"""Client requests wait until the broker is ready: registered, and told so by a controller.

Kafka opens its client listener only once the broker has started: registered in
ZooKeeper and ready to answer with itself and a controller in its metadata. Our
broker must listen earlier, because the controller's first UpdateMetadata, the
message that makes it ready, arrives on that same listener. So the listener is
open from the start, and this gate holds every client request that arrives
before the broker is ready, and hands them to the dispatcher, in order, the
moment it is. What a client sees is a first answer that is already right (this
broker and a live controller listed), only later; never an empty cluster that
sends admin clients into long retry loops.

Passed through at once: ApiVersions (its answer never depends on the cluster,
and clients give up a connection whose handshake stalls) and the controller's
requests (LeaderAndIsr, UpdateMetadata, StopReplica), which make the broker ready.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Generic, TypeVar

from twisted.internet import defer

from simplekafka.protocol.api import ApiKey

log = logging.getLogger(__name__)
_Answer = TypeVar("_Answer")

PASSED_BEFORE_READY = frozenset(int(k) for k in (
    ApiKey.API_VERSIONS, ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA))

_API_KEY = struct.Struct(">h")


class ReadinessGate(Generic[_Answer]):
    """What connections call for each frame: the dispatcher, or a wait for readiness first."""

    def __init__(self, dispatcher: Callable[[bytes, object], _Answer]) -> None:
        self.dispatcher = dispatcher
        self.is_open = False
        self._held: list[tuple[defer.Deferred, bytes, object]] = []

    def __call__(self, frame: bytes, connection: object = None) -> _Answer | defer.Deferred:
        if self.is_open or len(frame) < _API_KEY.size or (
                _API_KEY.unpack_from(frame)[0] in PASSED_BEFORE_READY):
            return self.dispatcher(frame, connection)
        held: defer.Deferred = defer.Deferred()
        self._held.append((held, frame, connection))
        return held

    @property
    def held(self) -> int:
        return len(self._held)

    def open(self) -> None:
        """The broker is ready: answer what waited, in arrival order, and stop holding."""
        if self.is_open:
            return
        self.is_open = True
        held, self._held = self._held, []
        if held:
            log.info("ready: answering %d request(s) that arrived before", len(held))
        for waiter, frame, connection in held:
            if connection is not None and not getattr(connection, "connected", True):
                continue  # the client gave up meanwhile
            defer.maybeDeferred(self.dispatcher, frame, connection).chainDeferred(waiter)
