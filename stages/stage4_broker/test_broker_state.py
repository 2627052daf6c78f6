"""The broker's bookkeeping, unit by unit: producer sequences, the metadata cache,
and the controller's channel (in order, retried, and to itself through the same bytes).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import defer, task

from simplekafka.broker.controller.channel import ControllerChannel
from simplekafka.broker.metadata_cache import LEADER_DURING_DELETE, MetadataCache
from simplekafka.broker.producer_state import ProducerStateTable
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.batch_header import read_header
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.messages import decode_request, encode_response
from simplekafka.protocol.records import build_batch
from simplekafka.protocol.schema import Struct

# -- producer sequences ---------------------------------------------------------------


def header(sequence: int, count: int = 1, producer_id: int = 7, epoch: int = 0):
    return read_header(build_batch([(None, b"v")] * count, producer_id=producer_id,
                                   producer_epoch=epoch, base_sequence=sequence))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["next", "retry", "gap", "stale"]),
                          st.integers(1, 4)), max_size=40))
def test_a_producer_log_has_every_sequence_once_in_order(steps):
    """Whatever mix of retries, gaps and stale resends arrives, what is appended is
    consecutive from the first accepted sequence, with no sequence twice (a producer
    the partition has never seen may start anywhere, as in Kafka since KIP-360)."""
    table = ProducerStateTable()
    appended: list[int] = []  # sequences written, in order
    sent: list[tuple[int, int]] = []  # (first sequence, count) of appended batches
    next_sequence = 0
    offset = 0
    for kind, count in steps:
        if kind == "retry" and sent:
            first, count = sent[-1]
        elif kind == "gap":
            first = next_sequence + 1 + count
        elif kind == "stale" and next_sequence > 0:
            first = max(0, next_sequence - count - 10)
        else:
            first = next_sequence
        batch = header(first, count)
        try:
            duplicate = table.check(batch)
        except KafkaError as refused:
            assert refused.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            continue
        if duplicate is not None:
            assert (duplicate.first_sequence, duplicate.last_sequence) == (first, first + count - 1)
            continue
        table.record(batch, offset)
        appended.extend(range(first, first + count))
        sent.append((first, count))
        next_sequence = first + count
        offset += count
    start = appended[0] if appended else 0
    assert appended == list(range(start, start + len(appended)))


def test_a_new_epoch_starts_at_sequence_zero():
    table = ProducerStateTable()
    table.record(header(0, epoch=1), 0)
    with pytest.raises(KafkaError) as refused:
        table.check(header(5, epoch=2))
    assert refused.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert table.check(header(0, epoch=2)) is None


def test_non_idempotent_batches_are_not_tracked():
    table = ProducerStateTable()
    plain = read_header(build_batch([(None, b"v")]))
    assert table.check(plain) is None
    table.record(plain, 0)
    assert len(table) == 0


# -- metadata cache ---------------------------------------------------------------------


def update_metadata(version: int, controller_epoch: int, leader: int, topic: str = "t"):
    state = {"partition_index": 0, "controller_epoch": controller_epoch, "leader": leader,
             "leader_epoch": 4, "isr": [1], "zk_version": 2, "replicas": [1],
             "offline_replicas": []}
    body = {"controller_id": 1, "controller_epoch": controller_epoch,
            "live_brokers": [{"id": 1, "v0_host": "h", "v0_port": 1, "rack": "r",
                              "endpoints": [{"port": 9092, "host": "h", "listener": "PLAINTEXT",
                                             "security_protocol": 0}]}]}
    if version >= 5:
        body["topic_states"] = [{"topic_name": topic, "partition_states": [state]}]
    else:
        body["ungrouped_partition_states"] = [{**state, "topic_name": topic}]
    from simplekafka.protocol.api import request_schema

    schema = request_schema(ApiKey.UPDATE_METADATA, version)
    return schema.decode(schema.encode(body))


@pytest.mark.parametrize("version", [0, 4, 5])
def test_metadata_cache_reads_every_update_metadata_shape(version):
    cache = MetadataCache()
    assert cache.apply_update_metadata(update_metadata(version, 3, leader=1)) == ErrorCode.NONE
    partition = cache.partition("t", 0)
    assert (partition.leader, partition.leader_epoch, partition.isr) == (1, 4, (1,))
    broker = cache.brokers[1]
    assert (broker.host, broker.port) == ("h", 1 if version == 0 else 9092)
    assert cache.controller_id == 1 and cache.all_leaders_known("t")


def test_metadata_cache_refuses_an_older_controller_and_drops_deleted_topics():
    cache = MetadataCache()
    cache.apply_update_metadata(update_metadata(5, 3, leader=1))
    assert cache.apply_update_metadata(update_metadata(5, 2, leader=1)) == \
        ErrorCode.STALE_CONTROLLER_EPOCH
    cache.apply_update_metadata(update_metadata(5, 3, leader=LEADER_DURING_DELETE))
    assert not cache.has_topic("t")


def test_metadata_for_every_topic_is_built_once_per_update_metadata():
    """At 10,000 partitions a Metadata answer cost tens of ms of CPU to build and encode,
    for each request: it is kept, per version and listener, until an UpdateMetadata."""
    from types import SimpleNamespace

    from simplekafka.broker.apis.metadata import MetadataHandler
    from simplekafka.protocol.messages import decode_response

    cache = MetadataCache()
    cache.apply_update_metadata(update_metadata(5, 3, leader=1))
    handler = MetadataHandler(cache, {"auto.create.topics.enable": False}, lambda: "c", None)
    every_topic = dict(topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False,
                       include_cluster_authorized_operations=False)

    def ask(version=8, listener="PLAINTEXT"):
        context = SimpleNamespace(api_version=version, listener=listener)
        payload = encode_response(ApiKey.METADATA, version, 7, handler(context, every_topic))
        return decode_response(ApiKey.METADATA, version, payload)[1]

    first = ask()
    assert [(t.name, [p.leader_id for p in t.partitions]) for t in first.topics] == \
        [("t", [1])]
    for _ in range(5):
        assert ask() == first
    assert handler.answers_built == 1
    ask(version=1)  # each version (and listener) is its own answer
    assert handler.answers_built == 2
    cache.apply_update_metadata(update_metadata(5, 3, leader=1, topic="u"))
    assert [t.name for t in ask().topics] == ["t", "u"]
    assert handler.answers_built == 3


# -- the controller channel -------------------------------------------------------------


class FakeBroker:
    """Answers UpdateMetadata frames like a broker's dispatcher, optionally late."""

    def __init__(self, fail_first: int = 0, slow: bool = False):
        self.seen: list[int] = []
        self.fail_first = fail_first
        self.slow = slow
        self.pending: list[defer.Deferred] = []

    def __call__(self, frame: bytes, _connection):
        header, body = decode_request(frame)
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectionError("not yet")
        self.seen.append(body.controller_epoch)
        answer = encode_response(header.api_key, header.api_version, header.correlation_id,
                                 {"error_code": 0})
        if self.slow:
            waiting = defer.Deferred()
            self.pending.append((waiting, answer))
            return waiting
        return answer


def send_update(channel: ControllerChannel, epoch: int) -> defer.Deferred:
    return channel.send(1, ApiKey.UPDATE_METADATA, 5, {
        "controller_id": 1, "controller_epoch": epoch, "topic_states": [], "live_brokers": []})


def test_channel_to_itself_goes_through_request_bytes_in_order():
    clock = task.Clock()
    broker = FakeBroker(slow=True)
    channel = ControllerChannel(clock, 1, broker, lambda b: ("127.0.0.1", 9092))
    first, second = send_update(channel, 1), send_update(channel, 2)
    assert broker.seen == [1]  # the second waits for the first's answer
    waiting, answer = broker.pending.pop(0)
    waiting.callback(answer)
    assert isinstance(first.result, Struct) and first.result.error_code == 0
    assert broker.seen == [1]  # the next one waits for the reactor's next turn
    clock.advance(0)
    assert broker.seen == [1, 2]
    waiting, answer = broker.pending.pop(0)
    waiting.callback(answer)
    assert second.called


def test_requests_to_itself_wait_for_the_reactor_between_them():
    """The controller's own broker answers at once: each next request queued for it (say,
    LeaderAndIsr slices) waits for a delayed call, which a real reactor runs only after
    its next poll, so fetches and other brokers' answers are served between them (they
    used to run back to back within one turn: seconds at 10,000 partitions)."""
    clock = task.Clock()
    broker = FakeBroker()
    channel = ControllerChannel(clock, 1, broker, lambda b: ("127.0.0.1", 9092))
    sent = [send_update(channel, epoch) for epoch in (1, 2, 3)]
    assert broker.seen == [1] and sent[0].called and not sent[1].called
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(0)
    assert broker.seen == [1, 2, 3] and all(d.called for d in sent)


def test_channel_retries_until_the_broker_answers():
    clock = task.Clock()
    broker = FakeBroker(fail_first=3)
    channel = ControllerChannel(clock, 1, broker, lambda b: ("127.0.0.1", 9092))
    done = send_update(channel, 5)
    assert not done.called
    clock.advance(0.1)
    clock.advance(0.1)
    clock.advance(0.1)
    assert done.called and broker.seen == [5]
