"""Stage 2: coordination through ZooKeeper, the way Kafka did it before KRaft.

Brokers register as ephemeral znodes, elect one controller with an epoch that
fences every controller write, and keep topic assignments and partition states
in znodes whose paths and JSON match ZooKeeper-mode Kafka's. Depends on kazoo
and the standard library (plus the protocol layer's error codes).

Modules, one job each:

- :mod:`~simplekafka.coordination.zookeeper_server`: the embedded ZooKeeper server
- :mod:`~simplekafka.coordination.connection`: ``connect_zookeeper("host:port/chroot")``
- :mod:`~simplekafka.coordination.znodes`: paths and typed JSON payloads
- :mod:`~simplekafka.coordination.registration`: ``/brokers/ids/<id>``, ``/cluster/id``
- :mod:`~simplekafka.coordination.election`: controller election, fencing, live brokers
- :mod:`~simplekafka.coordination.assignment`: rack-aware replica assignment (pure)
- :mod:`~simplekafka.coordination.topics`: topic validation and creation, partition states
- :mod:`~simplekafka.coordination.handoff`: delivering kazoo's threads to an event loop
- :mod:`~simplekafka.coordination.tree`: printing the znode tree
- :mod:`~simplekafka.coordination.testing`: expiring a session on purpose
- :mod:`~simplekafka.coordination.pytest_plugin`: real-ZooKeeper pytest fixtures
"""

from simplekafka.coordination.assignment import (
    AssignmentError,
    assign_replicas,
    rack_alternated_brokers,
)
from simplekafka.coordination.connection import (
    ZooKeeperConnectError,
    connect_zookeeper,
    ensure_kafka_paths,
    parse_connect_string,
)
from simplekafka.coordination.election import (
    BrokerChanges,
    ControllerElection,
    ControllerMovedError,
    FencedTransaction,
    NotControllerError,
    TopicChanges,
    WriteConflictError,
    diff_brokers,
    read_controller,
    read_controller_epoch,
)
from simplekafka.coordination.handoff import LoopHandoff, call_directly
from simplekafka.coordination.registration import (
    BrokerIdInUseError,
    BrokerRegistration,
    ensure_cluster_id,
)
from simplekafka.coordination.topics import (
    TopicError,
    add_partition_state_creation,
    create_topic,
    create_topic_znodes,
    elect_leader_for_new_partition,
    elect_leader_for_offline_partition,
    list_topics,
    live_brokers,
    read_partition_state,
    read_topic_assignment,
    validate_topic_name,
)
from simplekafka.coordination.tree import format_tree
from simplekafka.coordination.znodes import (
    BrokerInfo,
    ClusterId,
    ControllerInfo,
    PartitionState,
    TopicAssignment,
    TopicConfig,
    ZkPaths,
    ZnodeFormatError,
)
from simplekafka.coordination.zookeeper_server import EmbeddedZooKeeper, ZooKeeperLaunchError

__all__ = [
    "AssignmentError",
    "BrokerChanges",
    "BrokerIdInUseError",
    "BrokerInfo",
    "BrokerRegistration",
    "ClusterId",
    "ControllerElection",
    "ControllerInfo",
    "ControllerMovedError",
    "EmbeddedZooKeeper",
    "FencedTransaction",
    "LoopHandoff",
    "NotControllerError",
    "PartitionState",
    "TopicAssignment",
    "TopicChanges",
    "TopicConfig",
    "TopicError",
    "WriteConflictError",
    "ZkPaths",
    "ZnodeFormatError",
    "ZooKeeperConnectError",
    "ZooKeeperLaunchError",
    "add_partition_state_creation",
    "assign_replicas",
    "call_directly",
    "connect_zookeeper",
    "create_topic",
    "create_topic_znodes",
    "diff_brokers",
    "elect_leader_for_new_partition",
    "elect_leader_for_offline_partition",
    "ensure_cluster_id",
    "ensure_kafka_paths",
    "format_tree",
    "list_topics",
    "live_brokers",
    "parse_connect_string",
    "rack_alternated_brokers",
    "read_controller",
    "read_controller_epoch",
    "read_partition_state",
    "read_topic_assignment",
    "validate_topic_name",
]
