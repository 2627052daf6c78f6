"""InitProducerId: hand out producer ids, unique across the cluster, for idempotent producers.

Like ZooKeeper-mode Kafka, brokers reserve blocks of ids in
``/latest_producer_id_block`` with a conditional setData (so two brokers never
get the same block) and hand them out one by one; a block is fetched from
ZooKeeper on a worker thread only when the current one runs out. Transactions
are not supported: a transactional id gets an error.

With an authorizer, an idempotent producer needs IdempotentWrite on the
cluster or Write on some topic (Kafka 2.8+), else CLUSTER_AUTHORIZATION_FAILED;
a transactional one needs Write on its transactional id.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.apis.transactions import TRANSACTIONS_REFUSED
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"


def reserve_block(zk: Any, broker_id: int, size: int) -> tuple[int, int]:
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


class InitProducerIdHandler:
    """ApiKey.INIT_PRODUCER_ID: the next id of this broker's reserved block."""

    def __init__(self, zookeeper: ZooKeeperHandle, reactor: Reactor, broker_id: int,
                 block_size: int, authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
        self.zookeeper = zookeeper
        self.reactor = reactor
        self.broker_id = broker_id
        self.block_size = block_size
        self._next = 0
        self._end = -1
        self._refill: defer.Deferred | None = None

    def __call__(self, context: RequestContext, request: Any) -> dict | defer.Deferred:
        refused = self._refused(context, request.transactional_id)
        if refused is not None:
            return self._answer(refused)
        if request.transactional_id is not None:
            log.info("InitProducerId with transactional id %r refused: no transactions",
                     request.transactional_id)
            return self._answer(TRANSACTIONS_REFUSED)
        if self._next <= self._end:
            return self._take()
        zk = self.zookeeper()
        if zk is None:
            return self._answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._refill is None:
            self._refill = in_worker_thread(
                self.reactor, reserve_block, zk,
                self.broker_id, self.block_size)
            self._refill.addBoth(self._refilled)
        waiter: defer.Deferred = defer.Deferred()

        def wake(result: Any) -> Any:
            waiter.callback(None)
            return result

        self._refill.addBoth(wake)
        return waiter.addCallback(lambda _: self._take() if self._next <= self._end
                                  else self._answer(ErrorCode.COORDINATOR_NOT_AVAILABLE))

    def _refused(self, context: RequestContext, transactional_id: str | None
                 ) -> ErrorCode | None:
        authorizer = self.authorizer
        if transactional_id is not None:
            if authorizer.authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                    transactional_id):
                return None
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if (authorizer.authorize(context, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                                 CLUSTER_NAME)
                or authorizer.authorize_any(context, AclOperation.WRITE, ResourceType.TOPIC)):
            return None
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    def _refilled(self, result: Any) -> None:
        self._refill = None
        if isinstance(result, tuple):
            self._next, self._end = result
            log.info("reserved producer ids %d..%d", *result)
        else:
            log.warning("cannot reserve producer ids: %s", result.getErrorMessage())

    def _take(self) -> dict:
        producer_id = self._next
        self._next += 1
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "producer_id": producer_id, "producer_epoch": 0}

    @staticmethod
    def _answer(code: ErrorCode) -> dict:
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1,
                "producer_epoch": -1}
