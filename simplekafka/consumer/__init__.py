"""Stage 6: the consumer. Assign partitions or subscribe with a group; poll; commit."""

from simplekafka.consumer.assignors import ASSIGNORS, assignor_for
from simplekafka.consumer.consumer import Consumer
from simplekafka.consumer.fetcher import ConsumerRecord
from simplekafka.consumer.group import CommitFailedError, GroupMember
from simplekafka.protocol.structs import OffsetAndMetadata

__all__ = ["ASSIGNORS", "CommitFailedError", "Consumer", "ConsumerRecord", "GroupMember",
           "OffsetAndMetadata", "assignor_for"]
