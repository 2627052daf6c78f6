"""Change notifications on a real ZooKeeper: followed in order, applied, and purged after
15 minutes (Kafka's ``ZkNodeChangeNotificationListener``), for configs and for ACLs.

The listeners run on kazoo's watch thread and hand work over with ``call_soon``;
here ``call_soon`` runs it at once. The purge age is measured against ZooKeeper's
ctime with the listener's clock, which a test moves 16 minutes ahead.
"""

from __future__ import annotations

import time

import pytest

from simplekafka.broker.config_changes import ConfigChangeListener
from simplekafka.broker.security.acl_changes import AclChangeFollower
from simplekafka.broker.security.authorizer import AclAuthorizer
from simplekafka.coordination.acls import add_entries, remove_matching
from simplekafka.coordination.configs import TOPICS, write_entity_config
from simplekafka.coordination.notifications import CHANGE_EXPIRATION_MS, purge_obsolete
from simplekafka.coordination.processes import wait_until
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

pytestmark = pytest.mark.integration

LATER = CHANGE_EXPIRATION_MS / 1000 + 60  # seconds: past the expiration


def now_soon(function, *args):
    function(*args)


def test_purge_deletes_only_notifications_older_than_15_minutes(zk):
    zk.ensure_path("/changes")
    first = zk.create("/changes/change_", b"1", sequence=True).rsplit("/", 1)[-1]
    second = zk.create("/changes/change_", b"2", sequence=True).rsplit("/", 1)[-1]
    children = zk.get_children("/changes")
    assert purge_obsolete(zk, "/changes", children, time.time() * 1000) == []
    ctime = zk.exists(f"/changes/{second}").ctime
    assert sorted(purge_obsolete(zk, "/changes", [*children, "gone_0000000099"],
                                 ctime + CHANGE_EXPIRATION_MS + 1)) == sorted([first, second])
    assert zk.get_children("/changes") == []


def test_config_changes_are_applied_then_purged_once_old(zk):
    applied = []
    listener = ConfigChangeListener(zk, 1, now_soon,
                                    lambda kind, name, config: applied.append((kind, name,
                                                                               config)))
    listener.start()
    try:
        write_entity_config(zk, TOPICS, "orders", {"retention.ms": "1000"})
        wait_until(lambda: (TOPICS, "orders", {"retention.ms": "1000"}) in applied,
                   "the config change applied", 30)
        assert zk.get_children(ZkPaths.CONFIG_CHANGES)  # young: kept
        listener.notifications.clock = lambda: time.time() + LATER
        write_entity_config(zk, TOPICS, "orders", {"retention.ms": "2000"})
        wait_until(lambda: (TOPICS, "orders", {"retention.ms": "2000"}) in applied,
                   "the second config change applied", 30)
        wait_until(lambda: not zk.get_children(ZkPaths.CONFIG_CHANGES),
                   "/config/changes purged", 30)
    finally:
        listener.stop()


def test_the_acl_follower_loads_applies_and_purges(zk):
    read = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    literal = ResourcePattern(ResourceType.TOPIC, "orders")
    prefixed = ResourcePattern(ResourceType.GROUP, "team-", PatternType.PREFIXED)
    add_entries(zk, literal, [read])  # before the broker starts: loaded at start-up
    authorizer = AclAuthorizer()
    follower = AclChangeFollower(zk, authorizer, now_soon)
    follower.start()

    class Alice:
        principal, peer = "User:alice", "127.0.0.1:1"

    try:
        assert authorizer.authorize(Alice, AclOperation.READ, ResourceType.TOPIC, "orders")
        add_entries(zk, prefixed, [read])
        wait_until(lambda: authorizer.authorize(Alice, AclOperation.READ, ResourceType.GROUP,
                                                "team-a"), "the prefixed ACL applied", 30)
        for listener in follower.listeners:
            listener.clock = lambda: time.time() + LATER
        remove_matching(zk, literal, AclBindingFilter())
        wait_until(lambda: not authorizer.authorize(Alice, AclOperation.READ,
                                                    ResourceType.TOPIC, "orders"),
                   "the removal applied", 30)
        assert not zk.exists("/kafka-acl/Topic/orders")
        wait_until(lambda: not zk.get_children(ZkPaths.ACL_CHANGES),
                   "/kafka-acl-changes purged", 30)
        assert zk.get_children(ZkPaths.ACL_EXTENDED_CHANGES)  # no new one there: kept
    finally:
        follower.stop()
