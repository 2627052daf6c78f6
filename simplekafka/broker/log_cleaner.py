"""The broker's log cleaner thread (Kafka's LogCleaner): compaction without blocking produce.

Every ``log.cleaner.backoff.ms`` (and at once after a round that did work) the
reactor asks the CleanerManager for the filthiest compacted log (a cheap walk
over segment sizes), hands the plan to a thread of its own that builds the
offset map and writes the ``.cleaned`` segments (the heavy part: reading,
decoding, re-encoding), and takes the result back on the reactor, where
``Log.replace_segments`` swaps the segments in between two appends. The
cleaner checkpoint is written on a worker thread. One round at a time, as
Kafka's default ``log.cleaner.threads=1``.

Test hook: ``SIMPLEKAFKA_CLEANER_HOLD=<stage>:<partition dir name>:<path>``
holds a round of that partition while the file ``<path>`` exists, after
touching ``<path>.reached``, at the stage ``cleaned`` (the .cleaned files are
written) or ``swap`` (the group is committed as .swap files), so that a test
can SIGKILL the broker exactly there. The ``swap`` hold blocks the reactor (it
is the swap's own window).

In the broker's service tree it is a service: started after the logs are open
(when ``log.cleaner.enable``), stopped before they close.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from twisted.application import service
from twisted.internet import task

from simplekafka.broker.collaborators import in_worker_thread
from simplekafka.storage import Log, LogManager
from simplekafka.storage.cleaner import Cleaner, CleanPlan, CleanResult

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.config import BrokerConfig

log = logging.getLogger(__name__)

HOLD_ENV = "SIMPLEKAFKA_CLEANER_HOLD"


class LogCleaner(service.Service):
    """Drives cleaning rounds; ``start`` and ``stop`` from the reactor."""

    def __init__(self, reactor: Reactor, log_manager: LogManager, config: BrokerConfig,
                 high_watermarks: Callable[[], Mapping[tuple[str, int], int]]):
        self.setName("log-cleaner")
        self.reactor = reactor
        self.log_manager = log_manager
        self.high_watermarks = high_watermarks
        self.backoff_s = config["log.cleaner.backoff.ms"] / 1000.0
        self.enabled = config["log.cleaner.enable"]
        self.cleaner = Cleaner(config["log.cleaner.dedupe.buffer.size"],
                               config["message.max.decompressed.bytes"])
        self.rounds = 0
        self.last_result: CleanResult | None = None
        self._loop: task.LoopingCall | None = None
        self._running: threading.Thread | None = None
        self._stopped = False
        self._hold_stage, self._hold_partition, self._hold_path = _hold_from_environment()
        if self._hold_stage == "swap":
            Log.swap_hook = self._hold_at_swap

    def startService(self) -> None:
        service.Service.startService(self)
        if self.enabled:
            self.start()

    def stopService(self) -> None:
        service.Service.stopService(self)
        self.stop()

    def start(self) -> None:
        self._loop = task.LoopingCall(self.maybe_clean)
        # Twisted names its reactor types as zope interfaces, which a Protocol cannot name.
        self._loop.clock = cast("IReactorTime", self.reactor)
        self._loop.start(self.backoff_s, now=False).addErrback(
            lambda f: log.error("log cleaner failed: %s", f.getTraceback()))

    def stop(self) -> None:
        """Stop choosing logs; a round in progress is aborted (its files are left to the
        next start to remove)."""
        self._stopped = True
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        plan = self.log_manager.cleaner_manager.in_progress
        if plan is not None:
            plan.aborted = True

    def maybe_clean(self) -> None:
        """On the reactor: start a round if none runs and some log needs one."""
        if self._stopped or self._running is not None:
            return
        manager = self.log_manager.cleaner_manager
        plan = manager.grab_filthiest(self.log_manager.logs, int(time.time() * 1000),
                                      self.high_watermarks())
        if plan is None:
            return
        log.info("log cleaner: cleaning %s-%d (dirty ratio %.2f, offsets %d to %d)",
                 plan.topic_partition[0], plan.topic_partition[1], plan.dirty_ratio,
                 plan.first_dirty, plan.first_uncleanable)
        self._running = threading.Thread(target=self._clean_on_thread, args=(plan,),
                                         daemon=True, name="log-cleaner")
        self._running.start()

    def _clean_on_thread(self, plan: CleanPlan) -> None:
        try:
            result = self.cleaner.clean(plan)
            if self._hold_stage == "cleaned":
                self._hold(plan.log.directory)
        except BaseException as exc:  # reported on the reactor
            self.reactor.callFromThread(self._finished, plan, None, exc)
        else:
            self.reactor.callFromThread(self._finished, plan, result, None)

    def _finished(self, plan: CleanPlan, result: CleanResult | None,
                  error: BaseException | None) -> None:
        self._running = None
        manager = self.log_manager.cleaner_manager
        if error is not None or result is None:
            manager.done(None, plan)
            if not plan.aborted:
                log.error("log cleaner: cleaning %s-%d failed: %s", *plan.topic_partition,
                          error)
            return
        try:
            swapped = plan.log.replace_segments(result.groups, plan.generation)
        except Exception as exc:
            manager.done(None, plan)
            log.error("log cleaner: swapping %s-%d failed: %s", *plan.topic_partition, exc)
            return
        if swapped < len(result.groups):
            manager.done(None, plan)
            log.info("log cleaner: %s-%d changed while it was cleaned; round dropped",
                     *plan.topic_partition)
            return
        manager.done(result, plan)
        self.rounds += 1
        self.last_result = result
        log.info("log cleaner: cleaned %s-%d: %s", *plan.topic_partition,
                 result.stats.summary())
        entries = manager.checkpoint_entries(self.log_manager.logs)
        in_worker_thread(self.reactor, manager.write_checkpoints, entries).addErrback(
            lambda f: log.warning("cleaner checkpoint not written: %s", f.getErrorMessage()))
        if not self._stopped:
            self.reactor.callLater(0, self.maybe_clean)  # more may be due: no backoff

    # -- the test hook ----------------------------------------------------------------
    def _hold(self, directory: Path) -> None:
        if self._hold_path is None or directory.name != self._hold_partition:
            return
        Path(str(self._hold_path) + ".reached").touch()
        while self._hold_path.exists() and not self._stopped:
            time.sleep(0.05)

    def _hold_at_swap(self, directory: Path) -> None:
        self._hold(directory)


def _hold_from_environment() -> tuple[str | None, str | None, Path | None]:
    value = os.environ.get(HOLD_ENV, "")
    parts = value.split(":", 2)
    if len(parts) != 3:
        return None, None, None
    return parts[0], parts[1], Path(parts[2])
