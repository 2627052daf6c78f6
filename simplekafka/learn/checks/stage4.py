"""Stage 4 checks: the learner's framing and request loop on byte streams cut every way,
then their Broker's answers directly, then kcat and confluent-kafka against it, served."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Protocol

from simplekafka.cluster.local import free_port
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps, byte_diff
from simplekafka.learn.segment_log import SegmentLog
from simplekafka.learn.solutions import stage4_broker as reference
from simplekafka.protocol import (
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from simplekafka.protocol.dissect import dissect_frame, dissect_records
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.framing import FrameTooLargeError, encode_frame
from simplekafka.protocol.records import build_batch, parse_batches

HOST = "127.0.0.1"
START_TIMEOUT = 60.0
CLIENT_TIMEOUT = 90.0


def _reference_api_versions(version: int, request: Struct | None) -> dict:
    """The reference broker's ApiVersions body (its handler reads no broker state)."""
    return reference.Broker.api_versions(None, version, request)  # type: ignore[arg-type]


def _request(api_key: ApiKey, version: int, body: dict) -> Struct:
    """A request body as the broker gets it: encoded, then decoded by SimpleKafka's codec."""
    _header, request = decode_request(encode_request(api_key, version, 1, "learn-check", body))
    if request is None:  # (only a bodiless request decodes to None: none is sent here)
        raise ValueError(f"{api_key.name} v{version} decoded to no body")
    return request


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _call(steps: Steps, what: str, method: Callable[..., object], *args: object) -> object:
    steps.step(what)
    try:
        return method(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise steps.fail(f"{what} raised {type(exc).__name__}: {exc}", "an answer",
                         f"{type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def served(learner_dir: Path, workdir: Path, steps: Steps) -> Iterator[int]:
    """Run ``python -m simplekafka.learn.serve`` on a free port; yield the port; stop it."""
    port = free_port()
    data = _fresh(workdir / "served-data")
    log_path = workdir / "served.log"
    root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "simplekafka.learn.serve", str(learner_dir), str(data),
             str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    steps.step(f"serve your Broker on {HOST}:{port} (output in {log_path})")
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise steps.fail("your broker exited at start", "a listening broker",
                                 log_path.read_text()[-3000:])
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 1):
                break
            if time.monotonic() > deadline:
                raise steps.fail("your broker did not listen", f"{HOST}:{port} open", "timeout")
            time.sleep(0.1)
        in_use = [line for line in log_path.read_text().splitlines() if line.startswith("in use")]
        steps.step("your broker runs with:\n" + "\n".join(f"     {line}" for line in in_use))
        yield port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        served_output = log_path.read_text()
        if "Traceback" in served_output:
            steps.step("your broker logged:\n" + served_output[-3000:])


def _run(steps: Steps, argv: list[str], what: str, stdin: str | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise ExerciseFailed(f"{argv[0]} is not installed (tools/bootstrap.sh installs it)")
    steps.step(f"{what}: {' '.join(argv)}")
    try:
        result = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                                timeout=CLIENT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise steps.fail(f"{what} did not finish", "exit within "
                         f"{CLIENT_TIMEOUT:.0f} s", f"still running; output so far: "
                         f"{exc.stdout!r} {exc.stderr!r}") from None
    if result.returncode != 0:
        raise steps.fail(f"{what} failed", "exit status 0",
                         f"exit status {result.returncode}: {result.stderr[-2000:]}")
    return result.stdout


def _records_on_disk(data_dir: Path) -> list[tuple[bytes | None, bytes | None]]:
    log = SegmentLog.open(data_dir)
    try:
        data = log.read(log.log_start_offset, 1 << 30)
    finally:
        log.close()
    return [(r.key, r.value) for batch in parse_batches(data) for r in batch]


# -- exercise 1: framing ---------------------------------------------------------------------

SMALL_PAYLOADS = [b"", b"a", b"hello", bytes(range(256)), b"\x00\x00\x00\x05" + b"y" * 126]
BIG_PAYLOAD = bytes(i % 251 for i in range(200_000))  # more than one recv of 65536 bytes
LIMIT = 100


def _show(payloads: list[bytes]) -> list[str]:
    """Payloads as the failure shows them: size and first bytes."""
    return [f"{len(p)} bytes" + (f" {bytes(p[:6]).hex(' ')}{' ...' if len(p) > 6 else ''}"
                                 if p else "") for p in payloads]


def _pieces(stream: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in pairwise(edges)]


def _describe(stream: bytes, cuts: list[int]) -> str:
    if not cuts:
        return "in one piece"
    if len(cuts) == len(stream) - 1:
        return "one byte at a time"
    edges = [0, *cuts, len(stream)]
    ranges = [f"[{a}:{b}]" for a, b in pairwise(edges)]
    shown = ", ".join(ranges[:8]) + (f", ... ({len(ranges)} pieces)" if len(ranges) > 8 else "")
    return f"in pieces {shown}"


def _splittings(stream: bytes, seed: int) -> Iterator[list[int]]:
    """Cut points: none, every byte, every single cut, and random cuts (repeatable)."""
    yield []
    yield list(range(1, len(stream)))
    yield from ([cut] for cut in range(1, len(stream)))
    chance = random.Random(seed)
    for _ in range(60):
        yield sorted(chance.sample(range(1, len(stream)), chance.randint(2, 12)))


def _feed_pieces(learner: ModuleType, steps: Steps, pieces: list[bytes],
                 what: str) -> list[tuple[int, bytes]]:
    """Feed a fresh FrameDecoder; (index of the feed that returned it, payload) for each."""
    decoder = learner.FrameDecoder()
    out = []
    for index, piece in enumerate(pieces):
        try:
            got = decoder.feed(piece)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise steps.fail(f"FrameDecoder.feed raised {type(exc).__name__} on the stream "
                             f"{what}", "payloads", f"{type(exc).__name__}: {exc}") from exc
        out += [(index, bytes(p)) for p in got]
    return out


def _expect_frames(learner: ModuleType, steps: Steps, payloads: list[bytes],
                   splittings: Iterator[list[int]]) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    ends: list[int] = []
    for payload in payloads:
        ends.append((ends[-1] if ends else 0) + 4 + len(payload))
    for cuts in splittings:
        pieces = _pieces(stream, cuts)
        what = (f"of {len(payloads)} frames ({len(stream)} bytes, frames end at bytes "
                f"{ends}) fed {_describe(stream, cuts)}")
        got = _feed_pieces(learner, steps, pieces, what)
        if [p for _i, p in got] != payloads:
            steps.step(f"the stream {what}")
            raise steps.fail("the payloads feed returned, over all the feeds", _show(payloads),
                             _show([p for _i, p in got]))
        # Each frame comes out of the feed that brings its last byte, not a later one.
        piece_ends = [len(b"".join(pieces[: i + 1])) for i in range(len(pieces))]
        wanted = [next(i for i, e in enumerate(piece_ends) if e >= end) for end in ends]
        if [i for i, _p in got] != wanted:
            steps.step(f"the stream {what}")
            raise steps.fail("which feed (0 = the first) returned each frame: the one that "
                             "brought its last byte", wanted, [i for i, _p in got])
    steps.step(f"{len(payloads)} frames ({len(stream)} bytes) fed whole, byte by byte, cut at "
               "every byte and cut at random: every payload came out, in order, on time")


def check_framing(learner: ModuleType, _workdir: Path) -> None:
    steps = Steps()
    for payload in (b"", b"abc", bytes(300), BIG_PAYLOAD):
        failure = byte_diff(f"encode_frame({len(payload)} bytes)", encode_frame(payload),
                            learner.encode_frame(payload))
        if failure:
            raise failure
    steps.step("encode_frame: a 4-byte big-endian length, then the payload")
    _expect_frames(learner, steps, SMALL_PAYLOADS, _splittings(
        b"".join(encode_frame(p) for p in SMALL_PAYLOADS), seed=4))
    big = [b"first", BIG_PAYLOAD, b"", b"last"]
    stream = b"".join(encode_frame(p) for p in big)
    _expect_frames(learner, steps, big, iter([
        [], list(range(65536, len(stream), 65536)), list(range(1000, len(stream), 1000)),
        [9], [13, 14, 15], [len(stream) - 9], [len(stream) - 1]]))

    decoder = learner.FrameDecoder(LIMIT)
    steps.step(f"FrameDecoder({LIMIT}).feed(a frame of exactly {LIMIT} bytes)")
    got = decoder.feed(encode_frame(b"z" * LIMIT))
    steps.expect(f"a frame of exactly max_length ({LIMIT}) is accepted", _show([b"z" * LIMIT]),
                 _show(list(got)))
    for length in (LIMIT + 1, 1 << 30, -1):
        prefix = struct.pack(">i", length)
        decoder = learner.FrameDecoder(LIMIT)
        for n, byte in enumerate(prefix[:3]):
            steps.step(f"FrameDecoder({LIMIT}).feed(byte {n} of a prefix announcing {length})")
            steps.expect("nothing complete yet", [], list(decoder.feed(bytes([byte]))))
        steps.step(f"feed(byte 3 of the prefix announcing {length}): its body never sent")
        _expect_too_large(decoder, prefix[3:], steps, length, [])
    first, second = b"one", b"two!"
    decoder = learner.FrameDecoder(LIMIT)
    steps.step(f"FrameDecoder({LIMIT}).feed(frame {first!r}, frame {second!r}, then a prefix "
               f"announcing {LIMIT + 1} and 10 bytes), in one read")
    _expect_too_large(decoder, encode_frame(first) + encode_frame(second)
                      + struct.pack(">i", LIMIT + 1) + bytes(10), steps, LIMIT + 1,
                      [first, second])


class FrameDecoder(Protocol):
    """Exercise 1's contract: the learner's frame decoder."""

    def feed(self, data: bytes) -> list[bytes]: ...


def _expect_too_large(decoder: FrameDecoder, data: bytes, steps: Steps, length: int,
                      frames: list[bytes]) -> None:
    try:
        got = decoder.feed(data)
    except FrameTooLargeError as exc:
        steps.expect("FrameTooLargeError's length (the length announced)", length, exc.length)
        steps.expect("FrameTooLargeError's frames (the payloads completed before it in this "
                     "feed, which the server still answers)", _show(frames),
                     _show([bytes(f) for f in exc.frames]))
        return
    raise steps.fail(f"a frame announcing {length} bytes (limit {LIMIT}) is refused as soon as "
                     "its length is in", "FrameTooLargeError raised", f"returned {got!r}")


# -- exercise 2: the request loop ------------------------------------------------------------


class FakeBroker:
    """Canned answers that depend on the request, and a record of every call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.produced = 0

    def api_versions(self, version: int, request: Struct) -> dict:
        self.calls.append(f"api_versions({version})")
        return _reference_api_versions(version, request)

    def metadata(self, version: int, request: Struct) -> dict:
        names = None if request.topics is None else [t.name for t in request.topics]
        self.calls.append(f"metadata({version}, topics={names})")
        return {"throttle_time_ms": 0, "brokers": [{"node_id": 3, "host": "fake", "port": 1}],
                "cluster_id": "fake", "controller_id": 3,
                "topics": [{"error_code": 0, "name": n, "partitions": []} for n in names or []]}

    def produce(self, version: int, request: Struct) -> dict | None:
        self.calls.append(f"produce({version}, acks={request.acks})")
        if request.acks == 0:
            return None
        self.produced += 1
        return {"throttle_time_ms": 0, "responses": [
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": 0, "base_offset": 10 * self.produced,
                 "log_append_time_ms": -1, "log_start_offset": 0}
                for p in t.partition_data]} for t in request.topic_data]}

    def fetch(self, version: int, request: Struct) -> dict:
        self.calls.append(f"fetch({version})")
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": t.topic, "partitions": [
                {"partition_index": p.partition, "error_code": 0,
                 "high_watermark": p.fetch_offset + 7, "last_stable_offset": p.fetch_offset,
                 "log_start_offset": 0, "aborted_transactions": [], "records": b""}
                for p in t.partitions]} for t in request.topics]}


class Req:
    """One request of a check's stream: its bytes, and what the connection must do with it."""

    def __init__(self, what: str, payload: bytes, api_key: int = -1, version: int = -1,
                 correlation_id: int = 0, answer: str = "handler"):
        self.what = what
        self.payload = payload
        self.api_key, self.version, self.correlation_id = api_key, version, correlation_id
        self.answer = answer  # "handler" (None for acks=0), "probe" or "close"


def _req(what: str, api_key: ApiKey, version: int, correlation_id: int, body: dict,
         answer: str = "handler") -> Req:
    payload = encode_request(api_key, version, correlation_id, "learn-check", body)
    return Req(what, payload, int(api_key), version, correlation_id, answer)


def _raw(what: str, api_key: int, version: int, correlation_id: int, rest: bytes = b"") -> Req:
    payload = struct.pack(">hhih", api_key, version, correlation_id, 2) + b"me" + rest
    return Req(what, payload, api_key, version, correlation_id, "close")


def _produce_body(acks: int) -> dict:
    return {"acks": acks, "timeout_ms": 1000, "topic_data": [{"name": "orders", "partition_data": [
        {"index": 0, "records": build_batch([(b"k", b"v")])}]}]}


def _fetch_body(offset: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": "orders", "partitions": [
                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}


def _answered_stream() -> list[Req]:
    """Requests a connection answers (or, for acks=0, takes without an answer)."""
    probe = {"client_software_name": "learn-check", "client_software_version": "1"}
    return [
        _req("ApiVersions v3 (a version we do not speak)", ApiKey.API_VERSIONS, 3, 1, probe,
             "probe"),
        _req("ApiVersions v0", ApiKey.API_VERSIONS, 0, 2, {}),
        _req("ApiVersions v2", ApiKey.API_VERSIONS, 2, 3, {}),
        _req("Metadata v1, all topics", ApiKey.METADATA, 1, 4, {"topics": None}),
        _req("Metadata v8, orders", ApiKey.METADATA, 8, 5, {"topics": [{"name": "orders"}]}),
        _req("Produce v3, acks=1", ApiKey.PRODUCE, 3, 6, _produce_body(1)),
        _req("Produce v8, acks=0 (no answer)", ApiKey.PRODUCE, 8, 7, _produce_body(0)),
        _req("Fetch v4", ApiKey.FETCH, 4, 8, _fetch_body(0)),
        _req("Fetch v11", ApiKey.FETCH, 11, 2**31 - 1, _fetch_body(5)),
        _req("ApiVersions v4 (a version we do not speak)", ApiKey.API_VERSIONS, 4, 9,
             probe, "probe"),
        _req("Produce v7, acks=-1", ApiKey.PRODUCE, 7, -5, _produce_body(-1)),
        Req("ApiVersions v5, its 8 header bytes alone", struct.pack(">hhi", 18, 5, 10),
            int(ApiKey.API_VERSIONS), 5, 10, "probe"),
    ]


def _closing_requests() -> list[Req]:
    """Requests that close the connection: each is sent between two good ones."""
    cut = encode_request(ApiKey.METADATA, 1, 33, "learn-check", {"topics": [{"name": "x"}]})
    return [
        _raw("api key 99 (unknown)", 99, 0, 31),
        _req("CreateTopics v0 (an API this broker does not have)", ApiKey.CREATE_TOPICS, 0, 32,
             {"topics": [], "timeout_ms": 100}, "close"),
        _req("Metadata v0 (below the versions we speak)", ApiKey.METADATA, 0, 34,
             {"topics": []}, "close"),
        _raw("Metadata v9 (above the versions we speak)", int(ApiKey.METADATA), 9, 35),
        _req("Produce v2 (below)", ApiKey.PRODUCE, 2, 36, _produce_body(1), "close"),
        _raw("Fetch v12 (above)", int(ApiKey.FETCH), 12, 37),
        Req("Metadata v1 cut short (does not decode)", cut[:-3], int(ApiKey.METADATA), 1, 33,
            "close"),
        Req("a 5-byte request (no whole header)", b"\x00\x03\x00\x01\x00", answer="close"),
    ]


def _expected_response(req: Req, broker: FakeBroker) -> bytes | None:
    """The response payload SimpleKafka's rules give ``req`` (None: none, or a close)."""
    if req.answer == "probe":
        return encode_response(ApiKey.API_VERSIONS, 0, req.correlation_id, {
            "error_code": 35, "api_keys": _reference_api_versions(0, None)[
                "api_keys"]})
    if req.answer == "close":
        return None
    _header, request = decode_request(req.payload)
    body = getattr(broker, reference.HANDLERS[req.api_key])(req.version, request)
    if body is None:
        return None
    return encode_response(req.api_key, req.version, req.correlation_id, body)


def _split_frames(data: bytes) -> list[bytes]:
    """The frames in the learner's output, as far as they are whole (no checks: just cut)."""
    frames, pos = [], 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        if length < 0:
            break
        frames.append(data[pos + 4 : pos + 4 + length])
        pos += 4 + length
    if pos < len(data):
        frames.append(data[pos:])  # a piece that is not a whole frame, shown as it is
    return frames


class Scenario:
    def __init__(self, title: str, reqs: list[Req], tail: bytes = b"",
                 max_frame_bytes: int = reference.MAX_FRAME_BYTES):
        self.title, self.reqs, self.tail = title, reqs, tail
        self.max_frame_bytes = max_frame_bytes
        self.stream = b"".join(encode_frame(r.payload) for r in reqs) + tail
        closing = next((i for i, r in enumerate(reqs) if r.answer == "close"), None)
        self.served = reqs if closing is None else reqs[:closing]
        self.close = closing is not None or bool(tail)
        fake = FakeBroker()
        self.expected = [(r, _expected_response(r, fake)) for r in self.served]
        self.calls = fake.calls

    def run(self, learner: ModuleType, steps: Steps, cuts: list[int]) -> None:
        broker = FakeBroker()
        connection = learner.Connection(broker, self.max_frame_bytes)
        out, closed = b"", False
        for piece in _pieces(self.stream, cuts):
            sent, closed = connection.data_received(piece)
            out += bytes(sent)
            if closed:
                break
        how = f"{self.title}, sent {_describe(self.stream, cuts)}"
        got = _split_frames(out)
        wanted = [(r, e) for r, e in self.expected if e is not None]
        for n, (req, expected) in enumerate(wanted):
            if n >= len(got):
                steps.step(how)
                raise steps.fail(f"no response to {req.what} (correlation id "
                                 f"{req.correlation_id})", f"{len(wanted)} responses",
                                 f"{len(got)}")
            version = 0 if req.answer == "probe" else req.version
            failure = byte_diff(
                f"{how}: the response to {req.what}", expected, got[n],
                partial(dissect_frame, prefix=False, response=True, api_key=req.api_key,
                        api_version=version))
            if failure:
                raise failure
        if len(got) > len(wanted):
            steps.step(how)
            raise steps.fail("responses nobody should get (acks=0 wants none; nothing is "
                             "answered after a request that closes the connection)",
                             f"{len(wanted)} response(s)", f"{len(got)}: one more starts "
                             f"{got[len(wanted)][:8].hex(' ')}")
        steps.expect(f"{how}: the Broker methods called, in order", self.calls, broker.calls)
        steps.expect(f"{how}: close the connection at the end?", self.close, closed)


def _scenarios() -> list[Scenario]:
    first = _req("Metadata v1, orders", ApiKey.METADATA, 1, 20, {"topics": [{"name": "orders"}]})
    after = _req("ApiVersions v0", ApiKey.API_VERSIONS, 0, 22, {})
    found = [Scenario("12 requests", _answered_stream())]
    found += [Scenario(f"{first.what}, then {bad.what}, then {after.what}", [first, bad, after])
              for bad in _closing_requests()]
    found.append(Scenario(f"{first.what}, then a frame announcing 5000 bytes (limit 1000)",
                          [first], tail=struct.pack(">i", 5000) + bytes(40),
                          max_frame_bytes=1000))
    return found


def check_request_loop(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    for scenario in _scenarios():
        splittings = _splittings(scenario.stream, seed=len(scenario.stream))
        for cuts in splittings:
            scenario.run(learner, steps, cuts)
        steps.step(f"{scenario.title}: sent whole, byte by byte, cut at every byte and at "
                   "random: answered right")
    probe = _answered_stream()[0]
    closing = _closing_requests()[2]
    after = _req("ApiVersions v0", ApiKey.API_VERSIONS, 0, 22, {})
    with served(Path(learner.__file__ or ".").parent, workdir, steps) as port:
        with socket.create_connection((HOST, port), 10) as connection:
            connection.settimeout(30)
            connection.sendall(b"".join(encode_frame(r.payload) for r in (probe, closing, after)))
            steps.step(f"over TCP, in one write: {probe.what}, {closing.what}, {after.what}")
            answer = b""
            with contextlib.suppress(TimeoutError, ConnectionResetError):
                while chunk := connection.recv(65536):
                    answer += chunk
        steps.step(f"-> {len(answer)} bytes, then the connection closed")
        steps.expect("what came back over TCP: the ApiVersions error-35 answer, then nothing",
                     encode_frame(_expected_response(probe, FakeBroker()) or b"").hex(" "),
                     answer.hex(" "))


# -- exercises 3 to 6: the handlers -------------------------------------------------------


def check_api_versions(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    broker = learner.Broker(_fresh(workdir / "direct"), HOST, 9092)
    try:
        for version in (0, 1, 2):
            body = _call(steps, f"api_versions({version}, request)", broker.api_versions,
                         version, _request(ApiKey.API_VERSIONS, version, {}))
            expected = encode_response(ApiKey.API_VERSIONS, version, 7,
                                       _reference_api_versions(version, None))
            got = encode_response(ApiKey.API_VERSIONS, version, 7, body)
            failure = byte_diff(
                f"the ApiVersions v{version} answer", expected, got,
                partial(dissect_frame, prefix=False, response=True, api_key=18,
                        api_version=version))
            if failure:
                raise failure
    finally:
        broker.close()
    with served(Path(learner.__file__ or ".").parent, workdir, steps) as port:
        request = encode_frame(encode_request(ApiKey.API_VERSIONS, 0, 99, "learn-check", {}))
        with socket.create_connection((HOST, port), 10) as connection:
            connection.settimeout(30)
            connection.sendall(request)
            answer = b""
            while len(answer) < 4 or len(answer) < 4 + int.from_bytes(answer[:4], "big"):
                chunk = connection.recv(65536)
                if not chunk:
                    break
                answer += chunk
        steps.step(f"ApiVersions v0 over TCP -> {len(answer)} bytes")
        expected = encode_frame(encode_response(
            ApiKey.API_VERSIONS, 0, 99, _reference_api_versions(0, None)))
        steps.expect("the framed ApiVersions answer over TCP", expected.hex(" "),
                     answer.hex(" "))


def check_metadata(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    broker = learner.Broker(_fresh(workdir / "direct"), HOST, 9092)
    try:
        body = _call(steps, "metadata(8, topics=['orders'])", broker.metadata, 8,
                     _request(ApiKey.METADATA, 8, {"topics": [{"name": "orders"}],
                                                  "allow_auto_topic_creation": True}))
        got = _as_a_client_reads(ApiKey.METADATA, 8, body)
        steps.expect("the brokers in the answer", [(0, HOST, 9092)],
                     [(b.node_id, b.host, b.port) for b in got.brokers])
        steps.expect("the topics in the answer", [("orders", 0, [(0, 0, [0], [0])])],
                     [(t.name, t.error_code,
                       [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                        for p in t.partitions])
                      for t in got.topics])
        body = _call(steps, "metadata(1, topics=None): every topic", broker.metadata, 1,
                     _request(ApiKey.METADATA, 1, {"topics": None}))
        got = _as_a_client_reads(ApiKey.METADATA, 1, body)
        steps.expect("all topics", ["orders"], [t.name for t in got.topics])
    finally:
        broker.close()
    both = _Both(learner, workdir, steps)
    try:
        for version, topics in ((8, [{"name": "orders"}, {"name": "events"}]), (1, None),
                                (8, None)):
            both.call(f"metadata({version}, topics={topics})", "metadata", ApiKey.METADATA,
                      version, _request(ApiKey.METADATA, version, {
                          "topics": topics, "allow_auto_topic_creation": True}))
    finally:
        both.close()
    with served(Path(learner.__file__ or ".").parent, workdir, steps) as port:
        out = _run(steps, ["kcat", "-L", "-b", f"{HOST}:{port}", "-t", "orders", "-m", "30"],
                   "kcat -L")
        steps.step("kcat said:\n" + out)
        for wanted in (f"broker 0 at {HOST}:{port}", 'topic "orders" with 1 partitions',
                       "partition 0, leader 0, replicas: 0, isrs: 0"):
            if wanted not in out:
                raise steps.fail("kcat -L does not show your broker and topic", wanted, out)


def _same_answer(what: str, api_key: ApiKey, version: int, expected: dict | None,
                 got: object) -> None:
    """The learner's answer, encoded, byte for byte against the reference Broker's answer.

    Every field counts (is_internal, leader_epoch, log_append_time_ms, log_start_offset,
    last_stable_offset, ...), not only the ones a client happens to look at.
    """
    if expected is None or got is None:
        if expected is not got:
            raise ExerciseFailed(what, [f"expected: {expected!r}", f"got:      {got!r}"])
        return
    failure = byte_diff(what, encode_response(api_key, version, 5, expected),
                        encode_response(api_key, version, 5, got),
                        lambda data: dissect_frame(data, prefix=False, response=True,
                                                   api_key=int(api_key), api_version=version))
    if failure:
        raise failure


class _Both:
    """The learner's Broker and the reference Broker, each on its own data directory."""

    def __init__(self, learner: ModuleType, workdir: Path, steps: Steps):
        self.steps = steps
        self.data_dir = _fresh(workdir / "direct")
        self.reference_dir = _fresh(workdir / "reference")
        self.mine = learner.Broker(self.data_dir, HOST, 9092)
        self.theirs = reference.Broker(self.reference_dir, HOST, 9092)

    def call(self, what: str, method: str, api_key: ApiKey, version: int,
             request: Struct) -> object:
        """Ask both; the learner's answer must be the reference's, byte for byte."""
        got = _call(self.steps, what, getattr(self.mine, method), version, request)
        expected = getattr(self.theirs, method)(version, request)
        _same_answer(f"{what}: the whole answer", api_key, version, expected, got)
        return got

    def close(self) -> None:
        self.mine.close()
        self.theirs.close()


def _raw_log(data_dir: Path) -> bytes:
    log = SegmentLog.open(data_dir)
    try:
        return log.read(log.log_start_offset, 1 << 30)
    finally:
        log.close()


def _as_a_client_reads(api_key: ApiKey, version: int, body: object) -> Struct:
    """A response body dict, encoded and decoded again: what a client would read."""
    _correlation, struct = decode_response(api_key, version,
                                           encode_response(api_key, version, 5, body))
    return struct


def check_produce(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    data_dir = _fresh(workdir / "direct")
    broker = learner.Broker(data_dir, HOST, 9092)
    try:
        _call(steps, "metadata(8, topics=['orders']) (creates it)", broker.metadata, 8,
              _request(ApiKey.METADATA, 8, {"topics": [{"name": "orders"}]}))
        for first, values in ((0, [b"a", b"b", b"c"]), (3, [b"d"])):
            batch = build_batch([(None, v) for v in values])
            body = _call(steps, f"produce(7, acks=-1, orders-0: {len(values)} records)",
                         broker.produce, 7, _request(ApiKey.PRODUCE, 7, {
                             "acks": -1, "timeout_ms": 1000, "topic_data": [
                                 {"name": "orders", "partition_data": [
                                     {"index": 0, "records": batch}]}]}))
            got = _as_a_client_reads(ApiKey.PRODUCE, 7, body)
            answer = got.responses[0].partition_responses[0]
            steps.expect("the partition's answer (index, error_code, base_offset)",
                         (0, 0, first), (answer.index, answer.error_code, answer.base_offset))
        body = _call(steps, "produce(7, orders-1): a partition that does not exist",
                     broker.produce, 7, _request(ApiKey.PRODUCE, 7, {
                         "acks": 1, "timeout_ms": 1000, "topic_data": [
                             {"name": "orders", "partition_data": [
                                 {"index": 1, "records": build_batch([(None, b"x")])}]}]}))
        answer = _as_a_client_reads(ApiKey.PRODUCE, 7, body).responses[0].partition_responses[0]
        steps.expect("error_code for orders-1 (UNKNOWN_TOPIC_OR_PARTITION)", 3, answer.error_code)
        body = _call(steps, "produce(7, acks=0)", broker.produce, 7, _request(
            ApiKey.PRODUCE, 7, {"acks": 0, "timeout_ms": 1000, "topic_data": [
                {"name": "orders", "partition_data": [
                    {"index": 0, "records": build_batch([(None, b"e")])}]}]}))
        steps.expect("the answer to acks=0 (none: the client does not wait)", None, body)
    finally:
        broker.close()
    steps.expect("orders-0 on disk", [(None, v) for v in (b"a", b"b", b"c", b"d", b"e")],
                 _records_on_disk(data_dir / "orders-0"))
    both = _Both(learner, workdir, steps)
    try:
        both.call("metadata(8, topics=['orders'])", "metadata", ApiKey.METADATA, 8,
                  _request(ApiKey.METADATA, 8, {"topics": [{"name": "orders"}]}))
        batches = [build_batch([(b"k", b"v%d" % n) for n in range(count)]) for count in (2, 1, 3)]
        for acks, batch in zip((-1, 1, 0), batches):
            both.call(f"produce(7, acks={acks}, orders-0, 1 and -1, nosuch-0)", "produce",
                      ApiKey.PRODUCE, 7, _request(ApiKey.PRODUCE, 7, {
                          "acks": acks, "timeout_ms": 1000, "topic_data": [
                              {"name": "orders", "partition_data": [
                                  {"index": 0, "records": batch}, {"index": 1, "records": batch},
                                  {"index": -1, "records": batch}]},
                              {"name": "nosuch", "partition_data": [
                                  {"index": 0, "records": batch}]}]}))
    finally:
        both.close()
    failure = byte_diff("orders-0's log, byte for byte (offsets, leader epoch 0)",
                        _raw_log(both.reference_dir / "orders-0"),
                        _raw_log(both.data_dir / "orders-0"), dissect_records)
    if failure:
        raise failure
    with served(Path(learner.__file__ or ".").parent, workdir, steps) as port:
        _run(steps, ["kcat", "-P", "-b", f"{HOST}:{port}", "-t", "events", "-p", "0",
                     "-m", "30"], "kcat produces three messages", stdin="one\ntwo\nthree\n")
    steps.expect("events-0 on disk after kcat -P",
                 [(None, b"one"), (None, b"two"), (None, b"three")],
                 _records_on_disk(workdir / "served-data" / "events-0"))


def check_fetch(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    broker = learner.Broker(_fresh(workdir / "direct"), HOST, 9092)
    try:
        log = broker.create_topic("orders")
        first = build_batch([(b"k1", b"v1"), (b"k2", b"v2")])
        second = build_batch([(b"k3", b"v3")])
        log.append(first, leader_epoch=0)
        log.append(second, leader_epoch=0)
        steps.step("orders-0 holds offsets 0-1 and 2 (two batches)")
        for offset, wanted_records, wanted_error in ((0, 3, 0), (2, 1, 0), (3, 0, 0), (9, 0, 1)):
            body = _call(steps, f"fetch(11, orders-0 from offset {offset})", broker.fetch, 11,
                         _request(ApiKey.FETCH, 11, {
                             "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                             "max_bytes": 1 << 20, "topics": [{"topic": "orders", "partitions": [
                                 {"partition": 0, "fetch_offset": offset,
                                  "partition_max_bytes": 1 << 20}]}]}))
            answer = _as_a_client_reads(ApiKey.FETCH, 11, body).responses[0].partitions[0]
            records = [r for b in parse_batches(answer.records or b"") for r in b
                       if r.offset >= offset]
            steps.expect(f"fetch from {offset}: (error_code, high_watermark, records from it)",
                         (wanted_error, 3, wanted_records),
                         (answer.error_code, answer.high_watermark, len(records)))
    finally:
        broker.close()
    both = _Both(learner, workdir, steps)
    try:
        for broker in (both.mine, both.theirs):
            log = broker.create_topic("orders")
            log.append(first, leader_epoch=0)
            log.append(second, leader_epoch=0)
        for offset, max_bytes in ((0, 1 << 20), (1, 1), (3, 1 << 20), (9, 1 << 20)):
            both.call(f"fetch(11, orders-0 from {offset}, max {max_bytes}; orders-1, -1; "
                      "nosuch-0)",
                      "fetch", ApiKey.FETCH, 11, _request(ApiKey.FETCH, 11, {
                          "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                          "max_bytes": 1 << 20, "topics": [
                              {"topic": "orders", "partitions": [
                                  {"partition": 0, "fetch_offset": offset,
                                   "partition_max_bytes": max_bytes},
                                  {"partition": 1, "fetch_offset": 0,
                                   "partition_max_bytes": max_bytes},
                                  {"partition": -1, "fetch_offset": 0,
                                   "partition_max_bytes": max_bytes}]},
                              {"topic": "nosuch", "partitions": [
                                  {"partition": 0, "fetch_offset": 0,
                                   "partition_max_bytes": max_bytes}]}]}))
    finally:
        both.close()
    with served(Path(learner.__file__ or ".").parent, workdir, steps) as port:
        bootstrap = f"{HOST}:{port}"
        _run(steps, ["kcat", "-P", "-b", bootstrap, "-t", "events", "-p", "0", "-m", "30"],
             "kcat produces three messages", stdin="one\ntwo\nthree\n")
        out = _run(steps, ["kcat", "-C", "-b", bootstrap, "-t", "events", "-p", "0", "-o", "0",
                           "-e", "-q", "-m", "30"], "kcat consumes them")
        steps.expect("what kcat -C printed", ["one", "two", "three"], out.split())
        _confluent_round_trip(steps, bootstrap)


def _confluent_round_trip(steps: Steps, bootstrap: str) -> None:
    try:
        from confluent_kafka import Consumer, Producer, TopicPartition
    except ImportError:
        raise ExerciseFailed("confluent-kafka is not installed "
                             "(pip install -e '.[clients]')") from None
    sent = [(f"key-{n}".encode(), f"value-{n}".encode()) for n in range(5)]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": False, "api.version.request.timeout.ms": 30000})
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err:
            failures.append(str(err))

    for key, value in sent:
        producer.produce("round-trip", value=value, key=key, partition=0, on_delivery=delivered)
    left = producer.flush(CLIENT_TIMEOUT)
    steps.step(f"confluent-kafka Producer sends {len(sent)} records; "
               f"{left} undelivered, errors {failures}")
    steps.expect("confluent-kafka deliveries (undelivered, errors)", (0, []), (left, failures))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    got: list[tuple[bytes | None, bytes | None]] = []
    try:
        consumer.assign([TopicPartition("round-trip", 0, 0)])
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while len(got) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append((message.key(), message.value()))
    finally:
        consumer.close()
    steps.step(f"confluent-kafka Consumer (assigned round-trip-0 from offset 0) reads {len(got)}")
    steps.expect("what confluent-kafka read back", sent, got)


STAGE = Stage(4, "Your own broker", "stage4_broker", "stages/stage4_broker/README.md", (
    Exercise(1, "framing",
             "cut Kafka's length-prefixed frames out of a TCP byte stream, however it is split",
             ("encode_frame", "FrameDecoder.feed"), check_framing,
             hints=("Read the chapter's section on the request flow (and stage 1's on frames).",
                    "Keep a buffer: append each read, then loop while it holds a whole length "
                    "prefix; check the length first, stop when the body is not all in yet, "
                    "else cut the frame off the front and go round again.")),
    Exercise(2, "the request loop",
             "answer each request by API key and version with its correlation id; close on "
             "what cannot be answered",
             ("Connection.data_received", "Connection.answer"), check_request_loop,
             hints=("Read the chapter's sections on the request flow and per-connection "
                    "ordering (and stage 1's on ApiVersions).",
                    "The first 8 bytes of every request are >hhi: key, version, correlation "
                    "id. Decide from those alone whether to close, send the v0 error-35 "
                    "answer, or decode and call the handler; answers go out in request order.")),
    Exercise(3, "ApiVersions",
             "say which APIs and versions your broker speaks",
             ("Broker.api_versions",), check_api_versions,
             hints=("Read the chapter's section on ApiVersions.",
                    "One entry per key of VERSIONS, in ascending key order, with its "
                    "(min, max).")),
    Exercise(4, "Metadata",
             "describe your broker and its topics: kcat -L works",
             ("Broker.metadata",), check_metadata,
             hints=("Read the chapter's section on Metadata.",
                    "Clients connect to the host and port you advertise: advertise your own; "
                    "a topic asked for by name is created.")),
    Exercise(5, "Produce",
             "append producers' batches to the log: kcat -P works",
             ("Broker.produce",), check_produce,
             hints=("Read the chapter's section on Produce.",
                    "SegmentLog.append returns the base offset the batch got; acks=0 wants no "
                    "answer at all.")),
    Exercise(6, "Fetch",
             "serve batches to consumers: kcat -C and confluent-kafka round trips work",
             ("Broker.fetch",), check_fetch,
             hints=("Read the chapter's section on Fetch.",
                    "Alone, the high watermark is the log end offset; an empty read is "
                    "b'' and never None.")),
), mutants=(
    Mutant("frame-length-counts-its-prefix", 1, "return SIZE.pack(len(payload)) + payload",
           "return SIZE.pack(len(payload) + 4) + payload"),
    Mutant("one-frame-per-read", 1, "        while len(self.buffer) >= 4:",
           "        if len(self.buffer) >= 4:"),
    Mutant("partial-tail-dropped", 1, "                return frames  # the rest of this",
           "                self.buffer.clear()\n                return frames  # the rest"),
    Mutant("waits-for-a-byte-more", 1, "if len(self.buffer) < 4 + length:",
           "if len(self.buffer) <= 4 + length:"),
    Mutant("limit-off-by-one", 1, "if length < 0 or length > self.max_length:",
           "if length < 0 or length >= self.max_length:"),
    Mutant("negative-length-accepted", 1, "if length < 0 or length > self.max_length:",
           "if length > self.max_length:"),
    Mutant("limit-checked-once-the-body-is-in", 1,
           "            if length < 0 or length > self.max_length:\n"
           "                raise FrameTooLargeError(f\"a frame announces {length} bytes; the "
           "limit is \"\n"
           "                                         f\"{self.max_length}\", length, frames)\n"
           "            if len(self.buffer) < 4 + length:\n"
           "                return frames  # the rest of this frame comes in a later read\n",
           "            if len(self.buffer) < 4 + length:\n"
           "                return frames  # the rest of this frame comes in a later read\n"
           "            if length < 0 or length > self.max_length:\n"
           "                raise FrameTooLargeError(f\"a frame announces {length} bytes; the "
           "limit is \"\n"
           "                                         f\"{self.max_length}\", length, frames)\n"),
    Mutant("too-large-forgets-the-frames-before", 1, "self.max_length}\", length, frames)",
           "self.max_length}\", length, [])"),
    Mutant("wrong-correlation-id", 2,
           "return encode_response(api_key, api_version, correlation_id, body)",
           "return encode_response(api_key, api_version, 0, body)"),
    Mutant("answer-encoded-at-the-highest-version", 2,
           "return encode_response(api_key, api_version, correlation_id, body)",
           "return encode_response(api_key, VERSIONS[api_key][1], correlation_id, body)"),
    Mutant("unsupported-version-answered-in-its-own-version", 2,
           "return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {",
           "return encode_response(ApiKey.API_VERSIONS, 3, correlation_id, {"),
    Mutant("unsupported-version-answered-error-0", 2,
           '"error_code": ErrorCode.UNSUPPORTED_VERSION,', '"error_code": ErrorCode.NONE,'),
    Mutant("unsupported-version-probe-closes", 2,
           "            if api_key == ApiKey.API_VERSIONS:\n",
           "            if False:\n"),
    Mutant("unsupported-version-of-other-apis-answered", 2,
           '            raise CloseConnection(f"api key {api_key} v{api_version} is not '
           'supported")\n', ""),
    Mutant("version-range-excludes-the-highest", 2, "if not low <= api_version <= high:",
           "if not low <= api_version < high:"),
    Mutant("unknown-api-key-skipped", 2, 'raise CloseConnection(f"unknown api key {api_key}")',
           "return None"),
    Mutant("unsupported-version-answer-unsorted", 2,
           "for key, (first, last) in sorted(VERSIONS.items())]",
           "for key, (first, last) in VERSIONS.items()]"),
    Mutant("header-needs-more-than-8-bytes", 2, "if len(payload) < HEADER_START.size:",
           "if len(payload) <= HEADER_START.size:"),
    Mutant("answers-after-a-close", 2, "            except CloseConnection:\n"
           "                return bytes(out), True\n", "            except CloseConnection:\n"
           "                close = True\n                continue\n"),
    Mutant("acks-0-gets-an-empty-frame", 2, "            if response is not None:\n"
           "                out += encode_frame(response)\n",
           "            out += encode_frame(response or b\"\")\n"),
    Mutant("too-large-frame-drops-the-answers-before", 2,
           "payloads, close = exc.frames, True", "payloads, close = [], True"),
    Mutant("too-large-frame-not-closed", 2, "payloads, close = exc.frames, True",
           "payloads, close = exc.frames, False"),
    Mutant("api-versions-min-version-zero", 3, '"min_version": low, "max_version": high}',
           '"min_version": 0, "max_version": high}'),
    Mutant("api-versions-answer-unsorted", 3, "for key, (low, high) in sorted(VERSIONS.items())]",
           "for key, (low, high) in VERSIONS.items()]"),
    Mutant("metadata-advertises-the-wrong-port", 4, '"port": self.port,', '"port": 9092,'),
    Mutant("metadata-leader-epoch-unknown", 4, '"leader_id": self.node_id, "leader_epoch": 0,',
           '"leader_id": self.node_id, "leader_epoch": -1,'),
    Mutant("produce-forgets-the-log-start-offset", 5,
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset\n'
           '                    answer["log_start_offset"] = log.log_start_offset\n',
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset\n'),
    Mutant("fetch-forgets-the-last-stable-offset", 6,
           '                    answer["last_stable_offset"] = log.log_end_offset\n', ""),
    Mutant("produce-answers-no-base-offset", 5,
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset',
           "log.append(data.records, leader_epoch=0)"),
    Mutant("produce-answers-acks-0", 5, "        if request.acks == 0:\n            return None\n",
           ""),
    Mutant("fetch-high-watermark-one-short", 6,
           'answer["high_watermark"] = log.log_end_offset',
           'answer["high_watermark"] = log.log_end_offset - 1'),
), real_processes=True)
