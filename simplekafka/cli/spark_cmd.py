"""``simplekafka spark up|status|down``: Spark's standalone cluster (a master and workers) here.

``up`` starts Spark's own master and N workers from the pyspark wheel as
background processes on 127.0.0.1 (one core each), prints the master URL and
records it with the pids and web UIs in ``DIR/spark.json``; a SparkSession
joins with ``master(URL)`` (``python -m stages.stage8_spark --master URL``,
``run_cluster.sh --spark-master URL``). ``status`` asks the master which
workers and applications it has; ``down`` stops the workers, then the master.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simplekafka.cli import CliError, positive_int
from simplekafka.cli.client_common import DEFAULT_CLUSTER_DIR
from simplekafka.cluster.spark_standalone import (
    STATE_FILE,
    SparkClusterError,
    SparkStandalone,
    master_json,
)
from simplekafka.coordination.processes import pid_alive


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "spark", help="start, stop or inspect a local Spark standalone cluster",
        description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start a Spark master and N workers in the background")
    up.add_argument("--workers", type=positive_int, default=2, metavar="N",
                    help="how many workers, one core each (default 2)")
    _add_dir(up)
    up.set_defaults(func=spark_up)

    status = actions.add_parser("status", help="the master's workers and applications")
    _add_dir(status)
    status.set_defaults(func=spark_status)

    down = actions.add_parser("down", help="stop the Spark cluster started with 'up'")
    _add_dir(down)
    down.set_defaults(func=spark_down)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=Path(DEFAULT_CLUSTER_DIR),
                        help="where logs, work directories and spark.json live "
                             f"(default ./{DEFAULT_CLUSTER_DIR})")


def _recorded(directory: Path) -> dict:
    try:
        state = SparkStandalone.recorded(directory)
    except SparkClusterError as exc:
        raise CliError(str(exc)) from None
    if state is None:
        raise CliError(f"no Spark cluster recorded in {directory / STATE_FILE}")
    return state


def spark_up(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    state = _recorded(directory) if (directory / STATE_FILE).exists() else None
    if state and pid_alive(state.get("master_pid")):
        raise CliError(f"a Spark master already runs from {directory} ({state['master_url']}); "
                       f"'simplekafka spark down --dir {args.dir}' first")
    directory.mkdir(parents=True, exist_ok=True)
    cluster = SparkStandalone(workers=args.workers, base_dir=directory, detach=True)
    try:
        cluster.start()
    except (SparkClusterError, OSError) as exc:
        raise CliError(str(exc).splitlines()[0] + f" (logs in {directory / 'logs'})") from None
    print(cluster.master_url)
    print(f"Spark master {cluster.master_url}, web UI {cluster.web_ui}; "
          f"{args.workers} worker(s), 1 core each; recorded in {directory / STATE_FILE}")
    print(f"stop it with: simplekafka spark down --dir {args.dir}")
    return 0


def spark_status(args: argparse.Namespace) -> int:
    """Exit 0 when the master runs and lists every recorded worker ALIVE, 1 otherwise."""
    directory = args.dir.resolve()
    state = _recorded(directory)
    if not pid_alive(state.get("master_pid")):
        print(f"Spark cluster in {directory}: stopped (was {state.get('master_url')})")
        return 1
    try:
        master = master_json(state["web_ui"])
    except (OSError, ValueError) as exc:
        print(f"Spark cluster in {directory}: the master (pid {state['master_pid']}) does not "
              f"answer at {state['web_ui']} ({type(exc).__name__})")
        return 1
    alive = [w for w in master.get("workers", []) if w.get("state") == "ALIVE"]
    wanted = len(state.get("workers", []))
    verdict = "running" if len(alive) >= wanted else f"degraded ({len(alive)} of {wanted} workers)"
    print(f"Spark cluster in {directory}: {verdict}")
    print(f"  master {state['master_url']} (pid {state['master_pid']}), web UI {state['web_ui']}")
    for worker in alive:
        print(f"  worker {worker['host']}:{worker['port']}: {worker['cores']} core(s), "
              f"{worker['coresused']} in use, {worker['memory']} MiB, UI {worker['webuiaddress']}")
    for app in master.get("activeapps", []):
        print(f"  application {app['id']} {app['name']!r}: {app.get('cores', '?')} core(s)")
    return 0 if len(alive) >= wanted else 1


def spark_down(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    _recorded(directory)
    stopped = SparkStandalone.stop_recorded(directory)
    if stopped:
        print(f"stopped the Spark workers and master (pids {', '.join(map(str, stopped))})")
    else:
        print(f"no Spark process of {directory} was running")
    return 0
