"""Kafka 3.9's broker configs as data: every key a ZooKeeper-mode Kafka 3.9 broker knows.

Each row is a key of Kafka 3.9's broker ``ConfigDef`` (internal keys aside): its
type, importance, how it may be changed at run time (Kafka's "update mode":
read-only, per-broker, cluster-wide), Kafka's default as DescribeConfigs
writes it, and the valid values Kafka checks. The broker uses the table three
ways: a ``server.properties`` key Kafka knows is accepted (and its value type
checked) even when SimpleKafka does not act on it; DescribeConfigs answers
every key with its type, source and documentation; AlterConfigs takes the
dynamic keys and refuses the read-only ones as Kafka does.

Whether SimpleKafka acts on a key is not in the table: it acts on the keys of
``broker.config.KEYS`` (minus the few whose documentation says it does not),
so a key moves to "acted on" by getting a parser there. ``not_acted_on()`` lists
the others; the docs page "Kafka's broker configs" prints them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kafka's ConfigDef types, numbered as DescribeConfigs v3+ answers them (config_type).
CONFIG_TYPES = {"UNKNOWN": 0, "BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5,
                "DOUBLE": 6, "LIST": 7, "CLASS": 8, "PASSWORD": 9}
IMPORTANCE = {"H": "high", "M": "medium", "L": "low"}
READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"
_MODES = {"R": READ_ONLY, "B": PER_BROKER, "C": CLUSTER_WIDE}


@dataclass(frozen=True)
class KafkaConfigKey:
    """One of Kafka 3.9's broker configs."""

    name: str
    type: str  # a key of CONFIG_TYPES
    importance: str  # high, medium, low
    mode: str  # READ_ONLY, PER_BROKER or CLUSTER_WIDE
    default: str | None  # as DescribeConfigs writes Kafka's default (None: Kafka has none)
    valid: str | None = None  # ">=N", "A..B", "in:a,b", "non-empty", "1..9|-1"

    @property
    def dynamic(self) -> bool:
        return self.mode != READ_ONLY

    @property
    def sensitive(self) -> bool:
        return self.type == "PASSWORD"

    @property
    def per_listener(self) -> bool:
        """Whether Kafka reads it per listener (``listener.name.<l>.<key>``) as well."""
        return (self.name.startswith(("ssl.", "sasl.")) and not self.name.startswith(
            ("sasl.oauthbearer.", "sasl.mechanism.controller.", "sasl.client."))) \
            or self.name in LISTENER_KEYS

    @property
    def listener_only(self) -> bool:
        """Whether Kafka changes it at run time under a listener's prefix only (its
        reconfigurable SSL keys: ``listener.name.<l>.ssl.keystore.location``)."""
        return self.name in SSL_RECONFIGURABLE


# Keys read per listener besides the ssl.* and sasl.* ones (ChannelBuilders, SocketServer).
LISTENER_KEYS = frozenset({"connections.max.reauth.ms", "max.connections",
                           "max.connection.creation.rate", "principal.builder.class"})
SSL_RECONFIGURABLE = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates",
})

# What each family of keys is for, in a line (the documentation of a key SimpleKafka does
# not act on starts with its family's line); longest prefix wins.
AREAS: dict[str, str] = {
    "": "A Kafka broker setting",
    "alter.config.policy": "A plug-in class that vets AlterConfigs requests",
    "create.topic.policy": "A plug-in class that vets CreateTopics requests",
    "alter.log.dirs.": "The quota on moving replicas between a broker's log directories",
    "authorizer": "The authorizer plug-in",
    "auto.include.jmx": "Whether Kafka's JMX metrics reporter is always on",
    "background.threads": "Threads for a Kafka broker's background tasks",
    "broker.heartbeat": "KRaft: how often a broker heartbeats to the controller quorum",
    "broker.session": "KRaft: how long a broker may miss heartbeats",
    "broker.id.generation": "Whether ZooKeeper hands out broker ids",
    "reserved.broker.max.id": "The highest broker id an operator may set by hand",
    "client.quota.callback": "A plug-in class that computes client quotas",
    "compression.": "How a broker recompresses batches (the topic's compression.type)",
    "control.plane": "A separate listener for controller-to-broker requests",
    "controller.": "KRaft's controller quorum",
    "controller.socket.timeout": "How long the ZooKeeper-mode controller waits on a broker",
    "controller.quota": "KRaft: the controller's request quota window",
    "controlled.shutdown.": "Retries of a clean shutdown's request to the controller",
    "delegation.token": "Delegation tokens (KIP-48)",
    "delete.records.purgatory": "How often finished DeleteRecords waits are purged",
    "early.start.listeners": "Listeners started before the authorizer is ready",
    "eligible.leader.replicas": "Eligible leader replicas (KIP-966, KRaft)",
    "fetch.max.bytes": "The largest Fetch answer a broker builds",
    "fetch.purgatory": "How often finished Fetch waits are purged",
    "group.consumer.": "The new consumer group protocol (KIP-848)",
    "group.coordinator.": "The new group coordinator's threads and protocols",
    "group.max.session": "The session timeouts a group member may ask for",
    "group.min.session": "The session timeouts a group member may ask for",
    "group.max.size": "The most members a consumer group may have",
    "group.share.": "Share groups (KIP-932, early access)",
    "initial.broker.registration": "KRaft: how long a broker waits to register",
    "inter.broker.protocol.version": "The protocol version brokers speak to each other",
    "kafka.metrics.": "Yammer metrics reporters",
    "log.cleaner.io.": "The log cleaner's I/O buffers and rate",
    "log.cleaner.threads": "Threads of the log cleaner",
    "log.dir": "Where a Kafka broker keeps its logs",
    "log.dir.failure": "How long a broker waits after a log directory fails",
    "log.flush.": "How often a Kafka broker checks and checkpoints its flushes",
    "log.local.retention": "Tiered storage: how much of a log stays on local disk",
    "log.message.format.version": "The message format version written (deprecated)",
    "log.message.timestamp.after": "How far in the future a record's timestamp may be",
    "log.message.timestamp.before": "How far in the past a record's timestamp may be",
    "log.preallocate": "Whether new segment files are preallocated",
    "log.segment.delete.delay": "How long a deleted segment's file lingers",
    "max.request.partition.size.limit": "The most partitions one request may name",
    "metadata.": "KRaft's metadata log",
    "metric.reporters": "Metrics reporter plug-ins",
    "metrics.": "Kafka's metrics sampling",
    "node.id": "KRaft: the node's id",
    "num.": "Thread pools of a Kafka broker",
    "offset.metadata.max.bytes": "The largest metadata string an offset commit may carry",
    "offsets.commit.": "How __consumer_offsets commits are acknowledged",
    "offsets.load.buffer": "Buffer for loading __consumer_offsets",
    "offsets.topic.compression": "Compression of __consumer_offsets",
    "password.encoder.": "How dynamic password configs are encrypted in ZooKeeper",
    "principal.builder.class": "The plug-in class that names a connection's principal",
    "process.roles": "KRaft: whether the node is a broker, a controller or both",
    "producer.id.expiration": "How long an idle producer id's state is kept",
    "producer.purgatory": "How often finished Produce waits are purged",
    "queued.max.request": "How many requests (bytes) may queue before reading stops",
    "remote.": "Tiered storage (KIP-405)",
    "replica.fetch.backoff": "How long a follower waits after a failed fetch",
    "replica.fetch.response": "The largest answer a follower fetch asks for",
    "replica.socket.": "The sockets followers fetch over",
    "replication.quota.window": "The window replication throttles are measured over",
    "request.timeout.ms": "How long a broker's own client waits for an answer",
    "sasl.": "SASL (Kerberos/GSSAPI, login plug-ins, OAUTHBEARER with a JWKS endpoint)",
    "sasl.mechanism.controller": "KRaft: the SASL mechanism for the controller",
    "security.providers": "Java security providers",
    "socket.": "Socket buffers, backlog and connection set-up of a Kafka broker",
    "ssl.": "JSSE details of TLS (protocols, cipher suites, providers, key stores)",
    "ssl.principal.mapping": "Rules that turn a certificate's name into a principal",
    "telemetry.": "Client telemetry (KIP-714)",
    "transaction.partition.verification": "Server-side checks of transactional produce",
    "transaction.remove.expired": "How often expired transactional ids are removed",
    "transaction.state.log.load": "Buffer for loading __transaction_state",
    "transaction.state.log.min.isr": "min.insync.replicas of __transaction_state",
    "transaction.state.log.segment": "segment.bytes of __transaction_state",
    "transactional.id.expiration": "How long an idle transactional id is kept",
    "zookeeper.": "The broker's ZooKeeper client (TLS, in-flight requests, migration)",
    "zookeeper.metadata.migration": "ZooKeeper to KRaft migration",
}


def area(name: str) -> str:
    """The line describing ``name``'s family of keys."""
    best = max((prefix for prefix in AREAS if name.startswith(prefix)), key=len)
    return AREAS[best]


# Kafka 3.9's broker configs: (name, type, importance + mode, default[, valid values]);
# importance H/M/L, mode R (read-only), B (per-broker), C (cluster-wide).
_ROWS: tuple[tuple[str | None, ...], ...] = (
    ('advertised.listeners', 'STRING', 'HB', None),
    ('alter.config.policy.class.name', 'CLASS', 'LR', None),
    ('alter.log.dirs.replication.quota.window.num', 'INT', 'LR', '11', '>=1'),
    ('alter.log.dirs.replication.quota.window.size.seconds', 'INT', 'LR', '1', '>=1'),
    ('authorizer.class.name', 'STRING', 'LR', ''),
    ('auto.create.topics.enable', 'BOOLEAN', 'HR', 'true'),
    ('auto.include.jmx.reporter', 'BOOLEAN', 'LR', 'true'),
    ('auto.leader.rebalance.enable', 'BOOLEAN', 'HR', 'true'),
    ('background.threads', 'INT', 'HC', '10', '>=1'),
    ('broker.heartbeat.interval.ms', 'INT', 'MR', '2000'),
    ('broker.id', 'INT', 'HR', '-1'),
    ('broker.id.generation.enable', 'BOOLEAN', 'MR', 'true'),
    ('broker.rack', 'STRING', 'MR', None),
    ('broker.session.timeout.ms', 'INT', 'MR', '9000'),
    ('client.quota.callback.class', 'CLASS', 'LR', None),
    ('compression.gzip.level', 'INT', 'MC', '-1', '1..9|-1'),
    ('compression.lz4.level', 'INT', 'MC', '9', '1..17'),
    ('compression.type', 'STRING', 'HC',
     'producer', 'in:uncompressed,zstd,lz4,snappy,gzip,producer'),
    ('compression.zstd.level', 'INT', 'MC', '3', '-131072..22'),
    ('connection.failed.authentication.delay.ms', 'INT', 'LR', '100', '>=0'),
    ('connections.max.idle.ms', 'LONG', 'MR', '600000'),
    ('connections.max.reauth.ms', 'LONG', 'MR', '0'),
    ('control.plane.listener.name', 'STRING', 'HR', None),
    ('controlled.shutdown.enable', 'BOOLEAN', 'MR', 'true'),
    ('controlled.shutdown.max.retries', 'INT', 'MR', '3'),
    ('controlled.shutdown.retry.backoff.ms', 'LONG', 'MR', '5000'),
    ('controller.listener.names', 'STRING', 'HR', None),
    ('controller.quorum.append.linger.ms', 'INT', 'MR', '25'),
    ('controller.quorum.bootstrap.servers', 'LIST', 'HR', ''),
    ('controller.quorum.election.backoff.max.ms', 'INT', 'HR', '1000'),
    ('controller.quorum.election.timeout.ms', 'INT', 'HR', '1000'),
    ('controller.quorum.fetch.timeout.ms', 'INT', 'HR', '2000'),
    ('controller.quorum.request.timeout.ms', 'INT', 'MR', '2000'),
    ('controller.quorum.retry.backoff.ms', 'INT', 'LR', '20'),
    ('controller.quorum.voters', 'LIST', 'HR', ''),
    ('controller.quota.window.num', 'INT', 'LR', '11', '>=1'),
    ('controller.quota.window.size.seconds', 'INT', 'LR', '1', '>=1'),
    ('controller.socket.timeout.ms', 'INT', 'MR', '30000'),
    ('create.topic.policy.class.name', 'CLASS', 'LR', None),
    ('default.replication.factor', 'INT', 'MR', '1'),
    ('delegation.token.expiry.check.interval.ms', 'LONG', 'LR', '3600000', '>=1'),
    ('delegation.token.expiry.time.ms', 'LONG', 'MR', '86400000', '>=1'),
    ('delegation.token.master.key', 'PASSWORD', 'MR', None),
    ('delegation.token.max.lifetime.ms', 'LONG', 'MR', '604800000', '>=1'),
    ('delegation.token.secret.key', 'PASSWORD', 'MR', None),
    ('delete.records.purgatory.purge.interval.requests', 'INT', 'MR', '1'),
    ('delete.topic.enable', 'BOOLEAN', 'HR', 'true'),
    ('early.start.listeners', 'STRING', 'HR', None),
    ('eligible.leader.replicas.enable', 'BOOLEAN', 'HR', 'false'),
    ('fetch.max.bytes', 'INT', 'MR', '57671680', '>=1024'),
    ('fetch.purgatory.purge.interval.requests', 'INT', 'MR', '1000'),
    ('group.consumer.assignors', 'LIST', 'MR',
     'org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor'),
    ('group.consumer.heartbeat.interval.ms', 'INT', 'MR', '5000', '>=1'),
    ('group.consumer.max.heartbeat.interval.ms', 'INT', 'MR', '15000', '>=1'),
    ('group.consumer.max.session.timeout.ms', 'INT', 'MR', '60000', '>=1'),
    ('group.consumer.max.size', 'INT', 'MR', '2147483647', '>=1'),
    ('group.consumer.min.heartbeat.interval.ms', 'INT', 'MR', '5000', '>=1'),
    ('group.consumer.min.session.timeout.ms', 'INT', 'MR', '45000', '>=1'),
    ('group.consumer.session.timeout.ms', 'INT', 'MR', '45000', '>=1'),
    ('group.coordinator.append.linger.ms', 'INT', 'MR', '10', '>=0'),
    ('group.coordinator.rebalance.protocols', 'LIST', 'MR',
     'classic', 'in:consumer,classic,share,unknown'),
    ('group.coordinator.threads', 'INT', 'MR', '1', '>=1'),
    ('group.initial.rebalance.delay.ms', 'INT', 'MR', '3000'),
    ('group.max.session.timeout.ms', 'INT', 'MR', '1800000'),
    ('group.max.size', 'INT', 'MR', '2147483647', '>=1'),
    ('group.min.session.timeout.ms', 'INT', 'MR', '6000'),
    ('group.share.delivery.count.limit', 'INT', 'MR', '5', '2..10'),
    ('group.share.heartbeat.interval.ms', 'INT', 'MR', '5000', '>=1'),
    ('group.share.max.groups', 'SHORT', 'MR', '10', '1..100'),
    ('group.share.max.heartbeat.interval.ms', 'INT', 'MR', '15000', '>=1'),
    ('group.share.max.record.lock.duration.ms', 'INT', 'MR', '60000', '30000..3600000'),
    ('group.share.max.session.timeout.ms', 'INT', 'MR', '60000', '>=1'),
    ('group.share.max.size', 'SHORT', 'MR', '200', '10..1000'),
    ('group.share.min.heartbeat.interval.ms', 'INT', 'MR', '5000', '>=1'),
    ('group.share.min.record.lock.duration.ms', 'INT', 'MR', '15000', '1000..30000'),
    ('group.share.min.session.timeout.ms', 'INT', 'MR', '45000', '>=1'),
    ('group.share.partition.max.record.locks', 'INT', 'MR', '200', '100..10000'),
    ('group.share.record.lock.duration.ms', 'INT', 'MR', '30000', '1000..60000'),
    ('group.share.session.timeout.ms', 'INT', 'MR', '45000', '>=1'),
    ('initial.broker.registration.timeout.ms', 'INT', 'MR', '60000'),
    ('inter.broker.listener.name', 'STRING', 'MR', None),
    ('inter.broker.protocol.version', 'STRING', 'MR', '3.9-IV0'),
    ('kafka.metrics.polling.interval.secs', 'INT', 'LR', '10', '>=1'),
    ('kafka.metrics.reporters', 'LIST', 'LR', ''),
    ('leader.imbalance.check.interval.seconds', 'LONG', 'HR', '300', '>=1'),
    ('leader.imbalance.per.broker.percentage', 'INT', 'HR', '10'),
    ('listener.security.protocol.map', 'STRING', 'LB',
     'SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT'),
    ('listeners', 'STRING', 'HB', 'PLAINTEXT://:9092'),
    ('log.cleaner.backoff.ms', 'LONG', 'MC', '15000', '>=0'),
    ('log.cleaner.dedupe.buffer.size', 'LONG', 'MC', '134217728'),
    ('log.cleaner.delete.retention.ms', 'LONG', 'MC', '86400000', '>=0'),
    ('log.cleaner.enable', 'BOOLEAN', 'MR', 'true'),
    ('log.cleaner.io.buffer.load.factor', 'DOUBLE', 'MC', '0.9'),
    ('log.cleaner.io.buffer.size', 'INT', 'MC', '524288', '>=0'),
    ('log.cleaner.io.max.bytes.per.second', 'DOUBLE', 'MC', '1.7976931348623157E308'),
    ('log.cleaner.max.compaction.lag.ms', 'LONG', 'MC', '9223372036854775807', '>=1'),
    ('log.cleaner.min.cleanable.ratio', 'DOUBLE', 'MC', '0.5', '0..1'),
    ('log.cleaner.min.compaction.lag.ms', 'LONG', 'MC', '0', '>=0'),
    ('log.cleaner.threads', 'INT', 'MC', '1', '>=0'),
    ('log.cleanup.policy', 'LIST', 'MC', 'delete', 'in:compact,delete'),
    ('log.dir', 'STRING', 'HR', '/tmp/kafka-logs'),
    ('log.dir.failure.timeout.ms', 'LONG', 'LR', '30000', '>=1'),
    ('log.dirs', 'STRING', 'HR', None),
    ('log.flush.interval.messages', 'LONG', 'HC', '9223372036854775807', '>=1'),
    ('log.flush.interval.ms', 'LONG', 'HC', None),
    ('log.flush.offset.checkpoint.interval.ms', 'INT', 'HR', '60000', '>=0'),
    ('log.flush.scheduler.interval.ms', 'LONG', 'HR', '9223372036854775807'),
    ('log.flush.start.offset.checkpoint.interval.ms', 'INT', 'HR', '60000', '>=0'),
    ('log.index.interval.bytes', 'INT', 'MC', '4096', '>=0'),
    ('log.index.size.max.bytes', 'INT', 'MC', '10485760', '>=4'),
    ('log.local.retention.bytes', 'LONG', 'MC', '-2', '>=-2'),
    ('log.local.retention.ms', 'LONG', 'MC', '-2', '>=-2'),
    ('log.message.downconversion.enable', 'BOOLEAN', 'LC', 'true'),
    ('log.message.format.version', 'STRING', 'MR', '3.0-IV1'),
    ('log.message.timestamp.after.max.ms', 'LONG', 'MC', '9223372036854775807', '>=0'),
    ('log.message.timestamp.before.max.ms', 'LONG', 'MC', '9223372036854775807', '>=0'),
    ('log.message.timestamp.difference.max.ms', 'LONG', 'MC', '9223372036854775807', '>=0'),
    ('log.message.timestamp.type', 'STRING', 'MC', 'CreateTime', 'in:CreateTime,LogAppendTime'),
    ('log.preallocate', 'BOOLEAN', 'MC', 'false'),
    ('log.retention.bytes', 'LONG', 'HC', '-1'),
    ('log.retention.check.interval.ms', 'LONG', 'MR', '300000', '>=1'),
    ('log.retention.hours', 'INT', 'HR', '168'),
    ('log.retention.minutes', 'INT', 'HR', None),
    ('log.retention.ms', 'LONG', 'HC', None),
    ('log.roll.hours', 'INT', 'HR', '168', '>=1'),
    ('log.roll.jitter.hours', 'INT', 'HR', '0', '>=0'),
    ('log.roll.jitter.ms', 'LONG', 'HC', None),
    ('log.roll.ms', 'LONG', 'HC', None),
    ('log.segment.bytes', 'INT', 'HC', '1073741824', '>=14'),
    ('log.segment.delete.delay.ms', 'LONG', 'HC', '60000', '>=0'),
    ('max.connection.creation.rate', 'INT', 'MC', '2147483647', '>=0'),
    ('max.connections', 'INT', 'MC', '2147483647', '>=0'),
    ('max.connections.per.ip', 'INT', 'MC', '2147483647', '>=0'),
    ('max.connections.per.ip.overrides', 'STRING', 'MC', ''),
    ('max.incremental.fetch.session.cache.slots', 'INT', 'MR', '1000', '>=0'),
    ('max.request.partition.size.limit', 'INT', 'MR', '2000', '>=1'),
    ('message.max.bytes', 'INT', 'HC', '1048588', '>=0'),
    ('metadata.log.dir', 'STRING', 'HR', None),
    ('metadata.log.max.record.bytes.between.snapshots', 'LONG', 'HR', '20971520', '>=1'),
    ('metadata.log.max.snapshot.interval.ms', 'LONG', 'HR', '3600000', '>=0'),
    ('metadata.log.segment.bytes', 'INT', 'HR', '1073741824', '>=12'),
    ('metadata.log.segment.ms', 'LONG', 'HR', '604800000'),
    ('metadata.max.idle.interval.ms', 'INT', 'LR', '500', '>=0'),
    ('metadata.max.retention.bytes', 'LONG', 'HR', '104857600'),
    ('metadata.max.retention.ms', 'LONG', 'HR', '604800000'),
    ('metric.reporters', 'LIST', 'LC', ''),
    ('metrics.num.samples', 'INT', 'LR', '2', '>=1'),
    ('metrics.recording.level', 'STRING', 'LR', 'INFO'),
    ('metrics.sample.window.ms', 'LONG', 'LR', '30000', '>=1'),
    ('min.insync.replicas', 'INT', 'HC', '1', '>=1'),
    ('node.id', 'INT', 'HR', '-1'),
    ('num.io.threads', 'INT', 'HC', '8', '>=1'),
    ('num.network.threads', 'INT', 'HC', '3', '>=1'),
    ('num.partitions', 'INT', 'MR', '1', '>=1'),
    ('num.recovery.threads.per.data.dir', 'INT', 'HC', '1', '>=1'),
    ('num.replica.alter.log.dirs.threads', 'INT', 'HR', None),
    ('num.replica.fetchers', 'INT', 'HC', '1'),
    ('offset.metadata.max.bytes', 'INT', 'HR', '4096'),
    ('offsets.commit.required.acks', 'SHORT', 'HR', '-1'),
    ('offsets.commit.timeout.ms', 'INT', 'HR', '5000', '>=1'),
    ('offsets.load.buffer.size', 'INT', 'HR', '5242880', '>=1'),
    ('offsets.retention.check.interval.ms', 'LONG', 'HR', '600000', '>=1'),
    ('offsets.retention.minutes', 'INT', 'HR', '10080', '>=1'),
    ('offsets.topic.compression.codec', 'INT', 'HR', '0'),
    ('offsets.topic.num.partitions', 'INT', 'HR', '50', '>=1'),
    ('offsets.topic.replication.factor', 'SHORT', 'HR', '3', '>=1'),
    ('offsets.topic.segment.bytes', 'INT', 'HR', '104857600', '>=1'),
    ('password.encoder.cipher.algorithm', 'STRING', 'LR', 'AES/CBC/PKCS5Padding'),
    ('password.encoder.iterations', 'INT', 'LR', '4096', '>=1024'),
    ('password.encoder.key.length', 'INT', 'LR', '128', '>=8'),
    ('password.encoder.keyfactory.algorithm', 'STRING', 'LR', None),
    ('password.encoder.old.secret', 'PASSWORD', 'MR', None),
    ('password.encoder.secret', 'PASSWORD', 'MR', None),
    ('principal.builder.class', 'CLASS', 'MB',
     'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder'),
    ('process.roles', 'LIST', 'HR', '', 'in:broker,controller'),
    ('producer.id.expiration.ms', 'INT', 'LC', '86400000', '>=1'),
    ('producer.purgatory.purge.interval.requests', 'INT', 'MR', '1000'),
    ('queued.max.request.bytes', 'LONG', 'MR', '-1'),
    ('queued.max.requests', 'INT', 'HR', '500', '>=1'),
    ('quota.window.num', 'INT', 'LR', '11', '>=1'),
    ('quota.window.size.seconds', 'INT', 'LR', '1', '>=1'),
    ('remote.fetch.max.wait.ms', 'INT', 'MC', '500', '>=1'),
    ('remote.log.index.file.cache.total.size.bytes', 'LONG', 'LC', '1073741824', '>=1'),
    ('remote.log.manager.copier.thread.pool.size', 'INT', 'MR', '-1'),
    ('remote.log.manager.copy.max.bytes.per.second', 'LONG', 'MC', '9223372036854775807', '>=1'),
    ('remote.log.manager.copy.quota.window.num', 'INT', 'MR', '11', '>=1'),
    ('remote.log.manager.copy.quota.window.size.seconds', 'INT', 'MR', '1', '>=1'),
    ('remote.log.manager.expiration.thread.pool.size', 'INT', 'MR', '-1'),
    ('remote.log.manager.fetch.max.bytes.per.second', 'LONG', 'MC', '9223372036854775807', '>=1'),
    ('remote.log.manager.fetch.quota.window.num', 'INT', 'MR', '11', '>=1'),
    ('remote.log.manager.fetch.quota.window.size.seconds', 'INT', 'MR', '1', '>=1'),
    ('remote.log.manager.task.interval.ms', 'LONG', 'LR', '30000', '>=1'),
    ('remote.log.manager.thread.pool.size', 'INT', 'MR', '10', '>=1'),
    ('remote.log.metadata.custom.metadata.max.bytes', 'INT', 'LR', '128', '>=0'),
    ('remote.log.metadata.manager.class.name', 'STRING', 'MR',
     'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager',
     'non-empty'),
    ('remote.log.metadata.manager.class.path', 'STRING', 'MR', None),
    ('remote.log.metadata.manager.impl.prefix', 'STRING', 'MR', 'rlmm.config.', 'non-empty'),
    ('remote.log.metadata.manager.listener.name', 'STRING', 'MR', None, 'non-empty'),
    ('remote.log.reader.max.pending.tasks', 'INT', 'MR', '100', '>=1'),
    ('remote.log.reader.threads', 'INT', 'MR', '10', '>=1'),
    ('remote.log.storage.manager.class.name', 'STRING', 'MR', None, 'non-empty'),
    ('remote.log.storage.manager.class.path', 'STRING', 'MR', None),
    ('remote.log.storage.manager.impl.prefix', 'STRING', 'MR', 'rsm.config.', 'non-empty'),
    ('remote.log.storage.system.enable', 'BOOLEAN', 'MR', 'false'),
    ('replica.fetch.backoff.ms', 'INT', 'MR', '1000', '>=0'),
    ('replica.fetch.max.bytes', 'INT', 'MR', '1048576', '>=0'),
    ('replica.fetch.min.bytes', 'INT', 'HR', '1'),
    ('replica.fetch.response.max.bytes', 'INT', 'MR', '10485760', '>=0'),
    ('replica.fetch.wait.max.ms', 'INT', 'HR', '500'),
    ('replica.high.watermark.checkpoint.interval.ms', 'LONG', 'HR', '5000'),
    ('replica.lag.time.max.ms', 'LONG', 'HR', '30000'),
    ('replica.selector.class', 'STRING', 'MR', None),
    ('replica.socket.receive.buffer.bytes', 'INT', 'HR', '65536'),
    ('replica.socket.timeout.ms', 'INT', 'HR', '30000'),
    ('replication.quota.window.num', 'INT', 'LR', '11', '>=1'),
    ('replication.quota.window.size.seconds', 'INT', 'LR', '1', '>=1'),
    ('request.timeout.ms', 'INT', 'HR', '30000'),
    ('reserved.broker.max.id', 'INT', 'MR', '1000', '>=0'),
    ('sasl.client.callback.handler.class', 'CLASS', 'MR', None),
    ('sasl.enabled.mechanisms', 'LIST', 'MB', 'GSSAPI'),
    ('sasl.jaas.config', 'PASSWORD', 'MB', None),
    ('sasl.kerberos.kinit.cmd', 'STRING', 'MB', '/usr/bin/kinit'),
    ('sasl.kerberos.min.time.before.relogin', 'LONG', 'MB', '60000'),
    ('sasl.kerberos.principal.to.local.rules', 'LIST', 'MB', 'DEFAULT'),
    ('sasl.kerberos.service.name', 'STRING', 'MB', None),
    ('sasl.kerberos.ticket.renew.jitter', 'DOUBLE', 'MB', '0.05'),
    ('sasl.kerberos.ticket.renew.window.factor', 'DOUBLE', 'MB', '0.8'),
    ('sasl.login.callback.handler.class', 'CLASS', 'MR', None),
    ('sasl.login.class', 'CLASS', 'MR', None),
    ('sasl.login.connect.timeout.ms', 'INT', 'LR', None),
    ('sasl.login.read.timeout.ms', 'INT', 'LR', None),
    ('sasl.login.refresh.buffer.seconds', 'SHORT', 'MB', '300'),
    ('sasl.login.refresh.min.period.seconds', 'SHORT', 'MB', '60'),
    ('sasl.login.refresh.window.factor', 'DOUBLE', 'MB', '0.8'),
    ('sasl.login.refresh.window.jitter', 'DOUBLE', 'MB', '0.05'),
    ('sasl.login.retry.backoff.max.ms', 'LONG', 'LR', '10000'),
    ('sasl.login.retry.backoff.ms', 'LONG', 'LR', '100'),
    ('sasl.mechanism.controller.protocol', 'STRING', 'HR', 'GSSAPI'),
    ('sasl.mechanism.inter.broker.protocol', 'STRING', 'MB', 'GSSAPI'),
    ('sasl.oauthbearer.clock.skew.seconds', 'INT', 'LR', '30'),
    ('sasl.oauthbearer.expected.audience', 'LIST', 'LR', None),
    ('sasl.oauthbearer.expected.issuer', 'STRING', 'LR', None),
    ('sasl.oauthbearer.jwks.endpoint.refresh.ms', 'LONG', 'LR', '3600000'),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', 'LONG', 'LR', '10000'),
    ('sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', 'LONG', 'LR', '100'),
    ('sasl.oauthbearer.jwks.endpoint.url', 'STRING', 'MR', None),
    ('sasl.oauthbearer.scope.claim.name', 'STRING', 'LR', 'scope'),
    ('sasl.oauthbearer.sub.claim.name', 'STRING', 'LR', 'sub'),
    ('sasl.oauthbearer.token.endpoint.url', 'STRING', 'MR', None),
    ('sasl.server.callback.handler.class', 'CLASS', 'MR', None),
    ('sasl.server.max.receive.size', 'INT', 'MR', '524288'),
    ('security.inter.broker.protocol', 'STRING', 'MR',
     'PLAINTEXT', 'in:PLAINTEXT,SSL,SASL_PLAINTEXT,SASL_SSL'),
    ('security.providers', 'STRING', 'LR', None),
    ('socket.connection.setup.timeout.max.ms', 'LONG', 'MR', '30000'),
    ('socket.connection.setup.timeout.ms', 'LONG', 'MR', '10000'),
    ('socket.listen.backlog.size', 'INT', 'MR', '50', '>=1'),
    ('socket.receive.buffer.bytes', 'INT', 'HR', '102400'),
    ('socket.request.max.bytes', 'INT', 'HR', '104857600', '>=1'),
    ('socket.send.buffer.bytes', 'INT', 'HR', '102400'),
    ('ssl.allow.dn.changes', 'BOOLEAN', 'LR', 'false'),
    ('ssl.allow.san.changes', 'BOOLEAN', 'LR', 'false'),
    ('ssl.cipher.suites', 'LIST', 'MB', ''),
    ('ssl.client.auth', 'STRING', 'MB', 'none', 'in:required,requested,none'),
    ('ssl.enabled.protocols', 'LIST', 'MB', 'TLSv1.2'),
    ('ssl.endpoint.identification.algorithm', 'STRING', 'LB', 'https'),
    ('ssl.engine.factory.class', 'CLASS', 'LB', None),
    ('ssl.key.password', 'PASSWORD', 'MB', None),
    ('ssl.keymanager.algorithm', 'STRING', 'MB', 'SunX509'),
    ('ssl.keystore.certificate.chain', 'PASSWORD', 'MB', None),
    ('ssl.keystore.key', 'PASSWORD', 'MB', None),
    ('ssl.keystore.location', 'STRING', 'MB', None),
    ('ssl.keystore.password', 'PASSWORD', 'MB', None),
    ('ssl.keystore.type', 'STRING', 'MB', 'JKS'),
    ('ssl.principal.mapping.rules', 'STRING', 'LR', 'DEFAULT'),
    ('ssl.protocol', 'STRING', 'MB', 'TLSv1.2'),
    ('ssl.provider', 'STRING', 'MB', None),
    ('ssl.secure.random.implementation', 'STRING', 'LB', None),
    ('ssl.trustmanager.algorithm', 'STRING', 'MB', 'PKIX'),
    ('ssl.truststore.certificates', 'PASSWORD', 'MB', None),
    ('ssl.truststore.location', 'STRING', 'MB', None),
    ('ssl.truststore.password', 'PASSWORD', 'MB', None),
    ('ssl.truststore.type', 'STRING', 'MB', 'JKS'),
    ('telemetry.max.bytes', 'INT', 'LR', '1048576', '>=1'),
    ('transaction.abort.timed.out.transaction.cleanup.interval.ms', 'INT', 'LR', '10000', '>=1'),
    ('transaction.max.timeout.ms', 'INT', 'HR', '900000', '>=1'),
    ('transaction.partition.verification.enable', 'BOOLEAN', 'LC', 'true'),
    ('transaction.remove.expired.transaction.cleanup.interval.ms', 'INT', 'LR', '3600000', '>=1'),
    ('transaction.state.log.load.buffer.size', 'INT', 'HR', '5242880', '>=1'),
    ('transaction.state.log.min.isr', 'INT', 'HR', '2', '>=1'),
    ('transaction.state.log.num.partitions', 'INT', 'HR', '50', '>=1'),
    ('transaction.state.log.replication.factor', 'SHORT', 'HR', '3', '>=1'),
    ('transaction.state.log.segment.bytes', 'INT', 'HR', '104857600', '>=1'),
    ('transactional.id.expiration.ms', 'INT', 'HR', '604800000', '>=1'),
    ('unclean.leader.election.enable', 'BOOLEAN', 'HC', 'false'),
    ('zookeeper.clientCnxnSocket', 'STRING', 'MR', None),
    ('zookeeper.connect', 'STRING', 'HR', None),
    ('zookeeper.connection.timeout.ms', 'INT', 'HR', None),
    ('zookeeper.max.in.flight.requests', 'INT', 'HR', '10', '>=1'),
    ('zookeeper.metadata.migration.enable', 'BOOLEAN', 'HR', 'false'),
    ('zookeeper.session.timeout.ms', 'INT', 'HR', '18000'),
    ('zookeeper.set.acl', 'BOOLEAN', 'HR', 'false'),
    ('zookeeper.ssl.cipher.suites', 'LIST', 'LR', None),
    ('zookeeper.ssl.client.enable', 'BOOLEAN', 'MR', 'false'),
    ('zookeeper.ssl.crl.enable', 'BOOLEAN', 'LR', 'false'),
    ('zookeeper.ssl.enabled.protocols', 'LIST', 'LR', None),
    ('zookeeper.ssl.endpoint.identification.algorithm', 'STRING', 'LR', 'HTTPS'),
    ('zookeeper.ssl.keystore.location', 'STRING', 'MR', None),
    ('zookeeper.ssl.keystore.password', 'PASSWORD', 'MR', None),
    ('zookeeper.ssl.keystore.type', 'STRING', 'MR', None),
    ('zookeeper.ssl.ocsp.enable', 'BOOLEAN', 'LR', 'false'),
    ('zookeeper.ssl.protocol', 'STRING', 'LR', 'TLSv1.2'),
    ('zookeeper.ssl.truststore.location', 'STRING', 'MR', None),
    ('zookeeper.ssl.truststore.password', 'PASSWORD', 'MR', None),
    ('zookeeper.ssl.truststore.type', 'STRING', 'MR', None),
)


def _key(row: tuple) -> KafkaConfigKey:
    name, kind, flags, default, *valid = row
    return KafkaConfigKey(name, kind, IMPORTANCE[flags[0]], _MODES[flags[1]], default,
                          valid[0] if valid else None)


KAFKA_BROKER_CONFIGS: dict[str, KafkaConfigKey] = {
    key.name: key for key in map(_key, _ROWS)}
"""Every broker config of Kafka 3.9, by name."""

_INT_RANGES = {"INT": (-2**31, 2**31 - 1), "SHORT": (-2**15, 2**15 - 1),
               "LONG": (-2**63, 2**63 - 1)}
_JAVA_CLASS = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def _number(text: str) -> float:
    return float(text) if "." in text or "e" in text.lower() else int(text)


def value_problem(key: KafkaConfigKey, text: str | None) -> str | None:
    """Why Kafka's ``ConfigDef`` refuses ``text`` for ``key`` (its type, then its valid
    values), in Kafka's words after "Invalid value X for configuration Y: "; None if it
    takes it. A CLASS is checked for the shape of a Java class name only: there is no JVM
    here to load it."""
    if text is None:
        return None
    value = str(text).strip()
    kind = key.type
    parsed: float | None = None
    if kind == "BOOLEAN":
        if value.lower() not in ("true", "false"):
            return "Expected value to be either true or false"
    elif kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        try:
            parsed = int(value)
        except ValueError:
            return f"Not a number of type {kind}"
        if not low <= parsed <= high:
            return f"Not a number of type {kind}"
    elif kind == "DOUBLE":
        try:
            parsed = float(value)
        except ValueError:
            return "Not a number of type DOUBLE"
    elif kind == "CLASS":
        if not _JAVA_CLASS.match(value):
            return f"Class {value} could not be found."
    return _valid_problem(key, value, parsed)


def _valid_problem(key: KafkaConfigKey, value: str, parsed: float | None) -> str | None:
    valid = key.valid
    if valid is None:
        return None
    if valid == "non-empty":
        return "String may not be empty" if not value else None
    if valid.startswith("in:"):
        allowed = valid[3:].split(",")
        given = [v.strip() for v in value.split(",") if v.strip()] if key.type == "LIST" \
            else [value]
        bad = [v for v in given if v not in allowed]
        if bad:
            return f"String must be one of: {', '.join(allowed)}"
        return None
    if parsed is None:
        return None
    if valid.endswith("|-1") and parsed == -1:
        return None
    bounds = valid.split("|")[0]
    if bounds.startswith(">="):
        low, high = _number(bounds[2:]), None
    else:
        low_text, high_text = bounds.split("..")
        low, high = _number(low_text), _number(high_text)
    if parsed < low:
        return f"Value must be at least {bounds[2:] if bounds.startswith('>=') else low}"
    if high is not None and parsed > high:
        return f"Value must be no more than {high}"
    return None


def check_value(name: str, text: str | None) -> str | None:
    """Kafka's whole refusal of ``text`` for the broker config ``name`` ("Invalid value X
    for configuration Y: ..."), None if Kafka takes it or does not know ``name``."""
    key = KAFKA_BROKER_CONFIGS.get(name)
    problem = None if key is None else value_problem(key, text)
    return None if problem is None else f"Invalid value {text} for configuration {name}: {problem}"
