"""Producer ids, unique across the cluster, reserved in blocks in ZooKeeper (Kafka's
``ProducerIdManager``, ZooKeeper mode).

Brokers reserve blocks of ids in ``/latest_producer_id_block`` with a
conditional setData (so two brokers never get the same block) and hand them
out one by one; a block is fetched from ZooKeeper on a worker thread only when
the current one runs out. InitProducerId (``apis.producer_ids``) hands them to
idempotent producers, the transaction coordinator to transactional ids.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.collaborators import Reactor, ZooKeeperHandle, in_worker_thread
from simplekafka.protocol.errors import ErrorCode, error_for

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)
_T = TypeVar("_T")

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"


def reserve_block(zk: KazooClient, broker_id: int, size: int) -> tuple[int, int]:
    """Reserve the next ``size`` producer ids in ZooKeeper; returns (first, last) inclusive."""
    while True:
        try:
            data, stat = zk.get(PRODUCER_ID_BLOCK_PATH)
        except NoNodeError:
            data, stat = b"", None
        start = 0
        if data:
            start = int(json.loads(data)["block_end"]) + 1
        end = start + size - 1
        payload = json.dumps({"version": 1, "broker": broker_id, "block_start": str(start),
                              "block_end": str(end)}).encode()
        try:
            if stat is None:
                zk.create(PRODUCER_ID_BLOCK_PATH, payload)
            else:
                zk.set(PRODUCER_ID_BLOCK_PATH, payload, version=stat.version)
            return start, end
        except (BadVersionError, NodeExistsError):
            continue  # another broker took a block meanwhile: read again


class ProducerIdManager:
    """This broker's reserved block of producer ids (Kafka's ``ProducerIdManager``)."""

    def __init__(self, zookeeper: ZooKeeperHandle, reactor: Reactor, broker_id: int,
                 block_size: int):
        self.zookeeper = zookeeper
        self.reactor = reactor
        self.broker_id = broker_id
        self.block_size = block_size
        self._next = 0
        self._end = -1
        self._refill: defer.Deferred | None = None

    def __call__(self) -> int | defer.Deferred:
        """The next id now, or a Deferred of it once a block is reserved; KafkaError
        COORDINATOR_NOT_AVAILABLE without ZooKeeper."""
        if self._next <= self._end:
            return self._take()
        zk = self.zookeeper()
        if zk is None:
            raise error_for(ErrorCode.COORDINATOR_NOT_AVAILABLE, "not connected to ZooKeeper")
        if self._refill is None:
            self._refill = in_worker_thread(
                self.reactor, reserve_block, zk,
                self.broker_id, self.block_size)
            self._refill.addBoth(self._refilled)
        waiter: defer.Deferred = defer.Deferred()

        def wake(result: _T) -> _T:
            waiter.callback(None)
            return result

        self._refill.addBoth(wake)
        return waiter.addCallback(lambda _: self._take_or_fail())

    def _refilled(self, result: tuple[int, int] | Failure) -> None:
        self._refill = None
        if isinstance(result, tuple):
            self._next, self._end = result
            log.info("reserved producer ids %d..%d", *result)
        else:
            log.warning("cannot reserve producer ids: %s", result.getErrorMessage())

    def _take_or_fail(self) -> int:
        if self._next <= self._end:
            return self._take()
        raise error_for(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no producer id block")

    def _take(self) -> int:
        producer_id = self._next
        self._next += 1
        return producer_id
