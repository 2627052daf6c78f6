"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: topic and broker configs in ZooKeeper.

As in ZooKeeper-mode Kafka, any broker answers: it reads or writes
``/config/topics/<t>`` and ``/config/brokers/<id|<default>>`` on a worker
thread (``coordination.configs``), and a write also leaves a
``/config/changes`` notification that every broker's ConfigChangeListener
(``broker/config_changes.py``) applies at once. A topic's value is its
override, else the broker's default for it; a broker's value is its dynamic
override (its own, then the cluster default), else its static config.

AlterConfigs replaces an entity's whole set of overrides (Kafka's semantics,
and why it was deprecated); IncrementalAlterConfigs sets, deletes, appends to
or subtracts from single keys. Broker configs are checked as Kafka 3.9's
``DynamicBrokerConfig`` checks them (``broker_config_problem``): Kafka's
dynamic keys are stored (the log defaults of ``DYNAMIC_BROKER_KEYS`` and the
replication throttles are applied, the others only described), its static
keys answer INVALID_REQUEST, and a key Kafka does not know is stored as it
is. Synonyms are named and ordered as Kafka names and orders them: a topic
key's default by the broker key that sets it (``log.retention.ms`` for
``retention.ms``).

Password-type keys (Kafka's PASSWORD configs: ``sasl.jaas.config``, the
``ssl.*.password`` keys, each under any ``listener.name.<l>.`` prefix) and keys
of unknown type are answered ``is_sensitive`` with a null value, to every
principal, super users included, as Kafka answers them (``config.is_sensitive``).

Describing needs DescribeConfigs, altering AlterConfigs, on the topic (else
TOPIC_AUTHORIZATION_FAILED) or, for broker configs, on the cluster (else
CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from twisted.internet import defer
from twisted.python.failure import Failure

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.apis.topics import TOPIC_CONFIG_KEYS, _bad_config_value
from simplekafka.broker.config import (
    DEFAULTS_DIFFERENT_FROM_KAFKA,
    KAFKA_DYNAMIC_KEYS,
    KAFKA_LOG_DYNAMIC_KEYS,
    KAFKA_PER_BROKER_KEYS,
    KAFKA_SSL_RECONFIGURABLE_KEYS,
    BrokerConfig,
    acted_on,
    config_type,
    is_sensitive,
    redacted,
)
from simplekafka.broker.config import KEYS as BROKER_KEYS
from simplekafka.broker.dispatch import RequestContext
from simplekafka.broker.kafka_configs import CONFIG_TYPES, KAFKA_BROKER_CONFIGS, area, check_value
from simplekafka.broker.metadata_cache import MetadataCache
from simplekafka.broker.replication_quota import (
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    RATE_KEYS,
    ThrottleConfigError,
    parse_rate,
)
from simplekafka.broker.security.authorizer import ALLOW_EVERYONE
from simplekafka.broker.security.listeners import LISTENER_PREFIX
from simplekafka.coordination.configs import (
    BROKERS,
    DEFAULT_BROKER,
    TOPICS,
    read_entity_config,
    write_entity_config,
)
from simplekafka.coordination.topics import TopicError, validate_topic_name
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.errors import ErrorCode, KafkaError
from simplekafka.protocol.message_types import (
    AlterConfigsRequest,
    AlterConfigsRequestResources,
    AlterConfigsResponse,
    AlterConfigsResponseResponses,
    DescribeConfigsRequest,
    DescribeConfigsRequestResources,
    DescribeConfigsResponse,
    DescribeConfigsResponseResults,
    DescribeConfigsResponseResultsConfigs,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestResources,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

# ConfigSource (DescribeConfigs v1+)
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

# Each topic key and the broker key that gives its default (Kafka's TopicConfigSynonyms).
TOPIC_BROKER_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "max.message.bytes": "message.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "preallocate": "log.preallocate",
    "message.format.version": "log.message.format.version",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
}

# The broker's log defaults Kafka changes at run time, and the topic key each sets (all of
# Kafka's but log.message.format.version, which Kafka keeps static).
DYNAMIC_BROKER_KEYS: dict[str, str] = {
    broker: topic for topic, broker in TOPIC_BROKER_SYNONYMS.items()
    if broker in KAFKA_LOG_DYNAMIC_KEYS}

# Broker keys changed at run time that are no log default (replication_quota.py).
DYNAMIC_BROKER_ONLY_KEYS = frozenset(RATE_KEYS)

# Topic keys the broker has no setting of its own for: Kafka's defaults.
_FIXED_TOPIC_DEFAULTS = {
    "cleanup.policy": "delete", "compression.type": "producer",
    "delete.retention.ms": "86400000", "file.delete.delay.ms": "60000",
    "min.cleanable.dirty.ratio": "0.5",
    "preallocate": "false", "message.format.version": "3.0-IV1",
    LEADER_REPLICAS: "", FOLLOWER_REPLICAS: "",
}
# The dynamic broker keys SimpleKafka applies at run time: the log defaults it acts on (a
# dynamic unclean.leader.election.enable is stored, not read by the controller) and the
# replication throttles. Other dynamic keys are stored and described only.
APPLIED_AT_RUN_TIME = frozenset(
    k for k in DYNAMIC_BROKER_KEYS if acted_on(k) and k != "unclean.leader.election.enable"
) | DYNAMIC_BROKER_ONLY_KEYS
# Kafka's brokerConfigSynonyms: the names one broker setting may be given under, first wins.
_SYNONYMS = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}
_LIST_KEYS = frozenset({"cleanup.policy", "log.cleanup.policy"})
_UNBOUNDED = str(2**63 - 1)


# An alter request's resource: AlterConfigs' or IncrementalAlterConfigs'.
_Resource = TypeVar("_Resource", AlterConfigsRequestResources,
                    IncrementalAlterConfigsRequestResources)


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class ConfigApis:
    """The three config handlers; ``dynamic_broker`` is the broker's current dynamic
    overrides (cluster default merged with its own), kept by its ConfigChangeListener."""

    def __init__(self, broker_id: int, config: BrokerConfig, cache: MetadataCache,
                 reactor: Reactor,
                 zookeeper: ZooKeeperHandle,
                 dynamic_broker: Callable[[], Mapping[str, tuple[str, int]]],
                 authorizer: Authorizer = ALLOW_EVERYONE,
                 dynamic_default: Callable[[], Mapping[str, str]] | None = None):
        self.authorizer = authorizer
        # the cluster default alone: the merged view hides it under a per-broker override,
        # and Kafka's synonyms list both
        self.dynamic_default = dynamic_default
        self.broker_id = broker_id
        self.config = config
        self.cache = cache
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.dynamic_broker = dynamic_broker

    # -- defaults -------------------------------------------------------------------------

    def topic_defaults(self) -> dict[str, tuple[str | None, int]]:
        """Every topic key's default here: (value, ConfigSource)."""
        defaults: dict[str, tuple[str | None, int]] = {
            k: (v, DEFAULT_CONFIG) for k, v in _FIXED_TOPIC_DEFAULTS.items()}
        for key, value in self.config.log_config_keys().items():
            defaults[key] = (_text(value) if value is not None else _UNBOUNDED, DEFAULT_CONFIG)
        defaults["unclean.leader.election.enable"] = (
            _text(self.config["unclean.leader.election.enable"]), DEFAULT_CONFIG)
        for broker_key, (value, source) in self.dynamic_broker().items():
            topic_key = DYNAMIC_BROKER_KEYS.get(broker_key)
            if topic_key is not None:
                defaults[topic_key] = (value, source)
        for key, (value, _source) in defaults.items():
            chain = self.topic_synonyms(key)
            defaults[key] = (value, chain[0][2] if chain else DEFAULT_CONFIG)
        return defaults

    def topic_synonyms(self, key: str) -> list[tuple[str, str | None, int]]:
        """Where a topic key's default comes from, as Kafka lists it: the broker key that
        sets it (``log.retention.ms`` for ``retention.ms``) at each level that has it."""
        broker_key = TOPIC_BROKER_SYNONYMS.get(key)
        return [] if broker_key is None else self.broker_synonyms(broker_key)

    def broker_synonyms(self, name: str) -> list[tuple[str, str | None, int]]:
        """Kafka's ``configSynonyms``: ``name`` and the other names of its setting (``.ms``,
        ``.minutes``, ``.hours``) as set per broker (DYNAMIC_BROKER_CONFIG), as the cluster
        default (DYNAMIC_DEFAULT_BROKER_CONFIG), in the broker's configuration
        (STATIC_BROKER_CONFIG) and by Kafka's default (DEFAULT_CONFIG), in that order;
        entries before the first one named ``name`` are dropped, as Kafka drops them."""
        names = next((group for group in _SYNONYMS.values() if name in group), (name,))
        own: dict[str, str] = {}
        cluster: dict[str, str] = {}
        for key, (value, source) in self.dynamic_broker().items():
            (own if source == DYNAMIC_BROKER_CONFIG else cluster)[key] = value
        if self.dynamic_default is not None:
            cluster = dict(self.dynamic_default())
        chain: list[tuple[str, str | None, int]] = []
        chain += [(n, own[n], DYNAMIC_BROKER_CONFIG) for n in names if n in own]
        chain += [(n, cluster[n], DYNAMIC_DEFAULT_BROKER_CONFIG) for n in names if n in cluster]
        chain += [(n, self._static_value(n), STATIC_BROKER_CONFIG)
                  for n in names if self._given(n)]
        for n in names:
            default = _kafka_default(n)
            if default is not None:
                chain.append((n, default, DEFAULT_CONFIG))
        while chain and chain[0][0] != name:
            chain.pop(0)
        return chain

    def _given(self, key: str) -> bool:
        """Whether the broker's configuration sets ``key`` (a STATIC_BROKER_CONFIG)."""
        return key in self.config.given_keys

    def _static_value(self, key: str) -> str | None:
        """The value the broker's configuration gives ``key``."""
        if key in BROKER_KEYS:
            return _text(self.config[key])
        return self.config.kafka_values.get(key)

    def _all_settings(self) -> Mapping[str, object]:
        """Every setting of the broker's configuration, per-listener ones included."""
        return self.config.as_dict()

    def _refusal(self, context: RequestContext, kind: int, name: str,
                 operation: AclOperation) -> ErrorCode | None:
        """The authorization error for ``operation`` on the resource (None: allowed)."""
        authorize = self.authorizer.authorize
        if kind == TOPIC_RESOURCE:
            if not authorize(context, operation, ResourceType.TOPIC, name):
                return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif kind == BROKER_RESOURCE:
            if not authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME):
                return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return None

    # -- DescribeConfigs ------------------------------------------------------------------

    def describe_configs(self, context: RequestContext, request: DescribeConfigsRequest
                         ) -> defer.Deferred:
        version = context.api_version
        synonyms = version >= 1 and request["include_synonyms"]
        documented = version >= 3 and request["include_documentation"]
        work: list[defer.Deferred] = []
        for resource in request["resources"]:
            kind, name = resource["resource_type"], resource["resource_name"]
            refused = self._refusal(context, kind, name, AclOperation.DESCRIBE_CONFIGS)
            if refused is None:
                work.append(self._describe_one(resource, version, synonyms, documented))
                continue
            refusal: DescribeConfigsResponseResults = {
                "error_code": refused, "error_message": None, "resource_type": kind,
                "resource_name": name, "configs": []}
            work.append(defer.succeed(refusal))
        return defer.gatherResults(work, consumeErrors=True).addCallback(_described)

    def _describe_one(self, resource: DescribeConfigsRequestResources, version: int,
                      synonyms: bool, documented: bool = False) -> defer.Deferred:
        kind, name = resource["resource_type"], resource["resource_name"]
        keys = resource["configuration_keys"]
        wanted = None if keys is None else set(keys)

        def answer(code: ErrorCode, message: str | None = None,
                   entries: list[DescribeConfigsResponseResultsConfigs] | None = None
                   ) -> DescribeConfigsResponseResults:
            return {"error_code": code, "error_message": message, "resource_type": kind,
                    "resource_name": name, "configs": entries or []}

        def entry(key: str, value: str | None, source: int, read_only: bool,
                  chain: list[tuple[str, str | None, int]], sensitive: bool = False
                  ) -> DescribeConfigsResponseResultsConfigs:
            # A sensitive value (a password, a JAAS text) is answered null, in the synonyms
            # too, to every principal: Kafka's rule, super users included.
            broker_key = key if kind == BROKER_RESOURCE else TOPIC_BROKER_SYNONYMS.get(key, "")
            base = key[len(LISTENER_PREFIX):].partition(".")[2] \
                if key.startswith(LISTENER_PREFIX) else broker_key
            return {"name": key, "value": None if sensitive else value, "read_only": read_only,
                    "is_default": source in (DEFAULT_CONFIG, STATIC_BROKER_CONFIG),
                    "config_source": source, "is_sensitive": sensitive,
                    "synonyms": [{"name": n, "value": None if sensitive else v, "source": s}
                                 for n, v, s in chain]
                    if synonyms else [], "config_type": CONFIG_TYPES[config_type(base)],
                    "documentation": broker_documentation(base)
                    if documented and kind == BROKER_RESOURCE and base else None}

        if kind == TOPIC_RESOURCE:
            zk = self.zookeeper()
            try:
                validate_topic_name(name)
            except TopicError as exc:
                return defer.succeed(answer(exc.error_code, str(exc)))
            if zk is None:
                return defer.succeed(answer(ErrorCode.COORDINATOR_NOT_AVAILABLE))

            def read() -> dict[str, str] | None:
                if not zk.exists(ZkPaths.topic(name)):
                    return None
                return read_entity_config(zk, TOPICS, name)

            def build(overrides: dict[str, str] | None) -> DescribeConfigsResponseResults:
                if overrides is None:
                    return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"topic {name!r} does not exist")
                defaults = self.topic_defaults()
                entries: list[DescribeConfigsResponseResultsConfigs] = []
                for key in sorted(set(defaults) | set(overrides)):
                    if wanted is not None and key not in wanted:
                        continue
                    default, source = defaults.get(key, (None, DEFAULT_CONFIG))
                    chain = self.topic_synonyms(key)
                    # A key of unknown type (written to ZooKeeper by hand) is hidden, as
                    # Kafka hides it; a topic has no password-type key of its own.
                    hidden = key not in TOPIC_CONFIG_KEYS and key not in defaults
                    if key in overrides:
                        chain.insert(0, (key, overrides[key], DYNAMIC_TOPIC_CONFIG))
                        entries.append(entry(key, overrides[key], DYNAMIC_TOPIC_CONFIG,
                                             False, chain, hidden))
                    else:
                        entries.append(entry(key, default, source, False, chain, hidden))
                return answer(ErrorCode.NONE, None, entries)

            def failed(failure: Failure) -> DescribeConfigsResponseResults:
                log.warning("describing topic %r failed: %s", name, failure.getErrorMessage())
                return answer(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage())

            return in_worker_thread(self.reactor, read).addCallbacks(build, failed)

        if kind == BROKER_RESOURCE:
            if name not in ("", str(self.broker_id)):
                return defer.succeed(answer(ErrorCode.INVALID_REQUEST,
                                            f"broker {name} is not this broker "
                                            f"({self.broker_id}): ask it directly"))
            dynamic = self.dynamic_broker()
            entries: list[DescribeConfigsResponseResultsConfigs] = []
            # Every key: Kafka 3.9's whole broker config set and SimpleKafka's own keys.
            for key in sorted(set(BROKER_KEYS) | set(KAFKA_BROKER_CONFIGS)):
                if wanted is not None and key not in wanted:
                    continue
                chain = self.broker_synonyms(key)
                value: str | None
                if key in dynamic:
                    value = dynamic[key][0]
                elif self._given(key):
                    value = self._static_value(key)
                else:
                    value = _kafka_default(key)
                source = chain[0][2] if chain else DEFAULT_CONFIG
                entries.append(entry(key, value, source, _read_only(key), chain,
                                     is_sensitive(key)))
            # The per-listener settings the broker was given (Kafka lists them too); their
            # passwords and JAAS texts are sensitive like the plain keys.
            settings = self._all_settings()
            for key in sorted(k for k in settings if k.startswith(LISTENER_PREFIX)):
                if (wanted is not None and key not in wanted) or key in dynamic:
                    continue
                value = _text(settings[key])
                entries.append(entry(key, value, STATIC_BROKER_CONFIG, True,
                                     [(key, value, STATIC_BROKER_CONFIG)], is_sensitive(key)))
            # Dynamic keys the broker has no setting of its own for: Kafka's that SimpleKafka
            # stores without acting on them, and keys Kafka does not know (its "custom
            # configs", answered sensitive: their type is unknown).
            for key in sorted(k for k in dynamic
                              if k not in BROKER_KEYS and k not in KAFKA_BROKER_CONFIGS):
                if wanted is not None and key not in wanted:
                    continue
                value, source = dynamic[key]
                chain = self.broker_synonyms(key)
                entries.append(entry(key, value, source, _read_only(key), chain,
                                     is_sensitive(key)))
            return defer.succeed(answer(ErrorCode.NONE, None, entries))

        return defer.succeed(answer(ErrorCode.INVALID_REQUEST,
                                    f"resource type {kind} is not supported"))

    # -- AlterConfigs and IncrementalAlterConfigs -----------------------------------------

    def alter_configs(self, context: RequestContext, request: AlterConfigsRequest
                      ) -> defer.Deferred:
        def change(_current: dict[str, str], resource: AlterConfigsRequestResources
                   ) -> dict[str, str]:
            return {c["name"]: value for c in resource["configs"]
                    if (value := c["value"]) is not None}

        return self._alter(context, request["resources"], request["validate_only"], change)

    def incremental_alter_configs(self, context: RequestContext,
                                  request: IncrementalAlterConfigsRequest) -> defer.Deferred:
        def change(current: dict[str, str], resource: IncrementalAlterConfigsRequestResources
                   ) -> dict[str, str]:
            updated = dict(current)
            for c in resource["configs"]:
                op, key, value = c["config_operation"], c["name"], c["value"]
                if op == SET:
                    if value is None:
                        raise KafkaError(f"{key}: SET needs a value",
                                         error_code=ErrorCode.INVALID_CONFIG)
                    updated[key] = value
                elif op == DELETE:
                    updated.pop(key, None)
                elif op in (APPEND, SUBTRACT):
                    if key not in _LIST_KEYS:
                        raise KafkaError(f"{key} is not a list: APPEND and SUBTRACT "
                                         "apply to list configs only",
                                         error_code=ErrorCode.INVALID_CONFIG)
                    items = [v for v in updated.get(key, "").split(",") if v]
                    given = [v.strip() for v in (value or "").split(",") if v.strip()]
                    if op == APPEND:
                        items += [v for v in given if v not in items]
                    else:
                        items = [v for v in items if v not in given]
                    updated[key] = ",".join(items)
                else:
                    raise KafkaError(f"unknown config operation {op}",
                                     error_code=ErrorCode.INVALID_REQUEST)
            return updated

        return self._alter(context, request["resources"], request["validate_only"], change)

    def _alter(self, context: RequestContext, resources: Sequence[_Resource],
               validate_only: bool, change: Callable[[dict[str, str], _Resource], dict[str, str]]
               ) -> defer.Deferred:
        zk = self.zookeeper()
        refusals = [self._refusal(context, r["resource_type"], r["resource_name"],
                                  AclOperation.ALTER_CONFIGS) for r in resources]

        def one(resource: _Resource) -> AlterConfigsResponseResponses:
            kind, name = resource["resource_type"], resource["resource_name"]
            result: AlterConfigsResponseResponses = {
                "error_code": ErrorCode.NONE, "error_message": None, "resource_type": kind,
                "resource_name": name}
            try:
                if zk is None:
                    raise KafkaError("not connected to ZooKeeper",
                                     error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
                entity_type, entity = self._entity(zk, kind, name)
                updated = change(read_entity_config(zk, entity_type, entity), resource)
                self._validate(entity_type, entity, updated)
                if not validate_only:
                    write_entity_config(zk, entity_type, entity, updated)
                    log.info("config of %s/%s is now %s", entity_type, entity,
                             updated if entity_type == TOPICS else redacted(updated))
            except KafkaError as exc:
                result["error_code"] = exc.error_code or ErrorCode.UNKNOWN_SERVER_ERROR
                result["error_message"] = str(exc)
            except TopicError as exc:
                result["error_code"] = exc.error_code
                result["error_message"] = str(exc)
            except Exception as exc:  # ZooKeeper trouble: this resource fails, not the request
                log.warning("altering %s %r failed: %r", kind, name, exc)
                result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR
                result["error_message"] = str(exc)
            return result

        def work() -> list[AlterConfigsResponseResponses]:
            return [one(r) if refused is None else
                    {"error_code": refused, "error_message": None,
                     "resource_type": r["resource_type"], "resource_name": r["resource_name"]}
                    for r, refused in zip(resources, refusals, strict=True)]

        return in_worker_thread(self.reactor, work).addCallback(_altered)

    def _entity(self, zk: KazooClient, kind: int, name: str) -> tuple[str, str]:
        if kind == TOPIC_RESOURCE:
            validate_topic_name(name)  # TopicError: INVALID_TOPIC_EXCEPTION
            if not zk.exists(ZkPaths.topic(name)):
                raise KafkaError(f"topic {name!r} does not exist",
                                 error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return TOPICS, name
        if kind == BROKER_RESOURCE:
            if name == "":
                return BROKERS, DEFAULT_BROKER
            if not name.isdigit():
                raise KafkaError(f"broker {name!r} is not a broker id",
                                 error_code=ErrorCode.INVALID_REQUEST)
            return BROKERS, name
        raise KafkaError(f"resource type {kind} is not supported",
                         error_code=ErrorCode.INVALID_REQUEST)

    def _validate(self, entity_type: str, entity: str, config: dict[str, str]) -> None:
        if entity_type == TOPICS:
            unknown = sorted(k for k in config if k not in TOPIC_CONFIG_KEYS)
            if unknown:
                raise KafkaError(f"unknown topic config {unknown[0]!r}",
                                 error_code=ErrorCode.INVALID_CONFIG)
            problem = _bad_config_value(config, None)
            if problem:
                raise KafkaError(problem, error_code=ErrorCode.INVALID_CONFIG)
            return
        problem = broker_config_problem(config, per_broker=entity != DEFAULT_BROKER)
        if problem:
            name = "" if entity == DEFAULT_BROKER else entity
            raise KafkaError(f"Invalid config value for resource ConfigResource(type=BROKER, "
                             f"name='{name}'): {problem}", error_code=ErrorCode.INVALID_REQUEST)


def _described(results: list[DescribeConfigsResponseResults]) -> DescribeConfigsResponse:
    return {"throttle_time_ms": 0, "results": results}


def _altered(results: list[AlterConfigsResponseResponses]) -> AlterConfigsResponse:
    """AlterConfigs' answer, and IncrementalAlterConfigs' (the same fields)."""
    return {"throttle_time_ms": 0, "responses": results}


def _kafka_default(key: str) -> str | None:
    """The default of a broker key as DescribeConfigs writes it (None: there is none):
    Kafka's, unless SimpleKafka's differs (DEFAULTS_DIFFERENT_FROM_KAFKA) or the key is
    SimpleKafka's own."""
    kafka = KAFKA_BROKER_CONFIGS.get(key)
    ours = BROKER_KEYS.get(key)
    if ours is not None and (kafka is None or key in DEFAULTS_DIFFERENT_FROM_KAFKA):
        return _text(ours.default)
    return None if kafka is None else kafka.default


def broker_documentation(name: str) -> str:
    """What DescribeConfigs v3+ answers as a broker key's documentation: what it is for,
    whether SimpleKafka acts on it (and on a dynamic change of it), its default where
    SimpleKafka's differs from Kafka's, and how Kafka lets it be changed."""
    kafka = KAFKA_BROKER_CONFIGS.get(name)
    ours = BROKER_KEYS.get(name)
    if ours is None and kafka is None:
        return "Not a broker config Kafka 3.9 or SimpleKafka knows: stored as it is."
    if ours is None:
        text = (f"{area(name)}. SimpleKafka ignores it: accepted, checked and described as "
                "Kafka does, not acted on.")
    elif not acted_on(name):
        text = ours.doc
    else:
        text = ours.doc
        if kafka is not None and kafka.dynamic and name not in APPLIED_AT_RUN_TIME:
            text += (" A dynamic change is stored and described but not applied: SimpleKafka "
                     "acts on the value it started with.")
    if name in DEFAULTS_DIFFERENT_FROM_KAFKA and kafka is not None:
        text += (f" SimpleKafka's default differs from Kafka's ({kafka.default}): "
                 f"{DEFAULTS_DIFFERENT_FROM_KAFKA[name]}.")
    if kafka is None:
        return text + " SimpleKafka's own key: not one of Kafka 3.9's broker configs."
    listener = ", per listener (listener.name.<l>.)" if kafka.per_listener else ""
    return text + f" Kafka: {kafka.type}, {kafka.importance} importance, {kafka.mode}{listener}."


def _read_only(key: str) -> bool:
    """Kafka's ``read_only``: not one of its dynamic broker configs."""
    return key not in KAFKA_DYNAMIC_KEYS and key not in DYNAMIC_BROKER_ONLY_KEYS


def _set_of(keys: set[str]) -> str:
    return f"Set({', '.join(sorted(keys))})"


def broker_config_problem(config: Mapping[str, str], per_broker: bool) -> str | None:
    """Why Kafka's ``DynamicBrokerConfig.validateConfigs`` refuses a broker's (or, without
    ``per_broker``, the cluster default's) dynamic config, None if it takes it.

    Static keys Kafka knows are refused; the SSL keystores and truststores may be changed
    per listener only; listener and SASL settings per broker only; values of the keys
    SimpleKafka knows must parse. A key Kafka does not know is taken as it is (Kafka keeps
    such "custom configs" and passes them to plugins)."""
    names = set(config)
    known = set(BROKER_KEYS) | set(KAFKA_BROKER_CONFIGS)
    static = {k for k in names if k in known and _read_only(k)}
    if static:
        return f"Cannot update these configs dynamically: {_set_of(static)}"
    plain_ssl = names & KAFKA_SSL_RECONFIGURABLE_KEYS
    if plain_ssl:
        return ("These security configs can be dynamically updated only per-listener using "
                f"the listener prefix: {_set_of(plain_ssl)}")
    for key in sorted(names):
        base = key[len(LISTENER_PREFIX):].partition(".")[2] \
            if key.startswith(LISTENER_PREFIX) else key
        if is_sensitive(base):
            continue
        problem = check_value(base, config[key])  # Kafka's type and valid values
        if problem is not None:
            return problem.replace(f"configuration {base}:", f"configuration {key}:")
        spec = BROKER_KEYS.get(base)
        if spec is None or base in DYNAMIC_BROKER_KEYS:
            continue  # log defaults: checked as topic values below
        try:
            value = spec.parse(config[key])
        except (TypeError, ValueError) as exc:
            return f"Invalid value {config[key]} for configuration {key}: {exc}"
        if spec.minimum is not None and isinstance(value, (int, float)) \
                and value < spec.minimum:
            return (f"Invalid value {config[key]} for configuration {key}: Value must be at "
                    f"least {spec.minimum}")
    for key in sorted(DYNAMIC_BROKER_ONLY_KEYS & names):
        try:
            parse_rate(config[key])
        except ThrottleConfigError as exc:
            return f"Invalid value {config[key]} for configuration {key}: {exc}"
    as_topic = {DYNAMIC_BROKER_KEYS[k]: v for k, v in config.items()
                if k in DYNAMIC_BROKER_KEYS}
    problem = _bad_config_value(as_topic, None)
    if problem:
        return problem
    if not per_broker:
        cluster_level = {"max.connections", "max.connection.creation.rate",
                         "num.network.threads"}
        per = {k for k in names if k in KAFKA_PER_BROKER_KEYS or (
            k.startswith(LISTENER_PREFIX)
            and k[len(LISTENER_PREFIX):].partition(".")[2] not in cluster_level)}
        if per:
            return ("Cannot update these configs at default cluster level, broker id must be "
                    f"specified: {_set_of(per)}")
    return None
