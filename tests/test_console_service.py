"""The console service's config changes read their own write (unit: an admin stand-in).

A broker learns a dynamic config from ZooKeeper's change notification a moment
after the write, so describing straight after an alter can still show the old
value; the console's answer to a change waits, bounded, until the broker shows
it. The same with real brokers: ``test_broker_configs_and_the_cluster_default``
in ``test_console_api.py`` and the browser's config editor in
``test_console_browser.py``.
"""

from __future__ import annotations

import pytest

from simplekafka.admin.configs import ConfigEntry
from simplekafka.console import service as console_service
from simplekafka.console.service import ConsoleService, shows_change

DEFAULT = "DYNAMIC_DEFAULT_BROKER_CONFIG"
PER_BROKER = "DYNAMIC_BROKER_CONFIG"


def entry(name: str, value: str | None, source: str, sensitive: bool = False) -> ConfigEntry:
    return ConfigEntry(name, value, source, False, source == "DEFAULT_CONFIG", sensitive)


class LateBroker:
    """An admin whose broker describes the change from its ``shown_from``-th describe on."""

    def __init__(self, shown_from: int) -> None:
        self.shown_from = shown_from
        self.calls: list[tuple[str, str]] = []

    def alter_configs(self, kind: str, name: str, set_configs: dict[str, str],
                      delete: list[str]) -> None:
        self.calls.append(("alter", name))

    def describe_configs(self, kind: str, name: str) -> dict[str, ConfigEntry]:
        self.calls.append(("describe", name))
        described = sum(call == "describe" for call, _ in self.calls)
        if described >= self.shown_from:
            return {"log.retention.ms": entry("log.retention.ms", "7200000", DEFAULT)}
        return {"log.retention.ms": entry("log.retention.ms", "604800000", "DEFAULT_CONFIG")}


def service_with(admin: LateBroker) -> ConsoleService:
    service = ConsoleService.__new__(ConsoleService)  # no client: the admin stands in
    service.admin = admin  # type: ignore[assignment]
    return service


def test_a_change_is_answered_once_the_broker_describes_it():
    admin = LateBroker(shown_from=3)
    answer = service_with(admin).alter_broker_configs(
        "default", {"set": {"log.retention.ms": "7200000"}})
    assert admin.calls == [("alter", ""), ("describe", ""), ("describe", ""), ("describe", "")]
    assert answer["configs"] == [{"name": "log.retention.ms", "value": "7200000",
                                  "source": DEFAULT, "read_only": False, "sensitive": False,
                                  "is_default": False}]


def test_the_wait_is_bounded(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(console_service, "CHANGE_SHOWN_WITHIN_SECONDS", 0.2)
    admin = LateBroker(shown_from=10**9)
    answer = service_with(admin).alter_broker_configs(
        "default", {"set": {"log.retention.ms": "7200000"}})
    assert answer["configs"][0]["value"] == "604800000"  # what the broker said at the end
    assert 2 <= sum(call == "describe" for call, _ in admin.calls) <= 10


@pytest.mark.parametrize(("entries", "set_configs", "delete", "source", "shown"), [
    ({"a": entry("a", "1", DEFAULT)}, {"a": "1"}, [], DEFAULT, True),
    ({"a": entry("a", "2", DEFAULT)}, {"a": "1"}, [], DEFAULT, False),  # the old value
    ({"a": entry("a", "1", "STATIC_BROKER_CONFIG")}, {"a": "1"}, [], PER_BROKER, False),
    ({"a": entry("a", "1", DEFAULT)}, {"a": "1"}, [], PER_BROKER, False),  # the default's
    ({}, {"a": "1"}, [], DEFAULT, False),
    ({"p": entry("p", None, DEFAULT, sensitive=True)}, {"p": "secret"}, [], DEFAULT, True),
    ({"p": entry("p", None, "DEFAULT_CONFIG", sensitive=True)}, {"p": "x"}, [], DEFAULT, False),
    ({"a": entry("a", "1", DEFAULT)}, {}, ["a"], DEFAULT, False),  # still set
    ({"a": entry("a", "9", "DEFAULT_CONFIG")}, {}, ["a"], DEFAULT, True),
    ({}, {}, ["a"], DEFAULT, True),
    # a broker's own value deleted: the cluster default beneath it shows through
    ({"a": entry("a", "1", DEFAULT)}, {}, ["a"], PER_BROKER, True),
])
def test_what_counts_as_shown(entries, set_configs, delete, source, shown):
    assert shows_change(entries, set_configs, delete, source) is shown
