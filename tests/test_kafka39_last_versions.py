"""The last of Kafka 3.9's versions, which no client we run sends, asked of a real broker.

Each request is encoded by our codec at the version named and sent over a socket to one
real broker (with its real ZooKeeper), as Kafka 3.9 in ZooKeeper mode would be asked:

- OffsetCommit v0 and OffsetFetch v0: ZooKeeper's ``/consumers/<group>/offsets`` (a v1+
  fetch does not see them); OffsetCommit v1 with its commit timestamp, v9 and OffsetFetch
  v9 (KIP-848's shapes) through the coordinator, for a classic group;
- OffsetForLeaderEpoch v0 and v1 (Kafka 3.9's minimum is 0);
- FindCoordinator v5 and v6: a share group's key (type 2) and an unknown key type;
- AddPartitionsToTxn v4 and v5, Kafka's broker-to-coordinator batches (KIP-890): one
  transaction verified, another unknown, a partition added.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from simplekafka.admin import Admin
from simplekafka.cluster import LocalCluster
from simplekafka.producer import Producer
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct

# One request over its own socket, decoded at its version (the interop tests' helper).
from tests.test_interop_record_batches import _exchange

pytestmark = pytest.mark.integration

TOPIC = "last-versions"
NOT_YET = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
           ErrorCode.NOT_COORDINATOR}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("last-versions"),
                         metrics=False)
    local.start()
    try:
        with Admin(local.bootstrap_servers) as admin:
            admin.create_topic(TOPIC, num_partitions=2, replication_factor=1)
        with Producer(local.bootstrap_servers, acks="all", linger_ms=0) as producer:
            for i in range(3):
                producer.send(TOPIC, b"v%d" % i, partition=0).result(30)
        yield local
    finally:
        local.stop()


def ask(cluster: LocalCluster, api_key: ApiKey, version: int, body: dict) -> Struct:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return _exchange((host, int(port)), api_key, version, body)


def until(call: Callable[[], Struct], ready: Callable[[Struct], bool],
          timeout: float = 60.0) -> Struct:
    """``call()`` again until ``ready`` (a coordinator still loading), at most ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        answer = call()
        if ready(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def find_coordinator(cluster: LocalCluster, key: str, key_type: int = 0) -> None:
    """Wait until the key's coordinator is found (the first asks create __consumer_offsets
    or __transaction_state, as Kafka's FindCoordinator does)."""
    found = until(lambda: ask(cluster, ApiKey.FIND_COORDINATOR, 4,
                              {"key_type": key_type, "coordinator_keys": [key]}),
                  lambda a: a.coordinators[0].error_code == ErrorCode.NONE)
    assert found.coordinators[0].error_code == ErrorCode.NONE


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def codes(topics) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in topics for p in t.partitions}


def test_offset_commit_and_fetch_v0_keep_offsets_in_zookeeper(cluster):
    group = unique("zk-group")
    committed = ask(cluster, ApiKey.OFFSET_COMMIT, 0, {"group_id": group, "topics": [
        {"name": TOPIC, "partitions": [
            {"partition_index": 0, "committed_offset": 2, "committed_metadata": "m"},
            {"partition_index": 7, "committed_offset": 1, "committed_metadata": None}]},
        {"name": "no-such-topic", "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}]})
    assert codes(committed.topics) == {
        (TOPIC, 0): ErrorCode.NONE, (TOPIC, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    data, _stat = cluster.zk.get(f"/consumers/{group}/offsets/{TOPIC}/0")
    assert data == b"2"  # the offset as text, as ZooKeeper consumers kept it

    wanted = {"group_id": group, "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}]}
    fetched = ask(cluster, ApiKey.OFFSET_FETCH, 0, wanted)
    found = {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
             for t in fetched.topics for p in t.partitions}
    assert found == {0: (2, "", ErrorCode.NONE),  # no metadata kept in ZooKeeper
                     1: (-1, "", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}  # never committed

    # v1+ reads __consumer_offsets, where a v0 commit never went.
    find_coordinator(cluster, group)
    fetched = until(lambda: ask(cluster, ApiKey.OFFSET_FETCH, 1, wanted),
                    lambda a: not set(codes(a.topics).values()) & NOT_YET)
    assert {p.partition_index: (p.committed_offset, p.error_code)
            for t in fetched.topics for p in t.partitions} == {
        0: (-1, ErrorCode.NONE), 1: (-1, ErrorCode.NONE)}


def test_offset_commit_v1_and_v9_and_offset_fetch_v9_for_a_classic_group(cluster):
    group = unique("classic")
    find_coordinator(cluster, group)

    def commit_v1() -> Struct:
        return ask(cluster, ApiKey.OFFSET_COMMIT, 1, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "committed_offset": 1,
                 "commit_timestamp": 1_700_000_000_000, "committed_metadata": "v1"}]}]})

    committed = until(commit_v1, lambda a: not set(codes(a.topics).values()) & NOT_YET)
    assert codes(committed.topics) == {(TOPIC, 0): ErrorCode.NONE}

    def commit_v9(epoch: int, member: str) -> Struct:
        return ask(cluster, ApiKey.OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
            "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 1, "committed_offset": 0, "committed_leader_epoch": 0,
                 "committed_metadata": "v9"}]}]})

    # Member epoch -1 and no member: a consumer outside any group, as Kafka's old
    # coordinator takes it; a member epoch from a member the group does not have: refused.
    assert codes(commit_v9(-1, "").topics) == {(TOPIC, 1): ErrorCode.NONE}
    assert codes(commit_v9(3, "someone").topics) == {(TOPIC, 1): ErrorCode.UNKNOWN_MEMBER_ID}

    fetched = ask(cluster, ApiKey.OFFSET_FETCH, 9, {"require_stable": False, "groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1,
         "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}]}]})
    (answer,) = fetched.groups
    assert answer.error_code == ErrorCode.NONE
    assert {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
            for t in answer.topics for p in t.partitions} == {
        0: (1, "v1", ErrorCode.NONE), 1: (0, "v9", ErrorCode.NONE)}


def test_offset_for_leader_epoch_v0_and_v1(cluster):
    body = {"topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]}
    (v0,) = ask(cluster, ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, body).topics[0].partitions
    assert (v0.error_code, v0.end_offset) == (ErrorCode.NONE, 3)  # epoch 0 ends at the end
    (v1,) = ask(cluster, ApiKey.OFFSET_FOR_LEADER_EPOCH, 1, body).topics[0].partitions
    assert (v1.error_code, v1.leader_epoch, v1.end_offset) == (ErrorCode.NONE, 0, 3)


def test_find_coordinator_v5_v6_key_types(cluster):
    def find(version: int, key_type: int, key: str) -> Struct:
        answer = ask(cluster, ApiKey.FIND_COORDINATOR, version,
                     {"key_type": key_type, "coordinator_keys": [key]})
        (coordinator,) = answer.coordinators
        return coordinator

    find_coordinator(cluster, "g")
    group = find(5, 0, "g")  # v5 as v4 (TRANSACTION_ABORTABLE is never answered here)
    assert (group.error_code, group.node_id) == (ErrorCode.NONE, 1)
    # A share group (KIP-932): a ZooKeeper-mode broker has no share coordinator.
    assert find(6, 2, "shares").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert find(5, 2, "shares").error_code == ErrorCode.INVALID_REQUEST  # not before v6
    assert find(6, 3, "what").error_code == ErrorCode.INVALID_REQUEST  # no such key type


def test_add_partitions_to_txn_v4_v5_batches_verify_and_add(cluster):
    transactional_id = unique("txn")
    find_coordinator(cluster, transactional_id, key_type=1)
    producer = until(lambda: ask(cluster, ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": transactional_id, "transaction_timeout_ms": 60_000,
        "producer_id": -1, "producer_epoch": -1}), lambda a: a.error_code not in NOT_YET)
    assert producer.error_code == ErrorCode.NONE
    pid, epoch = producer.producer_id, producer.producer_epoch
    added = ask(cluster, ApiKey.ADD_PARTITIONS_TO_TXN, 3, {  # a client's: partition 0 joins
        "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]})
    assert codes_v3(added) == {(TOPIC, 0): ErrorCode.NONE}

    def batch(version: int, *transactions: dict) -> dict[str, dict[tuple[str, int], int]]:
        answer = ask(cluster, ApiKey.ADD_PARTITIONS_TO_TXN, version,
                     {"transactions": list(transactions)})
        assert answer.error_code == ErrorCode.NONE
        return {r.transactional_id: {(t.name, p.partition_index): p.partition_error_code
                                     for t in r.topic_results for p in t.results_by_partition}
                for r in answer.results_by_transaction}

    def txn(verify: bool, topics: dict[str, list[int]], tid: str = transactional_id,
            producer_id: int = pid) -> dict:
        return {"transactional_id": tid, "producer_id": producer_id, "producer_epoch": epoch,
                "verify_only": verify,
                "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}

    stranger = unique("stranger")
    assert batch(4, txn(True, {TOPIC: [0, 1]}), txn(True, {TOPIC: [0]}, stranger, 999)) == {
        transactional_id: {(TOPIC, 0): ErrorCode.NONE,  # in the transaction
                           (TOPIC, 1): ErrorCode.TRANSACTION_ABORTABLE},  # not (yet)
        stranger: {(TOPIC, 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}}
    # An unknown partition fails its transaction: the others are not attempted.
    assert batch(4, txn(False, {TOPIC: [1], "no-such-topic": [0]})) == {transactional_id: {
        (TOPIC, 1): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}}
    assert batch(5, txn(False, {TOPIC: [1]})) == {transactional_id: {(TOPIC, 1): ErrorCode.NONE}}
    assert batch(5, txn(True, {TOPIC: [0, 1]})) == {transactional_id: {
        (TOPIC, 0): ErrorCode.NONE, (TOPIC, 1): ErrorCode.NONE}}
    ended = ask(cluster, ApiKey.END_TXN, 3, {"transactional_id": transactional_id,
                                             "producer_id": pid, "producer_epoch": epoch,
                                             "committed": False})
    assert ended.error_code == ErrorCode.NONE


def codes_v3(answer: Struct) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.partition_error_code
            for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}
