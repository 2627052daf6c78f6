"""Broker configuration, with Kafka's key names and (where they make sense) Kafka's defaults.

A learner who has run Apache Kafka should recognise every key: a
``server.properties`` file from a Kafka install works here too, as far as the
keys it sets mean something for SimpleKafka. Every other key of Kafka 3.9's
broker config set (``kafka_configs``: thread pools, socket buffers, KRaft,
tiered storage) is accepted, its value checked as Kafka checks it, and
ignored with a log line; a key Kafka does not know either, or a value of the
wrong type, stops the broker at start-up with a one-line error
(``ConfigError``), because a silently ignored typo is worse than a refusal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from simplekafka.broker.kafka_configs import (
    KAFKA_BROKER_CONFIGS,
    PER_BROKER,
    SSL_RECONFIGURABLE,
    KafkaConfigKey,
    check_value,
)
from simplekafka.broker.security.listeners import (
    LISTENER_PREFIX,
    Listener,
    ListenerError,
    inter_broker_listener_name,
    listener_setting,
    parse_endpoint,
    parse_listeners,
    parse_protocol_map,
)

#: A parsed configuration value: what a key's parser returns (its type depends on the key).
ConfigValue: TypeAlias = "str | int | float | bool | list[str] | None"


class ConfigError(ValueError):
    """A configuration key or value the broker cannot use (message is one line)."""


# -- value parsers: each turns the text form into a typed value or raises ValueError ---------


def _int(text: object) -> int:
    return int(str(text).strip())


def _long_or_none(value: object) -> int | None:
    """Kafka writes 'no limit' as Long.MAX_VALUE; we also accept an empty value or 'none'."""
    text = str(value).strip()
    if text.lower() in ("", "none", "null", str(2**63 - 1)):
        return None
    return int(text)


def _bool(text: object) -> bool:
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise ValueError("expected true or false")


def _str(text: object) -> str:
    return str(text).strip()


def _str_or_none(value: object) -> str | None:
    text = str(value).strip()
    return text or None


def _replica_selector(text: object) -> str | None:
    from simplekafka.broker.replica_selector import KNOWN_SELECTORS

    name = _str_or_none(text)
    if name is not None and name not in KNOWN_SELECTORS:
        raise ValueError(f"expected one of {', '.join(KNOWN_SELECTORS)}")
    return name


def _float(text: object) -> float:
    value = float(text if isinstance(text, (int, float)) else str(text))
    if not value > 0:
        raise ValueError("expected a positive number")
    return value


def _list(text: object) -> list[str]:
    if isinstance(text, (list, tuple)):
        return [str(item).strip() for item in text if str(item).strip()]
    return [item.strip() for item in str(text).split(",") if item.strip()]


@dataclass(frozen=True)
class ConfigKey:
    """One documented key: its parser, default, lower bound and what it does."""

    name: str
    parse: Callable[[object], ConfigValue]
    default: ConfigValue
    doc: str
    minimum: int | None = None


_KEYS: list[ConfigKey] = [
    ConfigKey("broker.id", _int, None, "This broker's id; unique in the cluster.", 0),
    ConfigKey("broker.rack", _str_or_none, None, "Rack of this broker, for rack-aware placement."),
    ConfigKey("listeners", _list, ["PLAINTEXT://127.0.0.1:9092"],
              "Where to listen: NAME://host:port, comma-separated, one per listener."),
    ConfigKey("advertised.listeners", _list, None,
              "What clients are told to connect to, per listener name; defaults to listeners."),
    ConfigKey("listener.security.protocol.map", _str_or_none, None,
              "NAME:PROTOCOL pairs (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); by default a "
              "listener named after a protocol uses it."),
    ConfigKey("inter.broker.listener.name", _str_or_none, None,
              "The listener brokers use for replication and controller requests."),
    ConfigKey("security.inter.broker.protocol", _str_or_none, None,
              "Instead of inter.broker.listener.name: the listener named after this protocol "
              "(default PLAINTEXT)."),
    ConfigKey("sasl.enabled.mechanisms", _list, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
              "SASL mechanisms offered on SASL listeners (Kafka's default is GSSAPI, which "
              "SimpleKafka does not have)."),
    ConfigKey("sasl.mechanism.inter.broker.protocol", _str, "PLAIN",
              "The mechanism a broker logs in with on a SASL inter-broker listener."),
    ConfigKey("sasl.jaas.config", _str_or_none, None,
              "JAAS text for every SASL listener and mechanism (Kafka wants it per listener "
              "and mechanism: listener.name.<l>.<mechanism>.sasl.jaas.config, also accepted): "
              "username/password are the broker's own inter-broker login, user_NAME=\"pw\" "
              "entries are the PLAIN users."),
    ConfigKey("connection.failed.authentication.delay.ms", _int, 100,
              "Delay before a failed authentication is answered and its connection closed, "
              "for every failed login.", 0),
    ConfigKey("sasl.server.max.receive.size", _int, 524288,
              "Largest frame a SASL listener reads before and during authentication; a "
              "bigger one closes the connection unread.", 1),
    ConfigKey("connections.max.reauth.ms", _long_or_none, 0,
              "SASL session lifetime (0: sessions never end): a connection must "
              "re-authenticate within it (KIP-368) or is closed at its next request; "
              "per listener and mechanism: listener.name.<l>.<mechanism>.connections.max."
              "reauth.ms."),
    ConfigKey("connections.max.idle.ms", _long_or_none, 600000,
              "Close a connection idle (nothing read or written) for this long; -1: never."),
    ConfigKey("max.connections", _int, 2147483647,
              "Connections the broker serves at once (listener.name.<l>.max.connections per "
              "listener); past it, new connections wait to be accepted. The inter-broker "
              "listener is held only by its own listener limit.", 0),
    ConfigKey("max.connections.per.ip", _int, 2147483647,
              "Connections one client address may hold; more are closed when accepted.", 0),
    ConfigKey("max.connections.per.ip.overrides", _str, "",
              "host:count pairs, comma-separated, overriding max.connections.per.ip."),
    ConfigKey("max.connection.creation.rate", _int, 2147483647,
              "New connections accepted per second (listener.name.<l>.max.connection."
              "creation.rate per listener); faster ones wait to be accepted.", 0),
    ConfigKey("ssl.keystore.location", _str_or_none, None,
              "PEM file with this broker's private key and certificate (chain)."),
    ConfigKey("ssl.keystore.type", _str, "PEM", "Only PEM is supported."),
    ConfigKey("ssl.key.password", _str_or_none, None, "Password of the PEM private key."),
    ConfigKey("ssl.truststore.location", _str_or_none, None,
              "PEM file with the CA certificates trusted for client and broker certificates."),
    ConfigKey("ssl.truststore.type", _str, "PEM", "Only PEM is supported."),
    ConfigKey("ssl.client.auth", _str, "none",
              "required, requested or none: whether TLS clients must present a certificate."),
    ConfigKey("ssl.endpoint.identification.algorithm", _str, "https",
              "https: a broker checks the host name in another broker's certificate; empty: "
              "it does not."),
    ConfigKey("log.dirs", _list, None, "Directories that hold the partition logs."),
    ConfigKey("metrics.listener", _str_or_none, None,
              "HOST:PORT serving Prometheus /metrics and /health (default: off)."),
    ConfigKey("zookeeper.connect", _str, None, "ZooKeeper connection string host:port[/chroot]."),
    ConfigKey("zookeeper.session.timeout.ms", _int, 18000, "ZooKeeper session timeout.", 1),
    ConfigKey("zookeeper.connection.timeout.ms", _int, None,
              "How long to wait for ZooKeeper at start-up; defaults to the session timeout.", 1),
    ConfigKey("zookeeper.set.acl", _bool, False,
              "Create every znode with Kafka's ACLs (all for the broker's ZooKeeper login, "
              "read for the world outside /config/users, /config/brokers, /delegation_token); "
              "needs the login KAFKA_OPTS names."),
    ConfigKey("num.partitions", _int, 1, "Partitions of an auto-created topic.", 1),
    ConfigKey("default.replication.factor", _int, 1,
              "Replication factor of auto-created topics.", 1),
    ConfigKey("auto.create.topics.enable", _bool, True,
              "Create a topic when a client asks Metadata about an unknown one."),
    ConfigKey("delete.topic.enable", _bool, True, "Allow DeleteTopics."),
    ConfigKey("message.max.bytes", _int, 1048588, "Largest record batch accepted.", 0),
    ConfigKey("min.insync.replicas", _int, 1, "In-sync replicas needed for acks=all.", 1),
    ConfigKey("socket.request.max.bytes", _int, 104857600,
              "Largest request frame; bigger frames are refused unread.", 1),
    ConfigKey("log.segment.bytes", _int, 1073741824, "Size at which a segment rolls.", 14),
    ConfigKey("log.roll.ms", _long_or_none, None, "Age at which a segment rolls (default 7 days)."),
    ConfigKey("log.roll.hours", _int, 168, "Age at which a segment rolls, in hours.", 1),
    ConfigKey("log.roll.jitter.ms", _long_or_none, None,
              "Kafka's random jitter subtracted from the roll time (default log.roll.jitter."
              "hours); accepted and described, not acted on: SimpleKafka rolls at the roll "
              "time exactly."),
    ConfigKey("log.roll.jitter.hours", _int, 0, "log.roll.jitter.ms, in hours.", 0),
    ConfigKey("log.retention.ms", _long_or_none, None,
              "How long to keep data; -1 keeps it forever (default log.retention.hours)."),
    ConfigKey("log.retention.minutes", _long_or_none, None, "log.retention.ms, in minutes."),
    ConfigKey("log.retention.hours", _int, 168, "log.retention.ms, in hours."),
    ConfigKey("log.retention.bytes", _int, -1, "Size per partition above which old segments go."),
    ConfigKey("log.retention.check.interval.ms", _int, 300000, "How often retention runs.", 1),
    ConfigKey("log.index.interval.bytes", _int, 4096, "Bytes between offset index entries.", 0),
    ConfigKey("log.index.size.max.bytes", _int, 10485760, "Largest offset/time index file.", 4),
    ConfigKey("log.message.timestamp.type", _str, "CreateTime",
              "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch "
              "with the time the leader appends it (a topic's message.timestamp.type wins)."),
    ConfigKey("log.message.timestamp.difference.max.ms", _long_or_none, None,
              "Largest distance of a CreateTime record's timestamp from the broker's clock; "
              "records further off are refused one by one (default: unbounded)."),
    ConfigKey("log.cleanup.policy", _list, ["delete"],
              "delete (retention removes old segments), compact (the log cleaner keeps the "
              "last record per key), or both."),
    ConfigKey("log.cleaner.enable", _bool, True, "Run the log cleaner for compacted topics."),
    ConfigKey("log.cleaner.backoff.ms", _int, 15000,
              "How long the cleaner sleeps when no log needs cleaning.", 1),
    ConfigKey("log.cleaner.dedupe.buffer.size", _int, 134217728,
              "Memory for the cleaner's offset map (24 bytes a key).", 1024),
    ConfigKey("log.cleaner.delete.retention.ms", _int, 86400000,
              "How long a tombstone stays after the cleaner first sees it.", 0),
    ConfigKey("log.cleaner.min.cleanable.ratio", _float, 0.5,
              "Dirty share of a log's cleanable bytes above which it is cleaned."),
    ConfigKey("log.cleaner.min.compaction.lag.ms", _int, 0,
              "Records younger than this are never compacted.", 0),
    ConfigKey("log.cleaner.max.compaction.lag.ms", _int, 2**63 - 1,
              "Kafka compacts a log dirty for longer than this whatever its dirty ratio; "
              "accepted, validated and described, not acted on: SimpleKafka's cleaner goes "
              "by the dirty ratio only.", 1),
    ConfigKey("log.message.downconversion.enable", _bool, True,
              "Whether the broker down-converts batches for old fetchers (Fetch v0-3, message "
              "formats v0/v1); the default of the topic config message.downconversion.enable; "
              "false answers them UNSUPPORTED_VERSION."),
    ConfigKey("message.max.decompressed.bytes", _int, 64 * 1024 * 1024,
              "Largest size a compressed batch may decompress to when the broker decodes it "
              "(record checks, the log cleaner); more is refused as INVALID_RECORD. "
              "SimpleKafka's own key: Kafka has no such cap.", 1024),
    ConfigKey("fetch.zero.copy.enable", _bool, hasattr(os, "sendfile"),
              "Send fetched record batches from the segment file to the socket with "
              "sendfile (page cache to socket, never through Python) on plaintext "
              "listeners; TLS listeners always copy. SimpleKafka's own key: Kafka always "
              "does this. Default: on where the platform has os.sendfile."),
    ConfigKey("log.flush.interval.messages", _long_or_none, None,
              "fsync after this many messages (default: leave it to the OS)."),
    ConfigKey("log.flush.interval.ms", _long_or_none, None, "fsync at least this often."),
    ConfigKey("replica.high.watermark.checkpoint.interval.ms", _int, 5000,
              "How often high watermarks are written to disk.", 1),
    ConfigKey("replica.lag.time.max.ms", _int, 30000,
              "A follower not caught up for this long leaves the ISR.", 1),
    ConfigKey("replica.fetch.wait.max.ms", _int, 500, "Follower fetch long-poll time.", 0),
    ConfigKey("replica.fetch.min.bytes", _int, 1, "Follower fetch min bytes.", 0),
    ConfigKey("replica.fetch.max.bytes", _int, 1048576, "Follower fetch size per partition.", 0),
    ConfigKey("max.incremental.fetch.session.cache.slots", _int, 1000,
              "Fetch sessions (KIP-227) the broker keeps; 0 turns them off.", 0),
    ConfigKey("unclean.leader.election.enable", _bool, False,
              "Allow an out-of-sync replica to lead (may lose acknowledged data)."),
    ConfigKey("controlled.shutdown.enable", _bool, True,
              "Move leadership away before a clean shutdown."),
    ConfigKey("controlled.shutdown.timeout.ms", _int, 10000,
              "How long a clean shutdown waits for its leaderships to move away.", 0),
    ConfigKey("auto.leader.rebalance.enable", _bool, True,
              "Move leadership back to preferred replicas when a broker's imbalance is high."),
    ConfigKey("leader.imbalance.check.interval.seconds", _float, 300.0,
              "How often the controller checks leader imbalance (fractions allowed)."),
    ConfigKey("leader.imbalance.per.broker.percentage", _int, 10,
              "Share of a broker's preferred partitions led elsewhere that triggers a "
              "preferred leader election.", 0),
    ConfigKey("leader.replication.throttled.rate", _int, 2**63 - 1,
              "Bytes/s a leader sends to the throttled replicas of its topics "
              "(leader.replication.throttled.replicas); dynamic.", 1),
    ConfigKey("follower.replication.throttled.rate", _int, 2**63 - 1,
              "Bytes/s a follower fetches for its throttled replicas "
              "(follower.replication.throttled.replicas); dynamic.", 1),
    ConfigKey("auto.reassign.on.membership.change", _bool, False,
              "The controller moves replicas off brokers gone for auto.reassign.grace.ms "
              "and onto brokers up for auto.reassign.new.broker.delay.ms."),
    ConfigKey("auto.reassign.grace.ms", _int, 600000,
              "How long a broker may be gone before automatic mode moves its replicas.", 0),
    ConfigKey("auto.reassign.new.broker.delay.ms", _int, 300000,
              "How long a new broker must be up before automatic mode moves replicas to it.", 0),
    ConfigKey("auto.reassign.throttle.bytes", _int, 10485760,
              "The replication throttle (bytes/s) of an automatic reassignment.", 1),
    ConfigKey("quota.window.num", _int, 11,
              "Samples a client quota's rate is measured over (client_quotas).", 1),
    ConfigKey("quota.window.size.seconds", _int, 1,
              "Length of one client quota sample, in seconds.", 1),
    ConfigKey("replica.selector.class", _replica_selector, None,
              "org.apache.kafka.common.replica.RackAwareReplicaSelector lets consumers "
              "with client.rack read from a replica in their rack (KIP-392)."),
    ConfigKey("offsets.topic.num.partitions", _int, 10, "Partitions of __consumer_offsets.", 1),
    ConfigKey("offsets.topic.replication.factor", _int, 3,
              "Replication factor of __consumer_offsets (capped by the live brokers).", 1),
    ConfigKey("offsets.topic.segment.bytes", _int, 104857600,
              "segment.bytes of __consumer_offsets (compacted: smaller segments clean sooner).",
              14),
    ConfigKey("offsets.retention.minutes", _int, 10080,
              "How long an empty group's committed offsets are kept.", 1),
    ConfigKey("offsets.retention.check.interval.ms", _int, 600000,
              "How often expired committed offsets are looked for.", 1),
    ConfigKey("group.initial.rebalance.delay.ms", _int, 3000,
              "How long a new group waits for more members before its first rebalance.", 0),
    ConfigKey("producer.id.block.size", _int, 1000,
              "Producer ids a broker reserves from ZooKeeper at a time.", 1),
    ConfigKey("transaction.state.log.num.partitions", _int, 50,
              "Partitions of __transaction_state.", 1),
    ConfigKey("transaction.state.log.replication.factor", _int, 3,
              "Replication factor of __transaction_state (capped by the live brokers).", 1),
    ConfigKey("transaction.max.timeout.ms", _int, 900000,
              "The longest transaction.timeout.ms a producer may ask for.", 1),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, 10000,
              "How often the coordinator looks for transactions past their timeout.", 1),
    ConfigKey("authorizer.class.name", _str_or_none, None,
              "kafka.security.authorizer.AclAuthorizer (or SimpleAclAuthorizer) checks every "
              "request against the ACLs in ZooKeeper; empty: no checks."),
    ConfigKey("super.users", _str_or_none, None,
              "Principals allowed everything, separated by ';' (User:admin;User:broker)."),
    ConfigKey("allow.everyone.if.no.acl.found", _bool, False,
              "With an authorizer: whether a resource without any ACL is open to everyone."),
]

KEYS: dict[str, ConfigKey] = {key.name: key for key in _KEYS}

# Keys whose values travel in int32 protocol fields (or Kafka declares as int).
INT32_MAX = 2**31 - 1
INT32_KEYS = frozenset({
    "broker.id", "num.partitions", "default.replication.factor", "message.max.bytes",
    "min.insync.replicas", "socket.request.max.bytes", "log.segment.bytes",
    "offsets.topic.num.partitions", "offsets.topic.replication.factor",
    "transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
    "transaction.max.timeout.ms", "transaction.abort.timed.out.transaction.cleanup.interval.ms",
})

# Kafka 3.9's broker configs (``kafka_configs``): SimpleKafka acts on those in KEYS (bar
# the few whose doc says "not acted on"); every other one is accepted so that a stock
# server.properties loads, its value checked against Kafka's type and valid values, reported
# in the log as ignored, and described by DescribeConfigs.
IGNORED_KAFKA_KEYS = frozenset(KAFKA_BROKER_CONFIGS) - frozenset(KEYS)

# Kafka 3.9's dynamic broker configs (DynamicBrokerConfig.AllDynamicConfigs, ZooKeeper mode):
# AlterConfigs on a broker takes these; any other key Kafka knows is refused ("Cannot update
# these configs dynamically"), and a key Kafka does not know at all is stored as it is.
# SimpleKafka acts on the log defaults of ``apis/configs.DYNAMIC_BROKER_KEYS`` and the
# replication throttles; the others are stored and described, not acted on.
KAFKA_SSL_RECONFIGURABLE_KEYS = SSL_RECONFIGURABLE
KAFKA_DYNAMIC_KEYS = frozenset(k for k, spec in KAFKA_BROKER_CONFIGS.items() if spec.dynamic)
# The broker's log defaults Kafka changes at run time (DynamicLogConfig), all cluster-wide.
KAFKA_LOG_DYNAMIC_KEYS = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
    "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes",
    "log.retention.ms", "message.max.bytes", "log.index.interval.bytes",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
    "min.insync.replicas", "compression.type", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level", "log.preallocate",
    "log.message.timestamp.type", "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
    "log.message.downconversion.enable", "log.local.retention.ms", "log.local.retention.bytes",
})
# Set per broker only, never as the cluster-wide default (Kafka's PerBrokerConfigs).
KAFKA_PER_BROKER_KEYS = frozenset(
    k for k, spec in KAFKA_BROKER_CONFIGS.items() if spec.mode == PER_BROKER)
# Kafka's read-only broker configs SimpleKafka has no parser for (refused by AlterConfigs).
KAFKA_STATIC_KEYS = frozenset(
    k for k, spec in KAFKA_BROKER_CONFIGS.items() if not spec.dynamic) - frozenset(KEYS)

# Kafka's PASSWORD-type broker configs (ConfigDef.Type.PASSWORD), accepted here or not: their
# values are never answered (DescribeConfigs: is_sensitive, value null, to everyone), shown
# or logged. Under a listener's prefix they are just as secret.
PASSWORD_KEYS = frozenset(k for k, spec in KAFKA_BROKER_CONFIGS.items() if spec.sensitive)

# Kafka keys whose default SimpleKafka changes, and why (the docs list them: never silently
# different from Kafka). Every other key of KEYS that Kafka has defaults as Kafka's does.
DEFAULTS_DIFFERENT_FROM_KAFKA: dict[str, str] = {
    "broker.id": "required: SimpleKafka never generates a broker id (Kafka's -1 has "
                 "ZooKeeper hand one out)",
    "listeners": "PLAINTEXT://127.0.0.1:9092: a learner's broker listens on the loopback "
                 "interface unless told otherwise",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512: SimpleKafka has no "
                               "GSSAPI (Kerberos), Kafka's default",
    "sasl.mechanism.inter.broker.protocol": "PLAIN: SimpleKafka has no GSSAPI (Kerberos)",
    "ssl.keystore.type": "PEM: SimpleKafka reads PEM files, not Java key stores (JKS)",
    "ssl.truststore.type": "PEM: SimpleKafka reads PEM files, not Java key stores (JKS)",
    "offsets.topic.num.partitions": "10: fewer __consumer_offsets logs for a small "
                                    "teaching cluster",
}
# Keys of KEYS whose default None stands for Kafka's default value (described as Kafka's).
NONE_MEANS_KAFKA_DEFAULT = frozenset({
    "listener.security.protocol.map", "security.inter.broker.protocol",
    "log.flush.interval.messages", "log.message.timestamp.difference.max.ms",
    "authorizer.class.name",
})
# Kafka broker keys whose default is Long.MAX_VALUE where SimpleKafka keeps None ("no limit").
KAFKA_LONG_MAX_DEFAULTS = frozenset({
    "log.flush.interval.messages", "log.message.timestamp.difference.max.ms"})


def acted_on(name: str) -> bool:
    """Whether SimpleKafka acts on the broker key ``name``: it has a parser in KEYS and its
    documentation does not say otherwise."""
    key = KEYS.get(name)
    return key is not None and "not acted on" not in key.doc


def not_acted_on() -> list[KafkaConfigKey]:
    """Kafka 3.9's broker configs SimpleKafka accepts, validates and describes but does not
    act on, by name."""
    return [spec for name, spec in sorted(KAFKA_BROKER_CONFIGS.items()) if not acted_on(name)]


_PARSER_TYPES: dict[Callable[[object], ConfigValue], str] = {
    _int: "INT", _bool: "BOOLEAN", _list: "LIST", _float: "DOUBLE", _long_or_none: "LONG"}


def config_type(name: str) -> str:
    """The ConfigDef type DescribeConfigs answers for ``name``: Kafka's, else (SimpleKafka's
    own keys) the one its parser reads, else UNKNOWN."""
    spec = KAFKA_BROKER_CONFIGS.get(name)
    if spec is not None:
        return spec.type
    key = KEYS.get(name)
    return "UNKNOWN" if key is None else _PARSER_TYPES.get(key.parse, "STRING")


def is_sensitive(name: str) -> bool:
    """Whether ``name``'s value must stay hidden, as Kafka's ``KafkaConfig.maybeSensitive``
    decides: a PASSWORD-type key, plain or under a listener's prefix
    (``listener.name.<l>.[<mechanism>.]<key>``), or a key whose type is unknown."""
    if name.startswith(LISTENER_PREFIX):
        name = name[len(LISTENER_PREFIX):].partition(".")[2]  # a mechanism's: unknown below
    return name in PASSWORD_KEYS or (name not in KEYS and name not in KAFKA_BROKER_CONFIGS)


def redacted(config: Mapping[str, object]) -> dict[str, object]:
    """``config`` with each sensitive value replaced by ``[hidden]`` (for logs and messages)."""
    return {key: "[hidden]" if is_sensitive(key) else value for key, value in config.items()}


def parse_listener(text: str) -> tuple[str, str, int]:
    """Split ``PLAINTEXT://host:port`` into (listener name, host, port)."""
    try:
        return parse_endpoint(text)
    except ListenerError as exc:
        raise ConfigError(str(exc)) from None


def read_properties(path: Path) -> dict[str, str]:
    """Read a Java-style properties file: ``key=value`` (or ``key: value``) lines, # comments."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    properties: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not match:
            raise ConfigError(f"{path}:{number}: expected key=value, got {line!r}")
        properties[match[1]] = match[2].strip()
    return properties


class BrokerConfig:
    """Validated broker settings: ``config["log.segment.bytes"]`` or the named properties.

    Build one with ``BrokerConfig.from_properties({...})``; all checks happen
    there, so a broker that got a BrokerConfig can trust every value in it.
    """

    def __init__(self, values: dict[str, ConfigValue], ignored: Iterable[str] = (),
                 given: Iterable[str] = ()):
        self._values = values
        self.ignored_keys = sorted(ignored)
        # The keys the broker's configuration sets (its STATIC_BROKER_CONFIGs), defaults aside.
        self.given_keys = frozenset(given)
        # The values given to Kafka keys SimpleKafka does not act on (described as given).
        self.kafka_values: dict[str, str] = {}

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> BrokerConfig:
        """Parse and check ``properties`` (text from a file, or Python values)."""
        values = {name: key.default for name, key in KEYS.items()}
        ignored = []
        kafka_values: dict[str, str] = {}
        for name, raw in properties.items():
            if name in IGNORED_KAFKA_KEYS:  # Kafka's, not acted on: typed as Kafka types it
                problem = check_value(name, raw if raw is None or isinstance(raw, str)
                                      else str(raw))
                if problem is not None:
                    raise ConfigError(f"configuration key {name}: cannot parse its value"
                                      if is_sensitive(name) else problem)
                ignored.append(name)
                kafka_values[name] = str(raw).strip()
                continue
            if name.startswith(LISTENER_PREFIX):  # a per-listener setting, read by security/
                values[name] = str(raw).strip()
                continue
            key = KEYS.get(name)
            if key is None:
                raise ConfigError(f"unknown configuration key {name!r}")
            try:
                value = key.parse(raw)
            except (TypeError, ValueError) as exc:
                if is_sensitive(name):  # the message must not show a secret
                    detail = "cannot parse its value"
                else:
                    detail = str(exc) if "expected" in str(exc) else f"cannot parse {raw!r}"
                raise ConfigError(f"configuration key {name}: {detail}") from None
            if key.minimum is not None and isinstance(value, (int, float)) \
                    and value < key.minimum:
                raise ConfigError(f"configuration key {name}: {value} is below {key.minimum}")
            if isinstance(value, int) and not isinstance(value, bool) and value > INT32_MAX \
                    and name in INT32_KEYS:
                raise ConfigError(f"configuration key {name}: {value} is above {INT32_MAX}")
            values[name] = value
        config = cls(values, ignored, properties)
        config.kafka_values = kafka_values
        config._check()
        return config

    # The value's type depends on the key (``broker.id`` an int, ``log.dirs`` a list of
    # str, an unset key None): truly dynamic; the properties below name the common ones.
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def as_dict(self) -> dict[str, ConfigValue]:
        return dict(self._values)

    def _check(self) -> None:
        for required in ("broker.id", "zookeeper.connect", "log.dirs"):
            if self[required] in (None, "", []):
                raise ConfigError(f"configuration key {required} is required")
        try:
            names = {listener.name for listener in self.listeners}
            for name in self.advertised_listeners:
                if name not in names:
                    raise ListenerError(f"advertised.listeners names {name}, which is not in "
                                        "listeners")
            self.inter_broker_listener  # noqa: B018 (resolved to check it)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        from simplekafka.broker.security import check_security_config

        try:
            check_security_config(self)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        from simplekafka.broker.connection_quotas import ConnectionQuotaError, parse_overrides

        try:
            parse_overrides(self["max.connections.per.ip.overrides"])
        except ConnectionQuotaError as exc:
            raise ConfigError(str(exc)) from None
        from simplekafka.broker.security.authorizer import ACL_AUTHORIZER_NAMES

        authorizer = self["authorizer.class.name"]
        if authorizer and authorizer not in ACL_AUTHORIZER_NAMES:
            raise ConfigError(f"authorizer.class.name: {authorizer!r} is not supported "
                              "(use kafka.security.authorizer.AclAuthorizer)")
        if self["metrics.listener"]:
            try:
                self.metrics_listener  # noqa: B018 (parsed to check it)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        from simplekafka.coordination.connection import (
            ZooKeeperConnectError,
            parse_connect_string,
        )

        try:
            parse_connect_string(self["zookeeper.connect"])
        except ZooKeeperConnectError as exc:
            raise ConfigError(f"zookeeper.connect: {exc}") from None
        from simplekafka.storage import LogConfig

        try:  # the storage layer has its own limits (e.g. a segment must hold a batch header)
            LogConfig.from_kafka({k: v for k, v in self.log_config_keys().items()
                                  if v is not None})
        except ValueError as exc:
            raise ConfigError(f"log settings: {exc}") from None

    # -- the values the broker reads most, by name ------------------------------------------

    @property
    def broker_id(self) -> int:
        return self["broker.id"]

    @property
    def rack(self) -> str | None:
        return self["broker.rack"]

    @property
    def listeners(self) -> list[Listener]:
        """Every listener, in the order of ``listeners``, with its security protocol."""
        return parse_listeners(self["listeners"], self.protocol_map)

    @property
    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self["listener.security.protocol.map"])

    @property
    def advertised_listeners(self) -> dict[str, tuple[str, int]]:
        """Listener name -> (host, port) clients are told (listeners where not advertised)."""
        advertised = {listener.name: (listener.host, listener.port)
                      for listener in self.listeners}
        for text in self["advertised.listeners"] or []:
            name, host, port = parse_endpoint(text)
            advertised[name] = (host, port)
        return advertised

    @property
    def inter_broker_listener(self) -> str:
        return inter_broker_listener_name(self.listeners,
                                          self["inter.broker.listener.name"],
                                          self["security.inter.broker.protocol"])

    def listener_setting(self, listener: str, key: str, default: ConfigValue = None) -> Any:
        """A setting for one listener: ``listener.name.<l>.<key>``, else ``key`` (its type
        depends on the key, as ``config[key]``'s)."""
        return listener_setting(self._values, listener, key, default)

    @property
    def listen_host(self) -> str:
        return self.listeners[0].host

    @property
    def listen_port(self) -> int:
        return self.listeners[0].port

    @property
    def advertised_host_port(self) -> tuple[str, int]:
        """Host and port clients of the first listener are told (empty host: 127.0.0.1)."""
        host, port = self.advertised_listeners[self.listeners[0].name]
        return (host or "127.0.0.1"), port

    @property
    def metrics_listener(self) -> tuple[str, int] | None:
        """(host, port) of the metrics listener, or None when metrics are off."""
        text = self["metrics.listener"]
        if not text:
            return None
        from simplekafka.broker.metrics import parse_listener as parse_metrics_listener

        return parse_metrics_listener(text)

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(item) for item in self["log.dirs"]]

    @property
    def zookeeper_connect(self) -> str:
        return self["zookeeper.connect"]

    @property
    def min_insync_replicas(self) -> int:
        return self["min.insync.replicas"]

    @property
    def default_replication_factor(self) -> int:
        return self["default.replication.factor"]

    @property
    def retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours, as Kafka resolves them."""
        if self["log.retention.ms"] is not None:
            return self["log.retention.ms"]
        if self["log.retention.minutes"] is not None:
            return self["log.retention.minutes"] * 60_000
        return self["log.retention.hours"] * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self["log.roll.ms"] is not None:
            return self["log.roll.ms"]
        return self["log.roll.hours"] * 3_600_000

    @property
    def roll_jitter_ms(self) -> int:
        if self["log.roll.jitter.ms"] is not None:
            return self["log.roll.jitter.ms"]
        return self["log.roll.jitter.hours"] * 3_600_000

    def log_config_keys(self) -> dict[str, ConfigValue]:
        """The log settings as Kafka's topic-level keys (segment.bytes, retention.ms, ...)."""
        return {
            "segment.bytes": self["log.segment.bytes"],
            "segment.ms": self.roll_ms,
            "segment.index.bytes": self["log.index.size.max.bytes"],
            "index.interval.bytes": self["log.index.interval.bytes"],
            "retention.ms": self.retention_ms,
            "retention.bytes": self["log.retention.bytes"],
            "flush.messages": self["log.flush.interval.messages"],
            "flush.ms": self["log.flush.interval.ms"],
            "max.message.bytes": self["message.max.bytes"],
            "min.insync.replicas": self["min.insync.replicas"],
            "message.timestamp.type": self["log.message.timestamp.type"],
            "message.timestamp.difference.max.ms":
                self["log.message.timestamp.difference.max.ms"],
            "cleanup.policy": ",".join(self["log.cleanup.policy"]),
            "delete.retention.ms": self["log.cleaner.delete.retention.ms"],
            "min.cleanable.dirty.ratio": self["log.cleaner.min.cleanable.ratio"],
            "min.compaction.lag.ms": self["log.cleaner.min.compaction.lag.ms"],
            "max.compaction.lag.ms": self["log.cleaner.max.compaction.lag.ms"],
            "segment.jitter.ms": self.roll_jitter_ms,
            "message.downconversion.enable": self["log.message.downconversion.enable"],
        }


def describe_keys() -> str:
    """A table of every key, its default and meaning (for docs and ``--help``)."""
    lines = []
    for key in _KEYS:
        lines.append(f"{key.name} (default {key.default!r}): {key.doc}")
    return "\n".join(lines)


def _keys_table_rst() -> str:
    """Every key as an RST table, appended to this module's docstring for the API docs."""
    rows = [".. list-table:: Configuration keys (Kafka's names)", "   :header-rows: 1",
            "   :widths: 30 20 50", "", "   * - key", "     - default", "     - meaning"]
    for key in _KEYS:
        default = key.default
        if isinstance(default, list):
            default = ",".join(default)
        shown = ("(none)" if default is None else '(empty)' if default == ""
                 else f"``{default}``")
        rows += [f"   * - ``{key.name}``", f"     - {shown}", f"     - {key.doc}"]
    return "\n".join(rows)


__doc__ = (__doc__ or "") + "\n\n" + _keys_table_rst() + "\n"

