"""KafkaBroker: the composition root (Kafka's ``KafkaServer``): builds the parts, wires
them, and puts the long-lived ones in a tree of Twisted services.

Start-up follows Kafka's order: open (and if needed recover) the logs, bind the
listeners, connect to ZooKeeper, register under ``/brokers/ids`` and take part
in the controller election, then follow config and ACL changes. The broker is
ready when the controller's UpdateMetadata names it and a live controller;
client requests that arrive before are held until then (``readiness.py``), so
no client ever sees a cluster without this broker or a controller.

The service tree (``services.BrokerServices``) starts its children in the order
``start`` adds them and stops them in the reverse order, each step finished
before the next:

===========================  ====================================================
``metrics``                  the metrics listener (``metrics.listener``)
``logs``                     ReplicaManager and LogManager: checkpoints, logs
                             closed (fsync, the clean-shutdown marker)
``log-cleaner``              compaction rounds (``log_cleaner.py``)
``zookeeper``                the session (``zookeeper_client.py``)
``controller``               registration, election, controller, its channel
                             (``controller_service.py``)
``socket-server``            the listeners; stopped: no new connection, every
                             connection dropped (``socket_server.py``)
``scheduler``                periodic tasks (``scheduler.py``)
``dynamic-config-manager``   config changes applied
                             (``dynamic_config_manager.py``)
``acl-changes``              ACL changes followed (``security/acl_changes.py``)
``alter-partition-manager``  ISR writes (``alter_partition_manager.py``)
===========================  ====================================================

Shutdown (SIGTERM) first moves leadership away (``controlled_shutdown.py``)
while the broker still serves, then stops the tree. A start that fails stops
what had started.

ZooKeeper work runs on worker threads (kazoo blocks) and on the election's
event thread; results come back to the reactor with ``callFromThread``. The
reactor thread itself only does short things: decode, append, read, encode.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, cast

from twisted.internet import defer

from simplekafka.broker.alter_partition_manager import AlterPartitionManager
from simplekafka.broker.apis import KafkaApis
from simplekafka.broker.apis.acls import AclApis
from simplekafka.broker.apis.client_quotas import ClientQuotaApis
from simplekafka.broker.apis.cluster import DescribeClusterHandler
from simplekafka.broker.apis.configs import DYNAMIC_BROKER_KEYS, ConfigApis
from simplekafka.broker.apis.elect_leaders import ElectLeadersHandler
from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.apis.groups import GroupApis
from simplekafka.broker.apis.inter_broker import InterBrokerHandlers
from simplekafka.broker.apis.log_dirs import AlterReplicaLogDirsHandler, DescribeLogDirsHandler
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
from simplekafka.broker.apis.sasl import SaslApis, SaslAuthentication
from simplekafka.broker.apis.topics import TopicAdmin
from simplekafka.broker.apis.transaction_tools import TransactionToolApis
from simplekafka.broker.apis.transactions import TransactionApis
from simplekafka.broker.apis.txn_markers import WriteTxnMarkersHandler
from simplekafka.broker.apis.user_scram_credentials import UserScramCredentialApis
from simplekafka.broker.client_quotas import ClientQuotas
from simplekafka.broker.config import BrokerConfig
from simplekafka.broker.connection_quotas import ConnectionQuotas
from simplekafka.broker.controlled_shutdown import controlled_shutdown
from simplekafka.broker.controller import Controller, read_topic_config
from simplekafka.broker.controller.channel import ControllerChannel
from simplekafka.broker.controller_service import ControllerService
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.broker.dynamic_config_manager import DynamicConfigManager
from simplekafka.broker.fetch_session import FetchSessionCache
from simplekafka.broker.group.coordinator import GroupCoordinator
from simplekafka.broker.log_cleaner import LogCleaner
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.metrics import install as install_metrics
from simplekafka.broker.readiness import ReadinessGate
from simplekafka.broker.replica_fetcher import FetchSettings, ReplicaFetcherManager
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.broker.replica_selector import replica_selector
from simplekafka.broker.replication_quota import (
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    ReplicationThrottle,
)
from simplekafka.broker.scheduler import scheduled_tasks
from simplekafka.broker.security.acl_changes import AclChangeFollower
from simplekafka.broker.security.authorizer import AclAuthorizer, build_authorizer
from simplekafka.broker.security.credentials import ScramCredentialCache
from simplekafka.broker.security.inter_broker import InterBrokerLogin, own_connection
from simplekafka.broker.security.listeners import PLAINTEXT
from simplekafka.broker.security.sasl import (
    FailedAuthenticationDelay,
    SaslServerAuthenticator,
    SaslSettings,
    jaas_for,
    oauthbearer_validator,
    reauth_ms,
)
from simplekafka.broker.server import AuthenticatorFactory, KafkaServerFactory
from simplekafka.broker.services import BrokerServices, Steps
from simplekafka.broker.socket_server import SocketServer
from simplekafka.broker.socket_writer import ZERO_COPY_MIN_BYTES, can_sendfile
from simplekafka.broker.transaction.coordinator import TransactionCoordinator
from simplekafka.broker.transaction.marker_channel import TransactionMarkerChannel
from simplekafka.broker.transaction.producer_ids import ProducerIdManager
from simplekafka.broker.zookeeper_client import ZOOKEEPER_STOP_TIMEOUT, ZooKeeperClient
from simplekafka.storage import LogConfig, LogManager

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from simplekafka.broker.collaborators import ListeningPort, ServingReactor
    from simplekafka.broker.config_changes import DynamicBrokerConfig
    from simplekafka.broker.isr import IsrChangeNotifier
    from simplekafka.broker.security.listeners import Listener
    from simplekafka.coordination.election import ControllerElection
    from simplekafka.coordination.registration import BrokerRegistration

log = logging.getLogger(__name__)

__all__ = ["ZOOKEEPER_STOP_TIMEOUT", "KafkaBroker"]


class KafkaBroker:
    """One broker process's worth of state; ``start()`` and ``stop()`` return Deferreds."""

    def __init__(self, config: BrokerConfig, reactor: ServingReactor | None = None,
                 on_ready: Callable[[KafkaBroker], None] | None = None):
        if reactor is None:
            from twisted.internet import reactor as default_reactor
            reactor = cast("ServingReactor", default_reactor)
        self.config = config
        self.reactor: ServingReactor = reactor
        self.broker_id = config.broker_id
        self.on_ready = on_ready
        self.ready = False
        self._stopping = False
        self._stop_requested = False
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
        self.authorizer = build_authorizer(config)
        self.zookeeper = ZooKeeperClient(config, reactor)
        self.client_quotas = ClientQuotas(reactor, config["quota.window.num"],
                                          config["quota.window.size.seconds"])

        self.static_log_config = LogConfig.from_kafka(
            {k: v for k, v in config.log_config_keys().items() if v is not None})
        self.log_manager = LogManager(config.log_dirs, self.static_log_config)
        # A rolled segment's fsync runs on a worker thread, not in the produce that rolled.
        call_in_thread = getattr(reactor, "callInThread", None)
        if call_in_thread is not None:  # a test's fake reactor has no threads: fsync inline
            self.log_manager.use_background(call_in_thread)
        if self.log_manager.recovered_unclean and self.log_manager.all_logs():
            log.warning("log directories were not shut down cleanly: logs recovered")
        self.dynamic_configs = DynamicConfigManager(
            config, reactor, lambda: self.zk, self.log_manager, self.static_log_config,
            DYNAMIC_BROKER_KEYS, self.client_quotas, self.credentials)
        self.metadata_cache = MetadataCache()
        self.metadata_cache.listeners.append(self._metadata_changed)
        # Replication throttles (replication_quota.py): rates from dynamic broker configs,
        # throttled replicas from the topic configs.
        self.leader_throttle = ReplicationThrottle(LEADER_REPLICAS, self.broker_id,
                                                   self.topic_configs, reactor.seconds)
        self.follower_throttle = ReplicationThrottle(FOLLOWER_REPLICAS, self.broker_id,
                                                     self.topic_configs, reactor.seconds)
        self.dynamic_configs.throttles = (self.leader_throttle, self.follower_throttle)
        self.dynamic_configs.apply_throttle_rates()
        self.fetchers = ReplicaFetcherManager(
            reactor, FetchSettings(self.broker_id, config["replica.fetch.wait.max.ms"],
                                   config["replica.fetch.min.bytes"],
                                   config["replica.fetch.max.bytes"], self._broker_epoch),
            self._endpoint_of, self.follower_throttle)
        self.alter_partitions = AlterPartitionManager(self.broker_id, reactor, lambda: self.zk)
        # min.insync.replicas straight from the config manager: read on every acks=all produce.
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, self.metadata_cache, self.log_config_for,
            fetchers=self.fetchers, isr_writer=self.alter_partitions.write_isr, reactor=reactor,
            min_insync_for=self.dynamic_configs.min_insync_replicas_for)
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
        self.apis = self._build_apis()
        self.topic_admin = self.apis.topics
        self.fetch_handler = self.apis.fetch
        self.dispatcher = RequestDispatcher()
        self.dispatcher.quotas = self.client_quotas
        self.apis.register(self.dispatcher)
        ClientQuotaApis(reactor, lambda: self.zk, self.authorizer).register(self.dispatcher)
        SaslApis().register(self.dispatcher)
        UserScramCredentialApis(reactor, lambda: self.zk, self.authorizer).register(
            self.dispatcher)
        self.socket_server = SocketServer(config, reactor, self.dispatcher,
                                          self.connection_quotas, self.replica_manager,
                                          self._authenticators, self.own_connection)
        self.controller_service = ControllerService(
            config, reactor, self.zookeeper, self.advertised_endpoints,
            lambda: self.advertised_address, self._dispatch_own, self._endpoint_of,
            self._last_known_leaders, lambda: self._stopping,
            extra_channels=(self.marker_requests,))
        self.metrics = install_metrics(self, self.dispatcher)  # None unless metrics.listener
        if self.metrics is not None:
            self.apis.fetch.on_consumer_answer = self.metrics.on_fetch_answer
        self.services = self._build_services()

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
            groups=GroupApis(self.group_coordinator, auth, transactions.find_coordinator,
                             zookeeper),
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
            alter_replica_log_dirs=AlterReplicaLogDirsHandler(replicas, auth),
            transaction_tools=TransactionToolApis(replicas, self.transaction_coordinator,
                                                  cache, auth),
        )

    def _build_services(self) -> BrokerServices:
        """The tree, in start order (docstring of this module); it stops in reverse."""
        tree = BrokerServices()
        metrics = self.metrics
        if metrics is not None:
            metrics_at = self.config.metrics_listener

            def metrics_listen() -> None:
                if metrics.port is None and metrics_at is not None:
                    metrics.listen(*metrics_at)

            tree.addService(Steps("metrics", metrics.stop, start=metrics_listen))

        def close_logs() -> None:
            self.replica_manager.shutdown()
            self.log_manager.close()

        tree.addService(Steps("logs", close_logs))
        tree.addService(self.log_cleaner)
        tree.addService(self.zookeeper)
        tree.addService(self.controller_service)
        tree.addService(self.socket_server)
        scheduler = BrokerServices()
        scheduler.setName("scheduler")
        for periodic in scheduled_tasks(self.config, self.reactor, self.replica_manager,
                                        self.log_manager, self.group_coordinator,
                                        self.transaction_coordinator,
                                        self.deletes_by_retention):
            scheduler.addService(periodic)
        tree.addService(scheduler)
        tree.addService(self.dynamic_configs)
        if isinstance(self.authorizer, AclAuthorizer):
            authorizer = self.authorizer
            follower: list[AclChangeFollower] = []

            def follow_acls() -> None:
                follower.append(AclChangeFollower(self.zk, authorizer,
                                                  self.reactor.callFromThread))
                follower[0].start()

            def stop_following() -> None:
                if follower:
                    follower[0].stop()

            tree.addService(Steps("acl-changes", stop_following, start=follow_acls))
        tree.addService(self.alter_partitions)
        return tree

    def _authenticators(self, listener: Listener) -> AuthenticatorFactory | None:
        """Each connection's SASL authenticator on a SASL listener (None: no SASL)."""
        if not listener.uses_sasl:
            return None
        config = self.config
        mechanisms = config["sasl.enabled.mechanisms"]
        settings = SaslSettings(
            listener.name, mechanisms,
            jaas_for(config, listener.name, "PLAIN").users if "PLAIN" in mechanisms
            else {}, self.credentials.get, self.failed_logins, self.reactor,
            max_receive_size=int(config.listener_setting(
                listener.name, "sasl.server.max.receive.size",
                config["sasl.server.max.receive.size"])),
            reauth_ms={mechanism: reauth_ms(config, listener.name, mechanism)
                       for mechanism in mechanisms},
            oauthbearer=oauthbearer_validator(config, listener.name))
        return lambda handler: SaslAuthentication(SaslServerAuthenticator(settings), handler)

    # -- what the parts read ------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        """True once shutdown has begun (after the controlled shutdown step)."""
        return self._stopping

    @property
    def shutting_down(self) -> bool:
        """True once a stop was asked for (the controlled shutdown included)."""
        return self._stopping or self._stop_requested

    @property
    def zk(self) -> KazooClient:
        """The ZooKeeper session while connected (None before and from the shutdown on)."""
        return self.zookeeper.zk

    @property
    def cluster_id(self) -> str | None:
        return self.zookeeper.cluster_id

    @property
    def registration(self) -> BrokerRegistration | None:
        return self.controller_service.registration

    def _broker_epoch(self) -> int:
        """Our registration znode's czxid (Fetch v15+ names it), -1 before we registered."""
        epoch = getattr(self.registration, "epoch", None)
        return -1 if epoch is None else epoch

    @property
    def election(self) -> ControllerElection | None:
        return self.controller_service.election

    @property
    def controller(self) -> Controller | None:
        return self.controller_service.controller

    @property
    def channel(self) -> ControllerChannel | None:
        return self.controller_service.channel

    @property
    def is_controller(self) -> bool:
        return self.controller_service.is_controller

    @property
    def gate(self) -> ReadinessGate | None:
        return self.socket_server.gate

    @property
    def ports(self) -> dict[str, ListeningPort]:
        return self.socket_server.ports

    @property
    def factories(self) -> dict[str, KafkaServerFactory]:
        return self.socket_server.factories

    @property
    def port(self) -> ListeningPort | None:
        """The first listener's port (``ports``: every listener's); None until bound."""
        return self.socket_server.ports.get(self.config.listeners[0].name)

    @property
    def factory(self) -> KafkaServerFactory | None:
        return self.socket_server.factories.get(self.config.listeners[0].name)

    @property
    def topic_configs(self) -> dict[str, dict[str, str]]:
        return self.dynamic_configs.topic_configs

    @property
    def dynamic_config(self) -> DynamicBrokerConfig:
        return self.dynamic_configs.dynamic_config

    @property
    def log_config(self) -> LogConfig:
        """The broker's log defaults: static, plus dynamic broker configs."""
        return self.dynamic_configs.log_config

    @property
    def isr_notifier(self) -> IsrChangeNotifier:
        return self.alter_partitions.notifier

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's overrides from ZooKeeper (as last read; {} if none)."""
        return self.dynamic_configs.topic_config(topic)

    def deletes_by_retention(self, topic: str) -> bool:
        """Whether retention may delete the topic's segments (``cleanup.policy``)."""
        return self.dynamic_configs.deletes_by_retention(topic)

    def log_config_for(self, topic: str) -> LogConfig:
        return self.dynamic_configs.log_config_for(topic)

    # -- start --------------------------------------------------------------------------

    def listen(self) -> int:
        """Bind every listener (raises CannotListenError); returns the first one's port."""
        port = self.socket_server.bind()
        metrics_at = self.config.metrics_listener
        if self.metrics is not None and self.metrics.port is None and metrics_at is not None:
            self.metrics.listen(*metrics_at)
        return port

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
        """Listen, then start the service tree: connect to ZooKeeper, register, join the
        election, follow config changes. Fails (having stopped what started) if a step fails."""
        if self.port is None:
            self.listen()
        return self.services.startService()

    # -- callbacks the parts were given -------------------------------------------------

    def _rack_of(self, broker_id: int) -> str | None:
        node = self.metadata_cache.brokers.get(broker_id)
        return node.rack if node is not None else None

    def _dispatch_own(self, payload: bytes,
                      _connection: object = None) -> bytes | defer.Deferred | None:
        """A request from this broker to itself, as its own inter-broker principal."""
        # The controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica) are answered
        # whole: an answer in pieces is a Fetch's, a Failure travels inside a Deferred.
        return cast("bytes | defer.Deferred | None",
                    self.dispatcher(payload, self.own_connection))

    # (host, port) or (host, port, login): its callers' types (replica_fetcher.py) name only
    # the first form yet, so the tuple's items stay unchecked here.
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

    def _metadata_changed(self) -> None:
        cache = self.metadata_cache
        if not self.ready and self.broker_id in cache.brokers and cache.is_alive(
                cache.controller_id):
            self.ready = True
            self.socket_server.open_gate()
            # Everything built at start-up (schemas, modules, kazoo) lives as long as the
            # process: keep it out of the garbage collector's full passes (shorter pauses).
            gc.freeze()
            if self.on_ready is not None:
                self.on_ready(self)

    # -- stop ---------------------------------------------------------------------------

    @defer.inlineCallbacks
    def stop(self) -> Generator[defer.Deferred, object, None]:
        """Clean shutdown: move leadership away, then stop the service tree (stop serving,
        leave the cluster, flush, mark the logs clean, close the ZooKeeper session)."""
        if self._stopping or self._stop_requested:
            return
        self._stop_requested = True
        log.info("broker %d shutting down", self.broker_id)
        if self.registration is not None:
            yield controlled_shutdown(self.config, self.reactor, self.zk,
                                      lambda: list(self.replica_manager.partitions.values()))
        self._stopping = True
        if self.services.running:
            yield self.services.stopService()
        # Listeners bound by listen() whose service never started (the start failed first).
        yield self.socket_server.close()
        log.info("broker %d stopped cleanly", self.broker_id)

