"""What the console learns about brokers beside Metadata: are they up, and their own metrics.

Reachability: ZooKeeper drops a stopped broker from Metadata only when its
session expires (6 to 18 s), so the console asks each broker it has ever seen
itself: an ApiVersions request on a fresh connection with a short timeout.
A broker that does not answer is down now, whatever Metadata still says.

Metrics: each broker serves Prometheus text on its ``metrics.listener``
(``simplekafka.broker.metrics``). The console finds that address the Kafka
way, in the broker's own config (DescribeConfigs of the broker resource), and
scrapes it: ``kafka_server_brokertopicmetrics_{messagesin,bytesin,bytesout}_total``
per topic for the throughput charts (partition sizes come from DescribeLogDirs).
A broker without a metrics listener simply has no figures.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypedDict

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.messages import encode_request
from simplekafka.protocol.structs import Node

PROBE_TIMEOUT_S = 0.8
SCRAPE_TIMEOUT_S = 2.0
TOPIC_COUNTERS = {"kafka_server_brokertopicmetrics_messagesin": "messages_in",
                  "kafka_server_brokertopicmetrics_bytesin": "bytes_in",
                  "kafka_server_brokertopicmetrics_bytesout": "bytes_out"}


@dataclass(frozen=True)
class SeenBroker:
    node_id: int
    host: str
    port: int
    rack: str | None


def probe(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True if a Kafka broker answers ApiVersions v0 at host:port within ``timeout``."""
    request = encode_frame(encode_request(ApiKey.API_VERSIONS, 0, 1,
                                          "simplekafka-console-probe", {}))
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(request)
            header = b""
            while len(header) < 8:  # size and correlation id are enough to know it answers
                chunk = sock.recv(8 - len(header))
                if not chunk:
                    return False
                header += chunk
    except OSError:
        return False
    size, correlation = struct.unpack(">ii", header)
    return size >= 4 and correlation == 1


class BrokerWatch:
    """Every broker the console has seen in Metadata, and whether each answers now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[int, SeenBroker] = {}
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="console-probe")

    def saw(self, brokers: Iterable[Node]) -> None:
        """Remember the brokers of a Metadata answer (``Node``s), with their latest address."""
        with self._lock:
            for b in brokers:
                self._seen[b.node_id] = SeenBroker(b.node_id, b.host, b.port, b.rack)

    def seen(self) -> list[SeenBroker]:
        with self._lock:
            return [self._seen[n] for n in sorted(self._seen)]

    def reachable(self) -> dict[int, bool]:
        """Probe every broker ever seen, in parallel (so at most one probe timeout)."""
        brokers = self.seen()
        answers = self._pool.map(lambda b: probe(b.host, b.port), brokers)
        return {b.node_id: ok for b, ok in zip(brokers, answers, strict=True)}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def scrape(url: str, timeout: float = SCRAPE_TIMEOUT_S) -> list[Metric]:
    """The metric families at a Prometheus text endpoint (OSError/ValueError if it fails)."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        text = answer.read().decode("utf-8")
    return list(text_string_to_metric_families(text))


def metrics_url(listener: str | None, broker_host: str) -> str | None:
    """``http://HOST:PORT/metrics`` from a broker's ``metrics.listener`` value (a wildcard
    host means the broker's own address)."""
    if not listener:
        return None
    host, sep, port = listener.rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = broker_host
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/metrics"


class BrokerMetrics:
    """Each broker's metrics endpoint (found with DescribeConfigs) and its scrapes."""

    def __init__(self, watch: BrokerWatch,
                 listener_of: Callable[[int], str | None]) -> None:
        self.watch = watch
        self._listener_of = listener_of  # broker id -> its metrics.listener config value
        self._urls: dict[int, str | None] = {}
        self._lock = threading.Lock()

    def url(self, broker: SeenBroker) -> str | None:
        with self._lock:
            if broker.node_id in self._urls:
                return self._urls[broker.node_id]
        try:
            url = metrics_url(self._listener_of(broker.node_id), broker.host)
        except Exception:  # the broker is down or refuses: try again next time
            return None
        with self._lock:
            self._urls[broker.node_id] = url
        return url

    def _scrape(self, broker: SeenBroker) -> list[Metric] | None:
        url = self.url(broker)
        if url is None:
            return None
        try:
            families = scrape(url)
        except (OSError, ValueError):
            with self._lock:  # it may have restarted on another port
                self._urls.pop(broker.node_id, None)
            return None
        return families

    def scrape_all(self) -> dict[int, list[Metric]]:
        """Families per broker id, for the brokers whose metrics answered."""
        found: dict[int, list[Metric]] = {}
        for broker in self.watch.seen():
            families = self._scrape(broker)
            if families is not None:
                found[broker.node_id] = families
        return found


def topic_counters(families: list[Metric]) -> dict[str, dict[str, float]]:
    """topic -> {"messages_in", "bytes_in", "bytes_out"} counter values of one scrape."""
    out: dict[str, dict[str, float]] = {}
    for family in families:
        field = TOPIC_COUNTERS.get(family.name)
        if field is None:
            continue
        for sample in family.samples:
            topic = sample.labels.get("topic")
            if topic is not None and sample.name.endswith("_total"):
                out.setdefault(topic, {})[field] = sample.value
    return out


class ThroughputSeries(TypedDict):
    """``GET /api/metrics/throughput``: each topic's points, one per scrape."""

    interval_ms: int
    #: topic -> [{"t_ms", "messages_in_per_s", ...}] (a rate is None when unknown)
    topics: dict[str, list[dict[str, float | None]]]


class ThroughputSampler:
    """Scrapes every broker every ``interval`` seconds in a thread of its own and keeps
    ``window`` seconds of per-topic rates, summed over brokers.

    Rates come from the brokers' counters (a counter that went down means the broker
    restarted: its new value is the increase, as Prometheus' ``rate()`` reads it).
    Brokers count records in (``messagesin``) but only bytes out, as Kafka's
    BrokerTopicMetrics do, so messages out per second is an estimate: bytes out per
    second divided by the topic's mean record size in (bytes in / messages in).
    """

    def __init__(self, metrics: BrokerMetrics, interval: float = 2.0,
                 window: float = 300.0, refresh: Callable[[], None] | None = None) -> None:
        self.metrics = metrics
        self._refresh = refresh  # learns the brokers (Metadata) before each scrape
        self.interval = interval
        self._points: deque[tuple[int, dict[str, dict[str, float | None]]]] = deque(
            maxlen=max(2, int(window / interval)))
        self._last: dict[int, dict[str, dict[str, float]]] = {}
        self._last_time: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="console-throughput")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
            except Exception:  # a bad scrape must not end the sampling
                pass
            self._stop.wait(max(0.1, self.interval - (time.monotonic() - started)))

    def sample(self) -> None:
        if self._refresh is not None:
            try:
                self._refresh()
            except Exception:  # the brokers seen before are scraped all the same
                pass
        now = time.monotonic()
        scraped = {broker: topic_counters(families)
                   for broker, families in self.metrics.scrape_all().items()}
        with self._lock:
            if self._last_time is not None and now > self._last_time:
                elapsed = now - self._last_time
                rates: dict[str, dict[str, float]] = {}
                totals: dict[str, dict[str, float]] = {}
                for broker, topics in scraped.items():
                    before = self._last.get(broker, {})
                    for topic, counters in topics.items():
                        rate = rates.setdefault(topic, {k: 0.0 for k in TOPIC_COUNTERS.values()})
                        total = totals.setdefault(topic, {"messages_in": 0.0, "bytes_in": 0.0})
                        for field, value in counters.items():
                            previous = before.get(topic, {}).get(field, 0.0)
                            increase = value - previous if value >= previous else value
                            rate[field] += increase / elapsed
                            if field in total:
                                total[field] += value
                point: dict[str, dict[str, float | None]] = {}
                for topic, rate in rates.items():
                    total = totals[topic]
                    mean_size = (total["bytes_in"] / total["messages_in"]
                                 if total["messages_in"] else None)
                    point[topic] = {
                        "messages_in_per_s": round(rate["messages_in"], 3),
                        "messages_out_per_s": (round(rate["bytes_out"] / mean_size, 3)
                                               if mean_size else
                                               (0.0 if not rate["bytes_out"] else None)),
                        "bytes_in_per_s": round(rate["bytes_in"], 3),
                        "bytes_out_per_s": round(rate["bytes_out"], 3),
                    }
                self._points.append((int(time.time() * 1000), point))
            self._last = scraped
            self._last_time = now

    def series(self) -> ThroughputSeries:
        """{"interval_ms", "topics": {topic: [{t_ms, messages_in_per_s, ...}]}}."""
        with self._lock:
            points = list(self._points)
        topics: dict[str, list[dict[str, float | None]]] = {}
        names = sorted({t for _, point in points for t in point})
        for t_ms, point in points:
            for topic in names:
                rates = point.get(topic, {"messages_in_per_s": 0.0, "messages_out_per_s": 0.0,
                                          "bytes_in_per_s": 0.0, "bytes_out_per_s": 0.0})
                topics.setdefault(topic, []).append({"t_ms": t_ms, **rates})
        return {"interval_ms": int(self.interval * 1000), "topics": topics}
