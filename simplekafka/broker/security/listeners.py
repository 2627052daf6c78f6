"""Listeners: which ports a broker serves, with which security protocol, under which name.

Kafka's keys, read the way Kafka reads them:

* ``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094`` names each
  listener (the part before ``://``) and where it binds;
* ``listener.security.protocol.map=INTERNAL:SASL_SSL,...`` says which security
  protocol a listener name uses (by default a listener named after a protocol
  uses that protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL);
* ``advertised.listeners`` is what clients are told, per listener name;
* ``inter.broker.listener.name`` (or ``security.inter.broker.protocol``, which
  picks the listener of that protocol) is the listener other brokers use:
  followers fetch and the controller sends its requests there.

Settings of one listener can be given with Kafka's per-listener prefix,
``listener.name.<name lower-case>.<key>`` (``listener.name.sasl_ssl.ssl.keystore.location``),
which wins over the plain key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
# Kafka's SecurityProtocol ids, as UpdateMetadata carries them.
SECURITY_PROTOCOL_IDS = {PLAINTEXT: 0, SSL: 1, SASL_PLAINTEXT: 2, SASL_SSL: 3}
LISTENER_PREFIX = "listener.name."

_LISTENER = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>[^:/]*):(?P<port>\d+)$")


class ListenerError(ValueError):
    """A listener setting that cannot work (one line, names the key)."""


@dataclass(frozen=True)
class Listener:
    """One listener: its name, where it binds, and its security protocol."""

    name: str
    host: str
    port: int
    security_protocol: str = PLAINTEXT

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in (SSL, SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in (SASL_PLAINTEXT, SASL_SSL)

    @property
    def endpoint(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_endpoint(text: str) -> tuple[str, str, int]:
    """``NAME://host:port`` into (NAME upper-case, host, port)."""
    match = _LISTENER.match(text.strip())
    if not match:
        raise ListenerError(f"listener {text!r} is not of the form NAME://host:port")
    port = int(match["port"])
    if port > 65535:
        raise ListenerError(f"listener {text!r}: port {port} is out of range")
    return match["name"].upper(), match["host"], port


def parse_protocol_map(text: str | None) -> dict[str, str]:
    """``A:SASL_SSL,B:PLAINTEXT`` into {A: SASL_SSL, ...}; the default maps each protocol
    name to itself."""
    mapping = {p: p for p in SECURITY_PROTOCOLS}
    if not text:
        return mapping
    mapping = {}
    for item in str(text).split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in SECURITY_PROTOCOLS:
            raise ListenerError(f"listener.security.protocol.map: {item.strip()!r} is not "
                                "NAME:PROTOCOL with PROTOCOL one of "
                                f"{', '.join(SECURITY_PROTOCOLS)}")
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_listeners(values: list[str], protocol_map: dict[str, str]) -> list[Listener]:
    """Every listener of ``listeners`` (or ``advertised.listeners``), checked."""
    listeners: list[Listener] = []
    for text in values:
        name, host, port = parse_endpoint(text)
        if name not in protocol_map:
            raise ListenerError(f"listener {name} has no security protocol: add it to "
                                "listener.security.protocol.map")
        if any(existing.name == name for existing in listeners):
            raise ListenerError(f"listener name {name} is used twice")
        listeners.append(Listener(name, host, port, protocol_map[name]))
    if not listeners:
        raise ListenerError("listeners: at least one listener is needed")
    return listeners


def inter_broker_listener_name(listeners: list[Listener], name: str | None,
                               protocol: str | None) -> str:
    """The listener brokers talk to each other on (Kafka's rules, checked)."""
    if name and protocol:
        raise ListenerError("set only one of inter.broker.listener.name and "
                            "security.inter.broker.protocol")
    if name:
        if all(listener.name != name.upper() for listener in listeners):
            raise ListenerError(f"inter.broker.listener.name {name} is not in listeners")
        return name.upper()
    protocol = (protocol or PLAINTEXT).upper()
    for listener in listeners:
        if listener.name == protocol:
            return listener.name
    if protocol == PLAINTEXT and len(listeners) == 1:
        return listeners[0].name  # a single listener of any name serves everything
    raise ListenerError(f"no listener named {protocol} for security.inter.broker.protocol; "
                        "set inter.broker.listener.name")


def listener_setting(settings: Mapping[str, object], listener: str, key: str,
                     default: object = None) -> object:
    """``listener.name.<listener>.<key>`` if set, else ``key``, else ``default``."""
    prefixed = f"{LISTENER_PREFIX}{listener.lower()}.{key}"
    if settings.get(prefixed) not in (None, ""):
        return settings[prefixed]
    if settings.get(key) not in (None, ""):
        return settings[key]
    return default
