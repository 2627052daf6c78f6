"""Stage 5 checks: the learner's connection core and client against SimpleKafka's own.

Exercises 1 and 2 drive the learner's ``ConnectionCore`` with bytes only (the
same requests and answers given to the reference core, the answers split at
every byte), then over a real socket to a real SimpleKafka broker
(``LocalCluster`` with one broker). Exercises 3 and 4 replay scripted clusters
against the learner's ``KafkaClient`` on a fake clock and compare the
timeline (refreshes, sleeps, requests, answers) with the reference's, step by
step.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import ClassVar, Protocol, TypedDict, TypeVar

from simplekafka.client.client import Deadline, metadata_request
from simplekafka.client.connection import (
    MAX_CORRELATION_ID,
    InFlightRequest,
    Response,
    SaslCredentials,
)
from simplekafka.client.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    NoBrokersAvailableError,
    error_for,
)
from simplekafka.client.metadata import ClusterMetadata, ClusterSnapshot
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps, byte_diff
from simplekafka.learn.solutions import stage5_client as reference
from simplekafka.protocol import ApiKey, ErrorCode
from simplekafka.protocol.api import ADVERTISED_VERSIONS
from simplekafka.protocol.dissect import dissect_frame
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.messages import (
    api_versions_body,
    api_versions_probe_response,
    decode_request,
    encode_response,
)
from simplekafka.protocol.records import build_batch, parse_batches

HOST = "127.0.0.1"
BROKER_VERSIONS = {int(key): value for key, value in ADVERTISED_VERSIONS.items()}

# -- exercises 1 and 2: the connection core, bytes only ---------------------------------


def _frames(data: bytes) -> list[bytes]:
    """Whole frames, length prefix included, as far as ``data`` holds them."""
    frames, pos = [], 0
    while len(data) - pos >= 4:
        end = pos + 4 + int.from_bytes(data[pos:pos + 4], "big", signed=True)
        if end > len(data) or end < pos + 4:
            break
        frames.append(data[pos:end])
        pos = end
    return frames


def _describe_requests(data: bytes) -> str:
    """What the bytes a core wrote ask for: one ``KEY vN #id`` per frame."""
    parts = []
    for frame in _frames(data):
        with contextlib.suppress(Exception):
            header, _body = decode_request(frame[4:])
            parts.append(f"{ApiKey(header.api_key).name} v{header.api_version} "
                         f"#{header.correlation_id}")
            continue
        parts.append(f"{len(frame)} bytes that do not decode")
    return ", ".join(parts) or "nothing"


def _expect_bytes(steps: Steps, what: str, expected: bytes, got: bytes) -> None:
    """Fail at the first wrong byte of the first wrong frame, with the steps so far."""
    if expected == got:
        return
    pos = 0
    for frame in _frames(expected):
        piece = got[pos:pos + len(frame)]
        failure = byte_diff(f"{what}, the frame at byte {pos} of the output", frame, piece,
                            lambda data: dissect_frame(data, prefix=True))
        if failure:
            lines = ["steps:", *(f"  {n}. {text}" for n, text in enumerate(steps.done, 1))]
            raise ExerciseFailed(failure.summary, [*lines, *failure.lines])
        pos += len(frame)
    raise steps.fail(f"{what}: more bytes than expected", _describe_requests(expected),
                     _describe_requests(got))


T = TypeVar("T")


class CoreSettings(TypedDict, total=False):
    """The keyword arguments the checks give ``ConnectionCore(...)``."""

    client_id: str
    max_in_flight: int
    max_frame_bytes: int
    broker_versions: dict[int, tuple[int, int]]
    sasl: SaslCredentials


class Core(Protocol):
    """Exercises 1 and 2's contract: what the checks call on a ``ConnectionCore``, the
    learner's or SimpleKafka's."""

    _next_correlation_id: int

    @property
    def in_flight_count(self) -> int: ...
    @property
    def waiting_count(self) -> int: ...
    def send_request(self, api_key: ApiKey, body: object, context: object = None,
                     expect_response: bool = True) -> object: ...
    def data_to_send(self) -> bytes: ...
    def in_flight(self) -> list[InFlightRequest]: ...
    def completed_without_response(self) -> list[InFlightRequest]: ...
    def pop_failed(self) -> list[tuple[InFlightRequest, Exception]]: ...
    def receive_data(self, data: bytes) -> list[Response]: ...


def _in_flight(core: Core) -> list[tuple[object, str, int, int]]:
    return [(r.context, ApiKey(r.api_key).name, r.api_version, r.correlation_id)
            for r in core.in_flight()]


class Pair:
    """The learner's core and the reference core, given the same calls side by side."""

    def __init__(self, learner: ModuleType, steps: Steps, settings: CoreSettings) -> None:
        self.mine: Core = learner.ConnectionCore(**settings)
        self.ref = reference.ConnectionCore(**settings)
        self.steps = steps

    def send(self, api_key: ApiKey, body: object, context: object,
             expect_response: bool = True) -> None:
        self.steps.step(f"send_request({ApiKey(api_key).name}, context={context!r}"
                        + ("" if expect_response else ", expect_response=False") + ")")
        for core in (self.ref, self.mine):
            core.send_request(api_key, body, context, expect_response)
        self.written()

    def written(self) -> bytes:
        """data_to_send() of both, compared byte for byte; with what is in flight and done."""
        expected, got = self.ref.data_to_send(), self.mine.data_to_send()
        failed = self.mine.pop_failed()
        if failed:
            request, error = failed[0]
            raise self.steps.fail(
                f"your _write raised {type(error).__name__} writing {request.api_key.name} "
                f"(the given _pump caught it and failed the request)", "the request written",
                f"{type(error).__name__}: {error}")
        self.steps.step(f"data_to_send() -> {_describe_requests(expected)}")
        _expect_bytes(self.steps, "the bytes data_to_send() returned", expected, got)
        self.steps.expect("in_flight(): (context, api, version, correlation id), oldest first",
                          _in_flight(self.ref), _in_flight(self.mine))
        self.steps.expect("completed_without_response() (requests that get no answer)",
                          [r.context for r in self.ref.completed_without_response()],
                          [r.context for r in self.mine.completed_without_response()])
        self.steps.expect("requests waiting (in-flight limit or handshake)",
                          self.ref.waiting_count, self.mine.waiting_count)
        return expected

    def answer_with_reference(self, data: bytes) -> None:
        """The reference's receive_data on both (exercise 1 must not need the learner's)."""
        self.steps.step(f"the broker answers: {len(_frames(data))} frame(s) "
                        f"(read by SimpleKafka's receive_data)")
        receive_data = reference.ConnectionCore.receive_data
        expected = [r.context for r in receive_data(self.ref, data)]
        try:
            # SimpleKafka's method on the learner's core, on purpose (the state is theirs).
            got = [r.context for r in receive_data(self.mine, data)]  # type: ignore[arg-type]
        except KafkaConnectionError as exc:
            raise self.steps.fail("SimpleKafka's receive_data refused the answers to your "
                                  "requests", f"the responses {expected}", str(exc)) from exc
        self.steps.expect("the responses, by context", expected, got)


class Broker:
    """Answers requests as a broker would: the codec's bodies, the request's id and version."""

    METADATA: ClassVar[dict] = {
                "brokers": [{"node_id": 1, "host": HOST, "port": 9092, "rack": None}],
                "cluster_id": "learn", "controller_id": 1,
                "topics": [{"error_code": 0, "name": "t", "is_internal": False,
                            "partitions": [{"error_code": 0, "partition_index": 0,
                                            "leader_id": 1, "leader_epoch": 3,
                                            "replica_nodes": [1], "isr_nodes": [1],
                                            "offline_replicas": []}]}]}
    PRODUCE: ClassVar[dict] = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 41, "log_append_time_ms": -1,
         "log_start_offset": 0}]}], "throttle_time_ms": 0}
    FETCH: ClassVar[dict] = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [{"partition_index": 0, "error_code": 0,
                                       "high_watermark": 2, "last_stable_offset": 2,
                                       "log_start_offset": 0, "aborted_transactions": [],
                                       "preferred_read_replica": -1,
                                       "records": build_batch([(b"k", b"v"), (None, b"w")])}]}]}
    SASL_HANDSHAKE: ClassVar[dict] = {"error_code": 0, "mechanisms": ["PLAIN"]}
    SASL_AUTHENTICATE: ClassVar[dict] = {"error_code": 0, "error_message": None, "auth_bytes": b"",
                         "session_lifetime_ms": 0}

    @classmethod
    def answers(cls, wire: bytes, correlation_shift: int = 0) -> bytes:
        out = b""
        for frame in _frames(wire):
            header, _body = decode_request(frame[4:])
            body = {ApiKey.METADATA: cls.METADATA, ApiKey.PRODUCE: cls.PRODUCE,
                    ApiKey.FETCH: cls.FETCH, ApiKey.SASL_HANDSHAKE: cls.SASL_HANDSHAKE,
                    ApiKey.SASL_AUTHENTICATE: cls.SASL_AUTHENTICATE,
                    }.get(ApiKey(header.api_key), api_versions_body())
            out += encode_frame(encode_response(header.api_key, header.api_version,
                                                header.correlation_id + correlation_shift, body))
        return out


def _produce_body(values: list[bytes], acks: int = -1) -> dict:
    return {"acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": build_batch(
            [(None, v) for v in values])}]}]}


def _fetch_body(topic: str = "t", offset: int = 0, max_wait_ms: int = 0) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1,
            "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def check_requests_out(learner: ModuleType, _workdir: Path) -> None:
    steps = Steps()
    steps.step("a new connection: ConnectionCore(client_id='learn-check', max_in_flight=3)")
    pair = Pair(learner, steps, {"client_id": "learn-check", "max_in_flight": 3})
    pair.send(ApiKey.METADATA, metadata_request(None), "m0")  # the handshake goes first
    pair.answer_with_reference(_handshake_answer(pair))
    pair.written()  # the queued Metadata, at the negotiated version
    pair.send(ApiKey.PRODUCE, _produce_body([b"fire"], acks=0), "p-acks0",
              expect_response=False)
    pair.send(ApiKey.FETCH, _fetch_body(), "f1")
    pair.send(ApiKey.METADATA, metadata_request(["t"], True), "m2")
    pair.send(ApiKey.PRODUCE, _produce_body([b"a", b"b"]), "p3")  # over the in-flight limit
    first = pair.ref.in_flight()[0]
    pair.answer_with_reference(Broker.answers(_request_frame(first)))
    pair.written()  # p3 goes out now
    rest = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    pair.answer_with_reference(Broker.answers(rest))

    steps.step("a connection whose versions are known, correlation ids near the end: "
               f"_next_correlation_id = {MAX_CORRELATION_ID - 1}")
    pair = Pair(learner, steps, {"client_id": "prodücer-ß", "max_in_flight": 5,
                                 "broker_versions": dict(BROKER_VERSIONS)})
    for core in (pair.ref, pair.mine):
        core._next_correlation_id = MAX_CORRELATION_ID - 1
    for n in range(3):
        pair.send(ApiKey.METADATA, {"topics": [{"name": f"t{n}"}]}, f"wrap{n}")
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    pair.answer_with_reference(Broker.answers(wire))


def _request_frame(request: InFlightRequest) -> bytes:
    """A stand-in request frame carrying ``request``'s key, version and id (for answers)."""
    from simplekafka.protocol.messages import encode_request

    body = request.body(request.api_version) if callable(request.body) else request.body
    return encode_frame(encode_request(request.api_key, request.api_version,
                                       request.correlation_id, "learn-check", body))


def _handshake_answer(pair: Pair) -> bytes:
    (request,) = pair.ref.in_flight()
    return Broker.answers(_request_frame(request))


# -- exercise 2 -------------------------------------------------------------------------

#: One response as compared: (context, API name, correlation id, body as a dict).
ResponseView = tuple[object, str, int, dict[str, object]]
#: What receive_data did: ("responses", [ResponseView]) or ("raised X", message).
Outcome = tuple[str, list[ResponseView] | str]


def _responses(responses: list[Response]) -> list[ResponseView]:
    return [(r.context, r.request.api_key.name, r.request.correlation_id, r.body.to_dict())
            for r in responses]


def _feed(core: Core, data: bytes) -> Outcome:
    """What receive_data did with ``data``: the responses, or the error it raised."""
    try:
        return ("responses", _responses(core.receive_data(data)))
    except NotImplementedError:
        raise
    except KafkaConnectionError as exc:
        return ("raised KafkaConnectionError", str(exc))
    except Exception as exc:
        return (f"raised {type(exc).__name__}", str(exc))


REQUESTS = [
    (ApiKey.METADATA, metadata_request(None), "metadata"),
    (ApiKey.PRODUCE, _produce_body([b"x", b"y"]), "produce"),
    (ApiKey.FETCH, _fetch_body(), "fetch"),
    (ApiKey.API_VERSIONS, {}, "api-versions"),
]


def _stream(settings: CoreSettings) -> tuple[bytes, list[Outcome]]:
    """The broker's answers to REQUESTS on a new connection, handshake first; as one stream,
    and what the reference core returns for it fed whole."""
    core = reference.ConnectionCore(**settings)
    for api_key, body, context in REQUESTS:
        core.send_request(api_key, body, context)
    stream = b""
    while core.in_flight_count or core.waiting_count:
        answers = Broker.answers(core.data_to_send())
        stream += answers
        core.receive_data(answers)
    fresh = reference.ConnectionCore(**settings)
    for api_key, body, context in REQUESTS:
        fresh.send_request(api_key, body, context)
    fresh.data_to_send()
    return stream, [_feed(fresh, stream)]


def _expect_outcome(steps: Steps, what: str, expected: list[Outcome], got: list[Outcome]
                    ) -> None:
    """Fail at the first response that differs: (context, api, correlation id), then its body."""
    if got == expected:
        return
    (want_kind, want), (got_kind, have) = expected[0], got[0]
    if want_kind != got_kind or not isinstance(want, list) or not isinstance(have, list):
        raise steps.fail(f"{what}: what receive_data returned or raised",
                         (want_kind, [r[:3] for r in want] if isinstance(want, list) else want),
                         (got_kind, [r[:3] for r in have] if isinstance(have, list) else have))
    steps.expect(f"{what}: the responses (context, api, correlation id)",
                 [r[:3] for r in want], [r[:3] for r in have])
    for want_response, got_response in zip(want, have):
        steps.expect(f"{what}: the body of the {want_response[0]!r} response",
                     want_response[3], got_response[3])


def _split_run(learner: ModuleType, settings: CoreSettings, pieces: list[bytes]
               ) -> list[Outcome]:
    core: Core = learner.ConnectionCore(**settings)
    for api_key, body, context in REQUESTS:
        core.send_request(api_key, body, context)
    core.data_to_send()
    got: list[ResponseView] = []
    for piece in pieces:
        outcome = _feed(core, piece)
        if not isinstance(outcome[1], list):  # it raised
            return [outcome]
        got += outcome[1]
        core.data_to_send()  # what the handshake's answer lets out
    return [("responses", got)]


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def check_responses_in(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    cases: list[CoreSettings] = [
        {"client_id": "learn-check"},
        {"client_id": "learn-check", "sasl": SaslCredentials("PLAIN", "alice", "alice-secret")}]
    for settings in cases:
        stream, expected = _stream(settings)
        frames = len(_frames(stream))
        login = " with a SASL PLAIN login" if "sasl" in settings else ""
        steps.step(f"a new connection{login}: send_request of "
                   f"{', '.join(c for _k, _b, c in REQUESTS)}; the broker's {frames} answers "
                   f"(handshake first) make a stream of {len(stream)} bytes")
        for cut in range(len(stream) + 1):
            got = _split_run(learner, settings, [stream[:cut], stream[cut:]])
            _expect_outcome(steps, f"receive_data(stream[:{cut}]) then receive_data("
                            f"stream[{cut}:])", expected, got)
        steps.step(f"the stream split at each of its {len(stream) + 1} positions: the same "
                   "responses")
        for size in (1, 2, 3, 5, 8, 13, 64, 1 << 16):
            got = _split_run(learner, settings, _chunks(stream, size))
            _expect_outcome(steps, f"the stream fed {size} bytes at a time", expected, got)
        steps.step("the stream fed 1, 2, 3, 5, 8, 13, 64 bytes at a time and whole: the same")
    _check_broken_answers(learner, steps)
    _check_against_a_broker(learner, workdir, steps)


def _ready_pair(learner: ModuleType, steps: Steps, settings: CoreSettings | None = None) -> Pair:
    pair = Pair(learner, steps, {"client_id": "learn-check", **(settings or {})})
    for core in (pair.ref, pair.mine):
        core.send_request(ApiKey.METADATA, metadata_request(None), "m")
        core.receive_data(Broker.answers(core.data_to_send()))
        core.data_to_send()
    return pair


def _same_outcome(steps: Steps, what: str, pair: Pair, data: bytes) -> None:
    steps.step(what)
    expected, got = _feed(pair.ref, data), _feed(pair.mine, data)
    _expect_outcome(steps, what, [expected], [got])
    steps.expect(f"{what}: then on the wire", _describe_requests(pair.ref.data_to_send()),
                 _describe_requests(pair.mine.data_to_send()))


def _check_broken_answers(learner: ModuleType, steps: Steps) -> None:
    pair = _ready_pair(learner, steps)
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    _same_outcome(steps, "an answer whose correlation id is 7 too high", pair,
                  Broker.answers(wire, correlation_shift=7))
    pair = _ready_pair(learner, steps)
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    _same_outcome(steps, "an answer whose correlation id is 1 too low", pair,
                  Broker.answers(wire, correlation_shift=-1))
    _check_large_correlation_ids(learner, steps)
    pair = _ready_pair(learner, steps, {"max_in_flight": 5})
    for core in (pair.ref, pair.mine):
        core.send_request(ApiKey.FETCH, _fetch_body(), "f")
        core.data_to_send()
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    good, bad = _frames(Broker.answers(wire))[0], _frames(Broker.answers(wire, 1))[1]
    _same_outcome(steps, "two answers in one read, the second with the wrong correlation id",
                  pair, good + bad)
    pair = _ready_pair(learner, steps)
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    _same_outcome(steps, "the Metadata answered, then an answer to nothing", pair,
                  Broker.answers(wire) + encode_frame(b"\0\0\0\5junk"))
    pair = _ready_pair(learner, steps, {"max_frame_bytes": 1000})
    _same_outcome(steps, "a frame announcing 1,000,000 bytes (max_frame_bytes=1000)", pair,
                  (10**6).to_bytes(4, "big") + b"\0" * 8)
    pair = _ready_pair(learner, steps)
    _same_outcome(steps, "an answer that does not decode as Metadata", pair,
                  encode_frame(pair.ref.in_flight()[0].correlation_id.to_bytes(4, "big") + b"\1"))
    pair = Pair(learner, steps, {"client_id": "learn-check"})
    for core in (pair.ref, pair.mine):
        core.send_request(ApiKey.METADATA, metadata_request(None), "m")
        core.data_to_send()
    probe = encode_frame(api_versions_probe_response(pair.ref.in_flight()[0].correlation_id))
    _same_outcome(steps, "an old broker answers ApiVersions with error 35 in v0 format", pair,
                  probe)


def _check_large_correlation_ids(learner: ModuleType, steps: Steps) -> None:
    """Ids past 256 are new int objects each time they are decoded: equal, not identical."""
    pair = Pair(learner, steps, {"client_id": "learn-check"})
    for core in (pair.ref, pair.mine):
        core._next_correlation_id = 100_000
        core.send_request(ApiKey.METADATA, metadata_request(None), "m")
    wire = pair.written()
    _same_outcome(steps, "ids counting from 100000: the handshake's answer (id 100000)", pair,
                  Broker.answers(wire))
    wire = b"".join(_request_frame(r) for r in pair.ref.in_flight())
    _same_outcome(steps, "then the Metadata's answer (id 100001)", pair, Broker.answers(wire))


# -- exercise 2 over a real socket -------------------------------------------------------

READ_SIZES = (1, 3, 7, 2, 64, 5, 4096)
BROKER_WAIT = 30.0


def _exchange(sock: socket.socket, core: Core, wanted: int, steps: Steps,
              sizes: Iterator[int]) -> list[Response]:
    """Write what the core has, read in the sizes given, until ``wanted`` responses came."""
    got: list[Response] = []
    deadline = time.monotonic() + BROKER_WAIT
    while len(got) < wanted:
        out = core.data_to_send()
        if out:
            sock.sendall(out)
        if time.monotonic() > deadline:
            raise steps.fail("the broker's answers did not all come back", f"{wanted} responses",
                             f"{len(got)} after {BROKER_WAIT:.0f} s")
        try:
            data = sock.recv(next(sizes))
        except TimeoutError:
            raise steps.fail("the broker did not answer", "an answer",
                             f"nothing for {sock.gettimeout()} s; in flight: "
                             f"{_in_flight(core)}") from None
        if not data:
            raise steps.fail("the broker closed the connection (it could not read a request?)",
                             f"{wanted} responses", f"{len(got)}, then the end of the stream")
        got += core.receive_data(data)
    return got


def _check_against_a_broker(learner: ModuleType, workdir: Path, steps: Steps) -> None:
    from simplekafka.cluster import LocalCluster

    cluster = LocalCluster(brokers=1, base_dir=workdir / "cluster", metrics=False,
                           start_timeout=60.0)
    steps.step(f"start a SimpleKafka broker (LocalCluster, logs in {workdir / 'cluster'})")
    cluster.start()
    try:
        port = cluster.broker_ports[1]
        with socket.create_connection((HOST, port), 10) as sock:
            sock.settimeout(15)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _talk_to_the_broker(learner, sock, port, steps)
    finally:
        cluster.stop()


def _talk_to_the_broker(learner: ModuleType, sock: socket.socket, port: int,
                        steps: Steps) -> None:
    core = learner.ConnectionCore(client_id="learn-check")
    sizes = itertools.cycle(READ_SIZES)
    steps.step(f"your ConnectionCore over a socket to {HOST}:{port}; reads of "
               f"{', '.join(map(str, READ_SIZES))} bytes in turn")
    deadline = time.monotonic() + BROKER_WAIT
    while True:
        core.send_request(ApiKey.METADATA, metadata_request(["learn-e2e"], True), "metadata")
        (answer,) = _exchange(sock, core, 1, steps, sizes)
        topics = {t.name: t for t in answer.body.topics}
        steps.expect("the broker in the Metadata answer", [(1, HOST, port)],
                     [(b.node_id, b.host, b.port) for b in answer.body.brokers])
        topic = topics.get("learn-e2e")
        if topic is not None and topic.partitions and topic.partitions[0].leader_id >= 0:
            break
        if time.monotonic() > deadline:
            raise steps.fail("learn-e2e never got a leader", "leader 1", repr(topic))
        time.sleep(0.1)
    steps.step("Metadata (auto-creating learn-e2e): broker 1 leads learn-e2e-0")
    values = [b"one", b"two", b"three"]
    for value in values:
        body = _produce_body([value])
        body["topic_data"][0]["name"] = "learn-e2e"
        core.send_request(ApiKey.PRODUCE, body, f"produce {value.decode()}")
    core.send_request(ApiKey.API_VERSIONS, {}, "api-versions")
    core.send_request(ApiKey.FETCH, _fetch_body("learn-e2e", 0, max_wait_ms=500), "fetch")
    sock.sendall(core.data_to_send())
    steps.step("five requests in flight at once: 3 Produce, ApiVersions, Fetch")
    select.select([sock], [], [], 10)
    time.sleep(0.3)  # let several answers arrive, so one read holds more than one frame
    first = core.receive_data(sock.recv(1 << 16))
    got = first + _exchange(sock, core, 5 - len(first), steps, sizes)
    steps.step(f"one read completed {len(first)} answer(s); the rest in small reads")
    steps.expect("the responses, in the order asked", [
        "produce one", "produce two", "produce three", "api-versions", "fetch"],
        [r.context for r in got])
    offsets = [(r.body.responses[0].partition_responses[0].error_code,
                r.body.responses[0].partition_responses[0].base_offset) for r in got[:3]]
    steps.expect("each Produce answer (error_code, base_offset)", [(0, 0), (0, 1), (0, 2)],
                 offsets)
    steps.expect("ApiVersions answered without error", 0, got[3].body.error_code)
    records = got[4].body.responses[0].partitions[0].records or b""
    steps.expect("the records the Fetch answer holds", values,
                 [r.value for b in parse_batches(records) for r in b])


# -- exercises 3 and 4: a scripted cluster on a fake clock -------------------------------


class FakeClock:
    """Time that passes only when the code sleeps or a scripted call takes time."""

    def __init__(self, events: list[str]) -> None:
        self.now = 1000.0
        self.events = events

    def monotonic(self) -> float:
        return self.now

    time = perf_counter = monotonic

    def sleep(self, seconds: float) -> None:
        self.events.append(f"sleep {seconds:.3f} s")
        self.now += max(0.0, seconds)


def _fake_deadline(clock: FakeClock) -> type:
    class FakeDeadline(Deadline):
        def __init__(self, timeout_s: float | None) -> None:
            self.at = None if timeout_s is None else clock.now + max(0.0, timeout_s)

        def remaining(self, cap: float | None = None) -> float:
            if self.at is None:
                return cap if cap is not None else 1e9
            left = max(0.0, self.at - clock.now)
            return left if cap is None else min(left, cap)

        @property
        def expired(self) -> bool:
            return self.at is not None and clock.now >= self.at

    return FakeDeadline


@contextlib.contextmanager
def _on_the_clock(module: ModuleType, clock: FakeClock) -> Iterator[None]:
    """The module's ``time`` and ``Deadline`` are the fake clock's while the scenario runs."""
    names = {"time": clock, "Deadline": _fake_deadline(clock)}
    saved = {name: module.__dict__[name] for name in names if name in module.__dict__}
    module.__dict__.update(names)
    try:
        yield
    finally:
        for name in names:
            module.__dict__.pop(name, None)
        module.__dict__.update(saved)


def metadata_body(leaders: dict[tuple[str, int], int], brokers: tuple[int, ...] = (1, 2, 3)
                  ) -> dict:
    """A Metadata answer: these brokers, each (topic, partition) led by its node (-1: none)."""
    topics: dict[str, list[dict]] = {}
    for (topic, partition), leader in sorted(leaders.items()):
        topics.setdefault(topic, []).append({
            "error_code": 0, "partition_index": partition, "leader_id": leader,
            "leader_epoch": 0, "replica_nodes": [max(leader, 1)], "isr_nodes": [],
            "offline_replicas": []})
    return {"brokers": [{"node_id": n, "host": HOST, "port": 9000 + n, "rack": None}
                        for n in brokers],
            "cluster_id": "scripted", "controller_id": 1,
            "topics": [{"error_code": 0, "name": name, "is_internal": False, "partitions": parts}
                       for name, parts in topics.items()]}


def _leaders_text(body: dict) -> str:
    parts = [f"{t['name']}-{p['partition_index']} led by {p['leader_id']}"
             for t in body["topics"] for p in t["partitions"]]
    brokers = ",".join(str(b["node_id"]) for b in body["brokers"])
    return (", ".join(parts) or "no topics") + f" (brokers {brokers})"


def _error_text(error: BaseException) -> str:
    code = getattr(error, "error_code", None)
    return type(error).__name__ + (f" ({ErrorCode(code).name})" if code is not None else "")


class ScriptedClient(Protocol):
    """Exercises 3 and 4's contract: a ``KafkaClient`` on a scripted cluster."""

    metadata: ClusterMetadata

    def leader_for(self, topic: str, partition: int, timeout_ms: int | None = None) -> int: ...
    def call_with_retries(self, operation: Callable[[Deadline], T],
                          timeout_ms: int | None = None, retries: int | None = None) -> T: ...


class RetryArgs(TypedDict, total=False):
    timeout_ms: int
    retries: int


#: One scripted run: ``run(client, clock, events)``; what it returns goes in the timeline.
Operation = Callable[[ScriptedClient, "FakeClock", list[str]], object]


@dataclass
class Scenario:
    """A scripted cluster: what the cache holds, what each refresh answers, how long it takes."""

    name: str
    cached: dict | None  # the cache at the start (fresh); None: empty and stale
    refreshes: Sequence[dict | BaseException]  # each refresh's Metadata answer, or an error it
    #                                          raises; the last repeats
    settings: dict[str, int] = field(default_factory=dict)
    refresh_s: float = 0.01


def _scripted_client(module: ModuleType, scenario: Scenario, clock: FakeClock,
                     events: list[str]) -> ScriptedClient:
    """The module's KafkaClient without a network: refresh_metadata follows the script."""
    client = object.__new__(module.KafkaClient)
    client.request_timeout_ms = 1000
    client.retry_backoff_ms = 100
    client.retry_backoff_max_ms = 1000
    for name, value in scenario.settings.items():
        setattr(client, name, value)
    client.metadata = ClusterMetadata()
    if scenario.cached is not None:
        client.metadata.replace(scenario.cached)
    script = list(scenario.refreshes)

    def refresh_metadata(topics: list[str] | None = None,
                         timeout_ms: int | None = None) -> ClusterSnapshot:
        answer = script.pop(0) if len(script) > 1 else script[0]
        clock.now += scenario.refresh_s
        call = f"refresh_metadata({topics!r}, timeout_ms={timeout_ms!r})"
        if isinstance(answer, BaseException):
            events.append(f"{call} raises {_error_text(answer)}")
            raise answer
        events.append(f"{call} -> {_leaders_text(answer)}")
        return client.metadata.replace(answer)

    client.refresh_metadata = refresh_metadata
    return client


def _replay(module: ModuleType, scenario: Scenario,
            run: Operation) -> list[str]:
    """The timeline of ``run(client, clock, events)`` on the scenario's scripted cluster."""
    events: list[str] = []
    clock = FakeClock(events)
    client = _scripted_client(module, scenario, clock, events)
    with _on_the_clock(module, clock):
        try:
            value = run(client, clock, events)
        except NotImplementedError:
            raise
        except KafkaError as exc:
            events.append(f"raised {_error_text(exc)}: {exc}")
        except ValueError as exc:
            events.append(f"raised ValueError: {exc}")
        else:
            events.append(f"returned {value!r}")
    return events


def _compare_timelines(what: str, scenario: Scenario, expected: list[str],
                       got: list[str]) -> None:
    steps = Steps()
    cache = ("empty (stale)" if scenario.cached is None
             else _leaders_text(scenario.cached) + " (fresh)")
    settings = ", ".join(f"{k}={v}" for k, v in scenario.settings.items())
    steps.step(f"scenario {scenario.name!r}: the cache holds {cache}"
               + (f"; {settings}" if settings else ""))
    for n, (want, have) in enumerate(itertools.zip_longest(expected, got)):
        if want != have:
            raise steps.fail(f"{what}, scenario {scenario.name!r}: step {n + 2} differs "
                             "from SimpleKafka's", want or "(nothing more)", have or "(nothing)")
        steps.step(want)


T0 = ("t", 0)
LEADERLESS = metadata_body({T0: -1, ("t", 1): 2})

LEADER_SCENARIOS = [
    (Scenario("the cache knows the leader", metadata_body({T0: 1}), [metadata_body({T0: 2})]),
     ("t", 0, None)),
    (Scenario("an empty cache is refreshed first", None, [metadata_body({T0: 2})]),
     ("t", 0, None)),
    (Scenario("an election: leaderless twice, then broker 3", LEADERLESS,
              [LEADERLESS, LEADERLESS, metadata_body({T0: 3})]), ("t", 0, 2000)),
    (Scenario("a leader the cache has no address for", metadata_body({T0: 4}),
              [metadata_body({T0: 4}), metadata_body({T0: 4}, (1, 2, 3, 4))]), ("t", 0, 2000)),
    (Scenario("never a leader, within 350 ms", LEADERLESS, [LEADERLESS]), ("t", 0, 350)),
    (Scenario("never a leader, within the default timeout", LEADERLESS, [LEADERLESS],
              {"request_timeout_ms": 430, "retry_backoff_ms": 70}), ("t", 0, None)),
    (Scenario("no time at all", None, [LEADERLESS]), ("t", 0, 0)),
    (Scenario("a topic that does not exist", None, [metadata_body({})]), ("nope", 0, 250)),
    (Scenario("a partition that does not exist", LEADERLESS, [LEADERLESS]), ("t", 5, 150)),
    (Scenario("no broker answers the first refresh", None,
              [NoBrokersAvailableError("nobody home"), metadata_body({T0: 1})]), ("t", 0, 500)),
    (Scenario("no broker answers a later refresh", LEADERLESS,
              [NoBrokersAvailableError("nobody home"), metadata_body({T0: 2})]), ("t", 0, 500)),
    (Scenario("slow refreshes", None, [LEADERLESS, LEADERLESS, metadata_body({T0: 1})],
              {"retry_backoff_ms": 50}, refresh_s=0.3), ("t", 0, 800)),
]


def check_leader_for(learner: ModuleType, _workdir: Path) -> None:
    for scenario, (topic, partition, timeout_ms) in LEADER_SCENARIOS:
        def run(client: ScriptedClient, _clock: FakeClock, _events: list[str],
                topic: str = topic, partition: int = partition,
                timeout_ms: int | None = timeout_ms) -> object:
            return client.leader_for(topic, partition, timeout_ms)

        _compare_timelines(f"leader_for({topic!r}, {partition}, timeout_ms={timeout_ms})",
                           scenario, _replay(reference, scenario, run),
                           _replay(learner, scenario, run))


# -- exercise 4 -------------------------------------------------------------------------

STALENESS_CASES: list[BaseException] = [
    *(error_for(code) for code in ErrorCode if code != ErrorCode.NONE),
    KafkaConnectionError("connection to broker 1 lost"),
    NoBrokersAvailableError("none of the bootstrap servers answered"),
    KafkaTimeoutError("no answer within 30.0 s"),
    KafkaError("a KafkaError without a code"),
    ValueError("not a Kafka error"),
]


def _check_needs_metadata_refresh(learner: ModuleType) -> None:
    for error in STALENESS_CASES:
        expected = reference.needs_metadata_refresh(error)
        got = learner.needs_metadata_refresh(error)
        if bool(got) != expected or not isinstance(got, bool):
            raise ExerciseFailed(f"needs_metadata_refresh({type(error).__name__}({str(error)!r}))",
                                 [f"expected: {expected!r}", f"got:      {got!r}"])


@dataclass
class Attempt:
    """What the broker does with one Produce: an error code, an exception, or success."""

    answer: int | BaseException = 0
    takes_s: float = 0.01
    mark_stale: bool = False  # the operation marks the cache stale itself (as a fetcher does)


RETRY_SCENARIOS: list[tuple[Scenario, list[Attempt], RetryArgs]] = [
    (Scenario("the leader moved from 1 to 2", metadata_body({T0: 1}), [metadata_body({T0: 2})]),
     [Attempt(ErrorCode.NOT_LEADER_OR_FOLLOWER), Attempt()], {}),
    (Scenario("an election: no leader for three refreshes", LEADERLESS,
              [LEADERLESS, LEADERLESS, metadata_body({T0: 3})]), [], {"timeout_ms": 5000}),
    (Scenario("the backoff is capped at 250 ms", LEADERLESS,
              [LEADERLESS] * 5 + [metadata_body({T0: 2})], {"retry_backoff_max_ms": 250}),
     [], {}),
    (Scenario("MESSAGE_TOO_LARGE is not retriable", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]), [Attempt(ErrorCode.MESSAGE_TOO_LARGE)], {}),
    (Scenario("TOPIC_AUTHORIZATION_FAILED is not retriable", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]), [Attempt(ErrorCode.TOPIC_AUTHORIZATION_FAILED)], {}),
    (Scenario("REQUEST_TIMED_OUT twice: retried without a refresh", metadata_body({T0: 1}),
              [metadata_body({T0: 2})]),
     [Attempt(ErrorCode.REQUEST_TIMED_OUT), Attempt(ErrorCode.REQUEST_TIMED_OUT), Attempt()], {}),
    (Scenario("NOT_ENOUGH_REPLICAS, with the cache stale anyway", metadata_body({T0: 1}),
              [metadata_body({T0: 2})]),
     [Attempt(ErrorCode.NOT_ENOUGH_REPLICAS, mark_stale=True), Attempt()], {}),
    (Scenario("at most 2 retries", metadata_body({T0: 1}), [metadata_body({T0: 1})]),
     [Attempt(ErrorCode.NOT_LEADER_OR_FOLLOWER)] * 4 + [Attempt()], {"retries": 2}),
    (Scenario("no retries at all", metadata_body({T0: 1}), [metadata_body({T0: 2})]),
     [Attempt(ErrorCode.NOT_LEADER_OR_FOLLOWER), Attempt()], {"retries": 0}),
    (Scenario("retriable errors until the deadline (350 ms)", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]),
     [Attempt(ErrorCode.NOT_ENOUGH_REPLICAS, takes_s=0.05)] * 20, {"timeout_ms": 350}),
    (Scenario("until the default deadline", metadata_body({T0: 1}), [metadata_body({T0: 1})],
              {"request_timeout_ms": 620, "retry_backoff_ms": 60}),
     [Attempt(ErrorCode.FENCED_LEADER_EPOCH)] * 30, {}),
    (Scenario("a ValueError is never retried", metadata_body({T0: 1}), [metadata_body({T0: 1})]),
     [Attempt(ValueError("a bug in the operation")), Attempt()], {}),
    (Scenario("the connection was lost", metadata_body({T0: 1}), [metadata_body({T0: 1})]),
     [Attempt(KafkaConnectionError("connection to broker 1 lost")), Attempt()], {}),
    (Scenario("a request timed out on the client", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]),
     [Attempt(KafkaTimeoutError("no answer within 1.0 s")), Attempt()], {}),
    (Scenario("NoBrokersAvailableError is not retriable", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]),
     [Attempt(NoBrokersAvailableError("nobody home")), Attempt()], {}),
    (Scenario("a refresh fails before the deadline", metadata_body({T0: 1}),
              [NoBrokersAvailableError("nobody home"), metadata_body({T0: 2})]),
     [Attempt(ErrorCode.NOT_LEADER_OR_FOLLOWER)] * 2 + [Attempt()], {}),
    (Scenario("a refresh fails after the deadline", metadata_body({T0: 1}),
              [NoBrokersAvailableError("nobody home")]),
     [Attempt(ErrorCode.NOT_LEADER_OR_FOLLOWER, takes_s=0.05)] * 3, {"timeout_ms": 150}),
    (Scenario("UNKNOWN_TOPIC_OR_PARTITION: created meanwhile", metadata_body({T0: 1}),
              [metadata_body({T0: 1})]),
     [Attempt(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), Attempt()], {"timeout_ms": 2000}),
]


def _produce_operation(scenario: Scenario, attempts: list[Attempt], kwargs: RetryArgs
                       ) -> Operation:
    """The operation retried: route a Produce to t-0's cached leader and read its answer.

    Broker ``n`` answers NOT_LEADER_OR_FOLLOWER unless the latest scripted
    Metadata names it t-0's leader; otherwise the scripted attempts say what
    happens (success by default).
    """

    def run(client: ScriptedClient, clock: FakeClock, events: list[str]) -> object:
        script = list(attempts)
        count = 0

        def operation(deadline: Deadline) -> int:
            nonlocal count
            count += 1
            leader = client.metadata.leader_for("t", 0)
            if leader is None:
                events.append(f"attempt {count}: t-0 has no leader in the cache")
                raise LeaderNotAvailableError("t-0 has no leader")
            events.append(f"attempt {count}: Produce t-0 to broker {leader} "
                          f"({deadline.remaining() * 1000:.0f} ms left)")
            step = script.pop(0) if script else Attempt()
            clock.now += step.takes_s
            if step.mark_stale:
                client.metadata.request_update()
            if isinstance(step.answer, BaseException):
                events.append(f"the operation raises {_error_text(step.answer)}")
                raise step.answer
            code = step.answer
            if not code and leader != _true_leader(scenario, client):
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if code:
                events.append(f"broker {leader} answers {ErrorCode(code).name}")
                raise error_for(code)
            events.append(f"broker {leader} answers base_offset {40 + count}")
            return 40 + count

        return client.call_with_retries(operation, **kwargs)

    return run


def _true_leader(scenario: Scenario, client: object) -> int | None:
    """The leader the cluster really has: the last scripted Metadata's."""
    last = [r for r in scenario.refreshes if isinstance(r, dict)]
    body = last[-1] if last else scenario.cached
    for topic in (body or {}).get("topics", []):
        for part in topic["partitions"]:
            if topic["name"] == "t" and part["partition_index"] == 0:
                return part["leader_id"]
    return None


def check_retries(learner: ModuleType, _workdir: Path) -> None:
    _check_needs_metadata_refresh(learner)
    for scenario, attempts, kwargs in RETRY_SCENARIOS:
        run = _produce_operation(scenario, attempts, kwargs)
        call = ", ".join(["operation", *(f"{k}={v}" for k, v in kwargs.items())])
        _compare_timelines(f"call_with_retries({call})", scenario,
                           _replay(reference, scenario, run), _replay(learner, scenario, run))


STAGE = Stage(5, "The client library", "stage5_client", "stages/stage5_client/README.md", (
    Exercise(1, "requests out",
             "put requests on the wire: correlation ids in order, the in-flight queue",
             ("ConnectionCore._write",), check_requests_out, time_limit=30.0,
             hints=("Read the chapter's section on a connection without a socket.",
                    "Each request takes the next id, and the counter wraps to 0 after "
                    "2**31 - 1; only a request that expects an answer waits in flight, "
                    "at the back of the queue."),
             plugs=(("ConnectionCore._write",
                     ("simplekafka.client.connection:ConnectionCore._write",)),)),
    Exercise(2, "answers in",
             "turn bytes split anywhere into responses matched by correlation id, also "
             "against a real broker",
             ("ConnectionCore.receive_data", "ConnectionCore._decode"), check_responses_in,
             time_limit=150.0,
             hints=("Read the chapter's section on a connection without a socket: the "
                    "answers split at every byte.",
                    "One read may hold half a frame or several: the FrameDecoder keeps what "
                    "it cannot use yet. Each frame answers the oldest request in flight; a "
                    "different correlation id means the stream is out of step for good."),
             plugs=(("ConnectionCore.receive_data",
                     ("simplekafka.client.connection:ConnectionCore.receive_data",)),
                    ("ConnectionCore._decode",
                     ("simplekafka.client.connection:ConnectionCore._decode",)))),
    Exercise(3, "routing to the leader",
             "find a partition's leader, refreshing the metadata while it has none",
             ("KafkaClient.leader_for",), check_leader_for, time_limit=30.0,
             hints=("Read the chapter's sections on bootstrap and metadata, and routing to "
                    "the leader.",
                    "Trust the cache only when it is fresh and names a leader whose address "
                    "it knows; after that, every pass refreshes, and the sleep never runs "
                    "past the deadline."),
             plugs=(("KafkaClient.leader_for",
                     ("simplekafka.client.client:KafkaClient.leader_for",)),)),
    Exercise(4, "retries",
             "retry what may succeed next time, with a fresh map and a growing backoff, "
             "up to a bound",
             ("needs_metadata_refresh", "KafkaClient.call_with_retries"), check_retries,
             time_limit=30.0,
             hints=("Read the chapter's sections on errors with names and retries with "
                    "deadlines.",
                    "Three questions after each failure, in order: may it be retried at all "
                    "(a KafkaError's retriable, the deadline, the retry count)? Is the map "
                    "stale? How long to wait (doubling, capped, never past the deadline)?"),
             plugs=(("needs_metadata_refresh",
                     ("simplekafka.client.errors:needs_metadata_refresh",
                      "simplekafka.client.client:needs_metadata_refresh",
                      "simplekafka.producer.sender:needs_metadata_refresh")),
                    ("KafkaClient.call_with_retries",
                     ("simplekafka.client.client:KafkaClient.call_with_retries",)))),
), mutants=(
    # exercise 1
    Mutant("correlation-ids-reused", 1,
           "self._next_correlation_id = (self._next_correlation_id + 1) % (MAX_CORRELATION_ID + 1)",
           "self._next_correlation_id = self._next_correlation_id % (MAX_CORRELATION_ID + 1)"),
    Mutant("correlation-ids-never-wrap", 1,
           "self._next_correlation_id = (self._next_correlation_id + 1) % (MAX_CORRELATION_ID + 1)",
           "self._next_correlation_id = self._next_correlation_id + 1"),
    Mutant("correlation-ids-wrap-one-early", 1,
           "self._next_correlation_id = (self._next_correlation_id + 1) % (MAX_CORRELATION_ID + 1)",
           "self._next_correlation_id = (self._next_correlation_id + 1) % MAX_CORRELATION_ID"),
    Mutant("newest-request-first-in-flight", 1, "            self._in_flight.append(request)",
           "            self._in_flight.appendleft(request)"),
    Mutant("fire-and-forget-waits-for-an-answer", 1,
           "        if request.expect_response:\n            self._in_flight.append(request)",
           "        if True:\n            self._in_flight.append(request)"),
    Mutant("no-length-prefix", 1, "self._outbox.append(encode_frame(payload))",
           "self._outbox.append(payload)"),
    Mutant("version-not-recorded", 1, "        request.api_version = version\n", ""),
    # exercise 2
    Mutant("assumes-one-whole-frame-per-read", 2, "            frames = self._decoder.feed(data)",
           "            frames = [data[4:]]"),
    Mutant("only-the-first-frame-of-a-read", 2, "        for frame in frames:\n",
           "        for frame in frames[:1]:\n"),
    Mutant("answers-matched-to-the-newest-request", 2,
           "        request = self._in_flight.popleft()",
           "        request = self._in_flight.pop()"),
    Mutant("correlation-ids-not-checked", 2, "        if correlation_id != request.correlation_id:",
           "        if False:"),
    Mutant("only-a-higher-correlation-id-is-a-mismatch", 2,
           "        if correlation_id != request.correlation_id:",
           "        if correlation_id > request.correlation_id:"),
    Mutant("correlation-ids-compared-by-identity", 2,
           "        if correlation_id != request.correlation_id:",
           "        if correlation_id is not request.correlation_id:"),
    Mutant("internal-answers-handed-to-the-caller", 2,
           "                self._handle_sasl(request, body)\n            return None",
           "                self._handle_sasl(request, body)"),
    Mutant("sasl-answers-taken-for-the-handshake", 2,
           "            if request.api_key == ApiKey.API_VERSIONS:\n"
           "                self._handle_handshake",
           "            if True:\n                self._handle_handshake"),
    Mutant("bad-frame-raises-a-protocol-error", 2,
           '            raise KafkaConnectionError(f"bad frame from broker: {exc}") from exc',
           "            raise"),
    Mutant("an-answer-to-nothing-raises-index-error", 2,
           "        if not self._in_flight:\n"
           '            raise KafkaConnectionError("broker sent a response to no request")\n',
           ""),
    # exercise 3
    Mutant("routing-trusts-a-stale-cache", 3,
           "            if self.metadata.needs_update() or asked:", "            if asked:"),
    Mutant("routing-never-refreshes-again", 3,
           "            if self.metadata.needs_update() or asked:",
           "            if self.metadata.needs_update():"),
    Mutant("routing-to-a-broker-without-an-address", 3,
           "            if leader is not None and self.metadata.broker(leader) is not None:",
           "            if leader is not None:"),
    Mutant("routing-sleeps-past-the-deadline", 3,
           "            time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))",
           "            time.sleep(self.retry_backoff_ms / 1000)"),
    Mutant("routing-swallows-the-first-no-brokers", 3,
           "                    if not asked:\n                        raise\n",
           "                    pass\n"),
    Mutant("routing-says-no-leader-for-a-missing-topic", 3,
           'raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")',
           'raise LeaderNotAvailableError(f"topic {topic!r} does not exist")'),
    # exercise 4
    Mutant("retries-a-non-retriable-error", 4,
           "                if not exc.retriable or deadline.expired or out_of_retries:",
           "                if deadline.expired or out_of_retries:"),
    Mutant("retries-without-a-bound", 4,
           "                if not exc.retriable or deadline.expired or out_of_retries:",
           "                if not exc.retriable or deadline.expired:"),
    Mutant("one-retry-too-many", 4, "attempt > retries", "attempt > retries + 1"),
    Mutant("no-refresh-before-the-retry", 4,
           "                if needs_metadata_refresh(exc):\n"
           "                    self.metadata.request_update()\n", ""),
    Mutant("backoff-never-grows", 4,
           "                backoff = min(backoff * 2, self.retry_backoff_max_ms / 1000)\n", ""),
    Mutant("backoff-without-a-cap", 4,
           "backoff = min(backoff * 2, self.retry_backoff_max_ms / 1000)",
           "backoff = backoff * 2"),
    Mutant("sleep-past-the-deadline", 4, "                time.sleep(deadline.remaining(backoff))",
           "                time.sleep(backoff)"),
    Mutant("a-failed-refresh-ends-the-retries", 4,
           "                        if deadline.expired:\n"
           "                            raise exc from None",
           "                        raise"),
    Mutant("not-leader-does-not-refresh", 4, "        ErrorCode.NOT_LEADER_OR_FOLLOWER,\n", ""),
    Mutant("a-lost-connection-does-not-refresh", 4,
           "    if isinstance(error, KafkaConnectionError):\n        return True\n", ""),
), real_processes=True)
