"""A cluster member for stage 2: a "broker" with no log and no network server yet.

It does exactly the ZooKeeper part of a broker's life: register under
``/brokers/ids/<id>``, contend for controller, and, while controller, keep a
leader for every partition (new partitions get the first live replica; when a
broker dies, its partitions move to the next live ISR member with the leader
epoch bumped). Every write the controller makes is a fenced transaction.

Run one per process, as the demo and the tests do::

    python -m stages.stage2_zookeeper.member --zookeeper 127.0.0.1:2181 --broker-id 1

It prints one JSON object per line on stdout for each thing that happens
(``registered``, ``controller``, ``elected``, ``brokers``, ``leaders``, ``resigned``)
and runs until it is killed or its stdin closes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from kazoo.client import KazooClient

from simplekafka.coordination import (
    BrokerChanges,
    BrokerRegistration,
    ControllerElection,
    ControllerMovedError,
    NotControllerError,
    TopicChanges,
    WriteConflictError,
    ZkPaths,
    ZooKeeperConnectError,
    add_partition_state_creation,
    connect_zookeeper,
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    list_topics,
    read_partition_state,
    read_topic_assignment,
)

_print_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    """One JSON line on stdout, flushed at once so a parent process sees it live."""
    with _print_lock:
        print(json.dumps({"event": event, **fields}), flush=True)


class Member:
    """Registration + election + the controller's one duty in this stage: leaders."""

    def __init__(self, zk: KazooClient, broker_id: int, port: int, rack: str | None):
        self.zk = zk
        self.registration = BrokerRegistration(zk, broker_id, "127.0.0.1", port, rack)
        self.election = ControllerElection(
            zk, broker_id, registration=self.registration,
            on_elected=self.on_elected, on_resigned=lambda: emit("resigned"),
            on_brokers_changed=self.on_brokers_changed,
            on_controller_changed=lambda cid: emit("controller", id=cid),
            on_topics_changed=self.on_topics_changed,
        )
        # Callbacks run on the election's event thread (call_soon defaults to
        # calling directly), so the partition work below never interleaves.

    def start(self) -> None:
        self.election.start()
        self.election.wait_until_settled(timeout=30)
        emit("registered", broker_id=self.registration.broker_id, epoch=self.registration.epoch)

    def on_elected(self, epoch: int) -> None:
        emit("elected", epoch=epoch)

    def on_brokers_changed(self, changes: BrokerChanges) -> None:
        emit("brokers", live=sorted(changes.live), new=list(changes.new),
             dead=list(changes.dead), bounced=list(changes.bounced))
        try:
            self.elect_leaders(set(changes.live))
        except NotControllerError as exc:  # fenced: a newer controller took over
            emit("fenced", reason=str(exc))

    def on_topics_changed(self, changes: TopicChanges) -> None:
        if changes.new:
            emit("topics", new=sorted(changes.new))
            try:
                self.elect_leaders(set(self.election.live_brokers))
            except NotControllerError as exc:
                emit("fenced", reason=str(exc))

    def elect_leaders(self, live: set[int]) -> None:
        """Give every partition of every topic a live leader if it can have one."""
        controller_epoch = self.election.epoch or 0
        moved = []
        for topic in list_topics(self.zk):
            assignment = read_topic_assignment(self.zk, topic)
            if assignment is None:
                continue
            for partition, replicas in assignment.partitions.items():
                change = self._elect_one(topic, partition, replicas, live, controller_epoch)
                if change:
                    moved.append(change)
        if moved:
            emit("leaders", changes=moved)

    def _elect_one(self, topic: str, partition: int, replicas: tuple[int, ...], live: set[int],
                   controller_epoch: int) -> dict[str, Any] | None:
        current = read_partition_state(self.zk, topic, partition)
        transaction = self.election.fenced_transaction()
        if current is None:
            state = elect_leader_for_new_partition(replicas, live, controller_epoch)
            if state is None:
                return None
            add_partition_state_creation(transaction, self.zk, topic, partition, state)
        else:
            old, version = current
            state = elect_leader_for_offline_partition(replicas, old, live, controller_epoch)
            if state == old:
                return None
            transaction.set_data(ZkPaths.partition_state(topic, partition), state.to_json(),
                                 version=version)
        try:
            transaction.commit()
        except WriteConflictError:
            return None  # someone changed it meanwhile; the next broker change retries
        except ControllerMovedError:
            raise
        return {"topic": topic, "partition": partition, "leader": state.leader,
                "leader_epoch": state.leader_epoch, "isr": list(state.isr)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", required=True, help="host:port[/chroot]")
    parser.add_argument("--broker-id", type=int, required=True)
    parser.add_argument("--port", type=int, default=9092, help="advertised port (not opened)")
    parser.add_argument("--rack")
    parser.add_argument("--session-timeout", type=float, default=3.0, help="seconds")
    args = parser.parse_args(argv)
    if args.broker_id < 0:
        parser.error(f"--broker-id must be 0 or more, got {args.broker_id}")
    # kazoo warns on every dropped connection; the events we print tell the story.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    try:
        zk = connect_zookeeper(args.zookeeper, timeout=15, session_timeout=args.session_timeout)
    except ZooKeeperConnectError as exc:
        print(f"member: error: {exc}", file=sys.stderr)
        return 2
    member = Member(zk, args.broker_id, args.port, args.rack)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    member.start()
    stop.wait()
    member.election.stop()
    member.registration.deregister()
    zk.stop()
    zk.close()
    emit("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())


class MemberProcess:
    """The launcher side: one member in a child process, its JSON events collected live."""

    def __init__(self, zookeeper: str, broker_id: int, rack: str | None = None,
                 session_timeout: float = 3.0):
        self.broker_id = broker_id
        command = [sys.executable, "-m", "stages.stage2_zookeeper.member",
                   "--zookeeper", zookeeper, "--broker-id", str(broker_id),
                   "--port", str(9090 + broker_id), "--session-timeout", str(session_timeout)]
        if rack:
            command += ["--rack", rack]
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._output_done = False
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                self.events.append(event)
                self._changed.notify_all()
        with self._changed:
            self._output_done = True
            self._changed.notify_all()

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [e for e in self.events if e["event"] == kind]

    def wait_for(self, kind: str, timeout: float = 30.0, count: int = 1) -> dict[str, Any]:
        """The ``count``-th event of this kind, waiting for it up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(found := [e for e in self.events if e["event"] == kind]) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._output_done:
                    raise TimeoutError(f"broker {self.broker_id}: no {kind!r} event "
                                       f"(exit status {self.process.poll()})")
                self._changed.wait(min(remaining, 0.5))
            return found[count - 1]

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, so its znodes live until its session times out."""
        self.process.kill()
        self.process.wait(10)

    def stop(self, timeout: float = 15.0) -> None:
        """Clean stop (closing stdin); SIGKILL if it does not finish in time."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
