"""Joining the cluster: registration, the controller election, the controller
(Kafka's ``KafkaZkClient.registerBroker`` and ``KafkaController.startup``/``shutdown``).

Started once the ZooKeeper session is up (and the listeners are bound, so that
the registration names the ports actually bound): the broker registers under
``/brokers/ids/<id>``, takes part in the controller election, and builds its
``Controller`` (which acts only while this broker holds the election) and the
channel the controller sends its requests on. Stopping closes the channel,
resigns and deregisters, each ZooKeeper step bounded (ZooKeeper may be gone).

The election calls back on its own thread; the controller's sends are handed to
the reactor with ``callFromThread``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, cast

from twisted.application import service
from twisted.internet import defer, threads

from simplekafka.broker.controller import Controller
from simplekafka.broker.controller.auto_reassign import AutoReassignSettings
from simplekafka.broker.controller.channel import ControllerChannel, Endpoint, LocalHandler
from simplekafka.broker.controller.controller import LastKnown
from simplekafka.broker.controller.requests import Send
from simplekafka.broker.zookeeper_client import ZOOKEEPER_STOP_TIMEOUT, ZooKeeperClient
from simplekafka.coordination.election import BrokerChanges, ControllerElection
from simplekafka.coordination.registration import BrokerRegistration

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorFromThreads

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.config import BrokerConfig

log = logging.getLogger(__name__)


class ControllerService(service.Service):
    """``registration``, ``election``, ``controller`` and ``channel`` once started."""

    def __init__(self, config: BrokerConfig, reactor: Reactor, zookeeper: ZooKeeperClient,
                 endpoints: Callable[[], tuple[tuple[str, str, int], ...]],
                 advertised_address: Callable[[], tuple[str, int]],
                 dispatch_own: LocalHandler, endpoint_of: Callable[[int], Endpoint | None],
                 last_known_leaders: Callable[[], LastKnown],
                 is_stopping: Callable[[], bool],
                 extra_channels: tuple[ControllerChannel, ...] = ()) -> None:
        self.setName("controller")
        self.config = config
        self.broker_id = config.broker_id
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.endpoints = endpoints
        self.advertised_address = advertised_address
        self.dispatch_own = dispatch_own
        self.endpoint_of = endpoint_of
        self.last_known_leaders = last_known_leaders
        self.is_stopping = is_stopping
        self.extra_channels = extra_channels  # closed with the controller's (markers)
        self.registration: BrokerRegistration | None = None
        self.election: ControllerElection | None = None
        self.controller: Controller | None = None
        self.channel: ControllerChannel | None = None

    @property
    def is_controller(self) -> bool:
        return self.controller is not None and self.controller.active

    def startService(self) -> None:
        service.Service.startService(self)
        config, reactor, zk = self.config, self.reactor, self.zookeeper.zk
        host, port = self.advertised_address()
        protocols = config.protocol_map
        endpoints = self.endpoints()
        self.registration = BrokerRegistration(
            zk, self.broker_id, host, port, config.rack, endpoints=endpoints,
            security_protocols=tuple((name, protocols[name]) for name, _h, _p in endpoints))
        self.channel = ControllerChannel(reactor, self.broker_id, self.dispatch_own,
                                         self.endpoint_of)
        self.election = ControllerElection(
            zk, self.broker_id, registration=self.registration,
            on_elected=self._elected, on_resigned=self._resigned,
            on_brokers_changed=self._brokers_changed,
            call_soon=reactor.callFromThread)
        self.controller = Controller(
            self.broker_id, self.election, self._send_from_controller,
            config["unclean.leader.election.enable"], call_later=reactor.callLater,
            auto_rebalance=config["auto.leader.rebalance.enable"],
            imbalance_check_seconds=config["leader.imbalance.check.interval.seconds"],
            imbalance_percentage=config["leader.imbalance.per.broker.percentage"],
            auto_reassign=AutoReassignSettings(
                config["auto.reassign.on.membership.change"],
                config["auto.reassign.grace.ms"],
                config["auto.reassign.new.broker.delay.ms"],
                config["auto.reassign.throttle.bytes"]),
            last_known=self.last_known_leaders)
        self.election.start()
        log.info("broker %d registering in ZooKeeper at %s", self.broker_id,
                 config.zookeeper_connect)

    @defer.inlineCallbacks
    def stopService(self) -> Generator[defer.Deferred, object, None]:
        service.Service.stopService(self)
        if self.channel is not None:
            self.channel.close()
        for channel in self.extra_channels:
            channel.close()
        pool = self.reactor.getThreadPool()
        reactor = cast("IReactorFromThreads", self.reactor)  # a zope interface: see Reactor
        if self.election is not None:
            yield self.zookeeper.bounded(threads.deferToThreadPool(
                reactor, pool, self.election.stop, ZOOKEEPER_STOP_TIMEOUT), "resigning")
        if self.registration is not None:
            yield self.zookeeper.bounded(threads.deferToThreadPool(
                reactor, pool, self.registration.deregister), "deregistering")

    # -- the election's callbacks ---------------------------------------------------------

    def _send_from_controller(self, sends: list[Send]) -> None:
        # Called from the election's event thread: hand over to the reactor.
        self.reactor.callFromThread(self._send_on_reactor, sends)

    def _send_on_reactor(self, sends: list[Send]) -> None:
        if self.channel is not None and not self.is_stopping():
            self.channel.send_all(sends)

    def _elected(self, epoch: int) -> None:
        log.info("broker %d is now the controller (epoch %d)", self.broker_id, epoch)
        if self.controller is not None:
            self.controller.on_elected(epoch)

    def _resigned(self) -> None:
        if self.controller is not None:
            self.controller.on_resigned()

    def _brokers_changed(self, changes: BrokerChanges) -> None:
        if self.controller is not None:
            self.controller.on_brokers_changed(changes)
