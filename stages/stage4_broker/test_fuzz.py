"""Bad input never crashes the broker, and never disturbs other connections.

First the named cases, each with the answer Kafka gives: negative and
oversized frame lengths, unknown API keys, unsupported versions, truncated
bodies and corrupt record batches. Then a hypothesis fuzz run that pipelines
well over 100,000 frames through a few dozen connections: mostly well-formed
requests with hostile field values (whose answers must come back decodable, in
request order, with the right error codes), each connection ending in one
frame of garbage. A "witness" connection opened before all of it must keep
working throughout, and the broker process must still be alive at the end.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from simplekafka.cluster import LocalCluster
from simplekafka.protocol.api import SUPPORTED_VERSIONS, ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.legacy_records import build_message_set
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import build_batch

from ._interop import CLIENT_ID, connect, frame, latest_offset, produce_raw, read_frame, request

pytestmark = pytest.mark.integration

TOPIC = "fuzz"
PARTITIONS = 2
FUZZ_EXAMPLES = 20
CONCURRENT_CONNECTIONS = 2
FRAMES_PER_CONNECTION = 2600  # 20 x 2 x 2600 = 104,000 frames
QUIET_WAIT = 0.5  # how long a connection that ended in garbage may stay silent


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory):
    """One broker that does not auto-create topics (fuzzed names must not become topics)."""
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("fuzz-cluster"),
                         broker_config={"auto.create.topics.enable": "false"})
    local.start()
    try:
        with connect(local.broker_ports[1]) as sock:
            response = request(sock, ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": TOPIC, "num_partitions": PARTITIONS,
                            "replication_factor": 1, "assignments": [], "configs": []}],
                "timeout_ms": 30_000, "validate_only": False,
            })
        assert response.topics[0].error_code == 0, response.topics[0]
        _wait_for_leaders(local.broker_ports[1])
        yield local
    finally:
        local.stop()


def _wait_for_leaders(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connect(port) as sock:
            metadata = request(sock, ApiKey.METADATA, 8, {"topics": [{"name": TOPIC}],
                                                           "allow_auto_topic_creation": False})
        partitions = metadata.topics[0].partitions
        if len(partitions) == PARTITIONS and all(p.leader_id >= 0 for p in partitions):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {TOPIC} has no leaders after {timeout} s")


@pytest.fixture(scope="module")
def witness(fuzz_cluster):
    """A connection opened before any bad input; it must keep being answered."""
    sock = connect(fuzz_cluster.broker_ports[1])
    yield sock
    sock.close()


def assert_still_serving(cluster: LocalCluster, witness_sock: socket.socket) -> None:
    assert cluster.brokers[1].is_running, "the broker process died"
    versions = request(witness_sock, ApiKey.API_VERSIONS, 2, {})
    assert versions.error_code == 0
    with connect(cluster.broker_ports[1]) as fresh:
        metadata = request(fresh, ApiKey.METADATA, 8, {"topics": None})
    assert [b.node_id for b in metadata.brokers] == [1]


def closed_or_answered(sock: socket.socket, correlation_id: int, wait: float = 5.0) -> str:
    """'closed' if the broker closes the connection, 'answered' if it answers this request."""
    sock.settimeout(wait)
    try:
        payload = read_frame(sock)
    except (ConnectionError, OSError):
        return "closed"
    (answer_id,) = struct.unpack_from(">i", payload)
    assert answer_id == correlation_id, f"answer to correlation id {answer_id}"
    return "answered"


def log_size(cluster: LocalCluster) -> int:
    return cluster.brokers[1].log_file.stat().st_size


def wait_for_log_growth(cluster: LocalCluster, before: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while log_size(cluster) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log_size(cluster) > before, "the broker closed a connection without a log line"


API_VERSIONS_MAX = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]  # above it: the probe answer

def header(api_key: int, version: int, correlation_id: int, client_id: bytes = b"fuzz") -> bytes:
    """A request header v1 built by hand, so that any key and version can be sent."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


# -- the named cases ---------------------------------------------------------------


@pytest.mark.parametrize("length", [-1, -2**31])
def test_negative_frame_length_closes_the_connection(fuzz_cluster, witness, length):
    before = log_size(fuzz_cluster)
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(struct.pack(">i", length) + b"\x00" * 64)
        assert closed_or_answered(sock, -1) == "closed"
    wait_for_log_growth(fuzz_cluster, before)
    assert_still_serving(fuzz_cluster, witness)


@pytest.mark.parametrize("length", [100 * 1024 * 1024 + 1, 2**31 - 1])
def test_oversized_frame_is_refused_before_its_body_arrives(fuzz_cluster, witness, length):
    """Only the 4-byte length and a few KB are sent: a broker that waited for the body
    (or allocated it) would leave this connection open and silent."""
    import psutil

    broker = psutil.Process(fuzz_cluster.brokers[1].pid)
    rss_before = broker.memory_info().rss
    before = log_size(fuzz_cluster)
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(struct.pack(">i", length) + header(3, 1, 7) + b"\xff\xff\xff\xff" * 1024)
        assert closed_or_answered(sock, 7) == "closed"
    wait_for_log_growth(fuzz_cluster, before)
    assert broker.memory_info().rss - rss_before < 50 * 1024 * 1024
    assert_still_serving(fuzz_cluster, witness)


def test_zero_length_frame_is_refused(fuzz_cluster, witness):
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(struct.pack(">i", 0))
        assert closed_or_answered(sock, -1) == "closed"
    assert_still_serving(fuzz_cluster, witness)


@pytest.mark.parametrize("api_key", [7, 17, 57, 999, 32767, -5])
def test_unknown_api_key_closes_the_connection(fuzz_cluster, witness, api_key):
    """Kafka cannot answer a request whose response format it does not know: it closes."""
    before = log_size(fuzz_cluster)
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(frame(header(api_key, 0, 11) + b"\x00" * 8))
        assert closed_or_answered(sock, 11) == "closed"
    wait_for_log_growth(fuzz_cluster, before)
    assert_still_serving(fuzz_cluster, witness)


@pytest.mark.parametrize("version", [API_VERSIONS_MAX + 1, 9, 32767])
def test_api_versions_probe_gets_error_35_in_v0_format(fuzz_cluster, witness, version):
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(frame(header(ApiKey.API_VERSIONS, version, 21) + b"\x00\x01\x02"))
        answer_id, answer = decode_response(ApiKey.API_VERSIONS, 0, read_frame(sock))
        assert answer_id == 21
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert advertised[ApiKey.API_VERSIONS] == (0, API_VERSIONS_MAX)
        assert ApiKey.LEADER_AND_ISR not in advertised
        # The connection stays usable: the client retries with an older version.
        assert request(sock, ApiKey.API_VERSIONS, 0, {}).error_code == 0
    assert_still_serving(fuzz_cluster, witness)


@pytest.mark.parametrize(("api_key", "version"), [(ApiKey.METADATA, 9), (ApiKey.METADATA, 300),
                                                  (ApiKey.FETCH, 17), (ApiKey.FETCH, 12),
                                                  (ApiKey.LIST_OFFSETS, 8)])
def test_unsupported_version_is_refused(fuzz_cluster, witness, api_key, version):
    with connect(fuzz_cluster.broker_ports[1]) as sock:
        sock.sendall(frame(header(api_key, version, 31) + b"\x00" * 16))
        closed_or_answered(sock, 31)  # either is Kafka-like; what matters is what follows
    assert_still_serving(fuzz_cluster, witness)


def test_produce_v0_to_v2_message_sets_are_appended_and_garbage_refused(fuzz_cluster, witness):
    """Old versions carry message sets (formats v0/v1), converted on append; bytes that
    are neither a message set nor a batch get an error code, never a crash."""
    for version in (0, 1, 2):
        good = build_message_set([(0, 1, b"k", b"v")], 0 if version < 2 else 1)
        with connect(fuzz_cluster.broker_ports[1]) as sock:
            for records, ok in ((good, True), (good[:20] + b"\xff" * 20, False)):
                response = request(sock, ApiKey.PRODUCE, version, {
                    "acks": 1, "timeout_ms": 1000,
                    "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0,
                                                                         "records": records}]}]})
                (partition,) = response.responses[0].partition_responses
                assert (partition.error_code == ErrorCode.NONE) is ok, (version, records)
    assert_still_serving(fuzz_cluster, witness)


def test_truncated_bodies_never_succeed(fuzz_cluster, witness):
    batch = build_batch([(b"key", b"value" * 20)] * 3)
    payload = encode_request(ApiKey.PRODUCE, 8, 41, CLIENT_ID, {
        "transactional_id": None, "acks": 1, "timeout_ms": 1000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    end_before = latest_offset(fuzz_cluster.broker_ports[1], TOPIC, 0)
    for cut in range(10, len(payload), 7):
        with connect(fuzz_cluster.broker_ports[1]) as sock:
            sock.sendall(frame(payload[:cut]))
            if closed_or_answered(sock, 41) == "answered":
                pass  # an error answer is fine; the log must not have grown (checked below)
    assert latest_offset(fuzz_cluster.broker_ports[1], TOPIC, 0) == end_before
    assert_still_serving(fuzz_cluster, witness)


def _corruptions() -> dict[str, bytes]:
    good = build_batch([(b"key-%d" % i, b"value-%d" % i * 10) for i in range(5)])

    def patched(position: int, data: bytes) -> bytes:
        return good[:position] + data + good[position + len(data):]

    return {
        "crc": patched(17, bytes([good[17] ^ 0xFF])),
        "record byte": patched(len(good) - 3, bytes([good[-3] ^ 0x01])),
        "attributes": patched(21, b"\x00\x07"),
        "magic 1": patched(16, b"\x01"),
        "magic 3": patched(16, b"\x03"),
        "length too long": patched(8, struct.pack(">i", len(good) - 12 + 100)),
        "length too short": patched(8, struct.pack(">i", len(good) - 12 - 10)),
        "length negative": patched(8, struct.pack(">i", -1)),
        "truncated": good[:-5],
        "header only": good[:30],
        "random": random.Random(4).randbytes(200),
    }


@pytest.mark.parametrize("corruption", sorted(_corruptions()))
def test_corrupt_batches_are_rejected_and_not_stored(fuzz_cluster, witness, corruption):
    port = fuzz_cluster.broker_ports[1]
    end_before = latest_offset(port, TOPIC, 1)
    answer = produce_raw(port, TOPIC, 1, _corruptions()[corruption])
    if corruption in ("crc", "record byte", "attributes"):
        assert answer.error_code == ErrorCode.CORRUPT_MESSAGE
    else:
        assert answer.error_code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD), (
            ErrorCode.of(answer.error_code))
    assert latest_offset(port, TOPIC, 1) == end_before
    good = produce_raw(port, TOPIC, 1, build_batch([(b"k", b"after " + corruption.encode())]))
    assert (good.error_code, good.base_offset) == (0, end_before), good
    assert_still_serving(fuzz_cluster, witness)


# -- the fuzz run ----------------------------------------------------------------------

FRAMES_SENT = {"total": 0}
FRAMES_LOCK = threading.Lock()
TOPIC_NAMES = [TOPIC, "no-such-topic", "", "a" * 249, "bad name!", "é", "__consumer_offsets"]


NONZERO = "nonzero"


class Expect:
    """What one pipelined request should get back."""

    __slots__ = ("api_key", "correlation_id", "error", "version")

    def __init__(self, api_key: int, version: int, correlation_id: int, error=None):
        self.api_key, self.version, self.correlation_id = api_key, version, correlation_id
        self.error = error  # the error code expected, NONZERO, or None for "any"


def _partition(rng: random.Random) -> int:
    return rng.choice([0, 1, -1, 2, 7, 2**31 - 1, -(2**31)])


def _records(rng: random.Random) -> tuple[str, int, bytes | None]:
    """(kind, codec, records): a valid batch, a corrupted one, garbage, empty or null."""
    kind = rng.choice(["valid", "mutated", "garbage", "empty", "null"])
    codec = rng.choice([0, 0, 1, 2, 3, 4])
    if kind in ("valid", "mutated"):
        batch = bytearray(build_batch([(rng.randbytes(rng.randint(0, 8)),
                                        rng.randbytes(rng.randint(0, 40)))
                                       for _ in range(rng.randint(1, 3))], compression=codec))
        if kind == "mutated":
            position = rng.randrange(21, len(batch))  # inside what the CRC covers
            batch[position] ^= rng.randint(1, 255)
        return kind, codec, bytes(batch)
    if kind == "garbage":
        return kind, codec, rng.randbytes(rng.randint(1, 120))
    return kind, codec, b"" if kind == "empty" else None


def _produce(rng: random.Random, correlation_id: int) -> tuple[bytes, Expect | None]:
    version = rng.randint(3, 8)
    topic, partition = rng.choice(TOPIC_NAMES), _partition(rng)
    kind, codec, records = _records(rng)
    acks = rng.choice([1, -1, -1, 0, 2, -7])
    body = {"transactional_id": None, "acks": acks, "timeout_ms": rng.choice([0, 1000]),
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": records}]}]}
    payload = encode_request(ApiKey.PRODUCE, version, correlation_id, CLIENT_ID, body)
    if acks == 0:
        return payload, None  # acks=0 gets no answer at all
    error = None
    if acks in (1, -1) and topic == TOPIC and partition in range(PARTITIONS):
        if kind == "valid" and (codec != 4 or version >= 7):  # zstd needs Produce v7
            error = ErrorCode.NONE
        elif kind in ("mutated", "garbage", "empty"):
            error = NONZERO
    return payload, Expect(ApiKey.PRODUCE, version, correlation_id, error)


def _well_formed(rng: random.Random, correlation_id: int) -> tuple[bytes, Expect | None]:
    """One request that decodes, with hostile values; and what it should get back."""
    choice = rng.random()
    topic, partition = rng.choice(TOPIC_NAMES), _partition(rng)
    if choice < 0.15:
        api_key, version, body = ApiKey.API_VERSIONS, rng.randint(0, 6), {}
        if version >= 3:  # flexible: the client's software name and version (KIP-511)
            body = {"client_software_name": "fuzz", "client_software_version": "1.0"}
        if version > API_VERSIONS_MAX:  # the probe: answered in v0 format with error 35
            payload = header(api_key, version, correlation_id) + rng.randbytes(4)
            return payload, Expect(api_key, 0, correlation_id, ErrorCode.UNSUPPORTED_VERSION)
    elif choice < 0.35:
        api_key, version = ApiKey.METADATA, rng.randint(0, 8)
        if version < 4:  # v0-v3 cannot say "do not auto-create": name only the real topic
            body = {"topics": [{"name": TOPIC}] * rng.randint(0, 2)}
        else:
            names = [{"name": rng.choice(TOPIC_NAMES)} for _ in range(rng.randint(0, 3))]
            body = {"topics": names if rng.random() < 0.8 else None,
                    "allow_auto_topic_creation": False}
    elif choice < 0.5:
        api_key, version = ApiKey.LIST_OFFSETS, rng.randint(1, 5)
        body = {"replica_id": rng.choice([-1, -1, 0, 5]), "isolation_level": rng.choice([0, 1]),
                "topics": [{"name": topic, "partitions": [{
                    "partition_index": partition, "current_leader_epoch": rng.randint(-1, 3),
                    "timestamp": rng.choice([-2, -1, 0, 2**62, rng.randint(-(2**63), 2**63 - 1)]),
                }]}]}
    elif choice < 0.7:
        api_key, version = ApiKey.FETCH, rng.randint(4, 11)
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": rng.choice([0, 1]),
                "max_bytes": rng.choice([0, 1, 100, 65536]), "isolation_level": rng.choice([0, 1]),
                "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [{
                    "partition": partition, "current_leader_epoch": -1,
                    "fetch_offset": rng.choice([0, 1, -1, 10**6, rng.randint(-(2**63), 2**63 - 1)]),
                    "log_start_offset": -1, "partition_max_bytes": rng.choice([0, 1, 65536]),
                }]}], "forgotten_topics_data": [], "rack_id": ""}
    elif choice < 0.9:
        return _produce(rng, correlation_id)
    else:
        api_key, version = ApiKey.OFFSET_FOR_LEADER_EPOCH, rng.randint(2, 3)
        body = {"replica_id": -1, "topics": [{"topic": topic, "partitions": [{
            "partition": partition, "current_leader_epoch": rng.randint(-1, 2),
            "leader_epoch": rng.randint(-1, 5)}]}]}
    payload = encode_request(api_key, version, correlation_id, CLIENT_ID, body)
    return payload, Expect(api_key, version, correlation_id)


def _garbage(rng: random.Random, correlation_id: int) -> bytes:
    """One frame (or not-quite-frame) of garbage to end a connection with."""
    kind = rng.choice(["random", "random", "unknown key", "truncated", "short length",
                       "long length", "bad client id", "huge version"])
    if kind == "random":
        return frame(rng.randbytes(rng.randint(1, 300)))
    if kind == "unknown key":
        return frame(header(rng.choice([7, 15, 16, 21, 44, 68, 1000, -1]), 0, correlation_id))
    if kind == "truncated":
        payload = encode_request(ApiKey.METADATA, 8, correlation_id, CLIENT_ID,
                                 {"topics": [{"name": TOPIC}]})
        return frame(payload[: rng.randint(1, len(payload) - 1)])
    if kind == "short length":
        payload = header(ApiKey.METADATA, 1, correlation_id) + b"\x00\x00\x00\x00"
        return struct.pack(">i", len(payload) - rng.randint(1, 5)) + payload
    if kind == "long length":
        payload = header(ApiKey.METADATA, 1, correlation_id) + b"\xff\xff\xff\xff"
        return struct.pack(">i", len(payload) + rng.randint(1, 1000)) + payload
    if kind == "bad client id":
        return frame(struct.pack(">hhih", ApiKey.METADATA, 1, correlation_id,
                                 rng.choice([-2, 500, 32767])) + b"x")
    return frame(header(ApiKey.METADATA, rng.choice([32767, -1, 100]), correlation_id))


class _Reader(threading.Thread):
    """Reads response frames while the main thread is still sending (so neither blocks)."""

    def __init__(self, sock: socket.socket, expected: int):
        super().__init__(daemon=True)
        self.sock, self.expected = sock, expected
        self.frames: list[bytes] = []
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            while len(self.frames) < self.expected:
                self.frames.append(read_frame(self.sock))
        except Exception as exc:  # reported by the test, not lost in the thread
            self.error = exc


def _check_answer(expect: Expect, payload: bytes) -> None:
    answer_id, answer = decode_response(expect.api_key, expect.version, payload)
    assert answer_id == expect.correlation_id, (answer_id, expect.correlation_id)
    if expect.api_key == ApiKey.API_VERSIONS:
        assert answer.error_code == (expect.error or 0)
    elif expect.api_key == ApiKey.PRODUCE and expect.error is not None:
        code = answer.responses[0].partition_responses[0].error_code
        if expect.error == NONZERO:
            assert code != 0, "a corrupt or empty batch was accepted"
        else:
            assert code == expect.error, (ErrorCode.of(code), ErrorCode.of(expect.error))


def _fuzz_one_connection(port: int, rng: random.Random, end_with_garbage: bool) -> None:
    frames, expects = [], []
    for correlation_id in range(1, FRAMES_PER_CONNECTION + (0 if end_with_garbage else 1)):
        payload, expect = _well_formed(rng, correlation_id)
        frames.append(frame(payload))
        if expect is not None:
            expects.append(expect)
    if end_with_garbage:
        frames.append(_garbage(rng, FRAMES_PER_CONNECTION))
    with connect(port, timeout=60) as sock:
        reader = _Reader(sock, len(expects))
        reader.start()
        sock.sendall(b"".join(frames))
        with FRAMES_LOCK:
            FRAMES_SENT["total"] += len(frames)
        reader.join(60)
        assert not reader.is_alive(), f"only {len(reader.frames)} of {len(expects)} answers"
        assert reader.error is None, f"after {len(reader.frames)} answers: {reader.error!r}"
        for expect, payload in zip(expects, reader.frames):
            _check_answer(expect, payload)
        if end_with_garbage:  # closed, answered or ignored: all fine, as long as it lives
            closed_or_answered_or_silent(sock)


def closed_or_answered_or_silent(sock: socket.socket) -> None:
    sock.settimeout(QUIET_WAIT)
    try:
        sock.recv(65536)
    except (TimeoutError, OSError):
        pass


def test_fuzz_100k_frames_never_crash_the_broker(fuzz_cluster, witness):
    port = fuzz_cluster.broker_ports[1]

    # Hypothesis draws a seed per connection; the bulk of each connection's frames comes
    # from random.Random(seed), which is much faster than a hypothesis draw per byte and
    # replays exactly from the seed in the falsifying example. Shrinking a seed is
    # meaningless, so that phase is off. Each example runs its connections at once, so
    # the broker interleaves their requests.
    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(seeds=st.lists(st.integers(0, 2**64 - 1), min_size=CONCURRENT_CONNECTIONS,
                          max_size=CONCURRENT_CONNECTIONS),
           end_with_garbage=st.lists(st.booleans(), min_size=CONCURRENT_CONNECTIONS,
                                     max_size=CONCURRENT_CONNECTIONS))
    def concurrent_connections(seeds, end_with_garbage):
        failures: list[BaseException] = []

        def run(seed: int, garbage: bool) -> None:
            try:
                _fuzz_one_connection(port, random.Random(seed), garbage)
            except BaseException as exc:  # re-raised below, in the test's thread
                failures.append(exc)

        threads = [threading.Thread(target=run, args=pair) for pair in zip(seeds,
                                                                             end_with_garbage)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a fuzz connection hung"
        if failures:
            raise failures[0]
        assert_still_serving(fuzz_cluster, witness)

    concurrent_connections()
    assert FRAMES_SENT["total"] >= 100_000, FRAMES_SENT
    assert_still_serving(fuzz_cluster, witness)
