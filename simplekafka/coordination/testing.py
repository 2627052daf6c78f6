"""Tools for testing coordination against a real ZooKeeper (no pytest needed here).

The pytest fixtures are in :mod:`simplekafka.coordination.pytest_plugin`.
"""

from __future__ import annotations

from kazoo.client import KazooClient

__all__ = ["expire_session"]


def expire_session(client: KazooClient, timeout: float = 10.0) -> None:
    """Expire ``client``'s session on the server, as a long pause or network cut would.

    The trick kazoo's own harness uses: connect a second client with the same
    session id and password, then close it; the server ends the session, deletes
    its ephemeral znodes, and ``client`` finds its session expired (LOST) when
    it reconnects, then gets a new one.
    """
    session_id, password = client.client_id
    hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
    twin = KazooClient(hosts=hosts, client_id=(session_id, password))
    twin.start(timeout=timeout)
    twin.stop()
    twin.close()
