"""Stage 1 demo: a real Kafka client talks to our codec, and we watch every byte.

    python -m stages.stage1_protocol

Listens on a free loopback port, points confluent-kafka (librdkafka) at it and
asks for the topic list. The client's first request is the ApiVersions v3
probe: we dissect it, answer with the probe answer (error 35 in v0 layout),
dissect the client's retry at an older version, answer it properly, then
answer its Metadata request with a cluster of one broker and no topics, so
``list_topics`` returns. The captured frames are saved as hex (in
``$SIMPLEKAFKA_DEMO_DIR`` or a temporary directory) for ``simplekafka inspect``.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from simplekafka.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    FrameDecoder,
    ProtocolError,
    api_versions_probe_response,
    decode_request,
    encode_frame,
    encode_response,
)
from simplekafka.protocol.dissect import dissect_frame, render
from simplekafka.protocol.messages import api_versions_body

DEADLINE_SECONDS = 60


def rule(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)), flush=True)


class TinyServer:
    """Just enough of a broker to watch a client connect: ApiVersions and Metadata."""

    def __init__(self, save_dir: Path):
        self.save_dir = save_dir
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.5)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.exchanges = 0
        self.first_request: bytes | None = None
        self.errors: list[str] = []
        self.seen_versions: set[int] = set()
        self.requests: list[tuple[int, int, str | None]] = []  # (api_key, version, client_id)

    def serve(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    conn, _ = self.listener.accept()
                except TimeoutError:
                    continue
                threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
        finally:
            self.listener.close()

    def handle(self, conn: socket.socket) -> None:
        decoder = FrameDecoder(max_length=1024 * 1024)
        conn.settimeout(0.5)
        with conn:
            while not self.stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                try:
                    for payload in decoder.feed(data):
                        answer = self.answer(payload)
                        if answer is not None:
                            conn.sendall(encode_frame(answer))
                except ProtocolError as exc:
                    self.errors.append(str(exc))
                    return

    def answer(self, payload: bytes) -> bytes | None:
        header, body = decode_request(payload)
        self.requests.append((header.api_key, header.api_version, header.client_id))
        self.exchanges += 1
        number = self.exchanges
        if self.first_request is None:
            self.first_request = payload
        if header.api_key == ApiKey.API_VERSIONS:
            low, high = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
            first_time = header.api_version not in self.seen_versions
            self.seen_versions.add(header.api_version)
            title = f"request {number}: the client says hello (ApiVersions v{header.api_version})"
            if first_time:
                show(title, payload, self.save_dir / f"request{number}.hex")
            else:
                rule(title + ", again (a new connection)")
            if not low <= header.api_version <= high:
                reply = api_versions_probe_response(header.correlation_id)
                print(f"v{header.api_version} is above our {low}-{high}: we answer error 35 "
                      f"(UNSUPPORTED_VERSION) in the v0 layout, listing what we do support.")
                if first_time:
                    show("our answer: the probe answer", reply, None,
                         response=(ApiKey.API_VERSIONS, 0))
                return reply
            reply = encode_response(ApiKey.API_VERSIONS, header.api_version,
                                    header.correlation_id, api_versions_body())
            print(f"v{header.api_version} we speak: a real ApiVersions v{header.api_version} "
                  f"response, {len(reply)} bytes: error_code 0 and the same list of APIs.")
            return reply
        if header.api_key == ApiKey.METADATA:
            rule(f"request {number}: Metadata v{header.api_version} from {header.client_id!r}")
            if body.topics is None:
                wanted = "every topic (topics = null)"
            elif not body.topics:
                wanted = "no topics, just the brokers (topics = [])"
            else:
                wanted = "topics " + ", ".join(t.name for t in body.topics)
            print(f"the client asks for {wanted}; we answer: one broker (us), no topics.")
            reply = encode_response(ApiKey.METADATA, header.api_version, header.correlation_id, {
                "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port}],
                "cluster_id": "stage1-demo",
                "controller_id": 0,
                "topics": [],
            })
            return reply
        rule(f"request {number}: {ApiKey(header.api_key).name} v{header.api_version}")
        print("not part of this stage: no answer (the client will time out on it).")
        return None


def show(title: str, frame_payload: bytes, save_to: Path | None,
         response: tuple[int, int] | None = None) -> None:
    rule(title)
    if response:
        dissection = dissect_frame(frame_payload, prefix=False, response=True,
                                   api_key=response[0], api_version=response[1])
    else:
        dissection = dissect_frame(frame_payload, prefix=False)
    print(render(dissection), end="")
    if save_to is not None:
        save_to.write_text(encode_frame(frame_payload).hex() + "\n")
        print(f"(saved as hex: simplekafka inspect {save_to})")


def main() -> int:
    demo_dir = os.environ.get("SIMPLEKAFKA_DEMO_DIR")
    save_dir = Path(demo_dir) if demo_dir else Path(tempfile.mkdtemp(prefix="stage1-"))
    save_dir.mkdir(parents=True, exist_ok=True)
    server = TinyServer(save_dir)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    print(f"listening on 127.0.0.1:{server.port}; starting confluent-kafka (librdkafka) ...")

    from confluent_kafka import admin

    client = admin.AdminClient({
        "bootstrap.servers": f"127.0.0.1:{server.port}",
        "client.id": "stage1-demo",
        "socket.timeout.ms": 5000,
        "log_level": 3,  # errors only: the demo prints the conversation itself
    })
    started = time.monotonic()
    try:
        metadata = client.list_topics(timeout=20)
        rule("the client is satisfied")
        brokers = sorted(str(b) for b in metadata.brokers.values())
        print(f"list_topics() returned: cluster id {metadata.cluster_id!r}, brokers {brokers}, "
              f"topics {list(metadata.topics)}")
        ok = True
    except Exception as exc:  # the demo reports what went wrong instead of a traceback
        print(f"list_topics() failed: {exc}", file=sys.stderr)
        ok = False
    finally:
        server.stop.set()
        thread.join(timeout=5)
        del client
    print(f"\n{server.exchanges} requests answered in {time.monotonic() - started:.1f} s; "
          f"frames saved in {save_dir}")
    if server.errors:
        print("decoding errors: " + "; ".join(server.errors), file=sys.stderr)
    return 0 if ok and not server.errors else 1


if __name__ == "__main__":
    sys.exit(main())
