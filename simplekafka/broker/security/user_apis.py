"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), against ZooKeeper.

The admin-client way to manage SCRAM users (KIP-554), next to ``simplekafka
users`` which writes ZooKeeper itself. Alter receives the *salted* password
(the client salts and hashes; the password never travels), stores Kafka's
credential text under ``/config/users/<name>`` and notifies the brokers through
``/config/changes``. Describe tells mechanisms and iterations, never keys.
Both need the cluster's Alter or Describe permission when an authorizer is
set, as in Kafka.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from simplekafka.broker.collaborators import in_worker_thread
from simplekafka.coordination.users import (
    list_users,
    read_user_config,
    scram_credentials,
    write_user_config,
)
from simplekafka.protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.sasl import SCRAM_BY_TYPE, credential_from_salted_password


class UserScramCredentialApis:
    def __init__(self, reactor: Any, zookeeper: Any, authorizer: Any):
        self.reactor = reactor
        self.zookeeper = zookeeper
        self.authorizer = authorizer

    def register(self, dispatcher: Any) -> None:
        dispatcher.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, self.describe)
        dispatcher.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, self.alter)

    # -- Describe -------------------------------------------------------------------------

    def describe(self, context: Any, request: Any) -> Any:
        if not self.authorizer.authorize(context, AclOperation.DESCRIBE, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
        zk = self.zookeeper()
        if zk is None:
            return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "results": []}
        names = None if request.users is None else [u.name for u in request.users]
        return in_worker_thread(self.reactor, _describe, zk, names)

    # -- Alter ----------------------------------------------------------------------------

    def alter(self, context: Any, request: Any) -> Any:
        users = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        if not self.authorizer.authorize(context, AclOperation.ALTER, ResourceType.CLUSTER,
                                         CLUSTER_NAME):
            return {"results": [_result(u, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                                for u in dict.fromkeys(users)]}
        zk = self.zookeeper()
        if zk is None:
            return {"results": [_result(u, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                                for u in dict.fromkeys(users)]}
        return in_worker_thread(self.reactor, _alter, zk, request)


def _result(user: str, code: int, message: str | None = None) -> dict:
    return {"user": user, "error_code": code, "error_message": message}


def _describe(zk: Any, names: list[str] | None) -> dict:
    """Null or no names: every user (as Kafka's ``describingAllUsers``)."""
    names = names or None
    counts = Counter(names or [])
    results = []
    for user in (list_users(zk) if names is None else list(dict.fromkeys(names))):
        credentials = scram_credentials(read_user_config(zk, user))
        if counts[user] > 1:
            results.append({**_result(user, ErrorCode.DUPLICATE_RESOURCE,
                                      "Cannot describe the same user twice"),
                            "credential_infos": []})
        elif not credentials:
            if names is not None:
                results.append({**_result(user, ErrorCode.RESOURCE_NOT_FOUND,
                                          "Attempt to describe a user credential that does "
                                          "not exist"), "credential_infos": []})
        else:
            infos = [{"mechanism": m.type_number, "iterations": credentials[m.name].iterations}
                     for m in SCRAM_BY_TYPE.values() if m.name in credentials]
            results.append({**_result(user, ErrorCode.NONE), "credential_infos": infos})
    return {"error_code": 0, "results": results}


def _alter(zk: Any, request: Any) -> dict:
    """Check every alteration (Kafka's rules), then write each user once."""
    problems: dict[str, tuple[int, str]] = {}
    seen = Counter((a.name, a.mechanism) for a in [*request.deletions, *request.upsertions])
    order = list(dict.fromkeys(a.name for a in [*request.deletions, *request.upsertions]))
    for alteration in [*request.deletions, *request.upsertions]:
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
        elif hasattr(alteration, "iterations") and not (
                mechanism.min_iterations <= alteration.iterations <= mechanism.max_iterations):
            problems[alteration.name] = (
                ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"Iterations must be {mechanism.min_iterations}..{mechanism.max_iterations}")
    results = []
    for user in order:
        if user in problems:
            results.append(_result(user, *problems[user]))
            continue
        config = read_user_config(zk, user)
        missing = [d for d in request.deletions
                   if d.name == user and SCRAM_BY_TYPE[d.mechanism].name not in config]
        if missing:
            results.append(_result(user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a "
                                   "user credential that does not exist"))
            continue
        for deletion in (d for d in request.deletions if d.name == user):
            config.pop(SCRAM_BY_TYPE[deletion.mechanism].name, None)
        for upsertion in (u for u in request.upsertions if u.name == user):
            mechanism = SCRAM_BY_TYPE[upsertion.mechanism]
            config[mechanism.name] = credential_from_salted_password(
                mechanism, upsertion.salted_password, upsertion.salt,
                upsertion.iterations).to_kafka()
        write_user_config(zk, user, config)
        results.append(_result(user, ErrorCode.NONE))
    return {"results": results}
