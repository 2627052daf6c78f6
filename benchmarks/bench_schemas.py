"""Request/response codec throughput: the messages a broker decodes and encodes most.

Prints figures, never passes or fails. Compares with kafka-python 3's codec
(also generated from Kafka's message definitions) on the same bytes.

    .venv/bin/python benchmarks/bench_schemas.py [--seconds 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.protocol import (
    ApiKey,
    decode_request,
    encode_response,
    request_schema,
    response_schema,
)


def best_rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per CPU-second, best of ten rounds (the least disturbed by busy neighbours)."""
    fn()
    best = 0.0
    for _ in range(10):
        count = 0
        start = time.process_time()
        while (elapsed := time.process_time() - start) < seconds / 10:
            fn()
            count += 1
        best = max(best, count / elapsed)
    return best


def fetch_request(partitions: int) -> dict:
    return {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": "bench", "partitions": [
            {"partition": p, "current_leader_epoch": 0, "fetch_offset": 1000 * p,
             "log_start_offset": -1, "partition_max_bytes": 1048576}
            for p in range(partitions)]}],
        "forgotten_topics_data": [], "rack_id": "",
    }


def metadata_response(partitions: int) -> dict:
    return {
        "brokers": [{"node_id": i, "host": "127.0.0.1", "port": 9092 + i, "rack": None}
                    for i in range(3)],
        "cluster_id": "bench", "controller_id": 0,
        "topics": [{"error_code": 0, "name": "bench", "partitions": [
            {"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 1,
             "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
            for p in range(partitions)]}],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    from kafka.protocol.consumer import FetchRequest
    from kafka.protocol.metadata import MetadataResponse

    n = args.partitions
    fetch_schema = request_schema(ApiKey.FETCH, 11)
    fetch_bytes = fetch_schema.encode(fetch_request(n))
    kp_fetch_ours = fetch_schema.decode(fetch_bytes)
    meta_schema = response_schema(ApiKey.METADATA, 8)
    meta_body = meta_schema.decode(meta_schema.encode(metadata_response(n)))
    meta_bytes = meta_schema.encode(meta_body)
    produce_payload = bytes.fromhex("0000000800000001") + b"\x00\x02id" + request_schema(
        ApiKey.PRODUCE, 8).encode({"acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "bench", "partition_data": [{"index": 0, "records": b"x" * 16384}]}]})

    kp_meta = MetadataResponse.decode(meta_bytes, version=8)
    kp_meta._header = None  # decoded without a header; encode() expects the attribute
    kp_fetch = FetchRequest.decode(fetch_bytes, version=11)
    kp_fetch._header = None
    rows = [
        (f"decode FetchRequest v11, {n} partitions", lambda: fetch_schema.decode(fetch_bytes),
         lambda: FetchRequest.decode(fetch_bytes, version=11)),
        (f"encode FetchRequest v11, {n} partitions", lambda: fetch_schema.encode(kp_fetch_ours),
         lambda: kp_fetch.encode(version=11)),
        (f"encode MetadataResponse v8, {n} partitions", lambda: meta_schema.encode(meta_body),
         lambda: kp_meta.encode(version=8)),
        (f"decode MetadataResponse v8, {n} partitions", lambda: meta_schema.decode(meta_bytes),
         lambda: MetadataResponse.decode(meta_bytes, version=8)),
        ("decode_request ProduceRequest v8 (header + 16 KiB batch)",
         lambda: decode_request(produce_payload), None),
        ("encode_response ApiVersions v2", lambda: encode_response(
            ApiKey.API_VERSIONS, 2, 1, {"api_keys": [{"api_key": 0, "max_version": 8}] * 16}),
         None),
    ]
    print(f"python {sys.version.split()[0]}, calls per CPU-second, best of 10 rounds")
    print(f"{'operation':<58} {'ours/s':>12} {'kafka-python/s':>15}")
    for name, ours, theirs in rows:
        ours_rate = best_rate(ours, args.seconds)
        theirs_rate = f"{best_rate(theirs, args.seconds):>15,.0f}" if theirs else f"{'-':>15}"
        print(f"{name:<58} {ours_rate:>12,.0f} {theirs_rate}")


if __name__ == "__main__":
    main()
