"""Connecting to ZooKeeper: ``host:port[,host:port...][/chroot]``, chroot created if absent."""

from __future__ import annotations

import contextlib
import enum
import math
import re
import select
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler

from simplekafka.coordination.zk_security import (
    JAAS_PROPERTY,
    KafkaAclKazooClient,
    ZooKeeperLoginError,
    zookeeper_login,
)
from simplekafka.coordination.znodes import ZkPaths, encode_controller_epoch

__all__ = [
    "DEFAULT_SESSION_TIMEOUT",
    "PollingHandler",
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


class _Login(enum.Enum):
    FROM_KAFKA_OPTS = "the login KAFKA_OPTS names"


_FROM_KAFKA_OPTS = _Login.FROM_KAFKA_OPTS


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


Selectable = int | _HasFileno  # what select() waits on: a descriptor or a socket


def connect_zookeeper(connect_string: str, timeout: float = 15.0,
                      session_timeout: float = DEFAULT_SESSION_TIMEOUT,
                      login: tuple[str, str] | _Login | None = _FROM_KAFKA_OPTS,
                      secure_acls: bool | None = None) -> KazooClient:
    """A started KazooClient for ``connect_string``; the chroot is created if absent.

    ``login`` is the SASL (DIGEST-MD5) username and password; by default the
    one ``KAFKA_OPTS`` names, as for every ZooKeeper client of a Kafka process
    (:func:`~simplekafka.coordination.zk_security.zookeeper_login`).
    ``secure_acls`` makes every znode this client creates carry Kafka's ACLs
    (a broker passes its ``zookeeper.set.acl``; by default, whenever there is a
    login, as Kafka's admin tools do).

    Raises ZooKeeperConnectError (one clear sentence) when nothing answers
    within ``timeout`` seconds, or the login is refused. The caller owns the
    client: ``client.stop()`` and ``client.close()`` when done.
    """
    hosts, chroot = parse_connect_string(connect_string)
    if login is _Login.FROM_KAFKA_OPTS:
        try:
            login = zookeeper_login()
        except ZooKeeperLoginError as exc:
            raise ZooKeeperConnectError(str(exc)) from None
    secure = bool(login) if secure_acls is None else secure_acls
    if secure and not login:
        raise ZooKeeperConnectError(
            "zookeeper.set.acl is true, but there is no ZooKeeper login: name a JAAS file with "
            f"a Client section in KAFKA_OPTS (-D{JAAS_PROPERTY}=...)")
    if chroot:
        root = _start(hosts, timeout, session_timeout, connect_string, login, secure)
        try:
            root.ensure_path(chroot)
        finally:
            root.stop()
            root.close()
    return _start(hosts + (chroot or ""), timeout, session_timeout, connect_string, login,
                  secure)


_READABLE = select.POLLIN | select.POLLPRI
_WRITABLE = select.POLLOUT
_BROKEN = select.POLLERR | select.POLLHUP | select.POLLNVAL  # ready for both, as select says


class PollingHandler(SequentialThreadingHandler):
    """kazoo's threading handler, its waits made with one poll(2) call each.

    kazoo's I/O thread waits before every request it writes and every response it
    reads (three or four waits per request), and its own ``select`` builds a fresh
    epoll instance for each (create, register, wait, close). With thousands of
    pipelined requests (a controller loading 10,000 partition states) that was a
    third of the CPU per request. poll, like epoll, has no limit on descriptor
    numbers (a broker with thousands of segments opens descriptors above 1,024,
    which ``select.select`` refuses).
    """

    def select(self, rlist: list[Selectable], wlist: list[Selectable], xlist: list[Selectable],
               timeout: float | None = None
               ) -> tuple[list[Selectable], list[Selectable], list[Selectable]]:
        poller = select.poll()
        wanted: dict[int, int] = {}
        objects: dict[int, list[tuple[int, Selectable]]] = {}
        for flags, group in ((_READABLE, rlist), (_WRITABLE, wlist)):
            for obj in group:
                fd = obj if isinstance(obj, int) else obj.fileno()
                wanted[fd] = wanted.get(fd, 0) | flags
                objects.setdefault(fd, []).append((flags, obj))
        for fd, flags in wanted.items():
            poller.register(fd, flags)
        wait_ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
        readable: list[Selectable] = []
        writable: list[Selectable] = []
        for fd, events in poller.poll(wait_ms):
            for flags, obj in objects.get(fd, ()):
                if events & (flags | _BROKEN):
                    (readable if flags == _READABLE else writable).append(obj)
        return readable, writable, []


def _start(hosts: str, timeout: float, session_timeout: float, shown: str,
           login: tuple[str, str] | None = None, secure: bool = False) -> KazooClient:
    kind = KafkaAclKazooClient if secure else KazooClient
    sasl = None if login is None else {
        "mechanism": "DIGEST-MD5", "username": login[0], "password": login[1]}
    client = kind(hosts=hosts, timeout=session_timeout, handler=PollingHandler(),
                  sasl_options=sasl)
    try:
        client.start(timeout=timeout)
        if login is not None:
            client.exists("/")  # the SASL exchange ends after start(): a refusal shows here
    except KazooTimeoutError:
        client.stop()
        client.close()
        raise ZooKeeperConnectError(
            f"could not reach ZooKeeper at {shown} within {timeout:g} s "
            "(is it running? `simplekafka zk start` starts one)"
        ) from None
    except AuthFailedError:
        client.stop()
        client.close()
        raise ZooKeeperConnectError(
            f"ZooKeeper at {shown} refused the login of {login[0] if login else 'nobody'!r} "
            "(check the Client section of the JAAS file KAFKA_OPTS names)") from None
    return client


def ensure_kafka_paths(zk: KazooClient) -> None:
    """Create the persistent parents Kafka brokers create at startup, and ``/controller_epoch``.

    ``/controller_epoch`` starts at "0" so that the first controller gets epoch 1.
    A client that puts Kafka's ACLs on what it creates (``zookeeper.set.acl``)
    also creates the roots of the credentials and the ACLs.
    """
    secured = ZkPaths.SECURED_ROOT_PATHS if isinstance(zk, KafkaAclKazooClient) else ()
    for path in (*ZkPaths.PERSISTENT_PATHS, *secured):
        zk.ensure_path(path)
    if not zk.exists(ZkPaths.CONTROLLER_EPOCH):
        with contextlib.suppress(NodeExistsError):  # another broker was quicker: fine
            zk.create(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(0))
