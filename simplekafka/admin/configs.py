"""Topic and broker configs through the Admin: DescribeConfigs and IncrementalAlterConfigs.

Topic configs are asked of any broker (each reads ZooKeeper); a broker's own
configs of that broker. Changes are incremental (set some keys, delete
others), as ``kafka-configs --alter --add-config/--delete-config`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import error_for
from simplekafka.protocol.api import ApiKey

RESOURCE_TYPES = {"topic": 2, "topics": 2, "broker": 4, "brokers": 4}
SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG"}


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    read_only: bool
    is_default: bool
    is_sensitive: bool = False  # a password: value is None, whoever asks (Kafka's rule)


def _resource(kind: str, name: str) -> tuple[int, str]:
    try:
        return RESOURCE_TYPES[kind], name
    except KeyError:
        raise ValueError(f"resource type must be 'topic' or 'broker', not {kind!r}") from None


def _node_for(client: KafkaClient, resource_type: int, name: str, timeout_ms: int) -> int:
    controller = client.controller_id(timeout_ms)  # also loads the brokers' addresses
    return int(name) if resource_type == 4 and name else controller


def describe_configs(client: KafkaClient, kind: str, name: str,
                     timeout_ms: int) -> dict[str, ConfigEntry]:
    resource_type, name = _resource(kind, name)
    body = {"resources": [{"resource_type": resource_type, "resource_name": name,
                           "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False}
    answer = client.request(_node_for(client, resource_type, name, timeout_ms),
                            ApiKey.DESCRIBE_CONFIGS, body, timeout_ms)
    result = answer.results[0]
    if result.error_code:
        raise error_for(result.error_code, result.error_message or f"describing {kind} {name}")
    return {c.name: ConfigEntry(c.name, c.value,
                                SOURCES.get(getattr(c, "config_source", -1), "UNKNOWN"),
                                c.read_only,
                                getattr(c, "config_source", 5) in (4, 5),
                                bool(getattr(c, "is_sensitive", False)))
            for c in result.configs}


def alter_configs(client: KafkaClient, kind: str, name: str, set_configs: Mapping[str, str],
                  delete: Iterable[str], timeout_ms: int) -> None:
    resource_type, name = _resource(kind, name)
    configs = [{"name": k, "config_operation": 0, "value": str(v)}
               for k, v in set_configs.items()]
    configs += [{"name": k, "config_operation": 1, "value": None} for k in delete]
    body = {"resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": configs}], "validate_only": False}
    answer = client.request(_node_for(client, resource_type, name, timeout_ms),
                            ApiKey.INCREMENTAL_ALTER_CONFIGS, body, timeout_ms)
    result = answer.responses[0]
    if result.error_code:
        raise error_for(result.error_code, result.error_message or f"altering {kind} {name}")
