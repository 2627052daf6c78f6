"""DescribeLogDirs: which log directory holds each partition, and how big it is.

Every broker answers for itself (an admin client asks each broker it cares
about): each configured ``log.dirs`` entry by its absolute path, with the
partitions whose logs it holds (all of them, or those the request names),
their size in bytes and their offset lag (how far the log end is behind the
high watermark: 0 on a leader, the catching up still to do on a follower),
and from v4 the file system's total and usable bytes. The lookups are the
ReplicaManager's (``describe_log_dirs``); this module shapes the answer.

Kafka asks for Describe on the cluster: without it the answer is empty, with
CLUSTER_AUTHORIZATION_FAILED at the top from v3 (v0-v2 have nowhere to put it).
"""

from __future__ import annotations

from typing import Protocol

from simplekafka.broker.apis.collaborators import Authorizer
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.replica_manager import LogDirDescription
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.message_types import (
    DescribeLogDirsResponseResults,
    DescribeLogDirsResponseResultsTopicsPartitions,
)


class LogDirs(Protocol):
    """The log directories and what they hold (``ReplicaManager``)."""

    def describe_log_dirs(self, wanted: set[tuple[str, int]] | None
                          ) -> list[LogDirDescription]: ...


class DescribeLogDirsHandler:
    """ApiKey.DESCRIBE_LOG_DIRS: see the module docstring."""

    def __init__(self, log_dirs: LogDirs, authorizer: Authorizer = ALLOW_EVERYONE):
        self.log_dirs = log_dirs
        self.authorizer = authorizer

    def __call__(self, context: RequestContext, request: Struct) -> dict:
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"throttle_time_ms": 0, "results": [],
                    "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        wanted = None if request.topics is None else {
            (t.topic, index) for t in request.topics for index in t.partitions}
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "results": [_result(d) for d in self.log_dirs.describe_log_dirs(wanted)]}


def _result(described: LogDirDescription) -> DescribeLogDirsResponseResults:
    topics: dict[str, list[DescribeLogDirsResponseResultsTopicsPartitions]] = {}
    for (topic, index), (size, lag) in sorted(described.partitions.items()):
        topics.setdefault(topic, []).append({
            "partition_index": index, "partition_size": size, "offset_lag": lag,
            "is_future_key": False})
    return {"error_code": described.error_code, "log_dir": described.path,
            "topics": [{"name": name, "partitions": partitions}
                       for name, partitions in topics.items()],
            "total_bytes": described.total_bytes, "usable_bytes": described.usable_bytes}
