"""Helpers for the stage 7 system tests: a fast-failing cluster, producers and consumers in threads.

Kafka's own replication test has a producer and a consumer running while
brokers die; these classes are those two, writing into one DeliveryLog that
the checker reads at the end.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simplekafka.cluster import LocalCluster
from simplekafka.cluster.checker import DeliveryLog
from simplekafka.cluster.faults import Faults

#: Failures are noticed within seconds (Kafka's defaults are 18 s and 30 s).
SESSION_TIMEOUT_MS = 4000
FAST_FAILOVER = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "3000",
}


@contextlib.contextmanager
def running_cluster(base_dir: Path, brokers: int = 3, config: dict | None = None,
                    listeners: tuple[str, ...] = ()) -> Iterator[tuple[LocalCluster, Faults]]:
    """A started LocalCluster and its Faults; paused brokers are resumed and all stopped after.

    ``listeners`` adds listeners besides PLAINTEXT (their settings go in ``config``)."""
    cluster = LocalCluster(brokers=brokers, base_dir=base_dir, listeners=listeners,
                           broker_config={**FAST_FAILOVER, **(config or {})})
    cluster.start()
    faults = Faults(cluster)
    try:
        yield cluster, faults
    finally:
        faults.heal()
        cluster.stop()
        print(faults.describe())


def create_topic(cluster: LocalCluster, name: str, partitions: int, replication_factor: int,
                 config: dict | None = None) -> None:
    """Create a topic and wait until every partition has a leader and a full ISR."""
    from simplekafka.admin import Admin

    with Admin(cluster.bootstrap_servers) as admin:
        admin.create_topic(name, partitions, replication_factor, config or {})
    for partition in range(partitions):
        cluster.wait_for_isr(name, partition, cluster.replicas_of(name, partition))


class BackgroundProducer(threading.Thread):
    """Sends numbered values with acks=all until stopped; acks and failures go to ``log``."""

    def __init__(self, cluster: LocalCluster, topic: str, log: DeliveryLog,
                 client: str = "confluent", pause: float = 0.002) -> None:
        super().__init__(daemon=True, name=f"producer-{client}")
        self.cluster, self.topic, self.log, self.client, self.pause = (
            cluster, topic, log, client, pause)
        self.stopping = threading.Event()
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            if self.client == "confluent":
                self._run_confluent()
            else:
                self._run_ours()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def _values(self) -> Iterator[bytes]:
        while not self.stopping.is_set():
            yield f"{self.client}-{self.sent:07d}".encode()
            self.sent += 1
            time.sleep(self.pause)

    def _run_confluent(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({
            "bootstrap.servers": self.cluster.bootstrap_servers, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": 120_000, "enable.idempotence": False,
            "retry.backoff.ms": 100, "socket.timeout.ms": 10_000, "log_level": 2,
        })
        on_delivery = self.log.confluent_callback
        for value in self._values():
            while True:
                try:
                    producer.produce(self.topic, value=value, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        producer.flush(120)

    def _run_ours(self) -> None:
        from simplekafka.producer import Producer

        with Producer(self.cluster.bootstrap_servers, acks="all", linger_ms=5,
                      request_timeout_ms=10_000, delivery_timeout_ms=120_000) as producer:
            for value in self._values():
                self.log.track(producer.send(self.topic, value=value), value=value)
            producer.flush(120)

    def acked(self) -> int:
        return len(self.log.acks)

    def wait_for_acks(self, more: int, timeout: float = 60.0) -> None:
        """Wait until ``more`` further sends are acknowledged (proof that writes flow)."""
        target = self.acked() + more
        self.cluster.wait_for(lambda: self.acked() >= target or self.error,
                              f"{more} more acknowledged sends", timeout)
        if self.error:
            raise self.error

    def stop(self, timeout: float = 150.0) -> None:
        self.stopping.set()
        self.join(timeout)
        assert not self.is_alive(), "the producer did not finish flushing"
        if self.error:
            raise self.error


class BackgroundConsumer(threading.Thread):
    """Reads every partition from the beginning while brokers fail; records go to ``log``.

    The checker keeps the first record seen at each offset, so a record read
    here that a failover later cut from the log (one read above the high
    watermark) would show up as a lost acknowledged record.
    """

    def __init__(self, cluster: LocalCluster, topic: str, partitions: int,
                 log: DeliveryLog) -> None:
        super().__init__(daemon=True, name="consumer")
        self.cluster, self.topic, self.partitions, self.log = cluster, topic, partitions, log
        self.stopping = threading.Event()
        self.read = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        from simplekafka.consumer import Consumer

        try:
            with Consumer(bootstrap_servers=self.cluster.bootstrap_servers,
                          auto_offset_reset="earliest", request_timeout_ms=10_000) as consumer:
                consumer.assign([(self.topic, p) for p in range(self.partitions)])
                while not self.stopping.is_set():
                    try:
                        records = consumer.poll(500)
                    except Exception as exc:  # a failover moment: note it and go on
                        print(f"background consumer: {type(exc).__name__}: {exc}", flush=True)
                        time.sleep(0.5)
                        continue
                    self.log.consumed_all(records)
                    self.read += len(records)
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.join(timeout)
        assert not self.is_alive(), "the consumer did not stop"
        if self.error:
            raise self.error


def drain(cluster: LocalCluster, topic: str, partitions: int, log: DeliveryLog,
          timeout: float = 90.0) -> None:
    """Read every partition from offset 0 to its end offset (and past its last ack) into ``log``."""
    from simplekafka.consumer import Consumer

    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                  request_timeout_ms=10_000) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        acked = log.acked_ends()
        ends = {tp: max(end, acked.get((tp.topic, tp.partition), 0))
                for tp, end in consumer.end_offsets(consumer.assignment()).items()}
        deadline = time.monotonic() + timeout
        while not all(consumer.position(tp) >= end for tp, end in ends.items()):
            assert time.monotonic() < deadline, (
                f"could not read to the end offsets {ends} within {timeout} s")
            log.consumed_all(consumer.poll(500))


def replica_logs(cluster: LocalCluster, topic: str, partition: int) -> dict[int, Any]:
    """Every replica's records of a partition, read from its data files."""
    from simplekafka.cluster.checker import read_partition_dir

    return {broker: read_partition_dir(cluster.partition_dir(broker, topic, partition))
            for broker in cluster.replicas_of(topic, partition)}


def wait_for_identical_logs(cluster: LocalCluster, topic: str, partition: int,
                            timeout: float = 60.0) -> None:
    """Wait until every replica holds the same records (no divergence and nobody behind)."""
    from simplekafka.cluster.checker import compare_replicas

    last = None

    def same() -> bool:
        nonlocal last
        last = compare_replicas(replica_logs(cluster, topic, partition))
        assert last.agree, f"replica logs diverge: {last.detail}"
        return len(set(last.log_end_offsets.values())) == 1

    try:
        cluster.wait_for(same, f"identical replica logs of {topic}-{partition}", timeout)
    except Exception as exc:
        raise AssertionError(f"{exc}; log end offsets {last and last.log_end_offsets}") from exc


def send_and_wait(bootstrap_servers: str, topic: str, values: list[bytes], acks: str | int,
                  log: DeliveryLog | None = None, retries: int = 2**31 - 1,
                  timeout: float = 60.0) -> list[BaseException | None]:
    """Send each value to partition 0 with our Producer; returns each send's error (or None).

    Acknowledged sends are noted in ``log`` (when given). ``retries=0`` makes a
    broker's first error final, so it can be asserted on.
    """
    from simplekafka.producer import Producer

    with Producer(bootstrap_servers, acks=acks, linger_ms=0, retries=retries,
                  request_timeout_ms=int(timeout * 1000 / 2),
                  delivery_timeout_ms=int(timeout * 1000)) as producer:
        futures = [producer.send(topic, value=value, partition=0) for value in values]
        if log is not None:
            for future, value in zip(futures, values, strict=True):
                log.track(future, value=value)
        producer.flush(timeout)
        return [future.exception(timeout) for future in futures]


def chop_log_from(partition_dir: Path, offset: int) -> int:
    """Cut a stopped replica's data file at the batch holding ``offset``: a lost unflushed tail.

    This is what a power failure does to writes still in the page cache (a
    process crash does not lose them). Returns how many bytes were cut.
    """
    from simplekafka.protocol.batch_header import iter_batch_positions, read_header

    cut = 0
    for segment in sorted(Path(partition_dir).glob("*.log")):
        data = segment.read_bytes()
        for position, _size in iter_batch_positions(data):
            header = read_header(data, position)
            if header.last_offset >= offset:
                with open(segment, "r+b") as file:
                    file.truncate(position)
                cut += len(data) - position
                break
    return cut


def explain_lost(cluster: LocalCluster, report: Any) -> str:
    """The checker's summary plus, for each lost record, the replicas that still store it."""
    from simplekafka.cluster.checker import locate

    lines = [report.summary()]
    for (topic, partition), part in sorted(report.partitions.items()):
        if part.lost:
            found = locate(part.lost[:10], replica_logs(cluster, topic, partition))
            lines += [f"  {r.value!r}: stored at {where or 'no replica'}"
                      for r, where in found.items()]
    return "\n".join(lines)
