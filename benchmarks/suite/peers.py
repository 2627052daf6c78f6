"""The C peers: librdkafka's rdkafka_performance against our broker, and Redis Streams.

Both are C clients, so a figure measured with them is the server's, not a
Python client's. rdkafka_performance is built from Debian's librdkafka source
package by ``tools/build_rdkafka_performance.sh`` into ``.venv/opt``; Redis
comes from Debian's ``redis-server`` package, measured with its own C
``redis-benchmark`` (pipelined, one connection, like one Kafka producer).
When a peer is missing the scenario says so in the run's notes and goes on.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from simplekafka.cluster.local import LOOPBACK, free_port

BUILD_SCRIPT = "tools/build_rdkafka_performance.sh"
#: For confluent-kafka's consumers (the librdkafka bundled in its wheel, 2.2 and later):
#: they idle fetch.queue.backoff.ms (1 s) whenever their prefetch queue is full; with 0
#: they fetch again at once (see the client chapter). Debian's librdkafka 2.0, which
#: rdkafka_performance is built from, has neither the setting nor the pause.
CONSUMER_SETTINGS = {"fetch.queue.backoff.ms": "0"}


def rdkafka_performance() -> Path | None:
    """The built tool, or None: $RDKAFKA_PERFORMANCE, else <venv>/opt/rdkafka_performance."""
    explicit = os.environ.get("RDKAFKA_PERFORMANCE")
    candidates = [Path(explicit)] if explicit else []
    candidates.append(Path(sys.prefix) / "opt" / "rdkafka_performance")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_rdkafka_note() -> str:
    return (f"rdkafka_performance not built: C-client figures left out "
            f"(build it once with {BUILD_SCRIPT})")


def _settings(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]


def _run(command: list[str], timeout: float) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode not in (0, 130):
        raise RuntimeError(f"{Path(command[0]).name} exited {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-300:]}")
    return done.stdout


_PRODUCED = re.compile(r"(\d+) delivered .* in (\d+)ms: (\d+) msgs/s")
_CONSUMED = re.compile(r"(\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s")


def c_produce(tool: Path, bootstrap: str, topic: str, count: int, size: int,
              acks: str = "1", settings: dict[str, str] | None = None) -> float:
    """Records/s rdkafka_performance delivers (``count`` records of ``size`` bytes)."""
    conf = {"linger.ms": "5", "batch.size": "1000000", "queue.buffering.max.messages": "1000000",
            **(settings or {})}
    out = _run([str(tool), "-P", "-t", topic, "-p", "0", "-b", bootstrap, "-s", str(size),
                "-c", str(count), "-a", acks, "-q", *_settings(conf)], timeout=600)
    found = _PRODUCED.findall(out)
    if not found:
        raise RuntimeError(f"rdkafka_performance printed no summary: {out.strip()[-300:]}")
    return float(found[-1][2])  # the tool's own rate, from microseconds


def c_consume(tool: Path, bootstrap: str, topic: str, count: int) -> float:
    """Records/s rdkafka_performance reads from the start of partition 0."""
    out = _run([str(tool), "-C", "-t", topic, "-p", "0", "-b", bootstrap, "-o", "beginning",
                "-c", str(count), "-e", "-q"], timeout=600)
    found = _CONSUMED.findall(out)
    if not found:
        raise RuntimeError(f"rdkafka_performance printed no summary: {out.strip()[-300:]}")
    return float(found[-1][3])  # the tool's own rate, from microseconds


def c_latency(tool: Path, bootstrap: str, topic: str, rate: int, seconds: float, size: int,
              directory: Path, acks: str = "1", linger_ms: int = 0,
              settings: dict[str, str] | None = None,
              idle_pacer: bool = False) -> list[float]:
    """End-to-end delays in ms, one per record: a -l producer paced at ``rate`` and a -l consumer.

    Both stamp and read the wall clock of this machine; the consumer writes every
    delay to a file (``-A``), which is what the histogram is drawn from.
    ``idle_pacer``: the producer's main thread, whose pacing loop spins (see
    ``idle_priority``), runs at SCHED_IDLE once librdkafka's threads exist.
    """
    count = max(1, int(rate * seconds))
    samples = directory / f"latency-{topic}.txt"
    # stdbuf -oL: its stdout is a pipe, and the "reached end" line must arrive at once.
    line_buffered = [stdbuf, "-oL"] if (stdbuf := shutil.which("stdbuf")) else []
    consumer = subprocess.Popen(
        [*line_buffered, str(tool), "-C", "-t", topic, "-p", "0", "-b", bootstrap,
         "-o", "beginning", "-l",
         "-A", str(samples), "-c", str(count),
         *_settings({"fetch.wait.max.ms": "500", **(settings or {})})],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready = threading.Event()

    def drain() -> None:
        # The consumer says when its first fetch found the (empty, fresh) partition's end:
        # from then on its fetch is parked at the broker, and the producer may start.
        for line in consumer.stdout or ():
            if "reached end" in line:
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not ready.wait(60) or consumer.poll() is not None:
            raise RuntimeError("rdkafka_performance's consumer did not reach the partition end")
        producer = [str(tool), "-P", "-t", topic, "-p", "0", "-b", bootstrap, "-s", str(size),
                    "-r", str(rate), "-c", str(count), "-a", acks, "-l", "-q",
                    *_settings({"linger.ms": str(linger_ms), **(settings or {})})]
        if idle_pacer:
            _run_with_idle_pacer(producer, timeout=seconds * 10 + 120)
        else:
            _run(producer, timeout=seconds * 10 + 120)
        try:
            consumer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            consumer.send_signal(signal.SIGINT)  # prints its summary and writes the file
            consumer.wait(timeout=30)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    if not samples.exists():
        return []
    return [int(line) / 1000 for line in samples.read_text().split() if line.strip()]


def idle_priority(pid: int, timeout: float = 30.0) -> bool:
    """Put rdkafka_performance's main thread (thread id = ``pid``) at SCHED_IDLE.

    At 10,000 records/s ``-r`` leaves under a millisecond between records, and
    the tool polls with a zero timeout until the next is due: the main thread
    spins a whole core. At SCHED_IDLE it runs only on a CPU nothing else wants,
    so the broker and the clients' I/O threads never wait behind it. Done once a
    broker thread learned from metadata exists (rd_kafka_new has returned):
    threads created by the main thread before then would inherit the policy,
    and later ones are created by librdkafka's own threads. False if the
    process ended or the policy could not be set.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            names = [(task / "comm").read_text().strip()
                     for task in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            return False
        if any(name.startswith("rdk:broker") and name[len("rdk:broker"):].isdigit()
               for name in names):
            try:
                os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
            except (OSError, AttributeError):
                return False
            return True
        time.sleep(0.001)
    return False


def _run_with_idle_pacer(command: list[str], timeout: float) -> str:
    """``_run`` for a -P command whose pacing thread is put at SCHED_IDLE."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        if not idle_priority(process.pid) and process.poll() is None:
            raise RuntimeError("could not put rdkafka_performance's pacing thread at SCHED_IDLE")
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    if process.returncode not in (0, 130):
        raise RuntimeError(f"{Path(command[0]).name} exited {process.returncode}: "
                           f"{(err or out).strip()[-300:]}")
    return out


# -- Redis Streams ---------------------------------------------------------------------------


def redis_tools() -> tuple[str, str] | None:
    server, benchmark = shutil.which("redis-server"), shutil.which("redis-benchmark")
    return (server, benchmark) if server and benchmark else None


def missing_redis_note() -> str:
    return ("redis-server / redis-benchmark not installed: Redis figures left out "
            "(Debian package redis-server; tools/bootstrap.sh installs it)")


@contextlib.contextmanager
def redis_server(server: str) -> Iterator[int]:
    """A throw-away redis-server on a free loopback port, without persistence."""
    port = free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", LOOPBACK, "--save", "",
                                "--appendonly", "no", "--daemonize", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                import socket

                with socket.create_connection((LOOPBACK, port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_RATE = re.compile(r"([\d.]+) requests per second")


def _redis_benchmark(benchmark: str, port: int, count: int, pipeline: int,
                     command: list[str]) -> float:
    out = _run([benchmark, "-h", LOOPBACK, "-p", str(port), "-c", "1", "-n", str(count),
                "-P", str(pipeline), "-q", "--csv", *command], timeout=600)
    numbers = re.findall(r'"([\d.]+)"', out)
    if numbers:
        return float(numbers[0])  # --csv: "test","rps",...
    found = _RATE.findall(out)
    if not found:
        raise RuntimeError(f"redis-benchmark printed no rate: {out.strip()[-300:]}")
    return float(found[-1])


def redis_stream_rates(tools: tuple[str, str], count: int, size: int,
                       read_count: int = 1000) -> tuple[float, float]:
    """(XADD records/s, XRANGE records/s) through redis-benchmark, one pipelined connection."""
    server, benchmark = tools
    with redis_server(server) as port:
        value = "v" * size
        added = _redis_benchmark(benchmark, port, count, 1000,
                                 ["XADD", "bench", "*", "v", value])
        reads = max(1, count // read_count)
        ranges = _redis_benchmark(benchmark, port, reads, 16,
                                  ["XRANGE", "bench", "-", "+", "COUNT", str(read_count)])
    return added, ranges * min(read_count, count)
