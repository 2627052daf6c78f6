"""Sequential change notifications, followed and cleaned up as Kafka's brokers do.

Kafka tells every broker "reread this" by creating a persistent sequential
znode (``/config/changes/config_change_<seq>``, ``/kafka-acl-changes/acl_changes_<seq>``)
that each broker's ``ZkNodeChangeNotificationListener`` sees through a child
watch. Each broker handles the notifications newer than the last it handled,
in sequence order, and then deletes those older than 15 minutes
(``changeExpirationMs``), which every broker has long since read; without that
purge the directory would grow by one znode per change forever. Every broker
purges, so a ``NoNodeError`` from a delete just means another was quicker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def sequence_of(child: str) -> int:
    """The sequence number at the end of a sequential znode's name (-1 if none)."""
    try:
        return int(child.rsplit("_", 1)[-1])
    except ValueError:
        return -1


def purge_obsolete(zk: KazooClient, path: str, children: list[str], now_ms: float,
                   expiration_ms: int = CHANGE_EXPIRATION_MS) -> list[str]:
    """Delete the notifications under ``path`` created more than ``expiration_ms`` before
    ``now_ms`` (wall-clock milliseconds, as ZooKeeper's ctime); returns the deleted names."""
    deleted = []
    for child in children:
        node = f"{path}/{child}"
        try:
            stat = zk.exists(node)
            if stat is None or stat.ctime + expiration_ms > now_ms:
                continue
            zk.delete(node)
            deleted.append(child)
        except NoNodeError:
            continue  # another broker purged it first
    return deleted


class NotificationListener:
    """Calls ``handle(child)`` (on the watch thread) for every notification under ``path``
    newer than the last one handled, in sequence order; then purges the expired ones."""

    def __init__(self, zk: KazooClient, path: str, handle: Callable[[str], None],
                 expiration_ms: int = CHANGE_EXPIRATION_MS,
                 clock: Callable[[], float] = time.time):
        self.zk = zk
        self.path = path
        self.handle = handle
        self.expiration_ms = expiration_ms
        self.clock = clock
        self._last_seen = -1
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        self.zk.ensure_path(self.path)
        ChildrenWatch(self.zk, self.path, self._children)

    def stop(self) -> None:
        self._stopped = True

    def _children(self, children: list[str]) -> bool:
        if self._stopped:
            return False
        with self._lock:
            for child in sorted(children, key=sequence_of):
                sequence = sequence_of(child)
                if sequence <= self._last_seen:
                    continue
                self._last_seen = sequence
                try:
                    self.handle(child)
                except Exception as exc:  # a bad notification must not stop the others
                    log.warning("notification %s/%s unreadable: %s", self.path, child, exc)
            try:
                purge_obsolete(self.zk, self.path, children, self.clock() * 1000,
                               self.expiration_ms)
            except Exception as exc:
                log.warning("purging old notifications under %s failed: %s", self.path, exc)
        return True
