"""Stage 6: the admin API. Topics (create, delete, list, describe) and the cluster."""

from simplekafka.admin.admin import Admin, ClusterDescription, NewTopic, TopicDescription

__all__ = ["Admin", "ClusterDescription", "NewTopic", "TopicDescription"]
