"""The network side of the broker: Kafka framing on Twisted, one protocol per connection.

Kafka's framing is a 4-byte big-endian length and then the request, which is
exactly Twisted's ``Int32StringReceiver``. We keep its hooks (``MAX_LENGTH``,
``stringReceived``, ``lengthLimitExceeded``, ``sendString``) but its
``dataReceived`` feeds the protocol layer's ``FrameDecoder``, the one framer
the client, the dissector and the broker share: Twisted's own re-joins the
whole buffer on every read (quadratic for a big frame arriving in many pieces)
and keeps buffering after it has refused an oversized frame. The decoder reads
the 4-byte length and refuses a negative or too-large one before a single body
byte is kept; after a refusal the connection reads nothing more.

Kafka answers requests on a connection in the order they arrived, even when a
later request is answered sooner (a produce waits for acks=all, a fetch waits
for data, but a metadata request behind them must not overtake them). A
request that cannot be answered at once, or arrives while earlier ones wait,
takes a slot in a FIFO; a slot is filled when its handler finishes; the
connection writes responses from the head of the queue only. A request
answered at once with nothing waiting ahead is written straight away.

Responses are coalesced: every answer produced while one read is handled
(a client that pipelines requests sends many in one segment) and every
answer a queue drain releases leaves in one write, so the reactor makes one
send for them rather than one per response. That write goes straight to the
socket when Twisted has nothing buffered for it (``socket_writer``): a fetch
answer woken by an append leaves before the produce request's handler
returns, not at the reactor's next poll; a fetch answer's record batches read
as a file region leave by ``sendfile`` (zero-copy). Answers released together on another
connection's turn (a high-watermark advance answering a producer's pipelined
acks=all requests) are gathered the same way (``answers_together``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from twisted.internet import defer, protocol
from twisted.protocols.basic import Int32StringReceiver
from twisted.python.failure import Failure

from simplekafka.broker.action_queue import ActionQueue
from simplekafka.broker.answers_together import AnswersTogether
from simplekafka.broker.socket_writer import Piece, SendCounts, SocketWriter
from simplekafka.protocol.framing import FrameDecoder, FrameTooLargeError, frame_pieces

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from simplekafka.broker.connection_quotas import ConnectionQuotas
    from simplekafka.broker.security.tls import PeerCertified

log = logging.getLogger(__name__)

# A handler's answer that means "write nothing" (acks=0 produce).
NO_RESPONSE = None


class CloseConnection(Exception):
    """Raised (or returned through a Deferred) by a handler: close after earlier responses."""


class CloseAfter:
    """A handler's answer that is the connection's last: write ``response`` (if any), close.

    A refused SaslHandshake or a failed SaslAuthenticate ends this way (Kafka
    sends the error, then closes).
    """

    __slots__ = ("response",)

    def __init__(self, response: bytes | None):
        self.response = response


class _Slot:
    """One request's place in the connection's response queue."""

    __slots__ = ("close", "done", "response", "size")

    def __init__(self) -> None:
        self.size = 0  # the request's frame bytes, while its answer is awaited
        self.done = False
        self.response: Response | None = None
        self.close = False


# An encoded answer: its bytes, or a list of pieces (a Fetch answer's file regions among
# them) that ``frame_pieces`` frames.
Response = bytes | list[Piece]
# What a handler gives for a frame: an answer, CloseAfter, None (no answer), or a Deferred
# of one of them.
Answer = Response | CloseAfter | defer.Deferred | None
# The types of answer that are never a Deferred, tested by exact type before isinstance: a
# Deferred is an Awaitable, so isinstance against it goes through ABCMeta's check, five
# times the cost of a set lookup, on every request answered at once.
_NOT_DEFERRED: frozenset[type] = frozenset({bytes, list, dict, type(None)})


def is_deferred(answer: object) -> TypeIs[defer.Deferred]:
    """Whether a handler's answer is still to come (the one test server, dispatcher and
    handlers share): an answer given at once is told by its exact type first."""
    return type(answer) not in _NOT_DEFERRED and isinstance(answer, defer.Deferred)
RequestHandler = Callable[[bytes, "KafkaConnection"], Answer]


class Authenticator(Protocol):
    """The per-connection gate of a SASL listener (``apis/sasl.py``'s SaslAuthentication):
    it takes the connection's frames until the login is complete."""

    @property
    def authenticating(self) -> bool: ...

    @property
    def max_receive_size(self) -> int: ...

    def takes(self, frame: bytes, connection: KafkaConnection) -> bool: ...

    def receive(self, frame: bytes, connection: KafkaConnection) -> Answer: ...


# Builds the per-connection gate of a SASL listener; None: no SASL.
AuthenticatorFactory = Callable[[RequestHandler], Authenticator]
# Reads the principal of a TLS client's certificate from the transport (security/tls.py).
TlsPrincipal = Callable[["PeerCertified"], str]


class SharedQueues(Protocol):
    """What a listener's connections share with the ReplicaManager: parked fetches woken
    after a read, answers released together."""

    actions: ActionQueue
    answers: AnswersTogether

ANONYMOUS = "User:ANONYMOUS"


class KafkaConnection(Int32StringReceiver):
    """One client connection: frames in, handler calls, ordered responses out."""

    MAX_LENGTH = 100 * 1024 * 1024
    transport: Any  # Twisted's ITransport (a zope interface, opaque to a type checker)
    # Stop reading from a client whose unanswered requests reach this many, or this many
    # bytes (back pressure). An acks=all produce is unanswered for a whole replication round
    # trip T, so the count bounds one producer to MAX_IN_FLIGHT / T requests/s: 200 was
    # below librdkafka's 8,300/s at linger.ms=0 whenever T passed 24 ms (docs/benchmarks-method.md).
    MAX_IN_FLIGHT = 1000
    MAX_IN_FLIGHT_BYTES = 16 << 20

    def __init__(self, handler: RequestHandler, max_length: int | None = None,
                 listener: str = "PLAINTEXT", authenticator: Authenticator | None = None,
                 tls_principal: TlsPrincipal | None = None):
        self.handler = handler
        if max_length is not None:
            self.MAX_LENGTH = max_length
        # Who is asking, as the dispatcher's RequestContext reports it: the listener the
        # connection came on and the principal it authenticated as (SASL or a TLS client
        # certificate; User:ANONYMOUS otherwise). A SASL listener's connection answers only
        # its authenticator until that is complete.
        self.listener = listener
        self.principal = ANONYMOUS
        # (name, version) the client told in ApiVersions v3+ (KIP-511); None until then.
        self.client_software: tuple[str, str] | None = None
        self.authenticator = authenticator
        self._tls_principal = tls_principal
        self._frames = FrameDecoder(self.MAX_LENGTH)
        self._queue: deque[_Slot] = deque()
        self._refusing = False
        self._reading_paused = False
        self._waiting_bytes = 0  # frame bytes of the requests whose answers are awaited
        self._outgoing: list[Piece] | None = None  # set while responses are being gathered
        self.writes = 0  # transport writes made (for tests: coalescing)
        # Writes sent whole at once / left (partly) to Twisted's buffer; shared by a
        # listener's connections (the broker's metrics read it).
        self.sends = SendCounts()
        self._writer: SocketWriter | None = None  # made with the first write
        # The broker's (its ReplicaManager's, through the factory): parked fetches woken
        # after a whole read is handled; answers released together, sent together.
        self.actions = ActionQueue()
        self.answers = AnswersTogether()
        self.peer = "?"
        self.host = "?"
        # When a byte was last read or written (time.monotonic): connections.max.idle.ms.
        self.last_active = time.monotonic()
        # Accepted past max.connections or max.connection.creation.rate: not read until the
        # broker's ConnectionQuotas admits it (as Kafka leaves it in the accept backlog).
        self.waiting = False
        self.rejected = False  # over max.connections.per.ip: closed as soon as it is made
        # Throttled by a client quota (client_quotas.py): nothing read until unmuted.
        self.muted = False
        self.muted_until = 0.0
        self._held: list[bytes] = []  # frames read before the mute, handled after it

    # -- connection life cycle -------------------------------------------------------------

    def connectionMade(self) -> None:
        # Answers are small and must leave at once: no Nagle delay (Kafka sets this too).
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        peer = self.transport.getPeer()
        self.host = str(getattr(peer, "host", "?"))
        self.peer = f"{self.host}:{getattr(peer, 'port', '?')}"
        self.last_active = time.monotonic()
        if self.rejected:
            self._refusing = True
            self.transport.loseConnection()
            return
        factory = getattr(self, "factory", None)
        if isinstance(factory, KafkaServerFactory):
            factory.connections.add(self)
            if factory.quotas is not None:
                factory.quotas.opened(self)
        log.debug("connection from %s", self.peer)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self._refusing = True
        if self._writer is not None:
            self._writer.lost()
        self._frames = FrameDecoder(self.MAX_LENGTH)  # drop any partial frame
        self._queue.clear()
        self._waiting_bytes = 0
        factory = getattr(self, "factory", None)
        if isinstance(factory, KafkaServerFactory) and not self.rejected:
            factory.connections.discard(self)
            if factory.quotas is not None:
                factory.quotas.closed(self)

    @property
    def connected_and_open(self) -> bool:
        return not self._refusing and bool(self.connected)

    @property
    def busy(self) -> bool:
        """Whether answers are awaited (such a connection is not idle)."""
        return bool(self._queue)

    def close_idle(self, idle_ms: int) -> None:
        """Close this connection, idle past ``connections.max.idle.ms``."""
        log.info("closing connection from %s on listener %s: idle for more than %d ms "
                 "(connections.max.idle.ms)", self.peer, self.listener, idle_ms)
        self._refusing = True
        self.transport.loseConnection()

    # -- framing ----------------------------------------------------------------------------

    def dataReceived(self, data: bytes) -> None:
        if self._refusing:
            return  # a refused connection reads nothing more into memory
        self.last_active = time.monotonic()
        authenticator = self.authenticator
        if authenticator is not None:  # sasl.server.max.receive.size until logged in
            self._frames.max_length = (min(self.MAX_LENGTH, authenticator.max_receive_size)
                                       if authenticator.authenticating else self.MAX_LENGTH)
        if self._tls_principal is not None:  # the TLS handshake is over once data arrives
            principal_of, self._tls_principal = self._tls_principal, None
            self.principal = principal_of(self.transport)
            if self.principal != ANONYMOUS:
                log.info("%s authenticated as %s by its certificate on listener %s",
                         self.peer, self.principal, self.listener)
        try:
            frames = self._frames.feed(data)
        except FrameTooLargeError as exc:
            self._gathered(self._handle_frames, exc.frames)  # earlier frames are answered
            if not self._refusing:
                self.lengthLimitExceeded(exc.length)
            return
        if self.muted:
            self._held += frames
        elif len(frames) == 1:
            self.stringReceived(frames[0])
        elif frames:
            self._gathered(self._handle_frames, frames)

    def _handle_frames(self, frames: list[bytes]) -> None:
        # Parked fetches are woken once this read's requests are handled, before their
        # answers are sent (action_queue): a follower gets all its appends in one answer.
        with self.actions.wakeups_after():
            for i, frame in enumerate(frames):
                if self.muted:
                    self._held += frames[i:]
                    return
                self.stringReceived(frame)
                if self._refusing:
                    return

    @property
    def _pending_size(self) -> int:
        """Bytes of an incomplete frame held (0 after a refusal)."""
        return self._frames.buffered

    @property
    def _pending(self) -> list[bytes]:
        """The incomplete frame's bytes held so far, as one piece (for tests and logs)."""
        return [b"".join(self._frames._pieces)] if self._frames.buffered else []

    def lengthLimitExceeded(self, length: int) -> None:
        """Refuse the frame unread: log it and close, keeping nothing of its body."""
        limit = self._frames.max_length
        log.warning(
            "closing connection from %s: frame length %d outside 0..%d (%s)", self.peer,
            length, limit, "socket.request.max.bytes" if limit == self.MAX_LENGTH else
            "sasl.server.max.receive.size, before authentication",
        )
        self._refuse()

    def _gathered(self, work: Callable[[list[bytes]], None], frames: list[bytes]) -> None:
        """Run ``work``, sending every response it produces in one transport write."""
        if self._outgoing is not None:
            work(frames)  # already gathering: the outer call sends
            return
        outgoing: list[Piece] = []
        self._outgoing = outgoing
        try:
            work(frames)
        finally:
            self._outgoing = None
            self._send(outgoing)

    def _send(self, frames: list[Piece]) -> None:
        if not frames:
            return
        if self._outgoing is not None:
            self._outgoing += frames
            return
        answers = self.answers
        if answers.depth and answers.hold(self, self._write_held, frames):
            return  # released with others: one write
        self._write_now(frames)

    def _write_held(self, frames: list[Piece]) -> None:
        if self.connected and not self._refusing:
            self._write_now(frames)

    def _write_now(self, frames: list[Piece]) -> None:
        self.writes += 1
        self.last_active = time.monotonic()
        writer = self._writer
        if writer is None:
            writer = self._writer = SocketWriter(self.transport, self.sends)
        if writer.write(frames if len(frames) == 1 or not writer.direct
                        else _joined(frames)):
            self.sends.direct += 1
        else:
            self.sends.buffered += 1

    def _refuse(self) -> None:
        self._refusing = True
        self._frames = FrameDecoder(self.MAX_LENGTH)
        self._write_ready_responses()
        self._close_after_gathered()

    def _close_after_gathered(self) -> None:
        """Close the connection, after every response gathered so far has been written."""
        if self._outgoing:
            self._write_now(self._outgoing)
            self._outgoing.clear()
        self.transport.loseConnection()

    # -- requests and ordered responses -----------------------------------------------------

    def stringReceived(self, frame: bytes) -> None:
        """One complete request frame: handle it; its answer leaves after earlier ones.

        A request answered at once with nothing ahead of it in the queue (the
        usual case) is written straight away; anything else takes a slot.
        """
        try:
            authenticator = self.authenticator
            if authenticator is not None and authenticator.takes(frame, self):
                result = authenticator.receive(frame, self)
            else:
                result = self.handler(frame, self)
        except CloseConnection:
            self._fill(self._take_slot(), None, close=True)
            return
        except Exception:
            log.exception("request handler failed on a frame from %s; closing", self.peer)
            self._fill(self._take_slot(), None, close=True)
            return
        if is_deferred(result):
            slot = self._take_slot()
            slot.size = len(frame)
            self._waiting_bytes += slot.size
            result.addCallbacks(self._fill_answer, self._failed,
                                callbackArgs=(slot,), errbackArgs=(slot,))
            if not self._reading_paused and (len(self._queue) >= self.MAX_IN_FLIGHT or
                                             self._waiting_bytes >= self.MAX_IN_FLIGHT_BYTES):
                self._reading_paused = True
                self.transport.pauseProducing()
            return
        if self._queue or isinstance(result, CloseAfter):
            self._fill_answer(result, self._take_slot())  # behind answers still awaited
        elif result is not None and not self._refusing:
            self._send(_framed(result))

    def mute(self) -> None:
        """Stop reading requests (Kafka mutes a throttled client's channel, KIP-219)."""
        self.muted = True
        if not self._reading_paused:
            self.transport.pauseProducing()

    def unmute(self) -> None:
        """Read again: first the frames that arrived with the throttled request."""
        self.muted = False
        if self._refusing:
            return
        held, self._held = self._held, []
        if held:
            self._gathered(self._handle_frames, held)
        if not self._reading_paused and not self.muted:
            self.transport.resumeProducing()

    def _take_slot(self) -> _Slot:
        slot = _Slot()
        self._queue.append(slot)
        return slot

    def _fill_answer(self, answer: Response | CloseAfter | None, slot: _Slot) -> None:
        if isinstance(answer, CloseAfter):
            self._fill(slot, answer.response, close=True)
            return
        slot.done = True  # _fill's work, without its call: every answer that waited
        slot.response = answer
        self._write_ready_responses()

    def _failed(self, failure: Failure, slot: _Slot) -> None:
        if not failure.check(CloseConnection):
            log.error("request from %s failed: %s", self.peer, failure.getTraceback())
        self._fill(slot, None, close=True)

    def _fill(self, slot: _Slot, response: Response | None, close: bool = False) -> None:
        slot.done = True
        slot.response = response
        slot.close = close
        self._write_ready_responses()

    def _write_ready_responses(self) -> None:
        queue = self._queue
        ready: list[Piece] = []
        while queue and queue[0].done:
            slot = queue.popleft()
            self._waiting_bytes -= slot.size
            if slot.close:
                queue.clear()
                self._waiting_bytes = 0
                if slot.response is not None and not self._refusing:
                    ready += _framed(slot.response)  # a CloseAfter's last answer
                self._send(ready)  # the answers before the close still leave
                if not self._refusing:
                    self._refusing = True
                    self._close_after_gathered()
                return
            if slot.response is not None and not self._refusing:
                ready += _framed(slot.response)
        self._send(ready)
        if (self._reading_paused and len(queue) < self.MAX_IN_FLIGHT // 2
                and self._waiting_bytes < self.MAX_IN_FLIGHT_BYTES // 2 and not self._refusing):
            self._reading_paused = False
            if not self.muted:
                self.transport.resumeProducing()


# A response's frame pieces: the header bytes prefixed with the length, then its record sets
# as they are (bytes, or file regions the writer sends itself). frame_pieces keeps the piece
# type it is given; mypy cannot pick it out of the Response union, so it is named here, once
# at import (no call added to the send path).
_framed = cast("Callable[[Response], list[Piece]]", frame_pieces)


def _joined(frames: list[Piece]) -> list[Piece]:
    """Consecutive frames of bytes as one piece (one send), file regions between them."""
    out: list[Piece] = []
    run: list[bytes] = []
    for frame in frames:
        if type(frame) is bytes:
            run.append(frame)
            continue
        if run:
            out.append(b"".join(run))
            run = []
        out.append(frame)
    if run:
        out.append(b"".join(run))
    return out


class KafkaServerFactory(protocol.ServerFactory):
    """Builds a KafkaConnection per client of one listener, all sharing one request handler.

    ``authenticator_factory`` (a SASL listener) gives each connection its own
    authenticator; ``tls_principal`` (an SSL listener) reads the principal from
    the client's certificate once the TLS handshake is done.
    """

    def __init__(self, handler: RequestHandler, max_length: int, listener: str = "PLAINTEXT",
                 authenticator_factory: AuthenticatorFactory | None = None,
                 tls_principal: TlsPrincipal | None = None,
                 quotas: ConnectionQuotas | None = None, replicas: SharedQueues | None = None):
        self.handler = handler
        # The ReplicaManager whose ActionQueue and AnswersTogether the connections share.
        self.replicas = replicas
        # The broker's ConnectionQuotas (connection_quotas.py): connection limits, idle close.
        self.quotas = quotas
        self.max_length = max_length
        self.listener = listener
        self.authenticator_factory = authenticator_factory
        self.tls_principal = tls_principal
        self.connections: set[KafkaConnection] = set()
        self.sends = SendCounts()

    def buildProtocol(self, addr) -> KafkaConnection:
        authenticator = (self.authenticator_factory(self.handler)
                         if self.authenticator_factory is not None else None)
        connection = KafkaConnection(self.handler, self.max_length, self.listener,
                                     authenticator, self.tls_principal)
        connection.factory = self
        connection.sends = self.sends
        if self.replicas is not None:
            connection.actions = self.replicas.actions
            connection.answers = self.replicas.answers
        if self.quotas is not None:  # over max.connections.per.ip: closed once made
            connection.rejected = not self.quotas.accept(self.listener,
                                                         str(getattr(addr, "host", "?")))
        return connection

    def close_all(self) -> None:
        """Drop every client connection (used at shutdown)."""
        for connection in list(self.connections):
            connection.transport.loseConnection()
