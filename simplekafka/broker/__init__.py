"""Stage 4: the Twisted broker that real Kafka clients use.

The broker puts stages 1-3 together: the protocol codec on a Twisted server,
partition logs from the storage layer, and ZooKeeper coordination for
registration, controller election and topic state. Start one with
``simplekafka broker`` (see :mod:`simplekafka.cli.broker_cmd`) or, in-process,
with :class:`KafkaBroker`.
"""

from simplekafka.broker.broker import KafkaBroker
from simplekafka.broker.config import BrokerConfig, ConfigError
from simplekafka.broker.dispatch import RequestContext, RequestDispatcher
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.partition import Partition
from simplekafka.broker.server import KafkaConnection, KafkaServerFactory
from simplekafka.protocol.errors import KafkaError

__all__ = [
    "BrokerConfig",
    "ConfigError",
    "KafkaBroker",
    "KafkaConnection",
    "KafkaError",
    "KafkaServerFactory",
    "MetadataCache",
    "Partition",
    "RequestContext",
    "RequestDispatcher",
]
