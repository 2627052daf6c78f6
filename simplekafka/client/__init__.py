"""Stage 5: the client library.

What every Kafka client does under the hood, in layers you can read one at a
time: ``connection`` (sans-I/O: correlation ids, in-flight limit, ApiVersions
negotiation), ``transport`` (one background thread with a ``selectors`` loop
over the broker sockets), ``metadata`` (the cached cluster picture) and
``client`` (bootstrap, routing to leaders, retries with deadlines). Errors are
named after Kafka's (``errors``).
"""

from simplekafka.client.client import (
    Deadline,
    KafkaClient,
    metadata_request,
    parse_bootstrap_servers,
    wait_for,
)
from simplekafka.client.connection import CLIENT_VERSIONS, ConnectionCore, Response
from simplekafka.client.errors import (
    ClientClosedError,
    IncompatibleBrokerError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailableError,
    SerializationError,
    error_class,
    error_for,
    raise_for,
)
from simplekafka.client.metadata import ClusterMetadata, ClusterSnapshot, TopicMetadata
from simplekafka.client.transport import NetworkThread
from simplekafka.protocol.structs import Node, OffsetAndMetadata, PartitionMetadata, TopicPartition

__all__ = [
    "CLIENT_VERSIONS",
    "ClientClosedError",
    "ClusterMetadata",
    "ClusterSnapshot",
    "ConnectionCore",
    "Deadline",
    "IncompatibleBrokerError",
    "KafkaClient",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "NetworkThread",
    "NoBrokersAvailableError",
    "Node",
    "OffsetAndMetadata",
    "PartitionMetadata",
    "Response",
    "SerializationError",
    "TopicMetadata",
    "TopicPartition",
    "error_class",
    "error_for",
    "metadata_request",
    "parse_bootstrap_servers",
    "raise_for",
    "wait_for",
]
