"""SCRAM credentials in ZooKeeper, where ZooKeeper-mode Kafka keeps them.

``/config/users/<name>`` is an entity config like a topic's:
``{"version": 1, "config": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,
iterations=4096"}}`` (Kafka's ``kafka-configs --entity-type users
--add-config 'SCRAM-SHA-256=[password=...]'`` writes exactly this), and every
change is announced through ``/config/changes`` so each broker rereads the
user without a restart. Only the salted keys are stored, never a password.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from simplekafka.coordination.configs import (
    desanitize,
    read_entity_config,
    sanitize,
    write_entity_config,
)
from simplekafka.protocol.sasl import SCRAM_MECHANISMS, ScramCredential

USERS = "users"
CONFIG_USERS = "/config/users"


def user_znodes(zk: KazooClient) -> list[str]:
    """Every user's znode name under /config/users (sanitized, sorted)."""
    try:
        return sorted(zk.get_children(CONFIG_USERS))
    except NoNodeError:
        return []


def list_users(zk: KazooClient) -> list[str]:
    """Every user with an entity config (their names, sorted)."""
    return sorted(desanitize(child) for child in user_znodes(zk))


def read_user_config(zk: KazooClient, user: str) -> dict[str, str]:
    return read_entity_config(zk, USERS, sanitize(user))


def write_user_config(zk: KazooClient, user: str, config: dict[str, str]) -> None:
    write_entity_config(zk, USERS, sanitize(user), config)


def scram_credentials(config: dict[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials in one user's config, by mechanism (unreadable ones skipped)."""
    found = {}
    for mechanism in SCRAM_MECHANISMS:
        text = config.get(mechanism)
        if text:
            try:
                found[mechanism] = ScramCredential.from_kafka(text)
            except ValueError:
                continue
    return found


def read_user_credentials(zk: KazooClient, user: str) -> dict[str, ScramCredential]:
    return scram_credentials(read_user_config(zk, user))


def set_scram_credential(zk: KazooClient, user: str, mechanism: str,
                         credential: ScramCredential) -> None:
    """Add or replace one user's credential for ``mechanism`` and notify the brokers."""
    config = read_user_config(zk, user)
    config[mechanism] = credential.to_kafka()
    write_user_config(zk, user, config)


def delete_scram_credential(zk: KazooClient, user: str, mechanism: str | None = None) -> bool:
    """Remove one mechanism's credential (or every SCRAM one); whether anything was removed."""
    config = read_user_config(zk, user)
    mechanisms = [mechanism] if mechanism else list(SCRAM_MECHANISMS)
    removed = [m for m in mechanisms if config.pop(m, None) is not None]
    if removed:
        write_user_config(zk, user, config)
    return bool(removed)
