# ruff: noqa: E501  (generated: the names are paths, kept whole)
"""Types of every request and response, for mypy: generated, do not edit.

Written by ``tools/gen_message_types.py`` from :mod:`simplekafka.protocol.definitions`
(stages/stage1_protocol/test_message_types.py checks it is up to date). One
TypedDict per message and per nested structure; the keys are the fields of every
version, so one dict can be encoded at any version (fields of other versions
are dropped). Keys that may be left out take their defaults when encoded, as in
Kafka's generated message classes. A request's record sets are bytes (as
decoded); a response's are ``Sized``: bytes, or the broker's file region that
the sender writes itself.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import TypedDict


class _ProduceRequestTopicDataPartitionDataRequired(TypedDict):
    index: int
    records: bytes | None


class ProduceRequestTopicDataPartitionData(_ProduceRequestTopicDataPartitionDataRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ProduceRequestTopicDataRequired(TypedDict):
    name: str
    partition_data: Sequence[ProduceRequestTopicDataPartitionData]


class ProduceRequestTopicData(_ProduceRequestTopicDataRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ProduceRequestRequired(TypedDict):
    acks: int
    timeout_ms: int
    topic_data: Sequence[ProduceRequestTopicData]


class ProduceRequest(_ProduceRequestRequired, total=False):
    transactional_id: str | None
    tagged_fields: dict[int, bytes]


class _ProduceResponseResponsesPartitionResponsesRecordErrorsRequired(TypedDict):
    batch_index: int


class ProduceResponseResponsesPartitionResponsesRecordErrors(_ProduceResponseResponsesPartitionResponsesRecordErrorsRequired, total=False):
    batch_index_error_message: str | None
    tagged_fields: dict[int, bytes]


class ProduceResponseResponsesPartitionResponsesCurrentLeader(TypedDict, total=False):
    leader_id: int
    leader_epoch: int
    tagged_fields: dict[int, bytes]


class _ProduceResponseResponsesPartitionResponsesRequired(TypedDict):
    index: int
    error_code: int
    base_offset: int


class ProduceResponseResponsesPartitionResponses(_ProduceResponseResponsesPartitionResponsesRequired, total=False):
    log_append_time_ms: int
    log_start_offset: int
    record_errors: Sequence[ProduceResponseResponsesPartitionResponsesRecordErrors]
    error_message: str | None
    current_leader: ProduceResponseResponsesPartitionResponsesCurrentLeader
    tagged_fields: dict[int, bytes]


class _ProduceResponseResponsesRequired(TypedDict):
    name: str
    partition_responses: Sequence[ProduceResponseResponsesPartitionResponses]


class ProduceResponseResponses(_ProduceResponseResponsesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ProduceResponseNodeEndpointsRequired(TypedDict):
    node_id: int
    host: str
    port: int


class ProduceResponseNodeEndpoints(_ProduceResponseNodeEndpointsRequired, total=False):
    rack: str | None
    tagged_fields: dict[int, bytes]


class _ProduceResponseRequired(TypedDict):
    responses: Sequence[ProduceResponseResponses]


class ProduceResponse(_ProduceResponseRequired, total=False):
    throttle_time_ms: int
    node_endpoints: Sequence[ProduceResponseNodeEndpoints]
    tagged_fields: dict[int, bytes]


class FetchRequestReplicaState(TypedDict, total=False):
    replica_id: int
    replica_epoch: int
    tagged_fields: dict[int, bytes]


class _FetchRequestTopicsPartitionsRequired(TypedDict):
    partition: int
    fetch_offset: int
    partition_max_bytes: int


class FetchRequestTopicsPartitions(_FetchRequestTopicsPartitionsRequired, total=False):
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    replica_directory_id: bytes
    tagged_fields: dict[int, bytes]


class _FetchRequestTopicsRequired(TypedDict):
    partitions: Sequence[FetchRequestTopicsPartitions]


class FetchRequestTopics(_FetchRequestTopicsRequired, total=False):
    topic: str
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _FetchRequestForgottenTopicsDataRequired(TypedDict):
    partitions: Sequence[int]


class FetchRequestForgottenTopicsData(_FetchRequestForgottenTopicsDataRequired, total=False):
    topic: str
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _FetchRequestRequired(TypedDict):
    max_wait_ms: int
    min_bytes: int
    topics: Sequence[FetchRequestTopics]


class FetchRequest(_FetchRequestRequired, total=False):
    cluster_id: str | None
    replica_id: int
    replica_state: FetchRequestReplicaState
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    forgotten_topics_data: Sequence[FetchRequestForgottenTopicsData]
    rack_id: str
    tagged_fields: dict[int, bytes]


class FetchResponseResponsesPartitionsDivergingEpoch(TypedDict, total=False):
    epoch: int
    end_offset: int
    tagged_fields: dict[int, bytes]


class FetchResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    leader_id: int
    leader_epoch: int
    tagged_fields: dict[int, bytes]


class FetchResponseResponsesPartitionsSnapshotId(TypedDict, total=False):
    end_offset: int
    epoch: int
    tagged_fields: dict[int, bytes]


class _FetchResponseResponsesPartitionsAbortedTransactionsRequired(TypedDict):
    producer_id: int
    first_offset: int


class FetchResponseResponsesPartitionsAbortedTransactions(_FetchResponseResponsesPartitionsAbortedTransactionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _FetchResponseResponsesPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int
    high_watermark: int
    records: Sized | None


class FetchResponseResponsesPartitions(_FetchResponseResponsesPartitionsRequired, total=False):
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: FetchResponseResponsesPartitionsDivergingEpoch
    current_leader: FetchResponseResponsesPartitionsCurrentLeader
    snapshot_id: FetchResponseResponsesPartitionsSnapshotId
    aborted_transactions: Sequence[FetchResponseResponsesPartitionsAbortedTransactions] | None
    preferred_read_replica: int
    tagged_fields: dict[int, bytes]


class _FetchResponseResponsesRequired(TypedDict):
    partitions: Sequence[FetchResponseResponsesPartitions]


class FetchResponseResponses(_FetchResponseResponsesRequired, total=False):
    topic: str
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _FetchResponseNodeEndpointsRequired(TypedDict):
    node_id: int
    host: str
    port: int


class FetchResponseNodeEndpoints(_FetchResponseNodeEndpointsRequired, total=False):
    rack: str | None
    tagged_fields: dict[int, bytes]


class _FetchResponseRequired(TypedDict):
    responses: Sequence[FetchResponseResponses]


class FetchResponse(_FetchResponseRequired, total=False):
    throttle_time_ms: int
    error_code: int
    session_id: int
    node_endpoints: Sequence[FetchResponseNodeEndpoints]
    tagged_fields: dict[int, bytes]


class _ListOffsetsRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int
    timestamp: int


class ListOffsetsRequestTopicsPartitions(_ListOffsetsRequestTopicsPartitionsRequired, total=False):
    current_leader_epoch: int
    max_num_offsets: int
    tagged_fields: dict[int, bytes]


class _ListOffsetsRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[ListOffsetsRequestTopicsPartitions]


class ListOffsetsRequestTopics(_ListOffsetsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ListOffsetsRequestRequired(TypedDict):
    topics: Sequence[ListOffsetsRequestTopics]


class ListOffsetsRequest(_ListOffsetsRequestRequired, total=False):
    replica_id: int
    isolation_level: int
    tagged_fields: dict[int, bytes]


class _ListOffsetsResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class ListOffsetsResponseTopicsPartitions(_ListOffsetsResponseTopicsPartitionsRequired, total=False):
    old_style_offsets: Sequence[int]
    timestamp: int
    offset: int
    leader_epoch: int
    tagged_fields: dict[int, bytes]


class _ListOffsetsResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[ListOffsetsResponseTopicsPartitions]


class ListOffsetsResponseTopics(_ListOffsetsResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ListOffsetsResponseRequired(TypedDict):
    topics: Sequence[ListOffsetsResponseTopics]


class ListOffsetsResponse(_ListOffsetsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _MetadataRequestTopicsRequired(TypedDict):
    name: str | None


class MetadataRequestTopics(_MetadataRequestTopicsRequired, total=False):
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _MetadataRequestRequired(TypedDict):
    topics: Sequence[MetadataRequestTopics] | None


class MetadataRequest(_MetadataRequestRequired, total=False):
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool
    tagged_fields: dict[int, bytes]


class _MetadataResponseBrokersRequired(TypedDict):
    node_id: int
    host: str
    port: int


class MetadataResponseBrokers(_MetadataResponseBrokersRequired, total=False):
    rack: str | None
    tagged_fields: dict[int, bytes]


class _MetadataResponseTopicsPartitionsRequired(TypedDict):
    error_code: int
    partition_index: int
    leader_id: int
    replica_nodes: Sequence[int]
    isr_nodes: Sequence[int]


class MetadataResponseTopicsPartitions(_MetadataResponseTopicsPartitionsRequired, total=False):
    leader_epoch: int
    offline_replicas: Sequence[int]
    tagged_fields: dict[int, bytes]


class _MetadataResponseTopicsRequired(TypedDict):
    error_code: int
    name: str | None
    partitions: Sequence[MetadataResponseTopicsPartitions]


class MetadataResponseTopics(_MetadataResponseTopicsRequired, total=False):
    topic_id: bytes
    is_internal: bool
    topic_authorized_operations: int
    tagged_fields: dict[int, bytes]


class _MetadataResponseRequired(TypedDict):
    brokers: Sequence[MetadataResponseBrokers]
    topics: Sequence[MetadataResponseTopics]


class MetadataResponse(_MetadataResponseRequired, total=False):
    throttle_time_ms: int
    cluster_id: str | None
    controller_id: int
    cluster_authorized_operations: int
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrRequestUngroupedPartitionStatesRequired(TypedDict):
    topic_name: str
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: Sequence[int]
    zk_version: int
    replicas: Sequence[int]


class LeaderAndIsrRequestUngroupedPartitionStates(_LeaderAndIsrRequestUngroupedPartitionStatesRequired, total=False):
    is_new: bool
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrRequestTopicStatesPartitionStatesRequired(TypedDict):
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: Sequence[int]
    zk_version: int
    replicas: Sequence[int]


class LeaderAndIsrRequestTopicStatesPartitionStates(_LeaderAndIsrRequestTopicStatesPartitionStatesRequired, total=False):
    adding_replicas: Sequence[int]
    removing_replicas: Sequence[int]
    is_new: bool
    leader_recovery_state: int
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrRequestTopicStatesRequired(TypedDict):
    topic_name: str
    partition_states: Sequence[LeaderAndIsrRequestTopicStatesPartitionStates]


class LeaderAndIsrRequestTopicStates(_LeaderAndIsrRequestTopicStatesRequired, total=False):
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrRequestLiveLeadersRequired(TypedDict):
    broker_id: int
    host_name: str
    port: int


class LeaderAndIsrRequestLiveLeaders(_LeaderAndIsrRequestLiveLeadersRequired, total=False):
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrRequestRequired(TypedDict):
    controller_id: int
    controller_epoch: int
    live_leaders: Sequence[LeaderAndIsrRequestLiveLeaders]


class LeaderAndIsrRequest(_LeaderAndIsrRequestRequired, total=False):
    is_kraft_controller: bool
    broker_epoch: int
    type: int
    ungrouped_partition_states: Sequence[LeaderAndIsrRequestUngroupedPartitionStates]
    topic_states: Sequence[LeaderAndIsrRequestTopicStates]
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrResponsePartitionErrorsRequired(TypedDict):
    topic_name: str
    partition_index: int
    error_code: int


class LeaderAndIsrResponsePartitionErrors(_LeaderAndIsrResponsePartitionErrorsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrResponseTopicsPartitionErrorsRequired(TypedDict):
    partition_index: int
    error_code: int


class LeaderAndIsrResponseTopicsPartitionErrors(_LeaderAndIsrResponseTopicsPartitionErrorsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrResponseTopicsRequired(TypedDict):
    topic_id: bytes
    partition_errors: Sequence[LeaderAndIsrResponseTopicsPartitionErrors]


class LeaderAndIsrResponseTopics(_LeaderAndIsrResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _LeaderAndIsrResponseRequired(TypedDict):
    error_code: int


class LeaderAndIsrResponse(_LeaderAndIsrResponseRequired, total=False):
    partition_errors: Sequence[LeaderAndIsrResponsePartitionErrors]
    topics: Sequence[LeaderAndIsrResponseTopics]
    tagged_fields: dict[int, bytes]


class _StopReplicaRequestUngroupedPartitionsRequired(TypedDict):
    topic_name: str
    partition_index: int


class StopReplicaRequestUngroupedPartitions(_StopReplicaRequestUngroupedPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _StopReplicaRequestTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class StopReplicaRequestTopics(_StopReplicaRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _StopReplicaRequestTopicStatesPartitionStatesRequired(TypedDict):
    partition_index: int
    delete_partition: bool


class StopReplicaRequestTopicStatesPartitionStates(_StopReplicaRequestTopicStatesPartitionStatesRequired, total=False):
    leader_epoch: int
    tagged_fields: dict[int, bytes]


class _StopReplicaRequestTopicStatesRequired(TypedDict):
    topic_name: str
    partition_states: Sequence[StopReplicaRequestTopicStatesPartitionStates]


class StopReplicaRequestTopicStates(_StopReplicaRequestTopicStatesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _StopReplicaRequestRequired(TypedDict):
    controller_id: int
    controller_epoch: int


class StopReplicaRequest(_StopReplicaRequestRequired, total=False):
    broker_epoch: int
    delete_partitions: bool
    ungrouped_partitions: Sequence[StopReplicaRequestUngroupedPartitions]
    topics: Sequence[StopReplicaRequestTopics]
    topic_states: Sequence[StopReplicaRequestTopicStates]
    tagged_fields: dict[int, bytes]


class _StopReplicaResponsePartitionErrorsRequired(TypedDict):
    topic_name: str
    partition_index: int
    error_code: int


class StopReplicaResponsePartitionErrors(_StopReplicaResponsePartitionErrorsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _StopReplicaResponseRequired(TypedDict):
    error_code: int
    partition_errors: Sequence[StopReplicaResponsePartitionErrors]


class StopReplicaResponse(_StopReplicaResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestUngroupedPartitionStatesRequired(TypedDict):
    topic_name: str
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: Sequence[int]
    zk_version: int
    replicas: Sequence[int]


class UpdateMetadataRequestUngroupedPartitionStates(_UpdateMetadataRequestUngroupedPartitionStatesRequired, total=False):
    offline_replicas: Sequence[int]
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestTopicStatesPartitionStatesRequired(TypedDict):
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: Sequence[int]
    zk_version: int
    replicas: Sequence[int]
    offline_replicas: Sequence[int]


class UpdateMetadataRequestTopicStatesPartitionStates(_UpdateMetadataRequestTopicStatesPartitionStatesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestTopicStatesRequired(TypedDict):
    topic_name: str
    partition_states: Sequence[UpdateMetadataRequestTopicStatesPartitionStates]


class UpdateMetadataRequestTopicStates(_UpdateMetadataRequestTopicStatesRequired, total=False):
    topic_id: bytes
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestLiveBrokersEndpointsRequired(TypedDict):
    port: int
    host: str
    security_protocol: int


class UpdateMetadataRequestLiveBrokersEndpoints(_UpdateMetadataRequestLiveBrokersEndpointsRequired, total=False):
    listener: str
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestLiveBrokersRequired(TypedDict):
    id: int


class UpdateMetadataRequestLiveBrokers(_UpdateMetadataRequestLiveBrokersRequired, total=False):
    v0_host: str
    v0_port: int
    endpoints: Sequence[UpdateMetadataRequestLiveBrokersEndpoints]
    rack: str | None
    tagged_fields: dict[int, bytes]


class _UpdateMetadataRequestRequired(TypedDict):
    controller_id: int
    controller_epoch: int
    live_brokers: Sequence[UpdateMetadataRequestLiveBrokers]


class UpdateMetadataRequest(_UpdateMetadataRequestRequired, total=False):
    is_kraft_controller: bool
    type: int
    broker_epoch: int
    ungrouped_partition_states: Sequence[UpdateMetadataRequestUngroupedPartitionStates]
    topic_states: Sequence[UpdateMetadataRequestTopicStates]
    tagged_fields: dict[int, bytes]


class _UpdateMetadataResponseRequired(TypedDict):
    error_code: int


class UpdateMetadataResponse(_UpdateMetadataResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetCommitRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int
    committed_offset: int
    committed_metadata: str | None


class OffsetCommitRequestTopicsPartitions(_OffsetCommitRequestTopicsPartitionsRequired, total=False):
    committed_leader_epoch: int
    commit_timestamp: int
    tagged_fields: dict[int, bytes]


class _OffsetCommitRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetCommitRequestTopicsPartitions]


class OffsetCommitRequestTopics(_OffsetCommitRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetCommitRequestRequired(TypedDict):
    group_id: str
    topics: Sequence[OffsetCommitRequestTopics]


class OffsetCommitRequest(_OffsetCommitRequestRequired, total=False):
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    tagged_fields: dict[int, bytes]


class _OffsetCommitResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class OffsetCommitResponseTopicsPartitions(_OffsetCommitResponseTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetCommitResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetCommitResponseTopicsPartitions]


class OffsetCommitResponseTopics(_OffsetCommitResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetCommitResponseRequired(TypedDict):
    topics: Sequence[OffsetCommitResponseTopics]


class OffsetCommitResponse(_OffsetCommitResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _OffsetFetchRequestTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class OffsetFetchRequestTopics(_OffsetFetchRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetFetchRequestGroupsTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class OffsetFetchRequestGroupsTopics(_OffsetFetchRequestGroupsTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetFetchRequestGroupsRequired(TypedDict):
    group_id: str
    topics: Sequence[OffsetFetchRequestGroupsTopics] | None


class OffsetFetchRequestGroups(_OffsetFetchRequestGroupsRequired, total=False):
    member_id: str | None
    member_epoch: int
    tagged_fields: dict[int, bytes]


class OffsetFetchRequest(TypedDict, total=False):
    group_id: str
    topics: Sequence[OffsetFetchRequestTopics] | None
    groups: Sequence[OffsetFetchRequestGroups]
    require_stable: bool
    tagged_fields: dict[int, bytes]


class _OffsetFetchResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    committed_offset: int
    metadata: str | None
    error_code: int


class OffsetFetchResponseTopicsPartitions(_OffsetFetchResponseTopicsPartitionsRequired, total=False):
    committed_leader_epoch: int
    tagged_fields: dict[int, bytes]


class _OffsetFetchResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetFetchResponseTopicsPartitions]


class OffsetFetchResponseTopics(_OffsetFetchResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetFetchResponseGroupsTopicsPartitionsRequired(TypedDict):
    partition_index: int
    committed_offset: int
    metadata: str | None
    error_code: int


class OffsetFetchResponseGroupsTopicsPartitions(_OffsetFetchResponseGroupsTopicsPartitionsRequired, total=False):
    committed_leader_epoch: int
    tagged_fields: dict[int, bytes]


class _OffsetFetchResponseGroupsTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetFetchResponseGroupsTopicsPartitions]


class OffsetFetchResponseGroupsTopics(_OffsetFetchResponseGroupsTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetFetchResponseGroupsRequired(TypedDict):
    group_id: str
    topics: Sequence[OffsetFetchResponseGroupsTopics]


class OffsetFetchResponseGroups(_OffsetFetchResponseGroupsRequired, total=False):
    error_code: int
    tagged_fields: dict[int, bytes]


class OffsetFetchResponse(TypedDict, total=False):
    throttle_time_ms: int
    topics: Sequence[OffsetFetchResponseTopics]
    error_code: int
    groups: Sequence[OffsetFetchResponseGroups]
    tagged_fields: dict[int, bytes]


class FindCoordinatorRequest(TypedDict, total=False):
    key: str
    key_type: int
    coordinator_keys: Sequence[str]
    tagged_fields: dict[int, bytes]


class _FindCoordinatorResponseCoordinatorsRequired(TypedDict):
    key: str
    node_id: int
    host: str
    port: int
    error_code: int


class FindCoordinatorResponseCoordinators(_FindCoordinatorResponseCoordinatorsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class FindCoordinatorResponse(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int
    coordinators: Sequence[FindCoordinatorResponseCoordinators]
    tagged_fields: dict[int, bytes]


class _JoinGroupRequestProtocolsRequired(TypedDict):
    name: str
    metadata: bytes


class JoinGroupRequestProtocols(_JoinGroupRequestProtocolsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _JoinGroupRequestRequired(TypedDict):
    group_id: str
    session_timeout_ms: int
    member_id: str
    protocol_type: str
    protocols: Sequence[JoinGroupRequestProtocols]


class JoinGroupRequest(_JoinGroupRequestRequired, total=False):
    rebalance_timeout_ms: int
    group_instance_id: str | None
    reason: str | None
    tagged_fields: dict[int, bytes]


class _JoinGroupResponseMembersRequired(TypedDict):
    member_id: str
    metadata: bytes


class JoinGroupResponseMembers(_JoinGroupResponseMembersRequired, total=False):
    group_instance_id: str | None
    tagged_fields: dict[int, bytes]


class _JoinGroupResponseRequired(TypedDict):
    error_code: int
    protocol_name: str | None
    leader: str
    member_id: str
    members: Sequence[JoinGroupResponseMembers]


class JoinGroupResponse(_JoinGroupResponseRequired, total=False):
    throttle_time_ms: int
    generation_id: int
    protocol_type: str | None
    skip_assignment: bool
    tagged_fields: dict[int, bytes]


class _HeartbeatRequestRequired(TypedDict):
    group_id: str
    generation_id: int
    member_id: str


class HeartbeatRequest(_HeartbeatRequestRequired, total=False):
    group_instance_id: str | None
    tagged_fields: dict[int, bytes]


class _HeartbeatResponseRequired(TypedDict):
    error_code: int


class HeartbeatResponse(_HeartbeatResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _LeaveGroupRequestMembersRequired(TypedDict):
    member_id: str


class LeaveGroupRequestMembers(_LeaveGroupRequestMembersRequired, total=False):
    group_instance_id: str | None
    reason: str | None
    tagged_fields: dict[int, bytes]


class _LeaveGroupRequestRequired(TypedDict):
    group_id: str


class LeaveGroupRequest(_LeaveGroupRequestRequired, total=False):
    member_id: str
    members: Sequence[LeaveGroupRequestMembers]
    tagged_fields: dict[int, bytes]


class _LeaveGroupResponseMembersRequired(TypedDict):
    member_id: str
    error_code: int


class LeaveGroupResponseMembers(_LeaveGroupResponseMembersRequired, total=False):
    group_instance_id: str | None
    tagged_fields: dict[int, bytes]


class _LeaveGroupResponseRequired(TypedDict):
    error_code: int


class LeaveGroupResponse(_LeaveGroupResponseRequired, total=False):
    throttle_time_ms: int
    members: Sequence[LeaveGroupResponseMembers]
    tagged_fields: dict[int, bytes]


class _SyncGroupRequestAssignmentsRequired(TypedDict):
    member_id: str
    assignment: bytes


class SyncGroupRequestAssignments(_SyncGroupRequestAssignmentsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _SyncGroupRequestRequired(TypedDict):
    group_id: str
    generation_id: int
    member_id: str
    assignments: Sequence[SyncGroupRequestAssignments]


class SyncGroupRequest(_SyncGroupRequestRequired, total=False):
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    tagged_fields: dict[int, bytes]


class _SyncGroupResponseRequired(TypedDict):
    error_code: int
    assignment: bytes


class SyncGroupResponse(_SyncGroupResponseRequired, total=False):
    throttle_time_ms: int
    protocol_type: str | None
    protocol_name: str | None
    tagged_fields: dict[int, bytes]


class _DescribeGroupsRequestRequired(TypedDict):
    groups: Sequence[str]


class DescribeGroupsRequest(_DescribeGroupsRequestRequired, total=False):
    include_authorized_operations: bool
    tagged_fields: dict[int, bytes]


class _DescribeGroupsResponseGroupsMembersRequired(TypedDict):
    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribeGroupsResponseGroupsMembers(_DescribeGroupsResponseGroupsMembersRequired, total=False):
    group_instance_id: str | None
    tagged_fields: dict[int, bytes]


class _DescribeGroupsResponseGroupsRequired(TypedDict):
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: Sequence[DescribeGroupsResponseGroupsMembers]


class DescribeGroupsResponseGroups(_DescribeGroupsResponseGroupsRequired, total=False):
    authorized_operations: int
    tagged_fields: dict[int, bytes]


class _DescribeGroupsResponseRequired(TypedDict):
    groups: Sequence[DescribeGroupsResponseGroups]


class DescribeGroupsResponse(_DescribeGroupsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class ListGroupsRequest(TypedDict, total=False):
    states_filter: Sequence[str]
    types_filter: Sequence[str]
    tagged_fields: dict[int, bytes]


class _ListGroupsResponseGroupsRequired(TypedDict):
    group_id: str
    protocol_type: str


class ListGroupsResponseGroups(_ListGroupsResponseGroupsRequired, total=False):
    group_state: str
    group_type: str
    tagged_fields: dict[int, bytes]


class _ListGroupsResponseRequired(TypedDict):
    error_code: int
    groups: Sequence[ListGroupsResponseGroups]


class ListGroupsResponse(_ListGroupsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _SaslHandshakeRequestRequired(TypedDict):
    mechanism: str


class SaslHandshakeRequest(_SaslHandshakeRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _SaslHandshakeResponseRequired(TypedDict):
    error_code: int
    mechanisms: Sequence[str]


class SaslHandshakeResponse(_SaslHandshakeResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class ApiVersionsRequest(TypedDict, total=False):
    client_software_name: str
    client_software_version: str
    tagged_fields: dict[int, bytes]


class _ApiVersionsResponseApiKeysRequired(TypedDict):
    api_key: int
    min_version: int
    max_version: int


class ApiVersionsResponseApiKeys(_ApiVersionsResponseApiKeysRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ApiVersionsResponseRequired(TypedDict):
    error_code: int
    api_keys: Sequence[ApiVersionsResponseApiKeys]


class ApiVersionsResponse(_ApiVersionsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _CreateTopicsRequestTopicsAssignmentsRequired(TypedDict):
    partition_index: int
    broker_ids: Sequence[int]


class CreateTopicsRequestTopicsAssignments(_CreateTopicsRequestTopicsAssignmentsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreateTopicsRequestTopicsConfigsRequired(TypedDict):
    name: str
    value: str | None


class CreateTopicsRequestTopicsConfigs(_CreateTopicsRequestTopicsConfigsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreateTopicsRequestTopicsRequired(TypedDict):
    name: str
    num_partitions: int
    replication_factor: int
    assignments: Sequence[CreateTopicsRequestTopicsAssignments]
    configs: Sequence[CreateTopicsRequestTopicsConfigs]


class CreateTopicsRequestTopics(_CreateTopicsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreateTopicsRequestRequired(TypedDict):
    topics: Sequence[CreateTopicsRequestTopics]


class CreateTopicsRequest(_CreateTopicsRequestRequired, total=False):
    timeout_ms: int
    validate_only: bool
    tagged_fields: dict[int, bytes]


class _CreateTopicsResponseTopicsConfigsRequired(TypedDict):
    name: str
    value: str | None
    read_only: bool
    is_sensitive: bool


class CreateTopicsResponseTopicsConfigs(_CreateTopicsResponseTopicsConfigsRequired, total=False):
    config_source: int
    tagged_fields: dict[int, bytes]


class _CreateTopicsResponseTopicsRequired(TypedDict):
    name: str
    error_code: int


class CreateTopicsResponseTopics(_CreateTopicsResponseTopicsRequired, total=False):
    topic_id: bytes
    error_message: str | None
    topic_config_error_code: int
    num_partitions: int
    replication_factor: int
    configs: Sequence[CreateTopicsResponseTopicsConfigs] | None
    tagged_fields: dict[int, bytes]


class _CreateTopicsResponseRequired(TypedDict):
    topics: Sequence[CreateTopicsResponseTopics]


class CreateTopicsResponse(_CreateTopicsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DeleteTopicsRequestTopicsRequired(TypedDict):
    topic_id: bytes


class DeleteTopicsRequestTopics(_DeleteTopicsRequestTopicsRequired, total=False):
    name: str | None
    tagged_fields: dict[int, bytes]


class _DeleteTopicsRequestRequired(TypedDict):
    timeout_ms: int


class DeleteTopicsRequest(_DeleteTopicsRequestRequired, total=False):
    topics: Sequence[DeleteTopicsRequestTopics]
    topic_names: Sequence[str]
    tagged_fields: dict[int, bytes]


class _DeleteTopicsResponseResponsesRequired(TypedDict):
    name: str | None
    error_code: int


class DeleteTopicsResponseResponses(_DeleteTopicsResponseResponsesRequired, total=False):
    topic_id: bytes
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _DeleteTopicsResponseRequired(TypedDict):
    responses: Sequence[DeleteTopicsResponseResponses]


class DeleteTopicsResponse(_DeleteTopicsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DeleteRecordsRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int
    offset: int


class DeleteRecordsRequestTopicsPartitions(_DeleteRecordsRequestTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteRecordsRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[DeleteRecordsRequestTopicsPartitions]


class DeleteRecordsRequestTopics(_DeleteRecordsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteRecordsRequestRequired(TypedDict):
    topics: Sequence[DeleteRecordsRequestTopics]
    timeout_ms: int


class DeleteRecordsRequest(_DeleteRecordsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteRecordsResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    low_watermark: int
    error_code: int


class DeleteRecordsResponseTopicsPartitions(_DeleteRecordsResponseTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteRecordsResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[DeleteRecordsResponseTopicsPartitions]


class DeleteRecordsResponseTopics(_DeleteRecordsResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteRecordsResponseRequired(TypedDict):
    throttle_time_ms: int
    topics: Sequence[DeleteRecordsResponseTopics]


class DeleteRecordsResponse(_DeleteRecordsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _InitProducerIdRequestRequired(TypedDict):
    transaction_timeout_ms: int


class InitProducerIdRequest(_InitProducerIdRequestRequired, total=False):
    transactional_id: str | None
    producer_id: int
    producer_epoch: int
    tagged_fields: dict[int, bytes]


class _InitProducerIdResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int
    producer_epoch: int


class InitProducerIdResponse(_InitProducerIdResponseRequired, total=False):
    producer_id: int
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochRequestTopicsPartitionsRequired(TypedDict):
    partition: int
    leader_epoch: int


class OffsetForLeaderEpochRequestTopicsPartitions(_OffsetForLeaderEpochRequestTopicsPartitionsRequired, total=False):
    current_leader_epoch: int
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochRequestTopicsRequired(TypedDict):
    topic: str
    partitions: Sequence[OffsetForLeaderEpochRequestTopicsPartitions]


class OffsetForLeaderEpochRequestTopics(_OffsetForLeaderEpochRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochRequestRequired(TypedDict):
    topics: Sequence[OffsetForLeaderEpochRequestTopics]


class OffsetForLeaderEpochRequest(_OffsetForLeaderEpochRequestRequired, total=False):
    replica_id: int
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochResponseTopicsPartitionsRequired(TypedDict):
    error_code: int
    partition: int


class OffsetForLeaderEpochResponseTopicsPartitions(_OffsetForLeaderEpochResponseTopicsPartitionsRequired, total=False):
    leader_epoch: int
    end_offset: int
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochResponseTopicsRequired(TypedDict):
    topic: str
    partitions: Sequence[OffsetForLeaderEpochResponseTopicsPartitions]


class OffsetForLeaderEpochResponseTopics(_OffsetForLeaderEpochResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetForLeaderEpochResponseRequired(TypedDict):
    topics: Sequence[OffsetForLeaderEpochResponseTopics]


class OffsetForLeaderEpochResponse(_OffsetForLeaderEpochResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnRequestTransactionsTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[int]


class AddPartitionsToTxnRequestTransactionsTopics(_AddPartitionsToTxnRequestTransactionsTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnRequestTransactionsRequired(TypedDict):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: Sequence[AddPartitionsToTxnRequestTransactionsTopics]


class AddPartitionsToTxnRequestTransactions(_AddPartitionsToTxnRequestTransactionsRequired, total=False):
    verify_only: bool
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnRequestV3AndBelowTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[int]


class AddPartitionsToTxnRequestV3AndBelowTopics(_AddPartitionsToTxnRequestV3AndBelowTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class AddPartitionsToTxnRequest(TypedDict, total=False):
    transactions: Sequence[AddPartitionsToTxnRequestTransactions]
    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: Sequence[AddPartitionsToTxnRequestV3AndBelowTopics]
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartitionRequired(TypedDict):
    partition_index: int
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition(_AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartitionRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseResultsByTransactionTopicResultsRequired(TypedDict):
    name: str
    results_by_partition: Sequence[AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition]


class AddPartitionsToTxnResponseResultsByTransactionTopicResults(_AddPartitionsToTxnResponseResultsByTransactionTopicResultsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseResultsByTransactionRequired(TypedDict):
    transactional_id: str
    topic_results: Sequence[AddPartitionsToTxnResponseResultsByTransactionTopicResults]


class AddPartitionsToTxnResponseResultsByTransaction(_AddPartitionsToTxnResponseResultsByTransactionRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartitionRequired(TypedDict):
    partition_index: int
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition(_AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartitionRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseResultsByTopicV3AndBelowRequired(TypedDict):
    name: str
    results_by_partition: Sequence[AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition]


class AddPartitionsToTxnResponseResultsByTopicV3AndBelow(_AddPartitionsToTxnResponseResultsByTopicV3AndBelowRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddPartitionsToTxnResponseRequired(TypedDict):
    throttle_time_ms: int


class AddPartitionsToTxnResponse(_AddPartitionsToTxnResponseRequired, total=False):
    error_code: int
    results_by_transaction: Sequence[AddPartitionsToTxnResponseResultsByTransaction]
    results_by_topic_v3_and_below: Sequence[AddPartitionsToTxnResponseResultsByTopicV3AndBelow]
    tagged_fields: dict[int, bytes]


class _AddOffsetsToTxnRequestRequired(TypedDict):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


class AddOffsetsToTxnRequest(_AddOffsetsToTxnRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AddOffsetsToTxnResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int


class AddOffsetsToTxnResponse(_AddOffsetsToTxnResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _EndTxnRequestRequired(TypedDict):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


class EndTxnRequest(_EndTxnRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _EndTxnResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int


class EndTxnResponse(_EndTxnResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersRequestMarkersTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class WriteTxnMarkersRequestMarkersTopics(_WriteTxnMarkersRequestMarkersTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersRequestMarkersRequired(TypedDict):
    producer_id: int
    producer_epoch: int
    transaction_result: bool
    topics: Sequence[WriteTxnMarkersRequestMarkersTopics]
    coordinator_epoch: int


class WriteTxnMarkersRequestMarkers(_WriteTxnMarkersRequestMarkersRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersRequestRequired(TypedDict):
    markers: Sequence[WriteTxnMarkersRequestMarkers]


class WriteTxnMarkersRequest(_WriteTxnMarkersRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersResponseMarkersTopicsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class WriteTxnMarkersResponseMarkersTopicsPartitions(_WriteTxnMarkersResponseMarkersTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersResponseMarkersTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[WriteTxnMarkersResponseMarkersTopicsPartitions]


class WriteTxnMarkersResponseMarkersTopics(_WriteTxnMarkersResponseMarkersTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersResponseMarkersRequired(TypedDict):
    producer_id: int
    topics: Sequence[WriteTxnMarkersResponseMarkersTopics]


class WriteTxnMarkersResponseMarkers(_WriteTxnMarkersResponseMarkersRequired, total=False):
    tagged_fields: dict[int, bytes]


class _WriteTxnMarkersResponseRequired(TypedDict):
    markers: Sequence[WriteTxnMarkersResponseMarkers]


class WriteTxnMarkersResponse(_WriteTxnMarkersResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int
    committed_offset: int


class TxnOffsetCommitRequestTopicsPartitions(_TxnOffsetCommitRequestTopicsPartitionsRequired, total=False):
    committed_leader_epoch: int
    committed_metadata: str | None
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[TxnOffsetCommitRequestTopicsPartitions]


class TxnOffsetCommitRequestTopics(_TxnOffsetCommitRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitRequestRequired(TypedDict):
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: Sequence[TxnOffsetCommitRequestTopics]


class TxnOffsetCommitRequest(_TxnOffsetCommitRequestRequired, total=False):
    generation_id: int
    member_id: str
    group_instance_id: str | None
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class TxnOffsetCommitResponseTopicsPartitions(_TxnOffsetCommitResponseTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[TxnOffsetCommitResponseTopicsPartitions]


class TxnOffsetCommitResponseTopics(_TxnOffsetCommitResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _TxnOffsetCommitResponseRequired(TypedDict):
    throttle_time_ms: int
    topics: Sequence[TxnOffsetCommitResponseTopics]


class TxnOffsetCommitResponse(_TxnOffsetCommitResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeAclsRequestRequired(TypedDict):
    resource_type_filter: int
    resource_name_filter: str | None
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class DescribeAclsRequest(_DescribeAclsRequestRequired, total=False):
    pattern_type_filter: int
    tagged_fields: dict[int, bytes]


class _DescribeAclsResponseResourcesAclsRequired(TypedDict):
    principal: str
    host: str
    operation: int
    permission_type: int


class DescribeAclsResponseResourcesAcls(_DescribeAclsResponseResourcesAclsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeAclsResponseResourcesRequired(TypedDict):
    resource_type: int
    resource_name: str
    acls: Sequence[DescribeAclsResponseResourcesAcls]


class DescribeAclsResponseResources(_DescribeAclsResponseResourcesRequired, total=False):
    pattern_type: int
    tagged_fields: dict[int, bytes]


class _DescribeAclsResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int
    resources: Sequence[DescribeAclsResponseResources]


class DescribeAclsResponse(_DescribeAclsResponseRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _CreateAclsRequestCreationsRequired(TypedDict):
    resource_type: int
    resource_name: str
    principal: str
    host: str
    operation: int
    permission_type: int


class CreateAclsRequestCreations(_CreateAclsRequestCreationsRequired, total=False):
    resource_pattern_type: int
    tagged_fields: dict[int, bytes]


class _CreateAclsRequestRequired(TypedDict):
    creations: Sequence[CreateAclsRequestCreations]


class CreateAclsRequest(_CreateAclsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreateAclsResponseResultsRequired(TypedDict):
    error_code: int


class CreateAclsResponseResults(_CreateAclsResponseResultsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _CreateAclsResponseRequired(TypedDict):
    throttle_time_ms: int
    results: Sequence[CreateAclsResponseResults]


class CreateAclsResponse(_CreateAclsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteAclsRequestFiltersRequired(TypedDict):
    resource_type_filter: int
    resource_name_filter: str | None
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class DeleteAclsRequestFilters(_DeleteAclsRequestFiltersRequired, total=False):
    pattern_type_filter: int
    tagged_fields: dict[int, bytes]


class _DeleteAclsRequestRequired(TypedDict):
    filters: Sequence[DeleteAclsRequestFilters]


class DeleteAclsRequest(_DeleteAclsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteAclsResponseFilterResultsMatchingAclsRequired(TypedDict):
    error_code: int
    resource_type: int
    resource_name: str
    principal: str
    host: str
    operation: int
    permission_type: int


class DeleteAclsResponseFilterResultsMatchingAcls(_DeleteAclsResponseFilterResultsMatchingAclsRequired, total=False):
    error_message: str | None
    pattern_type: int
    tagged_fields: dict[int, bytes]


class _DeleteAclsResponseFilterResultsRequired(TypedDict):
    error_code: int
    matching_acls: Sequence[DeleteAclsResponseFilterResultsMatchingAcls]


class DeleteAclsResponseFilterResults(_DeleteAclsResponseFilterResultsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _DeleteAclsResponseRequired(TypedDict):
    throttle_time_ms: int
    filter_results: Sequence[DeleteAclsResponseFilterResults]


class DeleteAclsResponse(_DeleteAclsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeConfigsRequestResourcesRequired(TypedDict):
    resource_type: int
    resource_name: str
    configuration_keys: Sequence[str] | None


class DescribeConfigsRequestResources(_DescribeConfigsRequestResourcesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeConfigsRequestRequired(TypedDict):
    resources: Sequence[DescribeConfigsRequestResources]


class DescribeConfigsRequest(_DescribeConfigsRequestRequired, total=False):
    include_synonyms: bool
    include_documentation: bool
    tagged_fields: dict[int, bytes]


class _DescribeConfigsResponseResultsConfigsSynonymsRequired(TypedDict):
    name: str
    value: str | None
    source: int


class DescribeConfigsResponseResultsConfigsSynonyms(_DescribeConfigsResponseResultsConfigsSynonymsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeConfigsResponseResultsConfigsRequired(TypedDict):
    name: str
    value: str | None
    read_only: bool
    is_sensitive: bool


class DescribeConfigsResponseResultsConfigs(_DescribeConfigsResponseResultsConfigsRequired, total=False):
    is_default: bool
    config_source: int
    synonyms: Sequence[DescribeConfigsResponseResultsConfigsSynonyms]
    config_type: int
    documentation: str | None
    tagged_fields: dict[int, bytes]


class _DescribeConfigsResponseResultsRequired(TypedDict):
    error_code: int
    resource_type: int
    resource_name: str
    configs: Sequence[DescribeConfigsResponseResultsConfigs]


class DescribeConfigsResponseResults(_DescribeConfigsResponseResultsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _DescribeConfigsResponseRequired(TypedDict):
    throttle_time_ms: int
    results: Sequence[DescribeConfigsResponseResults]


class DescribeConfigsResponse(_DescribeConfigsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterConfigsRequestResourcesConfigsRequired(TypedDict):
    name: str
    value: str | None


class AlterConfigsRequestResourcesConfigs(_AlterConfigsRequestResourcesConfigsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterConfigsRequestResourcesRequired(TypedDict):
    resource_type: int
    resource_name: str
    configs: Sequence[AlterConfigsRequestResourcesConfigs]


class AlterConfigsRequestResources(_AlterConfigsRequestResourcesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterConfigsRequestRequired(TypedDict):
    resources: Sequence[AlterConfigsRequestResources]
    validate_only: bool


class AlterConfigsRequest(_AlterConfigsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterConfigsResponseResponsesRequired(TypedDict):
    error_code: int
    resource_type: int
    resource_name: str


class AlterConfigsResponseResponses(_AlterConfigsResponseResponsesRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _AlterConfigsResponseRequired(TypedDict):
    throttle_time_ms: int
    responses: Sequence[AlterConfigsResponseResponses]


class AlterConfigsResponse(_AlterConfigsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsRequestDirsTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[int]


class AlterReplicaLogDirsRequestDirsTopics(_AlterReplicaLogDirsRequestDirsTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsRequestDirsRequired(TypedDict):
    path: str
    topics: Sequence[AlterReplicaLogDirsRequestDirsTopics]


class AlterReplicaLogDirsRequestDirs(_AlterReplicaLogDirsRequestDirsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsRequestRequired(TypedDict):
    dirs: Sequence[AlterReplicaLogDirsRequestDirs]


class AlterReplicaLogDirsRequest(_AlterReplicaLogDirsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsResponseResultsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class AlterReplicaLogDirsResponseResultsPartitions(_AlterReplicaLogDirsResponseResultsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsResponseResultsRequired(TypedDict):
    topic_name: str
    partitions: Sequence[AlterReplicaLogDirsResponseResultsPartitions]


class AlterReplicaLogDirsResponseResults(_AlterReplicaLogDirsResponseResultsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterReplicaLogDirsResponseRequired(TypedDict):
    results: Sequence[AlterReplicaLogDirsResponseResults]


class AlterReplicaLogDirsResponse(_AlterReplicaLogDirsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DescribeLogDirsRequestTopicsRequired(TypedDict):
    topic: str
    partitions: Sequence[int]


class DescribeLogDirsRequestTopics(_DescribeLogDirsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class DescribeLogDirsRequest(TypedDict, total=False):
    topics: Sequence[DescribeLogDirsRequestTopics] | None
    tagged_fields: dict[int, bytes]


class _DescribeLogDirsResponseResultsTopicsPartitionsRequired(TypedDict):
    partition_index: int
    partition_size: int
    offset_lag: int


class DescribeLogDirsResponseResultsTopicsPartitions(_DescribeLogDirsResponseResultsTopicsPartitionsRequired, total=False):
    is_future_key: bool
    tagged_fields: dict[int, bytes]


class _DescribeLogDirsResponseResultsTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[DescribeLogDirsResponseResultsTopicsPartitions]


class DescribeLogDirsResponseResultsTopics(_DescribeLogDirsResponseResultsTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeLogDirsResponseResultsRequired(TypedDict):
    log_dir: str
    topics: Sequence[DescribeLogDirsResponseResultsTopics]


class DescribeLogDirsResponseResults(_DescribeLogDirsResponseResultsRequired, total=False):
    error_code: int
    total_bytes: int
    usable_bytes: int
    tagged_fields: dict[int, bytes]


class _DescribeLogDirsResponseRequired(TypedDict):
    results: Sequence[DescribeLogDirsResponseResults]


class DescribeLogDirsResponse(_DescribeLogDirsResponseRequired, total=False):
    throttle_time_ms: int
    error_code: int
    tagged_fields: dict[int, bytes]


class _SaslAuthenticateRequestRequired(TypedDict):
    auth_bytes: bytes


class SaslAuthenticateRequest(_SaslAuthenticateRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _SaslAuthenticateResponseRequired(TypedDict):
    error_code: int


class SaslAuthenticateResponse(_SaslAuthenticateResponseRequired, total=False):
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    tagged_fields: dict[int, bytes]


class _CreatePartitionsRequestTopicsAssignmentsRequired(TypedDict):
    broker_ids: Sequence[int]


class CreatePartitionsRequestTopicsAssignments(_CreatePartitionsRequestTopicsAssignmentsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreatePartitionsRequestTopicsRequired(TypedDict):
    name: str
    count: int
    assignments: Sequence[CreatePartitionsRequestTopicsAssignments] | None


class CreatePartitionsRequestTopics(_CreatePartitionsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _CreatePartitionsRequestRequired(TypedDict):
    topics: Sequence[CreatePartitionsRequestTopics]


class CreatePartitionsRequest(_CreatePartitionsRequestRequired, total=False):
    timeout_ms: int
    validate_only: bool
    tagged_fields: dict[int, bytes]


class _CreatePartitionsResponseResultsRequired(TypedDict):
    name: str
    error_code: int


class CreatePartitionsResponseResults(_CreatePartitionsResponseResultsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _CreatePartitionsResponseRequired(TypedDict):
    throttle_time_ms: int
    results: Sequence[CreatePartitionsResponseResults]


class CreatePartitionsResponse(_CreatePartitionsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteGroupsRequestRequired(TypedDict):
    groups_names: Sequence[str]


class DeleteGroupsRequest(_DeleteGroupsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteGroupsResponseResultsRequired(TypedDict):
    group_id: str
    error_code: int


class DeleteGroupsResponseResults(_DeleteGroupsResponseResultsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DeleteGroupsResponseRequired(TypedDict):
    throttle_time_ms: int
    results: Sequence[DeleteGroupsResponseResults]


class DeleteGroupsResponse(_DeleteGroupsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ElectLeadersRequestTopicPartitionsRequired(TypedDict):
    topic: str
    partitions: Sequence[int]


class ElectLeadersRequestTopicPartitions(_ElectLeadersRequestTopicPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ElectLeadersRequestRequired(TypedDict):
    topic_partitions: Sequence[ElectLeadersRequestTopicPartitions] | None


class ElectLeadersRequest(_ElectLeadersRequestRequired, total=False):
    election_type: int
    timeout_ms: int
    tagged_fields: dict[int, bytes]


class _ElectLeadersResponseReplicaElectionResultsPartitionResultRequired(TypedDict):
    partition_id: int
    error_code: int


class ElectLeadersResponseReplicaElectionResultsPartitionResult(_ElectLeadersResponseReplicaElectionResultsPartitionResultRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _ElectLeadersResponseReplicaElectionResultsRequired(TypedDict):
    topic: str
    partition_result: Sequence[ElectLeadersResponseReplicaElectionResultsPartitionResult]


class ElectLeadersResponseReplicaElectionResults(_ElectLeadersResponseReplicaElectionResultsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ElectLeadersResponseRequired(TypedDict):
    throttle_time_ms: int
    replica_election_results: Sequence[ElectLeadersResponseReplicaElectionResults]


class ElectLeadersResponse(_ElectLeadersResponseRequired, total=False):
    error_code: int
    tagged_fields: dict[int, bytes]


class _IncrementalAlterConfigsRequestResourcesConfigsRequired(TypedDict):
    name: str
    config_operation: int
    value: str | None


class IncrementalAlterConfigsRequestResourcesConfigs(_IncrementalAlterConfigsRequestResourcesConfigsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _IncrementalAlterConfigsRequestResourcesRequired(TypedDict):
    resource_type: int
    resource_name: str
    configs: Sequence[IncrementalAlterConfigsRequestResourcesConfigs]


class IncrementalAlterConfigsRequestResources(_IncrementalAlterConfigsRequestResourcesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _IncrementalAlterConfigsRequestRequired(TypedDict):
    resources: Sequence[IncrementalAlterConfigsRequestResources]
    validate_only: bool


class IncrementalAlterConfigsRequest(_IncrementalAlterConfigsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _IncrementalAlterConfigsResponseResponsesRequired(TypedDict):
    error_code: int
    resource_type: int
    resource_name: str


class IncrementalAlterConfigsResponseResponses(_IncrementalAlterConfigsResponseResponsesRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _IncrementalAlterConfigsResponseRequired(TypedDict):
    throttle_time_ms: int
    responses: Sequence[IncrementalAlterConfigsResponseResponses]


class IncrementalAlterConfigsResponse(_IncrementalAlterConfigsResponseRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int


class AlterPartitionReassignmentsRequestTopicsPartitions(_AlterPartitionReassignmentsRequestTopicsPartitionsRequired, total=False):
    replicas: Sequence[int] | None
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[AlterPartitionReassignmentsRequestTopicsPartitions]


class AlterPartitionReassignmentsRequestTopics(_AlterPartitionReassignmentsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsRequestRequired(TypedDict):
    topics: Sequence[AlterPartitionReassignmentsRequestTopics]


class AlterPartitionReassignmentsRequest(_AlterPartitionReassignmentsRequestRequired, total=False):
    timeout_ms: int
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsResponseResponsesPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class AlterPartitionReassignmentsResponseResponsesPartitions(_AlterPartitionReassignmentsResponseResponsesPartitionsRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsResponseResponsesRequired(TypedDict):
    name: str
    partitions: Sequence[AlterPartitionReassignmentsResponseResponsesPartitions]


class AlterPartitionReassignmentsResponseResponses(_AlterPartitionReassignmentsResponseResponsesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterPartitionReassignmentsResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int
    responses: Sequence[AlterPartitionReassignmentsResponseResponses]


class AlterPartitionReassignmentsResponse(_AlterPartitionReassignmentsResponseRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _ListPartitionReassignmentsRequestTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class ListPartitionReassignmentsRequestTopics(_ListPartitionReassignmentsRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ListPartitionReassignmentsRequestRequired(TypedDict):
    topics: Sequence[ListPartitionReassignmentsRequestTopics] | None


class ListPartitionReassignmentsRequest(_ListPartitionReassignmentsRequestRequired, total=False):
    timeout_ms: int
    tagged_fields: dict[int, bytes]


class _ListPartitionReassignmentsResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    replicas: Sequence[int]
    adding_replicas: Sequence[int]
    removing_replicas: Sequence[int]


class ListPartitionReassignmentsResponseTopicsPartitions(_ListPartitionReassignmentsResponseTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ListPartitionReassignmentsResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[ListPartitionReassignmentsResponseTopicsPartitions]


class ListPartitionReassignmentsResponseTopics(_ListPartitionReassignmentsResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _ListPartitionReassignmentsResponseRequired(TypedDict):
    throttle_time_ms: int
    error_code: int
    topics: Sequence[ListPartitionReassignmentsResponseTopics]


class ListPartitionReassignmentsResponse(_ListPartitionReassignmentsResponseRequired, total=False):
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _OffsetDeleteRequestTopicsPartitionsRequired(TypedDict):
    partition_index: int


class OffsetDeleteRequestTopicsPartitions(_OffsetDeleteRequestTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetDeleteRequestTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetDeleteRequestTopicsPartitions]


class OffsetDeleteRequestTopics(_OffsetDeleteRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetDeleteRequestRequired(TypedDict):
    group_id: str
    topics: Sequence[OffsetDeleteRequestTopics]


class OffsetDeleteRequest(_OffsetDeleteRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetDeleteResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int
    error_code: int


class OffsetDeleteResponseTopicsPartitions(_OffsetDeleteResponseTopicsPartitionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _OffsetDeleteResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[OffsetDeleteResponseTopicsPartitions]


class OffsetDeleteResponseTopics(_OffsetDeleteResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class OffsetDeleteResponse(TypedDict, total=False):
    error_code: int
    throttle_time_ms: int
    topics: Sequence[OffsetDeleteResponseTopics]
    tagged_fields: dict[int, bytes]


class _DescribeClientQuotasRequestComponentsRequired(TypedDict):
    entity_type: str
    match_type: int


class DescribeClientQuotasRequestComponents(_DescribeClientQuotasRequestComponentsRequired, total=False):
    match: str | None
    tagged_fields: dict[int, bytes]


class _DescribeClientQuotasRequestRequired(TypedDict):
    components: Sequence[DescribeClientQuotasRequestComponents]


class DescribeClientQuotasRequest(_DescribeClientQuotasRequestRequired, total=False):
    strict: bool
    tagged_fields: dict[int, bytes]


class _DescribeClientQuotasResponseEntriesEntityRequired(TypedDict):
    entity_type: str


class DescribeClientQuotasResponseEntriesEntity(_DescribeClientQuotasResponseEntriesEntityRequired, total=False):
    entity_name: str | None
    tagged_fields: dict[int, bytes]


class _DescribeClientQuotasResponseEntriesValuesRequired(TypedDict):
    key: str
    value: float


class DescribeClientQuotasResponseEntriesValues(_DescribeClientQuotasResponseEntriesValuesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeClientQuotasResponseEntriesRequired(TypedDict):
    entity: Sequence[DescribeClientQuotasResponseEntriesEntity]
    values: Sequence[DescribeClientQuotasResponseEntriesValues]


class DescribeClientQuotasResponseEntries(_DescribeClientQuotasResponseEntriesRequired, total=False):
    tagged_fields: dict[int, bytes]


class DescribeClientQuotasResponse(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    entries: Sequence[DescribeClientQuotasResponseEntries] | None
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasRequestEntriesEntityRequired(TypedDict):
    entity_type: str


class AlterClientQuotasRequestEntriesEntity(_AlterClientQuotasRequestEntriesEntityRequired, total=False):
    entity_name: str | None
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasRequestEntriesOpsRequired(TypedDict):
    key: str


class AlterClientQuotasRequestEntriesOps(_AlterClientQuotasRequestEntriesOpsRequired, total=False):
    value: float
    remove: bool
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasRequestEntriesRequired(TypedDict):
    entity: Sequence[AlterClientQuotasRequestEntriesEntity]
    ops: Sequence[AlterClientQuotasRequestEntriesOps]


class AlterClientQuotasRequestEntries(_AlterClientQuotasRequestEntriesRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasRequestRequired(TypedDict):
    entries: Sequence[AlterClientQuotasRequestEntries]


class AlterClientQuotasRequest(_AlterClientQuotasRequestRequired, total=False):
    validate_only: bool
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasResponseEntriesEntityRequired(TypedDict):
    entity_type: str


class AlterClientQuotasResponseEntriesEntity(_AlterClientQuotasResponseEntriesEntityRequired, total=False):
    entity_name: str | None
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasResponseEntriesRequired(TypedDict):
    entity: Sequence[AlterClientQuotasResponseEntriesEntity]


class AlterClientQuotasResponseEntries(_AlterClientQuotasResponseEntriesRequired, total=False):
    error_code: int
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _AlterClientQuotasResponseRequired(TypedDict):
    entries: Sequence[AlterClientQuotasResponseEntries]


class AlterClientQuotasResponse(_AlterClientQuotasResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DescribeUserScramCredentialsRequestUsersRequired(TypedDict):
    name: str


class DescribeUserScramCredentialsRequestUsers(_DescribeUserScramCredentialsRequestUsersRequired, total=False):
    tagged_fields: dict[int, bytes]


class DescribeUserScramCredentialsRequest(TypedDict, total=False):
    users: Sequence[DescribeUserScramCredentialsRequestUsers] | None
    tagged_fields: dict[int, bytes]


class _DescribeUserScramCredentialsResponseResultsCredentialInfosRequired(TypedDict):
    mechanism: int
    iterations: int


class DescribeUserScramCredentialsResponseResultsCredentialInfos(_DescribeUserScramCredentialsResponseResultsCredentialInfosRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeUserScramCredentialsResponseResultsRequired(TypedDict):
    user: str
    credential_infos: Sequence[DescribeUserScramCredentialsResponseResultsCredentialInfos]


class DescribeUserScramCredentialsResponseResults(_DescribeUserScramCredentialsResponseResultsRequired, total=False):
    error_code: int
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _DescribeUserScramCredentialsResponseRequired(TypedDict):
    results: Sequence[DescribeUserScramCredentialsResponseResults]


class DescribeUserScramCredentialsResponse(_DescribeUserScramCredentialsResponseRequired, total=False):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _AlterUserScramCredentialsRequestDeletionsRequired(TypedDict):
    name: str
    mechanism: int


class AlterUserScramCredentialsRequestDeletions(_AlterUserScramCredentialsRequestDeletionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterUserScramCredentialsRequestUpsertionsRequired(TypedDict):
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class AlterUserScramCredentialsRequestUpsertions(_AlterUserScramCredentialsRequestUpsertionsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterUserScramCredentialsRequestRequired(TypedDict):
    deletions: Sequence[AlterUserScramCredentialsRequestDeletions]
    upsertions: Sequence[AlterUserScramCredentialsRequestUpsertions]


class AlterUserScramCredentialsRequest(_AlterUserScramCredentialsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _AlterUserScramCredentialsResponseResultsRequired(TypedDict):
    user: str


class AlterUserScramCredentialsResponseResults(_AlterUserScramCredentialsResponseResultsRequired, total=False):
    error_code: int
    error_message: str | None
    tagged_fields: dict[int, bytes]


class _AlterUserScramCredentialsResponseRequired(TypedDict):
    results: Sequence[AlterUserScramCredentialsResponseResults]


class AlterUserScramCredentialsResponse(_AlterUserScramCredentialsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DescribeClusterRequestRequired(TypedDict):
    include_cluster_authorized_operations: bool


class DescribeClusterRequest(_DescribeClusterRequestRequired, total=False):
    endpoint_type: int
    tagged_fields: dict[int, bytes]


class _DescribeClusterResponseBrokersRequired(TypedDict):
    broker_id: int
    host: str
    port: int


class DescribeClusterResponseBrokers(_DescribeClusterResponseBrokersRequired, total=False):
    rack: str | None
    tagged_fields: dict[int, bytes]


class DescribeClusterResponse(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: Sequence[DescribeClusterResponseBrokers]
    cluster_authorized_operations: int
    tagged_fields: dict[int, bytes]


class _DescribeProducersRequestTopicsRequired(TypedDict):
    name: str
    partition_indexes: Sequence[int]


class DescribeProducersRequestTopics(_DescribeProducersRequestTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeProducersRequestRequired(TypedDict):
    topics: Sequence[DescribeProducersRequestTopics]


class DescribeProducersRequest(_DescribeProducersRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeProducersResponseTopicsPartitionsActiveProducersRequired(TypedDict):
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


class DescribeProducersResponseTopicsPartitionsActiveProducers(_DescribeProducersResponseTopicsPartitionsActiveProducersRequired, total=False):
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int
    tagged_fields: dict[int, bytes]


class _DescribeProducersResponseTopicsPartitionsRequired(TypedDict):
    partition_index: int


class DescribeProducersResponseTopicsPartitions(_DescribeProducersResponseTopicsPartitionsRequired, total=False):
    error_code: int
    error_message: str | None
    active_producers: Sequence[DescribeProducersResponseTopicsPartitionsActiveProducers]
    tagged_fields: dict[int, bytes]


class _DescribeProducersResponseTopicsRequired(TypedDict):
    name: str
    partitions: Sequence[DescribeProducersResponseTopicsPartitions]


class DescribeProducersResponseTopics(_DescribeProducersResponseTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeProducersResponseRequired(TypedDict):
    topics: Sequence[DescribeProducersResponseTopics]


class DescribeProducersResponse(_DescribeProducersResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class _DescribeTransactionsRequestRequired(TypedDict):
    transactional_ids: Sequence[str]


class DescribeTransactionsRequest(_DescribeTransactionsRequestRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeTransactionsResponseTransactionStatesTopicsRequired(TypedDict):
    topic: str
    partitions: Sequence[int]


class DescribeTransactionsResponseTransactionStatesTopics(_DescribeTransactionsResponseTransactionStatesTopicsRequired, total=False):
    tagged_fields: dict[int, bytes]


class _DescribeTransactionsResponseTransactionStatesRequired(TypedDict):
    transactional_id: str


class DescribeTransactionsResponseTransactionStates(_DescribeTransactionsResponseTransactionStatesRequired, total=False):
    error_code: int
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: Sequence[DescribeTransactionsResponseTransactionStatesTopics]
    tagged_fields: dict[int, bytes]


class _DescribeTransactionsResponseRequired(TypedDict):
    transaction_states: Sequence[DescribeTransactionsResponseTransactionStates]


class DescribeTransactionsResponse(_DescribeTransactionsResponseRequired, total=False):
    throttle_time_ms: int
    tagged_fields: dict[int, bytes]


class ListTransactionsRequest(TypedDict, total=False):
    state_filters: Sequence[str]
    producer_id_filters: Sequence[int]
    duration_filter: int
    tagged_fields: dict[int, bytes]


class _ListTransactionsResponseTransactionStatesRequired(TypedDict):
    transactional_id: str
    producer_id: int
    transaction_state: str


class ListTransactionsResponseTransactionStates(_ListTransactionsResponseTransactionStatesRequired, total=False):
    tagged_fields: dict[int, bytes]


class ListTransactionsResponse(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    unknown_state_filters: Sequence[str]
    transaction_states: Sequence[ListTransactionsResponseTransactionStates]
    tagged_fields: dict[int, bytes]


__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterReplicaLogDirsRequest",
    "AlterReplicaLogDirsResponse",
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResponse",
    "DescribeClientQuotasRequest",
    "DescribeClientQuotasResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "DescribeProducersRequest",
    "DescribeProducersResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListPartitionReassignmentsRequest",
    "ListPartitionReassignmentsResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]
