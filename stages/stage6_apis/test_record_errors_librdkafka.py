"""KIP-467 per-record errors as librdkafka itself reports them, against a real broker.

confluent-kafka's Python delivery callback builds its KafkaError from
``rd_kafka_message_errstr``, which for a failed delivery is only the error code's
text; librdkafka keeps the broker's per-record message on the message
(``rd_kafka_message_produce_errstr``, librdkafka 2.x), and the Python binding does not
call it. So this test loads the librdkafka bundled in the confluent-kafka wheel with
ctypes (standard library; the library ships with confluent-kafka: no new dependency)
and produces through its C API.

Where it is read matters. librdkafka points each failed message at the string in the
parsed ProduceResponse and frees that response once the delivery report is queued
(``rd_kafka_handle_Produce``; the copy the report op keeps is not the one the message
points at), so in the delivery callback the bad record's string is freed memory (in
2.16.0 it reads as garbage). Its ``on_acknowledgement`` interceptor runs on the broker
thread before that free, so the record's message is read there; the delivery callback
gives the error code (and, for the good record, librdkafka's own static text).
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import uuid

import pytest

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster
from simplekafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

RD_KAFKA_PRODUCER = 0
RD_KAFKA_CONF_OK = 0
RD_KAFKA_MSG_F_COPY = 0x2
KEYLESS_MESSAGE = "Compacted topic cannot accept message without key in topic partition"
# librdkafka's own (static) text for the other records of a refused batch, as Kafka's client
OTHER_RECORD = ("Failed to append record because it was part of a batch which had one more "
                "more invalid records")


class RdKafkaMessage(ctypes.Structure):
    """The public head of ``rd_kafka_message_t`` (rdkafka.h)."""

    _fields_ = [("err", ctypes.c_int), ("rkt", ctypes.c_void_p),
                ("partition", ctypes.c_int32), ("payload", ctypes.c_void_p),
                ("len", ctypes.c_size_t), ("key", ctypes.c_void_p),
                ("key_len", ctypes.c_size_t), ("offset", ctypes.c_int64),
                ("_private", ctypes.c_void_p)]


MessagePointer = ctypes.POINTER(RdKafkaMessage)
# void dr_msg_cb(rd_kafka_t *, const rd_kafka_message_t *, void *opaque)
DeliveryCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, MessagePointer, ctypes.c_void_p)
# rd_kafka_resp_err_t on_new(rd_kafka_t *, const rd_kafka_conf_t *, void *, char *, size_t)
OnNew = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_size_t)
# rd_kafka_resp_err_t on_acknowledgement(rd_kafka_t *, rd_kafka_message_t *, void *)
OnAcknowledgement = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, MessagePointer,
                                     ctypes.c_void_p)


def bundled_librdkafka() -> str:
    """The librdkafka shared library inside the installed confluent-kafka wheel (auditwheel
    puts it in ``confluent_kafka.libs/``; older wheels used ``confluent_kafka/.libs``)."""
    spec = importlib.util.find_spec("confluent_kafka")
    assert spec is not None and spec.origin, "confluent-kafka is not installed"
    package = os.path.dirname(spec.origin)
    found = sorted(glob.glob(os.path.join(package + ".libs", "librdkafka*.so*"))
                   + glob.glob(os.path.join(package, ".libs", "librdkafka*.so*")))
    assert found, f"no librdkafka next to {package}"
    return found[0]


def load_librdkafka(path: str) -> ctypes.CDLL:
    """The C API's few functions this test calls, with their signatures from rdkafka.h."""
    lib = ctypes.CDLL(path)
    c_char_p, c_void_p, c_int, c_size_t = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int,
                                           ctypes.c_size_t)
    signatures = {
        "rd_kafka_version_str": (c_char_p, []),
        "rd_kafka_conf_new": (c_void_p, []),
        "rd_kafka_conf_set": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p, c_size_t]),
        "rd_kafka_conf_set_dr_msg_cb": (None, [c_void_p, DeliveryCallback]),
        "rd_kafka_conf_interceptor_add_on_new": (c_int, [c_void_p, c_char_p, OnNew,
                                                         c_void_p]),
        "rd_kafka_interceptor_add_on_acknowledgement": (c_int, [c_void_p, c_char_p,
                                                                OnAcknowledgement, c_void_p]),
        "rd_kafka_new": (c_void_p, [c_int, c_void_p, c_char_p, c_size_t]),
        "rd_kafka_topic_new": (c_void_p, [c_void_p, c_char_p, c_void_p]),
        "rd_kafka_produce": (c_int, [c_void_p, ctypes.c_int32, c_int, c_void_p, c_size_t,
                                     c_void_p, c_size_t, c_void_p]),
        "rd_kafka_last_error": (c_int, []),
        "rd_kafka_flush": (c_int, [c_void_p, c_int]),
        "rd_kafka_outq_len": (c_int, [c_void_p]),
        "rd_kafka_message_produce_errstr": (c_char_p, [MessagePointer]),
        "rd_kafka_topic_destroy": (None, [c_void_p]),
        "rd_kafka_destroy": (None, [c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)  # AttributeError names a symbol the library lacks
        function.restype, function.argtypes = restype, argtypes
    return lib


def produce_with_c_api(lib: ctypes.CDLL, bootstrap: str, topic: str,
                       records: list[tuple[bytes | None, bytes]]) -> tuple[dict, dict]:
    """Produce ``records`` (key, value) in one batch through librdkafka's C API. Returns,
    by value: what ``on_acknowledgement`` saw, (error code, produce errstr), and what the
    delivery callback saw, (error code, produce errstr read only for a message that is
    not the failing record, None for that one: its string is freed by then)."""
    acknowledged: dict[bytes, tuple[int, str | None]] = {}
    delivered: dict[bytes, tuple[int, str | None]] = {}

    def value_of(message) -> bytes:
        return ctypes.string_at(message.contents.payload, message.contents.len)

    def on_acknowledgement(_rk, message, _opaque):  # librdkafka's broker thread
        errstr = lib.rd_kafka_message_produce_errstr(message)
        acknowledged[value_of(message)] = (message.contents.err, errstr and errstr.decode())
        return 0

    def on_delivery(_rk, message, _opaque):  # this thread, in rd_kafka_flush
        value = value_of(message)
        failed_record = acknowledged.get(value, (0, None))[1] != OTHER_RECORD
        errstr = None if failed_record else lib.rd_kafka_message_produce_errstr(message)
        delivered[value] = (message.contents.err, errstr and errstr.decode())

    # The CFUNCTYPE objects must outlive the handle: kept in these locals until destroy.
    acknowledgement_callback = OnAcknowledgement(on_acknowledgement)
    delivery_callback = DeliveryCallback(on_delivery)

    def on_new(rk, _conf, _opaque, _errstr, _size):  # inside rd_kafka_new
        return lib.rd_kafka_interceptor_add_on_acknowledgement(rk, b"test",
                                                               acknowledgement_callback, None)

    new_callback = OnNew(on_new)
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for name, value in {"bootstrap.servers": bootstrap, "acks": "all",
                        "enable.idempotence": "false", "linger.ms": "200",
                        "message.send.max.retries": "0"}.items():
        result = lib.rd_kafka_conf_set(conf, name.encode(), value.encode(), errstr,
                                       len(errstr))
        assert result == RD_KAFKA_CONF_OK, (name, errstr.value)
    lib.rd_kafka_conf_set_dr_msg_cb(conf, delivery_callback)
    assert lib.rd_kafka_conf_interceptor_add_on_new(conf, b"test", new_callback, None) == 0
    rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, len(errstr))  # takes conf
    assert rk, errstr.value
    rkt = lib.rd_kafka_topic_new(rk, topic.encode(), None)
    try:
        for key, value in records:  # rd_kafka_producev is variadic: not for ctypes
            result = lib.rd_kafka_produce(rkt, 0, RD_KAFKA_MSG_F_COPY, value, len(value),
                                          key, len(key) if key is not None else 0, None)
            assert result == 0, lib.rd_kafka_last_error()
        lib.rd_kafka_flush(rk, 30_000)  # serves the delivery callbacks on this thread
        assert lib.rd_kafka_outq_len(rk) == 0, "not delivered within 30 s"
    finally:
        lib.rd_kafka_topic_destroy(rkt)
        lib.rd_kafka_destroy(rk)
    return acknowledged, delivered


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("record-errors"),
                         metrics=False)
    local.start()
    try:
        yield local
    finally:
        local.stop()


def test_librdkafka_reports_the_broker_message_of_a_keyless_record(cluster):
    """A batch of a keyed and a keyless record to a compacted topic: the broker refuses it
    with INVALID_RECORD and names record 1 (KIP-467). librdkafka 2.x gives the keyless
    record the broker's message (``rd_kafka_message_produce_errstr``, read while the
    response is alive) and the keyed one its "part of a batch" text; both delivery
    reports carry INVALID_RECORD. The Python binding's delivery callback, for the same
    batch, gives the error code only."""
    from confluent_kafka import Producer

    path = bundled_librdkafka()
    lib = load_librdkafka(path)
    version = lib.rd_kafka_version_str().decode()
    topic = f"keyless-{uuid.uuid4().hex[:8]}"
    with Admin(cluster.bootstrap_servers, request_timeout_ms=30_000) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, {"cleanup.policy": "compact"})])

    acknowledged, delivered = produce_with_c_api(lib, cluster.bootstrap_servers, topic,
                                                 [(b"key", b"good"), (None, b"bad")])
    invalid = ErrorCode.INVALID_RECORD.value
    context = (version, path, acknowledged, delivered)
    assert sorted(acknowledged) == [b"bad", b"good"], context
    bad_code, bad_message = acknowledged[b"bad"]
    assert bad_code == invalid and bad_message is not None, context
    assert bad_message.startswith(KEYLESS_MESSAGE) and f"{topic}-0" in bad_message, context
    assert acknowledged[b"good"] == (invalid, OTHER_RECORD), context
    assert delivered == {b"bad": (invalid, None), b"good": acknowledged[b"good"]}, context

    python_reports = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 200,
                         "enable.idempotence": False, "message.send.max.retries": 0})
    for key, value in [(b"key", b"good"), (None, b"bad")]:
        producer.produce(topic, value, key,
                         on_delivery=lambda e, m: python_reports.append((m.value(), e)))
    assert producer.flush(30) == 0
    assert sorted((value, e.code()) for value, e in python_reports) == \
        [(b"bad", invalid), (b"good", invalid)]
    assert not any(KEYLESS_MESSAGE in e.str() for _, e in python_reports)
