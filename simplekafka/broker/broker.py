"""KafkaBroker: the storage, ZooKeeper, controller and request handlers, put together.

Start-up follows Kafka's order: open (and if needed recover) the logs, bind the
listener, connect to ZooKeeper, register under ``/brokers/ids`` and take part
in the controller election. The broker is ready when the controller's
UpdateMetadata names it and a live controller; client requests that arrive
before are held until then (``readiness.py``), so no client ever sees a
cluster without this broker or a controller. Shutdown (SIGTERM) is the reverse: stop accepting
requests, resign and deregister, checkpoint high watermarks, close the logs
(fsync and the clean-shutdown marker), close the ZooKeeper session.

ZooKeeper work runs on worker threads (kazoo blocks) and on the election's
event thread; results come back to the reactor with ``callFromThread``. The
reactor thread itself only does short things: decode, append, read, encode.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import NodeExistsError
from twisted.internet import defer, task, threads

from simplekafka.broker.apis import KafkaApis
from simplekafka.broker.apis.acls import AclApis
from simplekafka.broker.apis.client_quotas import ClientQuotaApis
from simplekafka.broker.apis.cluster import DescribeClusterHandler
from simplekafka.broker.apis.configs import DYNAMIC_BROKER_KEYS, ConfigApis
from simplekafka.broker.apis.elect_leaders import ElectLeadersHandler
from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.apis.groups import GroupApis
from simplekafka.broker.apis.inter_broker import InterBrokerHandlers
from simplekafka.broker.apis.log_dirs import DescribeLogDirsHandler
from simplekafka.broker.apis.metadata import ApiVersionsHandler, MetadataHandler
from simplekafka.broker.apis.offsets import (
    DeleteRecordsHandler,
    ListOffsetsHandler,
    OffsetForLeaderEpochHandler,
)
from simplekafka.broker.apis.partitions import CreatePartitionsHandler
from simplekafka.broker.apis.produce import ProduceHandler
from simplekafka.broker.apis.producer_ids import InitProducerIdHandler
from simplekafka.broker.apis.reassignments import (
    AlterPartitionReassignmentsHandler,
    ListPartitionReassignmentsHandler,
)
from simplekafka.broker.apis.topics import TopicAdmin
from simplekafka.broker.apis.transaction_tools import TransactionToolApis
from simplekafka.broker.apis.transactions import TransactionApis
from simplekafka.broker.apis.txn_markers import WriteTxnMarkersHandler
from simplekafka.broker.client_quotas import ClientQuotas
from simplekafka.broker.config import BrokerConfig, redacted
from simplekafka.broker.config_changes import ConfigChangeListener, DynamicBrokerConfig
from simplekafka.broker.connection_quotas import ConnectionQuotas
from simplekafka.broker.controller import (
    CONTROLLED_SHUTDOWN_PATH,
    Controller,
    read_topic_config,
)
from simplekafka.broker.controller.auto_reassign import AutoReassignSettings
from simplekafka.broker.controller.channel import ControllerChannel
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.broker.fetch_session import FetchSessionCache
from simplekafka.broker.group.coordinator import GroupCoordinator
from simplekafka.broker.isr import IsrChangeNotifier, write_isr, write_isr_change_notification
from simplekafka.broker.log_cleaner import LogCleaner
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.metrics import install as install_metrics
from simplekafka.broker.readiness import ReadinessGate
from simplekafka.broker.replica_fetcher import FetchSettings, ReplicaFetcherManager
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.broker.replica_selector import replica_selector
from simplekafka.broker.replication_quota import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    ReplicationThrottle,
    ThrottleConfigError,
    parse_rate,
)
from simplekafka.broker.security.acl_changes import AclChangeFollower
from simplekafka.broker.security.authorizer import AclAuthorizer, build_authorizer
from simplekafka.broker.security.credentials import ScramCredentialCache
from simplekafka.broker.security.inter_broker import InterBrokerLogin, own_connection
from simplekafka.broker.security.listeners import PLAINTEXT
from simplekafka.broker.security.sasl import (
    FailedAuthenticationDelay,
    SaslApis,
    SaslServerAuthenticator,
    SaslSettings,
    jaas_for,
    oauthbearer_validator,
    reauth_ms,
)
from simplekafka.broker.security.user_apis import UserScramCredentialApis
from simplekafka.broker.server import KafkaServerFactory
from simplekafka.broker.socket_writer import ZERO_COPY_MIN_BYTES, can_sendfile
from simplekafka.broker.transaction.coordinator import TransactionCoordinator
from simplekafka.broker.transaction.marker_channel import TransactionMarkerChannel
from simplekafka.broker.transaction.producer_ids import ProducerIdManager
from simplekafka.coordination.configs import desanitize
from simplekafka.coordination.users import USERS
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.storage import LogConfig, LogManager

log = logging.getLogger(__name__)

# Shutdown waits at most this long (seconds) for each ZooKeeper step.
ZOOKEEPER_STOP_TIMEOUT = 5.0


class KafkaBroker:
    """One broker process's worth of state; ``start()`` and ``stop()`` return Deferreds."""

    def __init__(self, config: BrokerConfig, reactor: Any = None,
                 on_ready: Callable[[KafkaBroker], None] | None = None):
        if reactor is None:
            from twisted.internet import reactor as default_reactor
            reactor = default_reactor
        self.config = config
        self.reactor = reactor
        self.broker_id = config.broker_id
        self.on_ready = on_ready
        self.ready = False
        self.cluster_id: str | None = None
        self.zk: Any = None
        self.registration: Any = None
        self.election: Any = None
        self.controller: Controller | None = None
        self.channel: ControllerChannel | None = None
        self.port: Any = None  # the first listener's port (ports: every listener's)
        self.factory: KafkaServerFactory | None = None
        self.ports: dict[str, Any] = {}
        self.factories: dict[str, KafkaServerFactory] = {}
        self.credentials = ScramCredentialCache()
        self.failed_logins = FailedAuthenticationDelay(
            config["connection.failed.authentication.delay.ms"] / 1000.0, reactor)
        # max.connections[.per.ip], max.connection.creation.rate, connections.max.idle.ms.
        self.connection_quotas = ConnectionQuotas(config, reactor)
        inter = next(li for li in config.listeners if li.name == config.inter_broker_listener)
        # None on a PLAINTEXT inter-broker listener: plain TCP, as before security existed.
        self.inter_broker_login = (InterBrokerLogin(config)
                                   if inter.security_protocol != PLAINTEXT else None)
        # A broker's requests to itself (its controller's, its transaction coordinator's
        # markers) carry its own inter-broker principal, not User:ANONYMOUS.
        self.own_connection = own_connection(config)
        self.gate: ReadinessGate | None = None
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.dynamic_config = DynamicBrokerConfig(self.broker_id)
        self.config_changes: ConfigChangeListener | None = None
        self.authorizer = build_authorizer(config)
        self.acl_changes: AclChangeFollower | None = None
        self._loops: list[task.LoopingCall] = []
        self._checkpointing: defer.Deferred | None = None
        self._stopping = False
        self._stop_requested = False

        self.static_log_config = LogConfig.from_kafka(
            {k: v for k, v in config.log_config_keys().items() if v is not None})
        self.log_config = self.static_log_config  # plus dynamic broker configs
        self.log_manager = LogManager(config.log_dirs, self.log_config)
        # A rolled segment's fsync runs on a worker thread, not in the produce that rolled.
        call_in_thread = getattr(reactor, "callInThread", None)
        if call_in_thread is not None:  # a test's fake reactor has no threads: fsync inline
            self.log_manager.use_background(call_in_thread)
        if self.log_manager.recovered_unclean and self.log_manager.all_logs():
            log.warning("log directories were not shut down cleanly: logs recovered")
        self.metadata_cache = MetadataCache()
        self.metadata_cache.listeners.append(self._metadata_changed)
        # Replication throttles (replication_quota.py): rates from dynamic broker configs,
        # throttled replicas from the topic configs.
        self.leader_throttle = ReplicationThrottle(LEADER_REPLICAS, self.broker_id,
                                                   self.topic_configs, reactor.seconds)
        self.follower_throttle = ReplicationThrottle(FOLLOWER_REPLICAS, self.broker_id,
                                                     self.topic_configs, reactor.seconds)
        self._apply_throttle_rates()
        self.fetchers = ReplicaFetcherManager(
            reactor, FetchSettings(self.broker_id, config["replica.fetch.wait.max.ms"],
                                   config["replica.fetch.min.bytes"],
                                   config["replica.fetch.max.bytes"]),
            self._endpoint_of, self.follower_throttle)
        self.isr_notifier = IsrChangeNotifier(self._write_isr_notification)
        self.replica_manager = ReplicaManager(self.broker_id, self.log_manager,
                                              self.metadata_cache, self.log_config_for,
                                              fetchers=self.fetchers,
                                              isr_writer=self._write_isr, reactor=reactor,
                                              min_insync_for=self.min_insync_replicas_for)
        self.replica_manager.leader_throttle = self.leader_throttle
        self.replica_manager.max_decompressed_bytes = config["message.max.decompressed.bytes"]
        if config["fetch.zero.copy.enable"] and can_sendfile():
            self.replica_manager.zero_copy_from = ZERO_COPY_MIN_BYTES
        self.log_cleaner = LogCleaner(reactor, self.log_manager, config,
                                      self.replica_manager.high_watermarks)
        self.group_coordinator = GroupCoordinator(
            config, self.metadata_cache, self.replica_manager, reactor, lambda: self.zk)
        self.producer_ids = ProducerIdManager(lambda: self.zk, reactor, self.broker_id,
                                              config["producer.id.block.size"])
        # WriteTxnMarkers travel like controller requests: in order per broker, retried.
        self.marker_requests = ControllerChannel(
            reactor, self.broker_id, self._dispatch_own, self._endpoint_of)
        self.transaction_coordinator = TransactionCoordinator(
            config, self.metadata_cache, self.replica_manager, reactor, lambda: self.zk,
            self.producer_ids,
            TransactionMarkerChannel(reactor, self.metadata_cache, lambda: self.marker_requests),
            self.group_coordinator.partition_of,
            ensure_offsets_topic=self.group_coordinator.metadata.ensure_offsets_topic)
        self.client_quotas = ClientQuotas(reactor, config["quota.window.num"],
                                          config["quota.window.size.seconds"])
        self.apis = self._build_apis()
        self.topic_admin = self.apis.topics
        self.fetch_handler = self.apis.fetch
        self.dispatcher = RequestDispatcher()
        self.dispatcher.quotas = self.client_quotas
        self.apis.register(self.dispatcher)
        ClientQuotaApis(reactor, lambda: self.zk, self.authorizer).register(self.dispatcher)
        SaslApis(self.credentials, reactor, lambda: self.zk).register(self.dispatcher)
        UserScramCredentialApis(reactor, lambda: self.zk, self.authorizer).register(
            self.dispatcher)
        self.metrics = install_metrics(self)  # None unless metrics.listener is set

    # -- wiring -------------------------------------------------------------------------

    def _build_apis(self) -> KafkaApis:
        """Each handler gets the collaborators it uses, not the broker."""
        config, reactor, replicas, cache = (self.config, self.reactor, self.replica_manager,
                                            self.metadata_cache)
        zookeeper = lambda: self.zk  # noqa: E731 (connected after the handlers are built)
        auth = self.authorizer  # every handler asks this one object
        topics = TopicAdmin(config, cache, reactor, zookeeper, lambda: self.is_controller,
                            self.log_config, auth)
        transactions = TransactionApis(self.transaction_coordinator, self.group_coordinator,
                                       auth)
        return KafkaApis(
            api_versions=ApiVersionsHandler(),
            metadata=MetadataHandler(cache, config, lambda: self.cluster_id, topics, auth),
            produce=ProduceHandler(replicas, auth),
            fetch=FetchHandler(replicas, reactor, lambda: self.stopping,
                               replica_selector(config["replica.selector.class"],
                                                self._rack_of),
                               authorizer=auth,
                               sessions=FetchSessionCache(
                                   config["max.incremental.fetch.session.cache.slots"])),
            list_offsets=ListOffsetsHandler(replicas, auth),
            offset_for_leader_epoch=OffsetForLeaderEpochHandler(replicas, auth),
            delete_records=DeleteRecordsHandler(replicas, auth),
            init_producer_id=InitProducerIdHandler(self.producer_ids,
                                                   self.transaction_coordinator, auth),
            topics=topics,
            inter_broker=InterBrokerHandlers(
                replicas, cache, self.topic_configs, read_topic_config, zookeeper, reactor,
                lambda: getattr(self.registration, "epoch", None), auth),
            groups=GroupApis(self.group_coordinator, auth, transactions.find_coordinator),
            transactions=transactions,
            elect_leaders=ElectLeadersHandler(reactor, zookeeper, auth),
            alter_reassignments=AlterPartitionReassignmentsHandler(reactor, zookeeper, auth),
            list_reassignments=ListPartitionReassignmentsHandler(reactor, zookeeper, auth),
            write_txn_markers=WriteTxnMarkersHandler(
                replicas, on_offsets_marker=self.group_coordinator.complete_transaction,
                authorizer=auth),
            create_partitions=CreatePartitionsHandler(cache, reactor, zookeeper,
                                                      lambda: self.is_controller, topics, auth),
            configs=ConfigApis(self.broker_id, config, cache, reactor, zookeeper,
                               lambda: self.dynamic_config.effective(), auth,
                               dynamic_default=lambda: dict(self.dynamic_config.default)),
            acls=AclApis(auth, reactor, zookeeper),
            describe_cluster=DescribeClusterHandler(cache, lambda: self.cluster_id, auth),
            describe_log_dirs=DescribeLogDirsHandler(replicas, auth),
            transaction_tools=TransactionToolApis(replicas, self.transaction_coordinator,
                                                  cache, auth),
        )

    @property
    def stopping(self) -> bool:
        """True once shutdown has begun (after the controlled shutdown step)."""
        return self._stopping

    @property
    def is_controller(self) -> bool:
        return self.controller is not None and self.controller.active

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's overrides from ZooKeeper (as last read; {} if none)."""
        return self.topic_configs.get(topic, {})

    def min_insync_replicas_for(self, topic: str) -> int:
        """min.insync.replicas for ``topic``: its override, else the broker's."""
        value = self.topic_config(topic).get("min.insync.replicas")
        if value is None:
            value = self.dynamic_config.effective().get("min.insync.replicas", (None, 0))[0]
        return int(value) if value is not None else self.config.min_insync_replicas

    def deletes_by_retention(self, topic: str) -> bool:
        """Whether ``cleanup.policy`` (the topic's, else the broker's, dynamic or static)
        includes ``delete``: a compact-only topic loses no segment to retention, as in Kafka."""
        return self.log_config_for(topic).deletes

    def log_config_for(self, topic: str) -> LogConfig:
        overrides = self.topic_configs.get(topic)
        if not overrides:
            return self.log_config
        try:
            return LogConfig.from_kafka(overrides, base=self.log_config)
        except ValueError as exc:
            log.warning("topic %s: bad config override ignored (%s)", topic, exc)
            return self.log_config

    def _config_changed(self, entity_type: str, name: str, config: dict[str, str]) -> None:
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
            self._apply_throttle_rates()
            dynamic = {DYNAMIC_BROKER_KEYS[k]: v for k, (v, _s) in
                       self.dynamic_config.effective().items() if k in DYNAMIC_BROKER_KEYS}
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

    def _apply_throttle_rates(self) -> None:
        """Throttled rates: the dynamic value (own, then cluster default), else the static."""
        dynamic = self.dynamic_config.effective()
        for throttle, key in ((self.leader_throttle, LEADER_RATE),
                              (self.follower_throttle, FOLLOWER_RATE)):
            value = dynamic[key][0] if key in dynamic else self.config[key]
            try:
                throttle.quota.set_rate(parse_rate(value))
            except ThrottleConfigError as exc:
                log.warning("%s ignored (%s)", key, exc)

    # -- start --------------------------------------------------------------------------

    def listen(self) -> int:
        """Bind every listener (raises CannotListenError); returns the first one's port."""
        self.gate = ReadinessGate(self.dispatcher)
        if self.ready:
            self.gate.open()
        for listener in self.config.listeners:
            factory = self._listener_factory(listener)
            if listener.uses_tls:
                from simplekafka.broker.security.tls import server_options

                port = self.reactor.listenSSL(listener.port, factory,
                                              server_options(self.config, listener.name),
                                              interface=listener.host or "")
            else:
                port = self.reactor.listenTCP(listener.port, factory,
                                              interface=listener.host or "")
            self.factories[listener.name], self.ports[listener.name] = factory, port
            self.connection_quotas.add_listener(listener.name, factory, port)
            log.info("listener %s (%s) on %s:%d", listener.name, listener.security_protocol,
                     listener.host, port.getHost().port)
        self.connection_quotas.start()
        log.info("inter-broker listener %s: this broker's requests to itself run as %s",
                 self.own_connection.listener, self.own_connection.principal)
        first = self.config.listeners[0].name
        self.factory, self.port = self.factories[first], self.ports[first]
        metrics_at = self.config.metrics_listener
        if self.metrics is not None and self.metrics.port is None and metrics_at is not None:
            self.metrics.listen(*metrics_at)
        return self.port.getHost().port

    def _listener_factory(self, listener: Any) -> KafkaServerFactory:
        """The connection factory of one listener: SASL gate and TLS principal as it needs."""
        authenticators = None
        if listener.uses_sasl:
            mechanisms = self.config["sasl.enabled.mechanisms"]
            settings = SaslSettings(
                listener.name, mechanisms,
                jaas_for(self.config, listener.name, "PLAIN").users if "PLAIN" in mechanisms
                else {}, self.credentials.get, self.failed_logins, self.reactor,
                max_receive_size=int(self.config.listener_setting(
                    listener.name, "sasl.server.max.receive.size",
                    self.config["sasl.server.max.receive.size"])),
                reauth_ms={mechanism: reauth_ms(self.config, listener.name, mechanism)
                           for mechanism in mechanisms},
                oauthbearer=oauthbearer_validator(self.config, listener.name))
            authenticators = lambda handler: SaslServerAuthenticator(settings, handler)  # noqa: E731
        from simplekafka.broker.security.tls import principal_of

        tls_principal = principal_of if listener.security_protocol == "SSL" else None
        assert self.gate is not None  # made by listen() first
        return KafkaServerFactory(self.gate, self.config["socket.request.max.bytes"],
                                  listener.name, authenticators, tls_principal,
                                  self.connection_quotas, self.replica_manager)

    def advertised_endpoints(self) -> tuple[tuple[str, str, int], ...]:
        """(listener, host, port) of every listener as registered in ZooKeeper: the
        advertised address, with the port actually bound where the config says 0."""
        endpoints = []
        for name, (host, port) in self.config.advertised_listeners.items():
            if port == 0 and name in self.ports:
                port = self.ports[name].getHost().port
            endpoints.append((name, host or "127.0.0.1", port))
        return tuple(endpoints)

    @property
    def advertised_address(self) -> tuple[str, int]:
        """(host, port) clients are told; port 0 in the config means the one actually bound."""
        host, port = self.config.advertised_host_port
        if port == 0 and self.port is not None:
            port = self.port.getHost().port
        return host, port

    def start(self) -> defer.Deferred:
        """Listen, connect to ZooKeeper, register and join the election."""
        if self.port is None:
            self.listen()
        self._start_loops()
        # A daemon thread, not the reactor's pool: a SIGTERM while ZooKeeper is still
        # unreachable must not wait for the connection attempt to time out.
        return _in_daemon_thread(self.reactor, self._connect_zookeeper).addCallback(
            self._join_cluster)

    def _connect_zookeeper(self) -> Any:
        from simplekafka.coordination.connection import connect_zookeeper, ensure_kafka_paths
        from simplekafka.coordination.registration import ensure_cluster_id
        from simplekafka.coordination.session_file import publish_session

        timeout_ms = (self.config["zookeeper.connection.timeout.ms"]
                      or self.config["zookeeper.session.timeout.ms"])
        zk = connect_zookeeper(self.config.zookeeper_connect, timeout=timeout_ms / 1000.0,
                               session_timeout=self.config["zookeeper.session.timeout.ms"]
                               / 1000.0, secure_acls=self.config["zookeeper.set.acl"])
        ensure_kafka_paths(zk)
        self.cluster_id = ensure_cluster_id(zk)
        publish_session(zk)  # only when SIMPLEKAFKA_ZK_SESSION_FILE is set (fault-injection tests)
        return zk

    def _join_cluster(self, zk: Any) -> None:
        from simplekafka.coordination.election import ControllerElection
        from simplekafka.coordination.registration import BrokerRegistration

        self.zk = zk
        host, port = self.advertised_address
        protocols = self.config.protocol_map
        endpoints = self.advertised_endpoints()
        self.registration = BrokerRegistration(
            zk, self.broker_id, host, port, self.config.rack, endpoints=endpoints,
            security_protocols=tuple((name, protocols[name]) for name, _h, _p in endpoints))
        self.channel = ControllerChannel(self.reactor, self.broker_id, self._dispatch_own,
                                         self._endpoint_of)
        self.election = ControllerElection(
            zk, self.broker_id, registration=self.registration,
            on_elected=self._elected, on_resigned=self._resigned,
            on_brokers_changed=self._brokers_changed,
            call_soon=self.reactor.callFromThread)
        self.controller = Controller(
            self.broker_id, self.election, self._send_from_controller,
            self.config["unclean.leader.election.enable"], call_later=self.reactor.callLater,
            auto_rebalance=self.config["auto.leader.rebalance.enable"],
            imbalance_check_seconds=self.config["leader.imbalance.check.interval.seconds"],
            imbalance_percentage=self.config["leader.imbalance.per.broker.percentage"],
            auto_reassign=AutoReassignSettings(
                self.config["auto.reassign.on.membership.change"],
                self.config["auto.reassign.grace.ms"],
                self.config["auto.reassign.new.broker.delay.ms"],
                self.config["auto.reassign.throttle.bytes"]),
            last_known=self._last_known_leaders)
        self.election.start()
        self.config_changes = ConfigChangeListener(zk, self.broker_id,
                                                   self.reactor.callFromThread,
                                                   self._config_changed)
        self.config_changes.start()
        if isinstance(self.authorizer, AclAuthorizer):
            self.acl_changes = AclChangeFollower(zk, self.authorizer, self.reactor.callFromThread)
            self.acl_changes.start()
        log.info("broker %d registering in ZooKeeper at %s", self.broker_id,
                 self.config.zookeeper_connect)

    def _send_from_controller(self, sends: list) -> None:
        # Called from the election's event thread: hand over to the reactor.
        self.reactor.callFromThread(self._send_on_reactor, sends)

    def _send_on_reactor(self, sends: list) -> None:
        if self.channel is not None and not self._stopping:
            self.channel.send_all(sends)

    def _rack_of(self, broker_id: int) -> str | None:
        node = self.metadata_cache.brokers.get(broker_id)
        return node.rack if node is not None else None

    def _dispatch_own(self, payload: bytes, _connection: Any = None) -> Any:
        """A request from this broker to itself, as its own inter-broker principal."""
        return self.dispatcher(payload, self.own_connection)

    def _endpoint_of(self, broker_id: int) -> tuple[Any, ...] | None:
        """Where to reach ``broker_id`` on the inter-broker listener: (host, port), plus the
        login (TLS, SASL) that listener needs when it is not PLAINTEXT."""
        listener = self.config.inter_broker_listener
        address = None
        if self.controller is not None:
            info = self.controller.brokers.get(broker_id)
            if info is not None:
                address = info.address_of(listener)
        if address is None:
            node = self.metadata_cache.listener_nodes.get(broker_id, {}).get(listener)
            if node is None and not self.metadata_cache.listener_nodes:
                node = self.metadata_cache.brokers.get(broker_id)
            address = (node.host, node.port) if node is not None else None
        if address is None:
            return None
        if self.inter_broker_login is None:
            return address
        return (*address, self.inter_broker_login)

    def _last_known_leaders(self) -> tuple[dict[tuple[str, int], int], set[int]]:
        """The leaders and live brokers this broker's metadata cache names (read on the
        controller's event thread: each copy is one step under the GIL, and a cache
        changing meanwhile only makes the hint older, never a decision wrong)."""
        cache = self.metadata_cache
        leaders = {}
        for topic, partitions in list(cache.topics.items()):
            for index, partition in list(partitions.items()):
                leaders[(topic, index)] = partition.leader
        return leaders, set(cache.brokers)

    def _elected(self, epoch: int) -> None:
        log.info("broker %d is now the controller (epoch %d)", self.broker_id, epoch)
        if self.controller is not None:
            self.controller.on_elected(epoch)

    def _resigned(self) -> None:
        if self.controller is not None:
            self.controller.on_resigned()

    def _brokers_changed(self, changes: Any) -> None:
        if self.controller is not None:
            self.controller.on_brokers_changed(changes)

    def _metadata_changed(self) -> None:
        cache = self.metadata_cache
        if not self.ready and self.broker_id in cache.brokers and cache.is_alive(
                cache.controller_id):
            self.ready = True
            if self.gate is not None:
                self.gate.open()
            # Everything built at start-up (schemas, modules, kazoo) lives as long as the
            # process: keep it out of the garbage collector's full passes (shorter pauses).
            gc.freeze()
            if self.on_ready is not None:
                self.on_ready(self)

    def _start_loops(self) -> None:
        def every(seconds: float, fn: Callable[[], Any]) -> None:
            loop = task.LoopingCall(fn)
            loop.clock = self.reactor
            loop.start(seconds, now=False).addErrback(
                lambda f: log.error("periodic task failed: %s", f.getTraceback()))
            self._loops.append(loop)

        every(self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000.0,
              self._checkpoint_high_watermarks)
        every(self.config["log.retention.check.interval.ms"] / 1000.0, self._enforce_retention)
        if self.config["log.cleaner.enable"]:
            self.log_cleaner.start()
        every(self.config["offsets.retention.check.interval.ms"] / 1000.0,
              self.group_coordinator.expire_offsets)
        every(self.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
              / 1000.0, self.transaction_coordinator.abort_timed_out)
        lag_max_ms = self.config["replica.lag.time.max.ms"]
        every(max(lag_max_ms / 2, 100) / 1000.0,
              lambda: self.replica_manager.maybe_shrink_isrs(lag_max_ms))
        if self.config["log.flush.interval.ms"] is not None:
            every(min(self.config["log.flush.interval.ms"], 1000) / 1000.0,
                  self.log_manager.flush_if_due)

    def _write_isr(self, partition: Any, isr: list[int]) -> defer.Deferred:
        """Write a leader's ISR change to ZooKeeper on a worker thread, then have it
        announced to the controller (batched with others, see isr.py)."""
        if self.zk is None or self._stopping:
            return defer.fail(ConnectionError("not connected to ZooKeeper"))
        written = threads.deferToThreadPool(
            self.reactor, self.reactor.getThreadPool(), write_isr, self.zk, partition.topic,
            partition.index, self.broker_id, partition.leader_epoch, isr,
            partition.controller_epoch, partition.partition_epoch)

        def announce(version: int) -> int:
            self.isr_notifier.changed(partition.topic, partition.index)
            return version

        return written.addCallback(announce)

    def _write_isr_notification(self, partitions: list[tuple[str, int]]) -> defer.Deferred:
        if self.zk is None or self._stopping:
            return defer.fail(ConnectionError("not connected to ZooKeeper"))
        return threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(),
                                         write_isr_change_notification, self.zk, partitions)

    def _checkpoint_high_watermarks(self) -> defer.Deferred:
        """Write the HW checkpoint on a worker thread: its two fsyncs would stall the reactor.
        Producer snapshots of partitions with open transactions are written first."""
        self.replica_manager.snapshot_producers()
        marks = self.replica_manager.high_watermarks()  # taken on the reactor, consistent
        self._checkpointing = threads.deferToThreadPool(
            self.reactor, self.reactor.getThreadPool(),
            self.replica_manager.write_high_watermarks, marks)
        return self._checkpointing

    def _enforce_retention(self) -> None:
        removed = self.log_manager.enforce_retention(
            high_watermarks=self.replica_manager.high_watermarks(),
            deletes=self.deletes_by_retention)
        if removed:
            log.info("retention removed %d segments", removed)

    # -- stop ---------------------------------------------------------------------------

    @defer.inlineCallbacks
    def stop(self) -> Any:
        """Clean shutdown: stop serving, leave the cluster, flush, mark the logs clean."""
        if self._stopping or self._stop_requested:
            return
        self._stop_requested = True
        log.info("broker %d shutting down", self.broker_id)
        yield self._controlled_shutdown()
        self._stopping = True
        if self.config_changes is not None:
            self.config_changes.stop()
        if self.acl_changes is not None:
            self.acl_changes.stop()
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if self._checkpointing is not None and not self._checkpointing.called:
            yield self._checkpointing  # the final checkpoint must not race a periodic one
        self.connection_quotas.stop()
        for port in self.ports.values():
            yield defer.maybeDeferred(port.stopListening)
        for factory in self.factories.values():
            factory.close_all()
        if self.channel is not None:
            self.channel.close()
        self.marker_requests.close()
        pool = self.reactor.getThreadPool()
        if self.election is not None:
            yield self._bounded(threads.deferToThreadPool(
                self.reactor, pool, self.election.stop, ZOOKEEPER_STOP_TIMEOUT), "resigning")
        if self.registration is not None:
            yield self._bounded(threads.deferToThreadPool(
                self.reactor, pool, self.registration.deregister), "deregistering")
        self.log_cleaner.stop()
        self.replica_manager.shutdown()
        self.log_manager.close()
        if self.zk is not None:
            zk = self.zk
            self.zk = None
            yield self._bounded(threads.deferToThreadPool(
                self.reactor, pool, _close_zookeeper, zk), "closing the ZooKeeper session")
        if self.metrics is not None:
            yield defer.maybeDeferred(self.metrics.stop)
        log.info("broker %d stopped cleanly", self.broker_id)

    @defer.inlineCallbacks
    def _controlled_shutdown(self) -> Any:
        """Move leadership away before leaving (controlled.shutdown.enable).

        The broker announces itself under ``/admin/controlled_shutdown/<id>``
        (ephemeral); the controller moves its leaderships to other in-sync
        replicas and drops it from ISRs. Meanwhile this broker keeps serving,
        and waits (up to controlled.shutdown.timeout.ms) until it leads no
        partition that another live, staying ISR member could lead.
        """
        if (not self.config["controlled.shutdown.enable"] or self.zk is None
                or not self.zk.connected or self.registration is None):
            return
        pool = self.reactor.getThreadPool()
        path = f"{CONTROLLED_SHUTDOWN_PATH}/{self.broker_id}"

        def announce() -> None:
            try:
                self.zk.create(path, b"", ephemeral=True, makepath=True)
            except NodeExistsError:
                pass

        def staying_brokers() -> set[int]:
            live = {int(c) for c in self.zk.get_children(ZkPaths.BROKER_IDS) if c.isdigit()}
            leaving = {int(c) for c in self.zk.get_children(CONTROLLED_SHUTDOWN_PATH)
                       if c.isdigit()}
            return live - leaving

        deadline = self.reactor.seconds() + self.config["controlled.shutdown.timeout.ms"] / 1000
        try:
            yield threads.deferToThreadPool(self.reactor, pool, announce)
            while self.reactor.seconds() < deadline:
                staying = yield threads.deferToThreadPool(self.reactor, pool, staying_brokers)
                movable = [p for p in self.replica_manager.partitions.values()
                           if p.is_leader and set(p.isr) & staying]
                if not movable:
                    log.info("controlled shutdown: no leaderships left to move")
                    return
                yield task.deferLater(self.reactor, 0.2, lambda: None)
            log.warning("controlled shutdown: still leading %d partitions at the timeout",
                        len(movable))
        except Exception as exc:
            log.warning("controlled shutdown failed (%s); stopping anyway", exc)

    def _bounded(self, work: defer.Deferred, what: str) -> defer.Deferred:
        """Wait for ZooKeeper work at shutdown, but not forever (ZooKeeper may be gone)."""
        connected = self.zk is not None and self.zk.connected
        work.addTimeout(ZOOKEEPER_STOP_TIMEOUT if connected else 1.0, self.reactor)

        def give_up(failure: Any) -> None:
            log.warning("%s at shutdown failed: %s", what, failure.getErrorMessage())

        return work.addErrback(give_up)


def _in_daemon_thread(reactor: Any, fn: Callable[[], Any]) -> defer.Deferred:
    """Run blocking ``fn`` on its own daemon thread; the result arrives on the reactor."""
    result: defer.Deferred = defer.Deferred()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the reactor as a failure
            reactor.callFromThread(result.errback, exc)
        else:
            reactor.callFromThread(result.callback, value)

    threading.Thread(target=run, daemon=True, name="zookeeper-connect").start()
    return result


def _close_zookeeper(zk: Any) -> None:
    try:
        zk.stop()
        zk.close()
    except Exception as exc:
        log.warning("closing the ZooKeeper session: %s", exc)
