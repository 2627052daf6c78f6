"""The broker's listeners as a service (Kafka's ``SocketServer``: its startup and shutdown).

Kafka binds its acceptors early in the startup (the registration must name the
ports actually bound) and stops processing requests early in the shutdown,
before it resigns and deregisters. Here ``bind`` (the broker's ``listen``,
called before the reactor runs so that a taken port is a one-line error) binds
every listener; the service, started after the broker joined the cluster, is
the one whose stop closes them: the connection limits' timers stop, no new
connection is accepted, and every client connection is dropped. A broker whose
start failed before this service started closes its ports with ``close`` too.

Each connection's requests go through the ``ReadinessGate`` (held until the
controller's metadata names this broker); each listener's connection factory
(``server.KafkaServerFactory``) gets the SASL authenticator its listener needs
(``authenticators``, given by the wiring) and the TLS principal reader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from twisted.application import service
from twisted.internet import defer

from simplekafka.broker.collaborators import ListeningPort, ServingReactor
from simplekafka.broker.readiness import ReadinessGate
from simplekafka.broker.server import AuthenticatorFactory, KafkaServerFactory, SharedQueues

if TYPE_CHECKING:
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.connection_quotas import ConnectionQuotas
    from simplekafka.broker.dispatch import RequestDispatcher
    from simplekafka.broker.security.inter_broker import OwnConnection
    from simplekafka.broker.security.listeners import Listener

log = logging.getLogger(__name__)


class SocketServer(service.Service):
    """Every listener's port and connection factory, by listener name."""

    def __init__(self, config: BrokerConfig, reactor: ServingReactor,
                 dispatcher: RequestDispatcher, connection_quotas: ConnectionQuotas,
                 replica_manager: SharedQueues,
                 authenticators: Callable[[Listener], AuthenticatorFactory | None],
                 own_connection: OwnConnection) -> None:
        self.setName("socket-server")
        self.config = config
        self.reactor = reactor
        self.dispatcher = dispatcher
        self.connection_quotas = connection_quotas
        self.replica_manager = replica_manager
        self.authenticators = authenticators  # listener -> authenticator factory or None
        self.own_connection = own_connection
        self.gate: ReadinessGate | None = None
        self.ports: dict[str, ListeningPort] = {}
        self.factories: dict[str, KafkaServerFactory] = {}
        self.ready = False  # the gate opens when it is made, if the broker is ready by then
        self.closed = False

    @property
    def bound(self) -> bool:
        return bool(self.ports)

    def open_gate(self) -> None:
        """The broker is ready: requests held so far go through, and every later one."""
        self.ready = True
        if self.gate is not None:
            self.gate.open()

    def bind(self) -> int:
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
        return self.ports[self.config.listeners[0].name].getHost().port

    def _listener_factory(self, listener: Listener) -> KafkaServerFactory:
        """The connection factory of one listener: SASL gate and TLS principal as it needs."""
        from simplekafka.broker.security.tls import principal_of

        tls_principal = principal_of if listener.security_protocol == "SSL" else None
        assert self.gate is not None  # made by bind() first
        return KafkaServerFactory(self.gate, self.config["socket.request.max.bytes"],
                                  listener.name, self.authenticators(listener), tls_principal,
                                  self.connection_quotas, self.replica_manager)

    def bound_port(self, listener: str) -> int | None:
        port = self.ports.get(listener)
        return port.getHost().port if port is not None else None

    # -- the service ----------------------------------------------------------------------

    def startService(self) -> None:
        service.Service.startService(self)
        if not self.bound:
            self.bind()

    def stopService(self) -> defer.Deferred:
        service.Service.stopService(self)
        return self.close()

    @defer.inlineCallbacks
    def close(self) -> Generator[defer.Deferred[object], object, None]:
        """Stop accepting, drop every connection (Kafka's stopProcessingRequests)."""
        if self.closed:
            return
        self.closed = True
        self.connection_quotas.stop()
        for port in self.ports.values():
            yield defer.maybeDeferred(port.stopListening)
        for factory in self.factories.values():
            factory.close_all()
