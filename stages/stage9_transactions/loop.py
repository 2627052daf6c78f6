"""A read-process-write loop with exactly-once results: consume, transform, produce, and commit
the input offsets inside the output transaction (KIP-98, KIP-447's pattern).

Run as ``python -m stages.stage9_transactions.loop BOOTSTRAP IN OUT GROUP TXN_ID [PAUSE_S]``;
it processes until it has read to the end of its partitions of IN and IN stays idle for a
few seconds, then exits 0 (PAUSE_S: a pause in
each transaction before its commit, so that a demo can kill it there). On any error it exits 1
without committing: the open transaction is aborted when the next instance (same
transactional id) calls ``init_transactions()``, which also fences this one if it were
still alive, and the next instance resumes from the offsets committed with the last
transaction. That is all it takes for each input to be in the output exactly once.

The idle clock starts only once the group has assigned partitions: after a SIGKILL the
dead instance's member stays in the group until its session times out, and the
rebalance that gives the next instance its partitions waits for that, longer than the
idle time. Both waits are bounded by ``WAIT_S``.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

BATCH = 20
IDLE_EXIT_S = 3.0
TIMEOUT_S = 30.0
WAIT_S = 120.0


def transform(value: bytes) -> bytes:
    return b"out-" + value


def caught_up(consumer: Consumer) -> bool:
    """Whether the loop has read (or committed) up to the end of every assigned partition."""
    for tp in consumer.position(consumer.assignment()):
        offset = tp.offset
        if offset < 0:  # nothing read yet: where the committed offsets say it starts
            offset = consumer.committed([tp], TIMEOUT_S)[0].offset
        watermarks = consumer.get_watermark_offsets(tp, TIMEOUT_S)
        if watermarks is None or max(offset, watermarks[0]) < watermarks[1]:
            return False
    return True


def run(bootstrap: str, source: str, sink: str, group: str, transactional_id: str,
        pause_s: float = 0.0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 10_000, "message.timeout.ms": 10_000})
    try:
        producer.init_transactions(TIMEOUT_S)
        consumer.subscribe([source])
        started = idle_since = progress = time.monotonic()
        assigned = False
        while True:
            messages = [m for m in consumer.consume(BATCH, 0.5) if not m.error()]
            if not assigned and consumer.assignment():
                assigned = True
                print(f"loop: partitions of {source} assigned after "
                      f"{time.monotonic() - started:.1f} s (the group's rebalance)", flush=True)
            if not messages:
                now = time.monotonic()
                if not consumer.assignment():
                    idle_since = now  # no idle clock until the group assigns partitions
                elif now - idle_since >= IDLE_EXIT_S:
                    if caught_up(consumer):
                        return 0
                    idle_since = now  # not at the end yet: keep reading, look again later
                if now - progress > WAIT_S:
                    raise KafkaException(f"not at the end of {source} within {WAIT_S:.0f} s")
                continue
            idle_since = progress = time.monotonic()
            producer.begin_transaction()
            for message in messages:
                producer.produce(sink, transform(message.value()), key=message.value())
            producer.flush(TIMEOUT_S)
            time.sleep(pause_s)
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(),
                                                 TIMEOUT_S)
            producer.commit_transaction(TIMEOUT_S)
    except KafkaException as exc:
        print(f"loop stops: {exc}", file=sys.stderr)
        return 1
    finally:
        consumer.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(run(*args[:5], *(float(a) for a in args[5:6])))
