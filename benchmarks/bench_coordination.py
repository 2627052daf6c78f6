"""Coordination costs: what ZooKeeper work takes, in time and round trips.

Prints figures, never passes or fails. Starts its own embedded ZooKeeper.

- ZooKeeper start (JVM up, answering ``ruok``)
- an election among N contenders (start to exactly one controller)
- failover after a controller's session is expired, and after it is SIGKILLed
  (the second is bounded below by the session timeout)
- fenced controller writes (a multi: check /controller_epoch + setData), per second
- topic creation (validate, read live brokers, assign, one multi), per second
- rack-aware assignment alone (pure Python), partitions per second

    .venv/bin/python benchmarks/bench_coordination.py [--contenders 3] [--session 2.0]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.coordination import (
    BrokerRegistration,
    ControllerElection,
    EmbeddedZooKeeper,
    PartitionState,
    ZkPaths,
    assign_replicas,
    connect_zookeeper,
    create_topic,
    read_controller,
)
from simplekafka.coordination.processes import wait_until
from simplekafka.coordination.testing import expire_session
from stages.stage2_zookeeper.member import MemberProcess


def wait_for(predicate, timeout: float = 60.0) -> None:
    wait_until(predicate, "the benchmark's condition", timeout, 0.005,
               error=lambda text: SystemExit(f"benchmark: {text}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contenders", type=int, default=3)
    parser.add_argument("--session", type=float, default=2.0, help="session timeout, s")
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=200)
    args = parser.parse_args()
    logging.getLogger("kazoo").setLevel(logging.ERROR)

    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        server = EmbeddedZooKeeper(data_dir=Path(tmp)).start()
        print(f"ZooKeeper start (JVM to ruok):      {time.monotonic() - started:6.2f} s")
        try:
            run(server.connect_string + "/bench", args)
        finally:
            server.stop()


def run(connect: str, args: argparse.Namespace) -> None:
    admin = connect_zookeeper(connect)
    clients = [connect_zookeeper(connect, session_timeout=args.session)
               for _ in range(args.contenders)]
    started = time.monotonic()
    elections = [
        ControllerElection(zk, b, registration=BrokerRegistration(zk, b, "127.0.0.1", 9000 + b,
                                                                 rack=f"r{b % 3}")).start()
        for b, zk in enumerate(clients, start=1)
    ]
    wait_for(lambda: sum(e.is_controller for e in elections) == 1)
    print(f"election among {args.contenders}:                {time.monotonic() - started:6.3f} s")

    controller = next(e for e in elections if e.is_controller)
    zk = controller.zk
    zk.ensure_path(ZkPaths.partition("bench", 0))
    path = ZkPaths.partition_state("bench", 0)
    state = PartitionState(leader=1, leader_epoch=0, isr=(1,), controller_epoch=1)
    controller.fenced_transaction().create(path, state.to_json()).commit()
    started = time.monotonic()
    for version in range(args.writes):
        controller.fenced_transaction().set_data(path, state.to_json(), version=version).commit()
    elapsed = time.monotonic() - started
    print(f"fenced conditional writes:          {args.writes / elapsed:8.0f} /s "
          f"({elapsed / args.writes * 1e3:.2f} ms each, one round trip)")

    started = time.monotonic()
    for index in range(args.topics):
        create_topic(admin, f"topic-{index}", partitions=3, replication_factor=min(
            3, args.contenders))
    elapsed = time.monotonic() - started
    print(f"topic creations (3 partitions):     {args.topics / elapsed:8.0f} /s")

    brokers = {b: f"r{b % 3}" for b in range(30)}
    started = time.perf_counter()
    assign_replicas(brokers, brokers, 30_000, 3, start_index=0, replica_shift=0)
    elapsed = time.perf_counter() - started
    print(f"rack-aware assignment (30 brokers): {30_000 / elapsed:8.0f} partitions/s")

    old = controller.broker_id
    started = time.monotonic()
    expire_session(controller.zk)
    wait_for(lambda: read_controller(admin) not in (None, old))
    print(f"failover after session expiry:      {time.monotonic() - started:6.3f} s "
          f"(session timeout {args.session:g} s; expiry here is immediate)")

    for election in elections:
        election.stop()
    for client in clients:
        client.stop()
        client.close()

    # A crash: SIGKILL the controller process; ZooKeeper notices when the session times out.
    admin.stop()
    admin.close()
    admin = connect_zookeeper(connect + "-crash")
    members = [MemberProcess(connect + "-crash", b, session_timeout=args.session)
               for b in (1, 2, 3)]
    try:
        for member in members:
            member.wait_for("registered")
        wait_for(lambda: read_controller(admin) is not None)
        first = read_controller(admin)
        next(m for m in members if m.broker_id == first).kill()
        started = time.monotonic()
        wait_for(lambda: read_controller(admin) not in (None, first))
        print(f"failover after SIGKILL:             {time.monotonic() - started:6.3f} s "
              f"(session timeout {args.session:g} s)")
    finally:
        for member in members:
            member.stop()
        admin.stop()
        admin.close()


if __name__ == "__main__":
    main()
