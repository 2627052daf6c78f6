"""The broker's copy of the SCRAM credentials, kept current from ZooKeeper.

Read once at start-up and again for every ``/config/changes`` notification that
names ``users/<name>`` (``config_changes.py`` delivers both), so an
authentication never waits for ZooKeeper: the lookup is a dict access on the
reactor thread.
"""

from __future__ import annotations

import logging

from simplekafka.coordination.users import scram_credentials
from simplekafka.protocol.sasl import SCRAM_MECHANISMS, ScramCredential

log = logging.getLogger(__name__)


class ScramCredentialCache:
    """user -> mechanism -> credential."""

    def __init__(self) -> None:
        self._users: dict[str, dict[str, ScramCredential]] = {}

    def update(self, user: str, config: dict[str, str]) -> None:
        credentials = scram_credentials(config)
        for mechanism, credential in credentials.items():
            minimum = SCRAM_MECHANISMS[mechanism].min_iterations
            if credential.iterations < minimum:
                log.warning("user %s: the stored %s credential has %d iterations, fewer than "
                            "the minimum %d: its logins are refused", user, mechanism,
                            credential.iterations, minimum)
        if credentials:
            self._users[user] = credentials
        else:
            self._users.pop(user, None)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(found) for user, found in self._users.items()}
