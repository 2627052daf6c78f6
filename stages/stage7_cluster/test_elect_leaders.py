"""ElectLeaders (API 43) through the controller on real brokers: preferred and unclean
elections from confluent-kafka's AdminClient and from ``simplekafka leader-election
--bootstrap-server``, as Kafka's kafka-leader-election tool sends them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from simplekafka.cluster import LocalCluster
from simplekafka.coordination.topics import create_topic
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey

pytestmark = pytest.mark.integration

CONFIG = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def test_elect_leaders_is_advertised_as_implemented():
    assert SUPPORTED_VERSIONS[ApiKey.ELECT_LEADERS] == (0, 2)  # v1+ carries the election type


def leader_election(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "simplekafka", "leader-election",
               "--bootstrap-server", cluster.bootstrap_servers, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_unclean_election_revives_a_partition_whose_in_sync_replicas_died(tmp_path):
    from confluent_kafka import ElectionType, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient

    cluster = LocalCluster(brokers=2, base_dir=tmp_path, broker_config=CONFIG)
    cluster.start()
    try:
        for topic in ("orphan", "orphan2", "healthy"):
            replicas = [2] if topic == "healthy" else [1, 2]
            create_topic(cluster.zk, topic, 1, len(replicas), replica_assignment={0: replicas})
            cluster.wait_for_isr(topic, 0, replicas, timeout=60)
        # 2 dies (1 leads alone), then 1 dies: the only in-sync replica is gone.
        cluster.kill(2)
        cluster.wait_for_znode_gone(2, timeout=30)
        cluster.wait_for(lambda: cluster.isr_of("orphan", 0) == (1,), "2 out of the ISR", 30)
        cluster.kill(1)
        cluster.wait_for_znode_gone(1, timeout=30)
        cluster.restart(2)
        cluster.wait_for(lambda: cluster.leader_of("healthy", 0) == 2, "2 leads healthy", 60)
        assert cluster.leader_of("orphan", 0) == -1  # unclean.leader.election.enable=false
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        orphan = TopicPartition("orphan", 0)

        # Preferred: replica 1 is dead, so not possible.
        result = admin.elect_leaders(ElectionType.PREFERRED, [orphan]).result(timeout=60)
        assert result[orphan].code() == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE

        result = admin.elect_leaders(ElectionType.UNCLEAN, [orphan]).result(timeout=60)
        assert result[orphan] is None
        assert cluster.leader_of("orphan", 0) == 2 and cluster.isr_of("orphan", 0) == (2,)

        result = admin.elect_leaders(ElectionType.UNCLEAN, [orphan]).result(timeout=60)
        assert result[orphan].code() == KafkaError.ELECTION_NOT_NEEDED

        # The command line, like kafka-leader-election.sh.
        done = leader_election(cluster, "--election-type", "UNCLEAN", "--topic", "orphan2")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Successfully completed leader election (UNCLEAN) for partitions orphan2-0" \
            in done.stdout
        assert cluster.leader_of("orphan2", 0) == 2
        done = leader_election(cluster, "--election-type", "unclean", "--all-topic-partitions")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Valid replica already elected for partitions" in done.stdout
        assert "orphan-0" in done.stdout and "healthy-0" in done.stdout
    finally:
        cluster.stop()


@pytest.mark.parametrize("arguments, message", [
    (["--election-type", "unclean", "--zookeeper", "127.0.0.1:1"], "--bootstrap-server"),
    (["--topic", "t"], "needs --election-type"),
    (["--election-type", "unclean", "--preferred", "--bootstrap-server", "127.0.0.1:1"],
     "exclude each other"),
    (["--all-topic-partitions", "--topic", "t", "--preferred"], "exclude each other"),
    (["--election-type", "sideways"], "invalid choice"),
])
def test_bad_election_arguments_are_one_line(arguments, message):
    command = [sys.executable, "-m", "simplekafka", "leader-election", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
