"""Connecting to ZooKeeper: ``host:port[,host:port...][/chroot]``, chroot created if absent."""

from __future__ import annotations

import contextlib
import re

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError

from simplekafka.coordination.znodes import ZkPaths, encode_controller_epoch

__all__ = [
    "DEFAULT_SESSION_TIMEOUT",
    "ZooKeeperConnectError",
    "connect_zookeeper",
    "ensure_kafka_paths",
    "parse_connect_string",
]

#: Kafka's default zookeeper.session.timeout.ms is 18 s; tests pass much less.
DEFAULT_SESSION_TIMEOUT = 18.0

_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})")
_CHROOT = re.compile(r"(/[A-Za-z0-9._-]+)+")


class ZooKeeperConnectError(ConnectionError):
    """ZooKeeper could not be reached, or the connect string is malformed."""


def parse_connect_string(connect_string: str) -> tuple[str, str | None]:
    """Split ``"h1:p1,h2:p2/chroot"`` into ``("h1:p1,h2:p2", "/chroot")``; validate both."""
    if not isinstance(connect_string, str) or not connect_string.strip():
        raise ZooKeeperConnectError("empty ZooKeeper connect string (want host:port[/chroot])")
    text = connect_string.strip()
    slash = text.find("/")
    hosts, chroot = (text, None) if slash < 0 else (text[:slash], text[slash:].rstrip("/"))
    for host_port in hosts.split(","):
        match = _HOST_PORT.fullmatch(host_port)
        if not match or not 0 < int(match.group(2)) < 65536:
            raise ZooKeeperConnectError(
                f"bad ZooKeeper address {host_port!r} in {connect_string!r} "
                "(want host:port[,host:port...][/chroot])"
            )
    if chroot is not None and chroot != "" and not _CHROOT.fullmatch(chroot):
        raise ZooKeeperConnectError(f"bad chroot {chroot!r} in {connect_string!r}")
    return hosts, chroot or None


def connect_zookeeper(connect_string: str, timeout: float = 15.0,
                      session_timeout: float = DEFAULT_SESSION_TIMEOUT) -> KazooClient:
    """A started KazooClient for ``connect_string``; the chroot is created if absent.

    Raises ZooKeeperConnectError (one clear sentence) when nothing answers
    within ``timeout`` seconds. The caller owns the client: ``client.stop()``
    and ``client.close()`` when done.
    """
    hosts, chroot = parse_connect_string(connect_string)
    if chroot:
        root = _start(hosts, timeout, session_timeout, connect_string)
        try:
            root.ensure_path(chroot)
        finally:
            root.stop()
            root.close()
    return _start(hosts + (chroot or ""), timeout, session_timeout, connect_string)


def _start(hosts: str, timeout: float, session_timeout: float, shown: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=session_timeout)
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.stop()
        client.close()
        raise ZooKeeperConnectError(
            f"could not reach ZooKeeper at {shown} within {timeout:g} s "
            "(is it running? `simplekafka zk start` starts one)"
        ) from None
    return client


def ensure_kafka_paths(zk: KazooClient) -> None:
    """Create the persistent parents Kafka brokers create at startup, and ``/controller_epoch``.

    ``/controller_epoch`` starts at "0" so that the first controller gets epoch 1.
    """
    for path in ZkPaths.PERSISTENT_PATHS:
        zk.ensure_path(path)
    if not zk.exists(ZkPaths.CONTROLLER_EPOCH):
        with contextlib.suppress(NodeExistsError):  # another broker was quicker: fine
            zk.create(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(0))
