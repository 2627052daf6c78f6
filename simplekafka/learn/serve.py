"""Serve a learner's stage 4 ``Broker`` on 127.0.0.1: the socket, framing and codec are given.

``python -m simplekafka.learn.serve LEARNER_DIR DATA_DIR PORT`` loads
``stage4_broker.py`` from LEARNER_DIR and answers each connection's requests in
order, one thread per connection, with the learner's methods. A Fetch that
finds nothing waits (up to its max_wait_ms, in short sleeps) and asks again,
as a broker parks it, so clients do not spin. A request the learner's code
fails on is logged with its traceback on stderr and the connection closed,
which is what a client of a real broker would see.
"""

from __future__ import annotations

import signal
import socketserver
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from simplekafka.learn.loader import load_learner_module
from simplekafka.protocol import ApiKey, decode_request, encode_response
from simplekafka.protocol.framing import FrameDecoder, encode_frame
from simplekafka.protocol.messages import UnsupportedRequestError, api_versions_probe_response

HOST = "127.0.0.1"
FETCH_RETRY_S = 0.05
HANDLERS = {
    ApiKey.API_VERSIONS: "api_versions",
    ApiKey.METADATA: "metadata",
    ApiKey.PRODUCE: "produce",
    ApiKey.FETCH: "fetch",
}


def _fetched_bytes(body: dict) -> int:
    return sum(len(p.get("records") or b"") for t in body.get("responses", [])
               for p in t.get("partitions", []))


class LearnerServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, broker: Any, port: int):
        super().__init__((HOST, port), _Connection)
        self.broker = broker
        self.lock = threading.Lock()  # the learner's Broker is not thread-safe, nor need it be

    def answer(self, payload: bytes) -> bytes | None:
        """The framed response to one request payload (None: no response, as for acks=0)."""
        try:
            header, request = decode_request(payload)
        except UnsupportedRequestError as exc:
            if exc.header.api_key == ApiKey.API_VERSIONS:  # a newer client probing: answer v0
                return encode_frame(api_versions_probe_response(exc.header.correlation_id))
            raise
        name = HANDLERS.get(header.api_key)
        if name is None:
            raise ValueError(f"API key {header.api_key} is not part of the exercise")
        deadline = time.monotonic() + getattr(request, "max_wait_ms", 0) / 1000.0
        while True:
            with self.lock:
                body = getattr(self.broker, name)(header.api_version, request)
            if name != "fetch" or _fetched_bytes(body) or time.monotonic() >= deadline:
                break
            time.sleep(FETCH_RETRY_S)
        if body is None:
            return None
        return encode_frame(encode_response(header.api_key, header.api_version,
                                            header.correlation_id, body))


class _Connection(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        decoder = FrameDecoder()
        server: LearnerServer = self.server  # type: ignore[assignment]
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            for payload in decoder.feed(data):
                try:
                    response = server.answer(payload)
                except Exception:
                    print(f"request failed, closing the connection:\n{traceback.format_exc()}",
                          file=sys.stderr, flush=True)
                    return
                if response is not None:
                    self.request.sendall(response)


def _stop(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM: close the logs cleanly, as on Ctrl-C


def main(argv: list[str]) -> int:
    learner_dir, data_dir, port = Path(argv[0]), Path(argv[1]), int(argv[2])
    module = load_learner_module(learner_dir, "stage4_broker")
    data_dir.mkdir(parents=True, exist_ok=True)
    broker = module.Broker(data_dir, HOST, port)
    signal.signal(signal.SIGTERM, _stop)
    with LearnerServer(broker, port) as server:
        print(f"serving {learner_dir / 'stage4_broker.py'} on {HOST}:{port}", flush=True)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            with server.lock:
                broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
