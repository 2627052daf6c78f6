"""``KafkaClient``: bootstrap, metadata, routing to leaders, retries with deadlines.

The layer every high-level API stands on. It knows which broker leads which
partition (from a ``ClusterMetadata`` cache), sends requests to the right
broker through the ``NetworkThread``, and offers ``call_with_retries`` for
operations that may meet retriable errors: after each retriable failure it
waits ``retry_backoff_ms`` (doubling up to a cap), refreshes metadata when the
error says the cache is stale, and gives up at the deadline with the last error.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from simplekafka.client.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    NoBrokersAvailableError,
    UnknownTopicOrPartitionError,
    error_for,
    needs_metadata_refresh,
)
from simplekafka.client.metadata import ClusterMetadata, ClusterSnapshot
from simplekafka.client.security import ClientSecurity
from simplekafka.client.transport import NetworkThread
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import MetadataRequest

T = TypeVar("T")
DEFAULT_PORT = 9092


def parse_bootstrap_servers(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` or ``["h1:9092", ...]`` -> ``[("h1", 9092), ...]``.

    Raises ``ValueError`` with the offending entry when one does not parse.
    """
    if isinstance(servers, str):
        entries = [s.strip() for s in servers.split(",")]
    else:
        entries = [str(s).strip() for s in servers]
    addresses = []
    for entry in entries:
        if not entry:
            continue
        host, sep, port_text = entry.rpartition(":")
        if not sep:
            host, port_text = entry, str(DEFAULT_PORT)
        host = host.strip("[]")
        if not host:
            raise ValueError(f"bad bootstrap server {entry!r}: no host")
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError(f"bad bootstrap server {entry!r}: port is not a number") from None
        if not 0 < port < 65536:
            raise ValueError(f"bad bootstrap server {entry!r}: port out of range")
        addresses.append((host, port))
    if not addresses:
        raise ValueError("no bootstrap servers given")
    return addresses


class Deadline:
    """A point in time an operation must finish by."""

    def __init__(self, timeout_s: float | None) -> None:
        self.at = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)

    def remaining(self, cap: float | None = None) -> float:
        """Seconds left (never negative); ``cap`` bounds it, and is used when there is no limit."""
        if self.at is None:
            return cap if cap is not None else 1e9
        left = max(0.0, self.at - time.monotonic())
        return left if cap is None else min(left, cap)

    @property
    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


def metadata_request(topics: list[str] | None, allow_auto_create: bool = False):
    """A Metadata request body factory (fields differ by version)."""

    def body(version: int) -> MetadataRequest:
        fields: MetadataRequest = {
            "topics": None if topics is None else [{"name": t} for t in topics]
        }
        if version >= 4:
            fields["allow_auto_topic_creation"] = allow_auto_create
        if version >= 8:
            fields["include_cluster_authorized_operations"] = False
            fields["include_topic_authorized_operations"] = False
        return fields

    return body


COORDINATOR_CONNECTIONS = 2**31 - 1
"""Node ids above half of this name a second connection to broker ``this - id``."""


def coordinator_connection(node_id: int) -> int:
    """The node id of a connection of its own to broker ``node_id``, for a group
    coordinator (as Kafka's consumer uses ``Integer.MAX_VALUE - id``): a JoinGroup that
    waits for a rebalance then holds up no Fetch to the same broker, since a broker
    answers one connection's requests in order."""
    return COORDINATOR_CONNECTIONS - node_id


class KafkaClient:
    """Connections to a cluster, its metadata, and request routing (thread-safe)."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str] = "localhost:9092",
        client_id: str = "simplekafka",
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        metadata_max_age_ms: int = 300_000,
        max_in_flight: int = 5,
        allow_auto_topic_creation: bool = False,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap_addresses = parse_bootstrap_servers(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.metadata = ClusterMetadata(metadata_max_age_ms)
        self._network = NetworkThread(
            client_id=client_id,
            max_in_flight=max_in_flight,
            connect_timeout=connect_timeout_ms / 1000,
            on_disconnect=self._on_disconnect,
            ssl_context=security.ssl_context if security is not None else None,
            sasl=security.sasl if security is not None else None,
        )
        self._refresh_lock = threading.Lock()
        self._bootstrap_cycle = itertools.cycle(range(len(self.bootstrap_addresses)))
        self._closed = False

    # ----- sending ---------------------------------------------------------------

    def address_of(self, node_id: int) -> tuple[str, int]:
        """Where broker ``node_id`` listens (negative ids are bootstrap servers)."""
        if node_id < 0:
            return self.bootstrap_addresses[(-node_id - 1) % len(self.bootstrap_addresses)]
        if node_id > COORDINATOR_CONNECTIONS // 2:
            node_id = COORDINATOR_CONNECTIONS - node_id
        broker = self.metadata.broker(node_id)
        if broker is None:
            raise LeaderNotAvailableError(f"broker {node_id} is not in the cluster metadata")
        return broker.address

    def send(
        self,
        node_id: int,
        api_key: ApiKey,
        body: object,
        expect_response: bool = True,
        timeout_ms: int | None = None,
    ) -> Future:
        """Send a request to ``node_id``; the future's result is the response body.

        ``body`` may be a callable taking the negotiated version. The future fails
        with a ``KafkaError`` (connection, timeout); broker error codes inside
        the body are the caller's to read.
        """
        if self._closed:
            raise ClientClosedError("the client is closed")
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        return self._network.submit(
            node_id, self.address_of(node_id), api_key, body, timeout, expect_response
        )

    def request(
        self, node_id: int, api_key: ApiKey, body: object, timeout_ms: int | None = None
    ) -> Struct:
        """``send`` and wait for the answer; raises the future's error."""
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        future = self.send(node_id, api_key, body, timeout_ms=int(timeout * 1000))
        return wait_for(future, timeout + 1.0)

    def least_loaded_node(self) -> int:
        """A broker with the fewest requests pending (a bootstrap server if none known)."""
        brokers = list(self.metadata.brokers)
        if brokers:
            return min(brokers, key=lambda n: (self._network.pending_count(n), n))
        return -1 - next(self._bootstrap_cycle)

    def negotiated_versions(self, node_id: int) -> dict[ApiKey, int]:
        """The version each API is sent at to ``node_id`` (empty until connected)."""
        return self._network.negotiated_versions(node_id)

    def pending_count(self, node_id: int) -> int:
        return self._network.pending_count(node_id)

    def _on_disconnect(self, node_id: int, error: BaseException) -> None:
        if not isinstance(error, ClientClosedError):
            self.metadata.request_update()

    # ----- metadata --------------------------------------------------------------

    def refresh_metadata(
        self, topics: list[str] | None = None, timeout_ms: int | None = None
    ) -> ClusterSnapshot:
        """Ask a broker for metadata (all topics if ``topics`` is None) and cache it.

        Tries known brokers, then the bootstrap servers, until one answers or the
        timeout passes (``NoBrokersAvailableError`` naming the last failure).
        """
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        deadline = Deadline(timeout / 1000)
        with self._refresh_lock:
            candidates = self._metadata_candidates()
            last_error: BaseException | None = None
            attempt = 0
            while True:
                node_id = candidates[attempt % len(candidates)]
                attempt += 1
                try:
                    body = self.request(
                        node_id,
                        ApiKey.METADATA,
                        metadata_request(topics, self.allow_auto_topic_creation),
                        timeout_ms=max(1, int(deadline.remaining(timeout / 1000) * 1000)),
                    )
                except KafkaError as exc:
                    last_error = exc
                    if not exc.retriable and not isinstance(exc, KafkaConnectionError):
                        raise
                    if deadline.expired:
                        break
                    if attempt % len(candidates) == 0:
                        time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))
                    continue
                if topics is None:
                    return self.metadata.replace(body)
                return self.metadata.update(body)
        servers = ", ".join(f"{h}:{p}" for h, p in self.bootstrap_addresses)
        raise NoBrokersAvailableError(
            f"no broker answered within {timeout} ms (bootstrap servers: {servers}); "
            f"last error: {last_error}"
        )

    def _metadata_candidates(self) -> list[int]:
        known = sorted(self.metadata.brokers, key=lambda n: (self._network.pending_count(n), n))
        bootstrap = [-1 - i for i in range(len(self.bootstrap_addresses))]
        return known + bootstrap

    def ensure_metadata(self, timeout_ms: int | None = None) -> ClusterSnapshot:
        """Refresh the cache if it is stale or too old; return it."""
        if self.metadata.needs_update():
            return self.refresh_metadata(None, timeout_ms)
        return self.metadata.snapshot

    def partitions_for(self, topic: str, timeout_ms: int | None = None) -> list[int]:
        """The partitions of ``topic``; waits for it to appear until the timeout.

        Raises ``UnknownTopicOrPartitionError`` if the topic still does not exist,
        ``NoBrokersAvailableError`` if no broker could be asked at all.
        """
        deadline = Deadline((self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000)
        self.metadata.want_topics([topic])
        asked = False
        while True:
            partitions = self.metadata.partitions_for(topic)
            if partitions is not None and (asked or not self.metadata.needs_update()):
                return partitions
            if asked and deadline.expired:
                topic_meta = self.metadata.topic(topic)
                if topic_meta is not None and topic_meta.error_code:
                    raise error_for(topic_meta.error_code, f"topic {topic!r}")
                raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
            if asked:
                time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))
            try:
                self.refresh_metadata(None, self._refresh_budget(deadline))
            except NoBrokersAvailableError:
                if not asked:
                    raise
            asked = True

    def _refresh_budget(self, deadline: Deadline) -> int:
        """Milliseconds for one metadata refresh: what is left, but never uselessly little."""
        return max(200, int(deadline.remaining() * 1000))

    def leader_for(self, topic: str, partition: int, timeout_ms: int | None = None) -> int:
        """The node id leading ``topic``/``partition``; refreshes and waits while it has none."""
        deadline = Deadline((self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000)
        asked = False
        while True:
            if self.metadata.needs_update() or asked:
                try:
                    self.refresh_metadata(None, self._refresh_budget(deadline))
                except NoBrokersAvailableError:
                    if not asked:
                        raise
            leader = self.metadata.leader_for(topic, partition)
            if leader is not None and self.metadata.broker(leader) is not None:
                return leader
            if deadline.expired:
                partitions = self.metadata.partitions_for(topic)
                if partitions is None:
                    raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
                if partition not in partitions:
                    raise UnknownTopicOrPartitionError(
                        f"topic {topic!r} has no partition {partition}"
                    )
                raise LeaderNotAvailableError(f"{topic}-{partition} has no leader")
            asked = True
            time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))

    def controller_id(self, timeout_ms: int | None = None) -> int:
        """The controller's node id (admin requests go there)."""
        snapshot = self.ensure_metadata(timeout_ms)
        if snapshot.controller_id < 0 or snapshot.controller_id not in snapshot.brokers:
            snapshot = self.refresh_metadata(None, timeout_ms)
        if snapshot.controller_id < 0:
            raise error_for(ErrorCode.NOT_CONTROLLER, "the cluster has no controller right now")
        return snapshot.controller_id

    # ----- retries ---------------------------------------------------------------

    def call_with_retries(
        self,
        operation: Callable[[Deadline], T],
        timeout_ms: int | None = None,
        retries: int | None = None,
    ) -> T:
        """Run ``operation(deadline)``; on a retriable ``KafkaError``, back off and run it again.

        Refreshes metadata first when the error says the cache is stale. Stops at
        the deadline or after ``retries`` retries, raising the last error.
        """
        deadline = Deadline((self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000)
        backoff = self.retry_backoff_ms / 1000
        attempt = 0
        while True:
            try:
                return operation(deadline)
            except KafkaError as exc:
                attempt += 1
                out_of_retries = retries is not None and attempt > retries
                if not exc.retriable or deadline.expired or out_of_retries:
                    raise
                if needs_metadata_refresh(exc):
                    self.metadata.request_update()
                time.sleep(deadline.remaining(backoff))
                backoff = min(backoff * 2, self.retry_backoff_max_ms / 1000)
                if self.metadata.needs_update():
                    try:
                        self.refresh_metadata(None, max(1, int(deadline.remaining() * 1000)))
                    except KafkaError:
                        if deadline.expired:
                            raise exc from None

    # ----- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Close every connection and stop the I/O thread."""
        if not self._closed:
            self._closed = True
            self._network.close()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def wait_for(future: Future[T], timeout: float) -> T:
    """The future's result, or ``KafkaTimeoutError`` after ``timeout`` seconds."""
    try:
        return future.result(timeout)
    except FutureTimeout:
        future.cancel()
        raise KafkaTimeoutError(f"no answer within {timeout:.1f} s") from None
