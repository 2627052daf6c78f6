"""AlterPartitionReassignments / ListPartitionReassignments (45/46) from kafka-python's admin
client on real brokers: moves are accepted and listed with their adding and removing
replicas while the new replica cannot catch up; one is cancelled (``simplekafka reassign
--cancel``) and goes back to its original replicas, the other completes once its new
replica can catch up. (confluent-kafka's Python AdminClient, 2.16, has no reassignment
calls.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.coordination.topics import create_topic
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.api import ADVERTISED_VERSIONS, ApiKey

pytestmark = pytest.mark.integration

CONFIG = {"zookeeper.session.timeout.ms": "30000", "replica.lag.time.max.ms": "3000",
          "auto.leader.rebalance.enable": "false"}


def test_the_apis_are_advertised_as_implemented():
    assert ADVERTISED_VERSIONS[ApiKey.ALTER_PARTITION_REASSIGNMENTS] == (0, 0)
    assert ADVERTISED_VERSIONS[ApiKey.LIST_PARTITION_REASSIGNMENTS] == (0, 0)


def test_kafka_python_alters_lists_and_sees_a_reassignment_complete(tmp_path):
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import (
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
        UnknownTopicOrPartitionError,
    )

    cluster = LocalCluster(brokers=3, base_dir=tmp_path, broker_config=CONFIG)
    cluster.start()
    admin = None
    paused = None
    try:
        controller = cluster.controller_id()
        paused, other = sorted(b for b in cluster.brokers if b != controller)
        for topic in ("api", "undo"):
            create_topic(cluster.zk, topic, 1, 2, replica_assignment={0: [controller, other]})
            cluster.wait_for_isr(topic, 0, [controller, other], timeout=60)
        admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[controller].address)
        tp = TopicPartition("api", 0)
        assert admin.list_partition_reassignments() == {}  # finds the controller before the pause

        os.kill(cluster.brokers[paused].pid, signal.SIGSTOP)  # registered, cannot catch up
        undo = TopicPartition("undo", 0)
        result = admin.alter_partition_reassignments({
            tp: [paused, controller],
            undo: [paused, controller],
            TopicPartition("api", 7): [controller],
            TopicPartition("nope", 0): [controller],
        })
        assert result[tp] is None and result[undo] is None
        assert result[TopicPartition("api", 7)] is UnknownTopicOrPartitionError
        assert result[TopicPartition("nope", 0)] is UnknownTopicOrPartitionError
        cluster.wait_for(lambda: list(cluster.replicas_of("api", 0)) == [paused, controller,
                                                                          other],
                         "RS = TRS + ORS", 30)
        cluster.wait_for(lambda: list(cluster.replicas_of("undo", 0)) == [paused, controller,
                                                                           other],
                         "RS = TRS + ORS", 30)
        moving = {"replicas": [paused, controller, other],
                  "adding_replicas": [paused], "removing_replicas": [other]}
        assert admin.list_partition_reassignments() == {tp: moving, undo: moving}
        assert admin.list_partition_reassignments([TopicPartition("api", 1)]) == {}

        plan = tmp_path / "undo.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": "undo", "partition": 0, "replicas": [paused, controller]}]}))
        cancel = subprocess.run(
            [sys.executable, "-m", "simplekafka", "reassign", "--bootstrap-server",
             cluster.brokers[controller].address, "--cancel", "--reassignment-json-file",
             str(plan)], capture_output=True, text=True, timeout=120, check=False)
        assert cancel.returncode == 0, cancel.stdout + cancel.stderr
        assert "Successfully cancelled partition reassignments for undo-0" in cancel.stdout
        cluster.wait_for(lambda: list(cluster.replicas_of("undo", 0)) == [controller, other],
                         "undo back on its original replicas", 30)
        assert admin.list_partition_reassignments() == {tp: moving}

        os.kill(cluster.brokers[paused].pid, signal.SIGCONT)
        resumed, paused = paused, None
        cluster.wait_for(lambda: list(cluster.replicas_of("api", 0)) == [resumed, controller]
                         and cluster.zk.exists(ZkPaths.REASSIGN_PARTITIONS) is None,
                         "the move completed", 60)
        assert admin.list_partition_reassignments() == {}
        assert sorted(cluster.isr_of("api", 0)) == sorted([resumed, controller])
        assert sorted(cluster.isr_of("undo", 0)) == sorted([controller, other])
        undone = cluster.partition_dir(resumed, "undo", 0)
        cluster.wait_for(lambda: not undone.exists(), "the cancelled replica deleted", 30)

        result = admin.alter_partition_reassignments({tp: None, TopicPartition("api", 0): None})
        assert result[tp] is NoReassignmentInProgressError
        result = admin.alter_partition_reassignments({tp: [controller, controller]})
        assert result[tp] is InvalidReplicationAssignmentError
    finally:
        if paused is not None:
            os.kill(cluster.brokers[paused].pid, signal.SIGCONT)
        if admin is not None:
            admin.close()
        cluster.stop()
