"""Config changes take effect without a restart: each broker follows ``/config/changes``.

Kafka's ZooKeeper-mode brokers run a ConfigChangeListener: a child watch on
``/config/changes``; each new ``config_change_<seq>`` names an entity
(``topics/<t>``, ``brokers/<id>``, ``brokers/<default>``, ``users/<name>``,
``users/<name>/clients/<id>``, ``clients/<id>``) whose config the broker rereads and
applies (users' SCRAM credentials, client quotas). Here a topic's new overrides replace the broker's
copy (``topic_configs``, read per request for ``min.insync.replicas``) and are
pushed into each local log of the topic (``Log.update_config``: retention,
``max.message.bytes``, segment sizes); dynamic broker configs (the cluster
default, then this broker's own) become the broker's log defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from simplekafka.coordination.client_quotas import CLIENTS, config_location, list_entities
from simplekafka.coordination.configs import (
    BROKERS,
    DEFAULT_BROKER,
    TOPICS,
    read_change,
    read_entity_config,
)
from simplekafka.coordination.notifications import NotificationListener
from simplekafka.coordination.users import USERS, user_znodes
from simplekafka.coordination.znodes import ZkPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

# ConfigSource numbers (as DescribeConfigs answers them)
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3

Apply = Callable[[str, str, dict], None]


class ConfigChangeListener:
    """Watches ``/config/changes`` and calls ``apply(entity_type, name, config)`` on the
    reactor (through ``call_soon``) for every entity named by a notification not seen yet.
    Notifications older than 15 minutes are purged (``coordination.notifications``)."""

    def __init__(self, zk: KazooClient, broker_id: int, call_soon: Callable[..., object],
                 apply: Apply):
        self.zk = zk
        self.broker_id = broker_id
        self.call_soon = call_soon
        self.apply = apply
        self.notifications = NotificationListener(zk, ZkPaths.CONFIG_CHANGES, self._changed)

    def start(self) -> None:
        self.zk.ensure_path(ZkPaths.CONFIG_CHANGES)
        # Current dynamic broker configs first: a broker starting after a change
        # must not wait for the next one.
        for name in (DEFAULT_BROKER, str(self.broker_id)):
            self.call_soon(self.apply, BROKERS, name, read_entity_config(self.zk, BROKERS, name))
        for user in user_znodes(self.zk):  # SCRAM credentials (security/credentials.py)
            self.call_soon(self.apply, USERS, user, read_entity_config(self.zk, USERS, user))
        for entity in list_entities(self.zk):  # client quotas (client_quotas.py)
            if entity[0] is None or entity[1] is not None:  # users/<u> were read just above
                entity_type, name = config_location(entity)
                self.call_soon(self.apply, entity_type, name,
                               read_entity_config(self.zk, entity_type, name))
        self.notifications.start()

    def stop(self) -> None:
        self.notifications.stop()

    def _changed(self, child: str) -> None:
        found = read_change(self.zk, child)
        if found is None:
            return
        entity_type, name = found
        if entity_type not in (TOPICS, BROKERS, USERS, CLIENTS):
            return
        config = read_entity_config(self.zk, entity_type, name)
        self.call_soon(self.apply, entity_type, name, config)


class DynamicBrokerConfig:
    """This broker's dynamic overrides: the cluster default, then its own on top."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.default: dict[str, str] = {}
        self.own: dict[str, str] = {}

    def update(self, name: str, config: dict[str, str]) -> bool:
        """Take a changed entity's config; whether it concerns this broker."""
        if name == DEFAULT_BROKER:
            self.default = dict(config)
        elif name == str(self.broker_id):
            self.own = dict(config)
        else:
            return False
        return True

    def value(self, key: str) -> str | None:
        """One key's value as ``effective`` has it, without building the whole dict (read on
        every acks=all produce: min.insync.replicas)."""
        value = self.own.get(key)
        return value if value is not None else self.default.get(key)

    def effective(self) -> dict[str, tuple[str, int]]:
        """key -> (value, ConfigSource)."""
        merged = {k: (v, DYNAMIC_DEFAULT_BROKER_CONFIG) for k, v in self.default.items()}
        merged.update({k: (v, DYNAMIC_BROKER_CONFIG) for k, v in self.own.items()})
        return merged
