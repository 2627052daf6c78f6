"""Blocking-friendly I/O: one background thread runs every broker socket.

Callers on any thread ``submit()`` a request and get a
``concurrent.futures.Future``; a single daemon thread owns the sockets, a
``selectors`` loop and one ``ConnectionCore`` per broker. Nothing here needs an
event loop of the caller's, so it works the same in a script and in a Jupyter
kernel (which already runs an asyncio loop on its main thread).

Timeouts: a connection attempt has ``connect_timeout``; every request has a
deadline, and a request still unanswered at its deadline fails with
``KafkaTimeoutError`` and closes the connection (like the Java client: a broker
that does not answer cannot be trusted with the requests behind it either).
"""

from __future__ import annotations

import errno
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from simplekafka.client.connection import ConnectionCore, InFlightRequest, SaslCredentials
from simplekafka.client.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from simplekafka.protocol.api import ApiKey

_READ_CHUNK = 1024 * 1024
_TICK = 0.05


@dataclass
class _Pending:
    """What the I/O thread keeps per request: the caller's future and deadline."""

    future: Future
    deadline: float


def _pending(context: object) -> _Pending | None:
    """The transport's own token on a request (every request it sends carries one)."""
    return context if isinstance(context, _Pending) else None


@dataclass
class _Submission:
    node_id: int
    address: tuple[str, int]
    api_key: ApiKey
    body: object  # a request body (client.connection.Body)
    expect_response: bool
    pending: _Pending


@dataclass
class _BrokerSocket:
    """One broker connection as the I/O thread sees it."""

    node_id: int
    address: tuple[str, int]
    core: ConnectionCore
    sock: socket.socket
    connect_deadline: float
    connected: bool = False
    outbuf: bytearray = field(default_factory=bytearray)
    interest: int = 0
    # TLS: the handshake runs after the TCP connect; until it is done it says what it waits for.
    tls_wants: int = 0


class NetworkThread:
    """Owns all broker sockets; other threads talk to it through ``submit``."""

    def __init__(
        self,
        client_id: str = "simplekafka",
        max_in_flight: int = 5,
        connect_timeout: float = 10.0,
        on_disconnect: Callable[[int, BaseException], None] | None = None,
        socket_buffer_bytes: int = 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self.connect_timeout = connect_timeout
        self.on_disconnect = on_disconnect
        self.socket_buffer_bytes = socket_buffer_bytes
        self.ssl_context = ssl_context  # SSL / SASL_SSL listeners
        self.sasl = sasl  # SASL_PLAINTEXT / SASL_SSL listeners
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._submissions: list[_Submission] = []
        self._closing_nodes: list[int] = []
        self._connections: dict[int, _BrokerSocket] = {}
        self._in_flight_counts: dict[int, int] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="simplekafka-io", daemon=True)
        self._thread.start()

    # ----- any thread ----------------------------------------------------------

    def submit(
        self,
        node_id: int,
        address: tuple[str, int],
        api_key: ApiKey,
        body: object,
        timeout: float,
        expect_response: bool = True,
    ) -> Future:
        """Send a request to broker ``node_id`` at ``address``; the future gets the answer."""
        future: Future = Future()
        if self._closed:
            future.set_exception(ClientClosedError("the network thread is closed"))
            return future
        pending = _Pending(future, time.monotonic() + timeout)
        submission = _Submission(node_id, address, api_key, body, expect_response, pending)
        with self._lock:
            self._submissions.append(submission)
            self._in_flight_counts[node_id] = self._in_flight_counts.get(node_id, 0) + 1
        self._wake()
        return future

    def pending_count(self, node_id: int) -> int:
        """Requests submitted to ``node_id`` and not finished (a load measure)."""
        return self._in_flight_counts.get(node_id, 0)

    def is_connected(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return bool(conn and conn.connected and conn.core.ready)

    def negotiated_versions(self, node_id: int) -> dict[ApiKey, int]:
        """Per-API versions agreed with ``node_id`` (empty if not connected yet)."""
        conn = self._connections.get(node_id)
        if conn is None or not conn.core.ready:
            return {}
        versions = {}
        for key in conn.core.client_versions:
            try:
                versions[key] = conn.core.version_for(key)
            except KafkaError:
                continue
        return versions

    def disconnect(self, node_id: int) -> None:
        """Close the connection to ``node_id`` (requests on it fail, retriable)."""
        with self._lock:
            self._closing_nodes.append(node_id)
        self._wake()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread; everything unfinished fails with ``ClientClosedError``."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass

    # ----- the I/O thread --------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._closed:
                self._take_submissions()
                self._update_interest()
                for key, mask in self._selector.select(_TICK):
                    if key.data is None:
                        self._drain_wake()
                    else:
                        self._service(key.data, mask)
                self._expire(time.monotonic())
        finally:
            self._shutdown()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _take_submissions(self) -> None:
        with self._lock:
            submissions, self._submissions = self._submissions, []
            closing, self._closing_nodes = self._closing_nodes, []
        for node_id in closing:
            conn = self._connections.get(node_id)
            if conn is not None:
                self._close_connection(conn, KafkaConnectionError(f"disconnected from {node_id}"))
        for sub in submissions:
            conn = self._connections.get(sub.node_id)
            if conn is not None and conn.address != sub.address:
                self._close_connection(conn, KafkaConnectionError("broker address changed"))
                conn = None
            if conn is None:
                try:
                    conn = self._open(sub.node_id, sub.address)
                except OSError as exc:
                    self._finish(
                        sub.node_id,
                        sub.pending,
                        error=KafkaConnectionError(f"cannot connect to {_fmt(sub.address)}: {exc}"),
                    )
                    continue
            conn.core.send_request(sub.api_key, sub.body, sub.pending, sub.expect_response)
            self._collect_outgoing(conn)

    def _open(self, node_id: int, address: tuple[str, int]) -> _BrokerSocket:
        infos = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)
        family, _, _, _, sockaddr = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, self.socket_buffer_bytes)
            except OSError:
                pass
        code = sock.connect_ex(sockaddr)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            sock.close()
            raise OSError(code, errno.errorcode.get(code, str(code)))
        core = ConnectionCore(client_id=self.client_id, max_in_flight=self.max_in_flight,
                              sasl=self.sasl)
        conn = _BrokerSocket(
            node_id, address, core, sock, time.monotonic() + self.connect_timeout
        )
        conn.interest = selectors.EVENT_WRITE
        self._selector.register(sock, conn.interest, conn)
        self._connections[node_id] = conn
        return conn

    def _collect_outgoing(self, conn: _BrokerSocket) -> None:
        conn.outbuf += conn.core.data_to_send()
        for request, exc in conn.core.pop_failed():
            self._finish(conn.node_id, _pending(request.context), error=_as_kafka_error(exc))
        for request in conn.core.completed_without_response():
            self._finish(conn.node_id, _pending(request.context), result=None)

    def _update_interest(self) -> None:
        for conn in list(self._connections.values()):
            wanted = selectors.EVENT_READ
            if not conn.connected or conn.outbuf:
                wanted |= selectors.EVENT_WRITE
            if not conn.connected:
                wanted = selectors.EVENT_WRITE
            if conn.tls_wants:
                wanted = conn.tls_wants
            if wanted != conn.interest:
                conn.interest = wanted
                self._selector.modify(conn.sock, wanted, conn)

    def _service(self, conn: _BrokerSocket, mask: int) -> None:
        if self._connections.get(conn.node_id) is not conn:
            return
        try:
            if not conn.connected:
                code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    raise KafkaConnectionError(
                        f"cannot connect to broker {conn.node_id} at {_fmt(conn.address)}: "
                        f"{errno.errorcode.get(code, code)}"
                    )
                conn.connected = True
                if self.ssl_context is not None:
                    self._start_tls(conn)
                else:
                    self._collect_outgoing(conn)
            if conn.tls_wants:
                if not self._continue_tls(conn):
                    return
                self._collect_outgoing(conn)
            if mask & selectors.EVENT_READ:
                self._read(conn)
            if conn.outbuf and self._connections.get(conn.node_id) is conn:
                self._write(conn)
        except KafkaError as exc:
            self._close_connection(conn, exc)
        except OSError as exc:
            self._close_connection(
                conn, KafkaConnectionError(f"connection to {_fmt(conn.address)} failed: {exc}")
            )

    def _start_tls(self, conn: _BrokerSocket) -> None:
        assert self.ssl_context is not None
        self._selector.unregister(conn.sock)
        conn.sock = self.ssl_context.wrap_socket(conn.sock, server_hostname=conn.address[0],
                                                 do_handshake_on_connect=False)
        conn.interest = selectors.EVENT_WRITE
        self._selector.register(conn.sock, conn.interest, conn)
        conn.tls_wants = selectors.EVENT_WRITE

    def _continue_tls(self, conn: _BrokerSocket) -> bool:
        """One step of the TLS handshake; True once it is done."""
        try:
            conn.sock.do_handshake()  # type: ignore[attr-defined]
        except ssl.SSLWantReadError:
            conn.tls_wants = selectors.EVENT_READ
            return False
        except ssl.SSLWantWriteError:
            conn.tls_wants = selectors.EVENT_WRITE
            return False
        except ssl.SSLError as exc:
            raise KafkaConnectionError(
                f"TLS with broker {conn.node_id} at {_fmt(conn.address)} failed: {exc}") from None
        conn.tls_wants = 0
        return True

    def _read(self, conn: _BrokerSocket) -> None:
        while True:
            try:
                data = conn.sock.recv(_READ_CHUNK)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                return
            if not data:
                raise KafkaConnectionError(
                    f"broker {conn.node_id} at {_fmt(conn.address)} closed the connection"
                )
            for response in conn.core.receive_data(data):
                self._finish(conn.node_id, _pending(response.context), result=response.body)
            self._collect_outgoing(conn)
            # A TLS socket hands out one record per recv and may hold more already read.
            if len(data) < _READ_CHUNK and not (isinstance(conn.sock, ssl.SSLSocket)
                                                and conn.sock.pending()):
                return

    def _write(self, conn: _BrokerSocket) -> None:
        while conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                return
            del conn.outbuf[:sent]

    def _expire(self, now: float) -> None:
        for conn in list(self._connections.values()):
            if not conn.connected and now > conn.connect_deadline:
                self._close_connection(
                    conn,
                    KafkaTimeoutError(
                        f"connecting to broker {conn.node_id} at {_fmt(conn.address)} timed out"
                    ),
                )
                continue
            requests = conn.core.in_flight() + conn.core.waiting()
            if any((p := _pending(r.context)) is not None and now > p.deadline
                   for r in requests):
                self._close_connection(
                    conn,
                    KafkaTimeoutError(
                        f"broker {conn.node_id} at {_fmt(conn.address)} did not answer in time"
                    ),
                    expired_only_timeout=now,
                )

    def _close_connection(
        self,
        conn: _BrokerSocket,
        error: KafkaError,
        expired_only_timeout: float | None = None,
    ) -> None:
        if self._connections.get(conn.node_id) is conn:
            del self._connections[conn.node_id]
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
        for request in conn.core.fail_all():
            pending = _pending(request.context)
            if pending is None:
                continue
            exc: KafkaError = error
            if expired_only_timeout is not None and pending.deadline >= expired_only_timeout:
                exc = KafkaConnectionError(f"{error} (request not yet due; retriable)")
            self._finish(conn.node_id, pending, error=exc)
        if self.on_disconnect is not None:
            try:
                self.on_disconnect(conn.node_id, error)
            except Exception:  # a listener must not kill the I/O thread
                pass

    def _finish(
        self,
        node_id: int,
        pending: _Pending | None,
        result: object = None,
        error: BaseException | None = None,
    ) -> None:
        if pending is None:
            return
        with self._lock:
            self._in_flight_counts[node_id] = max(0, self._in_flight_counts.get(node_id, 1) - 1)
        if pending.future.done():
            return
        if error is not None:
            pending.future.set_exception(error)
        else:
            pending.future.set_result(result)

    def _shutdown(self) -> None:
        closed = ClientClosedError("the client was closed")
        for conn in list(self._connections.values()):
            self._close_connection(conn, closed)
        with self._lock:
            submissions, self._submissions = self._submissions, []
        for sub in submissions:
            self._finish(sub.node_id, sub.pending, error=closed)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


def _as_kafka_error(exc: Exception) -> KafkaError:
    if isinstance(exc, KafkaError):
        return exc
    return KafkaError(f"request could not be encoded: {exc}")


def _fmt(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


__all__ = ["InFlightRequest", "NetworkThread"]
