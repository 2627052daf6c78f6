"""JAAS text, as Kafka and ZooKeeper take logins: one entry (``sasl.jaas.config``) or a file.

Kafka reads a listener's logins from an entry such as
``org.apache.kafka.common.security.plain.PlainLoginModule required
username="admin" password="admin-secret" user_alice="alice-secret";`` and a
broker's ZooKeeper login from the ``Client`` section of the JAAS file named by
the JVM property ``java.security.auth.login.config``::

    Client {
      org.apache.zookeeper.server.auth.DigestLoginModule required
      username="kafka" password="kafka-secret";
    };

Parsing is all this module does (no I/O), so the broker, the coordination
layer and the CLI read JAAS the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["JaasConfig", "parse_jaas_file"]

_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_SECTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*\{(.*?)\}\s*;", re.S)


@dataclass(frozen=True)
class JaasConfig:
    """One JAAS login entry, read for what a broker needs from it.

    ``org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret" user_admin="admin-secret"
    user_alice="alice-secret";`` gives the broker's own login (admin) and the
    PLAIN users (admin, alice).
    """

    login_module: str = ""
    options: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def parse(text: str | None) -> JaasConfig:
        if not text:
            return JaasConfig()
        text = text.strip()
        module = text.split(None, 1)[0] if text else ""
        options = {m[1]: m[2].replace('\\"', '"') for m in _JAAS_OPTION.finditer(text)}
        return JaasConfig(module, options)

    @property
    def users(self) -> dict[str, str]:
        """The users a server entry declares: ``user_NAME="password"`` options."""
        return {k[5:]: v for k, v in self.options.items() if k.startswith("user_") and k[5:]}

    @property
    def login(self) -> tuple[str, str] | None:
        """(username, password) this entry logs in with, if it has them."""
        if "username" in self.options and "password" in self.options:
            return self.options["username"], self.options["password"]
        return None


def parse_jaas_file(text: str) -> dict[str, JaasConfig]:
    """The sections of a JAAS file (``Name { entry; };``), each read as one entry.

    Comments (``//`` to the end of a line, ``/* ... */``) are dropped first.
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"(?m)//.*$", "", text)
    return {match.group(1): JaasConfig.parse(match.group(2)) for match in _SECTION.finditer(text)}
