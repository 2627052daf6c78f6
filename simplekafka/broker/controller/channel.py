"""How controller requests reach brokers: over TCP, or to this broker through the same bytes.

Each target broker has a queue: requests to it are sent one at a time, in
order (UpdateMetadata before the LeaderAndIsr that follows it), and retried
while the broker is still registered (quickly at first, then once a second).
A request to the controller's own broker is encoded to bytes, handed to this
broker's request dispatcher exactly as a frame from the network would be, and
its response bytes decoded: the single-broker cluster exercises the same code
path as a three-broker one.
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from twisted.internet import defer, protocol
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.python.failure import Failure

from simplekafka.broker.socket_writer import SocketWriter
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.framing import FrameDecoder, FrameTooLargeError, encode_frame
from simplekafka.protocol.messages import decode_response, encode_request

if TYPE_CHECKING:
    from twisted.internet.interfaces import IProtocolFactory, IReactorTCP

    from simplekafka.broker.collaborators import Reactor
    from simplekafka.broker.security.inter_broker import InterBrokerLogin

log = logging.getLogger(__name__)

#: Where a broker is reached: (host, port), plus the login its inter-broker listener wants.
Endpoint = tuple[str, int] | tuple[str, int, "InterBrokerLogin"]
#: This broker's own dispatcher: request bytes (and no connection) in, response bytes out.
LocalHandler = Callable[[bytes, None], "bytes | defer.Deferred | None"]

RETRY_DELAY = 0.1
SLOW_RETRY_DELAY = 1.0  # after MAX_ATTEMPTS quick retries
MAX_ATTEMPTS = 50
CLIENT_ID = "simplekafka-controller"
_CORRELATION_ID = struct.Struct(">i")  # a response's first field


class ResponseReader(protocol.Protocol):
    """Reads Kafka-framed responses and fires the waiting Deferred by correlation id."""

    transport: Any  # Twisted's ITransport (a zope interface, opaque to a type checker)

    def __init__(self) -> None:
        self.frames = FrameDecoder()
        self.waiting: dict[int, defer.Deferred] = {}
        self.lost: defer.Deferred = defer.Deferred()
        self._writer: SocketWriter | None = None

    def connectionMade(self) -> None:
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)

    def dataReceived(self, data: bytes) -> None:
        try:
            frames = self.frames.feed(data)
        except FrameTooLargeError as exc:
            log.warning("closing the connection to a broker: %s", exc)
            frames = exc.frames
            self.transport.loseConnection()
        for frame in frames:
            (correlation_id,) = _CORRELATION_ID.unpack_from(frame, 0)
            waiter = self.waiting.pop(correlation_id, None)
            if waiter is not None:
                waiter.callback(frame)

    def send(self, correlation_id: int, payload: bytes) -> defer.Deferred:
        """Write one encoded request; the Deferred fires with its response frame."""
        waiter: defer.Deferred = defer.Deferred()
        self.waiting[correlation_id] = waiter
        # Straight to the socket (socket_writer): a replica fetcher's next fetch leaves now,
        # not after the rest of the reactor turn that applied the last answer.
        writer = self._writer
        if writer is None:
            writer = self._writer = SocketWriter(self.transport)
        writer.write([encode_frame(payload)])
        return waiter

    def connectionLost(self, reason: Failure | None = None) -> None:
        if self._writer is not None:
            self._writer.lost()
        waiting, self.waiting = self.waiting, {}
        for waiter in waiting.values():
            waiter.errback(ConnectionError("connection to broker lost"))
        if not self.lost.called:
            self.lost.callback(None)


def connect_reader(reactor: Reactor, host: str, port: int,
                   login: InterBrokerLogin | None = None) -> defer.Deferred:
    """Connect to a broker; fires with the ResponseReader of the new connection.

    ``login`` (the broker's ``InterBrokerLogin``, which ``endpoint_of`` hands out
    with the address) adds TLS and a SASL login as the inter-broker listener wants.
    """
    # Factory is an IProtocolFactory, and the reactor an IReactorTCP, through zope, which
    # a type checker cannot see.
    factory = cast("IProtocolFactory", protocol.Factory.forProtocol(ResponseReader))
    if login is not None:
        return login.connect(reactor, host, port, factory)
    endpoint = TCP4ClientEndpoint(cast("IReactorTCP", reactor), host, port, timeout=5)
    return endpoint.connect(factory)


class ControllerChannel:
    """Delivers controller requests in order, per broker; see the module docstring."""

    def __init__(self, reactor: Reactor, local_broker_id: int,
                 local_handler: LocalHandler,
                 endpoint_of: Callable[[int], Endpoint | None]):
        self.reactor = reactor
        self.local_broker_id = local_broker_id
        self.local_handler = local_handler
        self.endpoint_of = endpoint_of
        self._correlation = itertools.count(1)
        self._queues: dict[int, deque[tuple[ApiKey, int, dict, defer.Deferred]]] = {}
        self._busy: set[int] = set()
        self._connections: dict[int, ResponseReader] = {}
        self.sent = 0
        self.closed = False

    def send_all(self, sends: list[tuple[int, ApiKey, int, dict]]) -> None:
        for broker_id, api_key, version, body in sends:
            self.send(broker_id, api_key, version, body)

    def send(self, broker_id: int, api_key: ApiKey, version: int, body: dict) -> defer.Deferred:
        """Queue one request for ``broker_id``; the Deferred fires with the decoded response."""
        done: defer.Deferred = defer.Deferred()
        self._queues.setdefault(broker_id, deque()).append((api_key, version, body, done))
        self._pump(broker_id)
        return done

    def _pump(self, broker_id: int) -> None:
        if broker_id in self._busy or self.closed:
            return
        queue = self._queues.get(broker_id)
        if not queue:
            return
        self._busy.add(broker_id)
        api_key, version, body, done = queue[0]
        attempt = self._deliver(broker_id, api_key, version, body)
        attempt.addCallbacks(self._delivered, self._failed,
                             callbackArgs=(broker_id, done), errbackArgs=(broker_id, 1))

    def _delivered(self, response: object, broker_id: int, done: defer.Deferred) -> None:
        self._queues[broker_id].popleft()
        local = broker_id == self.local_broker_id
        if not local:
            self._busy.discard(broker_id)
        self.sent += 1
        code = getattr(response, "error_code", 0)
        if code:
            log.warning("broker %d answered controller request with error %d", broker_id, code)
        done.callback(response)
        if local:
            # Our own broker answers within this reactor turn: the next request waits for
            # the next turn, or a queue of big LeaderAndIsr slices would run back to back
            # and hold the reactor (fetches, and the other brokers' answers, which the
            # channel needs to send them their next request).
            self.reactor.callLater(0, self._next_turn, broker_id)
        else:
            self._pump(broker_id)

    def _next_turn(self, broker_id: int) -> None:
        self._busy.discard(broker_id)
        self._pump(broker_id)

    def _failed(self, failure: Failure, broker_id: int, attempt: int) -> None:
        queue = self._queues.get(broker_id)
        if not queue or self.closed:
            self._busy.discard(broker_id)
            return
        api_key, version, body, done = queue[0]
        # A remote broker is retried for as long as it is registered (a paused broker
        # must still learn its role when it resumes); only our own handler's failures,
        # which no retry will cure, are given up after MAX_ATTEMPTS.
        gone = self.endpoint_of(broker_id) is None
        if gone or (broker_id == self.local_broker_id and attempt >= MAX_ATTEMPTS):
            log.warning("giving up %s to broker %d: %s", api_key.name, broker_id,
                        failure.getErrorMessage())
            queue.popleft()
            self._busy.discard(broker_id)
            done.errback(failure)
            self._pump(broker_id)
            return

        def retry() -> None:
            again = self._deliver(broker_id, api_key, version, body)
            again.addCallbacks(self._delivered, self._failed,
                               callbackArgs=(broker_id, done),
                               errbackArgs=(broker_id, attempt + 1))

        if attempt % MAX_ATTEMPTS == 0:
            log.warning("still retrying %s to broker %d (%d attempts): %s", api_key.name,
                        broker_id, attempt, failure.getErrorMessage())
        self.reactor.callLater(RETRY_DELAY if attempt < MAX_ATTEMPTS else SLOW_RETRY_DELAY,
                               retry)

    def _deliver(self, broker_id: int, api_key: ApiKey, version: int,
                 body: dict) -> defer.Deferred:
        correlation_id = next(self._correlation)
        try:
            payload = encode_request(api_key, version, correlation_id, CLIENT_ID, body)
        except Exception as exc:
            log.exception("cannot encode %s for broker %d", api_key.name, broker_id)
            return defer.fail(exc)
        answer: defer.Deferred  # fires with the response frame
        if broker_id == self.local_broker_id:
            answer = defer.maybeDeferred(self.local_handler, payload, None)
        else:
            answer = self._remote(broker_id, correlation_id, payload)
        return answer.addCallback(
            lambda frame: decode_response(api_key, version, frame)[1])

    def _remote(self, broker_id: int, correlation_id: int, payload: bytes) -> defer.Deferred:
        connection = self._connections.get(broker_id)
        if connection is not None and connection.transport is not None \
                and connection.connected:
            return self._write(connection, correlation_id, payload)
        address = self.endpoint_of(broker_id)
        if address is None:
            return defer.fail(ConnectionError(f"broker {broker_id} is not alive"))
        connecting = connect_reader(self.reactor, *address)

        def connected(reader: ResponseReader) -> defer.Deferred:
            self._connections[broker_id] = reader
            reader.lost.addCallback(lambda _: self._connections.pop(broker_id, None))
            return self._write(reader, correlation_id, payload)

        return connecting.addCallback(connected)

    @staticmethod
    def _write(reader: ResponseReader, correlation_id: int, payload: bytes) -> defer.Deferred:
        return reader.send(correlation_id, payload)

    def close(self) -> None:
        self.closed = True
        for connection in list(self._connections.values()):
            if connection.transport is not None:
                connection.transport.loseConnection()
        self._connections.clear()
