"""Kafka 3.9's broker config set as SimpleKafka holds it (``broker/kafka_configs.py``): the
table against the list derived from Kafka 3.9's broker ConfigDef, the defaults SimpleKafka
shares with Kafka (and the few it does not, each with its reason), Kafka's type checks, and
how AlterConfigs on a broker takes each kind of key. Unit tests: no broker runs."""

from __future__ import annotations

from collections import Counter

import pytest

from simplekafka.broker.apis.configs import broker_config_problem, broker_documentation
from simplekafka.broker.config import (
    DEFAULTS_DIFFERENT_FROM_KAFKA,
    KEYS,
    NONE_MEANS_KAFKA_DEFAULT,
    BrokerConfig,
    ConfigError,
    acted_on,
    not_acted_on,
)
from simplekafka.broker.kafka_configs import (
    CLUSTER_WIDE,
    KAFKA_BROKER_CONFIGS,
    PER_BROKER,
    READ_ONLY,
    check_value,
    value_problem,
)

BASE = {"broker.id": "0", "log.dirs": "/tmp/simplekafka-unit", "zookeeper.connect": "h:2181"}


def test_the_table_is_kafka_39s_broker_config_set():
    # Kafka 3.9's broker ConfigDef without its internal keys: 314 keys, by update mode and type.
    assert len(KAFKA_BROKER_CONFIGS) == 314
    assert Counter(k.mode for k in KAFKA_BROKER_CONFIGS.values()) == {
        READ_ONLY: 225, CLUSTER_WIDE: 52, PER_BROKER: 37}
    assert Counter(k.type for k in KAFKA_BROKER_CONFIGS.values()) == {
        "INT": 135, "STRING": 59, "LONG": 49, "BOOLEAN": 20, "LIST": 15, "PASSWORD": 13,
        "CLASS": 9, "SHORT": 7, "DOUBLE": 7}
    relogin = KAFKA_BROKER_CONFIGS["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.type, relogin.mode, relogin.default, relogin.per_listener) == (
        "LONG", PER_BROKER, "60000", True)
    assert KAFKA_BROKER_CONFIGS["ssl.keystore.location"].listener_only
    assert KAFKA_BROKER_CONFIGS["log.dirs"].mode == READ_ONLY


def test_every_kafka_default_passes_kafkas_own_checks():
    for spec in KAFKA_BROKER_CONFIGS.values():
        assert value_problem(spec, spec.default) is None, spec


def _same(ours: object, kafka: str | None) -> bool:
    if isinstance(ours, bool):
        return str(ours).lower() == kafka
    if isinstance(ours, list):
        return ",".join(ours) == kafka
    if isinstance(ours, (int, float)) and kafka is not None:
        return float(ours) == float(kafka)
    return ours == kafka


def test_simplekafkas_keys_default_as_kafka_or_say_why():
    for name, key in KEYS.items():
        kafka = KAFKA_BROKER_CONFIGS.get(name)
        if kafka is None or name in DEFAULTS_DIFFERENT_FROM_KAFKA:
            continue
        if key.default is None:
            assert kafka.default is None or name in NONE_MEANS_KAFKA_DEFAULT, name
        else:
            assert _same(key.default, kafka.default), (name, key.default, kafka.default)
    for name in DEFAULTS_DIFFERENT_FROM_KAFKA:  # the list names real differences only
        assert not _same(KEYS[name].default, KAFKA_BROKER_CONFIGS[name].default), name


def test_keys_not_acted_on_are_listed_and_documented_so():
    ignored = {spec.name for spec in not_acted_on()}
    assert "sasl.kerberos.min.time.before.relogin" in ignored
    assert "log.roll.jitter.ms" in ignored  # in KEYS, its doc says "not acted on"
    assert "log.retention.ms" not in ignored and acted_on("log.retention.ms")
    assert ignored == {n for n in KAFKA_BROKER_CONFIGS if not acted_on(n)}
    for name in ignored:
        doc = broker_documentation(name)
        assert "not acted on" in doc and "Kafka: " in doc, name
    assert "not applied" in broker_documentation("listeners")  # dynamic, read at start only
    assert "not applied" not in broker_documentation("log.retention.ms")


@pytest.mark.parametrize(("name", "value", "problem"), [
    ("sasl.kerberos.min.time.before.relogin", "soon", "Not a number of type LONG"),
    ("num.io.threads", "4294967296", "Not a number of type INT"),
    ("auto.create.topics.enable", "yes", "Expected value to be either true or false"),
    ("background.threads", "0", "Value must be at least 1"),
    ("compression.gzip.level", "10", "Value must be no more than 9"),
    ("compression.type", "lz5", "String must be one of: uncompressed, zstd"),
    ("log.cleanup.policy", "compact,forever", "String must be one of: compact, delete"),
    ("principal.builder.class", "not a class", "Class not a class could not be found."),
    ("compression.gzip.level", "-1", None),
    ("log.cleanup.policy", "compact,delete", None),
    ("a.key.kafka.does.not.know", "anything", None),
])
def test_kafkas_type_and_value_checks(name, value, problem):
    found = check_value(name, value)
    if problem is None:
        assert found is None
    else:
        assert found.startswith(f"Invalid value {value} for configuration {name}: {problem}")


def test_a_stock_server_properties_loads_every_kafka_key_checked():
    config = BrokerConfig.from_properties({**BASE, "num.io.threads": "8",
                                           "process.roles": "", "log.preallocate": "true"})
    assert config.kafka_values["num.io.threads"] == "8"
    assert "log.preallocate" in config.ignored_keys
    with pytest.raises(ConfigError, match=r"num\.io\.threads: Not a number of type INT"):
        BrokerConfig.from_properties({**BASE, "num.io.threads": "eight"})
    with pytest.raises(ConfigError, match=r"password\.encoder\.iterations: Value must be at "
                                          "least 1024"):
        BrokerConfig.from_properties({**BASE, "password.encoder.iterations": "1"})


@pytest.mark.parametrize(("config", "per_broker", "problem"), [
    ({"sasl.kerberos.min.time.before.relogin": "61000"}, True, None),
    ({"listener.name.plaintext.max.connections": "500"}, True, None),
    ({"listener.name.ssl.ssl.keystore.location": "/k.pem"}, True, None),
    ({"num.io.threads": "4"}, False, None),
    ({"cleanup.policy": "compact"}, True, None),  # Kafka keeps keys it does not know
    ({"zookeeper.max.in.flight.requests": "5"}, True,
     "Cannot update these configs dynamically: Set(zookeeper.max.in.flight.requests)"),
    ({"ssl.keystore.location": "/k.pem"}, True, "only per-listener"),
    ({"sasl.kerberos.min.time.before.relogin": "1"}, False, "broker id must be specified"),
    ({"listener.name.plaintext.max.connections": "x"}, True,
     "Invalid value x for configuration listener.name.plaintext.max.connections: "
     "Not a number of type INT"),
])
def test_alter_configs_on_a_broker_as_kafka_39(config, per_broker, problem):
    found = broker_config_problem(config, per_broker=per_broker)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
