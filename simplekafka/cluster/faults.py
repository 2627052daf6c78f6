"""Fault injection on a LocalCluster's brokers: crash, freeze, thaw, lose the ZooKeeper session.

Each fault is what a real machine does to Kafka:

* ``kill`` is SIGKILL: a crash; no deregistration, no flush (the page cache
  survives, as after a process crash);
* ``pause`` is SIGSTOP: a stalled process (a long GC, a frozen VM) that
  still believes it leads; ``resume`` is SIGCONT, and the zombie wakes up;
* ``expire_session`` ends the broker's ZooKeeper session from outside, the way
  test harnesses do: connect with the broker's session id and password, then
  close. The broker must notice, resign and register again.

``Faults`` picks its victims with a seeded ``random.Random``. The seed comes
from ``SIMPLEKAFKA_SEED`` when set, else it is drawn, and it is printed, so a
failing run can be replayed with ``SIMPLEKAFKA_SEED=<seed>``. Every fault is
also written to ``history`` with the time it happened.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass, field

from simplekafka.cluster.local import ClusterError, LocalCluster
from simplekafka.coordination.session_file import read_session

SEED_ENV = "SIMPLEKAFKA_SEED"


def seed_from_env() -> int:
    """``SIMPLEKAFKA_SEED`` if set (a decimal integer), else a fresh random seed."""
    text = os.environ.get(SEED_ENV, "").strip()
    if not text:
        return random.SystemRandom().randrange(2**32)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be a decimal integer, got {text!r}") from None


@dataclass
class Fault:
    """One injected fault, for the record."""

    at: float
    action: str
    broker_id: int

    def __str__(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        return f"{when} {self.action} {self.broker_id}"


@dataclass
class Faults:
    """Injects faults into ``cluster``; seeded, printed and recorded."""

    cluster: LocalCluster
    seed: int = field(default_factory=seed_from_env)
    announce: bool = True
    history: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        self._paused: set[int] = set()
        if self.announce:
            print(f"fault injection seed {self.seed} (replay with {SEED_ENV}={self.seed})",
                  flush=True)

    # -- choosing victims ----------------------------------------------------------

    def pick(self, candidates: list[int] | None = None) -> int:
        """A running broker chosen by the seeded random generator."""
        pool = sorted(candidates if candidates is not None else self.cluster.running_brokers())
        if not pool:
            raise ClusterError("no running broker to pick")
        return self.random.choice(pool)

    def leader(self, topic: str, partition: int) -> int:
        """The partition's current leader (from its state znode), waiting for one if offline."""
        return self.cluster.wait_for_leader(topic, partition)

    def controller(self, timeout: float = 60.0) -> int:
        """The current controller (from ``/controller``), waiting for one if there is none."""
        return self.cluster.wait_for(self.cluster.controller_id, "a controller", timeout)

    # -- faults ------------------------------------------------------------------------

    def _note(self, action: str, broker_id: int) -> None:
        self.history.append(Fault(time.time(), action, broker_id))

    def kill(self, broker_id: int) -> None:
        """SIGKILL the broker (a crash) and reap it."""
        self._paused.discard(broker_id)
        self.cluster.kill(broker_id)
        self._note("kill", broker_id)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP the broker: it stops answering anyone but keeps its sockets and beliefs."""
        self._signal(broker_id, signal.SIGSTOP)
        self._paused.add(broker_id)
        _wait_until_stopped(self.cluster.brokers[broker_id].pid)
        self._note("pause", broker_id)

    def resume(self, broker_id: int) -> None:
        """SIGCONT a paused broker."""
        self._signal(broker_id, signal.SIGCONT)
        self._paused.discard(broker_id)
        self._note("resume", broker_id)

    def expire_session(self, broker_id: int, timeout: float = 30.0) -> None:
        """End the broker's ZooKeeper session from outside (its ephemeral znodes vanish)."""
        from kazoo.client import KazooClient

        from simplekafka.coordination.connection import parse_connect_string

        session_id, password = read_session(self.cluster.session_file(broker_id))
        hosts, _chroot = parse_connect_string(self.cluster.zookeeper_connect)
        intruder = KazooClient(hosts=hosts, client_id=(session_id, password))
        try:
            intruder.start(timeout=timeout)
        finally:
            intruder.stop()  # closes the session: for ZooKeeper, it is the broker's that ends
            intruder.close()
        self._note("expire-session", broker_id)

    def hard_bounce(self, broker_id: int, timeout: float = 60.0) -> None:
        """SIGKILL, wait until ``/brokers/ids/<id>`` has vanished, start again and wait to serve."""
        self.kill(broker_id)
        self.cluster.wait_for_znode_gone(broker_id, timeout)
        self.cluster.restart(broker_id)
        self._note("restart", broker_id)

    def restart(self, broker_id: int) -> None:
        """Start a killed broker again on its old port and data."""
        self.cluster.restart(broker_id)
        self._note("restart", broker_id)

    def heal(self) -> None:
        """SIGCONT everything still paused (call in a finally: a stopped broker blocks stop())."""
        for broker_id in sorted(self._paused):
            self.resume(broker_id)

    def _signal(self, broker_id: int, signum: int) -> None:
        broker = self.cluster.brokers.get(broker_id)
        pid = broker.pid if broker is not None and broker.is_running else None
        if pid is None:
            raise ClusterError(f"broker {broker_id} is not running")
        os.kill(pid, signum)

    def describe(self) -> str:
        """The seed and every fault so far, one per line."""
        lines = [f"seed {self.seed}"] + [str(fault) for fault in self.history]
        return "\n".join(lines)


def _wait_until_stopped(pid: int | None, timeout: float = 5.0) -> None:
    """Signals are delivered asynchronously: wait until Linux shows the process stopped."""
    if pid is None:  # gone already: nothing to wait for
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return  # no /proc (not Linux): nothing to wait on
        if state in ("T", "t"):
            return
        time.sleep(0.01)
