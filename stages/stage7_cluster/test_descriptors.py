"""Out of file descriptors: the partitions past the limit fail, the ZooKeeper session does not.

In a subprocess with a low open-files limit (soft and hard, so nothing can
raise it), a ReplicaManager on a real LogManager is told to hold more
partitions than the limit allows while it holds a real ZooKeeper session.
The partitions that do not fit are offline with a one-line reason and answer
KAFKA_STORAGE_ERROR (and count in the offline-replica metric); the others
work; and the ZooKeeper client can still reconnect, because the last
descriptors were kept for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration

_SCRIPT = r"""
import json, resource, sys
from pathlib import Path
from types import SimpleNamespace

from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.metrics import BrokerMetrics
from simplekafka.broker.replica_manager import ReplicaManager
from simplekafka.coordination.connection import connect_zookeeper
from simplekafka.protocol.errors import KafkaError
from simplekafka.storage import LogManager

connect, log_dir, limit, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
zk = connect_zookeeper(connect, timeout=20)
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
manager = ReplicaManager(1, LogManager([log_dir]), MetadataCache())
states = [dict(topic_name="t", partition_index=i, leader=1, leader_epoch=0, isr=[1],
                          replicas=[1], zk_version=0, controller_epoch=1)
          for i in range(count)]
outcome = manager.become_leader_or_follower(dict(
    controller_epoch=1, controller_id=1, topic_states=[], ungrouped_partition_states=states))
codes = [int(code) for code in outcome.partitions.values()]
try:
    manager.leader_partition("t", count - 1)
    answer = "served"
except KafkaError as exc:
    answer = f"{int(exc.error_code)} {exc}"
metrics = BrokerMetrics(SimpleNamespace(replica_manager=manager))
offline_metric = [sample.value for metric in metrics._replica_manager()
                  for sample in metric.samples if sample.name.endswith("offlinereplicacount")]
zk.create("/still-here", b"yes")  # the session holds
other = connect_zookeeper(connect, timeout=20)  # and a new one (new descriptors) can start
print(json.dumps({"codes": codes, "answer": answer, "offline": len(manager.offline_partitions),
                  "metric": offline_metric, "zk": other.get("/still-here")[0].decode()}))
other.stop()
zk.stop()
"""


def test_partitions_past_the_descriptor_limit_fail_alone(zk_connect, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, zk_connect, str(tmp_path / "logs"), "256", "400"],
        capture_output=True, text=True, timeout=240, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads(result.stdout.strip().splitlines()[-1])
    served, failed = run["codes"].count(0), run["codes"].count(56)  # 56: KAFKA_STORAGE_ERROR
    assert served > 100 and failed > 0 and served + failed == 400, run["codes"]
    assert run["offline"] == failed and run["metric"] == [failed]
    assert run["answer"].startswith("56 ") and "out of file descriptors" in run["answer"]
    assert "open-files limit 256" in run["answer"]
    assert run["zk"] == "yes"
    # One line says why, not a traceback per partition.
    assert result.stderr.count("Traceback") == 0
    assert result.stderr.count("out of file descriptors") <= 1
