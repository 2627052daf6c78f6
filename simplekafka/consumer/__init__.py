"""Stage 6: the consumer. Assign partitions, seek, poll records (groups come later)."""

from simplekafka.consumer.consumer import Consumer
from simplekafka.consumer.fetcher import ConsumerRecord

__all__ = ["Consumer", "ConsumerRecord"]
