"""Fixtures shared by tests/ and every stages/*/test_*.py (at the root, so both see them).

Keep each fixture small and add new ones below the others; several stages share this file.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Under CI, hypothesis draws the same examples every run, so a red CI is always
# reproducible and never caused by a lucky draw; developers' runs keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Real-ZooKeeper fixtures (zookeeper, zk_connect, zk, zk_client_factory) for every stage.
pytest_plugins = ["simplekafka.coordination.pytest_plugin"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running single-broker LocalCluster (embedded ZooKeeper), one per test module.

    Tests that kill or restart brokers should build their own LocalCluster
    rather than disturb this shared one.
    """
    from simplekafka.cluster import LocalCluster

    local = LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("cluster"))
    local.start()
    try:
        yield local
    finally:
        local.stop()
