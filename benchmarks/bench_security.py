"""Produce and consume throughput over SASL_SSL against PLAINTEXT, in the same run.

Prints figures, never passes or fails. Aim from issue 14: with 1 MB batches,
SASL_SSL reaches at least 50 % of PLAINTEXT's throughput. One broker serves
both listeners (LocalCluster with ``listeners=["SASL_SSL"]``); confluent-kafka
produces ``--megabytes`` of 10 kB values (``batch.size`` 1 MB, acks=1), then a
consumer reads them back, once per listener, alternating the order so that
neither listener always runs on a warmer machine. The SASL login
(SCRAM-SHA-512) happens once per connection and is not in the timed part; what
is measured is TLS on Twisted (pyOpenSSL's memory BIO) on both sides.

    .venv/bin/python benchmarks/bench_security.py [--megabytes 200] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from simplekafka.broker.security.certs import make_certificates
from simplekafka.cluster import LocalCluster
from simplekafka.cluster.security import client_config, secure_broker_config
from simplekafka.coordination.users import set_scram_credential
from simplekafka.protocol.sasl import SCRAM_MECHANISMS, make_credential

MB = 1024 * 1024
VALUE = 10 * 1024


def settings(cluster: LocalCluster, certs, listener: str) -> dict:
    found = {"bootstrap.servers": cluster.bootstrap(listener)}
    if listener == "SASL_SSL":
        found.update(client_config("SASL_SSL", certs, "SCRAM-SHA-512", "bench", "bench-secret"))
    return found


def produce(config: dict, topic: str, megabytes: int) -> float:
    producer = Producer({**config, "acks": 1, "linger.ms": 5, "batch.size": MB,
                         "message.max.bytes": 2 * MB, "queue.buffering.max.kbytes": 256 * 1024})
    producer.list_topics(topic, timeout=30)  # connect and log in before the clock starts
    value = os.urandom(VALUE)
    count = megabytes * MB // VALUE
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(300)
    return megabytes / (time.perf_counter() - started)


def consume(config: dict, topic: str, megabytes: int) -> float:
    consumer = Consumer({**config, "group.id": f"bench-{time.time()}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "fetch.max.bytes": 50 * MB,
                         "max.partition.fetch.bytes": 8 * MB})
    consumer.subscribe([topic])
    wanted = megabytes * MB // VALUE
    seen = 0
    started = None
    deadline = time.monotonic() + 300
    while seen < wanted and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                if started is None:
                    started = time.perf_counter()  # from the first record: no group join
                seen += 1
    consumer.close()
    if started is None or seen < wanted:
        raise SystemExit(f"consumed {seen} of {wanted} records")
    return megabytes / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        certs = make_certificates(Path(tmp) / "certs", clients=[])
        config = secure_broker_config(certs, {}, ("SASL_SSL",))
        config.update({"message.max.bytes": str(2 * MB), "group.initial.rebalance.delay.ms": "0",
                       "offsets.topic.replication.factor": "1"})
        with LocalCluster(1, base_dir=Path(tmp) / "cluster", listeners=["SASL_SSL"],
                          broker_config=config) as cluster:
            set_scram_credential(cluster.zk, "bench", "SCRAM-SHA-512",
                                 make_credential(SCRAM_MECHANISMS["SCRAM-SHA-512"],
                                                 "bench-secret"))
            time.sleep(1)  # the broker reads the new user from /config/changes
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            results: dict[str, dict[str, list[float]]] = {
                "PLAINTEXT": {"produce": [], "consume": []},
                "SASL_SSL": {"produce": [], "consume": []}}
            for round_number in range(args.rounds):
                order = ["PLAINTEXT", "SASL_SSL"][::1 if round_number % 2 == 0 else -1]
                for listener in order:
                    topic = f"bench-{listener.lower()}-{round_number}"
                    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                    config_for = settings(cluster, certs, listener)
                    produced = produce(config_for, topic, args.megabytes)
                    consumed = consume(config_for, topic, args.megabytes)
                    results[listener]["produce"].append(produced)
                    results[listener]["consume"].append(consumed)
                    print(f"round {round_number + 1} {listener:<9}  produce {produced:7.1f} MB/s"
                          f"  consume {consumed:7.1f} MB/s  (load {os.getloadavg()[0]:.2f})",
                          flush=True)
    print()
    for what in ("produce", "consume"):
        plain = max(results["PLAINTEXT"][what])
        secured = max(results["SASL_SSL"][what])
        print(f"{what}: PLAINTEXT {plain:.1f} MB/s, SASL_SSL {secured:.1f} MB/s = "
              f"{100 * secured / plain:.0f} % of PLAINTEXT (aim >= 50 %; best of "
              f"{args.rounds} rounds, {args.megabytes} MB of {VALUE // 1024} kB values, "
              f"1 MB batches)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
