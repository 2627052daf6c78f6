"""Every request handler asks the one authorizer, with Kafka's operations and error codes.

A KafkaBroker on Twisted's fake reactor (the handler harness), with
``authorizer.class.name`` set, a SASL inter-broker listener on which the
brokers log in as ``User:broker``, and ``super.users=User:broker`` (nobody
else): the test's controller requests come as the broker's own requests to
itself do, on its ``own_connection``. Client requests come on a fake connection
that says who it authenticated as (what the SASL work fills in): alice may
Write ``orders`` and Read group ``g``; nobody has anything else, and no
resource is open to everyone.
"""

from __future__ import annotations

import pytest
from twisted.internet import defer

from simplekafka.protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.messages import decode_response, encode_request
from simplekafka.protocol.records import build_batch
from stages.stage4_broker.test_broker_handlers import Harness

BROKER_USER = "User:broker"
AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": BROKER_USER,
              "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
              "inter.broker.listener.name": "SASL_PLAINTEXT",
              "sasl.mechanism.inter.broker.protocol": "PLAIN",
              "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                  'required username="broker" password="broker-secret" '
                                  'user_broker="broker-secret";'}
FAILED_TOPIC = ErrorCode.TOPIC_AUTHORIZATION_FAILED
FAILED_GROUP = ErrorCode.GROUP_AUTHORIZATION_FAILED
FAILED_CLUSTER = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class Connection:
    def __init__(self, principal: str):
        self.principal = principal
        self.peer = "127.0.0.1:40000"
        self.listener = "SASL_PLAINTEXT"


def allow(principal: str, op: AclOperation) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)


@pytest.fixture
def broker(tmp_path):
    harness = Harness(tmp_path, **AUTHORIZER)
    assert harness.broker.own_connection.principal == BROKER_USER
    harness.connection = harness.broker.own_connection  # the test plays its controller
    harness.lead("orders")
    harness.lead("payments")
    authorizer = harness.broker.authorizer
    authorizer.update(ResourcePattern(ResourceType.TOPIC, "orders"),
                      [allow("User:alice", AclOperation.WRITE)])
    authorizer.update(ResourcePattern(ResourceType.GROUP, "g"),
                      [allow("User:alice", AclOperation.READ)])
    yield harness
    harness.close()


def ask(harness: Harness, principal: str, api_key: ApiKey, version: int, body: dict):
    frame = encode_request(api_key, version, 7, "test", body)
    answer = harness.broker.dispatcher(frame, Connection(principal))
    if isinstance(answer, defer.Deferred):
        assert answer.called, "the refusal should not wait"
        answer = answer.result
    return decode_response(api_key, version, answer)[1]


def produce_body(*topics: str) -> dict:
    return {"acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": t, "partition_data": [{"index": 0, "records": build_batch([(None, b"v")])}]}
        for t in topics]}


def test_produce_writes_only_where_the_principal_may_write(broker):
    answer = ask(broker, "User:alice", ApiKey.PRODUCE, 8, produce_body("orders", "payments"))
    codes = {r.name: r.partition_responses[0].error_code for r in answer.responses}
    assert codes == {"orders": ErrorCode.NONE, "payments": FAILED_TOPIC}
    assert broker.broker.replica_manager.get_partition("payments", 0).log_end_offset == 0
    answer = ask(broker, "User:bob", ApiKey.PRODUCE, 8, produce_body("orders"))
    assert answer.responses[0].partition_responses[0].error_code == FAILED_TOPIC


def test_a_transactional_produce_needs_write_on_its_transactional_id(broker):
    body = {**produce_body("orders"), "transactional_id": "tx"}
    answer = ask(broker, "User:alice", ApiKey.PRODUCE, 8, body)
    assert answer.responses[0].partition_responses[0].error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def fetch_body(topic: str, replica_id: int = -1) -> dict:
    return {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}


def test_fetch_needs_read_and_a_follower_cluster_action(broker):
    answer = ask(broker, "User:alice", ApiKey.FETCH, 11, fetch_body("orders"))  # Write only
    assert answer.responses[0].partitions[0].error_code == FAILED_TOPIC
    answer = ask(broker, "User:alice", ApiKey.FETCH, 11, fetch_body("orders", replica_id=2))
    assert answer.responses[0].partitions[0].error_code == FAILED_TOPIC
    answer = ask(broker, BROKER_USER, ApiKey.FETCH, 11,
                 fetch_body("orders", replica_id=2))
    assert answer.responses[0].partitions[0].error_code == ErrorCode.NONE


def test_metadata_shows_only_describable_topics(broker):
    everything = ask(broker, "User:alice", ApiKey.METADATA, 8, {"topics": None})
    assert [t.name for t in everything.topics] == ["orders"]  # Write implies Describe
    named = ask(broker, "User:alice", ApiKey.METADATA, 8,
                {"topics": [{"name": "payments"}, {"name": "orders"}]})
    assert [(t.name, t.error_code) for t in named.topics] == [
        ("payments", FAILED_TOPIC), ("orders", ErrorCode.NONE)]
    super_user = ask(broker, BROKER_USER, ApiKey.METADATA, 8, {"topics": None})
    assert sorted(t.name for t in super_user.topics) == ["orders", "payments"]


def test_offsets_apis_need_describe_and_delete_records_delete(broker):
    answer = ask(broker, "User:alice", ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for t in ("orders", "payments")]})
    assert [t.partitions[0].error_code for t in answer.topics] == [ErrorCode.NONE, FAILED_TOPIC]
    answer = ask(broker, "User:alice", ApiKey.DELETE_RECORDS, 1, {"timeout_ms": 1000, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "offset": 0}]}]})
    assert answer.topics[0].partitions[0].error_code == FAILED_TOPIC
    answer = ask(broker, "User:alice", ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, {
        "replica_id": 2, "topics": [{"topic": "orders", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
    assert answer.topics[0].partitions[0].error_code == FAILED_TOPIC  # a follower's: ClusterAction


def test_inter_broker_requests_need_cluster_action(broker):
    answer = ask(broker, "User:alice", ApiKey.UPDATE_METADATA, 5, {
        "controller_id": 1, "controller_epoch": 1, "topic_states": [], "live_brokers": []})
    assert answer.error_code == FAILED_CLUSTER
    answer = ask(broker, "User:alice", ApiKey.STOP_REPLICA, 0, {
        "controller_id": 1, "controller_epoch": 1, "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "orders", "partition_index": 0}]})
    assert answer.error_code == FAILED_CLUSTER
    assert broker.broker.replica_manager.get_partition("orders", 0) is not None
    answer = ask(broker, "User:alice", ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [
        {"producer_id": 5, "producer_epoch": 0, "transaction_result": True,
         "topics": [{"name": "orders", "partition_indexes": [0]}], "coordinator_epoch": 1}]})
    assert answer.markers[0].topics[0].partitions[0].error_code == FAILED_CLUSTER
    assert broker.broker.replica_manager.get_partition("orders", 0).log_end_offset == 0


def test_cluster_apis_need_their_cluster_operation(broker):
    answer = ask(broker, "User:alice", ApiKey.ELECT_LEADERS, 1, {
        "election_type": 0, "topic_partitions": None, "timeout_ms": 1000})
    assert answer.error_code == FAILED_CLUSTER
    answer = ask(broker, "User:alice", ApiKey.LIST_PARTITION_REASSIGNMENTS, 0,
                 {"timeout_ms": 1000, "topics": None})
    assert answer.error_code == FAILED_CLUSTER
    answer = ask(broker, "User:alice", ApiKey.DESCRIBE_CONFIGS, 2, {"resources": [
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "payments", "configuration_keys": None}]})
    assert [r.error_code for r in answer.results] == [FAILED_CLUSTER, FAILED_TOPIC]
    answer = ask(broker, "User:alice", ApiKey.CREATE_PARTITIONS, 1, {"topics": [
        {"name": "orders", "count": 2, "assignments": None}], "timeout_ms": 1000,
        "validate_only": False})
    assert answer.results[0].error_code in (FAILED_TOPIC, ErrorCode.NOT_CONTROLLER)


def test_idempotent_producers_need_write_on_some_topic_or_idempotent_write(broker):
    body = {"transactional_id": None, "transaction_timeout_ms": 60000}
    assert ask(broker, "User:bob", ApiKey.INIT_PRODUCER_ID, 1, body).error_code == \
        FAILED_CLUSTER
    body = {"transactional_id": "tx", "transaction_timeout_ms": 60000}
    assert ask(broker, "User:alice", ApiKey.INIT_PRODUCER_ID, 1, body).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_group_requests_need_the_group_operations(broker):
    found = ask(broker, "User:bob", ApiKey.FIND_COORDINATOR, 2, {"key": "g", "key_type": 0})
    assert found.error_code == FAILED_GROUP
    joined = ask(broker, "User:bob", ApiKey.JOIN_GROUP, 5, {
        "group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    assert joined.error_code == FAILED_GROUP
    beat = ask(broker, "User:bob", ApiKey.HEARTBEAT, 3, {
        "group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None})
    assert beat.error_code == FAILED_GROUP
    committed = ask(broker, "User:alice", ApiKey.OFFSET_COMMIT, 7, {
        "group_id": "other", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]})
    assert committed.topics[0].partitions[0].error_code == FAILED_GROUP
    fetched = ask(broker, "User:bob", ApiKey.OFFSET_FETCH, 5, {"group_id": "g", "topics": None,
                                                               "require_stable": False})
    assert fetched.error_code == FAILED_GROUP
    described = ask(broker, "User:bob", ApiKey.DESCRIBE_GROUPS, 4,
                    {"groups": ["g"], "include_authorized_operations": False})
    assert described.groups[0].error_code == FAILED_GROUP
    deleted = ask(broker, "User:alice", ApiKey.DELETE_GROUPS, 1, {"groups_names": ["g"]})
    assert deleted.results[0].error_code == FAILED_GROUP  # Read is not Delete


def test_acl_apis_need_cluster_describe_and_alter(broker):
    everything = {"resource_type_filter": 1, "resource_name_filter": None,
                  "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                  "operation": 1, "permission_type": 1}
    assert ask(broker, "User:alice", ApiKey.DESCRIBE_ACLS, 1, everything).error_code == \
        FAILED_CLUSTER
    described = ask(broker, BROKER_USER, ApiKey.DESCRIBE_ACLS, 1, everything)
    assert sorted(r.resource_name for r in described.resources) == ["g", "orders"]
    created = ask(broker, "User:alice", ApiKey.CREATE_ACLS, 1, {"creations": [
        {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3,
         "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]})
    assert created.results[0].error_code == FAILED_CLUSTER
    bad = {**everything, "operation": 0}
    assert ask(broker, BROKER_USER, ApiKey.DESCRIBE_ACLS, 1, bad).error_code == \
        ErrorCode.INVALID_REQUEST


def test_without_an_authorizer_everything_is_allowed_and_acl_apis_are_disabled(tmp_path):
    harness = Harness(tmp_path)
    try:
        harness.lead("orders")
        answer = ask(harness, "User:bob", ApiKey.PRODUCE, 8, produce_body("orders"))
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        described = ask(harness, "User:bob", ApiKey.DESCRIBE_ACLS, 1, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1,
            "permission_type": 1})
        assert described.error_code == ErrorCode.SECURITY_DISABLED
    finally:
        harness.close()


def test_authorized_operations_are_reported_when_asked(broker):
    answer = ask(broker, "User:alice", ApiKey.METADATA, 8, {
        "topics": [{"name": "orders"}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True})
    write_and_describe = (1 << AclOperation.WRITE) | (1 << AclOperation.DESCRIBE)
    assert answer.topics[0].topic_authorized_operations == write_and_describe
    assert answer.cluster_authorized_operations == 0
    described = ask(broker, "User:alice", ApiKey.DESCRIBE_GROUPS, 4,
                    {"groups": ["g"], "include_authorized_operations": True})
    assert described.groups[0].authorized_operations == \
        (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    super_user = ask(broker, BROKER_USER, ApiKey.METADATA, 8, {
        "topics": [{"name": "orders"}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": False})
    assert super_user.topics[0].topic_authorized_operations == -(2**31)  # not asked for
    assert super_user.cluster_authorized_operations == sum(1 << op for op in (
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
        AclOperation.DESCRIBE))


def test_offset_commit_stores_only_the_topics_the_principal_may_read(broker):
    broker.lead("__consumer_offsets", partitions=10)
    ask(broker, BROKER_USER, ApiKey.LIST_GROUPS, 2, {})  # the coordinator loads them
    broker.clock.advance(0)
    broker.broker.authorizer.update(ResourcePattern(ResourceType.TOPIC, "payments"),
                                    [allow("User:alice", AclOperation.READ)])

    def partitions(*topics: str) -> list[dict]:
        return [{"name": t, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
             "committed_metadata": ""}]} for t in topics]

    committed = ask(broker, "User:alice", ApiKey.OFFSET_COMMIT, 7, {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": partitions("orders", "payments")})
    codes = {t.name: t.partitions[0].error_code for t in committed.topics}
    assert codes == {"orders": FAILED_TOPIC, "payments": ErrorCode.NONE}
    fetched = ask(broker, "User:alice", ApiKey.OFFSET_FETCH, 5, {
        "group_id": "g", "topics": None, "require_stable": False})
    assert [(t.name, t.partitions[0].committed_offset) for t in fetched.topics] == [
        ("payments", 1)]
    listed = ask(broker, "User:bob", ApiKey.LIST_GROUPS, 2, {})
    assert listed.groups == []  # bob may describe neither the cluster nor the group
    listed = ask(broker, "User:alice", ApiKey.LIST_GROUPS, 2, {})
    assert [g.group_id for g in listed.groups] == ["g"]
