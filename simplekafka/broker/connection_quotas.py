"""How many connections a broker serves, from where, how fast, and for how long idle.

Kafka's SocketServer bounds connections before a single request is read, and so
does this module, with Kafka's keys and defaults:

* ``max.connections.per.ip`` (no limit by default) and
  ``max.connections.per.ip.overrides`` (``host:count,...``): a connection from
  an address that already holds its limit, on any listener, is closed as soon
  as it is accepted (logged);
* ``max.connections`` (broker-wide, no limit by default) and
  ``listener.name.<l>.max.connections`` (one listener): past them, new
  connections are not accepted until one closes. Kafka leaves them in the
  kernel's accept backlog; here the listening port stops accepting, and any
  connection Twisted accepted in the same burst waits unread (``waiting``)
  until a slot frees. The inter-broker listener is held only by its own
  listener limit, never by the broker-wide one, so replication and the
  controller keep working under a flood (Kafka also closes the least recently
  used connection of another listener then; this does not);
* ``max.connection.creation.rate`` (broker-wide, except the inter-broker
  listener) and ``listener.name.<l>.max.connection.creation.rate``: new
  connections accepted per second, over the last second here (Kafka averages
  over its quota windows); faster ones wait, as above, until the rate allows;
* ``connections.max.idle.ms`` (10 minutes; -1: never): a connection that has
  read and written nothing for that long is closed. One that awaits an answer
  (a parked fetch, an acks=all produce) is not idle.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from twisted.internet import task

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from simplekafka.broker.collaborators import DelayedCall, Reactor
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.server import KafkaConnection, KafkaServerFactory

log = logging.getLogger(__name__)

NO_LIMIT = 2**31 - 1  # Kafka's Int.MaxValue default


class ConnectionQuotaError(ValueError):
    """A connection-limit setting that cannot be read (one line, names the key)."""


def parse_overrides(text: str | None) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,host:count`` into a dict."""
    overrides: dict[str, int] = {}
    for item in str(text or "").split(","):
        if not item.strip():
            continue
        host, sep, count = item.strip().rpartition(":")
        try:
            value = int(count)
        except ValueError:
            value = -1
        if not sep or not host or value < 0:
            raise ConnectionQuotaError(f"max.connections.per.ip.overrides: {item.strip()!r} "
                                       "is not host:count with a count of 0 or more")
        overrides[host] = value
    return overrides


def _limit(value: object) -> int:
    if value is None or value == "":
        return NO_LIMIT
    if isinstance(value, (int, float, str)):
        return int(value)
    raise ConnectionQuotaError(f"not a connection limit: {value!r}")


class ConnectionQuotas:
    """The broker's connection limits and idle close, shared by every listener's factory."""

    def __init__(self, config: BrokerConfig, reactor: Reactor,
                 clock: Callable[[], float] = time.monotonic):
        self.reactor = reactor
        self.clock = clock
        self.inter_broker = config.inter_broker_listener
        self.max_connections = _limit(config["max.connections"])
        self.per_ip = _limit(config["max.connections.per.ip"])
        self.per_ip_overrides = parse_overrides(config["max.connections.per.ip.overrides"])
        self.rate = _limit(config["max.connection.creation.rate"])
        idle = config["connections.max.idle.ms"]
        self.idle_ms: int | None = None if idle is None or idle < 0 else int(idle)
        self.listener_max: dict[str, int] = {}
        self.listener_rate: dict[str, int] = {}
        for listener in config.listeners:
            prefixed = f"listener.name.{listener.name.lower()}."
            self.listener_max[listener.name] = _limit(config.as_dict().get(
                prefixed + "max.connections"))
            self.listener_rate[listener.name] = _limit(config.as_dict().get(
                prefixed + "max.connection.creation.rate"))
        self.by_ip: dict[str, int] = {}
        self.total = 0  # admitted connections on the listeners the broker-wide limit holds
        self.by_listener: dict[str, int] = {}
        self.accepted: dict[str, deque[float]] = {}  # per listener: admission times, last 1 s
        self.accepted_all: deque[float] = deque()
        self.waiting: dict[str, deque[KafkaConnection]] = {}
        self.ports: dict[str, object] = {}  # listening ports: paused and resumed if they can
        self.factories: dict[str, KafkaServerFactory] = {}
        self.rejected = 0  # connections closed over max.connections.per.ip
        self.idle_closed = 0
        self._paused: set[str] = set()
        self._pump_call: DelayedCall | None = None
        self._idle_loop: task.LoopingCall | None = None

    # -- set-up ----------------------------------------------------------------------------

    def add_listener(self, name: str, factory: KafkaServerFactory, port: object) -> None:
        self.factories[name], self.ports[name] = factory, port

    def start(self) -> None:
        """Start closing idle connections (a check every tenth of the idle time, 50 ms..30 s)."""
        if self.idle_ms is None or self._idle_loop is not None:
            return
        self._idle_loop = task.LoopingCall(self.close_idle)
        # Twisted names its reactor types as zope interfaces, which a Protocol cannot name.
        self._idle_loop.clock = cast("IReactorTime", self.reactor)
        self._idle_loop.start(min(max(self.idle_ms / 10_000.0, 0.05), 30.0), now=False)

    def stop(self) -> None:
        if self._idle_loop is not None and self._idle_loop.running:
            self._idle_loop.stop()
        if self._pump_call is not None and self._pump_call.active():
            self._pump_call.cancel()

    # -- accept, open, close ---------------------------------------------------------------

    def ip_limit(self, host: str) -> int:
        return self.per_ip_overrides.get(host, self.per_ip)

    def accept(self, listener: str, host: str) -> bool:
        """A socket was accepted from ``host``: False closes it (max.connections.per.ip)."""
        limit = self.ip_limit(host)
        if self.by_ip.get(host, 0) >= limit:
            self.rejected += 1
            log.info("rejected connection from %s on listener %s: the address already has "
                     "the configured maximum of %d connections (max.connections.per.ip)",
                     host, listener, limit)
            return False
        self.by_ip[host] = self.by_ip.get(host, 0) + 1
        return True

    def opened(self, connection: KafkaConnection) -> None:
        """A connection was made: serve it now, or leave it waiting unread."""
        listener = connection.listener
        queue = self.waiting.setdefault(listener, deque())
        if not queue and self._room(listener) and self._rate_allows(listener):
            self._admit(connection)
        else:
            connection.waiting = True
            connection.transport.pauseProducing()
            queue.append(connection)
        self._pump()

    def closed(self, connection: KafkaConnection) -> None:
        host = connection.host
        if host in self.by_ip:
            self.by_ip[host] -= 1
            if self.by_ip[host] <= 0:
                del self.by_ip[host]
        if connection.waiting:
            connection.waiting = False
            queue = self.waiting.get(connection.listener)
            if queue is not None and connection in queue:
                queue.remove(connection)
        else:
            self.by_listener[connection.listener] -= 1
            if connection.listener != self.inter_broker:
                self.total -= 1
        self._pump()

    # -- the limits ------------------------------------------------------------------------

    def _room(self, listener: str) -> bool:
        if self.by_listener.get(listener, 0) >= self.listener_max.get(listener, NO_LIMIT):
            return False
        return listener == self.inter_broker or self.total < self.max_connections

    def _trim(self, times: deque[float], now: float) -> None:
        while times and now - times[0] >= 1.0:
            times.popleft()

    def _rate_wait(self, listener: str) -> float:
        """Seconds until ``listener`` may admit another connection (0: now)."""
        now = self.clock()
        times = self.accepted.setdefault(listener, deque())
        self._trim(times, now)
        self._trim(self.accepted_all, now)
        wait = 0.0
        if len(times) >= self.listener_rate.get(listener, NO_LIMIT):
            wait = max(wait, times[0] + 1.0 - now)
        if listener != self.inter_broker and len(self.accepted_all) >= self.rate:
            wait = max(wait, self.accepted_all[0] + 1.0 - now)
        return wait

    def _rate_allows(self, listener: str) -> bool:
        return self._rate_wait(listener) <= 0

    def _admit(self, connection: KafkaConnection) -> None:
        listener = connection.listener
        self.by_listener[listener] = self.by_listener.get(listener, 0) + 1
        if listener != self.inter_broker:
            self.total += 1
        if self.rate < NO_LIMIT or self.listener_rate.get(listener, NO_LIMIT) < NO_LIMIT:
            now = self.clock()
            self.accepted.setdefault(listener, deque()).append(now)
            if listener != self.inter_broker:
                self.accepted_all.append(now)
        if connection.waiting:
            connection.waiting = False
            connection.last_active = time.monotonic()
            connection.transport.resumeProducing()
            log.info("connection from %s on listener %s admitted after waiting for a slot",
                     connection.peer, listener)

    def _pump(self) -> None:
        """Admit waiting connections where the limits allow; accept on a port only then."""
        retry: float | None = None
        for listener in self.factories:
            queue = self.waiting.setdefault(listener, deque())
            while queue and self._room(listener) and self._rate_allows(listener):
                self._admit(queue.popleft())
            room = self._room(listener)
            wait = self._rate_wait(listener) if room else 0.0
            self._accepting(listener, not queue and room and wait <= 0)
            if room and wait > 0:
                retry = wait if retry is None else min(retry, wait)
        if retry is not None and (self._pump_call is None or not self._pump_call.active()):
            self._pump_call = self.reactor.callLater(retry + 0.001, self._pump)

    def _accepting(self, listener: str, accept: bool) -> None:
        port = self.ports.get(listener)
        if not (hasattr(port, "stopReading") and hasattr(port, "startReading")):
            return  # none (yet), or a port that cannot pause
        if accept and listener in self._paused:
            self._paused.discard(listener)
            port.startReading()
            log.info("listener %s accepts connections again", listener)
        elif not accept and listener not in self._paused:
            self._paused.add(listener)
            port.stopReading()
            log.info("listener %s stops accepting: %d connections on it, %d on the broker "
                     "(max.connections / max.connection.creation.rate)", listener,
                     self.by_listener.get(listener, 0), self.total)

    # -- idle connections ------------------------------------------------------------------

    def close_idle(self) -> None:
        """Close every served connection idle for more than connections.max.idle.ms."""
        if self.idle_ms is None:
            return
        deadline = time.monotonic() - self.idle_ms / 1000.0
        for factory in self.factories.values():
            for connection in list(factory.connections):
                if (not connection.waiting and not connection.busy
                        and connection.last_active < deadline and connection.connected_and_open):
                    self.idle_closed += 1
                    connection.close_idle(self.idle_ms)
