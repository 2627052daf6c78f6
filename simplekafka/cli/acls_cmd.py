"""``simplekafka acls add|remove|list``: kafka-acls.sh for topics, groups, the cluster.

With ``--zookeeper Z`` the ACL znodes are written directly (as ``kafka-acls
--authorizer-properties zookeeper.connect=Z`` did), with the change
notification every broker follows; with ``--bootstrap-server B`` (and
``--command-config FILE``, the client's properties) the brokers are asked
(CreateAcls, DescribeAcls, DeleteAcls), which needs Alter or Describe on the
cluster. Output lines are kafka-acls's.

The command config is a Java client's properties file: ``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config`` (its ``username``/``password``; for
OAUTHBEARER Kafka's ``unsecuredLogin*`` options, which make unsecured tokens),
``ssl.truststore.location`` and ``ssl.keystore.location`` (PEM files).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from simplekafka.cli import CliError
from simplekafka.cli.client_common import kafka_errors_are_one_line
from simplekafka.protocol.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    binding_problem,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from simplekafka.admin import Admin
    from simplekafka.client.security import ClientSecurity

_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
_JAAS_FIELD = r'{}\s*=\s*"([^"]*)"'


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "acls", help="add, remove or list ACLs (kafka-acls)", description=__doc__.strip("`"))
    parser.add_argument("action", choices=["add", "remove", "list"],
                        help="add ACLs, remove those matching, or list them")
    parser.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME",
                        help="principal the ACL allows (repeatable), e.g. User:alice")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME",
                        help="principal the ACL denies (repeatable)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="host the allow ACLs apply to (default *: any)")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                        help="host the deny ACLs apply to (default *: any)")
    parser.add_argument("--operation", action="append", default=[], metavar="OP",
                        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                             "DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable)")
    resource = parser.add_mutually_exclusive_group()
    resource.add_argument("--topic", metavar="T", help="the ACLs are on topic T")
    resource.add_argument("--group", metavar="G", help="the ACLs are on consumer group G")
    resource.add_argument("--transactional-id", metavar="ID",
                          help="the ACLs are on transactional id ID")
    resource.add_argument("--cluster", action="store_true", help="the ACLs are on the cluster")
    parser.add_argument("--resource-pattern-type", default=None,
                        choices=["literal", "prefixed", "any", "match"],
                        help="literal (default for add), prefixed; list/remove also any, match")
    parser.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                        help="write and read the ACL znodes directly")
    parser.add_argument("--bootstrap-server", "-b", metavar="HOST:PORT[,...]",
                        help="ask the brokers (CreateAcls, DescribeAcls, DeleteAcls)")
    parser.add_argument("--command-config", metavar="FILE", type=Path,
                        help="client properties for --bootstrap-server (security.protocol...)")
    parser.add_argument("--timeout-ms", dest="request_timeout_ms", type=int, default=10_000,
                        metavar="MS", help="give up on the cluster after this long")
    parser.set_defaults(func=acls_main)


def _pattern(args: argparse.Namespace, for_filter: bool) -> ResourcePattern | None:
    """The resource the arguments name (None if none), with its pattern type."""
    if args.topic is not None:
        kind, name = ResourceType.TOPIC, args.topic
    elif args.group is not None:
        kind, name = ResourceType.GROUP, args.group
    elif args.transactional_id is not None:
        kind, name = ResourceType.TRANSACTIONAL_ID, args.transactional_id
    elif args.cluster:
        kind, name = ResourceType.CLUSTER, CLUSTER_NAME
    else:
        return None
    if not name:
        raise CliError("the resource name is empty")
    text = args.resource_pattern_type or "literal"
    pattern_type = PatternType.parse(text)
    if not for_filter and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CliError(f"--resource-pattern-type {text} is for list and remove only")
    return ResourcePattern(kind, name, pattern_type)  # type: ignore[arg-type]


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    try:
        return [AclOperation.parse(op) for op in args.operation]  # type: ignore[misc]
    except ValueError as exc:
        raise CliError(f"--operation: {exc}") from None


def _entries(args: argparse.Namespace) -> list[AccessControlEntry]:
    operations = _operations(args)
    entries = []
    for principals, hosts, permission in (
            (args.allow_principal, args.allow_host or ["*"], AclPermissionType.ALLOW),
            (args.deny_principal, args.deny_host or ["*"], AclPermissionType.DENY)):
        for principal in principals:
            for host in hosts:
                for operation in operations:
                    entries.append(AccessControlEntry(principal, host, operation, permission))
    return entries


def _bindings_to_add(args: argparse.Namespace) -> list[AclBinding]:
    pattern = _pattern(args, for_filter=False)
    if pattern is None:
        raise CliError("add needs a resource: --topic T, --group G, --transactional-id ID "
                       "or --cluster")
    if not args.allow_principal and not args.deny_principal:
        raise CliError("add needs --allow-principal or --deny-principal (User:NAME)")
    if not args.operation:
        raise CliError("add needs --operation (Read, Write, Describe, All...)")
    bindings = [AclBinding(pattern, entry) for entry in _entries(args)]
    for binding in bindings:
        problem = binding_problem(binding)
        if problem:
            raise CliError(problem)
    return bindings


def _filters(args: argparse.Namespace) -> list[AclBindingFilter]:
    """What remove deletes: the named entries, or with no principal every ACL of the resource."""
    pattern = _pattern(args, for_filter=True)
    if pattern is None:
        raise CliError("remove needs a resource: --topic T, --group G, --transactional-id ID "
                       "or --cluster")
    if not args.allow_principal and not args.deny_principal:
        operations = _operations(args) or [AclOperation.ANY]
        return [AclBindingFilter(resource_type=pattern.resource_type, name=pattern.name,
                                 pattern_type=pattern.pattern_type, operation=op)
                for op in operations]
    if not args.operation:
        raise CliError("remove with a principal needs --operation")
    return [AclBindingFilter(resource_type=pattern.resource_type, name=pattern.name,
                             pattern_type=pattern.pattern_type, principal=e.principal,
                             host=e.host, operation=e.operation, permission=e.permission)
            for e in _entries(args)]


def _list_filter(args: argparse.Namespace) -> AclBindingFilter:
    pattern = _pattern(args, for_filter=True)
    principal = (args.allow_principal or args.deny_principal or [None])[0]
    if pattern is None:
        return AclBindingFilter(principal=principal)
    return AclBindingFilter(pattern.resource_type, pattern.name,
                            PatternType.ANY if args.resource_pattern_type is None
                            else pattern.pattern_type, principal)


def _print(bindings: Iterable[AclBinding], heading: str) -> None:
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in bindings:
        by_pattern[binding.pattern].append(binding.entry)
    for pattern in sorted(by_pattern):
        print(f"{heading} `{pattern}`: ")
        for entry in sorted(by_pattern[pattern]):
            print(f" \t{entry} ")
        print()


def _client_properties(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    from simplekafka.broker.config import ConfigError, read_properties

    try:
        properties = read_properties(path)
    except ConfigError as exc:
        raise CliError(f"--command-config: {exc}") from None
    protocol = properties.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise CliError(f"--command-config: security.protocol {protocol} is not one of "
                       f"{', '.join(sorted(_PROTOCOLS))}")
    return properties


def client_security_of(properties: dict[str, str]) -> ClientSecurity:
    """A Java client's security properties as our client's ``ClientSecurity`` (ValueError
    for what it cannot use): the SASL login from ``sasl.jaas.config``, PEM stores only."""
    import re

    from simplekafka.client.security import client_security

    jaas = properties.get("sasl.jaas.config", "")
    login = {field: found.group(1) for field in ("username", "password")
             if (found := re.search(_JAAS_FIELD.format(field), jaas))}
    keystore = properties.get("ssl.keystore.location")
    provider = None
    if (properties.get("sasl.mechanism") or "").upper() == "OAUTHBEARER":
        # Kafka's OAuthBearerLoginModule with unsecuredLogin* options: unsecured tokens.
        from simplekafka.protocol.jaas import JaasConfig
        from simplekafka.protocol.oauthbearer import UnsecuredTokenProvider

        provider = UnsecuredTokenProvider(JaasConfig.parse(jaas).options)
    return client_security(
        properties.get("security.protocol", "PLAINTEXT"), properties.get("sasl.mechanism"),
        login.get("username"), login.get("password"), sasl_oauth_token_provider=provider,
        ssl_cafile=properties.get("ssl.truststore.location"),
        ssl_certfile=keystore, ssl_keyfile=keystore,
        # Java's way to turn host-name checks off is an empty algorithm.
        ssl_check_hostname=properties.get("ssl.endpoint.identification.algorithm",
                                          "https") != "")


@kafka_errors_are_one_line("acls")
def acls_main(args: argparse.Namespace) -> int:
    if bool(args.zookeeper) == bool(args.bootstrap_server):
        raise CliError("give either --zookeeper HOST:PORT or --bootstrap-server HOST:PORT")
    for principal in args.allow_principal + args.deny_principal:
        if ":" not in principal or principal.startswith(":") or principal.endswith(":"):
            raise CliError(f"principal {principal!r} is not TYPE:NAME (e.g. User:alice)")
    properties: dict[str, str] = {}
    if args.bootstrap_server:
        properties = _client_properties(args.command_config)
    elif args.command_config is not None:
        raise CliError("--command-config goes with --bootstrap-server")
    work: dict = {}
    if args.action == "add":
        work["bindings"] = bindings = _bindings_to_add(args)
        print(f"Adding ACLs for resource `{bindings[0].pattern}`: ")
        for binding in bindings:
            print(f" \t{binding.entry} ")
        print()
    elif args.action == "remove":
        work["filters"] = _filters(args)
    if args.zookeeper:
        return _with_zookeeper(args, work)
    return _with_brokers(args, work, properties)


def _with_zookeeper(args: argparse.Namespace, work: dict) -> int:
    from kazoo.exceptions import KazooException

    from simplekafka.coordination import ZooKeeperConnectError, connect_zookeeper
    from simplekafka.coordination.zk_security import explain_refusal

    try:
        zk = connect_zookeeper(args.zookeeper, timeout=10)
    except ZooKeeperConnectError as exc:
        raise CliError(str(exc)) from None
    try:
        return _zookeeper_action(zk, args, work)
    except KazooException as exc:
        print(f"simplekafka acls: error: {explain_refusal(exc)}", file=sys.stderr)
        return 1
    finally:
        zk.stop()
        zk.close()


def _zookeeper_action(zk: KazooClient, args: argparse.Namespace, work: dict) -> int:
    from simplekafka.coordination.acls import add_entries, read_all, remove_matching

    stored = [AclBinding(p, e) for p, entries in read_all(zk).items() for e in entries]
    if args.action == "add":
        by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
        for binding in work["bindings"]:
            by_pattern[binding.pattern].append(binding.entry)
        for pattern, entries in by_pattern.items():
            add_entries(zk, pattern, entries)
        return 0
    if args.action == "remove":
        removed = []
        for wanted in work["filters"]:
            for pattern in sorted({b.pattern for b in stored if wanted.matches_pattern(b.pattern)}):
                removed += [AclBinding(pattern, e)
                            for e in remove_matching(zk, pattern, wanted)]
        return _removed(removed)
    wanted = _list_filter(args)
    _print([b for b in stored if wanted.matches(b)], "Current ACLs for resource")
    return 0


def _with_brokers(args: argparse.Namespace, work: dict, properties: dict[str, str]) -> int:
    from simplekafka.admin import Admin
    from simplekafka.cli.client_common import bootstrap
    from simplekafka.client.client import KafkaClient

    args.bootstrap_server = args.bootstrap_server.strip()
    try:
        security = client_security_of(properties)
    except (ValueError, OSError) as exc:
        raise CliError(f"--command-config: {exc}") from None
    client = KafkaClient(bootstrap(args), client_id="simplekafka-acls",
                         request_timeout_ms=args.request_timeout_ms, security=security)
    with Admin(client=client, request_timeout_ms=args.request_timeout_ms) as admin:
        try:
            return _act(admin, args, work)
        finally:
            client.close()


def _act(admin: Admin, args: argparse.Namespace, work: dict) -> int:
    """add, remove or list through the Admin."""
    if args.action == "add":
        admin.create_acls(work["bindings"])
        return 0
    if args.action == "remove":
        return _removed(admin.delete_acls(work["filters"]))
    _print(admin.describe_acls(_list_filter(args)), "Current ACLs for resource")
    return 0


def _removed(removed: list[AclBinding]) -> int:
    if not removed:
        print("No ACLs matched: nothing removed.", file=sys.stderr)
        return 0
    _print(removed, "Removed ACLs for resource")
    return 0
