"""Stage 2 demo: a real ZooKeeper, three broker processes, one controller, a failover.

    python -m stages.stage2_zookeeper

Starts the embedded ZooKeeper, three member processes (one per rack) that
register and contend for controller, creates a topic, prints the znode tree,
SIGKILLs the controller, and shows the next controller taking over with the
next epoch and moving the dead broker's partitions. Cleans up everything.
Files go to $SIMPLEKAFKA_DEMO_DIR if set, else a temporary directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path

from simplekafka.coordination import (
    EmbeddedZooKeeper,
    connect_zookeeper,
    create_topic,
    format_tree,
    read_controller,
    read_controller_epoch,
    read_partition_state,
)
from simplekafka.coordination.processes import wait_until
from stages.stage2_zookeeper.member import MemberProcess

SESSION_TIMEOUT = 3.0


def banner(text: str) -> None:
    print(f"\n=== {text} ===", flush=True)


def wait_for(predicate, timeout: float, what: str):
    return wait_until(predicate, what, timeout, 0.05,
                      error=lambda text: SystemExit(f"demo: {text}"))


def leaders(zk, topic: str, partitions: int) -> str:
    parts = []
    for partition in range(partitions):
        state, _version = read_partition_state(zk, topic, partition)
        parts.append(f"p{partition}: leader {state.leader} (epoch {state.leader_epoch}) "
                     f"isr {list(state.isr)}")
    return "; ".join(parts)


def run(base: Path) -> None:
    banner("starting the embedded ZooKeeper (from the pyspark wheel's jars)")
    started = time.monotonic()
    with EmbeddedZooKeeper(port=0, data_dir=base / "zookeeper") as server:
        print(f"ZooKeeper answers on {server.connect_string} after "
              f"{time.monotonic() - started:.1f} s; log: {server.log_file}")
        zk = connect_zookeeper(server.connect_string, timeout=15)
        members: list[MemberProcess] = []
        try:
            banner("three brokers register and contend for controller")
            members = [MemberProcess(server.connect_string, b, rack=f"rack-{b}",
                                     session_timeout=SESSION_TIMEOUT) for b in (1, 2, 3)]
            for member in members:
                event = member.wait_for("registered")
                print(f"broker {member.broker_id} registered, broker epoch (czxid) "
                      f"{event['epoch']}")
            first = wait_for(lambda: read_controller(zk), 30, "a controller")
            print(f"controller: broker {first}, controller epoch "
                  f"{read_controller_epoch(zk)[0]}")

            banner("a topic: 3 partitions, replication factor 3, one replica per rack")
            assignment = create_topic(zk, "orders", partitions=3, replication_factor=3)
            print(f"assignment: {dict(assignment.partitions)}")
            wait_for(lambda: all(read_partition_state(zk, "orders", p) for p in range(3)), 30,
                     "partition states")
            print(leaders(zk, "orders", 3))

            banner("the znode tree")
            print(format_tree(zk))

            banner(f"SIGKILL the controller (broker {first})")
            controller = next(m for m in members if m.broker_id == first)
            controller.kill()
            killed = time.monotonic()
            print(f"its /controller znode lives until its {SESSION_TIMEOUT:g} s session expires")
            second = wait_for(lambda: (read_controller(zk) or first) != first and
                              read_controller(zk), 30, "a new controller")
            print(f"new controller: broker {second}, controller epoch "
                  f"{read_controller_epoch(zk)[0]}, after {time.monotonic() - killed:.1f} s")
            wait_for(lambda: all(read_partition_state(zk, "orders", p)[0].leader != first
                                 for p in range(3)), 30, "leaders moved")
            print(leaders(zk, "orders", 3))

            banner("the tree after the failover")
            print(format_tree(zk, "/brokers/ids"))
            print(format_tree(zk, "/controller"))
            print(format_tree(zk, "/controller_epoch"))
        finally:
            for member in members:
                member.stop()
            zk.stop()
            zk.close()
    banner(f"done in {time.monotonic() - started:.1f} s; ZooKeeper and brokers stopped")


def main() -> None:
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    demo_dir = os.environ.get("SIMPLEKAFKA_DEMO_DIR")
    if demo_dir:
        run(Path(demo_dir))
        return
    with tempfile.TemporaryDirectory(prefix="stage2-") as tmp, contextlib.suppress(
            KeyboardInterrupt):
        run(Path(tmp))


if __name__ == "__main__":
    main()
