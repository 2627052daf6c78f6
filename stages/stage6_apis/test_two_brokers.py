"""Producer and Consumer with partitions led by different brokers: one request per leader."""

from __future__ import annotations

import time

import pytest

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer, partition_for_key

pytestmark = pytest.mark.integration


def test_records_reach_every_leader_and_come_back(tmp_path):
    with LocalCluster(brokers=2, base_dir=tmp_path) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("spread", num_partitions=4)
            leaders = {p.partition: p.leader
                       for p in admin.describe_topics(["spread"])["spread"].partitions}
        assert set(leaders.values()) == {1, 2}
        keys = [b"k%d" % i for i in range(200)]
        with Producer(cluster.bootstrap_servers, acks="all") as producer:
            futures = [producer.send("spread", key, key=key) for key in keys]
            producer.flush(30)
            placed = [f.get(0) for f in futures]
        assert [md.partition for md in placed] == [partition_for_key(k, 4) for k in keys]
        with Consumer(bootstrap_servers=cluster.bootstrap_servers,
                      auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition("spread", p) for p in range(4)])
            got = []
            deadline = time.monotonic() + 30
            while len(got) < len(keys) and time.monotonic() < deadline:
                got += consumer.poll(500)
        assert sorted(r.value for r in got) == sorted(keys)
        assert all(r.key == r.value and r.partition == partition_for_key(r.key, 4) for r in got)
