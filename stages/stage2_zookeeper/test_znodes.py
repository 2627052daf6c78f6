"""Znode payloads (pure): the same JSON Kafka writes, round trips, and clear errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.coordination import (
    BrokerInfo,
    ClusterId,
    ControllerInfo,
    PartitionState,
    TopicAssignment,
    TopicConfig,
    ZkPaths,
    ZnodeFormatError,
)
from simplekafka.coordination.znodes import (
    ConfigChangeNotification,
    PartitionRef,
    PartitionRefs,
    decode_controller_epoch,
    encode_controller_epoch,
)


def test_broker_info_is_kafkas_version_4_json():
    info = BrokerInfo(1, "127.0.0.1", 9092, rack="r1", timestamp_ms=1700000000000)
    assert json.loads(info.to_json()) == {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["PLAINTEXT://127.0.0.1:9092"],
        "jmx_port": -1, "host": "127.0.0.1", "timestamp": "1700000000000",
        "port": 9092, "version": 4, "rack": "r1",
    }
    assert "rack" not in json.loads(BrokerInfo(1, "h", 1).to_json())  # Kafka omits it
    assert BrokerInfo.from_json(1, info.to_json()) == info


def test_broker_info_reads_what_a_real_kafka_broker_wrote():
    written_by_kafka = (b'{"features":{},'
                        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                        b'"endpoints":["PLAINTEXT://kafka-1:19092"],"jmx_port":-1,"port":19092,'
                        b'"host":"kafka-1","version":5,"timestamp":"1699999999999"}')
    info = BrokerInfo.from_json(7, written_by_kafka)
    assert (info.broker_id, info.host, info.port, info.rack) == (7, "kafka-1", 19092, None)


def test_controller_epoch_and_controller_payloads():
    assert encode_controller_epoch(7) == b"7"
    assert decode_controller_epoch(b"7") == 7
    assert json.loads(ControllerInfo(3, 5).to_json()) == {
        "version": 1, "brokerid": 3, "timestamp": "5"}
    assert ControllerInfo.from_json(ControllerInfo(3, 5).to_json()) == ControllerInfo(3, 5)


def test_topic_assignment_partition_state_config_payloads():
    assignment = TopicAssignment({0: (1, 2, 3), 1: (2, 3, 1)})
    assert json.loads(assignment.to_json()) == {
        "version": 1, "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}}
    assert TopicAssignment.from_json(assignment.to_json()) == assignment
    assert assignment.replication_factor == 3
    state = PartitionState(leader=1, leader_epoch=0, isr=(1, 2, 3), controller_epoch=7)
    assert json.loads(state.to_json()) == {
        "version": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2, 3], "controller_epoch": 7}
    assert PartitionState.from_json(state.to_json()) == state
    config = TopicConfig({"min.insync.replicas": "2"})
    assert json.loads(config.to_json()) == {"version": 1, "config": {"min.insync.replicas": "2"}}
    assert TopicConfig.from_json(config.to_json()) == config


def test_cluster_id_and_notifications():
    generated = ClusterId.generate()
    assert len(generated.id) == 22 and "=" not in generated.id
    assert json.loads(generated.to_json()) == {"version": "1", "id": generated.id}
    assert ClusterId.from_json(generated.to_json()) == generated
    refs = PartitionRefs((PartitionRef("t", 0), PartitionRef("u", 3)))
    assert json.loads(refs.to_json()) == {
        "version": 1, "partitions": [{"topic": "t", "partition": 0},
                                     {"topic": "u", "partition": 3}]}
    assert PartitionRefs.from_json(refs.to_json()) == refs
    change = ConfigChangeNotification("topics/t")
    assert ConfigChangeNotification.from_json(change.to_json()) == change


def test_paths_match_kafkas_layout():
    assert ZkPaths.broker(1) == "/brokers/ids/1"
    assert ZkPaths.partition_state("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert ZkPaths.topic_config("t") == "/config/topics/t"
    assert ZkPaths.delete_topic("t") == "/admin/delete_topics/t"


@pytest.mark.parametrize(("decode", "data", "message"), [
    (lambda d: PartitionState.from_json(d, "t", 0), b"not json", "not JSON"),
    (lambda d: PartitionState.from_json(d, "t", 0), b"[1]", "expected a JSON object"),
    (lambda d: PartitionState.from_json(d, "t", 0), b'{"leader":1}', "missing 'leader_epoch'"),
    (lambda d: PartitionState.from_json(d, "t", 0),
     b'{"leader":"1","leader_epoch":0,"isr":[],"controller_epoch":1}', "'leader' should be"),
    (lambda d: PartitionState.from_json(d, "t", 0),
     b'{"leader":1,"leader_epoch":0,"isr":["a"],"controller_epoch":1}', "list of broker ids"),
    (lambda d: TopicAssignment.from_json(d, "t"), b'{"partitions":{"x":[1]}}', "not a number"),
    (lambda d: BrokerInfo.from_json(1, d), b'{"endpoints":["nonsense"]}', "bad endpoint"),
    (lambda d: BrokerInfo.from_json(1, d), b'{"endpoints":["PLAINTEXT://h:x"]}', "bad port"),
    (lambda d: BrokerInfo.from_json(1, d), b"{}", "no usable endpoint"),
    (decode_controller_epoch, b"seven", "not an integer"),
    (ControllerInfo.from_json, None, "not JSON"),
])
def test_bad_payloads_raise_one_clear_error(decode, data, message):
    with pytest.raises(ZnodeFormatError, match=message):
        decode(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_znode_format_error(data):
    for decode in (lambda d: PartitionState.from_json(d), TopicAssignment.from_json,
                   lambda d: BrokerInfo.from_json(1, d), ControllerInfo.from_json,
                   ClusterId.from_json, TopicConfig.from_json, PartitionRefs.from_json):
        try:
            decode(data)
        except ZnodeFormatError:
            pass


ids = st.integers(0, 2**31 - 1)


@settings(max_examples=200, deadline=None)
@given(leader=st.integers(-1, 1000), epoch=ids, isr=st.lists(ids, max_size=5), cepoch=ids)
def test_partition_state_round_trips(leader, epoch, isr, cepoch):
    state = PartitionState(leader, epoch, tuple(isr), cepoch)
    assert PartitionState.from_json(state.to_json()) == state


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "leader", "leader_epoch", "isr", "controller_epoch",
                         "partitions", "0", "endpoints", "host", "port", "rack", "brokerid",
                         "id", "config", "topic", "partition", "timestamp"]), inner, max_size=6),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_shape_decodes_or_raises_znode_format_error(value):
    """Near-miss JSON (right keys, wrong shapes) never escapes as KeyError or TypeError."""
    data = json.dumps(value).encode()
    for decode in (lambda d: PartitionState.from_json(d), TopicAssignment.from_json,
                   lambda d: BrokerInfo.from_json(1, d), ControllerInfo.from_json,
                   ClusterId.from_json, TopicConfig.from_json, PartitionRefs.from_json,
                   ConfigChangeNotification.from_json):
        try:
            decode(data)
        except ZnodeFormatError:
            pass


# -- entity names in /config/users and /config/clients ---------------------------------------

@pytest.mark.parametrize("name, znode", [
    ("alice", "alice"),
    ("user-1_a.b", "user-1_a.b"),
    # Kafka's SanitizerTest example: everything but letters, digits and ._- is encoded.
    ("CN=Some characters !@#$%&*()_-+=';:,/~",
     "CN%3DSome%20characters%20%21%40%23%24%25%26%2A%28%29_-%2B%3D%27%3B%3A%2C%2F%7E"),
    ("\u4e00", "%E4%B8%80"),
    ("<default>", "<default>"),  # the default entity is stored as is
])
def test_user_and_client_names_are_sanitized_as_kafka_does(name, znode):
    from simplekafka.coordination.configs import desanitize, sanitize

    assert sanitize(name) == znode
    assert desanitize(znode) == name
