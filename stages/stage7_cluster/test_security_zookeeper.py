"""ZooKeeper secured as Kafka secures it: SASL logins, and Kafka's ACLs on every znode.

One broker on the real embedded ZooKeeper, which takes SASL (DIGEST-MD5)
logins; the broker logs in with the JAAS file ``KAFKA_OPTS`` names and runs
with ``zookeeper.set.acl=true`` (``LocalCluster(secure_zookeeper=True)``).
Then a kazoo client that reaches ZooKeeper without the login plays the
attacker: it may read what Kafka leaves world-readable and change nothing,
and it may not even read the SCRAM credentials. The CLI commands that write
ZooKeeper work with the login and say in one line why not without it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kazoo.exceptions import NoAuthError

from simplekafka.admin import Admin, NewTopic
from simplekafka.cluster import LocalCluster
from simplekafka.coordination.connection import ZooKeeperConnectError, connect_zookeeper
from simplekafka.coordination.zk_security import (
    CLIENT_JAAS_FILE,
    kafka_acls,
    kafka_opts_for,
    zookeeper_login,
)
from simplekafka.protocol.jaas import parse_jaas_file

# -- the pieces, without processes -------------------------------------------------


def test_a_jaas_file_is_read_by_section_comments_dropped():
    sections = parse_jaas_file("""
        // the brokers' login to ZooKeeper
        Client {
          org.apache.zookeeper.server.auth.DigestLoginModule required
          username="kafka" password="s3cret";   /* not "other" */
        };
        Server { org.apache.zookeeper.server.auth.DigestLoginModule required
                 user_kafka="s3cret" user_admin="a"; };
    """)
    assert sections["Client"].login == ("kafka", "s3cret")
    assert sections["Server"].users == {"kafka": "s3cret", "admin": "a"}


def test_the_login_comes_from_the_jaas_file_kafka_opts_names(tmp_path):
    jaas = tmp_path / "jaas.conf"
    jaas.write_text('Client { m required username="kafka" password="pw"; };\n'
                    'ZkClient { m required username="other" password="o"; };\n')
    assert zookeeper_login({}) is None
    assert zookeeper_login({"KAFKA_OPTS": f"-Xmx1g {kafka_opts_for(jaas)}"}) == ("kafka", "pw")
    other = f"{kafka_opts_for(jaas)} -Dzookeeper.sasl.clientconfig=ZkClient"
    assert zookeeper_login({"KAFKA_OPTS": other}) == ("other", "o")


def test_a_named_jaas_file_that_is_missing_or_has_no_login_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        zookeeper_login({"KAFKA_OPTS": kafka_opts_for(tmp_path / "absent.conf")})
    server_only = tmp_path / "server.conf"
    server_only.write_text('Server { m required user_kafka="pw"; };\n')
    with pytest.raises(ValueError, match="no 'Client' section"):
        zookeeper_login({"KAFKA_OPTS": kafka_opts_for(server_only)})


def test_kafkas_acls_leave_sensitive_paths_unreadable_to_the_world():
    def world_can_read(path: str) -> bool:
        return any(acl.id.scheme == "world" for acl in kafka_acls(path))

    assert world_can_read("/brokers/ids/1") and world_can_read("/kafka-acl/Topic/orders")
    assert world_can_read("/config/topics/orders") and world_can_read("/config")
    for sensitive in ("/config/users", "/config/users/alice", "/config/brokers/1",
                      "/delegation_token/tokens"):
        assert not world_can_read(sensitive), sensitive
    assert not world_can_read("/config/users") and world_can_read("/config/usersx")
    assert all(acl.id.scheme == "auth" for acl in kafka_acls("/config/users")), (
        "the creator (whoever logged in) may do everything")


def test_secure_acls_without_a_login_are_refused_before_connecting():
    with pytest.raises(ZooKeeperConnectError, match="no ZooKeeper login"):
        connect_zookeeper("127.0.0.1:1", login=None, secure_acls=True, timeout=1)


# -- a real ZooKeeper and broker ---------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(brokers=1, base_dir=tmp_path_factory.mktemp("zk-secure"),
                      secure_zookeeper=True,
                      broker_config={"offsets.topic.replication.factor": "1"}) as running:
        with Admin(running.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("orders", 1, 1)])
        yield running


@pytest.fixture
def stranger(cluster):
    """A kazoo client that reached ZooKeeper's port without the brokers' login."""
    client = connect_zookeeper(cluster.zookeeper_connect, login=None, timeout=15)
    yield client
    client.stop()
    client.close()


def simplekafka(*args: str, kafka_opts: str | None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "KAFKA_OPTS"}
    if kafka_opts:
        env["KAFKA_OPTS"] = kafka_opts
    return subprocess.run([sys.executable, "-m", "simplekafka", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.integration
def test_the_broker_logged_in_and_put_kafkas_acls_on_what_it_created(cluster):
    acls = cluster.zk.get_acls("/brokers/topics/orders")[0]
    assert {(acl.id.scheme, acl.id.id, acl.perms) for acl in acls} == {
        ("sasl", "kafka", 31), ("world", "anyone", 1)}
    registration = cluster.zk.get_acls("/brokers/ids/1")[0]
    assert ("sasl", "kafka") in {(acl.id.scheme, acl.id.id) for acl in registration}


@pytest.mark.integration
def test_a_client_without_the_login_reads_the_public_znodes_and_changes_nothing(
        cluster, stranger):
    assert stranger.get_children("/brokers/ids") == ["1"]
    assert "orders" in stranger.get_children("/brokers/topics")
    writes = [
        lambda: stranger.set("/brokers/topics/orders", b"{}"),
        lambda: stranger.delete("/brokers/ids/1"),
        lambda: stranger.create("/kafka-acl/Topic/orders", b"{}", makepath=True),
        lambda: stranger.create("/config/topics/orders-2", b"{}"),
        lambda: stranger.create("/admin/delete_topics/orders", b""),
        lambda: stranger.set("/controller_epoch", b"99"),
    ]
    for write in writes:
        with pytest.raises(NoAuthError):
            write()
    assert cluster.zk.exists("/brokers/ids/1") is not None


@pytest.mark.integration
def test_scram_credentials_are_neither_readable_nor_writable_without_the_login(
        cluster, stranger):
    added = simplekafka("users", "add", "alice", "--password", "alice-secret",
                        "--zookeeper", cluster.zookeeper_connect,
                        kafka_opts=cluster.kafka_opts)
    assert added.returncode == 0, added.stderr
    assert cluster.zk.exists("/config/users/alice") is not None
    for attempt in (lambda: stranger.get("/config/users/alice"),
                    lambda: stranger.get_children("/config/users"),
                    lambda: stranger.set("/config/users/alice", b"{}"),
                    lambda: stranger.create("/config/users/mallory", b"{}")):
        with pytest.raises(NoAuthError):
            attempt()


@pytest.mark.integration
def test_the_cli_without_the_login_is_refused_in_one_line(cluster):
    for args in (("users", "add", "mallory", "--password", "mallory-secret"),
                 ("acls", "add", "--allow-principal", "User:mallory", "--operation", "All",
                  "--topic", "orders")):
        refused = simplekafka(*args, "--zookeeper", cluster.zookeeper_connect,
                              kafka_opts=None)
        assert refused.returncode != 0
        assert "ZooKeeper refused: not authorized" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    assert cluster.zk.exists("/config/users/mallory") is None


@pytest.mark.integration
def test_a_wrong_password_is_refused(cluster):
    with pytest.raises(ZooKeeperConnectError, match="refused the login of 'kafka'"):
        connect_zookeeper(cluster.zookeeper_connect, login=("kafka", "guess"), timeout=15)


@pytest.mark.integration
def test_a_broker_with_set_acl_but_no_login_does_not_start(cluster, tmp_path):
    started = simplekafka("broker", "--broker-id", "9", "--port", "0",
                          "--data-dir", str(tmp_path / "data"),
                          "--zookeeper", cluster.zookeeper_connect,
                          "--set", "zookeeper.set.acl=true", kafka_opts=None)
    assert started.returncode != 0
    assert "no ZooKeeper login" in started.stdout + started.stderr


@pytest.mark.integration
def test_zk_start_sasl_writes_the_login_and_says_what_to_export(tmp_path):
    data_dir = tmp_path / "zk"
    started = simplekafka("zk", "start", "--port", "0", "--sasl", "--data-dir", str(data_dir),
                          kafka_opts=None)
    try:
        assert started.returncode == 0, started.stderr
        client_file = data_dir / CLIENT_JAAS_FILE
        assert f"export KAFKA_OPTS='{kafka_opts_for(client_file)}'" in started.stdout
        assert oct(client_file.stat().st_mode & 0o777) == "0o600"
        assert oct((data_dir / "zookeeper_jaas.conf").stat().st_mode & 0o777) == "0o600"
        login = zookeeper_login({"KAFKA_OPTS": kafka_opts_for(client_file)})
        port = (data_dir / "zookeeper.port").read_text().strip()
        client = connect_zookeeper(f"127.0.0.1:{port}", login=login, timeout=15)
        client.stop()
        client.close()
        with pytest.raises(ZooKeeperConnectError, match="refused the login"):
            connect_zookeeper(f"127.0.0.1:{port}", login=(login[0], "not-it"), timeout=15)
    finally:
        simplekafka("zk", "stop", "--data-dir", str(data_dir), kafka_opts=None)
