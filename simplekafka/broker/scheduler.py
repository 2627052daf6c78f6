"""The broker's periodic work (the tasks Kafka schedules on its ``KafkaScheduler``).

Each is a ``PeriodicTask`` (a Twisted ``TimerService``) in the broker's service
tree, named as Kafka names the task:

=================================  ========================================
``highwatermark-checkpoint``       the HW checkpoint, written on a worker
                                   thread (its two fsyncs would stall the
                                   reactor)
``kafka-log-retention``            segments past retention removed
``delete-expired-group-metadata``  committed offsets past their retention
``transaction-abort``              transactions past their timeout aborted
``isr-expiration``                 lagging followers dropped from ISRs
``kafka-log-flusher``              logs flushed (only with
                                   ``log.flush.interval.ms``)
=================================  ========================================

A stop waits for a call in progress: the final checkpoint at shutdown never
races a periodic one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from twisted.internet import defer

from simplekafka.broker.collaborators import in_worker_thread
from simplekafka.broker.services import PeriodicTask

if TYPE_CHECKING:
    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.group.coordinator import GroupCoordinator
    from simplekafka.broker.replica_manager import ReplicaManager
    from simplekafka.broker.transaction.coordinator import TransactionCoordinator
    from simplekafka.storage import LogManager

log = logging.getLogger(__name__)


def scheduled_tasks(config: BrokerConfig, reactor: Reactor, replica_manager: ReplicaManager,
                    log_manager: LogManager, group_coordinator: GroupCoordinator,
                    transaction_coordinator: TransactionCoordinator,
                    deletes_by_retention: Callable[[str], bool]) -> list[PeriodicTask]:
    """The periodic tasks in the order they start (they stop in the reverse one)."""

    def checkpoint_high_watermarks() -> defer.Deferred:
        """Producer snapshots of partitions with open transactions are written first."""
        replica_manager.snapshot_producers()
        marks = replica_manager.high_watermarks()  # taken on the reactor, consistent
        return in_worker_thread(reactor, replica_manager.write_high_watermarks, marks)

    def enforce_retention() -> None:
        removed = log_manager.enforce_retention(
            high_watermarks=replica_manager.high_watermarks(), deletes=deletes_by_retention)
        if removed:
            log.info("retention removed %d segments", removed)

    lag_max_ms = config["replica.lag.time.max.ms"]
    tasks = [
        PeriodicTask("highwatermark-checkpoint",
                     config["replica.high.watermark.checkpoint.interval.ms"] / 1000.0,
                     checkpoint_high_watermarks, reactor),
        PeriodicTask("kafka-log-retention", config["log.retention.check.interval.ms"] / 1000.0,
                     enforce_retention, reactor),
        PeriodicTask("delete-expired-group-metadata",
                     config["offsets.retention.check.interval.ms"] / 1000.0,
                     group_coordinator.expire_offsets, reactor),
        PeriodicTask("transaction-abort",
                     config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
                     / 1000.0, transaction_coordinator.abort_timed_out, reactor),
        PeriodicTask("isr-expiration", max(lag_max_ms / 2, 100) / 1000.0,
                     lambda: replica_manager.maybe_shrink_isrs(lag_max_ms), reactor),
    ]
    if config["log.flush.interval.ms"] is not None:
        tasks.append(PeriodicTask("kafka-log-flusher",
                                  min(config["log.flush.interval.ms"], 1000) / 1000.0,
                                  log_manager.flush_if_due, reactor))
    return tasks
