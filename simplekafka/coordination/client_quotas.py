"""Client quotas in ZooKeeper, where ZooKeeper-mode Kafka keeps them.

A quota is an entity config like a topic's, ``{"version": 1, "config": {...}}``,
at one of these znodes (the most specific one that exists wins, in this order):

    /config/users/<user>/clients/<client-id>
    /config/users/<user>/clients/<default>
    /config/users/<user>
    /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>
    /config/users/<default>
    /config/clients/<client-id>
    /config/clients/<default>

Names are URL-encoded as Kafka's ``Sanitizer`` does (``*`` as ``%2A``, a space
as ``%20``), so a client id with ``/`` in it stays one path component. A
user's node may also hold its SCRAM credentials (``coordination.users``):
writing a quota keeps every other key. Each write also creates a
``/config/changes/config_change_<seq>`` naming ``users/<u>``,
``users/<u>/clients/<c>`` or ``clients/<c>``, which every broker follows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from simplekafka.coordination.configs import (
    desanitize,
    read_entity_config,
    sanitize,
    write_entity_config,
)

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
USERS = "users"
CLIENTS = "clients"
DEFAULT = "<default>"  # the znode name of an entity's default (a null name on the wire)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
# Kafka's user and client-id quota keys, with whether the value is whole (LONG) or not.
QUOTA_KEYS: dict[str, bool] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}

# (user, client id): each a sanitized znode name, DEFAULT, or None when the entity has no
# such part. ("alice", None) is /config/users/alice; (None, DEFAULT) /config/clients/<default>.
Entity = tuple[str | None, str | None]


class QuotaError(ValueError):
    """An entity or a value Kafka refuses (INVALID_REQUEST, with this message)."""


def entity_of(parts: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity the wire names, (type, name or None for the default), checked as Kafka's
    ``ZkAdminManager`` checks it."""
    user: str | None = None
    client: str | None = None
    seen: set[str] = set()
    for entity_type, name in parts:
        if entity_type in seen:
            raise QuotaError(f"Duplicate {entity_type} entity type")
        seen.add(entity_type)
        if name is not None and not name:
            raise QuotaError(f"Empty {entity_type} not supported")
        znode = DEFAULT if name is None else sanitize(name)
        if entity_type == USER:
            user = znode
        elif entity_type == CLIENT_ID:
            client = znode
        elif entity_type == IP:
            raise QuotaError("ip quotas (connection_creation_rate) are not supported by "
                             "SimpleKafka")
        else:
            raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
    if not seen:
        raise QuotaError("Invalid empty client quota entity")
    return user, client


def wire_parts(entity: Entity) -> list[tuple[str, str | None]]:
    """The entity as (entity type, name) pairs, a default as None (the wire's form)."""
    parts = []
    for entity_type, znode in ((USER, entity[0]), (CLIENT_ID, entity[1])):
        if znode is not None:
            parts.append((entity_type, None if znode == DEFAULT else desanitize(znode)))
    return parts


def config_location(entity: Entity) -> tuple[str, str]:
    """(entity type, name) as ``coordination.configs`` and ``/config/changes`` name them."""
    user, client = entity
    if user is not None and client is not None:
        return USERS, f"{user}/{CLIENTS}/{client}"
    if user is not None:
        return USERS, user
    if client is not None:
        return CLIENTS, client
    raise QuotaError("Invalid empty client quota entity")


def entity_at(entity_type: str, name: str) -> Entity | None:
    """The entity a ``/config/changes`` notification names (None: not a quota entity)."""
    if entity_type == CLIENTS and "/" not in name:
        return None, name
    if entity_type == USERS:
        user, sep, client = name.partition(f"/{CLIENTS}/")
        return (user, client) if sep else (name, None)
    return None


def quota_values(config: Mapping[str, str]) -> dict[str, float]:
    """The quota keys of an entity's config, as numbers (other keys, SCRAM ones, skipped)."""
    values = {}
    for key, text in config.items():
        if key in QUOTA_KEYS:
            try:
                values[key] = float(text)
            except ValueError:
                continue
    return values


def stored_text(key: str, value: float) -> str:
    """The text Kafka stores for a quota value: whole for a LONG key, a double otherwise."""
    if key not in QUOTA_KEYS:
        raise QuotaError(f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise QuotaError(f"Configuration {key} must be a finite number")
    if QUOTA_KEYS[key]:
        whole = int(value + 1e-6)
        if abs(whole - value) > 1e-6:
            raise QuotaError(f"Configuration {key} must be a LONG value")
        return str(whole)
    return repr(float(value))


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def list_entities(zk: KazooClient) -> list[Entity]:
    """Every user, user/client-id and client-id entity with a znode (quotas or not)."""
    found: list[Entity] = []
    for user in _children(zk, f"/config/{USERS}"):
        found.append((user, None))
        found.extend((user, client)
                     for client in _children(zk, f"/config/{USERS}/{user}/{CLIENTS}"))
    found.extend((None, client) for client in _children(zk, f"/config/{CLIENTS}"))
    return found


def read_quotas(zk: KazooClient, entity: Entity) -> dict[str, float]:
    return quota_values(read_entity_config(zk, *config_location(entity)))


def all_quotas(zk: KazooClient) -> dict[Entity, dict[str, float]]:
    """Every entity that has at least one quota, with its quotas."""
    found = {}
    for entity in list_entities(zk):
        values = read_quotas(zk, entity)
        if values:
            found[entity] = values
    return found


def alter_quotas(zk: KazooClient, entity: Entity, set_values: Mapping[str, float],
                 remove: Iterable[str] = (), validate_only: bool = False) -> None:
    """Set and remove quota keys of one entity (other keys kept) and notify every broker."""
    entity_type, name = config_location(entity)
    texts = {key: stored_text(key, value) for key, value in set_values.items()}
    config = read_entity_config(zk, entity_type, name)
    for key in remove:
        config.pop(key, None)
    config.update(texts)
    if validate_only:
        return
    if "/" in name:  # a user's clients/ node: its parents first (Kafka creates them empty)
        zk.ensure_path(f"/config/{entity_type}/{name.rsplit('/', 1)[0]}")
    write_entity_config(zk, entity_type, name, config)
