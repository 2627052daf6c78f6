"""The broker's ZooKeeper session as a service (Kafka's ``KafkaZkClient``, its start and close).

Starting connects (kazoo blocks) on a daemon thread of its own, not the
reactor's pool: a SIGTERM while ZooKeeper is still unreachable must not wait
for the connection attempt to time out. The session is then checked for
Kafka's paths, the cluster id read (or made), and the session published for
the fault-injection tests. Stopping closes the session, bounded: ZooKeeper may
be gone by then. ``bounded`` is the one way every shutdown step that talks to
ZooKeeper waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from twisted.application import service
from twisted.internet import defer, threads
from twisted.python.failure import Failure

from simplekafka.coordination.connection import connect_zookeeper, ensure_kafka_paths
from simplekafka.coordination.registration import ensure_cluster_id
from simplekafka.coordination.session_file import publish_session

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from twisted.internet.interfaces import IReactorFromThreads, IReactorTime

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.config import BrokerConfig

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Shutdown waits at most this long (seconds) for each ZooKeeper step.
ZOOKEEPER_STOP_TIMEOUT = 5.0


class ZooKeeperClient(service.Service):
    """``zk`` is the kazoo client once started (None before and after)."""

    def __init__(self, config: BrokerConfig, reactor: Reactor) -> None:
        self.setName("zookeeper")
        self.config = config
        self.reactor = reactor
        self.zk: KazooClient | None = None
        self.cluster_id: str | None = None
        self._stopped = False

    def startService(self) -> defer.Deferred:
        service.Service.startService(self)
        self._stopped = False
        return _in_daemon_thread(self.reactor, self._connect).addCallback(self._connected)

    def _connect(self) -> KazooClient:
        timeout_ms = (self.config["zookeeper.connection.timeout.ms"]
                      or self.config["zookeeper.session.timeout.ms"])
        zk = connect_zookeeper(self.config.zookeeper_connect, timeout=timeout_ms / 1000.0,
                               session_timeout=self.config["zookeeper.session.timeout.ms"]
                               / 1000.0, secure_acls=self.config["zookeeper.set.acl"])
        ensure_kafka_paths(zk)
        self.cluster_id = ensure_cluster_id(zk)
        publish_session(zk)  # only when SIMPLEKAFKA_ZK_SESSION_FILE is set (fault-injection tests)
        return zk

    def _connected(self, zk: KazooClient) -> None:
        if self._stopped:  # stopped while connecting: the late session is closed, not used
            self.reactor.getThreadPool().callInThread(close_zookeeper, zk)
            return
        self.zk = zk

    @property
    def connected(self) -> bool:
        return self.zk is not None and self.zk.connected

    def stopService(self) -> defer.Deferred | None:
        service.Service.stopService(self)
        self._stopped = True
        if self.zk is None:
            return None
        zk, self.zk = self.zk, None  # the broker sees no session from here on
        return self.bounded(threads.deferToThreadPool(
            cast("IReactorFromThreads", self.reactor), self.reactor.getThreadPool(),
            close_zookeeper, zk),
            "closing the ZooKeeper session", connected=False)

    def bounded(self, work: defer.Deferred, what: str,
                connected: bool | None = None) -> defer.Deferred:
        """Wait for ZooKeeper work at shutdown, but not forever (ZooKeeper may be gone)."""
        if connected is None:
            connected = self.connected
        work.addTimeout(ZOOKEEPER_STOP_TIMEOUT if connected else 1.0,
                        cast("IReactorTime", self.reactor))

        def give_up(failure: Failure) -> None:
            log.warning("%s at shutdown failed: %s", what, failure.getErrorMessage())

        return work.addErrback(give_up)


def _in_daemon_thread(reactor: Reactor, fn: Callable[[], _T]) -> defer.Deferred[_T]:
    """Run blocking ``fn`` on its own daemon thread; the result arrives on the reactor."""
    result: defer.Deferred[_T] = defer.Deferred()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the reactor as a failure
            reactor.callFromThread(result.errback, exc)
        else:
            reactor.callFromThread(result.callback, value)

    threading.Thread(target=run, daemon=True, name="zookeeper-connect").start()
    return result


def close_zookeeper(zk: KazooClient) -> None:
    try:
        zk.stop()
        zk.close()
    except Exception as exc:
        log.warning("closing the ZooKeeper session: %s", exc)
