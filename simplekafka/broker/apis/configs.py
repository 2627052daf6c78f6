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
or subtracts from single keys. Broker configs can be changed at run time only
for the keys in ``DYNAMIC_BROKER_KEYS`` (the log defaults Kafka lets change
without a restart); the others answer INVALID_REQUEST.

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
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from simplekafka.broker.apis.collaborators import (
    Authorizer,
    Reactor,
    ZooKeeperHandle,
    in_worker_thread,
)
from simplekafka.broker.apis.topics import TOPIC_CONFIG_KEYS, _bad_config_value
from simplekafka.broker.config import KEYS as BROKER_KEYS
from simplekafka.broker.config import is_sensitive, redacted
from simplekafka.broker.dispatch import RequestContext
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

# The broker's log defaults Kafka changes at run time, and the topic key each sets.
DYNAMIC_BROKER_KEYS: dict[str, str] = {
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "message.max.bytes": "max.message.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "log.cleanup.policy": "cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
}

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
_SYNONYMS = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
}
_LIST_KEYS = frozenset({"cleanup.policy", "log.cleanup.policy"})
_UNBOUNDED = str(2**63 - 1)


def _text(value: Any) -> str | None:
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

    def __init__(self, broker_id: int, config: Any, cache: MetadataCache, reactor: Reactor,
                 zookeeper: ZooKeeperHandle,
                 dynamic_broker: Callable[[], Mapping[str, tuple[str, int]]],
                 authorizer: Authorizer = ALLOW_EVERYONE):
        self.authorizer = authorizer
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
        broker_key_of = {topic: broker for broker, topic in DYNAMIC_BROKER_KEYS.items()}
        for key, value in self.config.log_config_keys().items():
            defaults[key] = (_text(value) if value is not None else _UNBOUNDED,
                             self._static_source(broker_key_of.get(key)))
        defaults["unclean.leader.election.enable"] = (
            _text(self.config["unclean.leader.election.enable"]),
            self._static_source("unclean.leader.election.enable"))
        for broker_key, (value, source) in self.dynamic_broker().items():
            topic_key = DYNAMIC_BROKER_KEYS.get(broker_key)
            if topic_key is not None:
                defaults[topic_key] = (value, source)
        return defaults

    def _static_source(self, broker_key: str | None) -> int:
        """STATIC_BROKER_CONFIG if the broker's configuration sets the key (or one of its
        synonyms) away from Kafka's default, else DEFAULT_CONFIG."""
        if broker_key is None:
            return DEFAULT_CONFIG
        synonyms = _SYNONYMS.get(broker_key, (broker_key,))
        if all(self.config[k] == BROKER_KEYS[k].default for k in synonyms if k in BROKER_KEYS):
            return DEFAULT_CONFIG
        return STATIC_BROKER_CONFIG

    def _all_settings(self) -> Mapping[str, Any]:
        """Every setting of the broker's configuration, per-listener ones included."""
        as_dict = getattr(self.config, "as_dict", None)
        return as_dict() if as_dict is not None else {}

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

    def describe_configs(self, context: RequestContext, request: Any) -> defer.Deferred:
        version = context.api_version
        synonyms = bool(getattr(request, "include_synonyms", False))
        work = []
        for resource in request.resources:
            refused = self._refusal(context, resource.resource_type, resource.resource_name,
                                    AclOperation.DESCRIBE_CONFIGS)
            work.append(self._describe_one(resource, version, synonyms) if refused is None
                        else defer.succeed({
                            "error_code": refused, "error_message": None,
                            "resource_type": resource.resource_type,
                            "resource_name": resource.resource_name, "configs": []}))
        return defer.gatherResults(work, consumeErrors=True).addCallback(
            lambda results: {"throttle_time_ms": 0, "results": results})

    def _describe_one(self, resource: Any, version: int, synonyms: bool) -> defer.Deferred:
        kind, name = resource.resource_type, resource.resource_name
        wanted = None if resource.configuration_keys is None else set(
            resource.configuration_keys)

        def answer(code: ErrorCode, message: str | None = None,
                   entries: list[dict] | None = None) -> dict:
            return {"error_code": code, "error_message": message, "resource_type": kind,
                    "resource_name": name, "configs": entries or []}

        def entry(key: str, value: str | None, source: int, read_only: bool,
                  chain: list[tuple[str, str | None, int]], sensitive: bool = False) -> dict:
            # A sensitive value (a password, a JAAS text) is answered null, in the synonyms
            # too, to every principal: Kafka's rule, super users included.
            return {"name": key, "value": None if sensitive else value, "read_only": read_only,
                    "is_default": source in (DEFAULT_CONFIG, STATIC_BROKER_CONFIG),
                    "config_source": source, "is_sensitive": sensitive,
                    "synonyms": [{"name": n, "value": None if sensitive else v, "source": s}
                                 for n, v, s in chain]
                    if synonyms else [], "config_type": 0, "documentation": None}

        if kind == TOPIC_RESOURCE:
            zk = self.zookeeper()
            try:
                validate_topic_name(name)
            except TopicError as exc:
                return defer.succeed(answer(exc.error_code, str(exc)))
            if zk is None:
                return defer.succeed(answer(ErrorCode.COORDINATOR_NOT_AVAILABLE))

            def read() -> dict | None:
                if not zk.exists(ZkPaths.topic(name)):
                    return None
                return read_entity_config(zk, TOPICS, name)

            def build(overrides: dict | None) -> dict:
                if overrides is None:
                    return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"topic {name!r} does not exist")
                defaults = self.topic_defaults()
                entries = []
                for key in sorted(set(defaults) | set(overrides)):
                    if wanted is not None and key not in wanted:
                        continue
                    default, source = defaults.get(key, (None, DEFAULT_CONFIG))
                    chain = [(key, default, source)]
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

            def failed(failure: Any) -> dict:
                log.warning("describing topic %r failed: %s", name, failure.getErrorMessage())
                return answer(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage())

            return in_worker_thread(self.reactor, read).addCallbacks(build, failed)

        if kind == BROKER_RESOURCE:
            if name not in ("", str(self.broker_id)):
                return defer.succeed(answer(ErrorCode.INVALID_REQUEST,
                                            f"broker {name} is not this broker "
                                            f"({self.broker_id}): ask it directly"))
            dynamic = self.dynamic_broker()
            entries = []
            for key in sorted(BROKER_KEYS):
                if wanted is not None and key not in wanted:
                    continue
                static = _text(self.config[key])
                default = BROKER_KEYS[key].default
                source = DEFAULT_CONFIG if self.config[key] == default else STATIC_BROKER_CONFIG
                chain = [(key, static, source)]
                value = static
                if key in dynamic:
                    value, source = dynamic[key]
                    chain.insert(0, (key, value, source))
                entries.append(entry(key, value, source, key not in DYNAMIC_BROKER_KEYS
                                     and key not in DYNAMIC_BROKER_ONLY_KEYS, chain,
                                     is_sensitive(key)))
            # The per-listener settings the broker was given (Kafka lists them too); their
            # passwords and JAAS texts are sensitive like the plain keys.
            settings = self._all_settings()
            for key in sorted(k for k in settings if k.startswith(LISTENER_PREFIX)):
                if wanted is not None and key not in wanted:
                    continue
                value = _text(settings[key])
                entries.append(entry(key, value, STATIC_BROKER_CONFIG, True,
                                     [(key, value, STATIC_BROKER_CONFIG)], is_sensitive(key)))
            return defer.succeed(answer(ErrorCode.NONE, None, entries))

        return defer.succeed(answer(ErrorCode.INVALID_REQUEST,
                                    f"resource type {kind} is not supported"))

    # -- AlterConfigs and IncrementalAlterConfigs -----------------------------------------

    def alter_configs(self, context: RequestContext, request: Any) -> defer.Deferred:
        def change(_current: dict[str, str], resource: Any) -> dict[str, str]:
            return {c.name: c.value for c in resource.configs if c.value is not None}

        return self._alter(context, request, change)

    def incremental_alter_configs(self, context: RequestContext,
                                  request: Any) -> defer.Deferred:
        def change(current: dict[str, str], resource: Any) -> dict[str, str]:
            updated = dict(current)
            for c in resource.configs:
                op = c.config_operation
                if op == SET:
                    if c.value is None:
                        raise KafkaError(f"{c.name}: SET needs a value",
                                         error_code=ErrorCode.INVALID_CONFIG)
                    updated[c.name] = c.value
                elif op == DELETE:
                    updated.pop(c.name, None)
                elif op in (APPEND, SUBTRACT):
                    if c.name not in _LIST_KEYS:
                        raise KafkaError(f"{c.name} is not a list: APPEND and SUBTRACT "
                                         "apply to list configs only",
                                         error_code=ErrorCode.INVALID_CONFIG)
                    items = [v for v in updated.get(c.name, "").split(",") if v]
                    given = [v.strip() for v in (c.value or "").split(",") if v.strip()]
                    if op == APPEND:
                        items += [v for v in given if v not in items]
                    else:
                        items = [v for v in items if v not in given]
                    updated[c.name] = ",".join(items)
                else:
                    raise KafkaError(f"unknown config operation {op}",
                                     error_code=ErrorCode.INVALID_REQUEST)
            return updated

        return self._alter(context, request, change)

    def _alter(self, context: RequestContext, request: Any,
               change: Callable[[dict[str, str], Any], dict[str, str]]) -> defer.Deferred:
        zk = self.zookeeper()
        validate_only = bool(request.validate_only)
        refusals = [self._refusal(context, r.resource_type, r.resource_name,
                                  AclOperation.ALTER_CONFIGS) for r in request.resources]

        def one(resource: Any) -> dict:
            kind, name = resource.resource_type, resource.resource_name
            result = {"error_code": ErrorCode.NONE, "error_message": None,
                      "resource_type": kind, "resource_name": name}
            try:
                if zk is None:
                    raise KafkaError("not connected to ZooKeeper",
                                     error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
                entity_type, entity = self._entity(zk, kind, name)
                updated = change(read_entity_config(zk, entity_type, entity), resource)
                self._validate(entity_type, updated)
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

        def work() -> list[dict]:
            return [one(r) if refused is None else
                    {"error_code": refused, "error_message": None,
                     "resource_type": r.resource_type, "resource_name": r.resource_name}
                    for r, refused in zip(request.resources, refusals, strict=True)]

        return in_worker_thread(self.reactor, work).addCallback(
            lambda results: {"throttle_time_ms": 0, "responses": results})

    def _entity(self, zk: Any, kind: int, name: str) -> tuple[str, str]:
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

    def _validate(self, entity_type: str, config: dict[str, str]) -> None:
        if entity_type == TOPICS:
            unknown = sorted(k for k in config if k not in TOPIC_CONFIG_KEYS)
            if unknown:
                raise KafkaError(f"unknown topic config {unknown[0]!r}",
                                 error_code=ErrorCode.INVALID_CONFIG)
            problem = _bad_config_value(config, None)
            if problem:
                raise KafkaError(problem, error_code=ErrorCode.INVALID_CONFIG)
            return
        fixed = sorted(k for k in config
                       if k not in DYNAMIC_BROKER_KEYS and k not in DYNAMIC_BROKER_ONLY_KEYS)
        if fixed:
            known = fixed[0] in BROKER_KEYS
            raise KafkaError(
                f"{fixed[0]} cannot be changed at run time" if known
                else f"unknown broker config {fixed[0]!r}",
                error_code=ErrorCode.INVALID_REQUEST if known else ErrorCode.INVALID_CONFIG)
        for key in DYNAMIC_BROKER_ONLY_KEYS & set(config):
            try:
                parse_rate(config[key])
            except ThrottleConfigError as exc:
                raise KafkaError(f"{key}: {exc}", error_code=ErrorCode.INVALID_CONFIG) from None
        as_topic = {DYNAMIC_BROKER_KEYS[k]: v for k, v in config.items()
                    if k in DYNAMIC_BROKER_KEYS}
        problem = _bad_config_value(as_topic, None)
        if problem:
            raise KafkaError(problem, error_code=ErrorCode.INVALID_CONFIG)
