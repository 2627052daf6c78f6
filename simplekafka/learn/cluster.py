"""``simplekafka learn cluster``: the three-broker failover demo on the learner's own code.

ZooKeeper and three real broker processes start through LocalCluster, each
launched by ``simplekafka.learn.plugged_broker``, which puts the learner's
passed exercises into SimpleKafka first (listed at the start). Then the
demo's failover (simplekafka/cluster/demo.py) runs against them: a topic with
replication factor 3 and min.insync.replicas 2, acks=all writes with
confluent-kafka, the leader of partition 0 SIGKILLed mid-stream, the new
leader shown, and every acknowledged record read back (the demo's consumer,
the checker's verdict), and kcat served too.

The kill is arranged so that a wrong high-watermark rule shows: just before
it, partition 0's followers are paused (SIGSTOP, a GC pause) for a moment.
With a correct rule the leader cannot answer acks=all meanwhile, since its
HW waits for them; records it answers anyway are on the leader alone, and the
SIGKILL takes them away: the checker reports them lost.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from simplekafka.cluster import demo
from simplekafka.cluster.checker import DeliveryLog
from simplekafka.cluster.faults import Faults
from simplekafka.cluster.local import LocalCluster
from simplekafka.learn.plug import plugs_for

PAUSE_S = 1.5  # the followers' pause before the kill: well inside replica.lag.time.max.ms
FIRST_RECORDS = 300
STREAM_RECORDS = 300


def launcher(directory: Path) -> list[str]:
    """The command prefix that starts a broker with the learner's functions in place."""
    return [sys.executable, "-m", "simplekafka.learn.plugged_broker", str(directory.resolve())]


class Stream(threading.Thread):
    """acks=all writes with confluent-kafka, one record at a time in flight, into ``log``."""

    def __init__(self, cluster: LocalCluster, log: DeliveryLog, first: int, count: int,
                 partition: int | None = None) -> None:
        super().__init__(daemon=True, name="learn-cluster-producer")
        self.cluster, self.log, self.first, self.count = cluster, log, first, count
        self.partition = partition
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from confluent_kafka import Producer

            producer = Producer({
                "bootstrap.servers": self.cluster.bootstrap_servers, "acks": "all",
                "linger.ms": 0, "enable.idempotence": False,
                "max.in.flight.requests.per.connection": 1, "message.timeout.ms": 60_000,
                "retry.backoff.ms": 100, "log_level": 2})
            for number in range(self.first, self.first + self.count):
                key, value = str(number % 7).encode(), f"payment-{number:05d}".encode()
                if self.partition is None:
                    producer.produce(demo.TOPIC, key=key, value=value,
                                     on_delivery=self.log.confluent_callback)
                else:
                    producer.produce(demo.TOPIC, key=key, value=value, partition=self.partition,
                                     on_delivery=self.log.confluent_callback)
                producer.poll(0.002)
            if producer.flush(90) != 0:
                self.error = TimeoutError("records still unanswered after 90 s")
        except BaseException as exc:  # reported by the caller
            self.error = exc


def kcat_lines(cluster: LocalCluster, say) -> bool:
    """kcat on the learner's brokers: the metadata, and partition 0 read to its end."""
    if shutil.which("kcat") is None:
        say("kcat is not installed: left out")
        return False
    broker = cluster.bootstrap_servers
    listing = subprocess.run(["kcat", "-b", broker, "-L", "-t", demo.TOPIC], capture_output=True,
                             text=True, timeout=60, check=False)
    for line in listing.stdout.splitlines():
        if "partition 0," in line or "brokers:" in line:
            say(f"  kcat -L: {line.strip()}")
    read = subprocess.run(["kcat", "-b", broker, "-C", "-t", demo.TOPIC, "-p", "0", "-o",
                           "beginning", "-e", "-q", "-f", "%o %s\n"], capture_output=True,
                          text=True, timeout=60, check=False)
    count = len(read.stdout.splitlines())
    say(f"kcat -C read {count} records from partition 0 (exit status {read.returncode})")
    return listing.returncode == 0 and read.returncode == 0 and count > 0


def run(directory: Path, base_dir: Path | None = None, out: TextIO | None = None) -> int:
    """Start three brokers on the learner's code, run the failover; 0 only when nothing is lost."""
    step = demo.Narrator(out=out)
    say = step.say
    plugged = plugs_for(directory)
    step("your code in the brokers")
    if plugged:
        for plug in plugged:
            say(f"  {plug}")
    else:
        say("  none yet: no passed exercise puts a function into the broker "
            "(run simplekafka learn check 7 first); the brokers run SimpleKafka's own code")
    step("start ZooKeeper and three brokers, each through simplekafka.learn.plugged_broker")
    cluster = LocalCluster(brokers=3, base_dir=base_dir, broker_config=demo.DEMO_BROKER_CONFIG,
                           launcher=launcher(directory))
    cluster.start()
    faults = Faults(cluster, announce=False)
    try:
        say(f"bootstrap servers: {cluster.bootstrap_servers}")
        say(f"one broker's command: {' '.join(cluster.broker_command(cluster.brokers[1]))}")
        step(f"create topic {demo.TOPIC!r}: {demo.PARTITIONS} partitions, replication factor "
             f"{demo.REPLICATION_FACTOR}, min.insync.replicas 2")
        from simplekafka.admin import Admin

        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic(demo.TOPIC, demo.PARTITIONS, demo.REPLICATION_FACTOR,
                               demo.TOPIC_CONFIG)
        for partition in range(demo.PARTITIONS):
            cluster.wait_for_isr(demo.TOPIC, partition,
                                 cluster.replicas_of(demo.TOPIC, partition))
        say(demo.partition_table(cluster, demo.TOPIC, demo.PARTITIONS))

        deliveries = DeliveryLog()
        step(f"write {FIRST_RECORDS} records with acks=all (confluent-kafka)")
        first = Stream(cluster, deliveries, 0, FIRST_RECORDS)
        first.run()
        say(f"acknowledged: {len(deliveries.acks)}, failed: {deliveries.failed_sends}")

        victim = cluster.leader_of(demo.TOPIC, 0)
        followers = [b for b in cluster.isr_of(demo.TOPIC, 0) if b != victim]
        step(f"write {STREAM_RECORDS} more to partition 0; its followers {followers} pause "
             f"(SIGSTOP) for {PAUSE_S} s, then its leader, broker {victim}, is SIGKILLed")
        stream = Stream(cluster, deliveries, FIRST_RECORDS, STREAM_RECORDS, partition=0)
        for follower in followers:
            faults.pause(follower)
        acked_before = len(deliveries.acks)
        stream.start()
        time.sleep(PAUSE_S)
        faults.kill(victim)
        acked_in_pause = len(deliveries.acks) - acked_before
        say(f"acknowledged while the followers were paused: {acked_in_pause} "
            "(a correct high watermark waits for the ISR: 0)")
        faults.heal()
        faults.expire_session(victim)  # its session ends now rather than after the timeout
        killed_at = time.monotonic()
        new_leader = cluster.wait_for_leader(demo.TOPIC, 0, not_=victim)
        say(f"new leader of partition 0: broker {new_leader} "
            f"({time.monotonic() - killed_at:.1f} s after the kill)")
        stream.join(120)
        if stream.is_alive() or stream.error is not None:
            say(f"the producer did not finish cleanly: {stream.error or 'still running'}")
        say(demo.partition_table(cluster, demo.TOPIC, demo.PARTITIONS))

        step("read everything back and check that nothing acknowledged was lost")
        read = demo.consume_everything(cluster, deliveries)
        report = deliveries.check()
        say(f"consumed {read} records")
        say(report.summary())
        kcat_ok = kcat_lines(cluster, say)
        lost = len(report.lost)
        say(f"\n{report.acknowledged} acknowledged, {lost} lost")
        say("nothing acknowledged was lost" if report.ok else "ACKNOWLEDGED RECORDS WERE LOST")
        return 0 if report.ok and kcat_ok and lost == 0 else 1
    finally:
        faults.heal()
        say("\nstopping the brokers and ZooKeeper")
        cluster.cleanup()
