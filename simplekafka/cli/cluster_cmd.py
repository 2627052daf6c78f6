"""``simplekafka cluster up|down|status``: a LocalCluster that outlives the command.

``up`` starts a small supervisor process in the background (this same command
with ``--foreground``) that runs a LocalCluster until it gets SIGTERM, and
records pids and ports in ``DIR/cluster.json``, where the client commands look
for the bootstrap servers (``client_common``). The brokers take Kafka's
quick-start ports (9092, 9093, ...) and ZooKeeper 2181 when they are free, any
free ones otherwise; ``up`` then says which and what to export. ``down`` sends that SIGTERM;
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
from simplekafka.cli.client_common import (
    BOOTSTRAP_ENV,
    CLUSTER_STATE_FILE,
    DEFAULT_CLUSTER_DIR,
)
from simplekafka.cluster import ClusterError, LocalCluster, probe_broker
from simplekafka.cluster.local import LOOPBACK, tail
from simplekafka.console.process import ConsoleProcess
from simplekafka.coordination.processes import command_line, pid_alive, stop_recorded_pid

STATE_FILE = CLUSTER_STATE_FILE
SUPERVISOR_LOG = "cluster.log"
UP_TIMEOUT = 120.0
DOWN_TIMEOUT = 90.0
DEFAULT_PORT = 9092  # Kafka's quick-start listener
DEFAULT_ZOOKEEPER_PORT = 2181


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cluster", help="start, stop or inspect a local ZooKeeper + brokers cluster",
        description=__doc__.splitlines()[0],
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start ZooKeeper and N brokers in the background")
    up.add_argument("--brokers", type=positive_int, default=1, metavar="N",
                    help="how many brokers (default 1)")
    up.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                    help=f"port of broker 1 on 127.0.0.1, broker i on PORT+i-1 (default "
                         f"{DEFAULT_PORT}); a taken port, or 0, means any free one")
    up.add_argument("--zookeeper-port", type=port_number, default=DEFAULT_ZOOKEEPER_PORT,
                    metavar="PORT",
                    help=f"port of the embedded ZooKeeper (default {DEFAULT_ZOOKEEPER_PORT}); "
                         "a taken port, or 0, means any free one")
    _add_dir(up)
    up.add_argument("--zookeeper", default=None, metavar="HOST:PORT[/CHROOT]",
                    help="use this ZooKeeper (host:port[/chroot]) instead of an embedded one")
    up.add_argument("--rack", action="append", default=None, metavar="RACK",
                    help="rack of broker 1, 2, ... (repeat once per broker)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                    help="a Kafka-style broker setting for every broker (repeatable)")
    up.add_argument("--console", action="store_true",
                    help="also start the console (REST API and web page) for the cluster")
    up.add_argument("--console-port", type=port_number, default=8080, metavar="PORT",
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
    parser.add_argument("--dir", type=Path, default=DEFAULT_CLUSTER_DIR,
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


def _wanted_ports(args: argparse.Namespace) -> list[int]:
    """Broker i's wished-for port: --port + i - 1 (0, or past 65535: any free one)."""
    return [args.port + i if args.port and args.port + i <= 65535 else 0
            for i in range(args.brokers)]


def _run_foreground(args: argparse.Namespace, directory: Path, config: dict[str, str]) -> int:
    stop_requested = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop_requested.set())
    cluster = LocalCluster(
        brokers=args.brokers, base_dir=directory, zookeeper=args.zookeeper,
        broker_config=config, racks=args.rack, ports=_wanted_ports(args),
        zookeeper_port=0 if args.zookeeper else args.zookeeper_port,
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
               "--brokers", str(args.brokers), "--dir", str(directory),
               "--port", str(args.port), "--zookeeper-port", str(args.zookeeper_port)]
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
                _report_addresses(args, state)
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


def _port_of(address: str) -> int:
    return int(address.split(",")[0].rsplit(":", 1)[1].split("/")[0])


def _report_addresses(args: argparse.Namespace, state: dict) -> None:
    """Where the cluster listens, which wished-for port was taken, and what clients need."""
    servers, zookeeper = state["bootstrap_servers"], state["zookeeper"]
    print(f"cluster up: bootstrap servers {servers}, ZooKeeper {zookeeper}")
    if args.port and _port_of(servers) != args.port:
        print(f"port {args.port} is taken (another Kafka?): the brokers listen on {servers}")
    if not args.zookeeper and args.zookeeper_port and _port_of(zookeeper) != args.zookeeper_port:
        print(f"port {args.zookeeper_port} is taken (another ZooKeeper?): "
              f"ZooKeeper listens on {zookeeper}")
    default_dir = args.dir == Path(DEFAULT_CLUSTER_DIR)
    if _port_of(servers) == DEFAULT_PORT and default_dir:
        return  # localhost:9092 and ./simplekafka-cluster both lead here
    where = ("client commands run in this directory find it in "
             f"./{DEFAULT_CLUSTER_DIR}/{STATE_FILE}; elsewhere, first:" if default_dir else
             f"client commands find it with --dir {args.dir}, or after:")
    print(f"{where}\n  export {BOOTSTRAP_ENV}={servers}")


def cluster_down(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    state = read_state(directory)
    if state is None:
        raise CliError(f"no cluster recorded in {directory / STATE_FILE}")
    pid = state.get("supervisor_pid")
    # Only this directory's supervisor: a recorded pid may belong to something else by now.
    if pid_alive(pid) and str(directory) in command_line(pid):
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
    orphans = _stop_orphans(state, directory)
    if orphans:
        print(f"stopped processes the supervisor left behind: {orphans}")
    print(f"cluster in {directory} stopped")
    return 0


def _stop_orphans(state: dict, directory: Path) -> list[int]:
    """SIGTERM (then SIGKILL) recorded brokers and ZooKeeper that outlived a dead supervisor.

    A pid is only signalled if its command line is still one of ours, so a
    recycled pid belonging to something else is left alone; a broker's must
    also name this cluster's directory (its data directory lies there), so a
    recycled pid now held by another cluster's broker is left alone too.
    """
    console = (state.get("console_pid"), "simplekafka console", None)
    brokers = [(b.get("pid"), "simplekafka broker", str(directory))
               for b in state.get("brokers", {}).values()]
    zookeeper = (state.get("zookeeper_pid"), "ZooKeeperServerMain", None)
    # the console, brokers, ZooKeeper last
    return [pid for pid, marker, within in [console, *brokers, zookeeper]
            if stop_recorded_pid(pid, marker, within=within)]


def cluster_status(args: argparse.Namespace) -> int:
    """Exit 0 if the cluster runs with every broker serving, 1 otherwise."""
    directory = args.dir.resolve()
    state = read_state(directory)
    if state is None:
        raise CliError(f"no cluster recorded in {directory / STATE_FILE}")
    supervisor_up = pid_alive(state.get("supervisor_pid"))
    if state.get("status") == "failed":
        print(f"cluster in {directory}: failed to start")
        print(f"  start failed: {state.get('error')}")
        return 1
    if state.get("status") == "stopped" and not supervisor_up:
        print(f"cluster in {directory}: stopped")
        print(f"  bootstrap servers (when it ran): {state.get('bootstrap_servers')}")
        print(f"  start it again with: simplekafka cluster up --dir {args.dir}")
        return 1
    lines = [f"  bootstrap servers: {state.get('bootstrap_servers')}"]
    zookeeper_pid = state.get("zookeeper_pid")
    if zookeeper_pid is None:
        lines.append(f"  ZooKeeper: {state.get('zookeeper')} (not started by this cluster)")
    else:
        lines.append(f"  ZooKeeper: {state.get('zookeeper')} (pid {zookeeper_pid}): "
                     f"{'running' if pid_alive(zookeeper_pid) else 'down'}")
    not_serving = []
    for broker_id, broker in sorted(state.get("brokers", {}).items(), key=lambda kv: int(kv[0])):
        if not pid_alive(broker["pid"]):
            verdict = "down"
        else:
            try:
                seen = probe_broker(LOOPBACK, broker["port"])
                verdict = f"serving (controller {seen.controller_id})"
            except Exception as exc:  # any failure to answer is "not serving"
                verdict = f"not answering ({type(exc).__name__})"
        if not verdict.startswith("serving"):
            not_serving.append(broker_id)
        lines.append(f"  broker {broker_id}: pid {broker['pid']} port {broker['port']}: "
                     f"{verdict}")
        if broker.get("metrics_url"):
            lines.append(f"    metrics {broker['metrics_url']}  health "
                         f"{broker['metrics_url'].removesuffix('/metrics')}/health")
    if state.get("console_url"):
        console_up = pid_alive(state.get("console_pid"))
        lines.append(f"  console: {state['console_url']} (pid {state.get('console_pid')}): "
                     f"{'running' if console_up else 'down'}")
    if not supervisor_up:
        verdict = (f"not running (its supervisor, pid {state.get('supervisor_pid')}, is gone; "
                   f"'simplekafka cluster down --dir {args.dir}' cleans up)")
    elif not_serving:
        verdict = f"degraded (broker {', '.join(not_serving)} not serving)"
    else:
        verdict = "running"
    print(f"cluster in {directory}: {verdict}")
    print("\n".join(lines))
    return 0 if supervisor_up and not not_serving else 1
