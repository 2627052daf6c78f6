"""``simplekafka acls``: every bad argument is one line on stderr and exit code 2, before
anything is contacted (in-process; the working commands are tested against real brokers
in stages/stage7_cluster/test_acls*.py)."""

from __future__ import annotations

import pytest

from simplekafka.cli import main
from simplekafka.cli.acls_cmd import client_security_of

Z = ["--zookeeper", "127.0.0.1:1"]


@pytest.mark.parametrize("argv, message", [
    (["add", "--topic", "t", "--operation", "Write", *Z], "--allow-principal or --deny"),
    (["add", "--allow-principal", "alice", "--operation", "Write", "--topic", "t", *Z],
     "is not TYPE:NAME"),
    (["add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t", *Z],
     "unknown AclOperation 'Fly'"),
    (["add", "--allow-principal", "User:a", "--operation", "Read", *Z], "needs a resource"),
    (["add", "--allow-principal", "User:a", "--topic", "t", *Z], "needs --operation"),
    (["add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "t",
      "--resource-pattern-type", "match", *Z], "for list and remove only"),
    (["add", "--allow-principal", "User:a", "--operation", "Read", "--cluster",
      "--resource-pattern-type", "prefixed", *Z], "'kafka-cluster'"),
    (["add", "--allow-principal", "User:a", "--operation", "Read", "--topic", "a/b", *Z],
     "has a '/'"),
    (["remove", "--allow-principal", "User:a", "--topic", "t", *Z], "needs --operation"),
    (["remove", "--operation", "Read", *Z], "needs a resource"),
    (["list"], "either --zookeeper"),
    (["list", *Z, "--bootstrap-server", "b:1"], "either --zookeeper"),
    (["list", *Z, "--command-config", "x"], "goes with --bootstrap-server"),
    (["list", "--bootstrap-server", "b:1", "--command-config", "/no/such/file"],
     "cannot read"),
])
def test_bad_arguments_are_one_line(argv, message, capsys, tmp_path):
    assert main(["acls", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simplekafka acls: error: ")
    assert message in err[0]


def test_an_unknown_security_protocol_in_the_command_config(capsys, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=KERBEROS_ONLY\n")
    assert main(["acls", "list", "--bootstrap-server", "b:1",
                 "--command-config", str(config)]) == 2
    assert "security.protocol KERBEROS_ONLY is not one of" in capsys.readouterr().err


def test_java_client_properties_become_our_clients_security():
    security = client_security_of({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                            'required username="admin" password="s3cret";'})
    assert security.ssl_context is None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "SCRAM-SHA-512", "admin", "s3cret")
    with pytest.raises(ValueError, match="needs sasl_plain_username"):
        client_security_of({"security.protocol": "SASL_SSL"})


def test_a_command_config_without_a_login_is_one_line(capsys, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
    assert main(["acls", "list", "--bootstrap-server", "b:1",
                 "--command-config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs sasl_plain_username" in err[0]
