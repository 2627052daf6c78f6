"""The authorizer's decisions (Kafka's AclAuthorizer semantics), without processes.

Literal, wildcard and prefixed patterns; deny over allow; implied operations;
hosts and the ``User:*`` principal; super users; allow.everyone.if.no.acl.found;
the ACL filters DescribeAcls and DeleteAcls use; and the ZooKeeper encodings.
A hypothesis test checks the indexed decision against a plain scan of every ACL.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simplekafka.broker.config import BrokerConfig, ConfigError
from simplekafka.broker.security.authorizer import (
    ALLOW_EVERYONE,
    AclAuthorizer,
    build_authorizer,
    host_of,
)
from simplekafka.coordination.acls import (
    decode_change,
    decode_entries,
    encode_change,
    encode_entries,
    pattern_path,
)
from simplekafka.coordination.znodes import ZkPaths
from simplekafka.protocol.acls import (
    IMPLIED_BY,
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

Op, Res, Pat, Perm = AclOperation, ResourceType, PatternType, AclPermissionType
TOPIC, GROUP, CLUSTER = Res.TOPIC, Res.GROUP, Res.CLUSTER


class Ctx(NamedTuple):
    principal: str = "User:alice"
    peer: str = "10.0.0.1:50000"


ALICE, BOB = Ctx("User:alice"), Ctx("User:bob")


def allow(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, Perm.ALLOW)


def deny(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, Perm.DENY)


def with_acls(*pairs: tuple[ResourcePattern, list[AccessControlEntry]],
              **options) -> AclAuthorizer:
    authorizer = AclAuthorizer(**options)
    for pattern, entries in pairs:
        authorizer.update(pattern, entries)
    return authorizer


def topic(name: str, pattern: PatternType = Pat.LITERAL) -> ResourcePattern:
    return ResourcePattern(TOPIC, name, pattern)


def test_write_on_one_topic_is_not_write_on_another():
    auth = with_acls((topic("orders"), [allow("User:alice", Op.WRITE)]))
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "orders")
    assert not auth.authorize(ALICE, Op.WRITE, TOPIC, "payments")  # no ACL: closed by default
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "orders")
    assert not auth.authorize(BOB, Op.WRITE, TOPIC, "orders")
    assert not auth.authorize(ALICE, Op.DELETE, TOPIC, "orders")
    assert not auth.authorize(ALICE, Op.CREATE, TOPIC, "orders")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE,
                                     Op.ALL])
def test_read_write_delete_alter_imply_describe(granted):
    auth = with_acls((topic("t"), [allow("User:alice", granted)]))
    assert auth.authorize(ALICE, Op.DESCRIBE, TOPIC, "t")


@pytest.mark.parametrize("granted", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.IDEMPOTENT_WRITE])
def test_other_operations_do_not_imply_describe(granted):
    auth = with_acls((topic("t"), [allow("User:alice", granted)]))
    assert not auth.authorize(ALICE, Op.DESCRIBE, TOPIC, "t")


def test_alter_configs_implies_describe_configs_not_the_reverse():
    auth = with_acls((topic("t"), [allow("User:alice", Op.ALTER_CONFIGS)]))
    assert auth.authorize(ALICE, Op.DESCRIBE_CONFIGS, TOPIC, "t")
    auth = with_acls((topic("t"), [allow("User:alice", Op.DESCRIBE_CONFIGS)]))
    assert not auth.authorize(ALICE, Op.ALTER_CONFIGS, TOPIC, "t")


def test_describe_does_not_imply_read():
    auth = with_acls((topic("t"), [allow("User:alice", Op.DESCRIBE)]))
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "t")


def test_all_allows_every_operation():
    auth = with_acls((topic("t"), [allow("User:alice", Op.ALL)]))
    for op in (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE,
               Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        assert auth.authorize(ALICE, op, TOPIC, "t")


def test_deny_wins_over_allow_whatever_the_pattern():
    auth = with_acls(
        (topic("*"), [allow("User:alice", Op.ALL)]),
        (topic("secret-", Pat.PREFIXED), [deny("User:alice", Op.READ)]),
        (topic("secret-plans"), [allow("User:alice", Op.READ)]),
    )
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "secret-plans")
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "secret-plans")  # deny names Read only
    assert auth.authorize(ALICE, Op.READ, TOPIC, "public")


def test_deny_all_denies_everything_and_a_denied_read_still_leaves_describe():
    auth = with_acls((topic("t"), [allow("User:alice", Op.ALL), deny("User:alice", Op.ALL)]))
    assert not auth.authorize(ALICE, Op.DESCRIBE, TOPIC, "t")
    auth = with_acls((topic("t"), [allow("User:alice", Op.READ), deny("User:alice", Op.READ),
                                   allow("User:alice", Op.WRITE)]))
    assert auth.authorize(ALICE, Op.DESCRIBE, TOPIC, "t")  # Write still implies it


def test_prefixed_patterns_match_names_that_start_with_them():
    auth = with_acls((topic("team-a.", Pat.PREFIXED), [allow("User:alice", Op.WRITE)]),
                     (topic("team-a.x", Pat.PREFIXED), [allow("User:bob", Op.WRITE)]))
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "team-a.orders")
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "team-a.")
    assert not auth.authorize(ALICE, Op.WRITE, TOPIC, "team-a")
    assert not auth.authorize(ALICE, Op.WRITE, TOPIC, "team-b.orders")
    assert auth.authorize(BOB, Op.WRITE, TOPIC, "team-a.xyz")
    assert not auth.authorize(BOB, Op.WRITE, TOPIC, "team-a.orders")
    # A literal pattern named like a prefix is not a prefix.
    auth = with_acls((topic("team-a."), [allow("User:alice", Op.WRITE)]))
    assert not auth.authorize(ALICE, Op.WRITE, TOPIC, "team-a.orders")


def test_literal_star_is_every_resource_of_its_type_only():
    auth = with_acls((topic("*"), [allow("User:alice", Op.READ)]))
    assert auth.authorize(ALICE, Op.READ, TOPIC, "anything")
    assert not auth.authorize(ALICE, Op.READ, GROUP, "anything")


def test_wildcard_principal_and_hosts():
    auth = with_acls((topic("t"), [allow("User:*", Op.READ),
                                   allow("User:alice", Op.WRITE, host="10.0.0.1")]))
    assert auth.authorize(BOB, Op.READ, TOPIC, "t")
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "t")
    assert not auth.authorize(Ctx("User:alice", "10.0.0.2:4000"), Op.WRITE, TOPIC, "t")
    auth = with_acls((topic("t"), [allow("User:*", Op.READ),
                                   deny("User:*", Op.READ, host="10.0.0.9")]))
    assert not auth.authorize(Ctx("User:alice", "10.0.0.9:1"), Op.READ, TOPIC, "t")
    assert auth.authorize(Ctx("User:alice", "10.0.0.8:1"), Op.READ, TOPIC, "t")


def test_host_of_peer_strings():
    assert host_of("127.0.0.1:9092") == "127.0.0.1"
    assert host_of("::1:9092") == "::1"
    assert host_of("?") == "?"


def test_super_users_may_do_everything_even_when_denied():
    auth = with_acls((topic("t"), [deny("User:admin", Op.ALL)]),
                     super_users=["User:admin"])
    assert auth.authorize(Ctx("User:admin"), Op.DELETE, TOPIC, "t")
    assert auth.authorize(Ctx("User:admin"), Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not auth.authorize(ALICE, Op.DESCRIBE, TOPIC, "t")


def test_allow_everyone_if_no_acl_found_only_where_no_acl_applies():
    auth = with_acls((topic("locked"), [allow("User:bob", Op.READ)]), allow_if_no_acl=True)
    assert auth.authorize(ALICE, Op.WRITE, TOPIC, "open")
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "locked")
    auth = with_acls((topic("*"), [allow("User:bob", Op.READ)]), allow_if_no_acl=True)
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "open")  # the wildcard applies to it


def test_removing_the_last_acl_reopens_and_decisions_are_not_stale():
    auth = with_acls((topic("t"), [allow("User:alice", Op.READ)]))
    assert auth.authorize(ALICE, Op.READ, TOPIC, "t")
    auth.update(topic("t"), [deny("User:alice", Op.READ)])
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "t")
    auth.update(topic("t"), [])
    assert topic("t") not in auth.acls
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "t")
    auth.update(topic("t", Pat.PREFIXED), [allow("User:alice", Op.READ)])
    assert auth.authorize(ALICE, Op.READ, TOPIC, "t")
    auth.replace_all({})
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "t") and auth.acls == {}


def test_authorize_any_is_write_on_some_topic():
    auth = with_acls((topic("orders"), [allow("User:alice", Op.WRITE)]),
                     (topic("x-", Pat.PREFIXED), [allow("User:carol", Op.WRITE)]))
    assert auth.authorize_any(ALICE, Op.WRITE, TOPIC)
    assert auth.authorize_any(Ctx("User:carol"), Op.WRITE, TOPIC)
    assert not auth.authorize_any(BOB, Op.WRITE, TOPIC)
    auth.update(topic("*"), [deny("User:alice", Op.WRITE)])
    assert not auth.authorize_any(ALICE, Op.WRITE, TOPIC)


def test_allow_everyone_when_no_authorizer_is_configured():
    assert not ALLOW_EVERYONE.enabled
    assert ALLOW_EVERYONE.authorize(ALICE, Op.ALL, TOPIC, "t")
    assert ALLOW_EVERYONE.bindings() == []


def _config(**keys: str) -> BrokerConfig:
    base = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/tmp/x"}
    return BrokerConfig.from_properties({**base, **keys})


@pytest.mark.parametrize("name", ["kafka.security.authorizer.AclAuthorizer",
                                  "kafka.security.auth.SimpleAclAuthorizer"])
def test_kafka_authorizer_names_are_accepted(name):
    auth = build_authorizer(_config(**{"authorizer.class.name": name,
                                       "super.users": "User:admin; User:broker"}))
    assert isinstance(auth, AclAuthorizer)
    assert auth.super_users == {"User:admin", "User:broker"}
    assert auth.allow_if_no_acl is False  # Kafka's default once an authorizer is set
    assert build_authorizer(_config()) is ALLOW_EVERYONE


def test_an_unknown_authorizer_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="authorizer\\.class\\.name"):
        _config(**{"authorizer.class.name": "com.example.Nope"})


# -- filters (DescribeAcls, DeleteAcls) -------------------------------------------------------

BINDINGS = [
    AclBinding(topic("orders"), allow("User:alice", Op.WRITE)),
    AclBinding(topic("*"), allow("User:bob", Op.READ)),
    AclBinding(topic("ord", Pat.PREFIXED), deny("User:carol", Op.READ)),
    AclBinding(ResourcePattern(GROUP, "g"), allow("User:alice", Op.READ)),
]


def selected(wanted: AclBindingFilter) -> list[int]:
    return [i for i, b in enumerate(BINDINGS) if wanted.matches(b)]


def test_filters_select_like_kafkas():
    assert selected(AclBindingFilter()) == [0, 1, 2, 3]
    assert selected(AclBindingFilter(TOPIC)) == [0, 1, 2]
    assert selected(AclBindingFilter(TOPIC, "orders")) == [0]
    assert selected(AclBindingFilter(TOPIC, "orders", Pat.MATCH)) == [0, 1, 2]
    assert selected(AclBindingFilter(TOPIC, "ord", Pat.PREFIXED)) == [2]
    assert selected(AclBindingFilter(TOPIC, None, Pat.LITERAL)) == [0, 1]
    assert selected(AclBindingFilter(principal="User:alice")) == [0, 3]
    assert selected(AclBindingFilter(operation=Op.READ, permission=Perm.DENY)) == [2]
    assert selected(AclBindingFilter(host="10.0.0.1")) == []


@pytest.mark.parametrize("binding, problem", [
    (AclBinding(ResourcePattern(Res.ANY, "t"), allow("User:a", Op.READ)), "resource type"),
    (AclBinding(topic("t", Pat.MATCH), allow("User:a", Op.READ)), "pattern type"),
    (AclBinding(topic(""), allow("User:a", Op.READ)), "empty"),
    (AclBinding(topic("a/b"), allow("User:a", Op.READ)), "'/'"),
    (AclBinding(ResourcePattern(CLUSTER, "c"), allow("User:a", Op.ALTER)), "kafka-cluster"),
    (AclBinding(topic("*", Pat.PREFIXED), allow("User:a", Op.READ)), "wildcard"),
    (AclBinding(topic("t"), allow("alice", Op.READ)), "TYPE:NAME"),
    (AclBinding(topic("t"), allow("User:a", Op.ANY)), "operation"),
    (AclBinding(topic("t"), AccessControlEntry("User:a", "*", Op.READ, Perm.ANY)), "permission"),
])
def test_bindings_createacls_refuses(binding, problem):
    assert problem in binding_problem(binding)


def test_operation_and_type_names_are_kafkas():
    assert Op.DESCRIBE_CONFIGS.kafka_name == "DescribeConfigs"
    assert Op.CLUSTER_ACTION.kafka_name == "ClusterAction"
    assert Res.TRANSACTIONAL_ID.kafka_name == "TransactionalId"
    assert Op.parse("idempotent-write") is Op.IDEMPOTENT_WRITE
    assert Op.parse("IdempotentWrite") is Op.IDEMPOTENT_WRITE
    with pytest.raises(ValueError, match="unknown AclOperation 'Fly'"):
        Op.parse("Fly")


# -- ZooKeeper encodings -----------------------------------------------------------------

def test_acl_znodes_and_json_are_kafkas():
    assert pattern_path(topic("orders")) == "/kafka-acl/Topic/orders"
    assert pattern_path(ResourcePattern(GROUP, "g-", Pat.PREFIXED)) == \
        "/kafka-acl-extended/prefixed/Group/g-"
    assert pattern_path(ResourcePattern(CLUSTER, "kafka-cluster")) == \
        "/kafka-acl/Cluster/kafka-cluster"
    data = encode_entries([allow("User:alice", Op.WRITE)])
    assert data == (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":'
                    b'"Allow","operation":"Write","host":"*"}]}')
    kafka_written = (b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny",'
                     b'"operation":"DescribeConfigs","host":"10.1.2.3"}]}')
    assert decode_entries(kafka_written) == {deny("User:bob", Op.DESCRIBE_CONFIGS, "10.1.2.3")}


def test_change_notifications_are_kafkas():
    assert encode_change(topic("orders")) == b"Topic:orders"
    assert decode_change(ZkPaths.ACL_CHANGES, b"Group:my:group") == \
        ResourcePattern(GROUP, "my:group")
    prefixed = ResourcePattern(TOPIC, "ord", Pat.PREFIXED)
    assert encode_change(prefixed) == \
        b'{"version":1,"resourceType":"Topic","name":"ord","patternType":"PREFIXED"}'
    assert decode_change(ZkPaths.ACL_EXTENDED_CHANGES, encode_change(prefixed)) == prefixed


# -- the index against a plain scan -------------------------------------------------------

NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ba"])
PRINCIPALS = st.sampled_from(["User:alice", "User:bob", "User:*"])
OPS = st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL, Op.ALTER, Op.DESCRIBE_CONFIGS,
                       Op.ALTER_CONFIGS])
ENTRIES = st.builds(AccessControlEntry, PRINCIPALS, st.sampled_from(["*", "10.0.0.1"]), OPS,
                    st.sampled_from([Perm.ALLOW, Perm.DENY]))
PATTERNS = st.builds(ResourcePattern, st.sampled_from([TOPIC, GROUP]), NAMES,
                     st.sampled_from([Pat.LITERAL, Pat.PREFIXED]))


def scan(acls, principal, host, op, kind, name, allow_if_no_acl) -> bool:
    """Kafka's rule, written as directly as possible: every ACL looked at."""
    applying = [e for p, entries in acls.items() for e in entries
                if p.resource_type == kind and (
                    (p.pattern_type == Pat.LITERAL and p.name in (name, "*"))
                    or (p.pattern_type == Pat.PREFIXED and name.startswith(p.name)))]
    if not applying:
        return allow_if_no_acl
    mine = [e for e in applying if e.principal in (principal, "User:*")
            and e.host in (host, "*")]
    if any(e.permission == Perm.DENY and e.operation in (op, Op.ALL) for e in mine):
        return False
    allowed_by = IMPLIED_BY.get(op, {op}) | {Op.ALL}
    return any(e.permission == Perm.ALLOW and e.operation in allowed_by for e in mine)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(PATTERNS, st.frozensets(ENTRIES, min_size=1, max_size=4), max_size=6),
       PRINCIPALS.filter(lambda p: p != "User:*"), OPS, st.sampled_from([TOPIC, GROUP]),
       NAMES.filter(lambda n: n != "*"), st.booleans())
def test_the_index_decides_as_a_scan_of_every_acl(acls, principal, op, kind, name, open_):
    auth = AclAuthorizer(allow_if_no_acl=open_)
    auth.replace_all(acls)
    context = Ctx(principal, "10.0.0.1:1")
    expected = scan(acls, principal, "10.0.0.1", op, kind, name, open_)
    assert auth.authorize(context, op, kind, name) is expected
    assert auth.authorize(context, op, kind, name) is expected  # remembered, same answer


def test_the_dissector_names_the_acl_numbers():
    from simplekafka.protocol.dissect import dissect_frame
    from simplekafka.protocol.messages import encode_request

    frame = encode_request(30, 1, 5, "cli", {"creations": [
        {"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 4,
         "principal": "User:alice", "host": "*", "operation": 4, "permission_type": 3}]})
    creation = dissect_frame(frame).root.children[1].children[0].children[0]
    notes = {node.name: node.note for node in creation.children}
    assert notes["operation"] == "Write" and notes["permission_type"] == "Allow"
    assert notes["resource_pattern_type"] == "Prefixed"
