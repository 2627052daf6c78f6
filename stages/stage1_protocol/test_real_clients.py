"""Real clients accept what our codec says: the probe answer, ApiVersions and Metadata.

The stage 1 demo's tiny server (ApiVersions and Metadata only) is started on a
free loopback port, and each real client is pointed at it: confluent-kafka and
kcat (librdkafka, which asks with ApiVersions v3, the flexible version we speak
since Kafka 3.9's levels, so it needs no retry), kafka-python (asks with v4,
Kafka 3.9's newest, which we speak too: no retry either) and aiokafka (v0
only). Each must get as far as a topic list.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading

import pytest

from simplekafka.protocol import ApiKey
from stages.stage1_protocol.__main__ import TinyServer

API_VERSIONS, METADATA = int(ApiKey.API_VERSIONS), int(ApiKey.METADATA)

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path):
    tiny = TinyServer(tmp_path)
    thread = threading.Thread(target=tiny.serve, daemon=True)
    thread.start()
    yield tiny
    tiny.stop.set()
    thread.join(timeout=5)


def _versions_seen(server: TinyServer, api_key: int) -> list[int]:
    return [version for key, version, _ in server.requests if key == api_key]


def test_confluent_kafka_asks_with_v3_and_is_answered_at_once(server):
    from confluent_kafka import admin

    client = admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{server.port}",
                                "log_level": 0})
    metadata = client.list_topics(timeout=20)
    assert metadata.cluster_id == "stage1-demo"
    assert _versions_seen(server, API_VERSIONS)[0] == 3
    assert 0 not in _versions_seen(server, API_VERSIONS)  # no retry: v3 was answered
    assert METADATA in [key for key, _, _ in server.requests]
    assert not server.errors


def test_kafka_python_asks_with_v4_and_is_answered_at_once(server):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{server.port}",
                             request_timeout_ms=10000)
    try:
        assert consumer.topics() == set()
    finally:
        consumer.close()
    assert _versions_seen(server, API_VERSIONS)[0] == 4
    assert set(_versions_seen(server, API_VERSIONS)) == {4}  # no retry: v4 was answered
    assert 12 in _versions_seen(server, METADATA)  # it trusts what we advertised
    assert not server.errors


def test_aiokafka_uses_v0(server):
    from aiokafka import AIOKafkaClient

    async def bootstrap() -> list[int]:
        client = AIOKafkaClient(bootstrap_servers=f"127.0.0.1:{server.port}",
                                request_timeout_ms=10000)
        try:
            await client.bootstrap()
            return sorted(b.nodeId for b in client.cluster.brokers())
        finally:
            await client.close()

    assert asyncio.run(asyncio.wait_for(bootstrap(), 30)) == [0]
    assert _versions_seen(server, API_VERSIONS)[0] == 0
    assert not server.errors


def test_kcat_lists_metadata(server):
    kcat = shutil.which("kcat")
    assert kcat, "kcat is installed by tools/bootstrap.sh"
    result = subprocess.run([kcat, "-L", "-b", f"127.0.0.1:{server.port}", "-m", "10"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert f"127.0.0.1:{server.port}" in result.stdout
    assert _versions_seen(server, API_VERSIONS) and 0 not in _versions_seen(server, API_VERSIONS)
    assert not server.errors
