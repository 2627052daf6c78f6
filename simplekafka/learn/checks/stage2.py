"""Stage 2 checks: the learner's znode work against a real ZooKeeper, several sessions at once.

Each exercise's check starts the embedded ZooKeeper in its work directory
(stopped in ``finally``, also when the time limit strikes), opens kazoo
sessions in a chroot, runs the learner's function, then reads the znodes back
with a session of its own and compares them with what SimpleKafka writes
(``simplekafka.coordination.znodes``). The steps taken are printed up to the
first wrong one. Races are made on purpose, at one exact moment, by handing the
learner a client through which the check acts (``Meanwhile``); sessions are
ended by closing them, or expired for real (``expire_session``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from simplekafka.coordination import (
    BrokerIdInUseError,
    BrokerInfo,
    BrokerRegistration,
    ControllerElection,
    ControllerInfo,
    ControllerMovedError,
    EmbeddedZooKeeper,
    PartitionState,
    WriteConflictError,
    ZkPaths,
    ZooKeeperLaunchError,
    connect_zookeeper,
    ensure_kafka_paths,
)
from simplekafka.coordination.testing import expire_session
from simplekafka.coordination.znodes import decode_controller_epoch, encode_controller_epoch
from simplekafka.json_values import JsonObject
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps

START_TIMEOUT = 60.0  # the JVM on a loaded machine
CONNECT_TIMEOUT = 15.0
SESSION_TIMEOUT = 4.0
WAIT = 20.0  # for ZooKeeper (and SimpleKafka's elections) to reach a state
TIME_LIMIT = 90.0  # a check takes a few seconds; this is for a learner function that hangs
CHROOT = "/learn-stage2"


class Text(str):
    """A string shown as it is (no quotes) in the expected/got lines."""

    def __repr__(self) -> str:
        return str(self)


def _now_ms() -> int:
    return int(time.time() * 1000)


# --- the real ZooKeeper and its sessions -----------------------------------------------------


class Sessions:
    """Kazoo sessions (one per broker) in a chroot of one server; all closed at the end."""

    def __init__(self, server: EmbeddedZooKeeper):
        self.server = server
        self.clients: list[KazooClient] = []
        self.elections: list[ControllerElection] = []
        self.frozen: list[threading.Event] = []

    def open(self, chroot: str = CHROOT) -> KazooClient:
        client = connect_zookeeper(self.server.connect_string + chroot, timeout=CONNECT_TIMEOUT,
                                   session_timeout=SESSION_TIMEOUT)
        self.clients.append(client)
        return client

    def close(self, client: KazooClient) -> None:
        """End the session cleanly: ZooKeeper deletes its ephemeral znodes at once."""
        with contextlib.suppress(Exception):
            client.stop()
            client.close()

    def freeze(self, election: ControllerElection) -> None:
        """Hold the election's event thread, as a long GC pause would, until close_all."""
        release = threading.Event()
        self.frozen.append(release)
        election.submit(lambda: release.wait(TIME_LIMIT))

    def close_all(self) -> None:
        for release in self.frozen:
            release.set()
        for election in self.elections:
            with contextlib.suppress(Exception):
                election.stop(timeout=5.0)
        for client in self.clients:
            self.close(client)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """kazoo and the elections log every dropped connection; expiring sessions is the point."""
    loggers = [logging.getLogger(name) for name in ("kazoo", "simplekafka.coordination")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


@contextlib.contextmanager
def real_zookeeper(workdir: Path, steps: Steps) -> Iterator[Sessions]:
    """Start the embedded ZooKeeper in ``workdir``; yield its Sessions; stop everything."""
    server = EmbeddedZooKeeper(port=0, data_dir=workdir / "zookeeper")
    sessions = Sessions(server)
    with _quiet():
        try:
            try:
                server.start(timeout=START_TIMEOUT)
            except ZooKeeperLaunchError as exc:
                raise ExerciseFailed(f"the embedded ZooKeeper did not start: {exc}") from None
            steps.step(f"start the embedded ZooKeeper on {server.connect_string} "
                       f"(its log: {server.log_file})")
            yield sessions
        finally:
            sessions.close_all()
            server.stop()


def _session(client: KazooClient) -> str:
    return f"{client.client_id[0]:#x}" if client.client_id else "none"


def _wait(steps: Steps, what: str, predicate: Callable[[], object],
          timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise steps.fail(f"{what}: not within {timeout:g} s", Text(what), Text("still not"))
        time.sleep(0.05)


class Meanwhile:
    """The learner's kazoo client, through which the check acts at one exact moment.

    The first time the learner calls one of ``methods`` on ``path``, the call
    goes to ZooKeeper, then ``action`` runs (another session acts), then the
    learner gets the call's answer (or its error). Everything else is the
    client itself.
    """

    def __init__(self, zk: KazooClient, methods: tuple[str, ...], path: str,
                 action: Callable[[], None]):
        self._zk = zk
        self._methods = methods
        self._path = path
        self._action = action
        self.fired = False

    def __getattr__(self, name: str) -> Any:  # forwards kazoo's whole (untyped) client API
        attribute = getattr(self._zk, name)
        if name not in self._methods:
            return attribute

        def call(*args: object, **kwargs: object) -> object:
            path = args[0] if args else kwargs.get("path")
            if self.fired or path != self._path:
                return attribute(*args, **kwargs)
            self.fired = True
            try:
                return attribute(*args, **kwargs)
            finally:
                self._action()

        return call


# --- calling the learner ---------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    value: object = None
    error: Exception | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        return f"returned {self.value!r}"


def _run(steps: Steps, what: str, function: Callable[..., object], *args: object) -> Outcome:
    """Call a learner function; its answer or its error (NotImplementedError goes up)."""
    steps.step(what)
    try:
        return Outcome(value=function(*args))
    except NotImplementedError:
        raise
    except Exception as exc:
        return Outcome(error=exc)


def _returned(steps: Steps, summary: str, outcome: Outcome, expected: object = None,
              compare: bool = True) -> object:
    if outcome.error is not None:
        raise steps.fail(f"{summary}: your code raised", Text(f"returns {expected!r}")
                         if compare else Text("an answer"), outcome)
    value = outcome.value
    if isinstance(value, list):
        value = tuple(value)
    if compare and value != expected:
        raise steps.fail(summary, expected, value)
    return value


def _raised(steps: Steps, summary: str, outcome: Outcome, kind: type[Exception]) -> Exception:
    if not isinstance(outcome.error, kind):
        raise steps.fail(summary, Text(f"raises {kind.__name__}"), outcome)
    return outcome.error


def _json_fields(steps: Steps, what: str, expected: bytes, got: object) -> JsonObject:
    """Compare a JSON payload with SimpleKafka's, field by field; the first wrong one fails."""
    if isinstance(got, str):
        raise steps.fail(f"{what} must be bytes (.encode() the JSON)", Text("bytes"),
                         Text(f"str {got!r}"))
    try:
        if not isinstance(got, bytes | bytearray):
            raise TypeError(type(got).__name__)
        theirs = json.loads(got)
    except (TypeError, ValueError, UnicodeDecodeError):
        raise steps.fail(f"{what} is not JSON", Text(expected.decode()), got) from None
    if not isinstance(theirs, dict):
        raise steps.fail(f"{what} must be a JSON object", Text(expected.decode()), got)
    ours = json.loads(expected)
    lines = [f"SimpleKafka writes: {expected.decode()}",
             f"yours:              {bytes(got).decode(errors='replace')}"]
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        if key not in theirs:
            failure = steps.fail(f"{what}: field {key!r} is missing", {key: ours[key]},
                                 Text("no such key"))
        elif key not in ours:
            failure = steps.fail(f"{what}: field {key!r} is not in Kafka's payload here",
                                 Text("no such key"), {key: theirs[key]})
        elif theirs[key] != ours[key] or type(theirs[key]) is not type(ours[key]):
            failure = steps.fail(f"{what}: field {key!r}", ours[key], theirs[key])
        else:
            continue
        failure.lines += lines
        raise failure
    return theirs


def _stamped(steps: Steps, what: str, payload: JsonObject, before: int, after: int) -> int:
    """The payload's timestamp, which must be the time of the call in milliseconds."""
    value = payload.get("timestamp")
    try:
        if not isinstance(value, str | int | float):
            raise TypeError(value)
        stamp = int(value)
    except (TypeError, ValueError):
        return before  # the field comparison says what is wrong with it
    if not before <= stamp <= after:
        raise steps.fail(f"{what}: 'timestamp' is not the time of the call in milliseconds",
                         Text(f"between {before} and {after}"), stamp)
    return stamp


def _their_stamp(payload: bytes) -> int | None:
    with contextlib.suppress(Exception):
        return int(json.loads(payload)["timestamp"])
    return None


# --- exercise 1: registration ----------------------------------------------------------------

PAYLOADS = [  # host, port, rack, timestamp (ms)
    ("127.0.0.1", 9092, None, 1_700_000_000_123),
    ("broker-2.example.com", 19093, "rack-b", 1),
    ("10.0.0.7", 0, "", 0),
    ("::1", 65535, None, 999),
]


def _znode(steps: Steps, admin: KazooClient, path: str) -> tuple[bytes, ZnodeStat]:
    try:
        return admin.get(path)
    except NoNodeError:
        raise steps.fail(f"{path} does not exist", Text("the znode"), Text("no znode")) from None


def _check_registered(steps: Steps, learner: ModuleType, admin: KazooClient, zk: KazooClient,
                      session: str, broker_id: int, host: str, port: int,
                      rack: str | None) -> int:
    """register_broker on a free id: an ephemeral znode of ours, Kafka's payload, czxid back."""
    path = ZkPaths.broker(broker_id)
    before = _now_ms()
    outcome = _run(steps, f"register_broker(session {session}, {broker_id}, {host!r}, {port}, "
                   f"{rack!r})", learner.register_broker, zk, broker_id, host, port, rack)
    after = _now_ms()
    epoch = _returned(steps, "register_broker", outcome, compare=False)
    data, stat = _znode(steps, admin, path)
    steps.step(f"read {path}: czxid {stat.czxid}, ephemeral owner {stat.ephemeralOwner:#x}")
    steps.expect(f"{path} must be ephemeral, owned by the session that registered "
                 "(a persistent znode has owner 0x0 and outlives a dead broker)",
                 Text(_session(zk)), Text(f"{stat.ephemeralOwner:#x}"))
    stamp = _their_stamp(data) or before
    payload = _json_fields(steps, f"the payload of {path}", BrokerInfo(
        broker_id, host, port, rack, stamp).to_json(), data)
    _stamped(steps, f"the payload of {path}", payload, before, after)
    steps.expect("the broker epoch returned: the znode's czxid", stat.czxid, epoch)
    return stat.czxid  # (what register_broker returned: equal, checked just above)


def check_register_broker(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    for host, port, rack, stamp in PAYLOADS:
        outcome = _run(steps, f"broker_json({host!r}, {port}, {rack!r}, {stamp})",
                       learner.broker_json, host, port, rack, stamp)
        got = _returned(steps, "broker_json", outcome, compare=False)
        _json_fields(steps, "the payload", BrokerInfo(7, host, port, rack, stamp).to_json(),
                     got)
    with real_zookeeper(workdir, steps) as sessions:
        admin = sessions.open()
        ensure_kafka_paths(admin)
        steps.step(f"in chroot {CHROOT}: the persistent parents exist (ensure_kafka_paths)")
        a, b = sessions.open(), sessions.open()
        steps.step(f"two brokers connect: session A {_session(a)}, session B {_session(b)}")
        path = ZkPaths.broker(1)
        epoch = _check_registered(steps, learner, admin, a, "A " + _session(a), 1,
                                  "127.0.0.1", 9091, "rack-a")
        data, stat = admin.get(path)

        outcome = _run(steps, "register_broker(session A, 1, ...) again (a retried create)",
                       learner.register_broker, a, 1, "127.0.0.1", 9091, "rack-a")
        _returned(steps, "registering again in the same session: the same epoch", outcome,
                  epoch)
        again_data, again_stat = _znode(steps, admin, path)
        steps.expect(f"{path} after registering again: (czxid, payload) unchanged",
                     (stat.czxid, data), (again_stat.czxid, again_data))

        outcome = _run(steps, "register_broker(session B, 1, '127.0.0.1', 9999): id 1 is "
                       "taken by session A", learner.register_broker, b, 1, "127.0.0.1", 9999,
                       None)
        _raised(steps, "another live broker holds id 1", outcome, BrokerIdInUseError)
        now_data, now_stat = _znode(steps, admin, path)
        steps.expect(f"{path} is still broker 1's (czxid, owner, payload)",
                     (stat.czxid, stat.ephemeralOwner, data),
                     (now_stat.czxid, now_stat.ephemeralOwner, now_data))

        second = _check_registered(steps, learner, admin, b, "B " + _session(b), 2,
                                   "10.0.0.2", 9092, None)
        steps.expect("broker 2's epoch is larger than broker 1's (czxids only grow)", True,
                     second > epoch)
        path_2 = ZkPaths.broker(2)
        _data_2, stat_2 = _znode(steps, admin, path_2)
        outcome = _run(steps, "register_broker(session A, 2, '127.0.0.1', 9998): id 2 is taken "
                       "by session B, a newer session (its id is the larger)",
                       learner.register_broker, a, 2, "127.0.0.1", 9998, None)
        _raised(steps, "another live broker holds id 2", outcome, BrokerIdInUseError)
        steps.expect(f"{path_2} is still broker 2's (czxid, owner)",
                     (stat_2.czxid, stat_2.ephemeralOwner),
                     tuple(getattr(_znode(steps, admin, path_2)[1], f)
                           for f in ("czxid", "ephemeralOwner")))

        sessions.close(a)
        steps.step("session A ends (broker 1 shuts down)")
        steps.expect(f"{path} once its session has ended", None, admin.exists(path))

        c = sessions.open()
        BrokerRegistration(c, 3, "127.0.0.1", 9093).register()
        steps.step(f"SimpleKafka's BrokerRegistration registers broker 3 (session C "
                   f"{_session(c)})")
        d = sessions.open()

        def broker_3_stops() -> None:
            sessions.close(c)
            steps.step("meanwhile session C ends: /brokers/ids/3 is gone (broker 3 stopped)")

        racing = Meanwhile(d, ("create",), ZkPaths.broker(3), broker_3_stops)
        _check_registered(steps, learner, admin, racing, "D " + _session(d), 3, "127.0.0.1",
                          9193, None)
        if not racing.fired:
            raise steps.fail("register_broker must try zk.create first (the check steps in "
                             "right after it)", Text("a create of /brokers/ids/3"),
                             Text("none"))


# --- exercise 2: the controller election -----------------------------------------------------


def _controller_now(admin: KazooClient) -> tuple[int | None, int, int]:
    """(controller id, epoch, epoch version) as ZooKeeper holds them, read by SimpleKafka."""
    try:
        controller: int | None = ControllerInfo.from_json(
            admin.get(ZkPaths.CONTROLLER)[0]).broker_id
    except NoNodeError:
        controller = None
    try:
        data, stat = admin.get(ZkPaths.CONTROLLER_EPOCH)
        return controller, decode_controller_epoch(data), stat.version
    except NoNodeError:
        return controller, 0, -1


def _check_reads(steps: Steps, learner: ModuleType, admin: KazooClient) -> None:
    controller, epoch, version = _controller_now(admin)
    outcome = _run(steps, "read_controller_epoch(admin)", learner.read_controller_epoch, admin)
    _returned(steps, "read_controller_epoch: (epoch, znode version), (0, -1) if absent",
              outcome, (epoch, version))
    outcome = _run(steps, "read_controller(admin)", learner.read_controller, admin)
    _returned(steps, "read_controller: the brokerid in /controller, None if absent", outcome,
              controller)


def _check_won(steps: Steps, learner: ModuleType, admin: KazooClient, zk: KazooClient, session: str,
               broker_id: int, epoch: int, version: int) -> None:
    before = _now_ms()
    outcome = _run(steps, f"elect_controller(session {session}, {broker_id}): /controller is "
                   "free", learner.elect_controller, zk, broker_id)
    after = _now_ms()
    _returned(steps, f"broker {broker_id} wins: (its id, the new epoch, /controller_epoch's "
              "version)", outcome, (broker_id, epoch, version))
    data, stat = _znode(steps, admin, ZkPaths.CONTROLLER)
    steps.step(f"read /controller: ephemeral owner {stat.ephemeralOwner:#x}")
    steps.expect("/controller must be ephemeral, owned by the winner's session (a persistent "
                 "one would outlive a dead controller: no election ever again)",
                 Text(_session(zk)), Text(f"{stat.ephemeralOwner:#x}"))
    stamp = _their_stamp(data) or before
    payload = _json_fields(steps, "the payload of /controller",
                           ControllerInfo(broker_id, stamp).to_json(), data)
    _stamped(steps, "the payload of /controller", payload, before, after)
    data, stat = _znode(steps, admin, ZkPaths.CONTROLLER_EPOCH)
    steps.expect("/controller_epoch (its bytes: the epoch as decimal text), and its version",
                 (encode_controller_epoch(epoch), version), (data, stat.version))


def check_election(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    with real_zookeeper(workdir, steps) as sessions:
        admin = sessions.open()
        steps.step(f"in chroot {CHROOT}: nothing yet (no /controller, no /controller_epoch)")
        _check_reads(steps, learner, admin)
        a, b = sessions.open(), sessions.open()
        steps.step(f"two brokers connect: session A {_session(a)}, session B {_session(b)}")
        _check_won(steps, learner, admin, a, f"A {_session(a)}", 1, 1, 0)
        _check_reads(steps, learner, admin)

        held = admin.get(ZkPaths.CONTROLLER)[1].czxid
        outcome = _run(steps, "elect_controller(session B, 2): broker 1 holds /controller",
                       learner.elect_controller, b, 2)
        _returned(steps, "broker 2 loses and reads who won: (1, epoch 1, version 0)",
                  outcome, (1, 1, 0))
        steps.expect("/controller (czxid) and /controller_epoch after the lost election: "
                     "unchanged", (held, 1, 1, 0),
                     (admin.get(ZkPaths.CONTROLLER)[1].czxid, *_controller_now(admin)))

        sessions.close(a)
        steps.step("session A ends (the controller died): /controller goes with it")
        _check_reads(steps, learner, admin)
        _check_won(steps, learner, admin, b, f"B {_session(b)}", 2, 2, 1)

        chroot = CHROOT + "-kafka-paths"
        admin = sessions.open(chroot)
        ensure_kafka_paths(admin)
        c = sessions.open(chroot)
        steps.step(f"in chroot {chroot}: ensure_kafka_paths wrote /controller_epoch = '0' "
                   f"(version 0); session C {_session(c)}")
        _check_won(steps, learner, admin, c, f"C {_session(c)}", 3, 1, 1)

        chroot = CHROOT + "-race"
        admin = sessions.open(chroot)
        ensure_kafka_paths(admin)
        d, rival = sessions.open(chroot), sessions.open(chroot)
        steps.step(f"in chroot {chroot}: /controller_epoch = '0' (version 0); session D "
                   f"{_session(d)}")

        def broker_9_wins_and_dies() -> None:
            epoch, version = _controller_now(admin)[1:]
            multi = rival.transaction()
            multi.create(ZkPaths.CONTROLLER, ControllerInfo(9).to_json(), ephemeral=True)
            multi.set_data(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1),
                           version)
            multi.commit()
            sessions.close(rival)
            steps.step("meanwhile broker 9 wins epoch 1 (/controller_epoch now version 1) and "
                       "its session ends at once: /controller is free again")

        racing = Meanwhile(d, ("get",), ZkPaths.CONTROLLER_EPOCH, broker_9_wins_and_dies)
        outcome = _run(steps, "elect_controller(session D, 4)", learner.elect_controller,
                       racing, 4)
        if not racing.fired:
            raise steps.fail("elect_controller must read /controller_epoch with zk.get (the "
                             "check steps in right after it)", Text("a get of "
                             "/controller_epoch"), Text("none"))
        _returned(steps, "broker 4 read epoch 0 at version 0, but the epoch moved before its "
                  "multi: it loses (BADVERSION) and reads (no controller, epoch 1, version 1)",
                  outcome, (None, 1, 1))
        steps.expect("/controller and /controller_epoch after the lost election "
                     "(nothing written)", (None, 1, 1), _controller_now(admin))
        _check_won(steps, learner, admin, d, f"D {_session(d)}", 4, 2, 2)


# --- exercise 3: fencing ---------------------------------------------------------------------


def _first_result(error: Exception) -> str:
    """The kind of the first of a WriteConflictError's results (what kazoo said went wrong)."""
    results = getattr(error, "results", None)
    if not results:
        return f"no results: {results!r}"
    return type(results[0]).__name__


def _state_now(admin: KazooClient, topic: str, partition: int
               ) -> tuple[PartitionState, int] | None:
    try:
        data, stat = admin.get(ZkPaths.partition_state(topic, partition))
    except NoNodeError:
        return None
    return PartitionState.from_json(data, topic, partition), stat.version


def _elected(sessions: Sessions, zk: KazooClient, broker_id: int) -> ControllerElection:
    """SimpleKafka's own ControllerElection for broker ``broker_id``, started and settled."""
    election = ControllerElection(zk, broker_id)
    sessions.elections.append(election)
    election.start()
    election.wait_until_settled(WAIT)
    return election


def check_fencing(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    topic = "orders"
    path = ZkPaths.partition_state(topic, 0)

    def write(what: str, zk: KazooClient, epoch_version: int, partition: int, state: PartitionState,
              version: int) -> Outcome:
        return _run(steps, f"update_partition_state({what}, controller_epoch_version="
                    f"{epoch_version}, {topic!r}, {partition}, leader {state.leader} leader "
                    f"epoch {state.leader_epoch} ISR {list(state.isr)}, state_version="
                    f"{version})", learner.update_partition_state, zk, epoch_version, topic,
                    partition, state, version)

    with real_zookeeper(workdir, steps) as sessions:
        admin, a = sessions.open(), sessions.open()
        first = _elected(sessions, a, 1)
        _wait(steps, "broker 1 elected", lambda: first.is_controller)
        v1 = first.epoch_zk_version
        assert v1 is not None
        steps.step(f"broker 1 (session A {_session(a)}) is elected by SimpleKafka's "
                   f"ControllerElection: epoch {first.epoch}, /controller_epoch version {v1}")
        start = PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=1)
        admin.ensure_path(ZkPaths.partition(topic, 0))
        admin.create(path, start.to_json())
        steps.step(f"{path} created: leader 1, leader epoch 0, ISR [1, 2] (version 0)")

        moved = PartitionState(leader=2, leader_epoch=1, isr=(2,), controller_epoch=1)
        outcome = write("session A", a, v1, 0, moved, 0)
        _returned(steps, "the controller's write: the state znode's new version", outcome, 1)
        steps.expect(f"{path}: (state, version)", (moved, 1), _state_now(admin, topic, 0))

        stale = PartitionState(leader=1, leader_epoch=1, isr=(1,), controller_epoch=1)
        outcome = write("session A", a, v1, 0, stale, 0)
        error = _raised(steps, "state_version 0 is stale (the znode is at version 1)",
                        outcome, WriteConflictError)
        steps.expect("WriteConflictError(message, [the set_data's error]).results[0]",
                     Text("BadVersionError"),
                     Text(_first_result(error)))
        steps.expect(f"{path} after a refused write: unchanged", (moved, 1),
                     _state_now(admin, topic, 0))

        outcome = write("session A", a, v1, 7, stale, 0)
        error = _raised(steps, "orders-7 does not exist", outcome, WriteConflictError)
        steps.expect("WriteConflictError(message, [the set_data's error]).results[0]",
                     Text("NoNodeError"),
                     Text(_first_result(error)))
        steps.expect("orders-7's state after a refused write", None, _state_now(admin, topic, 7))

        b = sessions.open()
        second = _elected(sessions, b, 2)
        steps.step(f"broker 2 (session B {_session(b)}) runs its election too: broker 1 "
                   "stays the controller")
        sessions.freeze(first)
        old_session = a.client_id[0]
        expire_session(a)
        steps.step("broker 1 freezes (a long GC pause) and session A expires: /controller goes "
                   "with it")
        _wait(steps, "broker 2 elected", lambda: second.is_controller)
        v2 = second.epoch_zk_version
        assert v2 is not None
        steps.step(f"broker 2 is elected: epoch {second.epoch}, /controller_epoch version {v2}")
        _wait(steps, "broker 1's client back with a new session",
              lambda: a.connected and a.client_id and a.client_id[0] != old_session)
        steps.step(f"broker 1 wakes up with a new session ({_session(a)}) and still believes "
                   f"it is the controller that won version {v1}")

        zombie = PartitionState(leader=1, leader_epoch=2, isr=(1,), controller_epoch=1)
        outcome = write("the zombie's session A", a, v1, 0, zombie, 1)
        _raised(steps, "the zombie's write, fenced by a /controller_epoch version that is gone",
                outcome, ControllerMovedError)
        steps.expect(f"{path} after the zombie's write: unchanged", (moved, 1),
                     _state_now(admin, topic, 0))

        current = PartitionState(leader=2, leader_epoch=2, isr=(2, 1), controller_epoch=2)
        outcome = write("session B", b, v2, 0, current, 1)
        _returned(steps, "the new controller's write: the state znode's new version", outcome,
                  2)
        steps.expect(f"{path}: (state, version)", (current, 2), _state_now(admin, topic, 0))

        def newer_controller() -> None:
            epoch, version = _controller_now(admin)[1:]
            admin.set(ZkPaths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1), version)
            steps.step(f"meanwhile a newer controller is elected: /controller_epoch = "
                       f"{epoch + 1}, version {version + 1}")

        late = PartitionState(leader=2, leader_epoch=3, isr=(2,), controller_epoch=2)
        racing = Meanwhile(b, ("get", "exists"), ZkPaths.CONTROLLER_EPOCH, newer_controller)
        outcome = write("session B", racing, v2, 0, late, 2)
        if racing.fired:  # it looked first, then wrote: the write must still be fenced
            _raised(steps, "the epoch moved after you read it and before you wrote: only a "
                    "check inside the multi sees that", outcome, ControllerMovedError)
            steps.expect(f"{path} after the fenced write: unchanged", (current, 2),
                         _state_now(admin, topic, 0))
            return
        _returned(steps, "the controller's write: the state znode's new version", outcome, 3)
        steps.expect(f"{path}: (state, version)", (late, 3), _state_now(admin, topic, 0))
        newer_controller()
        outcome = write("session B", b, v2, 0, current, 3)
        _raised(steps, "broker 2's write after a newer controller was elected", outcome,
                ControllerMovedError)
        steps.expect(f"{path} after the fenced write: unchanged", (late, 3),
                     _state_now(admin, topic, 0))


STAGE = Stage(2, "ZooKeeper coordination", "stage2_zookeeper",
              "stages/stage2_zookeeper/README.md", (
    Exercise(1, "register a broker",
             "the ephemeral /brokers/ids/<id> with Kafka's JSON; a taken id is refused",
             ("broker_json", "register_broker"), check_register_broker,
             hints=("Read the chapter's sections 2.2 (znodes and Kafka's JSON) and 2.3 "
                    "(registering a broker).",
                    "Ephemeral is what makes 'registered' mean 'alive'; on NODEEXISTS the "
                    "owner's session id tells a retried create of yours from another "
                    "broker's; rack is left out, not null, when there is none."),
             time_limit=TIME_LIMIT),
    Exercise(2, "elect the controller",
             "/controller and the next /controller_epoch in one multi; the loser reads who won",
             ("read_controller_epoch", "read_controller", "elect_controller"), check_election,
             hints=("Read the chapter's section 2.4 (electing a controller, in one multi).",
                    "The set of /controller_epoch must expect the version you read, inside the "
                    "same multi as the create: otherwise two brokers can both win one epoch."),
             time_limit=TIME_LIMIT,
             plugs=(("read_controller_epoch",
                     ("simplekafka.coordination.election:read_controller_epoch",
                      "simplekafka.coordination:read_controller_epoch")),
                    ("read_controller",
                     ("simplekafka.coordination.election:read_controller",
                      "simplekafka.coordination:read_controller")))),
    Exercise(3, "fence the zombie",
             "a controller's write checked against /controller_epoch's version in the same "
             "multi: a zombie's is refused",
             ("update_partition_state",), check_fencing,
             hints=("Read the chapter's section 2.5 (fencing the zombie).",
                    "Reading /controller_epoch before writing is not enough (it can move in "
                    "between); a check operation inside the multi is atomic with the write. "
                    "The first result tells a moved controller from a stale state."),
             time_limit=TIME_LIMIT),
), mutants=(
    Mutant("broker-id-in-use-only-when-the-owner-is-older", 1,
           "        if stat.ephemeralOwner != zk.client_id[0]:",
           "        if stat.ephemeralOwner < zk.client_id[0]:"),
    Mutant("broker-znode-persistent", 1,
           "zk.create(path, data, ephemeral=True, include_data=True)",
           "zk.create(path, data, include_data=True)"),
    Mutant("broker-rack-null-when-absent", 1,
           '    if rack is not None:\n        payload["rack"] = rack\n',
           '    payload["rack"] = rack\n'),
    Mutant("broker-empty-rack-left-out", 1, "    if rack is not None:\n", "    if rack:\n"),
    Mutant("broker-timestamp-a-number", 1, '"timestamp": str(timestamp_ms),',
           '"timestamp": timestamp_ms,'),
    Mutant("broker-timestamp-in-seconds", 1,
           "data = broker_json(host, port, rack, int(time.time() * 1000))",
           "data = broker_json(host, port, rack, int(time.time()))"),
    Mutant("broker-endpoint-without-listener", 1, '[f"PLAINTEXT://{host}:{port}"]',
           '[f"{host}:{port}"]'),
    Mutant("broker-jmx-port-zero", 1, '"jmx_port": -1,', '"jmx_port": 0,'),
    Mutant("broker-epoch-is-the-version", 1,
           "            return stat.czxid\n        except NodeExistsError:",
           "            return stat.version\n        except NodeExistsError:"),
    Mutant("broker-id-of-another-session-taken-over", 1,
           "if stat.ephemeralOwner != zk.client_id[0]:", "if False:"),
    Mutant("broker-retried-create-refused", 1,
           "if stat.ephemeralOwner != zk.client_id[0]:", "if True:"),
    Mutant("broker-gives-up-when-the-holder-left", 1,
           "            continue  # its owner went away meanwhile: the id is free, try again",
           "            raise BrokerIdInUseError(f'broker id {broker_id} is in use')"),
    Mutant("controller-znode-persistent", 2,
           "transaction.create(ZkPaths.CONTROLLER, json.dumps(me).encode(), ephemeral=True)",
           "transaction.create(ZkPaths.CONTROLLER, json.dumps(me).encode())"),
    Mutant("controller-json-broker-id-field", 2, '"brokerid": broker_id,',
           '"broker_id": broker_id,'),
    Mutant("controller-timestamp-a-number", 2, '"timestamp": str(int(time.time() * 1000))}',
           '"timestamp": int(time.time() * 1000)}'),
    Mutant("controller-epoch-bumped-outside-the-multi", 2,
           "    transaction = zk.transaction()\n"
           "    transaction.create(ZkPaths.CONTROLLER, json.dumps(me).encode(), ephemeral=True)\n"
           "    if version < 0:\n"
           "        transaction.create(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode())\n"
           "    else:\n"
           "        transaction.set_data(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), "
           "version)\n"
           "    results = transaction.commit()\n"
           "    if any(isinstance(result, Exception) for result in results):\n",
           "    try:\n"
           "        zk.create(ZkPaths.CONTROLLER, json.dumps(me).encode(), ephemeral=True)\n"
           "        failed = False\n"
           "    except NodeExistsError:\n"
           "        failed = True\n"
           "    if not failed and version < 0:\n"
           "        zk.create(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode())\n"
           "    elif not failed:\n"
           "        zk.set(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)\n"
           "    if failed:\n"),
    Mutant("controller-epoch-set-unconditionally", 2,
           "transaction.set_data(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)",
           "transaction.set_data(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode())"),
    Mutant("controller-epoch-absent-not-handled", 2,
           "    if version < 0:\n"
           "        transaction.create(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode())\n"
           "    else:\n"
           "        transaction.set_data(",
           "    if True:\n"
           "        transaction.set_data("),
    Mutant("controller-epoch-as-json", 2,
           "transaction.set_data(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)",
           "transaction.set_data(ZkPaths.CONTROLLER_EPOCH, "
           "json.dumps({'epoch': epoch + 1}).encode(), version)"),
    Mutant("loser-returns-what-it-read-before", 2,
           "        return (read_controller(zk), *read_controller_epoch(zk))",
           "        return read_controller(zk), epoch, version"),
    Mutant("winner-returns-the-old-version", 2, "    return broker_id, epoch + 1, version + 1",
           "    return broker_id, epoch + 1, version"),
    Mutant("epoch-absent-reads-as-version-0", 2, "        return 0, -1", "        return 0, 0"),
    Mutant("no-controller-reads-as-minus-one", 2,
           "        return None\n    return json.loads(data)",
           "        return -1\n    return json.loads(data)"),
    Mutant("fenced-check-of-any-version", 3,
           "transaction.check(ZkPaths.CONTROLLER_EPOCH, controller_epoch_version)",
           "transaction.check(ZkPaths.CONTROLLER_EPOCH, -1)"),
    Mutant("fenced-write-not-conditional", 3,
           "    transaction = zk.transaction()\n"
           "    transaction.check(ZkPaths.CONTROLLER_EPOCH, controller_epoch_version)\n",
           "    try:\n"
           "        return zk.set(ZkPaths.partition_state(topic, partition), state.to_json(),\n"
           "                      state_version).version\n"
           "    except (BadVersionError, NoNodeError) as exc:\n"
           "        raise WriteConflictError(str(exc), [exc]) from exc\n"
           "    transaction = zk.transaction()\n"),
    Mutant("fenced-check-then-write", 3,
           "    transaction = zk.transaction()\n"
           "    transaction.check(ZkPaths.CONTROLLER_EPOCH, controller_epoch_version)\n",
           "    if read_controller_epoch(zk)[1] != controller_epoch_version:\n"
           "        raise ControllerMovedError('a newer controller was elected')\n"
           "    transaction = zk.transaction()\n"
           "    transaction.check(ZkPaths.CONTROLLER_EPOCH, -1)\n"),
    Mutant("state-written-unconditionally", 3,
           "state.to_json(),\n                         state_version)",
           "state.to_json())"),
    Mutant("moved-read-from-the-wrong-result", 3, "    if isinstance(check, BadVersionError):",
           "    if isinstance(written, BadVersionError):"),
    Mutant("every-failure-blamed-on-a-new-controller", 3,
           "    if isinstance(check, BadVersionError):", "    if isinstance(check, Exception):"),
    Mutant("conflict-without-its-error", 3, "f\"{written!r}\", [written])",
           "f\"{written!r}\", [])"),
    Mutant("returns-the-old-state-version", 3, "    return written.version",
           "    return state_version"),
), real_processes=True)
