"""Offsets in ZooKeeper: where OffsetCommit v0 writes and OffsetFetch v0 reads.

Before Kafka 0.8.2 consumers kept their positions in ZooKeeper, one znode per
partition: ``/consumers/<group>/offsets/<topic>/<partition>`` holding the
offset as decimal text. Version 0 of OffsetCommit and OffsetFetch still means
exactly that in Kafka 3.9 (ZooKeeper mode): the broker writes and reads these
znodes, not ``__consumer_offsets``, so a v0 commit is invisible to v1+ fetches
and the reverse. No metadata and no leader epoch are kept.

Blocking kazoo calls: the broker runs them on a worker thread.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from simplekafka.coordination.znodes import ZkPaths, ZnodeFormatError


def set_consumer_offset(zk: KazooClient, group: str, topic: str, partition: int,
                        offset: int) -> None:
    """Write ``offset`` for the group's partition, creating the znode (and its parents)."""
    path = ZkPaths.consumer_offset(group, topic, partition)
    data = str(offset).encode()
    try:
        zk.set(path, data)
    except NoNodeError:
        zk.create(path, data, makepath=True)


def get_consumer_offset(zk: KazooClient, group: str, topic: str, partition: int
                        ) -> int | None:
    """The offset the group committed for the partition in ZooKeeper, or None."""
    path = ZkPaths.consumer_offset(group, topic, partition)
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    try:
        return int(data.decode())
    except (UnicodeDecodeError, ValueError):
        raise ZnodeFormatError(f"{path}: expected an offset as decimal text, "
                               f"got {data[:40]!r}") from None
