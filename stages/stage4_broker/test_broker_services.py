"""The broker's service tree, with fake services on Twisted's fake clock.

What must hold: children start in the order they were added, each after the
previous one's start finished (a Deferred is waited for); they stop in the
reverse order, each after the next one's stop finished; a start that fails
stops, in reverse, exactly the children that had started, and the failure
reaches the caller; a child whose stop fails does not keep the others running;
a periodic task first runs one interval after its start, and its stop waits
for a call in progress. The broker's own tree has its parts in Kafka's order.
"""

from __future__ import annotations

import pytest
from twisted.application import service
from twisted.internet import defer, task
from twisted.internet.testing import MemoryReactorClock

from simplekafka.broker.services import BrokerServices, PeriodicTask, Steps


class Fake(service.Service):
    """Records its start and stop in ``journal``; either may wait for a Deferred."""

    def __init__(self, name: str, journal: list[str], start_with: object = None,
                 stop_with: object = None) -> None:
        self.name = name
        self.journal = journal
        self.start_with = start_with
        self.stop_with = stop_with

    def startService(self):
        service.Service.startService(self)
        self.journal.append(f"start {self.name}")
        if isinstance(self.start_with, Exception):
            raise self.start_with
        return self.start_with

    def stopService(self):
        service.Service.stopService(self)
        self.journal.append(f"stop {self.name}")
        if isinstance(self.stop_with, Exception):
            raise self.stop_with
        return self.stop_with


def tree_of(*children: service.IService) -> BrokerServices:
    tree = BrokerServices()
    for child in children:
        tree.addService(child)
    return tree


def test_children_start_in_order_and_stop_in_reverse():
    journal: list[str] = []
    tree = tree_of(*(Fake(name, journal) for name in ("logs", "zookeeper", "listeners")))
    started = tree.startService()
    assert started.called and journal == ["start logs", "start zookeeper", "start listeners"]
    journal.clear()
    stopped = tree.stopService()
    assert stopped.called and journal == ["stop listeners", "stop zookeeper", "stop logs"]


def test_the_next_child_waits_for_a_start_and_a_stop_in_progress():
    journal: list[str] = []
    connecting, closing = defer.Deferred(), defer.Deferred()
    tree = tree_of(Fake("logs", journal), Fake("zookeeper", journal, connecting, closing),
                   Fake("controller", journal))
    started = tree.startService()
    assert journal == ["start logs", "start zookeeper"] and not started.called
    connecting.callback(None)
    assert journal[-1] == "start controller" and started.called
    journal.clear()
    stopped = tree.stopService()
    assert journal == ["stop controller", "stop zookeeper"] and not stopped.called
    closing.callback(None)
    assert journal[-1] == "stop logs" and stopped.called


@pytest.mark.parametrize("how", ["raises", "fails later"])
def test_a_failing_start_stops_what_started_and_fails(how):
    journal: list[str] = []
    later = defer.Deferred()
    failing = (Fake("zookeeper", journal, ConnectionError("no ZooKeeper"))
               if how == "raises" else Fake("zookeeper", journal, later))
    tree = tree_of(Fake("metrics", journal), Fake("logs", journal), failing,
                   Fake("controller", journal))
    started = tree.startService()
    if how == "fails later":
        later.errback(ConnectionError("no ZooKeeper"))
    failures = []
    started.addErrback(failures.append)
    assert [f.type for f in failures] == [ConnectionError]
    assert journal == ["start metrics", "start logs", "start zookeeper", "stop logs",
                       "stop metrics"]
    journal.clear()
    tree.stopService()  # nothing left to stop
    assert journal == []


def test_a_stop_during_a_start_stops_what_started_and_starts_nothing_more():
    journal: list[str] = []
    connecting = defer.Deferred()
    tree = tree_of(Fake("logs", journal), Fake("zookeeper", journal, connecting),
                   Fake("controller", journal))
    tree.startService()
    tree.stopService()
    connecting.callback(None)
    assert journal == ["start logs", "start zookeeper", "stop zookeeper", "stop logs"]


def test_a_failing_stop_does_not_keep_the_others_running():
    journal: list[str] = []
    tree = tree_of(Fake("logs", journal), Fake("zookeeper", journal,
                                               stop_with=RuntimeError("gone")),
                   Fake("controller", journal, stop_with=defer.fail(RuntimeError("late"))))
    tree.startService()
    journal.clear()
    stopped = tree.stopService()
    assert stopped.called and journal == ["stop controller", "stop zookeeper", "stop logs"]


def test_a_nested_tree_is_one_step_of_its_parent():
    journal: list[str] = []
    inner = tree_of(Fake("a", journal), Fake("b", journal))
    inner.setName("scheduler")
    tree = tree_of(Fake("logs", journal), inner, Steps("last", lambda: journal.append("x"),
                                                       start=lambda: journal.append("y")))
    tree.startService()
    tree.stopService()
    assert journal == ["start logs", "start a", "start b", "y", "x", "stop b", "stop a",
                       "stop logs"]


def test_a_periodic_task_waits_an_interval_first_and_its_stop_waits_for_the_call():
    clock = task.Clock()
    calls: list[defer.Deferred] = []

    def checkpoint() -> defer.Deferred:
        calls.append(defer.Deferred())
        return calls[-1]

    periodic = PeriodicTask("highwatermark-checkpoint", 5.0, checkpoint, clock)
    periodic.startService()
    assert calls == []  # Twisted's TimerService would have called at once
    clock.advance(5.0)
    assert len(calls) == 1
    stopped = periodic.stopService()
    assert not stopped.called  # the checkpoint in progress is finished first
    calls[0].callback(None)
    assert stopped.called


def test_the_brokers_tree_is_in_kafkas_start_order(tmp_path):
    from simplekafka.broker.broker import KafkaBroker
    from simplekafka.broker.config import BrokerConfig

    config = BrokerConfig.from_properties({
        "broker.id": "1", "log.dirs": str(tmp_path / "logs"),
        "zookeeper.connect": "127.0.0.1:1", "listeners": "PLAINTEXT://127.0.0.1:9092",
        "metrics.listener": "127.0.0.1:0",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    broker = KafkaBroker(config, MemoryReactorClock())
    assert [child.name for child in broker.services] == [
        "metrics", "logs", "log-cleaner", "zookeeper", "controller", "socket-server",
        "scheduler", "dynamic-config-manager", "acl-changes", "alter-partition-manager"]
    assert [child.name for child in broker.services.getServiceNamed("scheduler")] == [
        "highwatermark-checkpoint", "kafka-log-retention", "delete-expired-group-metadata",
        "transaction-abort", "isr-expiration"]
