"""The controller (Kafka's ``KafkaController``, ZooKeeper mode), in its parts.

``controller`` reacts to events and watches and writes ZooKeeper; ``context``
is what it knows of the cluster; ``elections`` are its leader elections as
pure functions; ``requests`` builds LeaderAndIsr, UpdateMetadata and
StopReplica from the context; ``channel`` delivers them to each broker in order.
"""

from simplekafka.broker.controller.controller import (
    CONTROLLED_SHUTDOWN_PATH,
    Controller,
    read_topic_config,
)

__all__ = ["CONTROLLED_SHUTDOWN_PATH", "Controller", "read_topic_config"]
