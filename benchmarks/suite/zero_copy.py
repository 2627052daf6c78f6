"""consume, zero-copy: fetch answers with sendfile and without, and the loopback limit.

Three record sizes (100 B, 10 kB, 1 MB) are written once to one broker; a
confluent-kafka consumer reads each topic from the start with
``fetch.zero.copy.enable`` on, then off (the same broker restarted on the
same data, the page cache warm), alternating ``rounds`` times (the median
kept). Per size and setting: records/s, MB/s and the broker's CPU per MB
(utime + stime of the broker process from ``/proc/<pid>/stat`` over the
read). The loopback limit, measured in the same run, is one ``os.sendfile``
sender and one ``recv_into`` receiver on a 127.0.0.1 socket pair: no broker,
no protocol, no client decoding.

Also runnable alone: ``python -m benchmarks.suite.zero_copy [--tiny]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.suite.core import Context, Curve, Figure, new_topic

SIZES = (100, 10_000, 1_000_000)
MB = 1e6


def _volumes(mode: str) -> dict[int, int]:
    """Records to read per size: about the same bytes for the two big sizes."""
    if mode == "tiny":
        return {100: 2_000, 10_000: 200, 1_000_000: 4}
    if mode == "full":
        return {100: 2_000_000, 10_000: 40_000, 1_000_000: 400}
    return {100: 500_000, 10_000: 20_000, 1_000_000: 200}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(bootstrap: str, size: int, count: int) -> str:
    from confluent_kafka import Producer

    topic = new_topic(bootstrap, f"zc-{size}")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 20,
                         "batch.size": 1 << 20, "message.max.bytes": 2 << 20,
                         "queue.buffering.max.kbytes": 1 << 20})
    value = b"z" * size
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(300) == 0, "records left unsent"
    return topic


def consume(bootstrap: str, topic: str, count: int, pid: int) -> tuple[float, float]:
    """(seconds, broker CPU seconds) to read ``count`` records from the start."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "zc-bench",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 0,
                         "fetch.max.bytes": 50 << 20, "queued.max.messages.kbytes": 256 << 10})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    while seen < count:
        seen += len(consumer.consume(min(10_000, count - seen), 1.0))
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu
    consumer.close()
    return elapsed, cpu


def loopback_limit(total: int) -> float:
    """MB/s of sendfile -> recv_into over 127.0.0.1, no broker: the ceiling of any consume."""
    chunk = 8 << 20
    with tempfile.TemporaryFile() as source:
        source.write(os.urandom(1 << 20) * 8)
        source.flush()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        sender = socket.create_connection(listener.getsockname())
        receiver, _ = listener.accept()
        listener.close()
        received = [0]

        def receive() -> None:
            buffer = bytearray(1 << 20)
            view = memoryview(buffer)
            while received[0] < total:
                got = receiver.recv_into(view)
                if not got:
                    break
                received[0] += got

        thread = threading.Thread(target=receive)
        started = time.perf_counter()
        thread.start()
        sent = 0
        while sent < total:
            sent += os.sendfile(sender.fileno(), source.fileno(), sent % chunk,
                                min(chunk - sent % chunk, total - sent))
        thread.join(60)
        elapsed = time.perf_counter() - started
        sender.close()
        receiver.close()
    return received[0] / elapsed / MB


def measure(mode: str, step=lambda _what: None, sizes: tuple[int, ...] = SIZES,
            rounds: int = 1, launcher: list[str] | None = None,
            ) -> dict[str, dict[int, tuple[float, float]]]:
    """{"on"/"off": {size: (seconds, broker CPU seconds)}} for the sizes' volumes: the
    settings alternate (the broker restarted between), ``rounds`` times each; the median
    round by time is kept."""
    from simplekafka.cluster import LocalCluster

    volumes = _volumes(mode)
    runs: dict[str, dict[int, list[tuple[float, float]]]] = {
        "on": {size: [] for size in sizes}, "off": {size: [] for size in sizes}}
    config = {"fetch.zero.copy.enable": "true", "message.max.bytes": str(2 << 20)}
    with LocalCluster(brokers=1, broker_config=config, launcher=launcher) as cluster:
        bootstrap = cluster.bootstrap_servers
        topics = {}
        for size in sizes:
            step(f"consume, zero-copy: writing {volumes[size]:,} records of {size:,} B")
            topics[size] = fill(bootstrap, size, volumes[size])
        for number in range(rounds * 2):
            setting = ("on", "off")[number % 2]
            if number:
                step(f"consume, zero-copy: restarting the broker with zero-copy {setting}")
                cluster.broker_config["fetch.zero.copy.enable"] = str(setting == "on").lower()
                cluster.restart(1)
            pid = cluster.broker_pids[1]
            assert pid is not None
            for size in sizes:
                step(f"consume, zero-copy {setting}: {size:,} B records")
                consume(bootstrap, topics[size], min(volumes[size], 10), pid)  # warm up
                runs[setting][size].append(consume(bootstrap, topics[size], volumes[size],
                                                   pid))
    return {setting: {size: sorted(found)[len(found) // 2] for size, found in by_size.items()}
            for setting, by_size in runs.items()}


def zero_copy(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    """The figures: per size, with and without zero-copy; the loopback limit."""
    volumes = _volumes(ctx.mode)
    results = measure(ctx.mode, ctx.step, rounds=ctx.sizes.runs, launcher=ctx.launcher)
    ctx.step("consume, zero-copy: the loopback limit")
    limit = loopback_limit(64 << 20 if ctx.mode == "tiny" else 2 << 30)
    figures = [Figure("consume", "loopback limit (sendfile -> recv_into, no broker)", limit,
                      "MB/s")]
    curves = []
    for setting in ("on", "off"):
        label = f"zero-copy {setting}"
        rates = []
        for size in SIZES:
            seconds, cpu = results[setting][size]
            megabytes = volumes[size] * size / MB
            rate = megabytes / seconds
            rates.append(rate)
            figures += [
                Figure("consume", f"confluent-kafka, {size:,} B records, {label}",
                       volumes[size] / seconds, "records/s", f"{rate:,.0f} MB/s"),
                Figure("consume", f"broker CPU per MB, {size:,} B records, {label}",
                       cpu / megabytes * 1000, "ms/MB"),
            ]
        curves.append(Curve("consume_zero_copy", label, list(SIZES), rates, "record bytes",
                            "MB/s", log_x=True))
    return figures, curves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="seconds; figures mean nothing")
    parser.add_argument("--size", type=int, action="append", choices=SIZES,
                        help="only this record size (repeatable; default: all three)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternate on/off this many times each; the median is shown")
    args = parser.parse_args()
    mode = "tiny" if args.tiny else "small"
    sizes = tuple(args.size or SIZES)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    volumes = _volumes(mode)
    results = measure(mode, lambda what: print(what, flush=True), sizes, args.rounds)
    limit = loopback_limit(64 << 20 if args.tiny else 2 << 30)
    print(f"{'size':>10} {'setting':>8} {'records/s':>12} {'MB/s':>8} {'broker ms/MB':>13}")
    for size in sizes:
        for setting in ("on", "off"):
            seconds, cpu = results[setting][size]
            megabytes = volumes[size] * size / MB
            print(f"{size:>10,} {setting:>8} {volumes[size] / seconds:>12,.0f} "
                  f"{megabytes / seconds:>8,.0f} {cpu / megabytes * 1000:>13.2f}")
    print(f"loopback limit (sendfile -> recv_into): {limit:,.0f} MB/s")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
