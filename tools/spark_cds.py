"""A class-data-sharing archive of the classes a Spark driver loads, for the suite's drivers.

    python tools/spark_cds.py            # write it if missing or stale; print its path
    python tools/spark_cds.py --path     # only print where it is (or would be)

The suite starts a few dozen Spark drivers, each its own JVM (the pytest workers' sessions,
the restart jobs, the demos, the notebooks, the benchmarks in tiny mode, the learner's
Spark exercise). Each loads and verifies about ten thousand classes from Spark's jars; a
JVM given this archive (HotSpot's AppCDS: ``-XX:SharedArchiveFile``) maps them instead,
and a driver's start and first query took about half the CPU (15.5 -> 8.3 s of JVM CPU on
the two-core machine). tools/bootstrap.sh runs this once per virtualenv (it takes one
driver start, under a minute); conftest.py hands the archive to every driver through
PYSPARK_SUBMIT_ARGS when it exists. The JVM checks the archive against itself and against
the class path (each jar's size and time); one that does not match is ignored, silently
(conftest turns the ``cds`` log off), and the driver starts as it would without it: only
speed changes, never what runs. A driver run with another SPARK_CONF_DIR (the docs build's)
has another class path and starts without it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: Beside the virtualenv's packages, so that a new virtualenv (a fresh clone) makes its own
#: (SIMPLEKAFKA_SPARK_CDS names another place).
ARCHIVE = Path(os.environ.get("SIMPLEKAFKA_SPARK_CDS")
               or Path(sys.prefix) / "share" / "simplekafka" / "spark-driver.jsa")
STAMP = ARCHIVE.with_suffix(".stamp")
#: The driver options the archive is written with and used with (conftest.py's).
DRIVER_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
#: The JVM says nothing about the archive, also when it ignores one that does not match.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
TIMEOUT = 600

# What the archive's driver runs: a session as local_spark makes it, a batch aggregation
# and a Python function (Spark's Python worker, Arrow), then a clean exit (the archive is
# written when the JVM exits).
WORKLOAD = """
from simplekafka.spark.session import local_spark
spark = local_spark("simplekafka-cds")
spark.range(1000).selectExpr("id % 3 AS k").groupBy("k").count().collect()
spark.range(100).mapInArrow(lambda batches: batches, "id long").collect()
spark.stop()
"""


def use_options() -> str:
    """The driver options that use the archive ('' when there is none)."""
    return f"-XX:SharedArchiveFile={ARCHIVE} {QUIET}" if ARCHIVE.exists() else ""


def _fingerprint() -> str:
    """What the archive depends on: the JVM's build and pyspark's version and place."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60,
                          check=False)
    return f"{java.stderr.strip()}\npyspark {pyspark.__version__} {pyspark.__file__}\n"


def write() -> Path:
    """Run one driver with ``-XX:ArchiveClassesAtExit``; the archive lands at ARCHIVE."""
    fingerprint = _fingerprint()
    if ARCHIVE.exists() and STAMP.exists() and STAMP.read_text() == fingerprint:
        return ARCHIVE
    ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    scratch = ARCHIVE.with_name(f".{ARCHIVE.name}.{os.getpid()}")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                       os.environ.get("PYTHONPATH")])),
           "PYSPARK_SUBMIT_ARGS": f"--driver-java-options '{DRIVER_OPTIONS} "
                                  f"-XX:ArchiveClassesAtExit={scratch} {QUIET}' pyspark-shell"}
    env.pop("SPARK_CONF_DIR", None)  # the class path the suite's drivers have
    with tempfile.TemporaryDirectory(prefix="simplekafka-cds-") as workdir:
        result = subprocess.run([sys.executable, "-c", WORKLOAD], cwd=workdir, env=env,
                                capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if result.returncode != 0 or not scratch.exists():
        scratch.unlink(missing_ok=True)
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the driver that writes the archive failed: {last}")
    os.replace(scratch, ARCHIVE)
    STAMP.write_text(fingerprint)
    return ARCHIVE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="store_true", help="print the archive's path only")
    args = parser.parse_args()
    if args.path:
        print(ARCHIVE)
        return 0
    try:
        print(write())
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        # Without the archive the drivers start as before, only slower: not a failure.
        print(f"spark_cds: no archive ({exc})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
