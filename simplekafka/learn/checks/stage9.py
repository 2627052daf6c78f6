"""Stage 9 checks: the LSO and the aborted index, the consumer's filter, a transactional producer.

Exercises 1 and 2 replay partition logs (the one of docs/transactions.md, then
generated ones with several producers, nested and interleaved transactions,
commits, aborts and a lagging high watermark) batch by batch, into the
learner's code and into SimpleKafka's, and compare every answer. Exercise 3
starts a real cluster (ZooKeeper and one broker as processes on 127.0.0.1),
lets the learner's producer talk to the real transaction coordinator through
SimpleKafka's client, and reads the topic back with read_committed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from simplekafka.broker import producer_state
from simplekafka.consumer import fetcher
from simplekafka.learn.exercise import Exercise, Mutant, Stage
from simplekafka.learn.report import ExerciseFailed, Steps
from simplekafka.learn.solutions.stage9_transactions import error_code_of
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import BatchHeader, read_header
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.messages import decode_request, encode_request
from simplekafka.protocol.records import (
    build_batch,
    build_end_txn_marker,
    parse_batches,
    parse_control_marker,
)
from simplekafka.storage import txn_index
from simplekafka.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from simplekafka.client.client import KafkaClient

# SimpleKafka's own answers, taken before any learner function is plugged in their place.
REAL_LAST_STABLE_OFFSET = producer_state.ProducerStateTable.last_stable_offset
REAL_COLLECT = txn_index.TransactionIndex.collect
REAL_FILTER = fetcher._AbortedFilter

SCENARIOS = 40
PRODUCERS = (0, 1, 2)  # producer ids start at 0, as the broker gives them out
IDEMPOTENT_ONLY = 3  # an idempotent producer that never opens a transaction

# --- partition logs, written batch by batch -------------------------------------------------


@dataclass
class Event:
    """One step of a partition's life: a batch appended, or the high watermark moving."""

    text: str
    high_watermark: int  # after this step
    batch: bytes | None = None
    header: BatchHeader | None = None
    marker_commit: bool | None = None  # a marker: commit or abort
    aborted: AbortedTxn | None = None  # the index entry an abort marker makes


@dataclass
class PartitionLog:
    """A generated log: its events, its batches and what SimpleKafka made of them."""

    name: str
    events: list[Event] = field(default_factory=list)
    batches: list[bytes] = field(default_factory=list)
    log_end_offset: int = 0
    lso_at_end: int = 0


def _apply(table: producer_state.ProducerStateTable, event: Event, high_watermark: int
           ) -> producer_state.CompletedTxn | None:
    """What a replica does with an appended batch (``Partition``'s producer-state step)."""
    header = event.header
    if header is None:
        return None
    if event.marker_commit is None:
        table.record(header, header.base_offset)
        return None
    return table.complete_txn(header.producer_id, header.producer_epoch, 0, header.base_offset,
                              event.marker_commit, high_watermark)


class _Writer:
    """Appends batches at the next offset and keeps SimpleKafka's producer state alongside."""

    def __init__(self, name: str):
        self.log = PartitionLog(name)
        self.table = producer_state.ProducerStateTable()
        self.sequences: dict[int, int] = {}
        self.high_watermark = 0

    @property
    def end(self) -> int:
        return self.log.log_end_offset

    def data(self, producer_id: int, count: int, transactional: bool, text: str,
             high_watermark: int | None = None) -> None:
        records = [(b"k%d" % (self.end + i), b"%s-%d" % (text.split()[0].encode(), self.end + i))
                   for i in range(count)]
        sequence = self.sequences.get(producer_id, 0) if producer_id >= 0 else -1
        batch = build_batch(records, base_offset=self.end, producer_id=producer_id,
                            producer_epoch=0 if producer_id >= 0 else -1,
                            base_sequence=sequence, is_transactional=transactional)
        if producer_id >= 0:
            self.sequences[producer_id] = sequence + count
        span = f"{self.end}" if count == 1 else f"{self.end}-{self.end + count - 1}"
        self._append(Event(f"offset {span}: {text}", 0, batch), high_watermark)

    def marker(self, producer_id: int, commit: bool, high_watermark: int | None = None) -> None:
        kind = "COMMIT" if commit else "ABORT"
        first = self.table.ongoing.get(producer_id, self.end)
        batch = build_end_txn_marker(producer_id, 0, commit, 0, base_offset=self.end)
        self._append(Event(f"offset {self.end}: {kind} marker of producer {producer_id} "
                           f"(its transaction {first}-{self.end})", 0, batch,
                           marker_commit=commit), high_watermark)

    def _append(self, event: Event, high_watermark: int | None) -> None:
        assert event.batch is not None  # only a batch's event is appended
        event.header = read_header(event.batch)
        completed = _apply(self.table, event, self.high_watermark)
        if completed is not None and completed.aborted:  # as Partition._end_transaction
            event.aborted = AbortedTxn(completed.producer_id, completed.first_offset,
                                       completed.last_offset,
                                       self.table.last_stable_offset_after(completed))
        self.log.log_end_offset = event.header.next_offset
        self.log.batches.append(event.batch)
        if high_watermark is not None:
            self.high_watermark = high_watermark
        event.high_watermark = self.high_watermark
        self.log.events.append(event)

    def move_high_watermark(self, high_watermark: int) -> None:
        self.high_watermark = high_watermark
        self.log.events.append(Event(f"the high watermark moves to {high_watermark}",
                                     high_watermark))

    def finish(self) -> PartitionLog:
        self.log.lso_at_end = REAL_LAST_STABLE_OFFSET(self.table, self.end)
        return self.log


def documented_log() -> PartitionLog:
    """docs/transactions.md's log: committed A, aborted B, plain records, C left open; the
    HW stays at 0 while it is written, then moves up one offset at a time."""
    w = _Writer("docs/transactions.md's log")
    a, b, c = PRODUCERS
    w.data(-1, 1, False, "p0 (a plain record)")
    w.data(a, 2, True, f"a1 a2 (producer {a} opens transaction A)")
    w.data(-1, 1, False, "p1 (a plain record)")
    w.data(b, 1, True, f"b1 (producer {b} opens transaction B)")
    w.marker(a, True)
    w.marker(b, False)
    w.data(-1, 1, False, "p2 (a plain record)")
    w.data(c, 1, True, f"c1 (producer {c} opens transaction C, left open)")
    for high_watermark in range(1, w.end + 1):
        w.move_high_watermark(high_watermark)
    return w.finish()


def generated_log(seed: int) -> PartitionLog:
    """Plain, idempotent and transactional batches of three producers, commits and aborts,
    transactions open across each other; the HW lags behind and catches up at random."""
    rng = random.Random(seed)
    w = _Writer(f"generated log {seed}")
    for _step in range(rng.randint(8, 18)):
        open_now = sorted(w.table.ongoing)
        roll = rng.random()
        if open_now and roll < 0.3:
            producer = rng.choice(open_now)
            w.marker(producer, rng.random() < 0.5)
        elif roll < 0.75:
            producer = rng.choice(PRODUCERS)
            opens = "opens its transaction" if producer not in w.table.ongoing else "in its " \
                "transaction"
            count = rng.randint(1, 3)
            w.data(producer, count, True, f"tx{producer} ({count} record(s) of producer "
                   f"{producer}, {opens})")
        elif roll < 0.85:
            w.data(IDEMPOTENT_ONLY, 1, False,
                   f"id{IDEMPOTENT_ONLY} (producer {IDEMPOTENT_ONLY}, idempotent, no transaction)")
        else:
            w.data(-1, rng.randint(1, 2), False, "plain (no producer id)")
        if rng.random() < 0.6:
            w.high_watermark = rng.randint(w.high_watermark, w.end)
            w.log.events[-1].high_watermark = w.high_watermark
    if rng.random() < 0.5:
        w.move_high_watermark(w.end)
    return w.finish()


def all_logs() -> Iterator[PartitionLog]:
    yield documented_log()
    for seed in range(SCENARIOS):
        yield generated_log(seed)


def _state(table: producer_state.ProducerStateTable) -> str:
    ended = [(t.producer_id, t.first_offset, t.last_offset) for t in table._unreplicated]
    return f"ongoing {dict(table.ongoing)}, ended (producer, first, marker) {ended}"


# --- exercise 1 -------------------------------------------------------------------------------


def check_lso_and_index(learner: ModuleType, workdir: Path) -> None:
    for number, log in enumerate(all_logs()):
        _check_lso(learner, log)
        _check_collect(learner, log, workdir / f"log-{number}")


def _check_lso(learner: ModuleType, log: PartitionLog) -> None:
    steps = Steps()
    steps.step(f"{log.name}; a fresh ProducerStateTable()")
    mine = learner.ProducerStateTable()
    real = producer_state.ProducerStateTable()
    high_watermark = 0
    for event in log.events:
        _apply(mine, event, high_watermark)
        _apply(real, event, high_watermark)
        high_watermark = event.high_watermark
        expected = REAL_LAST_STABLE_OFFSET(real, high_watermark)
        got = mine.last_stable_offset(high_watermark)
        steps.step(f"{event.text}; HW {high_watermark}: last_stable_offset({high_watermark}) "
                   f"-> {got!r}")
        steps.expect(f"the LSO at HW {high_watermark} ({_state(real)})", expected, got)


def _check_collect(learner: ModuleType, log: PartitionLog, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    real = txn_index.TransactionIndex(directory / "real.txnindex")
    mine = learner.TransactionIndex(directory / "yours.txnindex")
    steps = Steps()
    steps.step(f"{log.name}, its abort markers indexed (producer id, first offset, "
               f"marker offset, LSO after the abort):")
    for event in log.events:
        if event.aborted is not None:
            real.append(event.aborted)
            mine.append(event.aborted)
            steps.step(f"append({tuple(event.aborted)})  [{event.text}]")
    for fetch_offset in range(log.log_end_offset + 1):
        for upper_bound in range(fetch_offset + 1, log.log_end_offset + 2):
            expected = REAL_COLLECT(real, fetch_offset, upper_bound)
            got = mine.collect(fetch_offset, upper_bound)
            if _collected(got) != _collected(expected):
                steps.step(f"collect({fetch_offset}, {upper_bound})")
                raise steps.fail(f"collect(fetch_offset={fetch_offset}, "
                                 f"upper_bound={upper_bound}): (entries, search may stop)",
                                 _collected(expected), _collected(got))


def _collected(answer: object) -> object:
    """The learner's (entries, complete) as comparable tuples; anything else as it is."""
    if not isinstance(answer, Iterable):
        return answer
    try:
        found, complete = answer
        return [tuple(entry) for entry in found], complete
    except (TypeError, ValueError):
        return answer


# --- exercise 2 -------------------------------------------------------------------------------


def _describe_batch(header: BatchHeader, records: list) -> str:
    span = f"offsets {header.base_offset}-{header.last_offset}"
    if header.producer_id < 0:
        return f"{span}: no producer"
    if header.is_control:
        marker = parse_control_marker(records[0])
        kind = "COMMIT" if marker is not None and marker.commit else "ABORT"
        return f"{span}: producer {header.producer_id}'s {kind} marker (control batch)"
    kind = "transactional" if header.is_transactional else "idempotent, not transactional"
    return f"{span}: producer {header.producer_id}, {kind}"


def check_aborted_filter(learner: ModuleType, _workdir: Path) -> None:
    for number, log in enumerate(all_logs()):
        rng = random.Random(number)
        index = _index_of(log)
        batches = [batch for data in log.batches for batch in parse_batches(data)]
        for fetch_offset in sorted({b.header.base_offset for b in batches}
                                   | {b.header.last_offset for b in batches}):
            answer = [b for b in batches if b.header.last_offset >= fetch_offset
                      and b.header.base_offset < log.lso_at_end]
            if not answer:
                continue
            found, _complete = REAL_COLLECT(index, fetch_offset, answer[-1].header.next_offset)
            aborted = [(entry.producer_id, entry.first_offset) for entry in found]
            if number % 2:
                rng.shuffle(aborted)
            _check_one_answer(learner, log, fetch_offset, answer, aborted)


def _index_of(log: PartitionLog) -> txn_index.TransactionIndex:
    """The log's aborted transactions in an index held in memory (no file is written)."""
    index = txn_index.TransactionIndex.__new__(txn_index.TransactionIndex)
    index._entries = sorted((e.aborted for e in log.events if e.aborted is not None),
                            key=lambda entry: entry.last_offset)
    return index


def _check_one_answer(learner: ModuleType, log: PartitionLog, fetch_offset: int,
                      answer: list, aborted: list[tuple[int, int]]) -> None:
    steps = Steps()
    steps.step(f"{log.name}: a read_committed Fetch from offset {fetch_offset} answers the "
               f"batches {answer[0].header.base_offset}-{answer[-1].header.last_offset} "
               f"(LSO {log.lso_at_end}) and aborted_transactions {aborted}")
    steps.step(f"AbortedFilter({aborted})")
    real = REAL_FILTER(list(aborted))
    mine = learner.AbortedFilter(list(aborted))
    for batch in answer:
        expected = real.drops(batch.header, list(batch.records))
        got = mine.drops(batch.header, list(batch.records))
        what = _describe_batch(batch.header, batch.records)
        steps.step(f"drops(batch at {what}) -> {got!r}")
        steps.expect(f"drops(batch at {what})", expected, got)


# --- exercise 3 -------------------------------------------------------------------------------

TXN_ID = "stage9-learner"
TOPIC = "stage9-out"
COORDINATOR_APIS = {ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN,
                    ApiKey.ADD_OFFSETS_TO_TXN}
REQUEST_TIMEOUT_MS = 15_000
READ_TIMEOUT_S = 30.0
FENCED = (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)


@dataclass
class Sent:
    api: str
    fields: dict
    code: ErrorCode
    answer: Struct


def _summary(api_key: ApiKey, request: Struct | None) -> dict:
    """The fields of a request that the check looks at, as the broker decodes them."""
    if request is None:  # (a request with no body: nothing to look at)
        return {}
    if api_key == ApiKey.INIT_PRODUCER_ID:
        return {"transactional_id": request.transactional_id,
                "transaction_timeout_ms": request.transaction_timeout_ms}
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        return {"transactional_id": request.v3_and_below_transactional_id,
                "producer_id": request.v3_and_below_producer_id,
                "producer_epoch": request.v3_and_below_producer_epoch,
                "partitions": sorted((t.name, p) for t in request.v3_and_below_topics
                                     for p in t.partitions)}
    if api_key == ApiKey.END_TXN:
        return {"transactional_id": request.transactional_id,
                "producer_id": request.producer_id, "producer_epoch": request.producer_epoch,
                "committed": bool(request.committed)}
    if api_key == ApiKey.PRODUCE:
        found: dict[str, object] = {"transactional_id": request.transactional_id,
                                 "acks": request.acks}
        partitions = [(t.name, p.index, p.records) for t in request.topic_data
                      for p in t.partition_data]
        found["partitions"] = [(name, index) for name, index, _ in partitions]
        if len(partitions) == 1 and partitions[0][2]:
            batches = parse_batches(partitions[0][2])
            if len(batches) == 1:
                header = batches[0].header
                found.update(producer_id=header.producer_id,
                             producer_epoch=header.producer_epoch,
                             base_sequence=header.base_sequence,
                             transactional=header.is_transactional,
                             values=[r.value for r in batches[0].records])
        return found
    return {}


class Wire:
    """The learner's ``request``: SimpleKafka's client sends each request where it belongs;
    every request and answer goes into the timeline."""

    def __init__(self, client: KafkaClient, steps: Steps, coordinator: int):
        self.client = client
        self.steps = steps
        self.coordinator = coordinator
        self.sent: list[Sent] = []
        self.broken: ExerciseFailed | None = None
        self.acting: Producer | None = None  # the producer whose method is running

    def __call__(self, api_key: ApiKey, body: dict) -> Struct:
        try:
            api_key = ApiKey(api_key)
            node = self.coordinator
            if api_key == ApiKey.PRODUCE:
                topic = body["topic_data"][0]
                node = self.client.leader_for(topic["name"], topic["partition_data"][0]["index"],
                                              REQUEST_TIMEOUT_MS)
            elif api_key not in COORDINATOR_APIS:
                node = self.client.least_loaded_node()
            answer = self.client.request(node, api_key, body, timeout_ms=REQUEST_TIMEOUT_MS)
        except Exception as exc:
            self.broken = self.broken or self.steps.fail(
                f"your {api_key.name} request could not be sent: {type(exc).__name__}: {exc}",
                "a request body with Kafka's field names (see the class docstring)", body)
            raise
        version = self.client.negotiated_versions(node).get(api_key, 0)
        _header, request = decode_request(encode_request(api_key, version, 0, "check", body))
        code = error_code_of(api_key, answer)
        fields = _summary(api_key, request)
        state = getattr(self.acting, "state", None)
        fields["state while sent"] = getattr(state, "name", repr(state))
        self.sent.append(Sent(_api_name(api_key), fields, code, answer))
        retried = " (retriable: call() asks again)" if code.retriable else ""
        self.steps.step(f"   -> {_api_name(api_key)} v{version} {_show(fields)}  <- "
                        f"{code.name}{retried}")
        return answer


def _api_name(api_key: ApiKey) -> str:
    return "".join(part.capitalize() for part in api_key.name.split("_"))


def _show(fields: dict) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in fields.items()) + "}"


@dataclass
class Expect:
    """What one call of the learner's producer must do."""

    requests: list[tuple[str, dict]] = field(default_factory=list)  # (api, fields subset)
    state: str = "READY"
    raises: str | None = None  # "IllegalStateError", "abortable", "fatal"
    codes: tuple[ErrorCode, ...] = ()  # the TransactionError's code, one of these


class Producer(Protocol):
    """Exercise 3's contract: what the check uses of the learner's TransactionalProducer."""

    state: Enum
    producer_id: int
    producer_epoch: int
    sequences: dict[tuple[str, int], int]
    error: BaseException | None

    def init_transactions(self) -> None: ...
    def begin_transaction(self) -> None: ...
    def send(self, topic: str, partition: int,
             records: list[tuple[bytes, bytes]]) -> int: ...
    def commit_transaction(self) -> None: ...
    def abort_transaction(self) -> None: ...


class Scenario:
    """Drives the learner's producers; each call's requests, outcome and state are checked."""

    def __init__(self, learner: ModuleType, wire: Wire, steps: Steps):
        self.learner = learner
        self.wire = wire
        self.steps = steps

    def producer(self, transactional_id: str = TXN_ID) -> Producer:
        self.steps.step(f"TransactionalProducer({transactional_id!r}, request)")
        return self.learner.TransactionalProducer(transactional_id, self.wire)

    def do(self, name: str, producer: Producer, call: str, action: Callable[[], object],
           expect: Expect) -> object:
        learner, steps = self.learner, self.steps
        steps.step(f"{name}.{call}  (state {producer.state.name})")
        before = len(self.wire.sent)
        outcome: object = None
        raised: BaseException | None = None
        self.wire.acting = producer
        try:
            outcome = action()
        except NotImplementedError:
            raise
        except (learner.IllegalStateError, learner.TransactionError) as exc:
            raised = exc
        except Exception as exc:
            if self.wire.broken is not None:
                raise self.wire.broken from None
            raise steps.fail(f"{name}.{call} raised {type(exc).__name__}: {exc}",
                             _expected_outcome(expect), f"{type(exc).__name__}: {exc}") from exc
        if self.wire.broken is not None:
            raise self.wire.broken
        sent = [s for s in self.wire.sent[before:] if not s.code.retriable]
        steps.expect(f"{name}.{call}: the requests sent (retried attempts left out)",
                     [api for api, _ in expect.requests], [s.api for s in sent])
        for number, ((api, wanted), got) in enumerate(zip(expect.requests, sent), 1):
            shown = {key: got.fields.get(key, "(missing)") for key in wanted}
            steps.expect(f"{name}.{call}: request {number}, {api}", wanted, shown)
        steps.step(f"   {name}.{call} "
                   + (f"raised {type(raised).__name__}: {raised}" if raised is not None
                      else f"returned {outcome!r}") + f"; state {producer.state.name}")
        steps.expect(f"{name}.{call}: the outcome", _expected_outcome(expect),
                     _outcome(learner, raised, expect))
        steps.expect(f"{name}.{call}: the state after it", expect.state, producer.state.name)
        return outcome


def _expected_outcome(expect: Expect) -> str:
    if expect.raises is None:
        return "returns"
    if expect.raises == "IllegalStateError":
        return "raises IllegalStateError"
    return f"raises TransactionError({'/'.join(c.name for c in expect.codes)}, " \
           f"fatal={expect.raises == 'fatal'})"


def _outcome(learner: ModuleType, raised: BaseException | None, expect: Expect) -> str:
    if raised is None:
        return "returns"
    if isinstance(raised, learner.IllegalStateError):
        return "raises IllegalStateError"
    code = getattr(raised, "code", None)
    shown = "/".join(c.name for c in expect.codes) if code in expect.codes else \
        getattr(code, "name", repr(code))
    return f"raises TransactionError({shown}, fatal={getattr(raised, 'fatal', None)})"


def _ids(producer: Producer) -> dict:
    return {"transactional_id": TXN_ID, "producer_id": producer.producer_id,
            "producer_epoch": producer.producer_epoch}


def _init(transactional_id: str = TXN_ID, **more: object) -> tuple[str, dict]:
    return ("InitProducerId", {"transactional_id": transactional_id, **more,
                               "state while sent": "INITIALIZING"})


def _add(producer: Producer, partition: int) -> tuple[str, dict]:
    return ("AddPartitionsToTxn", {**_ids(producer), "partitions": [(TOPIC, partition)],
                                   "state while sent": "IN_TRANSACTION"})


def _produce(producer: Producer, partition: int, sequence: int, values: list[bytes]
             ) -> tuple[str, dict]:
    return ("Produce", {"transactional_id": TXN_ID, "acks": -1,
                        "partitions": [(TOPIC, partition)],
                        "producer_id": producer.producer_id,
                        "producer_epoch": producer.producer_epoch, "base_sequence": sequence,
                        "transactional": True, "values": values,
                        "state while sent": "IN_TRANSACTION"})


def _end(producer: Producer, commit: bool) -> tuple[str, dict]:
    return ("EndTxn", {**_ids(producer), "committed": commit, "state while sent":
                       "COMMITTING_TRANSACTION" if commit else "ABORTING_TRANSACTION"})


def _records(*values: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"key-" + value, value) for value in values]


def check_transactional_producer(learner: ModuleType, workdir: Path) -> None:
    from simplekafka.admin import Admin
    from simplekafka.client.client import KafkaClient
    from simplekafka.cluster import LocalCluster
    from simplekafka.cluster.local import ClusterError

    steps = Steps()
    cluster = LocalCluster(brokers=1, base_dir=workdir / "cluster", broker_config={
        "transaction.state.log.num.partitions": 1, "group.initial.rebalance.delay.ms": 0,
        "transaction.max.timeout.ms": 120_000})
    steps.step(f"start ZooKeeper and one broker (logs under {workdir / 'cluster'})")
    try:
        cluster.start()  # (stops what it started if it fails)
    except ClusterError as exc:
        raise steps.fail("the cluster did not start (nothing of yours runs in it yet)",
                         "ZooKeeper and a broker serving", str(exc)) from None
    client = None
    try:
        with Admin(cluster.bootstrap_servers) as admin:
            admin.create_topic(TOPIC, num_partitions=2)
        steps.step(f"create topic {TOPIC} (2 partitions) on {cluster.bootstrap_servers}")
        client = KafkaClient(cluster.bootstrap_servers, client_id="learn-check-9",
                             request_timeout_ms=REQUEST_TIMEOUT_MS)
        coordinator = _find_coordinator(client, steps)
        wire = Wire(client, steps, coordinator)
        _run_scenario(Scenario(learner, wire, steps))
        _read_back(cluster.bootstrap_servers, steps)
    finally:
        if client is not None:
            client.close()
        cluster.stop()


def _find_coordinator(client: KafkaClient, steps: Steps) -> int:
    deadline = time.monotonic() + READ_TIMEOUT_S
    while True:
        answer = client.request(client.least_loaded_node(), ApiKey.FIND_COORDINATOR,
                                {"key": TXN_ID, "key_type": 1}, timeout_ms=REQUEST_TIMEOUT_MS)
        if answer.error_code == 0:
            break
        if time.monotonic() > deadline:
            raise steps.fail("FindCoordinator for the transactional id", "error_code 0",
                             ErrorCode.of(answer.error_code).name)
        time.sleep(0.2)
    client.refresh_metadata(None, REQUEST_TIMEOUT_MS)
    steps.step(f"FindCoordinator({TXN_ID!r}, key_type 1) -> broker {answer.node_id} "
               f"(the check's; your producer is handed a request function)")
    return answer.node_id


def _run_scenario(s: Scenario) -> None:
    learner = s.learner
    state_error = Expect(raises="IllegalStateError")
    empty = s.producer("")
    s.do("empty", empty, "init_transactions()  [an empty transactional id]",
         empty.init_transactions,
         Expect([_init("")], "FATAL_ERROR", "fatal",
                (ErrorCode.INVALID_REQUEST,)))

    a = s.producer()
    s.do("a", a, "begin_transaction()  [before init_transactions]", a.begin_transaction,
         Expect(state="UNINITIALIZED", raises="IllegalStateError"))
    s.do("a", a, "init_transactions()", a.init_transactions,
         Expect([_init(transaction_timeout_ms=60_000)]))
    answer = s.wire.sent[-1].answer
    s.steps.expect("a's (producer_id, producer_epoch) after init_transactions (InitProducerId's "
                   "answer)", (answer.producer_id, answer.producer_epoch),
                   (a.producer_id, a.producer_epoch))
    s.do("a", a, "commit_transaction()  [no transaction begun]", a.commit_transaction,
         state_error)

    # A committed transaction over both partitions.
    s.do("a", a, "begin_transaction()", a.begin_transaction, Expect(state="IN_TRANSACTION"))
    offset = s.do("a", a, "send(p0, committed-1)",
                  lambda: a.send(TOPIC, 0, _records(b"committed-1")),
                  Expect([_add(a, 0), _produce(a, 0, 0, [b"committed-1"])], "IN_TRANSACTION"))
    _returned_offset(s, offset)
    offset = s.do("a", a, "send(p0, committed-2, committed-3)",
                  lambda: a.send(TOPIC, 0, _records(b"committed-2", b"committed-3")),
                  Expect([_produce(a, 0, 1, [b"committed-2", b"committed-3"])],
                         "IN_TRANSACTION"))
    _returned_offset(s, offset)
    s.do("a", a, "send(p1, committed-4)", lambda: a.send(TOPIC, 1, _records(b"committed-4")),
         Expect([_add(a, 1), _produce(a, 1, 0, [b"committed-4"])], "IN_TRANSACTION"))
    s.do("a", a, "commit_transaction()", a.commit_transaction, Expect([_end(a, True)]))

    # An aborted transaction, after an abortable error (a batch lost: a sequence gap).
    s.do("a", a, "begin_transaction()", a.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("a", a, "send(p0, aborted-1)", lambda: a.send(TOPIC, 0, _records(b"aborted-1")),
         Expect([_add(a, 0), _produce(a, 0, 3, [b"aborted-1"])], "IN_TRANSACTION"))
    a.sequences[(TOPIC, 0)] = a.sequences.get((TOPIC, 0), 0) + 5
    s.steps.step("(the check moves a.sequences[p0] on by 5: as if batches were lost)")
    s.do("a", a, "send(p0, aborted-2)", lambda: a.send(TOPIC, 0, _records(b"aborted-2")),
         Expect([_produce(a, 0, 9, [b"aborted-2"])], "ABORTABLE_ERROR", "abortable",
                (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,)))
    s.do("a", a, "commit_transaction()  [after an abortable error]", a.commit_transaction,
         Expect(state="ABORTABLE_ERROR", raises="IllegalStateError"))
    s.do("a", a, "abort_transaction()", a.abort_transaction, Expect([_end(a, False)]))
    s.steps.expect("a.error after the abort (the error is over)", None, a.error)
    s.do("a", a, "begin_transaction()  [a transaction that writes nothing]",
         a.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("a", a, "commit_transaction()  [nothing was written]", a.commit_transaction, Expect())

    # b fences a while a's transaction is open: a's EndTxn is refused, a is done for.
    s.do("a", a, "begin_transaction()", a.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("a", a, "send(p1, zombie-1)", lambda: a.send(TOPIC, 1, _records(b"zombie-1")),
         Expect([_add(a, 1), _produce(a, 1, 1, [b"zombie-1"])], "IN_TRANSACTION"))
    b = s.producer()
    s.do("b", b, "init_transactions()  [same transactional id: fences a]", b.init_transactions,
         Expect([_init()]))
    s.steps.expect("b's producer id is a's, its epoch newer", (a.producer_id, True),
                   (b.producer_id, b.producer_epoch > a.producer_epoch))
    fenced = Expect(state="FATAL_ERROR", raises="fatal", codes=FENCED)
    s.do("a", a, "commit_transaction()  [a was fenced]", a.commit_transaction,
         Expect([_end(a, True)], "FATAL_ERROR", "fatal", FENCED))
    s.do("a", a, "begin_transaction()  [fatal: nothing more]", a.begin_transaction, fenced)
    s.do("a", a, "abort_transaction()  [fatal: nothing more]", a.abort_transaction, fenced)
    s.do("b", b, "begin_transaction()", b.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("b", b, "send(p1, after-fence)", lambda: b.send(TOPIC, 1, _records(b"after-fence")),
         Expect([_add(b, 1), _produce(b, 1, 0, [b"after-fence"])], "IN_TRANSACTION"))
    s.do("b", b, "commit_transaction()", b.commit_transaction, Expect([_end(b, True)]))

    # c fences b; b learns it from its next Produce.
    s.do("b", b, "begin_transaction()", b.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("b", b, "send(p0, zombie-2)", lambda: b.send(TOPIC, 0, _records(b"zombie-2")),
         Expect([_add(b, 0), _produce(b, 0, 0, [b"zombie-2"])], "IN_TRANSACTION"))
    c = s.producer()
    s.do("c", c, "init_transactions()  [fences b]", c.init_transactions,
         Expect([_init()]))
    s.do("b", b, "send(p0, zombie-3)  [b was fenced]",
         lambda: b.send(TOPIC, 0, _records(b"zombie-3")),
         Expect([_produce(b, 0, 1, [b"zombie-3"])], "FATAL_ERROR", "fatal", FENCED))
    s.do("b", b, "send(p0, zombie-4)  [fatal: nothing more]",
         lambda: b.send(TOPIC, 0, _records(b"zombie-4")), fenced)
    s.do("c", c, "begin_transaction()", c.begin_transaction, Expect(state="IN_TRANSACTION"))
    s.do("c", c, "send(p0, c-committed)", lambda: c.send(TOPIC, 0, _records(b"c-committed")),
         Expect([_add(c, 0), _produce(c, 0, 0, [b"c-committed"])], "IN_TRANSACTION"))
    s.do("c", c, "commit_transaction()", c.commit_transaction, Expect([_end(c, True)]))
    assert learner  # (the learner's classes are reached through the scenario)


def _returned_offset(s: Scenario, got: object) -> None:
    """The last send returned the base offset the broker answered."""
    produce = next(sent for sent in reversed(s.wire.sent) if sent.api == "Produce")
    expected = produce.answer.responses[0].partition_responses[0].base_offset
    s.steps.expect("what send returned (the Produce answer's base_offset)", expected, got)


def _read_back(bootstrap: str, steps: Steps) -> None:
    from simplekafka.consumer import Consumer
    from simplekafka.protocol.structs import TopicPartition

    wanted = {0: [b"committed-1", b"committed-2", b"committed-3", b"c-committed"],
              1: [b"committed-4", b"after-fence"]}
    consumer = Consumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    got: dict[int, list[bytes]] = {0: [], 1: []}
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in (0, 1)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + READ_TIMEOUT_S
        settle: float | None = None
        while time.monotonic() < (settle or deadline):
            for record in consumer.poll(timeout_ms=200):
                got[record.partition].append(record.value)
            if settle is None and all(len(got[p]) >= len(wanted[p]) for p in wanted):
                settle = time.monotonic() + 0.5
    finally:
        consumer.close()
    steps.step(f"a read_committed Consumer reads {TOPIC} from the start: {got}")
    steps.expect(f"what read_committed reads from {TOPIC} (partition -> values)", wanted, got)


# --- the stage --------------------------------------------------------------------------------

STAGE = Stage(9, "Transactions", "stage9_transactions", "stages/stage9_transactions/README.md", (
    Exercise(1, "last stable offset and aborted index",
             "the LSO, and which aborted transactions a read_committed fetch is told about",
             ("ProducerStateTable.last_stable_offset", "TransactionIndex.collect"),
             check_lso_and_index,
             hints=("Read the chapter's section on committing and aborting, and "
                    "docs/transactions.md's sections on the last stable offset and the "
                    "aborted-transactions index.",
                    "The LSO is a minimum: the HW, every open transaction's first offset, and "
                    "the first offset of an ended one whose marker is not below the HW yet. An "
                    "aborted transaction overlaps a range when it ends at or after its start "
                    "and begins before its end; the index's LSO says when to stop looking."),
             plugs=(("ProducerStateTable.last_stable_offset",
                     ("simplekafka.broker.producer_state:ProducerStateTable.last_stable_offset",)),
                    ("TransactionIndex.collect",
                     ("simplekafka.storage.txn_index:TransactionIndex.collect",)))),
    Exercise(2, "read_committed filter",
             "drop aborted transactions' records and every marker from a fetch answer",
             ("AbortedFilter.__init__", "AbortedFilter.drops"), check_aborted_filter,
             hints=("Read the chapter's section on an aborted transaction, invisible to "
                    "read_committed.",
                    "A producer's aborted transaction begins at its first offset and ends at "
                    "its ABORT marker: walk the batches in offset order, start dropping a "
                    "producer's transactional batches once its first offset is reached, stop "
                    "at its abort marker. The list is not in first-offset order."),
             plugs=(("AbortedFilter", ("simplekafka.consumer.fetcher:_AbortedFilter",)),)),
    Exercise(3, "transactional producer",
             "Kafka's producer transaction states over InitProducerId, AddPartitionsToTxn, "
             "Produce, EndTxn, against the real coordinator; fenced producers stop",
             ("TransactionalProducer.transition_to", "TransactionalProducer.fail",
              "TransactionalProducer.init_transactions",
              "TransactionalProducer.begin_transaction", "TransactionalProducer.send",
              "TransactionalProducer.end_transaction"),
             check_transactional_producer,
             hints=("Read the chapter's sections on finding the coordinator, adding a "
                    "partition, committing, and fencing.",
                    "Every method starts with a transition (or a require) so that a wrong "
                    "state fails before any request; the coordinator must hear of each "
                    "partition once per transaction before the first batch to it; a fenced "
                    "producer's error is kept and raised by every later call."),
             time_limit=150.0),
), mutants=(
    Mutant("lso-is-always-the-high-watermark", 1,
           "        for first in self.ongoing.values():\n            if first < lso:\n"
           "                lso = first\n", ""),
    Mutant("lso-forgets-unreplicated-markers", 1,
           "            if txn.last_offset >= high_watermark and txn.first_offset < lso:",
           "            if False and txn.first_offset < lso:"),
    Mutant("lso-marker-at-the-hw-counts-as-replicated", 1,
           "            if txn.last_offset >= high_watermark and txn.first_offset < lso:",
           "            if txn.last_offset > high_watermark and txn.first_offset < lso:"),
    Mutant("lso-not-capped-by-the-hw", 1,
           "        lso = high_watermark\n        for first",
           "        lso = 1 << 62\n        for first"),
    Mutant("aborted-range-misses-a-marker-at-the-fetch-offset", 1,
           "if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:",
           "if entry.last_offset > fetch_offset and entry.first_offset < upper_bound:"),
    Mutant("aborted-range-includes-the-upper-bound", 1,
           "if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:",
           "if entry.last_offset >= fetch_offset and entry.first_offset <= upper_bound:"),
    Mutant("index-search-never-stops", 1,
           "            if entry.last_stable_offset >= upper_bound:\n"
           "                return found, True\n", ""),
    Mutant("index-search-stops-before-keeping-the-entry", 1,
           "            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:"
           "\n                found.append(entry)\n"
           "            if entry.last_stable_offset >= upper_bound:\n"
           "                return found, True\n",
           "            if entry.last_stable_offset >= upper_bound:\n"
           "                return found, True\n"
           "            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:"
           "\n                found.append(entry)\n"),
    Mutant("control-batches-reach-the-application", 2,
           "                self.aborting.discard(header.producer_id)\n            return True\n",
           "                self.aborting.discard(header.producer_id)\n            return False\n"),
    Mutant("abort-marker-does-not-end-the-aborted-range", 2,
           "            if marker is not None and not marker.commit:\n"
           "                self.aborting.discard(header.producer_id)\n",
           ""),
    Mutant("aborted-transaction-begins-one-offset-late", 2,
           "while self.pending and self.pending[0][1] <= header.last_offset:",
           "while self.pending and self.pending[0][1] < header.last_offset:"),
    Mutant("aborted-list-taken-in-the-brokers-order", 2,
           "        self.pending = sorted(aborted, key=lambda txn: txn[1])",
           "        self.pending = list(aborted)"),
    Mutant("aborted-producers-dropped-from-the-start", 2,
           "        self.aborting: set[int] = set()",
           "        self.aborting: set[int] = {producer for producer, _first in aborted}"),
    Mutant("produce-without-add-partitions-to-txn", 3,
           "        if tp not in self.partitions:\n            code, _answer",
           "        if False:\n            code, _answer"),
    Mutant("fenced-producer-only-abortable", 3,
           "        fatal = code in FATAL_CODES or self.state == TxnState.INITIALIZING",
           "        fatal = self.state == TxnState.INITIALIZING"),
    Mutant("fatal-error-not-kept", 3,
           "        if target != TxnState.FATAL_ERROR:\n"
           "            self.require(*VALID_PREVIOUS[target])\n",
           "        if self.state not in VALID_PREVIOUS[target] and target != T.FATAL_ERROR:\n"
           "            raise IllegalStateError(f\"{self.state} -> {target}\")\n"),
    Mutant("transitions-never-checked", 3,
           "        if target != TxnState.FATAL_ERROR:\n"
           "            self.require(*VALID_PREVIOUS[target])\n", ""),
    Mutant("sequence-restarts-each-transaction", 3,
           "        self.transition_to(TxnState.IN_TRANSACTION)\n",
           "        self.transition_to(TxnState.IN_TRANSACTION)\n        self.sequences.clear()\n"),
    Mutant("partitions-kept-for-the-next-transaction", 3,
           "        self.partitions.clear()\n        self.error = None\n",
           "        self.error = None\n"),
    Mutant("end-txn-for-a-transaction-that-wrote-nothing", 3,
           "        if self.partitions:\n            code, _answer = self.call(ApiKey.END_TXN",
           "        if True:\n            code, _answer = self.call(ApiKey.END_TXN"),
    Mutant("abort-sends-commit", 3, '"committed": commit})', '"committed": True})'),
    Mutant("epoch-from-init-ignored", 3,
           "        self.producer_id, self.producer_epoch = answer.producer_id, "
           "answer.producer_epoch\n",
           "        self.producer_id = answer.producer_id\n"),
    Mutant("init-refusal-not-fatal", 3,
           " or self.state == TxnState.INITIALIZING", ""),
    Mutant("end-txn-sent-before-committing", 3,
           "        self.transition_to(TxnState.COMMITTING_TRANSACTION if commit\n"
           "                           else TxnState.ABORTING_TRANSACTION)\n"
           "        if self.partitions:\n",
           "        if self.partitions:\n"
           "            self.call(ApiKey.END_TXN, {\n"
           "                \"transactional_id\": self.transactional_id,\n"
           "                \"producer_id\": self.producer_id,\n"
           "                \"producer_epoch\": self.producer_epoch, \"committed\": commit})\n"
           "        self.transition_to(TxnState.COMMITTING_TRANSACTION if commit\n"
           "                           else TxnState.ABORTING_TRANSACTION)\n"
           "        if False:\n"),
), real_processes=True)
