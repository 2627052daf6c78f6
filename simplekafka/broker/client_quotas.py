"""Client quotas: a client over its byte or request rate is slowed down, not refused.

Kafka's ClientQuotaManager and ClientRequestQuotaManager, per broker. Three
quota types, each configured per user, client id or both in ZooKeeper
(``coordination.client_quotas`` has the znodes and their precedence):

* ``producer_byte_rate``: bytes/s of Produce requests (the request's size);
* ``consumer_byte_rate``: bytes/s of Fetch answers to consumers (followers are
  governed by replication throttles instead);
* ``request_percentage``: the share of one request-handling thread a client
  may use, in percent (here: the reactor time its requests take).

Each client's usage is a :class:`SampledRate`, Kafka's ``Rate`` over
``quota.window.num`` samples of ``quota.window.size.seconds`` (11 of 1 s): the
total of the samples over the time they span, never less than ten windows. A
request is recorded first and checked after; if the rate is now over the
bound, the throttle time is how long the client must stay silent for the rate
to come back to it, ``(rate - bound) / bound * window`` (KIP-219). The broker
answers at once with that ``throttle_time_ms`` and stops reading the
connection for as long (a client that keeps sending gets nothing more
handled); for response versions older than KIP-219's the answer itself waits
out the throttle, as Kafka does. Which clients share one rate follows Kafka's
metric tags: a quota on ``/config/users/alice`` is shared by all of alice's
client ids, one on ``/config/clients/<default>`` gives every client id its own.

A consumer's Fetch answer that earns a throttle (by either quota) leaves
without its records, as Kafka's does: its bytes are unrecorded (they were not
sent), and each partition stays in the answer with its high watermark and
offsets and zero-length records, so a fetch session (KIP-227) is told what it
would have been told and the client asks again from the same offset once the
throttle is over. Fetches are capped at the quota's window (``max_bytes``), as
Kafka caps them, so one answer can never be far over it.

The interface the broker uses is small: ``ClientQuotas.update`` from a
``/config/changes`` notification, and ``before``/``after`` around each handler,
called by the dispatcher only while some quota is configured.
"""

from __future__ import annotations

import functools
import logging
import struct
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, cast

from twisted.internet import defer, task
from twisted.python.failure import Failure

from simplekafka.broker.fetch_messages import fetch_replica_id
from simplekafka.broker.server import KafkaConnection
from simplekafka.coordination.client_quotas import (
    CLIENTS,
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USERS,
    Entity,
    desanitize,
    entity_at,
    quota_values,
    sanitize,
)
from simplekafka.protocol.api import INTER_BROKER_KEYS, ApiKey
from simplekafka.protocol.messages import DecodedRequest, response_schema

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.dispatch import RequestContext
    from simplekafka.protocol.message_types import FetchRequest, FetchResponse

log = logging.getLogger(__name__)

# The first response version whose client throttles itself (KIP-219; Kafka's
# AbstractResponse.shouldClientThrottle). Older versions: the answer waits out the throttle.
CLIENT_THROTTLES_FROM: dict[int, int] = {
    ApiKey.PRODUCE: 6, ApiKey.FETCH: 8, ApiKey.LIST_OFFSETS: 3, ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4, ApiKey.OFFSET_FETCH: 4, ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 3, ApiKey.HEARTBEAT: 2, ApiKey.LEAVE_GROUP: 2, ApiKey.SYNC_GROUP: 2,
    ApiKey.DESCRIBE_GROUPS: 2, ApiKey.LIST_GROUPS: 2, ApiKey.API_VERSIONS: 2,
    ApiKey.CREATE_TOPICS: 3, ApiKey.DELETE_TOPICS: 2, ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1, ApiKey.ADD_PARTITIONS_TO_TXN: 1, ApiKey.ADD_OFFSETS_TO_TXN: 1,
    ApiKey.END_TXN: 1, ApiKey.TXN_OFFSET_COMMIT: 1, ApiKey.DESCRIBE_ACLS: 1,
    ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1, ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1, ApiKey.ALTER_REPLICA_LOG_DIRS: 1, ApiKey.DESCRIBE_LOG_DIRS: 1,
    ApiKey.CREATE_PARTITIONS: 1, ApiKey.DELETE_GROUPS: 1, ApiKey.ELECT_LEADERS: 0,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 0, ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0, ApiKey.OFFSET_DELETE: 0,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
}
# Never throttled by the request quota (Kafka: cluster actions and the SASL exchange).
EXEMPT_KEYS = frozenset({*INTER_BROKER_KEYS, ApiKey.WRITE_TXN_MARKERS, ApiKey.SASL_HANDSHAKE,
                         ApiKey.SASL_AUTHENTICATE})
_DEFAULT = "\x00<default>"  # an entity's default, in memory (a client id may be "<default>")
_USER_PREFIX = "User:"
_INT32 = struct.Struct(">i")


class SampledRate:
    """Kafka's ``Rate`` over a ``SampledTotal``: per-window totals, measured per second.

    A sample starts at the first record after the previous one is a window
    old; samples silent for ``samples`` windows are reset. The rate divides the
    total by the time from the oldest sample's start to now, but by no less
    than ``samples - 1`` windows, so a client's first burst is not measured
    over a few milliseconds.
    """

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int = 11, window_ms: int = 1000):
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[list[float]] = []  # [start_ms, last_event_ms, total]
        self._current = 0

    def record(self, value: float, now_ms: float) -> None:
        if not self._samples:
            self._samples.append([now_ms, now_ms, 0.0])
        sample = self._samples[self._current]
        if now_ms - sample[0] >= self.window_ms:
            # one sample more than counted: the one overlapping the window's start
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                self._samples.append([now_ms, now_ms, 0.0])
            else:
                self._samples[self._current][:] = [now_ms, now_ms, 0.0]
            sample = self._samples[self._current]
        sample[2] += value
        sample[1] = now_ms

    def _purge(self, now_ms: float) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample[1] >= expire:
                sample[:] = [now_ms, now_ms, 0.0]

    def total(self, now_ms: float) -> float:
        self._purge(now_ms)
        return sum(s[2] for s in self._samples)

    def window_size_ms(self, now_ms: float) -> float:
        """The time the rate is measured over (Kafka's ``Rate.windowSize``)."""
        self._purge(now_ms)
        oldest = min((s[0] for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1.0)

    def measure(self, now_ms: float) -> float:
        """Units per second."""
        total = self.total(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000.0)


def throttle_time_ms(rate: SampledRate, bound: float, now_ms: float) -> int:
    """How long a client over ``bound`` must stay silent for its rate to come back to it
    (0 if it is not over): Kafka's ``QuotaUtils.throttleTime``."""
    value = rate.measure(now_ms)
    if value <= bound:
        return 0
    return round((value - bound) / bound * rate.window_size_ms(now_ms))


class QuotaSensor:
    """One set of clients' usage of one quota type, and how often they were throttled."""

    __slots__ = ("rate", "recorded", "throttle_ms_total", "throttled")

    def __init__(self, samples: int, window_ms: int):
        self.rate = SampledRate(samples, window_ms)
        self.recorded = 0.0
        self.throttled = 0
        self.throttle_ms_total = 0


class ClientQuotaManager:
    """One quota type (``producer_byte_rate``, ...): the configured bounds and the sensors.

    Usage is tracked per metric tags (sanitized user, client id), either of which is
    "" when the quota that applies does not name it (Kafka's DefaultQuotaCallback).
    """

    def __init__(self, key: str, samples: int = 11, window_seconds: int = 1,
                 max_throttle_ms: int | None = None):
        self.key = key
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self.max_throttle_ms = max_throttle_ms
        self.overrides: dict[tuple[str | None, str | None], float] = {}
        self.sensors: dict[tuple[str, str], QuotaSensor] = {}
        self._tags: dict[tuple[str, str], tuple[str, str]] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.overrides)

    def update(self, entity: tuple[str | None, str | None], value: float | None) -> None:
        if value is None:
            self.overrides.pop(entity, None)
        else:
            self.overrides[entity] = value
        self._tags.clear()  # which entity applies may have changed for anyone

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Whose usage a request counts to: Kafka's precedence walk (see the znode list in
        ``coordination.client_quotas``)."""
        found = self._tags.get((user, client_id))
        if found is not None:
            return found
        o = self.overrides
        if (user, client_id) in o or (user, _DEFAULT) in o:
            tags = (user, client_id)
        elif (user, None) in o:
            tags = (user, "")
        elif (_DEFAULT, client_id) in o or (_DEFAULT, _DEFAULT) in o:
            tags = (user, client_id)
        elif (_DEFAULT, None) in o:
            tags = (user, "")
        else:
            tags = ("", client_id)
        self._tags[(user, client_id)] = tags
        return tags

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        user, client_id = tags
        o = self.overrides
        if user and client_id:
            candidates: list[tuple[str | None, str | None]] = [
                (user, client_id), (user, _DEFAULT), (_DEFAULT, client_id),
                (_DEFAULT, _DEFAULT)]
        elif user:
            candidates = [(user, None), (_DEFAULT, None)]
        elif client_id:
            candidates = [(None, client_id), (None, _DEFAULT)]
        else:
            return None
        for entity in candidates:
            if entity in o:
                return o[entity]
        return None

    def record(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Count ``value`` against the client's quota; the throttle time (ms) it earned."""
        tags = self.metric_tags(user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = self.sensors[tags] = QuotaSensor(self.samples, self.window_ms)
        sensor.rate.record(value, now_ms)
        sensor.recorded += value
        bound = self.quota_limit(tags)
        if bound is None:
            return 0
        throttle = throttle_time_ms(sensor.rate, bound, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        if throttle > 0:
            sensor.throttled += 1
            sensor.throttle_ms_total += throttle
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back ``value`` recorded but not sent (a throttled fetch answered empty)."""
        sensor = self.sensors.get(self.metric_tags(user, client_id))
        if sensor is not None:
            sensor.rate.record(-value, now_ms)
            sensor.recorded -= value

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most one request may record without being sure to be throttled (the fetch
        size cap): the bound times ``samples - 1`` windows."""
        bound = self.quota_limit(self.metric_tags(user, client_id))
        if bound is None:
            return None
        return bound * (self.samples - 1) * self.window_ms / 1000


@functools.lru_cache(maxsize=4096)
def user_of(principal: str) -> str:
    """The sanitized user name of a principal ("User:alice" -> "alice"); cached, as it is
    asked on every request while a quota is set and principals are few."""
    name = principal[len(_USER_PREFIX):] if principal.startswith(_USER_PREFIX) else principal
    return sanitize(name)


def _memory_entity(entity: Entity) -> tuple[str | None, str | None]:
    """A znode entity as the managers key it: user sanitized, client id as clients send it."""
    user, client = entity
    user = _DEFAULT if user == DEFAULT else user
    if client is not None:
        client = _DEFAULT if client == DEFAULT else desanitize(client)
    return user, client


def fetch_response_bytes(body: FetchResponse) -> int:
    """The record bytes of a Fetch answer (what ``consumer_byte_rate`` counts)."""
    size = 0
    for topic in body["responses"]:
        for partition in topic["partitions"]:
            records = partition["records"]
            if records:
                size += len(records)
    return size


def without_records(body: FetchResponse) -> None:
    """A throttled Fetch answer's records dropped (Kafka answers it empty): every partition
    stays, with its offsets, so a fetch session's view of it is unchanged."""
    for topic in body["responses"]:
        for partition in topic["partitions"]:
            if partition["records"]:
                partition["records"] = b""
                partition["aborted_transactions"] = []


def with_throttle_time(encoded: bytes | bytearray, api_key: int, api_version: int,
                       throttle: int) -> bytes | bytearray:
    """An answer encoded ahead (Metadata's cached one) with ``throttle_time_ms`` written in,
    where its schema starts with that field (as every answer that carries it does)."""
    fields = response_schema(api_key, api_version).fields
    if not fields or fields[0].name != "throttle_time_ms" or len(encoded) < 4:
        return encoded
    return _INT32.pack(throttle) + encoded[4:]


class ClientQuotas:
    """The broker's three quota managers, fed by config changes and by the dispatcher."""

    def __init__(self, reactor: Reactor, samples: int = 11, window_seconds: int = 1,
                 clock: Callable[[], float] = time.monotonic):
        self.reactor = reactor
        self.clock = clock
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, samples, window_seconds)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, samples, window_seconds)
        # Kafka bounds a request-quota throttle by one window.
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, samples, window_seconds,
                                          max_throttle_ms=window_seconds * 1000)
        self.managers = (self.produce, self.fetch, self.request)
        self.enabled = False
        self.muted_connections = 0  # connections muted right now (metrics)

    # -- configuration ------------------------------------------------------------------

    def update(self, entity_type: str, name: str, config: Mapping[str, str]) -> bool:
        """A changed ``users/...`` or ``clients/...`` entity; whether it was a quota-only
        entity (a ``users/<u>`` node also holds SCRAM credentials, for the caller)."""
        if entity_type not in (USERS, CLIENTS):
            return False
        entity = entity_at(entity_type, name)
        if entity is None:
            return False
        values = quota_values(config)
        memory = _memory_entity(entity)
        for manager in self.managers:
            manager.update(memory, values.get(manager.key))
        self.enabled = any(m.enabled for m in self.managers)
        if values:
            log.info("client quotas of %s/%s: %s", entity_type, name, values)
        return entity_type == CLIENTS or entity[1] is not None

    # -- around each request (the dispatcher calls these while ``enabled``) ----------------

    def before(self, context: RequestContext, request: DecodedRequest) -> None:
        """Cap a consumer's fetch at its quota's window, as Kafka does."""
        if context.api_key == ApiKey.FETCH and self.fetch.enabled:
            fetch = cast("FetchRequest", request)
            if fetch_replica_id(fetch) >= 0:
                return
            cap = self.fetch.max_value_in_window(user_of(context.principal),
                                                 context.client_id or "")
            if cap is not None and fetch["max_bytes"] > cap:
                fetch["max_bytes"] = max(int(cap), 1)

    def after(self, result: object, context: RequestContext, request: DecodedRequest,
              frame_size: int, started: float, connection: object) -> object:
        """The handler's result with ``throttle_time_ms`` set, the connection muted."""
        handled = time.perf_counter() - started
        if isinstance(result, defer.Deferred):
            return result.addCallback(self._throttle, context, request, frame_size, handled,
                                      connection)
        return self._throttle(result, context, request, frame_size, handled, connection)

    def _throttle(self, body: object, context: RequestContext, request: DecodedRequest,
                  frame_size: int, handled: float, connection: object) -> object:
        if isinstance(body, Failure) or context.api_key in EXEMPT_KEYS:
            return body
        api_key = context.api_key
        if api_key == ApiKey.FETCH and fetch_replica_id(cast("FetchRequest", request)) >= 0:
            return body  # a follower: replication throttles, not client quotas
        user = user_of(context.principal)
        client_id = context.client_id or ""
        now_ms = self.clock() * 1000
        bandwidth = fetched = 0
        if api_key == ApiKey.PRODUCE:
            bandwidth = self.produce.record(user, client_id, frame_size, now_ms)
        elif api_key == ApiKey.FETCH and isinstance(body, Mapping):
            # The API key says which answer it is: a Fetch answer.
            fetched = fetch_response_bytes(cast("FetchResponse", body))
            bandwidth = self.fetch.record(user, client_id, fetched, now_ms)
        requests = 0
        if not (api_key == ApiKey.PRODUCE and body is None):  # acks=0: Kafka skips it
            requests = self.request.record(user, client_id, handled * 100.0, now_ms)
        throttle = max(bandwidth, requests)
        if throttle <= 0:
            return body
        if fetched:  # a throttled fetch leaves empty, its bytes uncounted (Kafka's way)
            self.fetch.unrecord(user, client_id, fetched, now_ms)
            without_records(cast("FetchResponse", body))
        self.mute(connection, throttle / 1000.0)
        if body is None:
            return None
        if isinstance(body, dict):
            body["throttle_time_ms"] = throttle
        elif isinstance(body, bytes | bytearray):
            body = with_throttle_time(body, api_key, context.api_version, throttle)
        elif hasattr(body, "throttle_time_ms"):
            setattr(body, "throttle_time_ms", throttle)  # noqa: B010 (a Struct, any answer)
        if context.api_version < CLIENT_THROTTLES_FROM.get(api_key, 1 << 15):
            # an older client does not throttle itself: the answer waits out the throttle
            # The reactor is an IReactorTime through zope, which a Protocol cannot name.
            return task.deferLater(cast("IReactorTime", self.reactor), throttle / 1000.0,
                                   lambda: body)
        return body

    def mute(self, connection: object, seconds: float) -> None:
        """Read nothing more from ``connection`` for ``seconds`` (a longer mute wins); only a
        client's connection mutes (not the broker's own, nor a unit test's None)."""
        if not isinstance(connection, KafkaConnection):
            return
        until = self.clock() + seconds
        if connection.muted_until >= until:
            return
        connection.muted_until = until
        if not connection.muted:
            self.muted_connections += 1
            connection.mute()
            self.reactor.callLater(seconds, self._unmute, connection)

    def _unmute(self, connection: KafkaConnection) -> None:
        left = connection.muted_until - self.clock()
        if left > 0.0005:
            self.reactor.callLater(left, self._unmute, connection)
            return
        self.muted_connections -= 1
        connection.unmute()
