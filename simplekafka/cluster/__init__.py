"""Running SimpleKafka for real: ZooKeeper and brokers as local processes.

``LocalCluster`` is the one launcher shared by the tests, the stage demos, the
notebooks, the benchmarks and ``run_cluster.sh``.
"""

from simplekafka.cluster.local import (
    BrokerProcess,
    ClusterError,
    LocalCluster,
    ProbeResult,
    checkout_launcher,
    free_port,
    probe_broker,
)
from simplekafka.cluster.spark_standalone import SparkClusterError, SparkStandalone

__all__ = [
    "BrokerProcess",
    "ClusterError",
    "LocalCluster",
    "ProbeResult",
    "SparkClusterError",
    "SparkStandalone",
    "checkout_launcher",
    "free_port",
    "probe_broker",
]
