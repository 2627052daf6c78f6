"""ListOffsets v7 with max-timestamp (-3, KIP-734), asked by confluent-kafka's admin client.

v7 is a flexible version (compact strings, tagged fields, response header
v1): this is also the test that the broker answers a flexible request.
"""

from __future__ import annotations

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster

pytestmark = pytest.mark.integration

TIMESTAMPS = [1_000, 5_000, 3_000, 5_000, 2_000]


def test_max_timestamp_earliest_and_latest(tmp_path):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    with LocalCluster(brokers=1, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("times")
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        for i, stamp in enumerate(TIMESTAMPS):
            producer.produce("times", value=b"%d" % i, partition=0, timestamp=stamp)
            assert producer.flush(30) == 0  # one batch each
        client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        partition = TopicPartition("times", 0)

        def ask(spec: OffsetSpec):
            return client.list_offsets({partition: spec}, request_timeout=30)[partition].result(30)

        newest = ask(OffsetSpec.max_timestamp())
        assert (newest.offset, newest.timestamp) == (1, 5_000)  # the first record holding it
        assert ask(OffsetSpec.earliest()).offset == 0
        assert ask(OffsetSpec.latest()).offset == 5
        assert ask(OffsetSpec.for_timestamp(2_500)).offset == 1
