"""Partition reassignment on real processes, under a steady acks=all producer: a fourth
broker joins and takes its share through ``simplekafka reassign --execute``
(AlterPartitionReassignments), a broker is decommissioned (``--execute --zookeeper``:
the znode), then a reassignment is left halfway, the controller is SIGKILLed, and the
next one finishes it. Every acknowledged record is consumed and the final assignment
is the plan."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from simplekafka.cluster.checker import DeliveryLog
from simplekafka.coordination.reassignment import plan_reassignment, replicas_moved
from simplekafka.coordination.znodes import ZkPaths
from stages.stage7_cluster.system import (
    BackgroundProducer,
    create_topic,
    drain,
    running_cluster,
)

pytestmark = pytest.mark.integration  # starts real processes

TOPIC = "moving"
PARTITIONS = 4


def reassign(cluster, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "simplekafka", "reassign",
               "--bootstrap-server", cluster.bootstrap_servers, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def wait_until_verified(cluster, plan_file, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        done = reassign(cluster, "--verify", "--reassignment-json-file", str(plan_file))
        if done.returncode == 0:
            return
        assert done.returncode == 1, done.stdout + done.stderr
        assert time.monotonic() < deadline, f"still moving after {timeout} s:\n{done.stdout}"
        time.sleep(1)


class OfflineWatch(threading.Thread):
    """Polls every partition's leader in ZooKeeper; notes any moment without one."""

    def __init__(self, cluster) -> None:
        super().__init__(daemon=True, name="offline-watch")
        self.cluster, self.stopping, self.offline, self.polls = cluster, threading.Event(), [], 0

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            for p in range(PARTITIONS):
                if self.cluster.leader_of(TOPIC, p) < 0:
                    self.offline.append(p)
            self.polls += 1

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)


def assignment(cluster) -> dict:
    return {(TOPIC, p): list(cluster.replicas_of(TOPIC, p)) for p in range(PARTITIONS)}


def test_reassignment_under_load_and_across_a_controller_failover(tmp_path):
    with running_cluster(tmp_path, brokers=4) as (cluster, _faults):
        cluster.terminate(4)  # it joins later
        cluster.wait_for_znode_gone(4, timeout=30)
        create_topic(cluster, TOPIC, PARTITIONS, 2)
        log = DeliveryLog()
        producer = BackgroundProducer(cluster, TOPIC, log)
        producer.start()
        producer.wait_for_acks(200)

        # 1. A fourth broker joins; the plan moves a quarter of the replicas onto it.
        watch = OfflineWatch(cluster)
        watch.start()
        cluster.restart(4)
        current = assignment(cluster)
        plan = plan_reassignment(current, [1, 2, 3, 4])
        assert replicas_moved(current, plan) == 2  # 8 replicas, 2 per broker
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for (t, p), r in plan.items()]}))
        started = reassign(cluster, "--execute", "--reassignment-json-file", str(plan_file))
        assert started.returncode == 0, started.stdout + started.stderr
        assert "Successfully started partition reassignments" in started.stdout
        wait_until_verified(cluster, plan_file)
        assert assignment(cluster) == plan
        cluster.wait_for(lambda: cluster.zk.exists(ZkPaths.REASSIGN_PARTITIONS) is None,
                         "the reassignment znode removed", 30)
        for (topic, partition), replicas in plan.items():
            cluster.wait_for_isr(topic, partition, replicas, timeout=60)
            for broker in set(current[(topic, partition)]) - set(replicas):
                gone = cluster.partition_dir(broker, topic, partition)
                cluster.wait_for(lambda d=gone: not d.exists(),
                                 f"{topic}-{partition} deleted from broker {broker}", 30)
        producer.wait_for_acks(200)

        # 2. Decommission broker 1: everything moves off it.
        current = assignment(cluster)
        plan = plan_reassignment(current, [2, 3, 4])
        assert not any(1 in replicas for replicas in plan.values())
        plan_file.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for (t, p), r in plan.items()]}))
        started = reassign(cluster, "--execute", "--zookeeper", cluster.zookeeper_connect,
                           "--reassignment-json-file", str(plan_file))
        assert started.returncode == 0, started.stdout + started.stderr
        wait_until_verified(cluster, plan_file)
        assert assignment(cluster) == plan
        producer.wait_for_acks(200)

        watch.stop()
        assert watch.polls > 10 and watch.offline == [], "a partition was offline"

        # 3. A move that cannot finish (its new replica's broker is down) survives the
        # controller's SIGKILL; the next controller completes it once the broker is back.
        controller = cluster.controller_id()
        stopped = next(b for b in (1, 2, 3, 4) if b != controller)
        partition = next(p for p in range(PARTITIONS)
                         if stopped not in cluster.replicas_of(TOPIC, p))
        before = list(cluster.replicas_of(TOPIC, partition))
        target = [stopped, before[0]]
        cluster.terminate(stopped)
        cluster.wait_for_znode_gone(stopped, timeout=30)
        cluster.zk.create(ZkPaths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": partition, "replicas": target}]}).encode())
        cluster.wait_for(lambda: list(cluster.replicas_of(TOPIC, partition)) == [*target,
                                                                                before[1]],
                         "RS = TRS + ORS written", 30)
        second = tmp_path / "second.json"
        second.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": partition, "replicas": target}]}))
        assert reassign(cluster, "--verify", "--reassignment-json-file",
                        str(second)).returncode == 1
        cluster.kill(controller)
        cluster.wait_for_znode_gone(controller, timeout=30)
        cluster.restart(stopped)
        cluster.restart(controller)
        wait_until_verified(cluster, second)
        cluster.wait_for_isr(TOPIC, partition, target, timeout=60)
        assert cluster.zk.exists(ZkPaths.REASSIGN_PARTITIONS) is None
        producer.wait_for_acks(200)
        producer.stop()

        drain(cluster, TOPIC, PARTITIONS, log)
        report = log.check()
        assert report.ok, report.summary()
        assert report.acknowledged > 600
