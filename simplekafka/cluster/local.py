"""LocalCluster: ZooKeeper and N brokers as real processes on loopback ports.

This is the one launcher that tests, stage demos, notebooks, benchmarks and
``run_cluster.sh`` share, so that "start a cluster" means the same thing
everywhere. Every broker is a separate ``python -m simplekafka broker`` process
(so SIGKILL is a real crash), logging to its own file under ``base_dir``. A
broker counts as started only once it answers an ApiVersions and a Metadata
request that names every running broker and a live controller: an open port
alone proves nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from simplekafka.broker.config import is_sensitive
from simplekafka.coordination.processes import LOOPBACK, free_port, wait_until
from simplekafka.coordination.session_file import SESSION_FILE_ENV
from simplekafka.coordination.zk_security import (
    CLIENT_JAAS_FILE,
    client_jaas_text,
    kafka_opts_for,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from simplekafka.coordination import EmbeddedZooKeeper, znodes

T = TypeVar("T")

DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 30.0
_PROBE_CLIENT_ID = "simplekafka-localcluster"


class ClusterError(RuntimeError):
    """A broker or ZooKeeper did not start, serve or stop as asked; says which and why."""


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for error messages (empty if there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class BrokerProcess:
    """One broker's fixed identity (id, port, directories) and its current process."""

    broker_id: int
    port: int
    data_dir: Path
    log_file: Path
    rack: str | None = None
    metrics_port: int | None = None  # its metrics.listener on 127.0.0.1 (None: off)
    # Ports of its listeners besides PLAINTEXT (listener name -> port on 127.0.0.1).
    listener_ports: dict[str, int] = field(default_factory=dict)
    # Its further log directories (log.dirs after data_dir): LocalCluster(log_dirs=N).
    more_data_dirs: list[Path] = field(default_factory=list)
    process: subprocess.Popen | None = field(default=None, repr=False)
    has_served: bool = False
    log_offset: int = 0  # where this process's lines start in log_file
    port_retries: int = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def running_process(self) -> subprocess.Popen | None:
        """The process if it is still running (what a signal may be sent to)."""
        return self.process if self.is_running else None

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def address_on(self, listener: str) -> str:
        """host:port of one of its listeners (PLAINTEXT: ``address``)."""
        if listener.upper() == "PLAINTEXT":
            return self.address
        return f"{LOOPBACK}:{self.listener_ports[listener.upper()]}"

    @property
    def metrics_url(self) -> str | None:
        """Where its Prometheus metrics are (``/health`` is beside them), if they are on."""
        if self.metrics_port is None:
            return None
        return f"http://{LOOPBACK}:{self.metrics_port}/metrics"


@dataclass(frozen=True)
class ProbeResult:
    """What a broker said about the cluster in one Metadata round trip."""

    broker_ids: frozenset[int]
    controller_id: int


def probe_broker(host: str, port: int, timeout: float = 2.0) -> ProbeResult:
    """One ApiVersions v0 and one Metadata v1 round trip, with the project's codec.

    Raises OSError when the broker does not accept or answer, and ClusterError
    when it answers with an error.
    """
    from simplekafka.protocol.api import ApiKey
    from simplekafka.protocol.messages import decode_response, encode_request

    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        requests = [(ApiKey.API_VERSIONS, 0, {}), (ApiKey.METADATA, 1, {"topics": None})]
        bodies = []
        for correlation_id, (api_key, version, body) in enumerate(requests, start=1):
            payload = encode_request(api_key, version, correlation_id, _PROBE_CLIENT_ID, body)
            sock.sendall(struct.pack(">i", len(payload)) + payload)
            answer_id, answer = decode_response(api_key, version, _read_frame(sock))
            if answer_id != correlation_id:
                raise ClusterError(f"probe got correlation id {answer_id}, sent {correlation_id}")
            bodies.append(answer)
    versions, metadata = bodies
    if versions.error_code != 0:
        raise ClusterError(f"ApiVersions v0 answered error {versions.error_code}")
    return ProbeResult(
        broker_ids=frozenset(b.node_id for b in metadata.brokers),
        controller_id=metadata.controller_id,
    )


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection mid-answer")
        chunks += chunk
    return bytes(chunks)


def _read_frame(sock: socket.socket) -> bytes:
    (length,) = struct.unpack(">i", _read_exactly(sock, 4))
    return _read_exactly(sock, length)


def _port_or_free(wanted: int, otherwise: int | None = None) -> int:
    """``wanted`` if nothing listens on it on 127.0.0.1, else ``otherwise`` (default: any free)."""
    from simplekafka.coordination.zookeeper_server import port_is_free

    if wanted and port_is_free(wanted, LOOPBACK):
        return wanted
    return free_port() if otherwise is None else otherwise


def checkout_launcher(checkout: Path) -> list[str]:
    """``python -m simplekafka`` run from another checkout's ``simplekafka`` package.

    For an A/B of two trees through one harness (``simplekafka bench --brokers-from``):
    the brokers run the other tree's code while the clients, the harness and the
    cluster's own bookkeeping run this one's. ``-P`` keeps the working directory off
    ``sys.path``, so the other checkout comes first even when run from this one.
    """
    package = Path(checkout).resolve()
    if not (package / "simplekafka" / "__init__.py").is_file():
        raise ValueError(f"{checkout} holds no simplekafka package (no simplekafka/__init__.py)")
    run = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
           "runpy.run_module('simplekafka', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-P", "-c", run, str(package)]


class LocalCluster:
    """ZooKeeper (embedded unless ``zookeeper`` names one) and ``brokers`` broker processes.

    Use it as a context manager, or call start() and stop(). Broker ids are
    1..N. Ports are picked free on 127.0.0.1 once and kept, so restart() brings
    a broker back where clients expect it, on the same data directory.
    ``broker_config`` holds Kafka-style keys passed to every broker with
    ``--set``; ``racks`` gives broker i the rack ``racks[i-1]``. Each broker
    serves Prometheus metrics on a free port of its own (``metrics_urls``)
    unless ``metrics`` is False. ``log_dirs`` gives each broker that many log
    directories (``data``, ``data-2``, ...; ``log.dirs`` lists them all).

    ``listeners`` names listeners each broker serves besides PLAINTEXT (which
    stays first: the cluster's own probes use it), e.g. ``["SASL_SSL"]``; each
    gets a free port per broker (``bootstrap(name)``). Their security settings
    (``listener.security.protocol.map`` for other names, ``ssl.*``, the JAAS
    text, ``inter.broker.listener.name``) go into ``broker_config`` with
    Kafka's keys; ``simplekafka.cluster.security`` builds a typical set
    (``secure_broker_config(..., authorizer=True)``: ACLs on, with the brokers'
    own SASL login as the only super user; User:ANONYMOUS, a client of the
    PLAINTEXT listener the probes use, is no super user there).

    ``launcher`` replaces ``python -m simplekafka`` in front of each broker's
    ``broker ...`` arguments (``simplekafka learn cluster`` starts brokers
    through a module that first puts a learner's functions in place).

    ``secure_zookeeper`` secures the embedded ZooKeeper as a Kafka operator
    does: SASL logins only for the brokers' user (a fresh password), the
    brokers given that login in ``KAFKA_OPTS`` (:attr:`kafka_opts`) and
    ``zookeeper.set.acl=true``, so that every znode they create carries
    Kafka's ACLs and a client without the login cannot change them.

    ``ports`` asks for broker i's PLAINTEXT port ``ports[i-1]`` and
    ``zookeeper_port`` for the embedded ZooKeeper's (as ``simplekafka cluster
    up`` asks for Kafka's 9092 and 2181); a port that is taken, or 0, means any
    free one instead, so a cluster always starts (see ``bootstrap_servers``).
    """

    def __init__(
        self,
        brokers: int = 1,
        base_dir: Path | None = None,
        zookeeper: str | None = None,
        broker_config: dict | None = None,
        racks: list[str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        metrics: bool = True,
        listeners: Iterable[str] = (),
        launcher: Sequence[str] | None = None,
        secure_zookeeper: bool = False,
        ports: Sequence[int] | None = None,
        zookeeper_port: int = 0,
        log_dirs: int = 1,
    ) -> None:
        if not isinstance(brokers, int) or brokers < 1:
            raise ValueError(f"brokers must be a positive integer, got {brokers!r}")
        if racks is not None and len(racks) != brokers:
            raise ValueError(f"racks names {len(racks)} racks for {brokers} brokers")
        if ports is not None and len(ports) != brokers:
            raise ValueError(f"ports names {len(ports)} ports for {brokers} brokers")
        self.zookeeper_port = zookeeper_port
        self._owns_base_dir = base_dir is None
        # Absolute, so the brokers' command lines mean the same from any working directory.
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="simplekafka-cluster-")).resolve()
        self._external_zookeeper = zookeeper
        self.broker_config = {str(k): str(v) for k, v in (broker_config or {}).items()}
        self.start_timeout = start_timeout
        self.listeners = [name.upper() for name in listeners if name.upper() != "PLAINTEXT"]
        self.launcher = list(launcher) if launcher else [sys.executable, "-m", "simplekafka"]
        if secure_zookeeper and zookeeper:
            raise ValueError("secure_zookeeper secures the embedded ZooKeeper; "
                             "an external one brings its own login (KAFKA_OPTS)")
        #: (username, password) the brokers log in to ZooKeeper with, if it is secured
        self.zookeeper_login = ("kafka", secrets.token_urlsafe(12)) if secure_zookeeper else None
        if secure_zookeeper:
            self.broker_config.setdefault("zookeeper.set.acl", "true")
        self._zookeeper: EmbeddedZooKeeper | None = None
        self._zk_client = None
        self.brokers: dict[int, BrokerProcess] = {}
        for broker_id in range(1, brokers + 1):
            self.brokers[broker_id] = BrokerProcess(
                broker_id=broker_id,
                port=_port_or_free(ports[broker_id - 1] if ports else 0),
                data_dir=self.base_dir / f"broker-{broker_id}" / "data",
                log_file=self.base_dir / "logs" / f"broker-{broker_id}.log",
                rack=racks[broker_id - 1] if racks else None,
                metrics_port=free_port() if metrics else None,
                listener_ports={name: free_port() for name in self.listeners},
                more_data_dirs=[self.base_dir / f"broker-{broker_id}" / f"data-{number}"
                                for number in range(2, log_dirs + 1)],
            )
        self._started = False

    # -- what clients need -------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's address, comma-separated, as Kafka clients take it."""
        return ",".join(b.address for b in self.brokers.values())

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        """Every broker's address on one listener, comma-separated."""
        return ",".join(b.address_on(listener) for b in self.brokers.values())

    @property
    def broker_ports(self) -> dict[int, int]:
        return {broker_id: b.port for broker_id, b in self.brokers.items()}

    @property
    def metrics_urls(self) -> dict[int, str]:
        """Each broker's ``/metrics`` URL (empty when metrics are off)."""
        return {broker_id: b.metrics_url for broker_id, b in self.brokers.items()
                if b.metrics_url is not None}

    @property
    def broker_pids(self) -> dict[int, int | None]:
        return {broker_id: b.pid for broker_id, b in self.brokers.items()}

    @property
    def zookeeper_connect(self) -> str:
        """The ZooKeeper connect string the brokers use (``host:port[/chroot]``)."""
        if self._external_zookeeper:
            return self._external_zookeeper
        if self._zookeeper is None:
            raise ClusterError("ZooKeeper is not running: call start() first")
        return self._zookeeper.connect_string

    @property
    def kafka_opts(self) -> str | None:
        """The KAFKA_OPTS that give a process the brokers' ZooKeeper login (None if unsecured)."""
        if self.zookeeper_login is None:
            return None
        return kafka_opts_for(self.base_dir / "zookeeper" / CLIENT_JAAS_FILE)

    @property
    def zookeeper_pid(self) -> int | None:
        """The embedded ZooKeeper's process id, if this cluster started one and it tells."""
        return getattr(self._zookeeper, "pid", None)

    def running_brokers(self) -> list[int]:
        return [broker_id for broker_id, b in self.brokers.items() if b.is_running]

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> LocalCluster:
        """Start ZooKeeper and every broker, and wait until the cluster serves."""
        if self._started:
            return self
        self._started = True
        atexit.register(self.stop)
        try:
            self._start_zookeeper()
            for broker in self.brokers.values():
                self._spawn(broker)
            self.wait_until_serving(self.brokers)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM every broker (they deregister and flush), then stop ZooKeeper."""
        atexit.unregister(self.stop)
        self._close_zk()
        running = [b for b in self.brokers.values() if b.is_running]
        for broker in running:
            if (process := broker.running_process()) is not None:
                process.send_signal(signal.SIGTERM)
        for broker in running:
            self._reap(broker, DEFAULT_STOP_TIMEOUT)
        if self._zookeeper is not None:
            with contextlib.suppress(Exception):
                self._zookeeper.stop()
            self._zookeeper = None
        self._started = False

    def cleanup(self) -> None:
        """stop(), then remove base_dir if this cluster made it (a temporary directory)."""
        self.stop()
        if self._owns_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def kill(self, broker_id: int) -> None:
        """SIGKILL a broker: a crash, with no deregistration and no flush."""
        broker = self._broker(broker_id)
        if (process := broker.running_process()) is not None:
            process.kill()
        self._reap(broker, DEFAULT_STOP_TIMEOUT)

    def terminate(self, broker_id: int, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """SIGTERM a broker and wait for its clean shutdown; returns its exit code."""
        broker = self._broker(broker_id)
        if (process := broker.running_process()) is not None:
            process.send_signal(signal.SIGTERM)
        return self._reap(broker, timeout)

    def restart(self, broker_id: int, wait: bool = True) -> None:
        """Start a stopped (or running: it is terminated first) broker on its old port and data.

        ``wait=False`` returns as soon as the process is spawned (tests of start-up itself).
        """
        broker = self._broker(broker_id)
        if broker.is_running:
            self.terminate(broker_id)
        self._spawn(broker)
        if wait:
            self.wait_until_serving([broker_id])

    def wait_until_serving(self, broker_ids: Iterable[int], timeout: float | None = None) -> None:
        """Block until each broker answers Metadata naming all running brokers and a controller.

        Raises ClusterError with the broker's log tail if one exits or the time runs out.
        """
        deadline = time.monotonic() + (timeout or self.start_timeout)
        pending = list(broker_ids)
        last_problem: dict[int, str] = {}
        while pending:
            expected = set(self.running_brokers())
            for broker_id in list(pending):
                broker = self._broker(broker_id)
                if not broker.is_running and self._retry_on_a_new_port(broker):
                    continue
                if not broker.is_running:
                    raise ClusterError(
                        f"broker {broker_id} exited with code "
                        f"{broker.process.returncode if broker.process else None} "
                        f"while starting; last lines of {broker.log_file}:\n{tail(broker.log_file)}"
                    )
                try:
                    seen = probe_broker(LOOPBACK, broker.port)
                except Exception as exc:  # not up yet, or half up: ask again shortly
                    last_problem[broker_id] = f"{type(exc).__name__}: {exc}"
                    continue
                if not expected <= seen.broker_ids:
                    last_problem[broker_id] = (
                        f"its metadata names brokers {sorted(seen.broker_ids)}, "
                        f"running are {sorted(expected)}"
                    )
                elif seen.controller_id not in expected:
                    last_problem[broker_id] = f"its metadata names controller {seen.controller_id}"
                else:
                    broker.has_served = True
                    pending.remove(broker_id)
            if not pending:
                return
            if time.monotonic() > deadline:
                details = "\n".join(
                    f"broker {i}: {last_problem.get(i, 'no answer')}; last lines of "
                    f"{self._broker(i).log_file}:\n{tail(self._broker(i).log_file)}"
                    for i in pending
                )
                raise ClusterError(f"brokers {pending} did not serve within the timeout\n{details}")
            time.sleep(0.1)

    # -- what ZooKeeper says (the truth the controller writes) -----------------

    @property
    def zk(self) -> KazooClient:
        """A kazoo client on the cluster's ZooKeeper, opened on first use, closed by stop()."""
        if self._zk_client is None:
            from simplekafka.coordination.connection import connect_zookeeper

            if self.zookeeper_login:
                self._zk_client = connect_zookeeper(self.zookeeper_connect, timeout=30.0,
                                                    login=self.zookeeper_login)
            else:
                self._zk_client = connect_zookeeper(self.zookeeper_connect, timeout=30.0)
        return self._zk_client

    def _close_zk(self) -> None:
        if self._zk_client is not None:
            with contextlib.suppress(Exception):
                self._zk_client.stop()
                self._zk_client.close()
            self._zk_client = None

    def session_file(self, broker_id: int) -> Path:
        """Where a broker publishes its ZooKeeper session (faults.expire_session reads it)."""
        return self.base_dir / f"broker-{broker_id}" / "zookeeper-session"

    def partition_dir(self, broker_id: int, topic: str, partition: int) -> Path:
        """The directory holding broker ``broker_id``'s replica of ``topic``-``partition``
        (in whichever of its log directories it is; the first if none holds it)."""
        broker = self._broker(broker_id)
        for directory in broker.more_data_dirs:
            if (directory / f"{topic}-{partition}").is_dir():
                return directory / f"{topic}-{partition}"
        return broker.data_dir / f"{topic}-{partition}"

    def controller_id(self) -> int | None:
        """The broker id in ``/controller``, or None while there is no controller."""
        from kazoo.exceptions import NoNodeError

        from simplekafka.coordination.znodes import ControllerInfo, ZkPaths

        try:
            data, _stat = self.zk.get(ZkPaths.CONTROLLER)
        except NoNodeError:
            return None
        return ControllerInfo.from_json(data).broker_id

    def partition_state(self, topic: str, partition: int
                        ) -> znodes.PartitionState | None:
        """The partition's state znode (leader, leader_epoch, isr), or None if there is none."""
        from simplekafka.coordination.topics import read_partition_state

        found = read_partition_state(self.zk, topic, partition)
        return found[0] if found else None

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader as ZooKeeper records it (-1: offline or no such partition)."""
        state = self.partition_state(topic, partition)
        return state.leader if state is not None else -1

    def isr_of(self, topic: str, partition: int) -> tuple[int, ...]:
        """The partition's in-sync replicas as ZooKeeper records them."""
        state = self.partition_state(topic, partition)
        return tuple(state.isr) if state is not None else ()

    def replicas_of(self, topic: str, partition: int) -> tuple[int, ...]:
        """The partition's assigned replicas, preferred leader first."""
        from simplekafka.coordination.topics import read_topic_assignment

        assignment = read_topic_assignment(self.zk, topic)
        if assignment is None:
            return ()
        return tuple(assignment.partitions.get(partition, ()))

    def registered_brokers(self) -> list[int]:
        """The broker ids with a live ``/brokers/ids/<id>`` znode."""
        from simplekafka.coordination.znodes import ZkPaths

        return sorted(int(child) for child in self.zk.get_children(ZkPaths.BROKER_IDS))

    def wait_for(self, condition: Callable[[], T | None], what: str, timeout: float = 60.0,
                 interval: float = 0.1) -> T:
        """Poll ``condition`` until it returns something true, else raise ClusterError."""
        found = wait_until(condition, what, timeout, interval, error=ClusterError)
        assert found is not None  # (wait_until returns only a true value)
        return found

    def wait_for_znode_gone(self, broker_id: int, timeout: float = 60.0) -> None:
        """Wait until ``/brokers/ids/<id>`` has vanished (the session expired or was closed)."""
        self.wait_for(lambda: broker_id not in self.registered_brokers(),
                      f"/brokers/ids/{broker_id} to vanish", timeout)

    def wait_for_leader(self, topic: str, partition: int, timeout: float = 60.0,
                        not_: int | None = None) -> int:
        """Wait for a live leader (other than ``not_``) in the state znode; returns its id."""
        def leader() -> int | None:
            current = self.leader_of(topic, partition)
            live = current in self.registered_brokers()
            return current if current >= 0 and current != not_ and live else None

        return self.wait_for(leader, f"a leader of {topic}-{partition}"
                             + (f" other than {not_}" if not_ is not None else ""), timeout)

    def wait_for_isr(self, topic: str, partition: int, members: Iterable[int],
                     timeout: float = 60.0) -> tuple[int, ...]:
        """Wait until the ISR of ``topic``-``partition`` holds every id in ``members``."""
        wanted = set(members)
        return self.wait_for(
            lambda: (isr if wanted <= set(isr := self.isr_of(topic, partition)) else None),
            f"{sorted(wanted)} in the ISR of {topic}-{partition}", timeout)

    # -- context manager -----------------------------------------------------

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cleanup()

    # -- internals -------------------------------------------------------------

    def _broker(self, broker_id: int) -> BrokerProcess:
        try:
            return self.brokers[broker_id]
        except KeyError:
            raise ClusterError(
                f"no broker {broker_id} in this cluster (ids are {sorted(self.brokers)})"
            ) from None

    def _start_zookeeper(self) -> None:
        if self._external_zookeeper:
            return
        from simplekafka.coordination import EmbeddedZooKeeper
        from simplekafka.coordination.zookeeper_server import ZooKeeperLaunchError

        zookeeper_dir = self.base_dir / "zookeeper"
        zookeeper_dir.mkdir(parents=True, exist_ok=True)
        users = dict([self.zookeeper_login]) if self.zookeeper_login else None
        self._zookeeper = EmbeddedZooKeeper(port=_port_or_free(self.zookeeper_port, 0),
                                            data_dir=zookeeper_dir, sasl_users=users)
        try:
            self._zookeeper.start()
        except ZooKeeperLaunchError as exc:
            if self._zookeeper.port == 0 or "already in use" not in str(exc):
                raise
            # Someone took the wanted port since we looked: any free one will do.
            self._zookeeper = EmbeddedZooKeeper(port=0, data_dir=zookeeper_dir,
                                                sasl_users=users)
            self._zookeeper.start()
        if self.zookeeper_login:
            descriptor = os.open(zookeeper_dir / CLIENT_JAAS_FILE,
                                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as out:
                out.write(client_jaas_text(*self.zookeeper_login))

    def broker_command(self, broker: BrokerProcess) -> list[str]:
        """The command line that starts one broker (public so demos can print it)."""
        command = [
            *self.launcher, "broker",
            "--broker-id", str(broker.broker_id),
            "--host", LOOPBACK,
            "--port", str(broker.port),
            "--data-dir", ",".join(map(str, [broker.data_dir, *broker.more_data_dirs])),
            "--zookeeper", self.zookeeper_connect,
        ]
        if broker.rack:
            command += ["--rack", broker.rack]
        if broker.metrics_port is not None:  # before broker_config, which may override it
            command += ["--set", f"metrics.listener={LOOPBACK}:{broker.metrics_port}"]
        if broker.listener_ports:
            listeners = [f"PLAINTEXT://{LOOPBACK}:{broker.port}"] + [
                f"{name}://{LOOPBACK}:{port}" for name, port in broker.listener_ports.items()]
            command += ["--set", f"listeners={','.join(listeners)}"]
        secret = {key: str(value) for key, value in self.broker_config.items()
                  if is_sensitive(key)}
        if secret:  # never on a command line, which every local user can read (ps)
            command += ["--config", str(self._write_secrets(broker, secret))]
        for key, value in self.broker_config.items():
            if key not in secret:
                command += ["--set", f"{key}={value}"]
        return command

    def _write_secrets(self, broker: BrokerProcess, secret: dict[str, str]) -> Path:
        """The password-type settings of ``broker`` in a properties file only its owner may
        read (created 0600, O_EXCL, then renamed into place), read with ``--config``."""
        path = self.base_dir / f"broker-{broker.broker_id}-secrets.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        if any("\n" in value or "\r" in value for value in secret.values()):
            raise ValueError("a password-type broker setting holds a line break")
        text = "".join(f"{key}={value}\n" for key, value in secret.items())
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.unlink(missing_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
        return path

    def _retry_on_a_new_port(self, broker: BrokerProcess) -> bool:
        """If a broker that never served lost its port to another process, move it and respawn.

        free_port() releases the port before the broker binds it, so on a busy
        machine someone else can take it in between. Once a broker has served,
        its port is part of the cluster's identity and is never changed.
        """
        if broker.has_served or broker.port_retries >= 3:
            return False
        try:
            with open(broker.log_file, "rb") as log:
                log.seek(broker.log_offset)
                since_spawn = log.read().decode(errors="replace")
        except OSError:
            return False
        if "Address already in use" not in since_spawn:
            return False
        broker.port_retries += 1
        broker.port = free_port()
        if broker.metrics_port is not None:
            broker.metrics_port = free_port()
        broker.listener_ports = {name: free_port() for name in broker.listener_ports}
        self._spawn(broker)
        return True

    def _spawn(self, broker: BrokerProcess) -> None:
        broker.data_dir.mkdir(parents=True, exist_ok=True)
        broker.log_file.parent.mkdir(parents=True, exist_ok=True)
        command = self.broker_command(broker)
        with open(broker.log_file, "ab") as log:
            broker.log_offset = log.tell()
            log.write(f"\n# {time.strftime('%H:%M:%S')} {' '.join(command)}\n".encode())
            log.flush()
            broker.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1",
                     SESSION_FILE_ENV: str(self.session_file(broker.broker_id)),
                     **({"KAFKA_OPTS": self.kafka_opts} if self.kafka_opts else {})},
                # Its own session: a Ctrl-C meant for the caller does not hit the brokers.
                start_new_session=True,
            )

    @staticmethod
    def _reap(broker: BrokerProcess, timeout: float) -> int | None:
        if broker.process is None:
            return None
        try:
            return broker.process.wait(timeout)
        except subprocess.TimeoutExpired:
            broker.process.kill()
            return broker.process.wait(10)
