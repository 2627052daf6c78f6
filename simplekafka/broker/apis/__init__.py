"""The request handlers, one module per request family (Kafka's ``KafkaApis``).

Only here are wire answers built: a handler takes a ``RequestContext`` and the
decoded request, asks its collaborators (the ReplicaManager, the metadata
cache, the group coordinator, ZooKeeper through a worker thread) and returns
the response as a dict, None for "no response", or a Deferred of either.

==========================================  ==============================
API                                         module
==========================================  ==============================
ApiVersions, Metadata                       ``apis.metadata``
DescribeCluster                             ``apis.cluster``
DescribeLogDirs, AlterReplicaLogDirs        ``apis.log_dirs``
DescribeProducers, DescribeTransactions,    ``apis.transaction_tools``
ListTransactions
Produce                                     ``apis.produce``
Fetch                                       ``apis.fetch``
ListOffsets, OffsetForLeaderEpoch,          ``apis.offsets``
DeleteRecords
InitProducerId                              ``apis.producer_ids``
AddPartitionsToTxn, AddOffsetsToTxn,        ``apis.transactions``
EndTxn, TxnOffsetCommit
CreateTopics, DeleteTopics                  ``apis.topics``
ElectLeaders                                ``apis.elect_leaders``
Alter/ListPartitionReassignments            ``apis.reassignments``
CreatePartitions                            ``apis.partitions``
DescribeConfigs, (Incremental)AlterConfigs  ``apis.configs``
FindCoordinator ... DeleteGroups            ``apis.groups``
WriteTxnMarkers                             ``apis.txn_markers``
Describe/Create/DeleteAcls                  ``apis.acls``
LeaderAndIsr, UpdateMetadata, StopReplica   ``apis.inter_broker``
==========================================  ==============================
"""

from __future__ import annotations

from dataclasses import dataclass

from simplekafka.broker.apis.acls import AclApis
from simplekafka.broker.apis.cluster import DescribeClusterHandler
from simplekafka.broker.apis.configs import ConfigApis
from simplekafka.broker.apis.elect_leaders import ElectLeadersHandler
from simplekafka.broker.apis.fetch import FetchHandler
from simplekafka.broker.apis.groups import GroupApis
from simplekafka.broker.apis.inter_broker import InterBrokerHandlers
from simplekafka.broker.apis.log_dirs import AlterReplicaLogDirsHandler, DescribeLogDirsHandler
from simplekafka.broker.apis.metadata import ApiVersionsHandler, MetadataHandler
from simplekafka.broker.apis.offsets import (
    DeleteRecordsHandler,
    ListOffsetsHandler,
    OffsetForLeaderEpochHandler,
)
from simplekafka.broker.apis.partitions import CreatePartitionsHandler
from simplekafka.broker.apis.produce import ProduceHandler
from simplekafka.broker.apis.producer_ids import InitProducerIdHandler
from simplekafka.broker.apis.reassignments import (
    AlterPartitionReassignmentsHandler,
    ListPartitionReassignmentsHandler,
)
from simplekafka.broker.apis.topics import TopicAdmin
from simplekafka.broker.apis.transaction_tools import TransactionToolApis
from simplekafka.broker.apis.transactions import TransactionApis
from simplekafka.broker.apis.txn_markers import WriteTxnMarkersHandler
from simplekafka.broker.dispatch import RequestDispatcher
from simplekafka.protocol.api import ApiKey


@dataclass
class KafkaApis:
    """Every handler of one broker, registered on its dispatcher by ``register``."""

    api_versions: ApiVersionsHandler
    metadata: MetadataHandler
    produce: ProduceHandler
    fetch: FetchHandler
    list_offsets: ListOffsetsHandler
    offset_for_leader_epoch: OffsetForLeaderEpochHandler
    init_producer_id: InitProducerIdHandler
    topics: TopicAdmin
    inter_broker: InterBrokerHandlers
    groups: GroupApis
    elect_leaders: ElectLeadersHandler
    create_partitions: CreatePartitionsHandler
    configs: ConfigApis
    delete_records: DeleteRecordsHandler
    alter_reassignments: AlterPartitionReassignmentsHandler
    list_reassignments: ListPartitionReassignmentsHandler
    transactions: TransactionApis
    write_txn_markers: WriteTxnMarkersHandler
    acls: AclApis
    describe_cluster: DescribeClusterHandler
    describe_log_dirs: DescribeLogDirsHandler
    alter_replica_log_dirs: AlterReplicaLogDirsHandler
    transaction_tools: TransactionToolApis

    def register(self, dispatcher: RequestDispatcher) -> None:
        register = dispatcher.register
        register(ApiKey.API_VERSIONS, self.api_versions)
        register(ApiKey.METADATA, self.metadata)
        register(ApiKey.DESCRIBE_CLUSTER, self.describe_cluster)
        register(ApiKey.DESCRIBE_LOG_DIRS, self.describe_log_dirs)
        register(ApiKey.ALTER_REPLICA_LOG_DIRS, self.alter_replica_log_dirs)
        register(ApiKey.PRODUCE, self.produce)
        register(ApiKey.FETCH, self.fetch)
        register(ApiKey.LIST_OFFSETS, self.list_offsets)
        register(ApiKey.OFFSET_FOR_LEADER_EPOCH, self.offset_for_leader_epoch)
        register(ApiKey.DELETE_RECORDS, self.delete_records)
        register(ApiKey.INIT_PRODUCER_ID, self.init_producer_id)
        register(ApiKey.WRITE_TXN_MARKERS, self.write_txn_markers)
        # CreateTopics v5+ answers the created topic's configs, as DescribeConfigs has them.
        self.topics.topic_defaults = self.configs.topic_defaults
        register(ApiKey.CREATE_TOPICS, self.topics.create_topics)
        register(ApiKey.DELETE_TOPICS, self.topics.delete_topics)
        register(ApiKey.ELECT_LEADERS, self.elect_leaders)
        register(ApiKey.CREATE_PARTITIONS, self.create_partitions)
        register(ApiKey.ALTER_PARTITION_REASSIGNMENTS, self.alter_reassignments)
        register(ApiKey.LIST_PARTITION_REASSIGNMENTS, self.list_reassignments)
        register(ApiKey.DESCRIBE_CONFIGS, self.configs.describe_configs)
        register(ApiKey.ALTER_CONFIGS, self.configs.alter_configs)
        register(ApiKey.INCREMENTAL_ALTER_CONFIGS, self.configs.incremental_alter_configs)
        register(ApiKey.DESCRIBE_ACLS, self.acls.describe_acls)
        register(ApiKey.CREATE_ACLS, self.acls.create_acls)
        register(ApiKey.DELETE_ACLS, self.acls.delete_acls)
        register(ApiKey.LEADER_AND_ISR, self.inter_broker.leader_and_isr)
        register(ApiKey.UPDATE_METADATA, self.inter_broker.update_metadata)
        register(ApiKey.STOP_REPLICA, self.inter_broker.stop_replica)
        self.groups.register(dispatcher)
        self.transactions.register(dispatcher)
        self.transaction_tools.register(dispatcher)
