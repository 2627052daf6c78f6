"""Broker configuration: Kafka's key names and defaults, and clear refusals at start-up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from simplekafka.broker.config import BrokerConfig, ConfigError, read_properties

REQUIRED = {"broker.id": "3", "log.dirs": "/tmp/x", "zookeeper.connect": "127.0.0.1:2181"}


def test_kafka_defaults():
    config = BrokerConfig.from_properties(REQUIRED)
    assert config.broker_id == 3
    assert config["num.partitions"] == 1
    assert config["auto.create.topics.enable"] is True
    assert config["log.segment.bytes"] == 1073741824
    assert config["message.max.bytes"] == 1048588
    assert config["socket.request.max.bytes"] == 104857600
    assert config.retention_ms == 168 * 3_600_000
    assert config.advertised_host_port == ("127.0.0.1", 9092)


def test_retention_ms_wins_over_minutes_and_hours():
    config = BrokerConfig.from_properties({**REQUIRED, "log.retention.hours": "1",
                                           "log.retention.minutes": "2"})
    assert config.retention_ms == 120_000
    config = BrokerConfig.from_properties({**REQUIRED, "log.retention.ms": "5",
                                           "log.retention.minutes": "2"})
    assert config.retention_ms == 5


def test_advertised_listener_is_what_clients_are_told():
    config = BrokerConfig.from_properties({
        **REQUIRED, "listeners": "PLAINTEXT://0.0.0.0:9093",
        "advertised.listeners": "PLAINTEXT://broker3.example:19093"})
    assert (config.listen_host, config.listen_port) == ("0.0.0.0", 9093)
    assert config.advertised_host_port == ("broker3.example", 19093)


@pytest.mark.parametrize("properties, message", [
    ({"no.such.key": "1"}, "unknown configuration key 'no.such.key'"),
    ({"num.partitions": "many"}, "num.partitions"),
    ({"num.partitions": "0"}, "below 1"),
    ({"auto.create.topics.enable": "perhaps"}, "expected true or false"),
    ({"listeners": "localhost:9092"}, "NAME://host:port"),
    ({"broker.id": ""}, "broker.id"),
    ({"zookeeper.connect": "nohost"}, "zookeeper.connect"),
    ({"broker.id": "4294967296"}, "above 2147483647"),
    ({"log.segment.bytes": "20"}, "log settings"),
    ({"zookeeper.connect": "127.0.0.1:2181/a//b"}, "bad chroot"),
])
def test_bad_configuration_is_one_clear_line(properties, message):
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.from_properties({**REQUIRED, **properties})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_required_key():
    with pytest.raises(ConfigError, match=r"zookeeper\.connect is required"):
        BrokerConfig.from_properties({"broker.id": "1", "log.dirs": "/tmp/x"})


def test_server_properties_file_with_ignored_jvm_keys(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("# a stock Kafka file\nbroker.id=0\nnum.network.threads=3\n"
                    "log.dirs=/tmp/kafka-logs\nzookeeper.connect=localhost:2181\n"
                    "log.retention.hours: 1\n")
    config = BrokerConfig.from_properties(read_properties(path))
    assert config.broker_id == 0
    assert config.retention_ms == 3_600_000
    assert config.ignored_keys == ["num.network.threads"]


def _broker_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simplekafka", "broker", *args],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.integration
def test_cli_refuses_unknown_key_with_one_line_and_exit_2(tmp_path):
    result = _broker_cli("--broker-id", "1", "--port", "0", "--data-dir", str(tmp_path),
                         "--zookeeper", "127.0.0.1:1", "--set", "log.segmnet.bytes=100")
    assert result.returncode == 2
    assert "log.segmnet.bytes" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_cli_refuses_bad_value(tmp_path):
    result = _broker_cli("--broker-id", "1", "--port", "0", "--data-dir", str(tmp_path),
                         "--zookeeper", "127.0.0.1:1", "--set", "min.insync.replicas=zero")
    assert result.returncode == 2
    assert "min.insync.replicas" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_cli_reports_unreachable_zookeeper_and_exits_non_zero(tmp_path):
    result = _broker_cli("--broker-id", "1", "--port", "0", "--data-dir", str(tmp_path),
                         "--zookeeper", "127.0.0.1:1",
                         "--set", "zookeeper.connection.timeout.ms=1000")
    assert result.returncode != 0
    assert "could not start" in result.stderr
    assert "Traceback" not in result.stderr
