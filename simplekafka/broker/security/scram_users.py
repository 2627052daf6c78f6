"""SCRAM users in ZooKeeper, described and altered (KIP-554's rules, as Kafka checks them).

The admin-client way to manage SCRAM users, next to ``simplekafka users``
which writes ZooKeeper itself. An alteration carries the *salted* password
(the client salts and hashes; the password never travels); Kafka's credential
text is stored under ``/config/users/<name>`` and the brokers are notified
through ``/config/changes``. A description tells mechanisms and iterations,
never keys. Both run on a worker thread (kazoo blocks) and answer one
``UserResult`` per user; the requests and their answers are the handlers'
(``simplekafka.broker.apis.user_scram_credentials``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from simplekafka.coordination.users import (
    list_users,
    read_user_config,
    scram_credentials,
    write_user_config,
)
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.sasl import SCRAM_BY_TYPE, credential_from_salted_password

if TYPE_CHECKING:
    from kazoo.client import KazooClient


class Alteration(NamedTuple):
    """A deletion (``iterations`` None) or an upsertion of one user's mechanism."""

    name: str
    mechanism: int  # the SCRAM mechanism's type number
    iterations: int | None = None
    salt: bytes = b""
    salted_password: bytes = b""


class UserResult(NamedTuple):
    """One user's outcome; ``credentials``: (mechanism type, iterations) it has."""

    user: str
    error_code: int
    error_message: str | None = None
    credentials: tuple[tuple[int, int], ...] = ()


def describe_users(zk: KazooClient, names: list[str] | None) -> list[UserResult]:
    """Null or no names: every user (as Kafka's ``describingAllUsers``)."""
    names = names or None
    counts = Counter(names or [])
    results = []
    for user in (list_users(zk) if names is None else list(dict.fromkeys(names))):
        credentials = scram_credentials(read_user_config(zk, user))
        if counts[user] > 1:
            results.append(UserResult(user, ErrorCode.DUPLICATE_RESOURCE,
                                      "Cannot describe the same user twice"))
        elif not credentials:
            if names is not None:
                results.append(UserResult(user, ErrorCode.RESOURCE_NOT_FOUND,
                                          "Attempt to describe a user credential that does "
                                          "not exist"))
        else:
            infos = tuple((m.type_number, credentials[m.name].iterations)
                          for m in SCRAM_BY_TYPE.values() if m.name in credentials)
            results.append(UserResult(user, ErrorCode.NONE, None, infos))
    return results


def alter_users(zk: KazooClient, deletions: list[Alteration],
                upsertions: list[Alteration]) -> list[UserResult]:
    """Check every alteration (Kafka's rules), then write each user once."""
    problems: dict[str, tuple[int, str]] = {}
    seen = Counter((a.name, a.mechanism) for a in [*deletions, *upsertions])
    order = list(dict.fromkeys(a.name for a in [*deletions, *upsertions]))
    for alteration in [*deletions, *upsertions]:
        mechanism = SCRAM_BY_TYPE.get(alteration.mechanism)
        if not alteration.name:
            problems[alteration.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not "
                                         "be empty")
        elif alteration.name in (".", ".."):  # the one name a znode cannot take, sanitized
            problems[alteration.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                                         f"Username {alteration.name!r} is not allowed")
        elif mechanism is None:
            problems[alteration.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                         "Unknown SCRAM mechanism")
        elif seen[(alteration.name, alteration.mechanism)] > 1:
            problems[alteration.name] = (ErrorCode.DUPLICATE_RESOURCE, "A user credential "
                                         "cannot be altered twice in the same request")
        elif alteration.iterations is not None and not (
                mechanism.min_iterations <= alteration.iterations <= mechanism.max_iterations):
            problems[alteration.name] = (
                ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"Iterations must be {mechanism.min_iterations}..{mechanism.max_iterations}")
    results = []
    for user in order:
        if user in problems:
            results.append(UserResult(user, *problems[user]))
            continue
        config = read_user_config(zk, user)
        missing = [d for d in deletions
                   if d.name == user and SCRAM_BY_TYPE[d.mechanism].name not in config]
        if missing:
            results.append(UserResult(user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a "
                                      "user credential that does not exist"))
            continue
        for deletion in (d for d in deletions if d.name == user):
            config.pop(SCRAM_BY_TYPE[deletion.mechanism].name, None)
        for upsertion in (u for u in upsertions if u.name == user):
            mechanism = SCRAM_BY_TYPE[upsertion.mechanism]
            config[mechanism.name] = credential_from_salted_password(
                mechanism, upsertion.salted_password, upsertion.salt,
                int(upsertion.iterations or 0)).to_kafka()
        write_user_config(zk, user, config)
        results.append(UserResult(user, ErrorCode.NONE))
    return results
