"""A record over the broker's ``message.max.bytes``: a named error through the future, promptly."""

from __future__ import annotations

import time

import pytest

from simplekafka.admin import Admin
from simplekafka.client.errors import MessageTooLargeError
from simplekafka.cluster import LocalCluster
from simplekafka.producer import Producer

pytestmark = pytest.mark.integration


def test_a_record_over_message_max_bytes_fails_with_message_too_large(tmp_path):
    with LocalCluster(brokers=1, base_dir=tmp_path,
                      broker_config={"message.max.bytes": 10_000}) as cluster:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic("limits")
        with Producer(cluster.bootstrap_servers, linger_ms=0, acks="all") as producer:
            small = producer.send("limits", b"x" * 100)
            assert small.get(30).offset == 0
            started = time.monotonic()
            big = producer.send("limits", b"y" * 50_000)  # under our 1 MB limit, over theirs
            with pytest.raises(MessageTooLargeError, match="MESSAGE_TOO_LARGE"):
                big.get(30)
            assert time.monotonic() - started < 10  # not retried: the error is final
            assert producer.send("limits", b"z").get(30).offset == 1
