"""Per-record timestamps inside three brokers, for ``benchmarks/replication_stages.py`` only.

Python imports ``sitecustomize`` at start-up from the path; replication_stages.py puts
this directory first on the PYTHONPATH of the brokers it starts and names an output
directory in SIMPLEKAFKA_REPLICATION_TRACE. Any other process (or no variable) leaves
this module inert. For every ``LATENCY:<µs>`` stamp rdkafka_performance -l puts in its
records it notes, on this machine's wall clock: when the leader read the produce,
appended it (and at which offset), sent it to each follower and to the consumer; when
a follower read it, and when each follower sent its fetches (each follower named by the
port of its connection, as both ends see it); when the leader's high
watermark moved; when each fetch reached the leader; and how long each reactor turn
took, in wall and in CPU time. Written at exit as JSON, one file per broker.
"""

import os
import sys

_DIR = os.environ.get("SIMPLEKAFKA_REPLICATION_TRACE")
if _DIR and "broker" in sys.argv:
    import atexit
    import json
    import re
    import time

    from twisted.internet import epollreactor, tcp

    from simplekafka.broker import partition, server, socket_writer
    from simplekafka.broker.controller import channel

    _STAMP = re.compile(rb"LATENCY:(\d+)(?=\D)")
    _now = time.time
    _events: dict[str, list] = {name: [] for name in (
        "read", "append", "sent", "high_watermark", "fetch_arrived", "follower_read",
        "follower_fetch_sent", "turn")}
    _followers: set[int] = set()  # transports of replica fetchers' connections
    _ports: dict[int, int] = {}  # transport -> the follower's port (names the follower)

    def _port(transport, mine: bool) -> int:
        """The follower end's port: the leader sees it as the peer's, the follower as its own."""
        key = id(transport)
        port = _ports.get(key)
        if port is None:
            try:
                port = _ports[key] = (transport.getHost() if mine else transport.getPeer()).port
            except Exception:
                port = _ports[key] = -1
        return port
    _tails: dict[tuple[str, int], bytes] = {}

    def _stamps(data, stream) -> list[int]:
        """Stamps in ``data``, and one cut by the previous piece of the same stream."""
        data = _tails.get(stream, b"") + bytes(data)
        _tails[stream] = data[-32:]
        return [int(m) for m in _STAMP.findall(data)] if b"LATENCY:" in data else []

    _data_received = server.KafkaConnection.dataReceived

    def _on_data(self, data):
        now = _now()
        if b"simplekafka-replica-fetcher" in data:
            _followers.add(id(self.transport))
        if len(data) >= 6 and data[4:6] == b"\x00\x01":  # api key 1: a fetch
            _events["fetch_arrived"].append(
                (now, "follower" if id(self.transport) in _followers else "client",
                 _port(self.transport, False)))
        stamps = _stamps(data, ("in", id(self)))
        if stamps:
            _events["read"].append((now, stamps))
        return _data_received(self, data)

    server.KafkaConnection.dataReceived = _on_data

    def _note_sent(transport, data, now):
        stamps = _stamps(data, ("out", id(transport)))
        if stamps:
            _events["sent"].append(
                (now, "follower" if id(transport) in _followers else "client", stamps,
                 _port(transport, False)))

    _send_now = socket_writer.SocketWriter.send_bytes

    def _on_send_now(writer, data):
        transport = writer.transport
        now = _now()
        sent = _send_now(writer, data)
        if sent:
            _note_sent(transport, data[:sent], now)
        return sent

    socket_writer.SocketWriter.send_bytes = _on_send_now
    _write_some = tcp.Connection.writeSomeData

    def _on_write_some(self, data):
        _note_sent(self, data, _now())
        return _write_some(self, data)

    tcp.Connection.writeSomeData = _on_write_some

    _append = partition.Partition.append_as_leader

    def _on_append(self, records, *args, **kwargs):
        result = _append(self, records, *args, **kwargs)
        stamps = _stamps(records or b"", ("append", id(self)))
        if stamps:
            _events["append"].append((_now(), result.last_offset, stamps))
        return result

    partition.Partition.append_as_leader = _on_append
    _advance = partition.Partition.maybe_advance_high_watermark

    def _on_advance(self):
        now = _now()  # before the advance answers anyone
        moved = _advance(self)
        if moved and not self.topic.startswith("__"):
            _events["high_watermark"].append((now, self.high_watermark))
        return moved

    partition.Partition.maybe_advance_high_watermark = _on_advance
    _reader_data = channel.ResponseReader.dataReceived

    def _on_reader_data(self, data):
        _events["follower_read"].append((_now(), _stamps(data, ("reader", id(self))),
                                         _port(self.transport, True)))
        return _reader_data(self, data)

    channel.ResponseReader.dataReceived = _on_reader_data
    _reader_send = channel.ResponseReader.send

    def _on_reader_send(self, correlation_id, payload):
        _events["follower_fetch_sent"].append((_now(), _port(self.transport, True)))
        return _reader_send(self, correlation_id, payload)

    channel.ResponseReader.send = _on_reader_send

    class _TimedPoller:
        """Notes each reactor turn with events: (poll returned, wall s, events, CPU s)."""

        def __init__(self, poller):
            self._poller = poller
            self._returned = None

        def poll(self, *args):
            now, cpu = _now(), time.thread_time()
            if self._returned is not None and self._returned[1]:
                _events["turn"].append((self._returned[0], now - self._returned[0],
                                        self._returned[1], cpu - self._returned[2]))
            events = self._poller.poll(*args)
            self._returned = (_now(), len(events), time.thread_time())
            return events

        def __getattr__(self, name):
            return getattr(self._poller, name)

    _reactor_init = epollreactor.EPollReactor.__init__

    def _init(self, *args, **kwargs):
        _reactor_init(self, *args, **kwargs)
        self._poller = _TimedPoller(self._poller)

    epollreactor.EPollReactor.__init__ = _init

    def _dump():
        with open(os.path.join(_DIR, f"broker-{os.getpid()}.json"), "w") as out:
            json.dump(_events, out)

    atexit.register(_dump)
