"""Stage 6: the admin API. Topics (create, delete, list, describe), the cluster, groups."""

from simplekafka.admin.admin import (
    Admin,
    ClusterDescription,
    LogDirDescription,
    NewTopic,
    TopicDescription,
)
from simplekafka.admin.groups import GroupDescription, MemberDescription, PartitionOffsets

__all__ = ["Admin", "ClusterDescription", "GroupDescription", "LogDirDescription",
           "MemberDescription", "NewTopic", "PartitionOffsets", "TopicDescription"]
