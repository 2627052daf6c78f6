"""The embedded ZooKeeper: a standalone server run from the jars in the pyspark wheel.

This is the one launcher that the CLI (``simplekafka zk``), the tests, the stage
demos and the cluster launcher use, so there is one place that knows how to find
Java and the jars, how to write the configuration and how to tell that the
server is up. The configuration templates live in the repository's ``zk/``
directory (``zoo.cfg.template`` and ``log4j2.xml``); set
``SIMPLEKAFKA_ZK_CONF_DIR`` to use another directory, and
``SIMPLEKAFKA_ZOOKEEPER_CLASSPATH`` to run ZooKeeper from other jars (for
example Debian's ``/usr/share/java/zookeeper.jar``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

from simplekafka.coordination.processes import free_port, pid_alive
from simplekafka.coordination.zk_security import JAAS_PROPERTY, server_jaas_text

__all__ = [
    "EmbeddedZooKeeper",
    "ZooKeeperLaunchError",
    "find_conf_dir",
    "find_java",
    "find_zookeeper_classpath",
    "four_letter_word",
    "is_zookeeper_process",
    "pid_alive",
    "port_is_free",
    "read_pid_file",
    "stop_recorded_server",
]

PID_FILE = "zookeeper.pid"
PORT_FILE = "zookeeper.port"
LOG_FILE = "zookeeper.log"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
# A small heap and the quick JIT: ZooKeeper here holds a few hundred znodes, and
# the machine is shared with brokers, clients and Spark.
JVM_OPTIONS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.net.preferIPv4Stack=true"]
#: More JVM options, space-separated, from the environment: the test suite's
#: class-data-sharing archive (tools/jvm_cds.py), which about halves a start's CPU.
JVM_OPTIONS_ENV = "SIMPLEKAFKA_ZOOKEEPER_JVM_OPTIONS"


def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM it when its parent dies.

    A test run that is killed outright then leaves no ZooKeeper JVM behind. Only
    used when the server is started from the main thread: the signal follows the
    thread that forked, and a worker thread may end long before the process.
    """
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class ZooKeeperLaunchError(RuntimeError):
    """The embedded ZooKeeper could not be started (no Java, no jars, port taken, ...)."""


def find_java() -> str:
    """The ``java`` executable: ``$JAVA_HOME/bin/java`` if set, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperLaunchError(
            "Java is not installed (no `java` on PATH and no JAVA_HOME); ZooKeeper needs a "
            "Java 17 runtime, e.g. `apt-get install openjdk-17-jre-headless`"
        )
    return java


def find_zookeeper_classpath() -> str:
    """The classpath holding ZooKeeper: the pyspark wheel's jars, unless overridden."""
    override = os.environ.get("SIMPLEKAFKA_ZOOKEEPER_CLASSPATH")
    if override:
        return override
    try:
        import pyspark  # only to find its directory: the wheel bundles ZooKeeper 3.9
    except ImportError as exc:
        raise ZooKeeperLaunchError(
            "pyspark is not installed, and the embedded ZooKeeper runs from its jars: "
            "pip install 'simplekafka[spark]' (or set SIMPLEKAFKA_ZOOKEEPER_CLASSPATH)"
        ) from exc
    jars = Path(pyspark.__file__).parent / "jars"
    if not list(jars.glob("zookeeper-*.jar")):
        raise ZooKeeperLaunchError(f"no zookeeper-*.jar in {jars}")
    return f"{jars}/*"


def find_conf_dir() -> Path:
    """The directory with ``zoo.cfg.template`` and ``log4j2.xml`` (the repository's ``zk/``)."""
    override = os.environ.get("SIMPLEKAFKA_ZK_CONF_DIR")
    candidates = [Path(override)] if override else []
    # simplekafka is installed editable from the repository: zk/ sits beside the package.
    candidates.append(Path(__file__).resolve().parents[2] / "zk")
    for candidate in candidates:
        if (candidate / "zoo.cfg.template").exists():
            return candidate
    raise ZooKeeperLaunchError(
        f"ZooKeeper configuration not found (looked in {', '.join(map(str, candidates))}); "
        "set SIMPLEKAFKA_ZK_CONF_DIR to a directory holding zoo.cfg.template and log4j2.xml"
    )


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if nothing listens on ``host:port`` (checked by binding it for a moment).

    SO_REUSEADDR, as Java's server sockets use: connections of a server that just
    stopped (TIME_WAIT) do not make the port "taken", a listening socket does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command (ruok, srvr, mntr, ...) and return the answer.

    Raises OSError when nothing answers.
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def is_zookeeper_process(pid: int) -> bool:
    """True if ``pid`` runs ZooKeeper's main class (so a recycled pid is never killed).

    Where ``/proc`` is not available we cannot tell, and trust the pid file.
    """
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self/cmdline").exists() and pid_alive(pid)
    except OSError:
        return False
    return MAIN_CLASS.encode() in command_line


def read_pid_file(data_dir: Path) -> tuple[int, int] | None:
    """``(pid, port)`` recorded by a server started in ``data_dir``, or None."""
    try:
        pid = int((Path(data_dir) / PID_FILE).read_text().strip())
        port = int((Path(data_dir) / PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return pid, port


class EmbeddedZooKeeper:
    """A standalone ZooKeeper server in a child process.

    ``port=0`` picks a free port. ``start()`` returns once the server serves
    clients (it answers ``srvr`` with its mode); ``connect_string`` is then
    ``127.0.0.1:<port>``. The pid and port are written to ``data_dir`` so that
    another process (``simplekafka zk stop``) can find and stop the server.
    Usable as a context manager.

    ``sasl_users`` (name to password) makes the server take SASL DIGEST-MD5
    logins from those users, as a Kafka operator secures ZooKeeper: their
    ``Server`` JAAS section is written to ``zookeeper_jaas.conf`` in
    ``data_dir`` (readable by its owner only). ZooKeeper still lets a client
    without a login in; what keeps it out of Kafka's znodes are the ACLs
    the brokers put on them (:mod:`~simplekafka.coordination.zk_security`).
    """

    def __init__(self, port: int = 0, data_dir: Path | str | None = None,
                 host: str = "127.0.0.1", detach: bool = False,
                 sasl_users: dict[str, str] | None = None):
        if data_dir is None:
            raise ValueError("EmbeddedZooKeeper needs a data_dir for its snapshots and log")
        self.host = host
        self.port = port
        self.data_dir = Path(data_dir).resolve()
        self.detach = detach
        self.sasl_users = dict(sasl_users or {})
        self._process: subprocess.Popen | None = None

    @property
    def connect_string(self) -> str:
        """``host:port`` for kazoo and ``--zookeeper``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def log_file(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def is_running(self) -> bool:
        """True while the server process lives and serves clients."""
        if self._process is None or self._process.poll() is not None:
            return False
        return self.serving()

    def serving(self) -> bool:
        """True if the server answers ``srvr`` with its mode, i.e. it serves clients.

        ``ruok`` is not enough: it says ``imok`` as soon as the process listens,
        while ``srvr`` says "not currently serving requests" until it really is.
        """
        try:
            return "Mode: " in four_letter_word(self.host, self.port, "srvr", timeout=1.0)
        except OSError:
            return False

    def command(self) -> list[str]:
        """The java command line that runs the server (writing ``zoo.cfg`` first)."""
        conf_dir = find_conf_dir()
        template = string.Template((conf_dir / "zoo.cfg.template").read_text())
        config = template.substitute(data_dir=self.data_dir, port=self.port, host=self.host)
        login_options = []
        if self.sasl_users:
            config += ("\n# SASL logins (DIGEST-MD5), users in zookeeper_jaas.conf\n"
                       "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n")
            jaas_file = self.data_dir / "zookeeper_jaas.conf"
            descriptor = os.open(jaas_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as out:
                out.write(server_jaas_text(self.sasl_users))
            login_options = [f"-D{JAAS_PROPERTY}={jaas_file}"]
        config_file = self.data_dir / "zoo.cfg"
        config_file.write_text(config)
        return [
            find_java(), *JVM_OPTIONS, *os.environ.get(JVM_OPTIONS_ENV, "").split(),
            *login_options,
            "-cp", find_zookeeper_classpath(),
            f"-Dlog4j2.configurationFile={conf_dir / 'log4j2.xml'}",
            f"-Dzookeeper.log.dir={self.data_dir}",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=*",
            MAIN_CLASS, str(config_file),
        ]

    def start(self, timeout: float = 60.0) -> EmbeddedZooKeeper:
        """Start the server and wait until it answers; raises ZooKeeperLaunchError.

        With ``port=0`` a free port is picked; if another process grabs it before
        ZooKeeper binds it (other tests run in parallel), another one is tried.
        """
        if self.port != 0:
            return self._start_once(timeout)
        for attempt in range(3):
            self.port = 0
            try:
                return self._start_once(timeout)
            except ZooKeeperLaunchError as exc:
                if "already in use" not in str(exc) or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> EmbeddedZooKeeper:
        if self._process is not None and self._process.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        recorded = read_pid_file(self.data_dir)
        if recorded and pid_alive(recorded[0]) and is_zookeeper_process(recorded[0]):
            raise ZooKeeperLaunchError(
                f"a ZooKeeper (pid {recorded[0]}, port {recorded[1]}) already runs from "
                f"{self.data_dir}; stop it first (simplekafka zk stop --data-dir {self.data_dir})"
            )
        if self.port == 0:
            self.port = free_port(self.host)
        elif not port_is_free(self.port, self.host):
            raise ZooKeeperLaunchError(
                f"port {self.port} on {self.host} is already in use (another ZooKeeper?); "
                "pick another with --port"
            )
        command = self.command()
        tie_to_us = not self.detach and threading.current_thread() is threading.main_thread()
        with open(self.data_dir / "zookeeper.out", "ab") as out:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=self.detach, cwd=self.data_dir,
                preexec_fn=_die_with_parent if tie_to_us and _LIBC is not None else None,
            )
        (self.data_dir / PID_FILE).write_text(f"{self._process.pid}\n")
        (self.data_dir / PORT_FILE).write_text(f"{self.port}\n")
        self._wait_until_answering(timeout)
        return self

    def _wait_until_answering(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._forget()
                raise ZooKeeperLaunchError(
                    f"ZooKeeper exited with status {self._process.returncode} while starting"
                    f"{self._why()}"
                )
            if self.serving():
                return
            time.sleep(0.1)
        self.stop()
        raise ZooKeeperLaunchError(
            f"ZooKeeper did not answer on {self.connect_string} within {timeout:.0f} s{self._why()}"
        )

    def _why(self) -> str:
        """The last meaningful lines of the server's output, for an error message."""
        lines: list[str] = []
        for name in ("zookeeper.out", LOG_FILE):
            with contextlib.suppress(OSError):
                text = (self.data_dir / name).read_text(errors="replace")
                lines += [ln for ln in text.splitlines() if "ERROR" in ln or "Exception" in ln]
        if any("Address already in use" in ln for ln in lines):
            return f": port {self.port} is already in use"
        return f": {lines[-1].strip()}" if lines else f" (see {self.log_file})"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``) and forget its pid."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if process is not None:
            self._forget()

    def _forget(self) -> None:
        for name in (PID_FILE, PORT_FILE):
            with contextlib.suppress(OSError):
                (self.data_dir / name).unlink()

    def __enter__(self) -> EmbeddedZooKeeper:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._process and self._process.poll() is None else "stopped"
        return f"<EmbeddedZooKeeper {self.connect_string} {state} data_dir={self.data_dir}>"


def stop_recorded_server(data_dir: Path | str, timeout: float = 10.0) -> int | None:
    """Stop the server whose pid is recorded in ``data_dir`` (by ``simplekafka zk start``).

    Returns the pid that was stopped, or None when no live server was recorded.
    """
    data_dir = Path(data_dir)
    recorded = read_pid_file(data_dir)
    if recorded is None:
        return None
    pid, _port = recorded
    stopped = None
    if pid_alive(pid) and is_zookeeper_process(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped = pid
    for name in (PID_FILE, PORT_FILE):
        with contextlib.suppress(OSError):
            (data_dir / name).unlink()
    return stopped
