"""``simplekafka cluster up|down|status``: a LocalCluster that outlives the command.

``up`` starts a small supervisor process in the background (this same command
with ``--foreground``) that runs a LocalCluster until it gets SIGTERM, and
records pids and ports in ``DIR/cluster.json``. ``down`` sends that SIGTERM;
``status`` reads the file and asks each broker whether it serves. One
supervisor owning every process means ``down`` stops brokers before ZooKeeper,
in the order a clean shutdown needs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from simplekafka.cli import CliError, key_values, port_number, positive_int
from simplekafka.cluster import ClusterError, LocalCluster, probe_broker
from simplekafka.cluster.local import LOOPBACK, tail
from simplekafka.console.process import ConsoleProcess
from simplekafka.coordination.processes import pid_alive

STATE_FILE = "cluster.json"
SUPERVISOR_LOG = "cluster.log"
UP_TIMEOUT = 120.0
DOWN_TIMEOUT = 90.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cluster", help="start, stop or inspect a local ZooKeeper + brokers cluster",
        description=__doc__.splitlines()[0],
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start ZooKeeper and N brokers in the background")
    up.add_argument("--brokers", type=positive_int, default=1, help="how many brokers (1)")
    _add_dir(up)
    up.add_argument("--zookeeper", default=None,
                    help="use this ZooKeeper (host:port[/chroot]) instead of an embedded one")
    up.add_argument("--rack", action="append", default=None, metavar="RACK",
                    help="rack of broker 1, 2, ... (repeat once per broker)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                    help="a Kafka-style broker setting for every broker (repeatable)")
    up.add_argument("--console", action="store_true",
                    help="also start the console (REST API and web page) for the cluster")
    up.add_argument("--console-port", type=port_number, default=8080,
                    help="port of the console on 127.0.0.1 (8080; 0 picks a free one)")
    up.add_argument("--foreground", action="store_true",
                    help="run the cluster in this process until SIGTERM or Ctrl-C")
    up.set_defaults(func=cluster_up)

    down = actions.add_parser("down", help="stop the cluster started with 'up'")
    _add_dir(down)
    down.set_defaults(func=cluster_down)

    status = actions.add_parser("status", help="show pids and ports, and whether each serves")
    _add_dir(status)
    status.set_defaults(func=cluster_status)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=Path("simplekafka-cluster"),
                        help="where data, logs and cluster.json live (./simplekafka-cluster)")


def read_state(directory: Path) -> dict | None:
    """The recorded cluster.json of ``directory``, or None if there is none."""
    try:
        return json.loads((directory / STATE_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {directory / STATE_FILE}: {exc}") from None


def _write_state(directory: Path, state: dict) -> None:
    temporary = directory / (STATE_FILE + ".tmp")
    temporary.write_text(json.dumps(state, indent=2) + "\n")
    temporary.replace(directory / STATE_FILE)


def _state_of(cluster: LocalCluster, status: str, console: ConsoleProcess | None = None) -> dict:
    return {
        "status": status,
        "supervisor_pid": os.getpid(),
        "bootstrap_servers": cluster.bootstrap_servers,
        "zookeeper": cluster.zookeeper_connect if status == "running" else None,
        "zookeeper_pid": cluster.zookeeper_pid,
        "brokers": {
            str(broker_id): {
                "pid": broker.pid,
                "port": broker.port,
                "data_dir": str(broker.data_dir),
                "log": str(broker.log_file),
                "metrics_url": broker.metrics_url,
            }
            for broker_id, broker in cluster.brokers.items()
        },
        "console_url": console.url if console is not None else None,
        "console_pid": console.pid if console is not None else None,
    }


def cluster_up(args: argparse.Namespace) -> int:
    config = key_values(args.settings, "--set")
    if args.rack is not None and len(args.rack) != args.brokers:
        raise CliError(f"gave {len(args.rack)} --rack for {args.brokers} brokers")
    directory = args.dir.resolve()
    state = read_state(directory)
    if state and pid_alive(state.get("supervisor_pid")):
        raise CliError(
            f"a cluster already runs from {directory} (supervisor pid "
            f"{state['supervisor_pid']}); 'simplekafka cluster down --dir {args.dir}' first"
        )
    directory.mkdir(parents=True, exist_ok=True)
    if args.foreground:
        return _run_foreground(args, directory, config)
    return _start_background(args, directory)


def _run_foreground(args: argparse.Namespace, directory: Path, config: dict[str, str]) -> int:
    stop_requested = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop_requested.set())
    cluster = LocalCluster(
        brokers=args.brokers, base_dir=directory, zookeeper=args.zookeeper,
        broker_config=config, racks=args.rack,
    )
    try:
        cluster.start()
    except (ClusterError, ValueError, OSError) as exc:
        _write_state(directory, {"status": "failed", "error": str(exc),
                                 "supervisor_pid": os.getpid()})
        print(f"simplekafka cluster up: {exc}", file=sys.stderr)
        return 1
    console = None
    try:
        if args.console:
            try:
                console = ConsoleProcess(cluster.bootstrap_servers, port=args.console_port)
            except RuntimeError as exc:
                _write_state(directory, {"status": "failed", "error": str(exc),
                                         "supervisor_pid": os.getpid()})
                print(f"simplekafka cluster up: {exc}", file=sys.stderr)
                return 1
        _write_state(directory, _state_of(cluster, "running", console))
        print(f"cluster running: bootstrap servers {cluster.bootstrap_servers}, "
              f"ZooKeeper {cluster.zookeeper_connect}", flush=True)
        while not stop_requested.wait(0.5):
            pass
    finally:
        if console is not None:
            console.stop()
        cluster.stop()
        _write_state(directory, _state_of(cluster, "stopped"))
        print("cluster stopped", flush=True)
    return 0


def _start_background(args: argparse.Namespace, directory: Path) -> int:
    (directory / STATE_FILE).unlink(missing_ok=True)
    command = [sys.executable, "-m", "simplekafka", "cluster", "up", "--foreground",
               "--brokers", str(args.brokers), "--dir", str(directory)]
    if args.zookeeper:
        command += ["--zookeeper", args.zookeeper]
    for rack in args.rack or []:
        command += ["--rack", rack]
    for setting in args.settings:
        command += ["--set", setting]
    if args.console:
        command += ["--console", "--console-port", str(args.console_port)]
    log_path = directory / SUPERVISOR_LOG
    with open(log_path, "ab") as log:
        supervisor = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + UP_TIMEOUT
    while time.monotonic() < deadline:
        state = read_state(directory)
        if state and state.get("supervisor_pid") == supervisor.pid:
            if state["status"] == "running":
                print(f"cluster up: bootstrap servers {state['bootstrap_servers']}, "
                      f"ZooKeeper {state['zookeeper']}")
                if state.get("console_url"):
                    print(f"console: {state['console_url']} (REST API under "
                          f"{state['console_url']}api, docs at {state['console_url']}api/docs)")
                print(f"stop it with: simplekafka cluster down --dir {args.dir}")
                return 0
            if state["status"] == "failed":
                break
        if supervisor.poll() is not None:
            break
        time.sleep(0.2)
    else:
        supervisor.terminate()
    supervisor.wait(DOWN_TIMEOUT)
    print(f"simplekafka cluster up: the cluster did not start; last lines of {log_path}:\n"
          f"{tail(log_path)}", file=sys.stderr)
    return 1


def cluster_down(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    state = read_state(directory)
    if state is None:
        raise CliError(f"no cluster recorded in {directory / STATE_FILE}")
    pid = state.get("supervisor_pid")
    if pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + DOWN_TIMEOUT
        while pid_alive(pid):
            if time.monotonic() > deadline:
                print(f"simplekafka cluster down: supervisor {pid} still running after "
                      f"{DOWN_TIMEOUT:.0f} s; see {directory / SUPERVISOR_LOG}", file=sys.stderr)
                return 1
            time.sleep(0.2)
    else:
        print(f"the supervisor of {directory} is not running")
    orphans = _stop_orphans(state)
    if orphans:
        print(f"stopped processes the supervisor left behind: {orphans}")
    print(f"cluster in {directory} stopped")
    return 0


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def _stop_orphans(state: dict) -> list[int]:
    """SIGTERM (then SIGKILL) recorded brokers and ZooKeeper that outlived a dead supervisor.

    A pid is only signalled if its command line is still one of ours, so a
    recycled pid belonging to something else is left alone.
    """
    candidates = [(state.get("console_pid"), "simplekafka console")]
    candidates += [(b.get("pid"), "simplekafka broker") for b in state.get("brokers", {}).values()]
    candidates.append((state.get("zookeeper_pid"), "ZooKeeperServerMain"))
    stopped = []
    for pid, marker in candidates:  # the console, brokers, ZooKeeper last
        if not pid_alive(pid) or marker not in _command_line(pid):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped.append(pid)
    return stopped


def cluster_status(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    state = read_state(directory)
    if state is None:
        raise CliError(f"no cluster recorded in {directory / STATE_FILE}")
    supervisor_up = pid_alive(state.get("supervisor_pid"))
    print(f"cluster in {directory}: {state['status'] if supervisor_up else 'not running'}")
    if state.get("status") == "failed":
        print(f"  start failed: {state.get('error')}")
        return 1
    print(f"  bootstrap servers: {state.get('bootstrap_servers')}")
    print(f"  ZooKeeper: {state.get('zookeeper')} (pid {state.get('zookeeper_pid')})")
    all_serving = supervisor_up
    for broker_id, broker in sorted(state.get("brokers", {}).items(), key=lambda kv: int(kv[0])):
        if not pid_alive(broker["pid"]):
            verdict, all_serving = "down", False
        else:
            try:
                seen = probe_broker(LOOPBACK, broker["port"])
                verdict = f"serving (controller {seen.controller_id})"
            except Exception as exc:  # any failure to answer is "not serving"
                verdict, all_serving = f"not answering ({type(exc).__name__})", False
        print(f"  broker {broker_id}: pid {broker['pid']} port {broker['port']}: {verdict}")
        if broker.get("metrics_url"):
            print(f"    metrics {broker['metrics_url']}  health "
                  f"{broker['metrics_url'].removesuffix('/metrics')}/health")
    if state.get("console_url"):
        console_up = pid_alive(state.get("console_pid"))
        print(f"  console: {state['console_url']} (pid {state.get('console_pid')}): "
              f"{'running' if console_up else 'down'}")
    return 0 if all_serving else 1
