"""Pytest fixtures for a real ZooKeeper, shared by every stage's tests.

One embedded ZooKeeper is started per test session (it takes a couple of
seconds); each test gets its own chroot, so tests never see each other's
znodes. The root ``conftest.py`` loads this module with
``pytest_plugins = ["simplekafka.coordination.pytest_plugin"]``.

Fixtures:

- ``zookeeper``: the session's :class:`EmbeddedZooKeeper` (``.connect_string``)
- ``zk_connect``: ``"127.0.0.1:PORT/test-<unique>"``, a fresh chroot for this test
- ``zk``: a started KazooClient in that chroot (short 4 s session), stopped afterwards
- ``zk_client_factory``: ``make(session_timeout=4.0)`` for more clients in the chroot
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from simplekafka.coordination.connection import connect_zookeeper
from simplekafka.coordination.testing import expire_session
from simplekafka.coordination.zookeeper_server import EmbeddedZooKeeper

__all__ = ["TEST_SESSION_TIMEOUT", "expire_session", "zk", "zk_client_factory", "zk_connect",
           "zookeeper"]

#: Short sessions keep failure tests quick; the embedded server allows down to 1 s.
TEST_SESSION_TIMEOUT = 4.0


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    """A real ZooKeeper for the whole test session (port chosen freely)."""
    server = EmbeddedZooKeeper(port=0, data_dir=tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper: EmbeddedZooKeeper) -> Iterator[str]:
    """A connect string with a chroot of this test's own; the chroot is removed afterwards."""
    chroot = f"/test-{uuid.uuid4().hex[:12]}"
    yield zookeeper.connect_string + chroot
    with contextlib.suppress(Exception):
        cleaner = connect_zookeeper(zookeeper.connect_string, timeout=10)
        try:
            cleaner.delete(chroot, recursive=True)
        finally:
            cleaner.stop()
            cleaner.close()


@pytest.fixture
def zk_client_factory(zk_connect: str) -> Iterator[Callable[..., KazooClient]]:
    """Make extra started clients in the test's chroot; all are stopped afterwards."""
    clients: list[KazooClient] = []

    def make(session_timeout: float = TEST_SESSION_TIMEOUT) -> KazooClient:
        client = connect_zookeeper(zk_connect, timeout=15, session_timeout=session_timeout)
        clients.append(client)
        return client

    yield make
    for client in clients:
        with contextlib.suppress(Exception):
            client.stop()
            client.close()


@pytest.fixture
def zk(zk_client_factory: Callable[..., KazooClient]) -> KazooClient:
    """A started KazooClient in this test's chroot."""
    return zk_client_factory()

