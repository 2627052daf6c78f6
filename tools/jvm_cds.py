"""Class-data-sharing archives for the suite's JVMs: a Spark driver's classes, ZooKeeper's.

    python tools/jvm_cds.py            # write them if missing or stale; print their paths
    python tools/jvm_cds.py --path     # only print where they are (or would be)

The suite starts a few dozen Spark drivers and a few hundred ZooKeepers, each its own
JVM, each loading and verifying its classes from jars again (about ten thousand for a
driver). A JVM given an archive of them (HotSpot's AppCDS, ``-XX:SharedArchiveFile``) maps
them instead: on the two-core machine a driver's start and first query took 8.3 s of JVM
CPU instead of 15.5, a ZooKeeper's start 1.4 s instead of 2.3. tools/bootstrap.sh runs this
once per virtualenv (one driver start and one ZooKeeper start, about a minute);
conftest.py hands the archives to every driver (PYSPARK_SUBMIT_ARGS) and every embedded
ZooKeeper (SIMPLEKAFKA_ZOOKEEPER_JVM_OPTIONS) when they exist; the driver's archive also to
the executors on a standalone cluster (spark.executor.defaultJavaOptions) and to its master
and workers (SIMPLEKAFKA_SPARK_DAEMON_JVM_OPTIONS): their JVMs run with the driver's class
path and load mostly the same classes. The JVM checks an archive
against itself and against the class path (each jar's size and time); one that does not
match is ignored, silently (the ``cds`` log is off), and the JVM starts as it would
without it: only speed changes, never what runs. A driver run with a SPARK_CONF_DIR
has that directory first on its class path and starts without it (the docs build's
listings name their log4j configuration through LOG4J_CONFIGURATION_FILE instead).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Beside the virtualenv's packages, so that a new virtualenv (a fresh clone) makes its own
#: (SIMPLEKAFKA_JVM_CDS_DIR names another place).
DIRECTORY = Path(os.environ.get("SIMPLEKAFKA_JVM_CDS_DIR")
                 or Path(sys.prefix) / "share" / "simplekafka")
SPARK_ARCHIVE = DIRECTORY / "spark-driver.jsa"
ZOOKEEPER_ARCHIVE = DIRECTORY / "zookeeper.jsa"
#: The driver options the archive is written with and used with (conftest.py's).
DRIVER_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
#: The JVM says nothing about an archive, also when it ignores one that does not match.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
TIMEOUT = 600

# What the Spark archive's driver runs: a session as local_spark makes it, a batch
# aggregation and a Python function (Spark's Python worker, Arrow), then a clean exit (an
# archive is written when its JVM exits).
SPARK_WORKLOAD = """
from simplekafka.spark.session import local_spark
spark = local_spark("simplekafka-cds")
spark.range(1000).selectExpr("id % 3 AS k").groupBy("k").count().collect()
spark.range(100).mapInArrow(lambda batches: batches, "id long").collect()
spark.stop()
"""
# ZooKeeper's: a start, a session that writes and reads a znode, a stop (SIGTERM: the JVM
# exits through its shutdown, which writes the archive).
ZOOKEEPER_WORKLOAD = """
import sys, tempfile
from simplekafka.coordination import EmbeddedZooKeeper, connect_zookeeper
with tempfile.TemporaryDirectory() as data:
    server = EmbeddedZooKeeper(data_dir=data).start()
    try:
        client = connect_zookeeper(server.connect_string)
        client.create("/cds", b"x")
        client.get("/cds")
        client.stop()
    finally:
        server.stop(timeout=60)
"""


def use_options(archive: Path) -> str:
    """The JVM options that use ``archive`` ('' when there is none)."""
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.exists() else ""


def _fingerprint() -> str:
    """What the archives depend on: the JVM's build and pyspark's (its jars') version."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60,
                          check=False)
    return f"{java.stderr.strip()}\npyspark {pyspark.__version__} {pyspark.__file__}\n"


def _write(archive: Path, workload: str, fingerprint: str, env: dict[str, str]) -> Path:
    """Run ``workload`` with ``env`` naming a scratch file as the archive; then move it in."""
    stamp = archive.with_suffix(".stamp")
    if archive.exists() and stamp.exists() and stamp.read_text() == fingerprint:
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    scratch = archive.with_name(f".{archive.name}.{os.getpid()}")
    env = {name: value.replace("{scratch}", str(scratch)) for name, value in env.items()}
    with tempfile.TemporaryDirectory(prefix="simplekafka-cds-") as workdir:
        result = subprocess.run([sys.executable, "-c", workload], cwd=workdir, env=env,
                                capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if result.returncode != 0 or not scratch.exists():
        scratch.unlink(missing_ok=True)
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the JVM that writes {archive.name} failed: {last}")
    os.replace(scratch, archive)
    stamp.write_text(fingerprint)
    return archive


def write() -> list[Path]:
    """Both archives, each written by one JVM run with ``-XX:ArchiveClassesAtExit``."""
    fingerprint = _fingerprint()
    base = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")]))}
    base.pop("SPARK_CONF_DIR", None)  # the class path the suite's drivers have
    dump = f"-XX:ArchiveClassesAtExit={{scratch}} {QUIET}"
    # Side by side: the bootstrap runs before the suite, on an otherwise idle machine.
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(_write, SPARK_ARCHIVE, SPARK_WORKLOAD, fingerprint, {
                **base, "PYSPARK_SUBMIT_ARGS":
                    f"--driver-java-options '{DRIVER_OPTIONS} {dump}' pyspark-shell"}),
            pool.submit(_write, ZOOKEEPER_ARCHIVE, ZOOKEEPER_WORKLOAD, fingerprint,
                        {**base, "SIMPLEKAFKA_ZOOKEEPER_JVM_OPTIONS": dump}),
        ]
        return [run.result() for run in runs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="store_true", help="print the archives' paths only")
    args = parser.parse_args()
    if args.path:
        print(SPARK_ARCHIVE, ZOOKEEPER_ARCHIVE, sep="\n")
        return 0
    try:
        print(*write(), sep="\n")
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        # Without an archive the JVMs start as before, only slower: not a failure.
        print(f"jvm_cds: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
