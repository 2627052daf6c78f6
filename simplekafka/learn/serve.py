"""Serve a learner's stage 4 broker on 127.0.0.1: their framing, request loop and handlers.

``python -m simplekafka.learn.serve LEARNER_DIR DATA_DIR PORT`` loads
``stage4_broker.py`` from LEARNER_DIR and, for each TCP connection (one thread
each), makes one of the learner's ``Connection`` objects and only moves bytes:
what ``recv`` returns goes to ``Connection.data_received``, what that returns
goes to ``sendall``, and the connection is closed when it says so. Framing,
headers, dispatch and answers are the learner's code.

Before serving, ``plug.install`` puts the learner's passed stage 1 and stage 3
exercises into the served path (stage 3's ``Segment`` keeps the partitions on
disk, stage 1's ``decode_varint`` walks the records of each produced batch);
the functions in use are printed first.

The one thing added around the learner's ``Broker``: a Fetch that finds
nothing waits (up to its max_wait_ms, in short sleeps) and asks again, as a
broker parks it, so clients do not spin; and one lock, since the learner's
``Broker`` need not be thread-safe. A request the learner's code fails on is
logged with its traceback on stderr and the connection closed, which is what
a client of a real broker would see.
"""

from __future__ import annotations

import signal
import socketserver
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType, ModuleType
from typing import Protocol

from simplekafka.learn import plug
from simplekafka.learn.loader import load_learner_module
from simplekafka.protocol.fields import Struct

HOST = "127.0.0.1"
FETCH_RETRY_S = 0.05
RECV_BYTES = 65536
STAGES_USED = (1, 3)


def _fetched_bytes(body: dict | None) -> int:
    if not body:
        return 0
    return sum(len(p.get("records") or b"") for t in body.get("responses", [])
               for p in t.get("partitions", []))


class Broker(Protocol):
    """Stage 4's contract: the learner's Broker (one handler per API, and close)."""

    def api_versions(self, version: int, request: Struct) -> dict: ...
    def metadata(self, version: int, request: Struct) -> dict: ...
    def produce(self, version: int, request: Struct) -> dict | None: ...
    def fetch(self, version: int, request: Struct) -> dict: ...
    def close(self) -> None: ...


class SharedBroker:
    """The learner's Broker behind one lock; its fetch waits for data up to max_wait_ms."""

    def __init__(self, broker: Broker):
        self._broker = broker
        self._lock = threading.Lock()

    def _call(self, name: str, version: int, request: Struct) -> dict | None:
        with self._lock:
            return getattr(self._broker, name)(version, request)

    def api_versions(self, version: int, request: Struct) -> dict | None:
        return self._call("api_versions", version, request)

    def metadata(self, version: int, request: Struct) -> dict | None:
        return self._call("metadata", version, request)

    def produce(self, version: int, request: Struct) -> dict | None:
        return self._call("produce", version, request)

    def fetch(self, version: int, request: Struct) -> dict | None:
        deadline = time.monotonic() + getattr(request, "max_wait_ms", 0) / 1000.0
        while True:
            body = self._call("fetch", version, request)
            if _fetched_bytes(body) or time.monotonic() >= deadline:
                return body
            time.sleep(FETCH_RETRY_S)

    def close(self) -> None:
        with self._lock:
            self._broker.close()


class LearnerServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, module: ModuleType, broker: SharedBroker, port: int):
        super().__init__((HOST, port), _Socket)
        self.module = module
        self.broker = broker


class _Socket(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: LearnerServer = self.server  # type: ignore[assignment]
        try:
            connection = server.module.Connection(server.broker)
            while True:
                data = self.request.recv(RECV_BYTES)
                if not data:
                    return
                out, close = connection.data_received(data)
                if out:
                    self.request.sendall(out)
                if close:
                    return
        except Exception:
            print(f"request failed, closing the connection:\n{traceback.format_exc()}",
                  file=sys.stderr, flush=True)


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM: close the logs cleanly, as on Ctrl-C


def main(argv: list[str]) -> int:
    learner_dir, data_dir, port = Path(argv[0]), Path(argv[1]), int(argv[2])
    plugged = plug.install(learner_dir, stages=STAGES_USED)
    for each in plugged:
        print(f"in use: {each}", flush=True)
    if not plugged:
        print("in use: SimpleKafka's own Segment and varint reader (your stage 3 exercises "
              "and stage 1 exercise 1 have not passed yet)", flush=True)
    module = load_learner_module(learner_dir, "stage4_broker")
    data_dir.mkdir(parents=True, exist_ok=True)
    broker = SharedBroker(module.Broker(data_dir, HOST, port))
    signal.signal(signal.SIGTERM, _stop)
    with LearnerServer(module, broker, port) as server:
        print(f"serving {learner_dir / 'stage4_broker.py'} on {HOST}:{port}", flush=True)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
