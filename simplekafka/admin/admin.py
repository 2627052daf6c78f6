"""``Admin``: create, delete, list and describe topics; describe the cluster; manage groups
and ACLs.

Topic creation and deletion go to the controller (named in Metadata), as in
ZooKeeper-mode Kafka; if the controller moved meanwhile (NOT_CONTROLLER) the
metadata is refreshed and the request retried. Creating a topic returns once
the controller accepted it; with ``wait=True`` (the default) it also waits
until every partition has a leader, so a producer can use it right away.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from simplekafka.admin import acls, configs, groups, users
from simplekafka.client.client import Deadline, KafkaClient
from simplekafka.client.connection import Body, BodyFactory
from simplekafka.client.errors import KafkaError, KafkaTimeoutError, error_for
from simplekafka.protocol.acls import AclBinding, AclBindingFilter
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.structs import Node, PartitionMetadata


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: name, partition count, replication factor, Kafka-style configs."""

    name: str
    num_partitions: int = 1
    replication_factor: int = 1
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicDescription:
    """A topic as the cluster describes it."""

    name: str
    partitions: list[PartitionMetadata]
    is_internal: bool = False


@dataclass(frozen=True)
class ClusterDescription:
    """Who is in the cluster and who controls it."""

    cluster_id: str | None
    controller_id: int
    brokers: list[Node]


@dataclass(frozen=True)
class LogDirDescription:
    """One broker's log directory (DescribeLogDirs): the partitions it holds as
    {(topic, partition): (size in bytes, offset lag)}, and its file system's space
    (-1: the broker did not say)."""

    path: str
    partitions: dict[tuple[str, int], tuple[int, int]]
    total_bytes: int = -1
    usable_bytes: int = -1
    error: KafkaError | None = None


class Admin:
    """Administrative operations on topics and the cluster."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str] = "localhost:9092",
        *,
        client_id: str = "simplekafka-admin",
        request_timeout_ms: int = 30_000,
        client: KafkaClient | None = None,
    ) -> None:
        self.request_timeout_ms = request_timeout_ms
        self._owns_client = client is None
        self.client = client or KafkaClient(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms
        )

    # ----- topics ----------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        num_partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, str] | None = None,
        wait: bool = True,
        timeout_ms: int | None = None,
    ) -> None:
        """Create one topic; raises ``TopicAlreadyExistsError`` etc. by name."""
        self.create_topics(
            [NewTopic(name, num_partitions, replication_factor, dict(config or {}))],
            wait=wait,
            timeout_ms=timeout_ms,
        )

    def create_topics(
        self, topics: Iterable[NewTopic], wait: bool = True, timeout_ms: int | None = None
    ) -> None:
        """Create topics at the controller; the first per-topic error is raised."""
        topics = list(topics)
        for topic in topics:
            if topic.num_partitions < 1:
                raise ValueError(f"{topic.name}: num_partitions must be at least 1")
            if topic.replication_factor < 1:
                raise ValueError(f"{topic.name}: replication_factor must be at least 1")
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        body = {
            "topics": [
                {
                    "name": t.name,
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": str(v)} for k, v in t.config.items()],
                }
                for t in topics
            ],
            "timeout_ms": timeout_ms,
            "validate_only": False,
        }
        answer = self._to_controller(ApiKey.CREATE_TOPICS, body, timeout_ms)
        for result in answer.topics:
            if result.error_code:
                raise error_for(
                    result.error_code,
                    getattr(result, "error_message", None) or f"creating topic {result.name!r}",
                )
        if wait:
            self._wait_for_topics({t.name: t.num_partitions for t in topics}, timeout_ms)

    def _wait_for_topics(self, expected: dict[str, int], timeout_ms: int) -> None:
        deadline = Deadline(timeout_ms / 1000)
        while True:
            snapshot = self.client.refresh_metadata(None, timeout_ms)
            missing = []
            for name, count in expected.items():
                meta = snapshot.topics.get(name)
                if (
                    meta is None
                    or meta.error_code
                    or len(meta.partitions) < count
                    or any(p.leader < 0 for p in meta.partitions.values())
                ):
                    missing.append(name)
            if not missing:
                return
            if deadline.expired:
                raise KafkaTimeoutError(
                    f"topics {', '.join(missing)} were created but have no leaders "
                    f"after {timeout_ms} ms"
                )
            time.sleep(deadline.remaining(0.05))

    def create_partitions(
        self, counts: Mapping[str, int], wait: bool = True, timeout_ms: int | None = None
    ) -> None:
        """Grow topics to ``{topic: new total}`` partitions (CreatePartitions, at the
        controller); the first per-topic error is raised (``InvalidPartitionsError``
        when the count is not larger)."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        body = {"topics": [{"name": name, "count": count, "assignments": None}
                           for name, count in counts.items()],
                "timeout_ms": timeout_ms, "validate_only": False}
        answer = self._to_controller(ApiKey.CREATE_PARTITIONS, body, timeout_ms)
        for result in answer.results:
            if result.error_code:
                raise error_for(result.error_code,
                                result.error_message or f"adding partitions to {result.name!r}")
        if wait:
            self._wait_for_topics(dict(counts), timeout_ms)

    def delete_topics(
        self, names: Iterable[str], wait: bool = True, timeout_ms: int | None = None
    ) -> None:
        """Delete topics at the controller; raises ``UnknownTopicOrPartitionError`` by name."""
        names = list(names)
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        body = {"topic_names": names, "timeout_ms": timeout_ms}
        answer = self._to_controller(ApiKey.DELETE_TOPICS, body, timeout_ms)
        for result in answer.responses:
            if result.error_code:
                raise error_for(result.error_code, f"deleting topic {result.name!r}")
        if wait:
            deadline = Deadline(timeout_ms / 1000)
            while True:
                snapshot = self.client.refresh_metadata(None, timeout_ms)
                if not any(n in snapshot.topics for n in names):
                    return
                if deadline.expired:
                    raise KafkaTimeoutError(f"topics {names} still listed after {timeout_ms} ms")
                time.sleep(deadline.remaining(0.05))

    def delete_topic(self, name: str, wait: bool = True, timeout_ms: int | None = None) -> None:
        self.delete_topics([name], wait=wait, timeout_ms=timeout_ms)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        """Names of the topics in the cluster, sorted."""
        snapshot = self.client.refresh_metadata(None, self.request_timeout_ms)
        return sorted(
            name
            for name, meta in snapshot.topics.items()
            if not meta.error_code and (include_internal or not meta.is_internal)
        )

    def describe_topics(self, names: Iterable[str] | None = None) -> dict[str, TopicDescription]:
        """Partitions, leaders, replicas and ISRs of the named topics (all if None).

        Raises ``UnknownTopicOrPartitionError`` for a name the cluster does not have.
        """
        snapshot = self.client.refresh_metadata(None, self.request_timeout_ms)
        wanted = sorted(snapshot.topics) if names is None else list(names)
        result = {}
        for name in wanted:
            meta = snapshot.topics.get(name)
            if meta is None:
                raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r}")
            if meta.error_code:
                raise error_for(meta.error_code, f"topic {name!r}")
            partitions = [meta.partitions[p] for p in sorted(meta.partitions)]
            result[name] = TopicDescription(name, partitions, meta.is_internal)
        return result

    def describe_cluster(self) -> ClusterDescription:
        """The brokers and the controller, from a fresh Metadata request."""
        snapshot = self.client.refresh_metadata(None, self.request_timeout_ms)
        brokers = [snapshot.brokers[n] for n in sorted(snapshot.brokers)]
        return ClusterDescription(snapshot.cluster_id, snapshot.controller_id, brokers)

    def describe_log_dirs(self, partitions: Mapping[str, Iterable[int]] | None = None,
                          brokers: Iterable[int] | None = None,
                          ) -> dict[int, list[LogDirDescription]]:
        """Each broker's log directories (DescribeLogDirs) with the partitions they hold:
        ``{topic: [partitions]}``, None for every partition; every broker unless named.
        A topic's size on disk is the sum over the brokers of its partitions' sizes."""
        self.client.refresh_metadata(None, self.request_timeout_ms)
        wanted = None if partitions is None else [
            {"topic": t, "partitions": sorted(set(p))} for t, p in partitions.items()]
        found = {}
        for broker in sorted(self.client.metadata.brokers) if brokers is None else brokers:
            answer = self.client.request(broker, ApiKey.DESCRIBE_LOG_DIRS, {"topics": wanted},
                                         self.request_timeout_ms)
            if getattr(answer, "error_code", 0):
                raise error_for(answer.error_code, f"describing broker {broker}'s log dirs")
            found[broker] = [LogDirDescription(
                r.log_dir, {(t.name, p.partition_index): (p.partition_size, p.offset_lag)
                            for t in r.topics for p in t.partitions},
                getattr(r, "total_bytes", -1), getattr(r, "usable_bytes", -1),
                error_for(r.error_code, r.log_dir) if r.error_code else None)
                for r in answer.results]
        return found

    def elect_leaders(self, partitions: Mapping[str, Iterable[int]] | None = None,
                      timeout_ms: int | None = None, election_type: str = "preferred",
                      ) -> dict[tuple[str, int], KafkaError | None]:
        """Leader election (ElectLeaders): ``{topic: [partitions]}``, None for all.

        ``election_type`` "preferred": move leadership to the first replica; per
        partition None when it leads now, else the error (``ElectionNotNeededError``:
        it already did; ``PreferredLeaderNotAvailableError``: not live or not in
        sync; ``UnknownTopicOrPartitionError``). "unclean": give partitions without
        a live leader one, out-of-sync replicas allowed (``ElectionNotNeededError``:
        the leader is live; ``EligibleLeadersNotAvailableError``: no replica is).
        """
        types = {"preferred": 0, "unclean": 1}
        if election_type not in types:
            raise ValueError(f"election_type is preferred or unclean, not {election_type!r}")
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        wanted = None if partitions is None else [
            {"topic": t, "partitions": sorted(set(p))} for t, p in partitions.items()]

        def body(version: int) -> dict:
            if version < 1 and election_type != "preferred":
                raise error_for(ErrorCode.UNSUPPORTED_VERSION,
                                "the broker offers ElectLeaders v0 only: preferred elections")
            return {"election_type": types[election_type], "topic_partitions": wanted,
                    "timeout_ms": timeout_ms}

        answer = self._to_controller(ApiKey.ELECT_LEADERS, body, timeout_ms + 5_000)
        if getattr(answer, "error_code", 0):
            raise error_for(answer.error_code, "electing leaders")
        return {(t.topic, r.partition_id):
                (error_for(r.error_code, r.error_message or f"{t.topic}-{r.partition_id}")
                 if r.error_code else None)
                for t in answer.replica_election_results for r in t.partition_result}

    # ----- configs (simplekafka.admin.configs) -------------------------------------

    def describe_configs(self, kind: str, name: str) -> dict[str, configs.ConfigEntry]:
        """A topic's (``kind="topic"``) or a broker's (``"broker"``, name = its id, ``""``
        for the cluster default) configs: value, source, read-only, by key."""
        return configs.describe_configs(self.client, kind, name, self.request_timeout_ms)

    def alter_configs(self, kind: str, name: str, set_configs: Mapping[str, str] | None = None,
                      delete: Iterable[str] = ()) -> None:
        """Set some keys and delete others (IncrementalAlterConfigs); applied by every
        broker without a restart."""
        configs.alter_configs(self.client, kind, name, dict(set_configs or {}), list(delete),
                              self.request_timeout_ms)

    # ----- client quotas (DescribeClientQuotas, AlterClientQuotas) ---------------------

    def describe_client_quotas(self, match: Mapping[str, str | None] | None = None,
                               any_name: Iterable[str] = (), strict: bool = False,
                               ) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """Quotas by entity, an entity being its (type, name) pairs ("user", "client-id"; a
        None name is the default). ``match``: types whose name must be this one (None: the
        default); ``any_name``: types that must have some name; ``strict``: no other type."""
        components = [{"entity_type": t, "match_type": 0 if n is not None else 1, "match": n}
                      for t, n in (match or {}).items()]
        components += [{"entity_type": t, "match_type": 2, "match": None} for t in any_name]
        answer = self.client.request(self.client.controller_id(self.request_timeout_ms),
                                     ApiKey.DESCRIBE_CLIENT_QUOTAS,
                                     {"components": components, "strict": strict},
                                     self.request_timeout_ms)
        if answer.error_code:
            raise error_for(answer.error_code, answer.error_message or "describing quotas")
        return {tuple((e.entity_type, e.entity_name) for e in entry.entity):
                {v.key: v.value for v in entry.values} for entry in answer.entries or []}

    def alter_client_quotas(self, entity: Mapping[str, str | None],
                            set_values: Mapping[str, float] | None = None,
                            remove: Iterable[str] = (), validate_only: bool = False) -> None:
        """Set and remove one entity's quotas (``{"user": "alice", "client-id": None}`` is
        alice's default client id); raises the broker's error."""
        ops = [{"key": k, "value": float(v), "remove": False}
               for k, v in (set_values or {}).items()]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
        body = {"entries": [{"entity": [{"entity_type": t, "entity_name": n}
                                        for t, n in entity.items()], "ops": ops}],
                "validate_only": validate_only}
        answer = self.client.request(self.client.controller_id(self.request_timeout_ms),
                                     ApiKey.ALTER_CLIENT_QUOTAS, body, self.request_timeout_ms)
        for entry in answer.entries:
            if entry.error_code:
                raise error_for(entry.error_code, entry.error_message or "altering quotas")

    def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Iterable[int] | None],
        timeout_ms: int | None = None,
    ) -> dict[tuple[str, int], KafkaError | None]:
        """Start moving partitions to ``{(topic, partition): [replicas]}``, or cancel a move
        with None (AlterPartitionReassignments); per partition None when accepted, else
        the error."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        by_topic: dict[str, list[dict]] = {}
        for (topic, partition), replicas in sorted(targets.items()):
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition,
                 "replicas": None if replicas is None else list(replicas)})
        body = {"timeout_ms": timeout_ms,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}
        answer = self._to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, timeout_ms)
        if answer.error_code:
            raise error_for(answer.error_code, answer.error_message or "reassigning")
        return {(t.name, p.partition_index):
                (error_for(p.error_code, p.error_message) if p.error_code else None)
                for t in answer.responses for p in t.partitions}

    def list_partition_reassignments(self, timeout_ms: int | None = None
                                     ) -> dict[tuple[str, int], dict[str, list[int]]]:
        """Ongoing moves (ListPartitionReassignments): per partition its ``replicas``,
        ``adding_replicas`` and ``removing_replicas``."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        answer = self._to_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                     {"timeout_ms": timeout_ms, "topics": None}, timeout_ms)
        if answer.error_code:
            raise error_for(answer.error_code, answer.error_message or "listing reassignments")
        return {(t.name, p.partition_index): {"replicas": list(p.replicas),
                                              "adding_replicas": list(p.adding_replicas),
                                              "removing_replicas": list(p.removing_replicas)}
                for t in answer.topics for p in t.partitions}

    # ----- ACLs (simplekafka.admin.acls) ------------------------------------------

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Store ACLs (CreateAcls); every broker's authorizer applies them."""
        acls.create_acls(self.client, bindings, self.request_timeout_ms)

    def describe_acls(self, wanted: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACLs a filter selects (all by default)."""
        return acls.describe_acls(self.client, wanted or AclBindingFilter(),
                                  self.request_timeout_ms)

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[AclBinding]:
        """Delete the ACLs the filters select; returns what was deleted."""
        return acls.delete_acls(self.client, filters, self.request_timeout_ms)

    # ----- SCRAM users (simplekafka.admin.users) ----------------------------------

    def describe_users(self, names: Iterable[str] | None = None
                       ) -> dict[str, list[users.ScramCredentialInfo]]:
        """Users with SCRAM credentials: mechanisms and iterations (never keys)."""
        return users.describe_users(self.client, None if names is None else list(names),
                                    self.request_timeout_ms)

    def upsert_user(self, name: str, password: str, mechanism: str = "SCRAM-SHA-256",
                    iterations: int = 4096) -> None:
        """Add or replace a user's SCRAM credential (salted here; the password stays)."""
        users.upsert_user(self.client, name, mechanism, password, iterations,
                          self.request_timeout_ms)

    def delete_user(self, name: str, mechanism: str = "SCRAM-SHA-256") -> None:
        """Remove a user's credential for one mechanism."""
        users.delete_user(self.client, name, mechanism, self.request_timeout_ms)

    # ----- consumer groups (simplekafka.admin.groups) ----------------------------

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, protocol type) of every group, from every broker."""
        return groups.list_groups(self.client, self.request_timeout_ms)

    def describe_group(self, group_id: str) -> groups.GroupDescription:
        """State, members and assignments, committed offsets, end offsets and lag."""
        return groups.describe_group(self.client, group_id, self.request_timeout_ms)

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        """Delete groups without members, with their committed offsets."""
        groups.delete_groups(self.client, list(group_ids), self.request_timeout_ms)

    def reset_offsets(self, group_id: str, topic: str, to: str | int,
                      partitions: Iterable[int] | None = None) -> dict:
        """Commit "earliest", "latest" or an offset for an inactive group; returns them."""
        return groups.reset_offsets(self.client, group_id, topic, to, partitions,
                                    self.request_timeout_ms)

    # ----- plumbing --------------------------------------------------------------

    def _to_controller(self, api_key: ApiKey, body: Body | BodyFactory, timeout_ms: int):
        def attempt(deadline: Deadline):
            controller = self.client.controller_id(max(1, int(deadline.remaining() * 1000)))
            answer = self.client.request(
                controller, api_key, body, timeout_ms=max(1, int(deadline.remaining() * 1000))
            )
            results = (getattr(answer, "topics", None) or getattr(answer, "responses", None)
                       or getattr(answer, "results", None) or [])
            for result in results:
                if getattr(result, "error_code", None) == ErrorCode.NOT_CONTROLLER:
                    raise error_for(ErrorCode.NOT_CONTROLLER, "controller moved")
            return answer

        try:
            return self.client.call_with_retries(attempt, timeout_ms)
        except KafkaError:
            raise

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
