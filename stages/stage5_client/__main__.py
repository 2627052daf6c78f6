"""Stage 5 demo: the client library against a LocalCluster, layer by layer.

Run it with ``python -m stages.stage5_client``. It starts ZooKeeper and two
brokers, bootstraps a ``KafkaClient``, shows the negotiated versions and the
metadata, creates a topic through the controller, produces a raw batch to each
partition's leader, sends one request to the wrong broker to show
NOT_LEADER_OR_FOLLOWER by name, lets ``call_with_retries`` recover, and fails
fast against an address where nobody listens. Files go to
$SIMPLEKAFKA_DEMO_DIR if set, else a temporary directory. About 20 s.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from simplekafka.client import KafkaClient, NoBrokersAvailableError, error_for, raise_for
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.local import free_port
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.records import build_batch

TOPIC = "demo5"


def section(title: str) -> None:
    print(f"\n== {title} ==", flush=True)


def produce_body(partition: int, values: list[bytes]) -> dict:
    return {"acks": -1, "timeout_ms": 5000, "topic_data": [{"name": TOPIC, "partition_data": [
        {"index": partition, "records": build_batch([(None, v) for v in values])}]}]}


def main() -> None:
    base = Path(os.environ.get("SIMPLEKAFKA_DEMO_DIR") or tempfile.mkdtemp(prefix="stage5-"))
    with LocalCluster(brokers=2, base_dir=base / "cluster") as cluster:
        with KafkaClient(cluster.bootstrap_servers, client_id="stage5-demo") as client:
            section("bootstrap: Metadata from any broker")
            snapshot = client.refresh_metadata()
            for broker in snapshot.brokers.values():
                print(f"  broker {broker.node_id} at {broker.host}:{broker.port}")
            print(f"  controller: broker {snapshot.controller_id}")

            section("ApiVersions: min(client max, broker max) per API")
            node = snapshot.controller_id
            client.request(node, ApiKey.METADATA, {"topics": []})  # connects, negotiates
            versions = client.negotiated_versions(node)
            for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.CREATE_TOPICS):
                print(f"  {key.name:14} v{versions.get(key, '?')}")

            section("CreateTopics at the controller")
            answer = client.request(client.controller_id(), ApiKey.CREATE_TOPICS, {
                "topics": [{"name": TOPIC, "num_partitions": 4, "replication_factor": 1}],
                "timeout_ms": 10_000,
            })
            print(f"  error code {answer.topics[0].error_code}")
            deadline = time.monotonic() + 30
            while True:
                client.refresh_metadata()
                leaders = {p: client.metadata.leader_for(TOPIC, p) for p in range(4)}
                if None not in leaders.values():
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("no leaders within 30 s")
                time.sleep(0.1)
            print(f"  leaders: {leaders}")

            section("Produce, routed to each partition's leader")
            for partition, leader in leaders.items():
                reply = client.request(leader, ApiKey.PRODUCE,
                                       produce_body(partition, [b"hello", b"world"]))
                part = reply.responses[0].partition_responses[0]
                print(f"  {TOPIC}/{partition} via broker {leader}: offset {part.base_offset}")

            section("The wrong broker says so, by name")
            leader = leaders[0]
            other = next(b for b in snapshot.brokers if b != leader)
            reply = client.request(other, ApiKey.PRODUCE, produce_body(0, [b"lost?"]))
            code = reply.responses[0].partition_responses[0].error_code
            error = error_for(code)
            print(f"  broker {other} answered {code}: {type(error).__name__}, "
                  f"retriable={error.retriable}")

            section("call_with_retries: back off, refresh metadata, try the leader")
            tries = []

            def produce_once(deadline) -> int:
                node = other if not tries else client.leader_for(TOPIC, 0)
                tries.append(node)
                part = client.request(node, ApiKey.PRODUCE, produce_body(0, [b"found"])) \
                    .responses[0].partition_responses[0]
                raise_for(part.error_code)
                return part.base_offset

            offset = client.call_with_retries(produce_once, timeout_ms=10_000)
            print(f"  tried brokers {tries}; written at offset {offset}")

        section("Nobody listening: a named error, promptly")
        started = time.monotonic()
        try:
            with KafkaClient(f"127.0.0.1:{free_port()}", request_timeout_ms=1000) as lonely:
                lonely.refresh_metadata()
        except NoBrokersAvailableError as exc:
            print(f"  {type(exc).__name__} after {time.monotonic() - started:.1f} s")
    print("\ndone")


if __name__ == "__main__":
    main()
