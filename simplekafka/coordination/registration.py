"""Broker registration: the ephemeral ``/brokers/ids/<id>`` znode and the cluster id.

A broker is "alive" exactly while its registration znode exists, that is while
its ZooKeeper session lives. The znode's czxid (the id of the transaction that
created it) is the broker epoch: a broker that comes back, even under the same
id, has a larger one, which is how the controller tells a bounce from nothing.
"""

from __future__ import annotations

import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from simplekafka.coordination.znodes import BrokerInfo, ClusterId, ZkPaths

__all__ = ["BrokerIdInUseError", "BrokerRegistration", "ensure_cluster_id"]


class BrokerIdInUseError(RuntimeError):
    """Another live session holds ``/brokers/ids/<id>``."""


def ensure_cluster_id(zk: KazooClient) -> str:
    """The cluster id, creating ``/cluster/id`` if this is the first broker ever."""
    try:
        data, _stat = zk.get(ZkPaths.CLUSTER_ID)
        return ClusterId.from_json(data).id
    except NoNodeError:
        pass
    zk.ensure_path("/cluster")
    candidate = ClusterId.generate()
    try:
        zk.create(ZkPaths.CLUSTER_ID, candidate.to_json())
        return candidate.id
    except NodeExistsError:  # another broker won the race: use its id
        data, _stat = zk.get(ZkPaths.CLUSTER_ID)
        return ClusterId.from_json(data).id


class BrokerRegistration:
    """Registers one broker; ``register()`` again after a session expiry.

    ``stale_wait`` bounds how long ``register()`` waits for a leftover znode of
    an earlier session of this broker (a crash and quick restart) to expire.
    """

    def __init__(self, zk: KazooClient, broker_id: int, host: str, port: int,
                 rack: str | None = None, stale_wait: float | None = None,
                 endpoints: tuple[tuple[str, str, int], ...] = (),
                 security_protocols: tuple[tuple[str, str], ...] = ()):
        if not isinstance(broker_id, int) or broker_id < 0:
            raise ValueError(f"broker id must be a non-negative integer, got {broker_id!r}")
        self.zk = zk
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.rack = rack
        self.endpoints = endpoints  # every listener (name, host, port); () = one PLAINTEXT
        self.security_protocols = security_protocols
        self.stale_wait = stale_wait
        self.epoch: int | None = None  # czxid of our current registration znode
        self.cluster_id: str | None = None

    @property
    def path(self) -> str:
        return ZkPaths.broker(self.broker_id)

    def info(self) -> BrokerInfo:
        listener = self.endpoints[0][0] if self.endpoints else "PLAINTEXT"
        return BrokerInfo(self.broker_id, self.host, self.port, self.rack, listener=listener,
                          endpoints=self.endpoints if len(self.endpoints) > 1 else (),
                          security_protocols=self.security_protocols)

    def register(self) -> int:
        """Create the ephemeral znode (waiting out a stale one); returns the broker epoch."""
        self.cluster_id = ensure_cluster_id(self.zk)
        self.zk.ensure_path(ZkPaths.BROKER_IDS)
        deadline = time.monotonic() + self._stale_wait()
        while True:
            try:
                _path, stat = self.zk.create(self.path, self.info().to_json(), ephemeral=True,
                                             include_data=True)
                self.epoch = stat.czxid
                return self.epoch
            except NodeExistsError:
                pass
            try:
                _data, stat = self.zk.get(self.path)
            except NoNodeError:
                continue  # it just went away: try again
            if stat.ephemeralOwner == self.zk.client_id[0]:
                # Ours already: a create that was retried after a lost connection.
                self.epoch = stat.czxid
                return self.epoch
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._wait_for_deletion(remaining):
                raise BrokerIdInUseError(
                    f"broker id {self.broker_id} is registered by another live session "
                    f"(znode {self.path}); is another broker running with this id?"
                )

    def _stale_wait(self) -> float:
        if self.stale_wait is not None:
            return self.stale_wait
        # A stale znode lives at most one session timeout (we assume the old session
        # had the same timeout as ours), plus a little for ZooKeeper's tick.
        return self.zk._session_timeout / 1000.0 + 2.0

    def _wait_for_deletion(self, timeout: float) -> bool:
        gone = threading.Event()

        def on_change(event: object) -> None:
            gone.set()

        if self.zk.exists(self.path, watch=on_change) is None:
            return True
        return gone.wait(timeout) or self.zk.exists(self.path) is None

    def deregister(self) -> None:
        """Delete our znode (a clean shutdown); other sessions' znodes are left alone."""
        try:
            _data, stat = self.zk.get(self.path)
        except NoNodeError:
            return
        if stat.ephemeralOwner == self.zk.client_id[0]:
            try:
                self.zk.delete(self.path, version=stat.version)
            except NoNodeError:
                pass
        self.epoch = None
