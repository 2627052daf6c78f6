"""DescribeLogDirs and AlterReplicaLogDirs: which log directory holds each partition,
how big it is, and moving it to another.

Every broker answers for itself (an admin client asks each broker it cares
about): each configured ``log.dirs`` entry by its absolute path, with the
partitions whose logs it holds (all of them, or those the request names),
their size in bytes and their offset lag (how far the log end is behind the
high watermark: 0 on a leader, the catching up still to do on a follower),
and from v4 the file system's total and usable bytes. The lookups are the
ReplicaManager's (``describe_log_dirs``); this module shapes the answer.

A replica being moved (AlterReplicaLogDirs) shows twice: its current log, and
its future log in the target directory with ``is_future_key`` (v1+) and its lag
behind the current log's end.

AlterReplicaLogDirs names, per absolute directory path, the partitions to move
there; the ReplicaManager answers each (``alter_replica_log_dirs``) and the
``LogDirMover`` does the moving in the background. The answer groups the
partitions by topic.

Kafka asks for Describe on the cluster to describe: without it the answer is
empty, with CLUSTER_AUTHORIZATION_FAILED at the top from v3 (v0-v2 have nowhere
to put it). Moving needs Alter on the cluster: without it every partition
answers CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.replica_manager import LogDirDescription
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.message_types import (
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsResponseResultsPartitions,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponseResults,
    DescribeLogDirsResponseResultsTopicsPartitions,
)


class LogDirs(Protocol):
    """The log directories and what they hold (``ReplicaManager``)."""

    def describe_log_dirs(self, wanted: set[tuple[str, int]] | None
                          ) -> list[LogDirDescription]: ...

    def alter_replica_log_dirs(self, wanted: Mapping[tuple[str, int], str]
                               ) -> dict[tuple[str, int], ErrorCode]: ...


class DescribeLogDirsHandler:
    """ApiKey.DESCRIBE_LOG_DIRS: see the module docstring."""

    def __init__(self, log_dirs: LogDirs, authorizer: Authorizer = ALLOW_EVERYONE):
        self.log_dirs = log_dirs
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: DescribeLogDirsRequest
                 ) -> DescribeLogDirsResponse:
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"throttle_time_ms": 0, "results": [],
                    "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        topics = request["topics"]
        wanted = None if topics is None else {
            (t["topic"], index) for t in topics for index in t["partitions"]}
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "results": [_result(d) for d in self.log_dirs.describe_log_dirs(wanted)]}


class AlterReplicaLogDirsHandler:
    """ApiKey.ALTER_REPLICA_LOG_DIRS: see the module docstring."""

    def __init__(self, log_dirs: LogDirs, authorizer: Authorizer = ALLOW_EVERYONE):
        self.log_dirs = log_dirs
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: AlterReplicaLogDirsRequest
                 ) -> AlterReplicaLogDirsResponse:
        wanted = {(topic["name"], index): entry["path"]
                  for entry in request["dirs"] for topic in entry["topics"]
                  for index in topic["partitions"]}
        if self.authorizer.authorize(context, AclOperation.ALTER, ResourceType.CLUSTER,
                                     CLUSTER_NAME):
            errors = self.log_dirs.alter_replica_log_dirs(wanted)
        else:
            errors = dict.fromkeys(wanted, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        by_topic: dict[str, list[AlterReplicaLogDirsResponseResultsPartitions]] = {}
        for (topic, index), code in errors.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": index, "error_code": code})
        return {"throttle_time_ms": 0, "results": [
            {"topic_name": topic, "partitions": partitions}
            for topic, partitions in by_topic.items()]}


def _result(described: LogDirDescription) -> DescribeLogDirsResponseResults:
    topics: dict[str, list[DescribeLogDirsResponseResultsTopicsPartitions]] = {}
    entries = [(key, sizes, False) for key, sizes in described.partitions.items()] + \
        [(key, sizes, True) for key, sizes in described.futures.items()]
    for (topic, index), (size, lag), future in sorted(entries):
        topics.setdefault(topic, []).append({
            "partition_index": index, "partition_size": size, "offset_lag": lag,
            "is_future_key": future})
    return {"error_code": described.error_code, "log_dir": described.path,
            "topics": [{"name": name, "partitions": partitions}
                       for name, partitions in topics.items()],
            "total_bytes": described.total_bytes, "usable_bytes": described.usable_bytes}
