"""A follower's CPU per fetch cycle, in one process, by the batches each fetch answer holds.

At three brokers, acks=all, ``rdkafka_performance -l`` at 10,000 records/s
(linger.ms=0) the producer sends one small batch per request, so each fetch
answer a follower gets holds the batches that arrived while its fetch was out:
15-20 at about 350 fetches per second. This script plays that cycle through
the broker's own follower code (``ReplicaFetcher`` over Twisted's
StringTransport, ``Partition.append_as_follower``, the log): the answer is
read, its batches are validated and appended, and the next fetch goes out.
The leader is played by the script and its work is not timed. It prints the
follower's CPU µs per cycle and per batch (best of a few rounds) for a few
batch counts, with the load average. In real three-broker runs the same cycle
costs about three times as much (a cold cache between wake-ups, the reactor's
turn, the socket calls): these figures show what the code itself costs.
The partition has a topic ID, so the follower fetches as in a cluster (Kafka
3.9's Fetch v17, topics by ID); ``--by-name`` takes the ID away and it falls
back to v12 by name. Prints figures, never passes or fails.

    .venv/bin/python benchmarks/bench_follower_cycle.py [--cycles 300] [--rounds 3] [--by-name]
"""

from __future__ import annotations

import argparse
import os
import platform
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twisted.internet.testing import MemoryReactorClock, StringTransport

from simplekafka.broker.partition import Partition
from simplekafka.broker.replica_fetcher import FetchSettings, ReplicaFetcherManager
from simplekafka.protocol.messages import decode_request, encode_response
from simplekafka.protocol.records import Record, build_batch
from simplekafka.storage import Log, LogConfig

LEADER, FOLLOWER = 1, 2
BATCHES_PER_ANSWER = (1, 5, 17, 30)
VALUE = b"x" * 100
TOPIC_ID = bytes(range(1, 17))


def answer_frame(request: bytes, base: int, count: int, session_id: int = 7) -> bytes:
    """The leader's answer to the fetch in ``request``: ``count`` one-record batches."""
    header, _ = decode_request(request[4:])
    records = b"".join(build_batch([Record(timestamp=1_700_000_000_000, value=VALUE)],
                                   base_offset=base + i, partition_leader_epoch=0)
                       for i in range(count))
    named = {"topic_id": TOPIC_ID} if header.api_version >= 13 else {"topic": "t"}
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": session_id, "responses": [
        {**named, "partitions": [{
            "partition_index": 0, "error_code": 0, "high_watermark": base,
            "last_stable_offset": base, "log_start_offset": 0, "aborted_transactions": [],
            "preferred_read_replica": -1, "records": records}]}]}
    payload = encode_response(header.api_key, header.api_version, header.correlation_id, body)
    return struct.pack(">i", len(payload)) + payload


def measure(batches: int, cycles: int, rounds: int, data_dir: str, by_id: bool = True
            ) -> float:
    """Best round's CPU seconds per follower cycle with ``batches`` per answer."""
    log = Log.open(Path(data_dir) / f"t-{batches}", LogConfig())
    if by_id:
        log.assign_topic_id(TOPIC_ID)
    partition = Partition("t", 0, FOLLOWER, log)
    partition.make_follower(LEADER, 0, [LEADER, FOLLOWER], [LEADER, FOLLOWER], 0, 1)
    reactor = MemoryReactorClock()
    manager = ReplicaFetcherManager(reactor, FetchSettings(FOLLOWER),
                                    lambda broker: ("127.0.0.1", 9000 + broker))
    manager.follow(partition)  # an empty log: it fetches at once
    _host, _port, factory, _timeout, _bind = reactor.tcpClients[-1]
    connection = factory.buildProtocol(None)
    wire = StringTransport()
    connection.makeConnection(wire)
    best = float("inf")
    for _ in range(rounds):
        spent = 0.0
        for _ in range(cycles):
            frame = answer_frame(wire.value(), partition.log_end_offset, batches)
            wire.clear()
            started = time.process_time()
            connection.dataReceived(frame)  # append, then the next fetch goes out
            spent += time.process_time() - started
        best = min(best, spent / cycles)
    manager.shutdown()
    partition.log.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--by-name", action="store_true",
                        help="no topic ID: the follower fetches by name (Fetch v12)")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; best CPU-time round of {args.rounds}")
    print(f"the follower fetches {'by name (v12)' if args.by_name else 'by topic ID (v17)'}")
    with tempfile.TemporaryDirectory() as data_dir:
        for batches in BATCHES_PER_ANSWER:
            cycle = measure(batches, args.cycles, args.rounds, data_dir, not args.by_name)
            print(f"  {batches:3d} batches per answer: {1e6 * cycle:7.1f} µs CPU per follower "
                  f"cycle, {1e6 * cycle / batches:5.1f} µs per batch")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
