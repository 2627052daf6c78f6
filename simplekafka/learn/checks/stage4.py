"""Stage 4 checks: the learner's Broker answers directly, then kcat and confluent-kafka use it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from simplekafka.cluster.local import free_port
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps, byte_diff
from simplekafka.learn.solutions import stage4_broker as reference
from simplekafka.protocol import (
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from simplekafka.protocol.dissect import dissect_frame, dissect_records
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.records import build_batch, parse_batches
from simplekafka.storage import Log

HOST = "127.0.0.1"
START_TIMEOUT = 60.0
CLIENT_TIMEOUT = 90.0


def _request(api_key: ApiKey, version: int, body: dict) -> Any:
    """A request body as the broker gets it: encoded, then decoded by SimpleKafka's codec."""
    _header, request = decode_request(encode_request(api_key, version, 1, "learn-check", body))
    return request


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _call(steps: Steps, what: str, method: Any, *args: Any) -> Any:
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
    log = Log.open(data_dir)
    try:
        data = log.read(log.log_start_offset, 1 << 30)
    finally:
        log.close()
    return [(r.key, r.value) for batch in parse_batches(data) for r in batch]


def check_api_versions(learner: ModuleType, workdir: Path) -> None:
    steps = Steps()
    broker = learner.Broker(_fresh(workdir / "direct"), HOST, 9092)
    try:
        for version in (0, 1, 2):
            body = _call(steps, f"api_versions({version}, request)", broker.api_versions,
                         version, _request(ApiKey.API_VERSIONS, version, {}))
            expected = encode_response(ApiKey.API_VERSIONS, version, 7,
                                       reference.Broker.api_versions(None, version, None))
            got = encode_response(ApiKey.API_VERSIONS, version, 7, body)
            failure = byte_diff(
                f"the ApiVersions v{version} answer", expected, got,
                lambda data, v=version: dissect_frame(data, prefix=False, response=True,
                                                      api_key=18, api_version=v))
            if failure:
                raise failure
    finally:
        broker.close()
    with served(Path(learner.__file__).parent, workdir, steps) as port:
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
            ApiKey.API_VERSIONS, 0, 99, reference.Broker.api_versions(None, 0, None)))
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
    with served(Path(learner.__file__).parent, workdir, steps) as port:
        out = _run(steps, ["kcat", "-L", "-b", f"{HOST}:{port}", "-t", "orders", "-m", "30"],
                   "kcat -L")
        steps.step("kcat said:\n" + out)
        for wanted in (f"broker 0 at {HOST}:{port}", 'topic "orders" with 1 partitions',
                       "partition 0, leader 0, replicas: 0, isrs: 0"):
            if wanted not in out:
                raise steps.fail("kcat -L does not show your broker and topic", wanted, out)


def _same_answer(what: str, api_key: ApiKey, version: int, expected: dict | None,
                 got: dict | None) -> None:
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
             request: Any) -> Any:
        """Ask both; the learner's answer must be the reference's, byte for byte."""
        got = _call(self.steps, what, getattr(self.mine, method), version, request)
        expected = getattr(self.theirs, method)(version, request)
        _same_answer(f"{what}: the whole answer", api_key, version, expected, got)
        return got

    def close(self) -> None:
        self.mine.close()
        self.theirs.close()


def _raw_log(data_dir: Path) -> bytes:
    log = Log.open(data_dir)
    try:
        return log.read(log.log_start_offset, 1 << 30)
    finally:
        log.close()


def _as_a_client_reads(api_key: ApiKey, version: int, body: dict) -> Any:
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
    with served(Path(learner.__file__).parent, workdir, steps) as port:
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
    with served(Path(learner.__file__).parent, workdir, steps) as port:
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
    for key, value in sent:
        producer.produce("round-trip", value=value, key=key, partition=0,
                         on_delivery=lambda err, _msg: err and failures.append(str(err)))
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
    Exercise(1, "ApiVersions",
             "say which APIs and versions your broker speaks",
             ("Broker.api_versions",), check_api_versions,
             hints=("Read the chapter's section on ApiVersions.",
                    "One entry per key of VERSIONS, in ascending key order, with its "
                    "(min, max).")),
    Exercise(2, "Metadata",
             "describe your broker and its topics: kcat -L works",
             ("Broker.metadata",), check_metadata,
             hints=("Read the chapter's section on Metadata.",
                    "Clients connect to the host and port you advertise: advertise your own; "
                    "a topic asked for by name is created.")),
    Exercise(3, "Produce",
             "append producers' batches to the log: kcat -P works",
             ("Broker.produce",), check_produce,
             hints=("Read the chapter's section on Produce.",
                    "Log.append returns the base offset the batch got; acks=0 wants no "
                    "answer at all.")),
    Exercise(4, "Fetch",
             "serve batches to consumers: kcat -C and confluent-kafka round trips work",
             ("Broker.fetch",), check_fetch,
             hints=("Read the chapter's section on Fetch.",
                    "Alone, the high watermark is the log end offset; an empty read is "
                    "b'' and never None.")),
), mutants=(
    Mutant("api-versions-min-version-zero", 1, '"min_version": low, "max_version": high}',
           '"min_version": 0, "max_version": high}'),
    Mutant("metadata-advertises-the-wrong-port", 2, '"port": self.port,', '"port": 9092,'),
    Mutant("metadata-leader-epoch-unknown", 2, '"leader_id": self.node_id, "leader_epoch": 0,',
           '"leader_id": self.node_id, "leader_epoch": -1,'),
    Mutant("produce-forgets-the-log-start-offset", 3,
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset\n'
           '                    answer["log_start_offset"] = log.log_start_offset\n',
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset\n'),
    Mutant("fetch-forgets-the-last-stable-offset", 4,
           '                    answer["last_stable_offset"] = log.log_end_offset\n', ""),
    Mutant("produce-answers-no-base-offset", 3,
           'answer["base_offset"] = log.append(data.records, leader_epoch=0).base_offset',
           "log.append(data.records, leader_epoch=0)"),
    Mutant("produce-answers-acks-0", 3, "        if request.acks == 0:\n            return None\n",
           ""),
    Mutant("fetch-high-watermark-one-short", 4,
           'answer["high_watermark"] = log.log_end_offset',
           'answer["high_watermark"] = log.log_end_offset - 1'),
), real_processes=True)
