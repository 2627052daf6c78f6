"""SCRAM users through the Admin: DescribeUserScramCredentials and
AlterUserScramCredentials (KIP-554), what ``kafka-configs --bootstrap-server
--entity-type users`` sends. The client salts and hashes the password (with
``simplekafka.protocol.sasl``, as ``simplekafka users add`` does before writing
ZooKeeper), so the password never travels; the broker stores the credential
and tells the other brokers."""

from __future__ import annotations

import os
from dataclasses import dataclass

from simplekafka.client.client import KafkaClient
from simplekafka.client.errors import error_for
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.sasl import SCRAM_BY_TYPE, scram_mechanism


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str  # "SCRAM-SHA-256" or "SCRAM-SHA-512"
    iterations: int


def _node(client: KafkaClient, timeout_ms: int) -> int:
    return client.controller_id(timeout_ms)  # any broker answers; this one is known


def describe_users(client: KafkaClient, names: list[str] | None,
                   timeout_ms: int) -> dict[str, list[ScramCredentialInfo]]:
    """Every user with SCRAM credentials (or ``names``): mechanisms and iterations, never
    keys. An unknown name among ``names`` is ResourceNotFoundError."""
    body = {"users": None if names is None else [{"name": n} for n in names]}
    answer = client.request(_node(client, timeout_ms), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                            body, timeout_ms)
    if answer.error_code:
        raise error_for(answer.error_code, answer.error_message or "describing users")
    found = {}
    for result in answer.results:
        if result.error_code:
            raise error_for(result.error_code, result.error_message or f"user {result.user}")
        found[result.user] = [
            ScramCredentialInfo(SCRAM_BY_TYPE[c.mechanism].name if c.mechanism in SCRAM_BY_TYPE
                                else f"UNKNOWN({c.mechanism})", c.iterations)
            for c in result.credential_infos]
    return found


def _alter(client: KafkaClient, body: dict, user: str, timeout_ms: int) -> None:
    answer = client.request(_node(client, timeout_ms), ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                            body, timeout_ms)
    for result in answer.results:
        if result.error_code:
            raise error_for(result.error_code, result.error_message or f"user {result.user}")
    if not answer.results:
        raise error_for(ErrorCode.UNKNOWN_SERVER_ERROR, f"no answer about user {user}")


def upsert_user(client: KafkaClient, name: str, mechanism: str, password: str,
                iterations: int, timeout_ms: int) -> None:
    """Add or replace ``name``'s credential for ``mechanism`` (ValueError: a mechanism or
    iteration count SCRAM does not allow, found before anything is sent)."""
    scram = scram_mechanism(mechanism)
    if not scram.min_iterations <= iterations <= scram.max_iterations:
        raise ValueError(f"iterations must be {scram.min_iterations}..{scram.max_iterations} "
                         f"for {scram.name}, not {iterations}")
    salt = os.urandom(32)
    body = {"deletions": [], "upsertions": [{
        "name": name, "mechanism": scram.type_number, "iterations": iterations, "salt": salt,
        "salted_password": scram.salted_password(password, salt, iterations)}]}
    _alter(client, body, name, timeout_ms)


def delete_user(client: KafkaClient, name: str, mechanism: str, timeout_ms: int) -> None:
    """Remove ``name``'s credential for ``mechanism`` (ResourceNotFoundError if it has none)."""
    scram = scram_mechanism(mechanism)
    _alter(client, {"deletions": [{"name": name, "mechanism": scram.type_number}],
                    "upsertions": []}, name, timeout_ms)
