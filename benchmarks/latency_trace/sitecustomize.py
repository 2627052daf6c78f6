"""Per-record timestamps inside a broker, for ``benchmarks/latency_stages.py`` only.

Python imports ``sitecustomize`` at start-up from the path; latency_stages.py
puts this directory first on the PYTHONPATH of the broker it starts and names
an output directory in SIMPLEKAFKA_STAGE_TRACE. Any other process (or no
variable) leaves this module inert. It wraps four broker and Twisted methods
to note, for every ``LATENCY:<µs>`` stamp rdkafka_performance -l puts in its
records, when the produce request's bytes reached the broker, when the
reactor's poll before that read returned, when the fetch answer carrying the
record was written, and when the send carrying it started; and when each
fetch request arrived. Written at exit, one line each.
"""

import os
import sys

_DIR = os.environ.get("SIMPLEKAFKA_STAGE_TRACE")
if _DIR and "broker" in sys.argv:
    import atexit
    import re
    import time

    from twisted.internet import epollreactor, tcp

    from simplekafka.broker import server, socket_writer

    _STAMP = re.compile(rb"LATENCY:(\d+)(?=\D)")  # whole: its digits end in this piece
    _now = time.time
    _read: dict[int, tuple[float, float]] = {}  # stamp -> (poll returned, read)
    _written: dict[int, float] = {}
    _sent: dict[int, float] = {}
    _fetches: list[float] = []
    _polled = [0.0]

    _tails: dict[tuple[str, int], bytes] = {}

    def _stamps(data, stream=None) -> list[int]:
        """Stamps in ``data``; with a ``stream``, also one cut by the previous piece's end."""
        if stream is not None:
            data = _tails.get(stream, b"") + bytes(data)
            _tails[stream] = data[-32:]
        return [int(m) for m in _STAMP.findall(data)] if b"LATENCY:" in data else []

    class _TimedPoller:
        def __init__(self, poller):
            self._poller = poller

        def poll(self, *args):
            events = self._poller.poll(*args)
            _polled[0] = _now()
            return events

        def __getattr__(self, name):
            return getattr(self._poller, name)

    _reactor_init = epollreactor.EPollReactor.__init__

    def _init(self, *args, **kwargs):
        _reactor_init(self, *args, **kwargs)
        self._poller = _TimedPoller(self._poller)

    epollreactor.EPollReactor.__init__ = _init

    _data_received = server.KafkaConnection.dataReceived

    def _on_data(self, data):
        now = _now()
        if len(data) >= 6 and data[4:6] == b"\x00\x01":  # api key 1: a fetch
            _fetches.append(now)
        for stamp in _stamps(data, ("in", id(self))):
            _read.setdefault(stamp, (_polled[0], now))
        return _data_received(self, data)

    server.KafkaConnection.dataReceived = _on_data

    _write_now = server.KafkaConnection._write_now

    def _on_write(self, frames):
        now = _now()
        for frame in frames:
            for stamp in _stamps(frame):
                _written.setdefault(stamp, now)
        return _write_now(self, frames)

    server.KafkaConnection._write_now = _on_write

    # Every direct send (SocketWriter.send_bytes).
    _send_now = socket_writer.SocketWriter.send_bytes

    def _on_send_now(writer, data):
        transport = writer.transport
        now = _now()
        sent = _send_now(writer, data)
        for stamp in _stamps(data[:sent], ("out", id(transport))) if sent else ():
            _sent.setdefault(stamp, now)
        return sent

    socket_writer.SocketWriter.send_bytes = _on_send_now

    _write_some = tcp.Connection.writeSomeData

    def _on_write_some(self, data):
        now = _now()
        for stamp in _stamps(data, ("out", id(self))):
            _sent.setdefault(stamp, now)
        return _write_some(self, data)

    tcp.Connection.writeSomeData = _on_write_some

    def _dump():
        with open(os.path.join(_DIR, f"records-{os.getpid()}.txt"), "w") as out:
            for stamp in sorted(_read):
                polled, read = _read[stamp]
                out.write(f"{stamp} {polled:.6f} {read:.6f} {_written.get(stamp, 0):.6f} "
                          f"{_sent.get(stamp, 0):.6f}\n")
        with open(os.path.join(_DIR, f"fetches-{os.getpid()}.txt"), "w") as out:
            out.write("".join(f"{t:.6f}\n" for t in _fetches))

    atexit.register(_dump)
