"""Stage 6: the producer. Records in, batches out, acknowledged through futures."""

from simplekafka.producer.futures import RecordFuture, RecordMetadata
from simplekafka.producer.partitioner import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    murmur2,
    partition_for_key,
)
from simplekafka.producer.producer import Producer

__all__ = [
    "DefaultPartitioner",
    "Producer",
    "RecordFuture",
    "RecordMetadata",
    "RoundRobinPartitioner",
    "murmur2",
    "partition_for_key",
]
