"""Client throughput against one local broker: our Producer and Consumer vs confluent-kafka.

Prints figures, never passes or fails. Issue 6 aims at >= 250,000 msg/s for our
Producer (acks=1, batches of 16 KB and more) and >= 400,000 msg/s for our
Consumer, with 100-byte values on one partition. confluent-kafka (librdkafka,
C) runs the same workload against the same broker in the same run, and the
ratio is printed. Two rates each: per wall-clock second (what you get on this
machine now, with its neighbours), and per CPU-second of the client process,
all its threads included (what the client costs; the broker is a separate
process either way).

    .venv/bin/python benchmarks/bench_client.py [--messages 300000] [--size 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simplekafka.admin import Admin
from simplekafka.client import TopicPartition
from simplekafka.cluster import LocalCluster
from simplekafka.consumer import Consumer
from simplekafka.producer import Producer


class Clock:
    """Wall time and this process's CPU time (every thread) since creation."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def rates(self, count: int) -> tuple[float, float]:
        wall = time.perf_counter() - self.wall
        cpu = max(time.process_time() - self.cpu, 1e-9)
        return count / wall, count / cpu


def ours_produce(
    bootstrap: str, topic: str, n: int, value: bytes, batch_size: int
) -> tuple[float, float]:
    with Producer(bootstrap, acks=1, linger_ms=5, batch_size=batch_size,
                  buffer_memory=64 * 1024 * 1024) as producer:
        producer.send(topic, value).get(30)  # connect and learn metadata first
        send = producer.send
        clock = Clock()
        for _ in range(n):
            send(topic, value)
        producer.flush(300)
        return clock.rates(n)


def ours_consume(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                  max_poll_records=5000) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.position(TopicPartition(topic, 0))
        seen = 0
        clock = Clock()
        while seen < n:
            seen += len(consumer.poll(1000))
        return clock.rates(seen)


def ck_produce(
    bootstrap: str, topic: str, n: int, value: bytes, batch_size: int
) -> tuple[float, float]:
    from confluent_kafka import Producer as CkProducer

    producer = CkProducer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                           "batch.size": batch_size, "queue.buffering.max.messages": 2_000_000})
    producer.produce(topic, value, partition=0)
    producer.flush(30)
    clock = Clock()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.001)
    producer.flush(300)
    return clock.rates(n)


def ck_consume(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    from confluent_kafka import Consumer as CkConsumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    # fetch.queue.backoff.ms=0: with librdkafka's default (1000) the consumer idles a
    # second whenever its prefetch queue is full (see the client chapter).
    consumer = CkConsumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                           "enable.auto.commit": False, "fetch.queue.backoff.ms": 0})
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    seen = 0
    clock = Clock()
    while seen < n:
        # Never ask for more than remain: consume() waits out its timeout for a short batch.
        seen += len(consumer.consume(min(10000, n - seen), 1.0))
    rates = clock.rates(seen)
    consumer.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=65_536)
    args = parser.parse_args()
    value = b"v" * args.size
    n = args.messages
    with tempfile.TemporaryDirectory(prefix="bench-client-") as tmp, \
            LocalCluster(brokers=1, base_dir=Path(tmp)) as cluster:
        bootstrap = cluster.bootstrap_servers
        with Admin(bootstrap) as admin:
            admin.create_topic("ours", 1)
            admin.create_topic("theirs", 1)
        print(f"{n:,} messages of {args.size} bytes, one partition, one local broker, "
              f"acks=1, batch.size {args.batch_size:,}, linger 5 ms")
        ours = (ours_produce(bootstrap, "ours", n, value, args.batch_size),
                ours_consume(bootstrap, "ours", n + 1))
        theirs = (ck_produce(bootstrap, "theirs", n, value, args.batch_size),
                  ck_consume(bootstrap, "theirs", n + 1))
    print(f"{'msg/s':16}{'produce wall':>14}{'produce CPU':>14}{'consume wall':>14}"
          f"{'consume CPU':>14}")
    for name, (produced, consumed) in (("simplekafka", ours), ("confluent-kafka", theirs)):
        print(f"{name:16}{produced[0]:14,.0f}{produced[1]:14,.0f}{consumed[0]:14,.0f}"
              f"{consumed[1]:14,.0f}")
    print(f"{'ratio':16}{ours[0][0] / theirs[0][0]:14.2f}{ours[0][1] / theirs[0][1]:14.2f}"
          f"{ours[1][0] / theirs[1][0]:14.2f}{ours[1][1] / theirs[1][1]:14.2f}")


if __name__ == "__main__":
    main()
