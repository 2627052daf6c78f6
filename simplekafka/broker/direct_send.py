"""Send an answer at once: straight to the socket when Twisted holds nothing for it.

Twisted's TCP transport never sends inside ``write``: it buffers the bytes,
asks epoll to report the socket writable (an ``epoll_ctl``), and sends when the
reactor next polls, after every other event of the current turn, then stops
asking (another ``epoll_ctl``). A fetch answer released by an append therefore
waited for the rest of the reactor turn (the producer's other requests, other
sockets) and cost two extra system calls and a poll. Traced per record at the
latency load, that wait was a stage of its own in the tail (docs/benchmarks-method.md).

Kafka's network threads, like most servers, try the send first; so do we,
but only where it cannot reorder or bypass anything: a plain TCP connection
(a TLS transport must encrypt, so it keeps Twisted's path), open, with
nothing of its own still buffered. What the socket does not take at once
goes to Twisted's buffer behind it, and Twisted carries on from there, so
order and back pressure stay Twisted's.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import tcp


def send_now(transport: Any, data: bytes) -> int:
    """Send what the socket takes of ``data`` now; returns the bytes sent (0: none).

    The caller hands the rest (``data[sent:]``) to ``transport.write``.
    """
    if not isinstance(transport, tcp.Connection) or getattr(transport, "TLS", True):
        return 0
    # Twisted's own buffer (private: a Twisted that renames it keeps its own path).
    pending = getattr(transport, "_tempDataBuffer", None)
    if (pending is None or pending or transport.offset != len(transport.dataBuffer)
            or not transport.connected or transport.disconnecting
            or getattr(transport, "_writeDisconnected", True)):
        return 0
    try:
        return transport.socket.send(data)
    except OSError:  # full (EAGAIN), interrupted, or broken: Twisted's write deals with it
        return 0


def write(transport: Any, data: bytes) -> bool:
    """``send_now``, and what the socket did not take to Twisted's buffer, in order;
    True if it all left at once."""
    sent = send_now(transport, data)
    if sent == len(data):
        return True
    transport.write(data[sent:] if sent else data)
    return False
