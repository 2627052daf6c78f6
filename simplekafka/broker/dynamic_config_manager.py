"""Config changes from ZooKeeper, applied (Kafka's ``DynamicConfigManager`` and its handlers).

Kafka's ZooKeeper-mode broker runs a ``DynamicConfigManager``: it follows
``/config/changes`` and hands each changed entity to its handler
(``TopicConfigHandler``, ``BrokerConfigHandler``, ``UserConfigHandler``,
``ClientIdConfigHandler``). Ours does the same with ``ConfigChangeListener``
(``config_changes.py``) as the follower and ``apply`` as the handlers: client
quotas to ``ClientQuotas``, users' SCRAM credentials to the credential cache,
a topic's overrides to the broker's copy (read per request for
``min.insync.replicas``) and to each local log of the topic, dynamic broker
configs (the cluster default, then this broker's own) to the log defaults and
the replication throttle rates.

The service starts once ZooKeeper is connected (it reads the current dynamic
configs first) and stops following at shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from twisted.application import service

from simplekafka.broker.config import redacted
from simplekafka.broker.config_changes import ConfigChangeListener, DynamicBrokerConfig
from simplekafka.broker.replication_quota import (
    FOLLOWER_RATE,
    LEADER_RATE,
    ReplicationThrottle,
    ThrottleConfigError,
    parse_rate,
)
from simplekafka.coordination.configs import desanitize
from simplekafka.coordination.users import USERS
from simplekafka.storage import LogConfig, LogManager

if TYPE_CHECKING:
    from simplekafka.broker.client_quotas import ClientQuotas
    from simplekafka.broker.collaborators import Reactor, ZooKeeperHandle
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.security.credentials import ScramCredentialCache

log = logging.getLogger(__name__)


class DynamicConfigManager(service.Service):
    """The broker's dynamic configuration: what ZooKeeper says now, applied where it acts.

    ``dynamic_log_keys`` maps each dynamic broker key that is a log default to
    its topic key (``log.retention.ms`` -> ``retention.ms``).
    """

    def __init__(self, config: BrokerConfig, reactor: Reactor, zookeeper: ZooKeeperHandle,
                 log_manager: LogManager, static_log_config: LogConfig,
                 dynamic_log_keys: Mapping[str, str], client_quotas: ClientQuotas,
                 credentials: ScramCredentialCache) -> None:
        self.setName("dynamic-config-manager")
        self.config = config
        self.broker_id = config.broker_id
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.log_manager = log_manager
        self.static_log_config = static_log_config
        self.log_config = static_log_config  # plus dynamic broker configs
        self.dynamic_log_keys = dynamic_log_keys
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.dynamic_config = DynamicBrokerConfig(self.broker_id)
        self.client_quotas = client_quotas
        self.credentials = credentials
        # (leader, follower), set by the wiring: they read this manager's topic configs.
        self.throttles: tuple[ReplicationThrottle, ReplicationThrottle] | None = None
        self.listener: ConfigChangeListener | None = None

    # -- the service ----------------------------------------------------------------------

    def startService(self) -> None:
        service.Service.startService(self)
        self.listener = ConfigChangeListener(self.zookeeper(), self.broker_id,
                                             self.reactor.callFromThread, self.apply)
        self.listener.start()

    def stopService(self) -> None:
        service.Service.stopService(self)
        if self.listener is not None:
            self.listener.stop()

    # -- what the rest of the broker reads ------------------------------------------------

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's overrides from ZooKeeper (as last read; {} if none)."""
        return self.topic_configs.get(topic, {})

    def min_insync_replicas_for(self, topic: str) -> int:
        """min.insync.replicas for ``topic``: its override, else the broker's."""
        overrides = self.topic_configs.get(topic)
        value = overrides.get("min.insync.replicas") if overrides else None
        if value is None:
            value = self.dynamic_config.value("min.insync.replicas")
        return int(value) if value is not None else self.config.min_insync_replicas

    def log_config_for(self, topic: str) -> LogConfig:
        overrides = self.topic_configs.get(topic)
        if not overrides:
            return self.log_config
        try:
            return LogConfig.from_kafka(overrides, base=self.log_config)
        except ValueError as exc:
            log.warning("topic %s: bad config override ignored (%s)", topic, exc)
            return self.log_config

    def deletes_by_retention(self, topic: str) -> bool:
        """Whether ``cleanup.policy`` (the topic's, else the broker's, dynamic or static)
        includes ``delete``: a compact-only topic loses no segment to retention, as in Kafka."""
        return self.log_config_for(topic).deletes

    # -- the handlers ---------------------------------------------------------------------

    def apply(self, entity_type: str, name: str, config: dict[str, str]) -> None:
        """A ``/config/changes`` notification (config_changes.py): apply it to the logs
        (topics, brokers) or to the SCRAM credentials (users)."""
        if self.client_quotas.update(entity_type, name, config):
            return  # a quota-only entity (users/<u>/clients/<c>, clients/<c>)
        if entity_type == USERS:  # the znode's name is the user's, sanitized
            self.credentials.update(desanitize(name), config)
            log.info("SCRAM credentials of user %s updated", desanitize(name))
            return
        if entity_type == "topics":
            self.topic_configs[name] = dict(config)
            topics = {name}
        elif self.dynamic_config.update(name, config):
            self.apply_throttle_rates()
            dynamic = {self.dynamic_log_keys[k]: v for k, (v, _s) in
                       self.dynamic_config.effective().items() if k in self.dynamic_log_keys}
            try:
                self.log_config = LogConfig.from_kafka(dynamic, base=self.static_log_config)
            except ValueError as exc:
                log.warning("dynamic broker config ignored (%s)", exc)
                return
            topics = None
        else:
            return
        for topic, index in self.log_manager.partitions():
            if topics is None or topic in topics:
                found = self.log_manager.get(topic, index)
                if found is not None:
                    found.update_config(self.log_config_for(topic))
        log.info("config of %s/%s applied: %s", entity_type, name,
                 config if entity_type == "topics" else redacted(config))

    def apply_throttle_rates(self) -> None:
        """Throttled rates: the dynamic value (own, then cluster default), else the static."""
        if self.throttles is None:
            return
        dynamic = self.dynamic_config.effective()
        for throttle, key in zip(self.throttles, (LEADER_RATE, FOLLOWER_RATE)):
            value = dynamic[key][0] if key in dynamic else self.config[key]
            try:
                throttle.quota.set_rate(parse_rate(value))
            except ThrottleConfigError as exc:
                log.warning("%s ignored (%s)", key, exc)
