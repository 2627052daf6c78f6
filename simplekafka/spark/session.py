"""The one SparkSession builder: ``local[cores]`` or a Spark cluster, ``simplekafka`` registered.

The stage 8 demo and chapter, the tests, the benchmarks and the Spark step
of ``run_cluster.sh`` start Spark the same way through ``local_spark``. Given
a ``master`` URL (``spark://HOST:PORT``, e.g. from ``simplekafka spark up``)
it joins that cluster instead, and ships SimpleKafka to the executors as
Spark ships any Python code: a zip of the package added with
``addPyFile`` (built once per version of the package, then reused), after
which one tiny job checks that every executor imports it.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from simplekafka.spark import register

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: What a session on a cluster asks each executor for (a standalone worker offers 768m).
EXECUTOR_MEMORY = "512m"
#: How long the first job waits for every executor to register (Spark's own wait).
REGISTRATION_WAIT = "60s"


class SparkSetupError(RuntimeError):
    """The session started, but its executors cannot run SimpleKafka; says why in one line."""


def local_spark(app_name: str = "simplekafka", cores: int = 2, master: str | None = None,
                event_log: str | os.PathLike | None = None) -> SparkSession:
    """Spark, quiet, on 127.0.0.1, UTC, few shuffle partitions; ``local[cores]`` by default.

    Spark's default of 200 shuffle partitions costs about ten times more per
    micro-batch on two cores, and it is fixed in a query's checkpoint at its
    first start. Python workers run this interpreter, not whatever ``python3``
    is first on PATH (on a cluster: the same path on every worker).

    ``master`` (``spark://...``) runs the executors on a cluster: ``cores``
    is then how many cores the application takes there (``spark.cores.max``),
    and the first job waits until executors holding all of them have
    registered, so that its tasks spread over the workers.
    ``event_log`` (a directory) turns on Spark's event log there: which
    executor ran each task, read back by tests and benchmarks.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master or f"local[{cores}]").appName(app_name)
               .config("spark.sql.shuffle.partitions", str(cores))
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    if master:
        builder = (builder.config("spark.cores.max", str(cores))
                   .config("spark.executor.memory", EXECUTOR_MEMORY)
                   # A small heap wants no parallel collector threads on a small machine.
                   .config("spark.executor.extraJavaOptions", "-XX:+UseSerialGC")
                   .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                   .config("spark.scheduler.maxRegisteredResourcesWaitingTime",
                           REGISTRATION_WAIT))
    if event_log is not None:
        Path(event_log).mkdir(parents=True, exist_ok=True)
        builder = (builder.config("spark.eventLog.enabled", "true")
                   .config("spark.eventLog.compress", "false")  # JSON lines, one file per app
                   .config("spark.eventLog.rolling.enabled", "false")
                   .config("spark.eventLog.dir", Path(event_log).resolve().as_uri()))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    if master and not master.startswith("local"):
        ship_simplekafka(spark)
    return spark


def check_master_url(text: str) -> str:
    """``spark://HOST:PORT`` (or ``local[...]``) as given; ValueError naming what is wrong."""
    if text.startswith("local"):
        return text
    host, _, port = text.removeprefix("spark://").rpartition(":")
    if not text.startswith("spark://") or not host or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not a Spark master URL (spark://HOST:PORT, as "
                         "'simplekafka spark up' prints it)")
    return text


def package_zip() -> Path:
    """A zip of the ``simplekafka`` package this process runs, built once per version of it.

    The name carries a digest of the files' names, sizes and modification
    times, so a session reuses the zip an earlier one built from the same
    tree, and an edited tree gets a new one.
    """
    package = Path(__file__).resolve().parents[1]
    files = sorted(path for path in package.rglob("*.py") if "__pycache__" not in path.parts)
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    target = (Path(tempfile.gettempdir()) / "simplekafka-pyfiles"
              / f"simplekafka-{digest.hexdigest()[:16]}.zip")
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with zipfile.ZipFile(scratch, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, Path("simplekafka") / path.relative_to(package))
    os.replace(scratch, target)
    return target


def ship_simplekafka(spark: SparkSession, module: str = "simplekafka.spark.source") -> list[str]:
    """``addPyFile`` the package zip, then check every executor imports ``module`` from it.

    Returns where each task of the check found ``simplekafka`` (one per
    executor core); raises :class:`SparkSetupError` with a one-line reason
    when an executor cannot import it (a missing dependency in the workers'
    Python, another Python version, ...).
    """
    context = spark.sparkContext
    shipped = package_zip()
    context.addPyFile(str(shipped))
    return check_executors(spark, module, hint=f"SimpleKafka is shipped to them as {shipped}")


def check_executors(spark: SparkSession, module: str, hint: str = "") -> list[str]:
    """Import ``module`` in a task per executor core; a one-line SparkSetupError if one fails."""
    def imported(_: object) -> list[tuple[str, str]]:
        import importlib
        import os

        try:
            found = importlib.import_module(module)
        except Exception as exc:  # reported to the driver as one line
            return [("", f"{type(exc).__name__}: {exc}")]
        return [(f"{os.getcwd()}: {getattr(found, '__file__', '?')}", "")]

    context = spark.sparkContext
    tasks = max(context.defaultParallelism, 1)
    try:
        answers = context.parallelize(range(tasks), tasks).mapPartitions(imported).collect()
    except Exception as exc:  # the Python worker itself could not start
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkSetupError(f"Spark executors cannot run Python tasks: {first}") from None
    errors = sorted({error for _, error in answers if error})
    if errors:
        raise SparkSetupError(
            f"Spark executors cannot import {module}: {errors[0]} (their Python is "
            f"{os.environ.get('PYSPARK_PYTHON', 'python3')}; {hint or 'no zip was shipped'}; "
            "its dependencies must be installed in that Python)")
    return [where for where, _ in answers]


def tasks_by_executor(event_log: str | os.PathLike) -> dict[str, dict[str, int]]:
    """From Spark's event log: for each application, tasks finished per executor.

    An executor is named ``ID@WORKER_UI`` (its worker's web UI, taken from the
    executor's log links), so two executors on two workers are two names. A
    driver killed mid-run leaves its log ``.inprogress``; what it flushed counts.
    """
    import json
    from urllib.parse import urlsplit

    found: dict[str, dict[str, int]] = {}
    for path in sorted(Path(event_log).glob("app-*")):
        app = path.name.removesuffix(".inprogress")
        where: dict[str, str] = {}
        tasks: dict[str, int] = {}
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # the last line of a killed driver's log may be cut short
                continue
            kind = event.get("Event")
            if kind == "SparkListenerExecutorAdded":
                links = event.get("Executor Info", {}).get("Log Urls", {})
                worker = urlsplit(next(iter(links.values()), "")).netloc or "?"
                where[event["Executor ID"]] = worker
            elif kind == "SparkListenerTaskEnd":
                executor = event["Task Info"]["Executor ID"]
                name = f"{executor}@{where.get(executor, 'driver')}"
                tasks[name] = tasks.get(name, 0) + 1
        found[app] = tasks
    return found
