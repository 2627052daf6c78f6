"""ZooKeeper's own security, as a ZooKeeper-mode Kafka sets it up: a SASL login and ACLs on znodes.

Without it, anyone who reaches ZooKeeper's port can write ``/config/users``
(the SCRAM credentials) or ``/kafka-acl`` (who may do what), whatever the
brokers' listeners demand. Kafka's answer has two halves:

* **The login.** Every ZooKeeper client in a Kafka process (the broker, the
  admin tools) logs in with SASL DIGEST-MD5, with the username and password of
  the ``Client`` section of the JAAS file named by the JVM property
  ``java.security.auth.login.config``; Kafka's scripts pass it in
  ``KAFKA_OPTS``. We read the same variable, the same property and the same
  file (:func:`zookeeper_login`), so one ``export KAFKA_OPTS=...`` serves the
  broker and ``simplekafka`` commands alike. ZooKeeper's side is a ``Server``
  section with ``user_<name>="<password>"`` entries
  (:class:`~simplekafka.coordination.zookeeper_server.EmbeddedZooKeeper` with
  ``sasl_users``; ``simplekafka zk start --sasl`` writes both files).
* **The ACLs.** With ``zookeeper.set.acl=true`` a broker creates every znode
  with Kafka's ACLs (:func:`kafka_acls`): everything for the logged-in creator,
  and read for the world except under the sensitive roots (``/config/users``,
  ``/config/brokers``, ``/delegation_token``), which nobody else may even
  read. Kafka's admin tools do the same whenever a login is configured.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, CREATOR_ALL_ACL, READ_ACL_UNSAFE

from simplekafka.protocol.jaas import parse_jaas_file

__all__ = [
    "CLIENT_JAAS_FILE",
    "JAAS_PROPERTY",
    "SENSITIVE_ROOT_PATHS",
    "KafkaAclKazooClient",
    "ZooKeeperLoginError",
    "client_jaas_text",
    "explain_refusal",
    "kafka_acls",
    "kafka_opts_for",
    "server_jaas_text",
    "zookeeper_login",
]

JAAS_PROPERTY = "java.security.auth.login.config"
#: Where LocalCluster and ``zk start --sasl`` write the brokers' login (a JAAS Client section).
CLIENT_JAAS_FILE = "kafka_client_jaas.conf"
#: Kafka's ``zookeeper.sasl.clientconfig``: which JAAS section holds the login.
SECTION_PROPERTY = "zookeeper.sasl.clientconfig"
DIGEST_CLIENT_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
#: Kafka's ZkData.SensitiveRootPaths: not even world-readable.
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token")


class ZooKeeperLoginError(ValueError):
    """The JAAS file named for ZooKeeper's login is missing or has no usable login."""


def _system_properties(kafka_opts: str) -> dict[str, str]:
    """The ``-Dname=value`` options of a KAFKA_OPTS string."""
    found = {}
    for word in shlex.split(kafka_opts):
        if word.startswith("-D") and "=" in word:
            name, value = word[2:].split("=", 1)
            found[name] = value
    return found


def zookeeper_login(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(username, password) for ZooKeeper, from ``KAFKA_OPTS``'s JAAS file; None if none named.

    Raises :class:`ZooKeeperLoginError` when a file is named but cannot be
    read or has no DigestLoginModule login in its client section: a broker
    must not quietly connect without the login its operator configured.
    """
    environ = os.environ if environ is None else environ
    properties = _system_properties(environ.get("KAFKA_OPTS", ""))
    path = properties.get(JAAS_PROPERTY)
    if not path:
        return None
    section = properties.get(SECTION_PROPERTY, "Client")
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ZooKeeperLoginError(
            f"KAFKA_OPTS names the JAAS file {path}, which cannot be read: {exc.strerror}"
        ) from None
    entry = parse_jaas_file(text).get(section)
    if entry is None or entry.login is None:
        raise ZooKeeperLoginError(
            f"the JAAS file {path} has no '{section}' section with username and password "
            "(ZooKeeper's login: DigestLoginModule required username=\"...\" password=\"...\";)"
        )
    return entry.login


def kafka_acls(path: str) -> list[ACL]:
    """The ACLs Kafka puts on a znode it creates with zookeeper.set.acl=true."""
    sensitive = any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOT_PATHS)
    return list(CREATOR_ALL_ACL) if sensitive else list(CREATOR_ALL_ACL + READ_ACL_UNSAFE)


class _KafkaAclTransaction(TransactionRequest):
    def create(self, path: str, value: bytes = b"", acl: list[ACL] | None = None,
               ephemeral: bool = False, sequence: bool = False) -> None:
        return super().create(path, value, acl if acl is not None else kafka_acls(path),
                              ephemeral, sequence)


class KafkaAclKazooClient(KazooClient):
    """A kazoo client whose creates carry Kafka's ACLs for their path, unless given others.

    ``create``, ``ensure_path`` (each parent for its own path) and the creates
    of a ``transaction()`` all go through here, so no znode is made open by
    accident.
    """

    def create_async(self, path: str, value: bytes = b"", acl: list[ACL] | None = None,
                     *args: object, **kwargs: object) -> object:
        return super().create_async(path, value, acl if acl is not None else kafka_acls(path),
                                    *args, **kwargs)

    def transaction(self) -> TransactionRequest:
        return _KafkaAclTransaction(self)


def explain_refusal(exc: Exception) -> str:
    """One line for a ZooKeeper error a command met, saying what to do about a refusal."""
    if isinstance(exc, NoAuthError):
        return ("ZooKeeper refused: not authorized (Kafka's ACLs are on these znodes; log in "
                f"as the brokers do, with KAFKA_OPTS naming a JAAS file: -D{JAAS_PROPERTY}=...)")
    return f"ZooKeeper: {type(exc).__name__} {exc}".rstrip()


def server_jaas_text(users: dict[str, str]) -> str:
    """The ``Server`` section ZooKeeper reads: who may log in, with which password."""
    entries = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return f"Server {{\n  {DIGEST_CLIENT_MODULE} required\n  {entries};\n}};\n"


def client_jaas_text(username: str, password: str) -> str:
    """The ``Client`` section a broker or tool logs in to ZooKeeper with."""
    return (f"Client {{\n  {DIGEST_CLIENT_MODULE} required\n"
            f'  username="{username}" password="{password}";\n}};\n')


def kafka_opts_for(jaas_file: Path | str) -> str:
    """The KAFKA_OPTS value that names ``jaas_file`` for ZooKeeper's login."""
    return f"-D{JAAS_PROPERTY}={jaas_file}"
