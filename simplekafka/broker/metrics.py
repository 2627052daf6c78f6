"""Prometheus metrics and a health check for one broker (``metrics.listener=HOST:PORT``).

Names follow what the Prometheus JMX exporter makes of Kafka's MBeans
(``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T`` becomes
``kafka_server_brokertopicmetrics_messagesin_total{topic="T"}``; the all-topics
MBean has no topic label), so dashboards and alerts written for Kafka mostly
work. Latency is a histogram (``..._totaltimems_bucket``) rather than the JMX
exporter's precomputed quantiles, so Prometheus can aggregate it across brokers.

Off the hot path: the hooks only add to plain ints in dicts (no locks, no
label lookups); counting a produced batch uses the offsets the append already
assigned, never its records. Everything else (partition and leader counts,
under-replicated and offline partitions, log sizes, groups) is read from the
broker's state when Prometheus scrapes, on the reactor thread, so it is
consistent with what the broker serves.
"""

from __future__ import annotations

import bisect
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from twisted.web import resource, server

from simplekafka.broker.client_quotas import ClientQuotas
from simplekafka.broker.fetch_session import FetchSessionCache
from simplekafka.broker.gc_pauses import BUCKETS as GC_BUCKETS
from simplekafka.broker.gc_pauses import GcPauses
from simplekafka.broker.socket_writer import SendCounts
from simplekafka.json_values import JsonObject
from simplekafka.protocol.api import ApiKey

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from twisted.internet.defer import Deferred
    from twisted.web.server import Request

    from simplekafka.broker.collaborators import ListeningPort, ServingReactor
    from simplekafka.broker.config import BrokerConfig
    from simplekafka.broker.group.coordinator import GroupCoordinator
    from simplekafka.broker.metadata_cache import MetadataCache
    from simplekafka.broker.replica_manager import ReplicaManager
    from simplekafka.broker.replication_quota import ReplicationThrottle
    from simplekafka.protocol.message_types import FetchResponse

log = logging.getLogger(__name__)

#: Request latency buckets, in milliseconds (Kafka reports request times in ms).
LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
_REQUEST_NAMES = {int(k): "".join(w.capitalize() for w in k.name.split("_")) for k in ApiKey}
_perf_counter = time.perf_counter
_bucket_of = bisect.bisect_left


class RequestTimes:
    """One request type's count and latency histogram: what each request adds to, found
    with one dict probe (was three dicts, each looked up per request)."""

    __slots__ = ("buckets", "count", "sum_ms")

    def __init__(self) -> None:
        self.count = 0
        self.sum_ms = 0.0
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)  # the last: over the largest


def parse_listener(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); raises ValueError naming what is wrong."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"metrics.listener {text!r} is not HOST:PORT")
    return host.strip("[]"), int(port_text)


class ScrapedBroker(Protocol):
    """What a scrape reads from the broker (``KafkaBroker``). Its optional parts (the
    listeners' factories, client quotas, fetch sessions, ApiVersions' client software) are
    found with ``getattr``, so a unit test's broker may leave them out."""

    @property
    def broker_id(self) -> int: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def reactor(self) -> ServingReactor: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def shutting_down(self) -> bool: ...

    @property
    def ready(self) -> bool: ...

    @property
    def is_controller(self) -> bool: ...

    @property
    def zk(self) -> KazooClient: ...

    @property
    def replica_manager(self) -> ReplicaManager: ...

    @property
    def metadata_cache(self) -> MetadataCache: ...

    @property
    def group_coordinator(self) -> GroupCoordinator: ...

    @property
    def leader_throttle(self) -> ReplicationThrottle: ...

    @property
    def follower_throttle(self) -> ReplicationThrottle: ...


class TimedDispatcher(Protocol):
    """The request dispatcher's hook for each answered request (``RequestDispatcher``)."""

    on_answered: Callable[[int, int, float], None] | None


class BrokerMetrics:
    """The counters the hooks feed, and what a scrape reads from the broker."""

    def __init__(self, broker: ScrapedBroker) -> None:
        self.broker = broker
        self.messages_in: dict[str, int] = defaultdict(int)
        self.bytes_in: dict[str, int] = defaultdict(int)
        self.bytes_out: dict[str, int] = defaultdict(int)
        self.request_times: dict[int, RequestTimes] = {}  # by api key
        # Requests by (api key, version), as Kafka's RequestsPerSec{request,version}: which
        # versions the clients chose.
        self.request_versions: dict[tuple[int, int], int] = defaultdict(int)
        # Consumer fetches by the role this broker had for the partition (KIP-392: a
        # follower serves consumers in its rack), and the leader's redirects to one.
        self.consumer_fetch_bytes = {"leader": 0, "follower": 0}
        self.preferred_read_replica_answers = 0
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.gc_pauses = GcPauses().install()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        ProcessCollector(registry=self.registry)
        self.port: ListeningPort | None = None

    # -- hooks (called on the reactor thread while serving) -----------------------------

    def on_append(self, topic: str, records: int, size: int) -> None:
        """A client's batch was appended at its leader (duplicates excluded)."""
        self.messages_in[topic] += records
        self.bytes_in[topic] += size

    def on_isr_change(self, why: str) -> None:
        if why == "shrink":
            self.isr_shrinks += 1
        else:
            self.isr_expands += 1

    def on_fetch_answer(self, body: FetchResponse) -> FetchResponse:
        """A consumer's Fetch answer leaves: count its record bytes per topic."""
        replicas = self.broker.replica_manager
        for topic in body["responses"]:
            size = 0
            for answer in topic["partitions"]:
                records = len(answer["records"] or b"")
                if answer["preferred_read_replica"] >= 0:
                    self.preferred_read_replica_answers += 1
                if records:
                    size += records
                    local = replicas.get_partition(topic["topic"], answer["partition_index"])
                    role = "follower" if local is not None and not local.is_leader \
                        else "leader"
                    self.consumer_fetch_bytes[role] += records
            if size:
                self.bytes_out[topic["topic"]] += size
        return body

    def on_request(self, api_key: int, api_version: int, started: float) -> None:
        elapsed_ms = (_perf_counter() - started) * 1000
        self.request_versions[(api_key, api_version)] += 1
        times = self.request_times.get(api_key)
        if times is None:
            times = self.request_times[api_key] = RequestTimes()
        times.count += 1
        times.sum_ms += elapsed_ms
        times.buckets[_bucket_of(LATENCY_BUCKETS_MS, elapsed_ms)] += 1


    def time_requests(self, dispatcher: TimedDispatcher) -> None:
        """Count and time every request the dispatcher handles: it tells ``on_request``
        as it answers (a hook, not a wrapper: no layer and no callback of its own)."""
        dispatcher.on_answered = self.on_request

    # -- the scrape -----------------------------------------------------------------------

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Metric]:
        yield from self._gc_pauses()
        yield from self._topic_counters()
        yield from self._consumer_fetches()
        yield from self._request_metrics()
        yield from self._socket_sends()
        yield from self._replica_manager()
        yield from self._replication_throttles()
        yield from self._client_quotas()
        yield from self._fetch_sessions()
        yield from self._controller()
        yield from self._logs()
        yield from self._groups()
        yield from self._client_software()

    def _topic_counters(self) -> Iterator[Metric]:
        for name, per_topic, doc in (
                ("messagesin", self.messages_in, "Records appended by clients"),
                ("bytesin", self.bytes_in, "Bytes of record batches appended by clients"),
                ("bytesout", self.bytes_out, "Record bytes sent to consumers")):
            metric = Metric(f"kafka_server_brokertopicmetrics_{name}", doc, "counter")
            metric.add_sample(metric.name + "_total", {}, sum(per_topic.values()))
            for topic, value in sorted(per_topic.items()):
                metric.add_sample(metric.name + "_total", {"topic": topic}, value)
            yield metric

    def _consumer_fetches(self) -> Iterator[Metric]:
        served = Metric("kafka_server_consumerfetch_bytes",
                        "Record bytes sent to consumers, by this broker's role for the "
                        "partition (a follower serves consumers in its rack, KIP-392)",
                        "counter")
        for role, value in sorted(self.consumer_fetch_bytes.items()):
            served.add_sample(served.name + "_total", {"role": role}, value)
        yield served
        redirects = Metric("kafka_server_consumerfetch_preferredreadreplica",
                           "Fetch answers naming a preferred read replica", "counter")
        redirects.add_sample(redirects.name + "_total", {}, self.preferred_read_replica_answers)
        yield redirects

    def _gc_pauses(self) -> Iterator[Metric]:
        pauses = self.gc_pauses
        metric = Metric("python_gc_pause_seconds",
                        "Garbage collections and how long each stopped the broker, by "
                        "generation", "histogram")
        for generation in range(3):
            labels = {"generation": str(generation)}
            cumulative = 0
            for bound, count in zip(GC_BUCKETS, pauses.counts[generation], strict=False):
                cumulative += count
                metric.add_sample(metric.name + "_bucket", {**labels, "le": str(bound)},
                                  cumulative)
            metric.add_sample(metric.name + "_bucket", {**labels, "le": "+Inf"},
                              pauses.total(generation))
            metric.add_sample(metric.name + "_count", labels, pauses.total(generation))
            metric.add_sample(metric.name + "_sum", labels, pauses.seconds[generation])
        yield metric
        longest = Metric("python_gc_pause_max_seconds", "The longest collection so far",
                         "gauge")
        longest.add_sample(longest.name, {}, pauses.longest)
        yield longest

    def _request_metrics(self) -> Iterator[Metric]:
        requests = Metric("kafka_network_requestmetrics_requests",
                          "Requests handled, by request type and version", "counter")
        latency = Metric("kafka_network_requestmetrics_totaltimems",
                         "Time from a request's arrival to its answer, in ms", "histogram")
        for (api_key, version), count in sorted(self.request_versions.items()):
            requests.add_sample(requests.name + "_total", {
                "request": _REQUEST_NAMES.get(api_key, str(api_key)),
                "version": str(version)}, count)
        for api_key, times in sorted(self.request_times.items()):
            labels = {"request": _REQUEST_NAMES.get(api_key, str(api_key))}
            count = times.count
            cumulative = 0
            for bound, in_bucket in zip(LATENCY_BUCKETS_MS, times.buckets, strict=False):
                cumulative += in_bucket
                latency.add_sample(latency.name + "_bucket", {**labels, "le": str(bound)},
                                   cumulative)
            latency.add_sample(latency.name + "_bucket", {**labels, "le": "+Inf"}, count)
            latency.add_sample(latency.name + "_count", labels, count)
            latency.add_sample(latency.name + "_sum", labels, times.sum_ms)
        yield requests
        yield latency

    def _socket_sends(self) -> Iterator[Metric]:
        """How answers left (server.py, socket_writer.py): whole in one send at once, or
        (partly) through Twisted's buffer at the reactor's next poll; and the fetched
        record bytes sent by sendfile (zero-copy) or read into Python."""
        metric = Metric("kafka_network_socket_sends",
                        "Response writes on client listeners: sent whole at once (direct) "
                        "or left, at least partly, to the reactor's next poll (buffered)",
                        "counter")
        factories: Mapping[str, object] = getattr(self.broker, "factories", {})
        sends = [counts for counts in (getattr(f, "sends", None) for f in factories.values())
                 if isinstance(counts, SendCounts)]
        for path in ("direct", "buffered"):
            metric.add_sample(metric.name + "_total", {"path": path},
                              sum(getattr(counts, path) for counts in sends))
        yield metric
        records = Metric("kafka_network_fetch_record_bytes",
                         "Fetched record bytes sent from segment files: by sendfile, page "
                         "cache to socket (zero_copy), or read into Python first (copied: "
                         "TLS, a full socket's bridge)", "counter")
        for path, field in (("zero_copy", "sendfile_bytes"), ("copied", "region_copied_bytes")):
            records.add_sample(records.name + "_total", {"path": path},
                               sum(getattr(counts, field) for counts in sends))
        yield records

    def _replica_manager(self) -> Iterator[Metric]:
        partitions = self.broker.replica_manager.partitions.values()
        leaders = [p for p in partitions if p.is_leader]
        under = sum(1 for p in leaders if len(p.isr) < len(p.replicas))
        prefix = "kafka_server_replicamanager_"
        for name, value, doc in (
                ("partitioncount", len(partitions), "Partitions with a replica here"),
                ("leadercount", len(leaders), "Partitions this broker leads"),
                ("underreplicatedpartitions", under,
                 "Partitions led here whose ISR is smaller than their replica set"),
                ("offlinereplicacount", len(self.broker.replica_manager.offline_partitions),
                 "Replicas whose log could not be opened (out of descriptors, a disk "
                 "error): answered KAFKA_STORAGE_ERROR")):
            metric = Metric(prefix + name, doc, "gauge")
            metric.add_sample(prefix + name, {}, value)
            yield metric
        for name, value, doc in (("isrshrinks", self.isr_shrinks, "ISR shrinks written"),
                                 ("isrexpands", self.isr_expands, "ISR expands written")):
            metric = Metric(prefix + name, doc, "counter")
            metric.add_sample(prefix + name + "_total", {}, value)
            yield metric

    def _client_quotas(self) -> Iterator[Metric]:
        """Per user and client id, as Kafka's Produce/Fetch/Request quota MBeans: the rate
        measured for the quota, its bound, and the throttle time handed out."""
        quotas = getattr(self.broker, "client_quotas", None)
        if not isinstance(quotas, ClientQuotas):
            return
        now_ms = quotas.clock() * 1000
        for kind, manager, rate_name in (("produce", quotas.produce, "byte_rate"),
                                         ("fetch", quotas.fetch, "byte_rate"),
                                         ("request", quotas.request, "request_time")):
            rate = Metric(f"kafka_server_{kind}_{rate_name}",
                          f"{manager.key} measured over the quota window, per user and "
                          "client id", "gauge")
            bound = Metric(f"kafka_server_{kind}_quota", f"{manager.key} in force", "gauge")
            throttle = Metric(f"kafka_server_{kind}_throttle_time_ms",
                              "Throttle time handed out (ms)", "counter")
            for (user, client_id), sensor in list(manager.sensors.items()):
                labels = {"user": user, "client_id": client_id}
                rate.add_sample(rate.name, labels, sensor.rate.measure(now_ms))
                limit = manager.quota_limit((user, client_id))
                if limit is not None:
                    bound.add_sample(bound.name, labels, limit)
                throttle.add_sample(throttle.name + "_total", labels, sensor.throttle_ms_total)
            yield from (rate, bound, throttle)

    def _replication_throttles(self) -> Iterator[Metric]:
        """Kafka's LeaderReplication / FollowerReplication quotas: bytes counted against
        them (moving replicas outside the ISR) and the rate in force."""
        counted = Metric("kafka_server_replication_throttledbytes",
                         "Bytes of throttled replication (moving replicas outside the ISR) "
                         "sent as leader or fetched as follower", "counter")
        rate = Metric("kafka_server_replication_throttledrate",
                      "leader/follower.replication.throttled.rate in force (bytes/s)", "gauge")
        for side, throttle in (("leader", self.broker.leader_throttle),
                               ("follower", self.broker.follower_throttle)):
            counted.add_sample(counted.name + "_total", {"side": side}, throttle.quota.recorded)
            rate.add_sample(rate.name, {"side": side}, throttle.quota.rate)
        yield counted
        yield rate

    def _fetch_sessions(self) -> Iterator[Metric]:
        sessions = getattr(getattr(self.broker, "fetch_handler", None), "sessions", None)
        if not isinstance(sessions, FetchSessionCache):
            return
        prefix = "kafka_server_fetchsessioncache_"
        count = Metric(prefix + "numincrementalfetchsessions",
                       "Fetch sessions (KIP-227) held", "gauge")
        count.add_sample(count.name, {}, len(sessions))
        yield count
        partitions = Metric(prefix + "numincrementalfetchpartitionscached",
                            "Partitions in all fetch sessions", "gauge")
        partitions.add_sample(partitions.name, {},
                              sum(len(s.partitions) for s in sessions.sessions.values()))
        yield partitions
        evictions = Metric(prefix + "incrementalfetchsessionevictions",
                           "Idle fetch sessions evicted to make room", "counter")
        evictions.add_sample(evictions.name + "_total", {}, sessions.evictions)
        yield evictions

    def _controller(self) -> Iterator[Metric]:
        active = 1 if self.broker.is_controller else 0
        offline = 0
        if active:  # as in Kafka, only the active controller reports offline partitions
            cache = self.broker.metadata_cache
            offline = sum(1 for partitions in cache.topics.values()
                          for p in partitions.values()
                          if p.leader == -1 or (p.leader >= 0 and p.leader not in cache.brokers))
        prefix = "kafka_controller_kafkacontroller_"
        for name, value, doc in (
                ("activecontrollercount", active, "1 on the active controller, else 0"),
                ("offlinepartitionscount", offline, "Partitions without a live leader")):
            metric = Metric(prefix + name, doc, "gauge")
            metric.add_sample(prefix + name, {}, value)
            yield metric

    def _logs(self) -> Iterator[Metric]:
        metric = Metric("kafka_log_log_size", "Bytes of a local replica's log", "gauge")
        for (topic, index), partition in sorted(self.broker.replica_manager.partitions.items()):
            try:
                size = partition.log.size
            except Exception:  # a log closed under us (deleted topic): skip it this time
                continue
            metric.add_sample(metric.name, {"topic": topic, "partition": str(index)}, size)
        yield metric

    def _client_software(self) -> Iterator[Metric]:
        """ApiVersions v3+ requests by the software the client named (KIP-511): which
        clients, at which versions, talk to this broker."""
        apis = getattr(self.broker, "apis", None)
        counts: Mapping[tuple[str, str], int] = getattr(
            getattr(apis, "api_versions", None), "client_software", {})
        metric = Metric("kafka_server_clientsoftware_apiversions",
                        "ApiVersions requests by client software name and version",
                        "counter")
        for (name, version), count in sorted(counts.items()):
            metric.add_sample(metric.name + "_total", {"client_software_name": name,
                                                       "client_software_version": version},
                              count)
        yield metric

    def _groups(self) -> Iterator[Metric]:
        groups = getattr(self.broker.group_coordinator, "groups", {})
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        metric = Metric(prefix + "numgroups", "Groups this broker coordinates", "gauge")
        metric.add_sample(prefix + "numgroups", {}, len(groups))
        yield metric
        by_state: dict[str, int] = defaultdict(int)
        for group in groups.values():
            by_state[str(getattr(group, "state", "unknown"))] += 1
        metric = Metric(prefix + "numgroupsbystate", "Coordinated groups by state", "gauge")
        for state, count in sorted(by_state.items()):
            metric.add_sample(prefix + "numgroupsbystate", {"state": state}, count)
        yield metric

    # -- health ---------------------------------------------------------------------------

    def health(self) -> tuple[int, JsonObject]:
        """(200, ...) while registered and serving; (503, reason) otherwise."""
        broker = self.broker
        if broker.stopping or broker.shutting_down:
            return 503, {"status": "unavailable", "reason": "shutting down"}
        zk = broker.zk
        if zk is None or not zk.connected:
            return 503, {"status": "unavailable", "reason": "no ZooKeeper session"}
        if not broker.ready or broker.broker_id not in broker.metadata_cache.brokers:
            return 503, {"status": "unavailable",
                         "reason": "not (yet) named live by the controller"}
        return 200, {"status": "ok", "broker_id": broker.broker_id,
                     "controller": broker.is_controller}

    # -- the listener ---------------------------------------------------------------------

    def listen(self, host: str, port: int) -> int:
        """Serve /metrics and /health on host:port (raises CannotListenError)."""
        site = server.Site(_MetricsResource(self))
        site.noisy = False
        self.port = self.broker.reactor.listenTCP(port, site, interface=host)
        bound = self.port.getHost().port
        log.info("metrics on http://%s:%d/metrics", host or "0.0.0.0", bound)
        return bound

    def stop(self) -> Deferred[None] | None:
        self.gc_pauses.uninstall()
        if self.port is not None:
            port, self.port = self.port, None
            return port.stopListening()
        return None


class _MetricsResource(resource.Resource):
    isLeaf = True

    def __init__(self, metrics: BrokerMetrics) -> None:
        super().__init__()
        self.metrics = metrics

    def render_GET(self, request: Request) -> bytes:
        if request.path == b"/metrics":
            request.setHeader(b"content-type", CONTENT_TYPE_LATEST.encode())
            return generate_latest(self.metrics.registry)
        if request.path == b"/health":
            status, body = self.metrics.health()
            request.setResponseCode(status)
            request.setHeader(b"content-type", b"application/json")
            return json.dumps(body).encode()
        request.setResponseCode(404)
        request.setHeader(b"content-type", b"application/json")
        return json.dumps({"error": "GET /metrics or /health"}).encode()


def install(broker: ScrapedBroker, dispatcher: TimedDispatcher) -> BrokerMetrics | None:
    """Metrics for ``broker`` if ``metrics.listener`` is set: hooks in, listener later (the
    Fetch handler's hook, ``on_fetch_answer``, the broker sets: the domain never imports
    the handlers)."""
    if broker.config.metrics_listener is None:
        return None
    metrics = BrokerMetrics(broker)
    broker.replica_manager.on_append = metrics.on_append
    broker.replica_manager.on_isr_change = metrics.on_isr_change
    metrics.time_requests(dispatcher)
    return metrics
