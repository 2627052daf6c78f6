"""The console's ``GET /metrics``: consumer group lag, in kafka-exporter's names.

Brokers do not export lag (a coordinator knows committed offsets, but not the
end offsets of partitions led elsewhere), so, like kafka-exporter and Burrow
beside Apache Kafka, the console computes it from outside over the Kafka
protocol (OffsetFetch and ListOffsets) when Prometheus scrapes it.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric

from simplekafka.console.service import ConsoleService

CONTENT_TYPE = CONTENT_TYPE_LATEST


class GroupLagCollector:
    def __init__(self, service: ConsoleService) -> None:
        self.service = service

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        lag = Metric("kafka_consumergroup_lag", "Latest offset minus committed offset",
                     "gauge")
        current = Metric("kafka_consumergroup_current_offset", "Committed offset", "gauge")
        members = Metric("kafka_consumergroup_members", "Members of the group", "gauge")
        for group_id, described in self.service.group_offsets():
            members.add_sample(members.name, {"consumergroup": group_id},
                               len(described.members))
            for tp, offsets in sorted(described.offsets.items()):
                labels = {"consumergroup": group_id, "topic": tp.topic,
                          "partition": str(tp.partition)}
                if offsets.committed is not None:
                    current.add_sample(current.name, labels, offsets.committed)
                if offsets.lag is not None:
                    lag.add_sample(lag.name, labels, offsets.lag)
        yield from (lag, current, members)


def render(service: ConsoleService) -> bytes:
    """The text exposition of the group metrics (blocking: asks the cluster)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GroupLagCollector(service))
    return generate_latest(registry)
