"""Dynamic configs in ZooKeeper, as ZooKeeper-mode Kafka keeps them.

An entity's overrides live in ``/config/<type>/<name>`` (``topics/<t>``,
``brokers/<id>``, ``brokers/<default>`` for the cluster-wide default), as
``{"version": 1, "config": {...}}``. Writing one also creates a sequential
``/config/changes/config_change_<seq>`` naming the entity
(``{"version": 2, "entity_path": "topics/orders"}``), in the same multi: every
broker watches ``/config/changes`` and rereads the entity named there, so a
change takes effect everywhere without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, unquote_plus

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from simplekafka.coordination.znodes import ConfigChangeNotification, TopicConfig, ZkPaths

TOPICS = "topics"
BROKERS = "brokers"
DEFAULT_BROKER = "<default>"  # the cluster-wide default of dynamic broker configs


DEFAULT_ENTITY = "<default>"  # a users/clients default, stored as is


# A user or client id may hold any character, a znode name may not: Kafka keeps
# them URL-encoded (its Sanitizer), so user "ops/ella" is /config/users/ops%2Fella.
# Paths and notifications here carry the encoded names; the layers that name
# users and clients (SCRAM, quotas) encode and decode.
def sanitize(name: str) -> str:
    """Kafka's Sanitizer: URL-encoding that keeps only letters, digits and ``._-``."""
    if name == DEFAULT_ENTITY:
        return name
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return name if name == DEFAULT_ENTITY else unquote_plus(name)


def entity_path(entity_type: str, name: str) -> str:
    return f"/config/{entity_type}/{name}"


def read_entity_config(zk: KazooClient, entity_type: str, name: str) -> dict[str, str]:
    """The entity's overrides ({} when it has none)."""
    try:
        data, _stat = zk.get(entity_path(entity_type, name))
    except NoNodeError:
        return {}
    return dict(TopicConfig.from_json(data, name).config) if data else {}


def write_entity_config(zk: KazooClient, entity_type: str, name: str,
                        config: Mapping[str, str]) -> None:
    """Replace the entity's overrides and notify every broker (one multi)."""
    path = entity_path(entity_type, name)
    zk.ensure_path(f"/config/{entity_type}")
    zk.ensure_path(ZkPaths.CONFIG_CHANGES)
    payload = TopicConfig({str(k): str(v) for k, v in config.items()}).to_json()
    transaction = zk.transaction()
    if zk.exists(path):
        transaction.set_data(path, payload)
    else:
        transaction.create(path, payload)
    transaction.create(ZkPaths.CONFIG_CHANGE_PREFIX,
                       ConfigChangeNotification(f"{entity_type}/{name}").to_json(),
                       sequence=True)
    failures = [r for r in transaction.commit() if isinstance(r, Exception)]
    if failures:
        raise failures[0]


def read_change(zk: KazooClient, child: str) -> tuple[str, str] | None:
    """(entity type, name) a ``config_change_<seq>`` names, or None if it is gone."""
    try:
        data, _stat = zk.get(f"{ZkPaths.CONFIG_CHANGES}/{child}")
    except NoNodeError:
        return None
    entity = ConfigChangeNotification.from_json(data).entity_path
    entity_type, _, name = entity.partition("/")
    return entity_type, name
