"""Moving leadership away before leaving (Kafka's ``KafkaServer.controlledShutdown``).

The first step of the broker's stop, while it still serves: with
``controlled.shutdown.enable`` the broker announces itself under
``/admin/controlled_shutdown/<id>`` (ephemeral); the controller moves its
leaderships to other in-sync replicas and drops it from ISRs. The broker waits
(up to ``controlled.shutdown.timeout.ms``) until it leads no partition that
another live, staying ISR member could lead, then the service tree stops.
Kafka sends a ControlledShutdown request to the controller instead of the
znode; the controller's side is the same election (``controller.elections``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, cast

from kazoo.exceptions import NodeExistsError
from twisted.internet import defer, task

from simplekafka.broker.collaborators import Reactor, in_worker_thread
from simplekafka.broker.controller import CONTROLLED_SHUTDOWN_PATH
from simplekafka.coordination.znodes import ZkPaths

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from twisted.internet.interfaces import IReactorTime

    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.partition import Partition

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2


@defer.inlineCallbacks
def controlled_shutdown(config: BrokerConfig, reactor: Reactor, zk: KazooClient | None,
                        partitions: Callable[[], Iterable[Partition]]
                        ) -> Generator[defer.Deferred, set[int] | None, None]:
    """Announce the shutdown and wait until no leadership here could move (or the timeout).

    ``partitions`` gives this broker's partitions (``is_leader``, ``isr``); a
    failure is logged, never raised: the broker stops anyway.
    """
    if not config["controlled.shutdown.enable"] or zk is None or not zk.connected:
        return
    path = f"{CONTROLLED_SHUTDOWN_PATH}/{config.broker_id}"

    def announce() -> None:
        try:
            zk.create(path, b"", ephemeral=True, makepath=True)
        except NodeExistsError:
            pass

    def staying_brokers() -> set[int]:
        live = {int(c) for c in zk.get_children(ZkPaths.BROKER_IDS) if c.isdigit()}
        leaving = {int(c) for c in zk.get_children(CONTROLLED_SHUTDOWN_PATH) if c.isdigit()}
        return live - leaving

    deadline = reactor.seconds() + config["controlled.shutdown.timeout.ms"] / 1000
    try:
        yield in_worker_thread(reactor, announce)
        movable: list[Partition] = []
        while reactor.seconds() < deadline:
            staying = (yield in_worker_thread(reactor, staying_brokers)) or set()
            movable = [p for p in partitions() if p.is_leader and set(p.isr) & staying]
            if not movable:
                log.info("controlled shutdown: no leaderships left to move")
                return
            # The reactor is an IReactorTime through zope, which a Protocol cannot name.
            yield task.deferLater(cast("IReactorTime", reactor), POLL_SECONDS, lambda: None)
        log.warning("controlled shutdown: still leading %d partitions at the timeout",
                    len(movable))
    except Exception as exc:
        log.warning("controlled shutdown failed (%s); stopping anyway", exc)
