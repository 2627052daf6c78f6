"""SparkStandalone: Spark's own standalone cluster (a master and N workers) from the pyspark wheel.

``local[*]`` runs every task in the driver's JVM; a standalone cluster runs
them in executors started by workers, each a separate JVM with its own
Python workers, which is what a pipeline meets on more machines. The master
and the workers are Spark's own daemons (``spark-class
org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), bound to
127.0.0.1 on ports the OS picks, with small heaps and one core per worker.
Their pids, ports and web UIs are recorded in ``DIR/spark.json`` (as
``simplekafka cluster up`` records brokers in ``cluster.json``), which is how
``simplekafka spark status|down`` find them from another process.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import subprocess
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from simplekafka.coordination.processes import LOOPBACK, pid_alive, stop_recorded_pid, wait_until
from simplekafka.coordination.zookeeper_server import _LIBC, _die_with_parent, find_java

STATE_FILE = "spark.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: Each worker offers this much memory to executors; a session asks for EXECUTOR_MEMORY.
WORKER_MEMORY = "768m"
EXECUTOR_MEMORY = "512m"
# The daemons' own heaps and JIT: they only schedule, the executors do the work.
DAEMON_MEMORY = "256m"
DAEMON_JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true"
#: More JVM options for the master and the workers, space-separated, from the environment:
#: the test suite's class-data-sharing archive of Spark's classes (tools/jvm_cds.py).
DAEMON_JVM_OPTIONS_ENV = "SIMPLEKAFKA_SPARK_DAEMON_JVM_OPTIONS"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_WEB_UI = re.compile(r"started at (http://\S+?)/?$", re.MULTILINE)


class SparkClusterError(RuntimeError):
    """The master or a worker did not start or stop as asked; says which and why."""


def spark_home() -> Path:
    """The pyspark wheel's directory: it holds ``bin/spark-class`` and ``jars/``."""
    try:
        import pyspark  # only to find its directory
    except ImportError as exc:
        raise SparkClusterError("pyspark is not installed: pip install 'simplekafka[spark]'") \
            from exc
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise SparkClusterError(f"no bin/spark-class in {home}")
    return home


@dataclass
class Daemon:
    """One master or worker: its recorded identity and, where it was started, its Popen."""

    role: str  # "master" or "worker-<i>"
    log_file: Path
    pid: int | None = None
    web_ui: str | None = None
    process: subprocess.Popen | None = None

    @property
    def main_class(self) -> str:
        return MASTER_CLASS if self.role == "master" else WORKER_CLASS

    @property
    def is_running(self) -> bool:
        return pid_alive(self.pid)


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _last_lines(path: Path, lines: int = 15) -> str:
    return "\n".join(_log_text(path).splitlines()[-lines:])


def master_json(web_ui: str, timeout: float = 2.0) -> dict:
    """The master's own status document (``WEB_UI/json/``: workers, cores, applications)."""
    with urllib.request.urlopen(f"{web_ui.rstrip('/')}/json/", timeout=timeout) as answer:
        return json.load(answer)


class SparkStandalone:
    """A Spark standalone master and ``workers`` workers as local processes.

    ``start()`` returns once the master's web UI lists every worker ALIVE;
    ``master_url`` (``spark://127.0.0.1:PORT``) is then what a SparkSession's
    master is set to (``simplekafka.spark.session.local_spark(master=...)``).
    ``detach=True`` leaves the daemons running when this process ends (what
    ``simplekafka spark up`` does); otherwise they die with it, as the
    embedded ZooKeeper does. Everything lives under ``base_dir``: the logs,
    each worker's work directory (executors' stdout and stderr) and
    ``spark.json``. Usable as a context manager.
    """

    def __init__(self, workers: int = 2, base_dir: Path | str | None = None,
                 cores_per_worker: int = 1, worker_memory: str = WORKER_MEMORY,
                 detach: bool = False, start_timeout: float = START_TIMEOUT) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self._owns_base_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="simplekafka-spark-")).resolve()
        self.cores_per_worker = cores_per_worker
        self.worker_memory = worker_memory
        self.detach = detach
        self.start_timeout = start_timeout
        # spark-* names: the directory may be a Kafka cluster's too (cluster.json beside it).
        self.master = Daemon("master", self.base_dir / "logs" / "spark-master.log")
        self.workers = [Daemon(f"worker-{i}", self.base_dir / "logs" / f"spark-worker-{i}.log")
                        for i in range(1, workers + 1)]
        self.master_url: str | None = None

    # -- what clients need -----------------------------------------------------

    @property
    def web_ui(self) -> str | None:
        """The master's web UI (its ``/json/`` says which workers and applications it has)."""
        return self.master.web_ui

    def state(self, status: str = "running") -> dict:
        """What ``spark.json`` holds."""
        return {
            "status": status,
            "master_url": self.master_url,
            "web_ui": self.web_ui,
            "master_pid": self.master.pid,
            "master_log": str(self.master.log_file),
            "workers": [{"pid": w.pid, "web_ui": w.web_ui, "log": str(w.log_file),
                         "work_dir": str(self.work_dir(w))} for w in self.workers],
        }

    def work_dir(self, worker: Daemon) -> Path:
        """Where a worker runs its executors (their stdout and stderr, shipped files)."""
        return self.base_dir / f"spark-{worker.role}"

    def alive_workers(self) -> list[dict]:
        """The workers the master counts as ALIVE, as its ``/json/`` lists them."""
        if not self.web_ui:
            return []
        try:
            workers = master_json(self.web_ui).get("workers", [])
        except (OSError, ValueError):
            return []
        return [w for w in workers if w.get("state") == "ALIVE"]

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> SparkStandalone:
        """Start the master, then the workers; wait until the master lists them all ALIVE."""
        if self.master.is_running:
            return self
        if not self.detach:
            atexit.register(self.stop)
        try:
            self._spawn(self.master, [MASTER_CLASS, "--host", LOOPBACK, "--port", "0",
                                      "--webui-port", "0"])
            self.master_url = self._wait_for_line(self.master, _MASTER_URL)
            self.master.web_ui = self._wait_for_line(self.master, _WEB_UI)
            for worker in self.workers:
                work_dir = self.work_dir(worker)
                work_dir.mkdir(parents=True, exist_ok=True)
                self._spawn(worker, [WORKER_CLASS, self.master_url, "--host", LOOPBACK,
                                     "--port", "0", "--webui-port", "0",
                                     "--cores", str(self.cores_per_worker),
                                     "--memory", self.worker_memory,
                                     "--work-dir", str(work_dir)])
            for worker in self.workers:
                worker.web_ui = self._wait_for_line(worker, _WEB_UI)
            wait_until(self._all_alive, f"{len(self.workers)} workers ALIVE at {self.web_ui}",
                       self.start_timeout, 0.2, error=SparkClusterError)
            self._write_state("running")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM the workers (they kill their executors), then the master."""
        atexit.unregister(self.stop)
        for daemon in [*self.workers, self.master]:
            if daemon.pid is not None:
                stop_recorded_pid(daemon.pid, daemon.main_class, STOP_TIMEOUT)
            if daemon.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    daemon.process.wait(STOP_TIMEOUT)
        if (self.base_dir / STATE_FILE).exists():
            self._write_state("stopped")

    def cleanup(self) -> None:
        """stop(), then remove base_dir if this object made it (a temporary directory)."""
        import shutil

        self.stop()
        if self._owns_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.cleanup()

    # -- another process's cluster, from spark.json ----------------------------

    @classmethod
    def recorded(cls, base_dir: Path | str) -> dict | None:
        """The ``spark.json`` of ``base_dir``, or None if there is none."""
        try:
            return json.loads((Path(base_dir) / STATE_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise SparkClusterError(f"cannot read {Path(base_dir) / STATE_FILE}: {exc}") from None

    @classmethod
    def stop_recorded(cls, base_dir: Path | str) -> list[int]:
        """Stop the daemons ``spark.json`` records (workers first); the pids that were stopped."""
        state = cls.recorded(base_dir)
        if state is None:
            raise SparkClusterError(f"no Spark cluster recorded in {Path(base_dir) / STATE_FILE}")
        recorded = [(w.get("pid"), WORKER_CLASS) for w in state.get("workers", [])]
        recorded.append((state.get("master_pid"), MASTER_CLASS))
        stopped = [pid for pid, marker in recorded if stop_recorded_pid(pid, marker, STOP_TIMEOUT)]
        state["status"] = "stopped"
        _write_json(Path(base_dir) / STATE_FILE, state)
        return stopped

    # -- internals -------------------------------------------------------------

    def _all_alive(self) -> bool:
        for daemon in [self.master, *self.workers]:
            if not daemon.is_running:
                raise SparkClusterError(
                    f"Spark {daemon.role} exited while starting; last lines of "
                    f"{daemon.log_file}:\n{_last_lines(daemon.log_file)}")
        return len(self.alive_workers()) >= len(self.workers)

    def _wait_for_line(self, daemon: Daemon, pattern: re.Pattern[str]) -> str:
        def found() -> str | None:
            match = pattern.search(_log_text(daemon.log_file))
            if match:
                return match.group(1)
            if not daemon.is_running:
                raise SparkClusterError(
                    f"Spark {daemon.role} exited while starting; last lines of "
                    f"{daemon.log_file}:\n{_last_lines(daemon.log_file)}")
            return None

        return str(wait_until(found, f"Spark {daemon.role} to start (see {daemon.log_file})",
                              self.start_timeout, 0.2, error=SparkClusterError))

    def _spawn(self, daemon: Daemon, arguments: list[str]) -> None:
        home = spark_home()
        daemon.log_file.parent.mkdir(parents=True, exist_ok=True)
        java = Path(find_java()).resolve()
        # Not the caller's PYTHONPATH: executors get SimpleKafka the Spark way (addPyFile).
        # Nor its SPARK_CONF_DIR or LOG4J_CONFIGURATION_FILE (the docs build's quiet
        # logging): the daemons log to their own files at Spark's default level, which is
        # where their URLs are read from.
        inherited = {k: v for k, v in os.environ.items()
                     if k not in ("PYTHONPATH", "SPARK_CONF_DIR", "LOG4J_CONFIGURATION_FILE")}
        env = {**inherited, "SPARK_HOME": str(home), "JAVA_HOME": str(java.parents[1]),
               "SPARK_LOCAL_IP": LOOPBACK, "SPARK_PUBLIC_DNS": LOOPBACK,
               "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
               "SPARK_DAEMON_JAVA_OPTS": " ".join(
                   [DAEMON_JAVA_OPTS, *os.environ.get(DAEMON_JVM_OPTIONS_ENV, "").split()]),
               # Executors' own settings come from the application (the SparkSession).
               "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=false",
               # No REST submission server: it takes the fixed port 6066.
               "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        tie_to_us = not self.detach and threading.current_thread() is threading.main_thread()
        with open(daemon.log_file, "wb") as log:
            daemon.process = subprocess.Popen(
                [str(home / "bin" / "spark-class"), *arguments],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=self.base_dir, start_new_session=self.detach,
                preexec_fn=_die_with_parent if tie_to_us and _LIBC is not None else None)
        daemon.pid = daemon.process.pid  # spark-class execs java: this is the JVM's pid

    def _write_state(self, status: str) -> None:
        _write_json(self.base_dir / STATE_FILE, self.state(status))


def _write_json(path: Path, data: object) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    temporary.replace(path)
