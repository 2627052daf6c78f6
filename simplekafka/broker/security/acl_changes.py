"""Keeps a broker's authorizer in step with the ACLs in ZooKeeper, without a restart.

At start-up every stored pattern is read (``coordination.acls.read_all``);
then two notification listeners follow ``/kafka-acl-changes`` (literal
patterns) and ``/kafka-acl-extended-changes`` (prefixed ones). Each
notification names one pattern; the broker rereads that pattern's znode and
replaces its ACLs in the authorizer. As with configs, the authorizer is only
touched on the reactor thread (``call_soon``), so a request never sees half an
update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from simplekafka.broker.security.authorizer import AclAuthorizer
from simplekafka.coordination.acls import (
    decode_change,
    ensure_acl_paths,
    read_all,
    read_entries,
)
from simplekafka.coordination.notifications import NotificationListener
from simplekafka.coordination.znodes import ZkPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class AclChangeFollower:
    """Loads the ACLs into ``authorizer`` and applies every later change."""

    def __init__(self, zk: KazooClient, authorizer: AclAuthorizer,
                 call_soon: Callable[..., object]):
        self.zk = zk
        self.authorizer = authorizer
        self.call_soon = call_soon
        self.listeners = [NotificationListener(zk, path, self._handler(path))
                          for path in (ZkPaths.ACL_CHANGES, ZkPaths.ACL_EXTENDED_CHANGES)]

    def start(self) -> None:
        ensure_acl_paths(self.zk)
        self.call_soon(self.authorizer.replace_all, read_all(self.zk))
        for listener in self.listeners:
            listener.start()

    def stop(self) -> None:
        for listener in self.listeners:
            listener.stop()

    def _handler(self, changes: str) -> Callable[[str], None]:
        return lambda child: self._changed(changes, child)

    def _changed(self, changes: str, child: str) -> None:
        data, _stat = self.zk.get(f"{changes}/{child}")
        pattern = decode_change(changes, data)
        entries, _version = read_entries(self.zk, pattern)
        self.call_soon(self.authorizer.update, pattern, entries)
