"""Controller election, fencing and the controller's view of live brokers.

Exactly as ZooKeeper-mode Kafka does it:

- **Election.** Watch ``/controller``. When it is absent, read the epoch and
  the znode version of ``/controller_epoch``, then in ONE multi create the
  ephemeral ``/controller`` and set ``/controller_epoch`` to epoch + 1 expecting
  that version. NODEEXISTS or BADVERSION means someone else won.
- **Fencing.** Every write a controller makes is a multi that starts with a
  check of ``/controller_epoch``'s version (the one its election produced). If a
  newer controller has been elected since, the check fails, nothing in the
  multi is applied, and this controller resigns. A "zombie" controller (its
  session expired, but it has not noticed yet) can therefore write nothing.
- **Session expiry.** Resign, re-register the broker, re-elect.
- **Bookkeeping.** The controller watches ``/brokers/ids`` and diffs ids and
  epochs (czxids) against what it knew: new, dead, and bounced brokers.

Like Kafka's controller, everything happens on one event thread, one event at
a time: watches and session changes only enqueue events. Callbacks
(``on_elected``, ``on_resigned``, ``on_brokers_changed``,
``on_controller_changed``) are delivered through the caller's ``call_soon``
(see :mod:`simplekafka.coordination.handoff`), so a Twisted or asyncio program
gets them on its loop and never blocks on ZooKeeper.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.protocol.states import WatchedEvent

from simplekafka.coordination.connection import ensure_kafka_paths
from simplekafka.coordination.handoff import CallSoon, call_directly
from simplekafka.coordination.registration import BrokerIdInUseError, BrokerRegistration
from simplekafka.coordination.znodes import (
    ControllerInfo,
    ZkPaths,
    ZnodeFormatError,
    decode_controller_epoch,
    encode_controller_epoch,
)

__all__ = [
    "BrokerChanges",
    "ControllerElection",
    "ControllerMovedError",
    "FencedTransaction",
    "NotControllerError",
    "TopicChanges",
    "WriteConflictError",
    "diff_brokers",
    "read_controller",
    "read_controller_epoch",
]

log = logging.getLogger(__name__)
T = TypeVar("T")


class NotControllerError(RuntimeError):
    """This broker is not (or no longer) the controller."""


class ControllerMovedError(NotControllerError):
    """A fenced write failed its ``/controller_epoch`` check: a newer controller exists."""


class WriteConflictError(RuntimeError):
    """A fenced write failed on one of its own conditions (e.g. a stale znode version).

    ``results`` holds kazoo's per-operation results (exceptions for the failed ones).
    """

    def __init__(self, message: str, results: list[object]):
        super().__init__(message)
        self.results = results


@dataclass(frozen=True)
class BrokerChanges:
    """What changed in ``/brokers/ids`` since the controller last looked.

    ``live`` maps every live broker id to its epoch (czxid). A *bounced* broker
    is one still present under the same id with a larger epoch: it restarted
    (or its session expired and it re-registered) between two looks, and must
    be handled as a failure followed by a startup.
    """

    live: dict[int, int]
    new: tuple[int, ...] = ()
    dead: tuple[int, ...] = ()
    bounced: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.new or self.dead or self.bounced)


@dataclass(frozen=True)
class TopicChanges:
    """Topics under ``/brokers/topics``: all of them, and which appeared or went."""

    topics: frozenset[str]
    new: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()


def diff_brokers(before: dict[int, int], after: dict[int, int]) -> BrokerChanges:
    """Compare two ``{broker id: epoch}`` snapshots (pure; the heart of the bookkeeping)."""
    return BrokerChanges(
        live=dict(after),
        new=tuple(sorted(set(after) - set(before))),
        dead=tuple(sorted(set(before) - set(after))),
        bounced=tuple(sorted(b for b in set(before) & set(after) if after[b] > before[b])),
    )


def read_controller(zk: KazooClient) -> int | None:
    """The current controller's broker id, or None."""
    try:
        data, _stat = zk.get(ZkPaths.CONTROLLER)
    except NoNodeError:
        return None
    return ControllerInfo.from_json(data).broker_id


def read_controller_epoch(zk: KazooClient) -> tuple[int, int]:
    """``(controller epoch, znode version)`` of ``/controller_epoch`` (``(0, -1)`` if absent)."""
    try:
        data, stat = zk.get(ZkPaths.CONTROLLER_EPOCH)
    except NoNodeError:
        return 0, -1
    return decode_controller_epoch(data), stat.version


class PendingMulti(Protocol):
    """A multi sent without waiting (kazoo's IAsyncResult): ``get`` waits for its results."""

    def get(self) -> list[object]: ...


class FencedTransaction:
    """A kazoo multi that begins with a check of ``/controller_epoch``'s version.

    Build it with ``create``/``set_data``/``delete``/``check``, then ``commit()``:
    it returns kazoo's results, raises ControllerMovedError when the epoch check
    failed (nothing was written), and WriteConflictError when another condition
    failed (nothing was written either).
    """

    def __init__(self, zk: KazooClient, epoch_zk_version: int,
                 on_moved: Callable[[], None] | None = None):
        self._transaction = zk.transaction()
        self._transaction.check(ZkPaths.CONTROLLER_EPOCH, epoch_zk_version)
        self._on_moved = on_moved
        self.epoch_zk_version = epoch_zk_version

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False,
               sequence: bool = False) -> FencedTransaction:
        self._transaction.create(path, value, ephemeral=ephemeral, sequence=sequence)
        return self

    def set_data(self, path: str, value: bytes, version: int = -1) -> FencedTransaction:
        self._transaction.set_data(path, value, version)
        return self

    def delete(self, path: str, version: int = -1) -> FencedTransaction:
        self._transaction.delete(path, version)
        return self

    def check(self, path: str, version: int) -> FencedTransaction:
        self._transaction.check(path, version)
        return self

    def commit(self) -> list[object]:
        """Apply all operations atomically, or none; returns results without the check."""
        return self.results(self._transaction.commit())

    def commit_async(self) -> PendingMulti:
        """Send the multi without waiting (kazoo's IAsyncResult); pass ``.get()`` to
        ``results``. Many sent before the first is awaited share the round trips, as
        Kafka's controller pipelines its per-partition multis."""
        return self._transaction.commit_async()

    def results(self, results: list[object]) -> list[object]:
        """Interpret a committed multi's results (see the class docstring)."""
        if isinstance(results[0], (BadVersionError, NoNodeError)):
            if self._on_moved is not None:
                self._on_moved()
            raise ControllerMovedError(
                f"controller epoch znode version is no longer {self.epoch_zk_version}: "
                "a newer controller was elected; nothing was written"
            )
        failures = [r for r in results[1:] if isinstance(r, Exception)
                    and not isinstance(r, RolledBackError)]
        if failures:
            raise WriteConflictError(f"fenced write failed: {failures[0]!r}", results[1:])
        return results[1:]


@dataclass
class _Event:
    kind: str
    payload: Callable[[], object] | None = None  # what a "call" event runs
    done: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


class ControllerElection:
    """One broker's part in controller election (all brokers run one).

    ``start()`` returns at once; the election runs on the event thread. With a
    ``registration``, a session expiry is handled completely: resign, register
    again, re-elect. ``call_soon`` delivers the callbacks (default: on the
    event thread itself).
    """

    def __init__(
        self,
        zk: KazooClient,
        broker_id: int,
        registration: BrokerRegistration | None = None,
        on_elected: Callable[[int], object] | None = None,
        on_resigned: Callable[[], object] | None = None,
        on_brokers_changed: Callable[[BrokerChanges], object] | None = None,
        on_controller_changed: Callable[[int | None], object] | None = None,
        on_topics_changed: Callable[[TopicChanges], object] | None = None,
        call_soon: CallSoon = call_directly,
    ):
        self.zk = zk
        self.broker_id = broker_id
        self.registration = registration
        self._callbacks: dict[str, Callable[..., object] | None] = {
            "elected": on_elected, "resigned": on_resigned,
            "brokers_changed": on_brokers_changed, "controller_changed": on_controller_changed,
            "topics_changed": on_topics_changed,
        }
        self._call_soon = call_soon
        self._events: queue.Queue[_Event] = queue.Queue()
        self._queue_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._session_id: int | None = None
        self._session_lost = False
        self._stopping = False
        # State below is written only on the event thread.
        self.is_controller = False
        self.epoch: int | None = None  # the controller epoch we won
        self.epoch_zk_version: int | None = None  # /controller_epoch version after our win
        self.controller_id: int | None = None  # last controller seen
        self.live_brokers: dict[int, int] = {}  # only kept while controller
        self.topics: set[str] = set()  # only kept while controller

    # ---- public API -------------------------------------------------------------------

    @property
    def controller_epoch(self) -> int | None:
        """The controller epoch we won (None unless controller); same as ``epoch``."""
        return self.epoch if self.is_controller else None

    @property
    def controller_epoch_zk_version(self) -> int | None:
        """The ``/controller_epoch`` znode version every fenced write checks."""
        return self.epoch_zk_version

    def start(self) -> ControllerElection:
        """Start the event thread, register (if given a registration) and contend."""
        if self._thread is not None:
            return self
        self._session_id = self.zk.client_id[0] if self.zk.client_id else None
        self.zk.add_listener(self._on_session_state)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"controller-events-{self.broker_id}")
        self._thread.start()
        self._enqueue("startup")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Resign (deleting ``/controller`` if ours) and stop the event thread.

        An election is used once: after ``stop()`` make a new one to contend again.
        The ZooKeeper client stays open; it belongs to the caller.
        """
        if self._thread is None:
            return
        with self._queue_lock:  # nothing can be queued behind the shutdown event
            self._stopping = True
            self._enqueue("shutdown")
        self.zk.remove_listener(self._on_session_state)
        if threading.current_thread() is not self._thread:  # stop() from a callback: no join
            self._thread.join(timeout)
        self._thread = None

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run ``fn()`` on the event thread, between other events; returns a future.

        Controller work (leader elections, partition state writes) belongs here,
        so it never interleaves with an election or a broker change.
        """
        event = _Event("call", fn)
        with self._queue_lock:
            if self._stopping or self._thread is None:
                event.done.set_exception(NotControllerError(
                    f"the election of broker {self.broker_id} is not running"))
            else:
                self._events.put(event)
        return event.done

    def fenced_transaction(self) -> FencedTransaction:
        """A multi fenced by our controller epoch; raises NotControllerError if not controller."""
        version = self.epoch_zk_version
        if not self.is_controller or version is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return FencedTransaction(self.zk, version, on_moved=lambda: self._enqueue("moved"))

    def wait_until_settled(self, timeout: float = 10.0) -> None:
        """Block until all events queued so far are handled (for tests and scripts)."""
        self.submit(lambda: None).result(timeout)

    # ---- event plumbing ---------------------------------------------------------------

    def _enqueue(self, kind: str, payload: Callable[[], object] | None = None) -> None:
        self._events.put(_Event(kind, payload))

    def _on_session_state(self, state: str) -> None:
        # Called on kazoo's connection thread: it must not block, so only enqueue.
        if self._stopping:
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self._enqueue("session_lost")
        elif state == KazooState.CONNECTED:
            session = self.zk.client_id[0] if self.zk.client_id else None
            if self._session_lost or session != self._session_id:
                self._session_lost = False
                self._session_id = session
                self._enqueue("session_new")
            else:  # the same session, back after a disconnection: re-check everything
                self._enqueue("resync")

    def _on_controller_watch(self, event: WatchedEvent) -> None:
        self._enqueue("controller_changed")

    def _on_brokers_watch(self, event: WatchedEvent) -> None:
        self._enqueue("brokers_changed")

    def _on_topics_watch(self, event: WatchedEvent) -> None:
        self._enqueue("topics_changed")

    def _deliver(self, name: str, *args: object) -> None:
        callback = self._callbacks[name]
        if callback is not None:
            self._call_soon(lambda: callback(*args))

    def _run(self) -> None:
        handlers: dict[str, Callable[[], None]] = {
            "startup": self._handle_startup,
            "controller_changed": self._elect,
            "brokers_changed": self._handle_brokers_changed,
            "topics_changed": self._handle_topics_changed,
            "session_lost": self._handle_session_lost,
            "session_new": self._handle_session_new,
            "resync": self._resync,
            "moved": self._handle_moved,
        }
        while True:
            event = self._events.get()
            if event.kind == "shutdown":
                self._handle_shutdown()
                event.done.set_result(None)
                self._drain()
                return
            if event.kind == "call":
                try:
                    call = event.payload
                    event.done.set_result(call() if call is not None else None)
                except BaseException as exc:  # handed to the caller through the future
                    event.done.set_exception(exc)
                continue
            try:
                handlers[event.kind]()
            except (ConnectionLoss, SessionExpiredError) as exc:
                # Expected when the connection drops: the session listener enqueues a
                # resync (same session) or session_new (new session) on reconnection.
                log.debug("broker %s: %s interrupted: %r", self.broker_id, event.kind, exc)
                self._retry_later()
            except (KazooException, ZnodeFormatError, BrokerIdInUseError) as exc:
                log.warning("broker %s: %s failed: %r", self.broker_id, event.kind, exc)
                self._retry_later()
            except Exception:
                log.exception("broker %s: %s failed", self.broker_id, event.kind)
                self._retry_later()
            event.done.set_result(None)

    def _drain(self) -> None:
        """Fail the work still queued at shutdown, so nobody waits on it forever."""
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            if not event.done.done():
                event.done.set_exception(NotControllerError(
                    f"the election of broker {self.broker_id} has stopped"))

    def _retry_later(self, delay: float = 0.5) -> None:
        """Re-read everything soon (if still connected; otherwise reconnection will)."""
        if self._stopping or not self.zk.connected:
            return
        timer = threading.Timer(delay, self._enqueue, args=("resync",))
        timer.daemon = True
        timer.start()

    # ---- handlers (event thread only) -------------------------------------------------

    def _handle_startup(self) -> None:
        ensure_kafka_paths(self.zk)
        self._resync()

    def _resync(self) -> None:
        """Make sure we are registered, re-arm the watches, and catch up on changes.

        Every step is idempotent, so this is the answer to any interruption.
        """
        if self._stopping:
            return
        if self.registration is not None:
            self.registration.register()
        self._elect()
        if self.is_controller:
            self._handle_brokers_changed()
            self._handle_topics_changed()

    def _elect(self) -> None:
        """Read ``/controller`` (re-arming the watch); if nobody holds it, try to take it."""
        if self._stopping:
            return
        try:
            data, stat = self.zk.get(ZkPaths.CONTROLLER, watch=self._on_controller_watch)
        except NoNodeError:
            if self.zk.exists(ZkPaths.CONTROLLER, watch=self._on_controller_watch) is None:
                self._try_to_win()
            else:
                self._elect()
            return
        current = ControllerInfo.from_json(data).broker_id
        ours = current == self.broker_id and stat.ephemeralOwner == self.zk.client_id[0]
        if self.is_controller and not ours:
            self._resign()
        self._set_controller_id(current)

    def _try_to_win(self) -> None:
        epoch, version = read_controller_epoch(self.zk)
        transaction = self.zk.transaction()
        transaction.create(ZkPaths.CONTROLLER, ControllerInfo(self.broker_id).to_json(),
                           ephemeral=True)
        if version < 0:
            transaction.create(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1))
        else:
            transaction.set_data(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1),
                                 version)
        results = transaction.commit()
        if any(isinstance(r, Exception) for r in results):
            # NODEEXISTS (someone holds /controller) or BADVERSION (someone was quicker):
            # the watch on /controller fires, and _elect reads who won.
            log.debug("broker %s lost the election: %r", self.broker_id, results)
            return
        self.is_controller = True
        self.epoch = epoch + 1
        self.epoch_zk_version = results[1].version if version >= 0 else 0
        self._set_controller_id(self.broker_id)
        self.live_brokers = self._read_live_brokers()
        self.topics = set(self.zk.get_children(ZkPaths.BROKER_TOPICS, watch=self._on_topics_watch))
        log.info("broker %s is the controller, epoch %s", self.broker_id, self.epoch)
        self._deliver("elected", self.epoch)
        self._deliver("brokers_changed", diff_brokers({}, self.live_brokers))
        every_topic = frozenset(self.topics)
        self._deliver("topics_changed", TopicChanges(every_topic, new=every_topic))

    def _set_controller_id(self, controller_id: int | None) -> None:
        if controller_id != self.controller_id:
            self.controller_id = controller_id
            self._deliver("controller_changed", controller_id)

    def _resign(self) -> None:
        if not self.is_controller:
            return
        log.info("broker %s resigns as controller (epoch %s)", self.broker_id, self.epoch)
        self.is_controller = False
        self.epoch_zk_version = None
        self.live_brokers = {}
        self.topics = set()
        self._deliver("resigned")

    def _read_live_brokers(self) -> dict[int, int]:
        """``{broker id: czxid}`` from ``/brokers/ids``, re-arming the child watch."""
        live: dict[int, int] = {}
        for child in self.zk.get_children(ZkPaths.BROKER_IDS, watch=self._on_brokers_watch):
            stat = self.zk.exists(f"{ZkPaths.BROKER_IDS}/{child}") if child.isdigit() else None
            if stat is not None:
                live[int(child)] = stat.czxid
        return live

    def _handle_brokers_changed(self) -> None:
        if not self.is_controller:
            return
        changes = diff_brokers(self.live_brokers, self._read_live_brokers())
        self.live_brokers = changes.live
        if changes:
            self._deliver("brokers_changed", changes)

    def _handle_topics_changed(self) -> None:
        if not self.is_controller:
            return
        topics = set(self.zk.get_children(ZkPaths.BROKER_TOPICS, watch=self._on_topics_watch))
        changes = TopicChanges(frozenset(topics), frozenset(topics - self.topics),
                               frozenset(self.topics - topics))
        self.topics = topics
        if changes.new or changes.deleted:
            self._deliver("topics_changed", changes)

    def _handle_moved(self) -> None:
        """A fenced write found a newer controller epoch: resign, then see who leads."""
        self._resign()
        self._elect()

    def _handle_session_lost(self) -> None:
        self._resign()  # our /controller is gone with the session; never act on it again

    def _handle_session_new(self) -> None:
        self._resign()
        self._resync()

    def _handle_shutdown(self) -> None:
        if self.is_controller and self.epoch_zk_version is not None:
            try:  # resign cleanly so the others need not wait for our session to end
                FencedTransaction(self.zk, self.epoch_zk_version).delete(
                    ZkPaths.CONTROLLER).commit()
            except (NotControllerError, WriteConflictError, KazooException):
                pass
        self._resign()
