"""The write side of one connection: answers in order, at once when they can be, and
record batches from the page cache to the socket.

A connection's writer is the only thing that writes to its transport, so it
knows, without asking Twisted, whether Twisted still holds bytes of its own:
it does from the moment the writer hands it some (``transport.write``) until
Twisted says its buffer is empty. Twisted says so through its public
producer/consumer contract: a *pull producer* registered with the transport
(``registerProducer(writer, streaming=False)``) has ``resumeProducing`` called
each time the transport's buffer drains. The writer registers only while
Twisted holds something of its own.

What that buys:

* **Sending at once.** Twisted's ``write`` never sends: it buffers, asks epoll
  to report the socket writable and sends at the reactor's next poll, after
  every other event of the turn. Kafka's network threads, like most servers,
  try the send first. So does the writer, when Twisted holds nothing of its
  own (nothing can be overtaken): ``socket.send`` on the transport's socket
  (``transport.getHandle()``); what the socket does not take goes to Twisted
  behind it, and Twisted carries on from there.
* **Zero-copy fetches.** A fetch answer's record batches may be a
  :class:`~simplekafka.storage.FileRegion` (a stretch of a segment file,
  unread). Once the bytes before it have left and Twisted's buffer is empty,
  ``os.sendfile`` moves the region from the page cache to the socket: the
  bytes never enter Python. When the socket is full part-way (non-blocking:
  EAGAIN), a small piece of the rest is read and handed to Twisted, whose
  drain tells the writer the socket takes bytes again; ``sendfile`` goes on
  from there.

A TLS transport must encrypt what it sends, in Python's memory: it gets every
piece through ``transport.write``, regions read into bytes (the copy path, as
in Kafka, whose TLS channel cannot use ``transferTo`` either).
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from twisted.internet.interfaces import IPullProducer, ISSLTransport, ITCPTransport
from zope.interface import implementer  # type: ignore[import-untyped]

from simplekafka.storage import FileRegion, TruncatedRegionError

log = logging.getLogger(__name__)

# A fetch read at least this big comes as a FileRegion when zero-copy is on: below it, one
# send of the answer's bytes costs less than a send for its header and a sendfile.
ZERO_COPY_MIN_BYTES = 32 * 1024
# Read and handed to Twisted when the socket fills part-way through a region: Twisted's
# drain of it is the writer's "writable again" (Linux reports a TCP socket writable once a
# third of its buffer is free, so the sendfile after it has room; the bridge stays small).
BRIDGE_BYTES = 4096

Piece = bytes | FileRegion


class WriteTransport(Protocol):
    """What the writer uses of a Twisted transport (ITCPTransport's methods: Twisted's
    interfaces are zope interfaces, which a type checker cannot hold a class to)."""

    def write(self, data: bytes) -> None: ...

    def getHandle(self) -> socket.socket: ...

    def registerProducer(self, producer: object, streaming: bool) -> None: ...

    def unregisterProducer(self) -> None: ...

    def abortConnection(self) -> None: ...


class _Queued:
    """A piece waiting behind Twisted's buffer, and how many of its bytes have left."""

    __slots__ = ("done", "piece")

    def __init__(self, piece: Piece) -> None:
        self.piece = piece
        self.done = 0


def can_sendfile() -> bool:
    """Whether this platform has ``os.sendfile`` (Linux, the BSDs, macOS)."""
    return hasattr(os, "sendfile")


class SendCounts:
    """How a listener's writes left, shared by its connections (the broker's metrics read it).

    ``direct``: writes that left whole at once; ``buffered``: writes (partly) left to
    Twisted's buffer; ``sendfile_bytes``/``sendfile_calls``: record bytes sent from the
    page cache; ``region_copied_bytes``: region bytes read into Python instead (TLS, a
    full socket's bridge).
    """

    __slots__ = ("buffered", "direct", "region_copied_bytes", "sendfile_bytes",
                 "sendfile_calls")

    def __init__(self) -> None:
        self.direct = 0
        self.buffered = 0
        self.sendfile_bytes = 0
        self.sendfile_calls = 0
        self.region_copied_bytes = 0


def is_plain_tcp(transport: object) -> bool:
    """A TCP transport that sends what it is given as it is (not TLS)."""
    return ITCPTransport.providedBy(transport) and not ISSLTransport.providedBy(transport)


@implementer(IPullProducer)
class SocketWriter:
    """Writes one connection's bytes and file regions, in order; see the module docstring.

    Contract: nothing else writes to ``transport``; ``write`` returns whether
    everything left at once; ``lost`` is called when the connection is gone.
    """

    def __init__(self, transport: WriteTransport, counts: SendCounts | None = None):
        self.transport = transport
        self.counts = counts if counts is not None else SendCounts()
        self.direct = is_plain_tcp(transport)
        self._fileno = transport.getHandle().fileno() if self.direct else -1
        self._socket = transport.getHandle() if self.direct else None
        # What waits behind Twisted's buffer.
        self._queue: deque[_Queued] = deque()
        self._twisted_holds = False  # registered as producer, waiting for Twisted's drain
        self._registering = False
        self._lost = False

    @property
    def idle(self) -> bool:
        """Nothing of ours waits in Twisted's buffer or behind it."""
        return not self._twisted_holds

    def write(self, pieces: Sequence[Piece]) -> bool:
        """Send ``pieces`` after everything written before; True if all left at once."""
        if self._lost:  # the connection is gone: nothing to send, regions to give back
            for piece in pieces:
                if isinstance(piece, FileRegion):
                    piece.close()
            return False
        if not self.direct:
            self._write_copied(pieces)
            return False
        if not self._twisted_holds and len(pieces) == 1 and type(pieces[0]) is bytes:
            data = pieces[0]  # the usual answer: one piece of bytes, nothing ahead of it
            sent = self.send_bytes(data)
            if sent == len(data):
                return True
            self._hand_over(data[sent:] if sent else data)
            return False
        queue = self._queue
        run: list[bytes] = []
        for piece in pieces:
            if type(piece) is FileRegion:
                if run:
                    queue.append(_Queued(run[0] if len(run) == 1 else b"".join(run)))
                    run = []
                queue.append(_Queued(piece))
            else:
                run.append(piece)  # type: ignore[arg-type]
        if run:
            queue.append(_Queued(run[0] if len(run) == 1 else b"".join(run)))
        if not self._twisted_holds:
            self._pump()
        return not self._twisted_holds

    def send_bytes(self, data: bytes | memoryview) -> int:
        """What the socket takes of ``data`` now (0: nothing; the traces wrap this)."""
        try:
            return self._socket.send(data)  # type: ignore[union-attr]
        except OSError:  # full (EAGAIN), interrupted or broken: Twisted deals with it
            return 0

    def _write_copied(self, pieces: Sequence[Piece]) -> None:
        """The copy path (TLS): regions read into bytes, all through ``transport.write``."""
        if len(pieces) == 1 and type(pieces[0]) is bytes:
            self.transport.write(pieces[0])
            return
        out: list[bytes] = []
        for piece in pieces:
            if isinstance(piece, FileRegion):
                try:
                    data = piece.read()
                except (TruncatedRegionError, OSError) as exc:
                    self._abort(piece, exc)
                    return
                finally:
                    piece.close()
                self.counts.region_copied_bytes += len(data)
                out.append(data)
            else:
                out.append(piece)
        self.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _pump(self) -> None:
        """Send from the head of the queue until it is empty or the socket is full."""
        queue = self._queue
        counts = self.counts
        while queue:
            item = queue[0]
            piece, done = item.piece, item.done
            if not isinstance(piece, FileRegion):
                sent = self.send_bytes(memoryview(piece)[done:] if done else piece)
                queue.popleft()
                if done + sent < len(piece):
                    self._hand_over(piece[done + sent:])
                    return
                continue
            left = piece.length - done
            try:
                sent = os.sendfile(self._fileno, piece.fd, piece.position + done, left)
            except BlockingIOError:
                sent = -1  # the socket is full
            except OSError as exc:  # the connection broke: Twisted's read will say so
                self._abort(piece, exc)
                return
            if sent == 0:  # the file ended first: truncated under the region
                self._abort(piece, TruncatedRegionError("segment file truncated while sent"))
                return
            if sent > 0:
                counts.sendfile_calls += 1
                counts.sendfile_bytes += sent
                done += sent
                if done == piece.length:
                    piece.close()
                    queue.popleft()
                    continue
            # Full: a little of the rest goes to Twisted, whose drain says "writable".
            try:
                bridge = piece.read(done, min(BRIDGE_BYTES, piece.length - done))
            except (TruncatedRegionError, OSError) as exc:
                self._abort(piece, exc)
                return
            counts.region_copied_bytes += len(bridge)
            item.done = done + len(bridge)
            if item.done == piece.length:
                piece.close()
                queue.popleft()
            self._hand_over(bridge)
            return

    def _hand_over(self, data: bytes) -> None:
        """Give ``data`` to Twisted and be told when its buffer is empty again."""
        self.transport.write(data)
        if not self._twisted_holds:
            self._twisted_holds = True
            self._registering = True  # a pull producer is asked for data at once: not now
            try:
                self.transport.registerProducer(self, False)
            finally:
                self._registering = False

    def resumeProducing(self) -> None:
        """Twisted's buffer is empty (IPullProducer): go on with what waits."""
        if self._registering or not self._twisted_holds:
            return
        self._twisted_holds = False
        self.transport.unregisterProducer()
        self._pump()

    def stopProducing(self) -> None:
        """The connection is gone (IPullProducer): drop what waits."""
        self.lost()

    def lost(self) -> None:
        """Release every region still waiting; nothing more is sent."""
        self._lost = True
        while self._queue:
            piece = self._queue.popleft().piece
            if type(piece) is FileRegion:
                piece.close()

    def _abort(self, region: FileRegion, exc: Exception) -> None:
        """A region cannot be sent whole: the frame would be cut, so the connection ends."""
        log.warning("closing a connection: a fetched segment region could not be sent (%s)",
                    exc)
        region.close()
        self.lost()
        self.transport.abortConnection()
