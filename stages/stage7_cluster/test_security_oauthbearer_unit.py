"""SASL/OAUTHBEARER without sockets: RFC 7628's client message, Kafka's unsecured token
checks, and the broker's authenticator on Twisted's StringTransport and Clock.

What must hold: every token Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``
refuses is refused with its answer (``{"status":"invalid_token"}``, or
``insufficient_scope`` with the scope wanted), as a server message first and a
failure only after the client's ``\\x01``; a malformed first message fails at
once with Kafka's generic text; a good token logs ``User:<sub>`` in, for a
session no longer than what is left of the token.
"""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.oauthbearer import (
    OAuthBearerServer,
    TokenRejected,
    UnsecuredTokenProvider,
    UnsecuredValidator,
    client_first_message,
    parse_client_first,
    unsecured_jws,
)
from simplekafka.protocol.sasl import OAUTHBEARER, SaslAuthenticationError
from stages.stage7_cluster.test_security_sasl_unit import Setup, answers, frames, request

NOW = 1_700_000_000.0
GENERIC = ("Authentication failed during authentication due to invalid credentials with SASL "
           "mechanism OAUTHBEARER")


def b64url(data: dict | str) -> str:
    raw = data.encode() if isinstance(data, str) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def token(claims: dict | None = None, header: dict | None = None, signature: str = "") -> str:
    claims = {"sub": "alice", "iat": NOW, "exp": NOW + 60} if claims is None else claims
    return f"{b64url(header or {'alg': 'none'})}.{b64url(claims)}.{signature}"


# -- the client's message ----------------------------------------------------------------------


def test_client_first_message_is_rfc_7628s():
    assert client_first_message("a.b.", "alice", {"traceId": "123"}) == \
        b"n,a=alice,\x01auth=Bearer a.b.\x01traceId=123\x01\x01"
    assert parse_client_first(b"n,,\x01auth=Bearer a.b.\x01\x01") == ("", "a.b.", {})
    assert parse_client_first(b"n,a=alice,\x01auth=bearer  a.b.\x01x=1 2\x01\x01") == \
        ("alice", "a.b.", {"x": "1 2"})


@pytest.mark.parametrize("message", [
    b"", b"\x01", b"n,,auth=Bearer a.b.\x01\x01", b"n,,\x01auth=Bearer a.b.\x01",
    b"n,,\x01auth=Basic a.b.\x01\x01", b"n,,\x01auth=Bearer a b\x01\x01",
    b"n,,\x01traceId=1\x01\x01", b"y,,\x01auth=Bearer a.b.\x01\x01",
    b"n,,\x01auth=Bearer a.b.\x01bad-key=1\x01\x01", b"n,,\x01auth=Bearer \xff\x01\x01",
])
def test_malformed_first_messages_fail_with_kafkas_generic_text(message):
    with pytest.raises(SaslAuthenticationError, match=GENERIC):
        parse_client_first(message)


# -- the unsecured token ------------------------------------------------------------------------


def test_a_good_token_names_its_principal_expiry_and_scope():
    validated = UnsecuredValidator().validate(
        token({"sub": "alice", "iat": NOW, "exp": NOW + 60, "scope": ["a", " b "]}), NOW * 1000)
    assert (validated.principal, validated.expires_ms) == ("alice", int((NOW + 60) * 1000))
    assert validated.scope == {"a", "b"}


@pytest.mark.parametrize("value, reason", [
    (token(header={"alg": "HS256"}), "'none' for an algorithm"),
    (token(header={"typ": "JWT"}), "'none' for an algorithm"),
    (token(signature="c2ln"), "must not contain a digital signature"),
    (token()[:-1], "3 dot-separated"),
    (token() + "x.y", "3 dot-separated"),
    ("a..b", "contains '..'"),
    ("!!.??.", "malformed"),
    (f"{b64url({'alg': 'none'})}.{b64url('[1]')}.", "not an object"),
    (token({"sub": "alice", "iat": NOW}), "No expiration time"),
    (token({"sub": "alice", "exp": "soon"}), "'exp' claim was not of type Number"),
    (token({"iat": NOW, "exp": NOW + 60}), "No principal name in JWT claim: sub"),
    (token({"sub": " ", "exp": NOW + 60}), "No principal name"),
    (token({"sub": "alice", "iat": NOW - 60, "exp": NOW}), "on or after the Expiration Time"),
    (token({"sub": "alice", "iat": NOW + 5, "exp": NOW + 60}), "Issued At value"),
    (token({"sub": "alice", "iat": NOW - 5, "exp": NOW - 6 + 10}), None),
    (token({"sub": "alice", "exp": NOW + 60, "scope": 5}), "'scope' claim was not of type"),
])
def test_kafkas_unsecured_checks(value, reason):
    validator = UnsecuredValidator()
    if reason is None:
        assert validator.validate(value, NOW * 1000).principal == "alice"
        return
    with pytest.raises(TokenRejected, match=reason) as refused:
        validator.validate(value, NOW * 1000)
    assert refused.value.json() == '{"status":"invalid_token"}'


def test_clock_skew_allows_a_token_just_expired_or_just_issued():
    skewed = UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "2000"})
    assert skewed.validate(token({"sub": "a", "exp": NOW - 1}), NOW * 1000).principal == "a"
    assert skewed.validate(token({"sub": "a", "iat": NOW + 1, "exp": NOW + 9}), NOW * 1000)
    with pytest.raises(TokenRejected):
        skewed.validate(token({"sub": "a", "exp": NOW - 2}), NOW * 1000)
    with pytest.raises(ValueError, match="must not be negative"):
        UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "-1"})
    with pytest.raises(ValueError, match="must be an integer"):
        UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "soon"})


def test_required_scope_and_claim_names_as_configured():
    validator = UnsecuredValidator({"unsecuredValidatorRequiredScope": "kafka write",
                                    "unsecuredValidatorPrincipalClaimName": "client_id",
                                    "unsecuredValidatorScopeClaimName": "scp"})
    ok = token({"client_id": "svc", "exp": NOW + 9, "scp": ["kafka", "write", "x"]})
    assert validator.validate(ok, NOW * 1000).principal == "svc"
    # A string scope is one scope, as Kafka reads it: "kafka write" is not two.
    for scope in (["kafka"], "kafka write", None):
        with pytest.raises(TokenRejected, match="missing a required scope") as refused:
            validator.validate(token({"client_id": "svc", "exp": NOW + 9, "scp": scope}),
                               NOW * 1000)
        assert refused.value.json() == \
            '{"status":"insufficient_scope", "scope":"[kafka, write]"}'


def test_the_server_answers_the_error_then_fails_on_the_clients_acknowledgement():
    server = OAuthBearerServer(UnsecuredValidator())
    expired = token({"sub": "alice", "exp": NOW - 1})
    answer = server.evaluate(client_first_message(expired), NOW * 1000)
    assert answer == b'{"status":"invalid_token"}' and not server.complete
    assert "Expiration Time" in (server.rejection or "")
    with pytest.raises(SaslAuthenticationError) as failed:
        server.evaluate(b"\x01", NOW * 1000)
    assert str(failed.value) == '{"status":"invalid_token"}'


def test_an_authzid_must_be_the_tokens_principal():
    server = OAuthBearerServer(UnsecuredValidator())
    with pytest.raises(SaslAuthenticationError, match=r"authorization id \(bob\)"):
        server.evaluate(client_first_message(token(), "bob"), NOW * 1000)
    assert OAuthBearerServer(UnsecuredValidator()).evaluate(
        client_first_message(token(), "alice", {"traceId": "x"}), NOW * 1000) == b""


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=300) | st.builds(
    lambda t, e: client_first_message(t, extensions=e),
    st.text("ab.-_=" + "eyJhbGciOiJub25lIn0", max_size=80),
    st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True),
                    st.from_regex(r"[a-z ]{1,4}", fullmatch=True), max_size=2)))
def test_the_server_never_fails_otherwise_on_garbage(message):
    server = OAuthBearerServer(UnsecuredValidator())
    try:
        answer = server.evaluate(message, NOW * 1000)
    except SaslAuthenticationError:
        return
    assert answer.startswith(b'{"status":"') or server.complete


def test_the_client_builds_tokens_from_kafkas_unsecured_login_options():
    provider = UnsecuredTokenProvider({
        "unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": "|a|b",
        "unsecuredLoginNumberClaim_n": "3", "unsecuredLoginLifetimeSeconds": "30",
        "unsecuredLoginExtension_traceId": "t1"}, clock=lambda: NOW)
    validated = UnsecuredValidator({"unsecuredValidatorRequiredScope": "a b"}).validate(
        provider.token(), NOW * 1000)
    assert (validated.principal, validated.expires_ms) == ("alice", int((NOW + 30) * 1000))
    assert validated.claims["n"] == 3 and provider.extensions() == {"traceId": "t1"}
    assert unsecured_jws({"sub": "x"}).endswith(".")
    with pytest.raises(ValueError, match="unsecuredLoginStringClaim_sub"):
        UnsecuredTokenProvider({"unsecuredLoginLifetimeSeconds": "30"})
    with pytest.raises(ValueError, match="may not set"):
        UnsecuredTokenProvider({"unsecuredLoginStringClaim_sub": "a",
                                "unsecuredLoginNumberClaim_exp": "1"})


# -- the broker's authenticator ------------------------------------------------------------------


def oauth_setup(options: dict | None = None, reauth_ms: int = 0) -> Setup:
    setup = Setup(mechanisms=("PLAIN", OAUTHBEARER))
    setup.clock.advance(NOW)
    setup.settings.oauthbearer = UnsecuredValidator(options)
    if reauth_ms:
        setup.settings.reauth_ms = {OAUTHBEARER: reauth_ms}
    return setup


def login(setup: Setup, message: bytes):
    connection, transport = setup.connect()
    connection.dataReceived(request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": OAUTHBEARER}, 1)
                            + request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": message}, 2))
    return connection, transport


@pytest.mark.parametrize("reauth_ms, lifetime_ms", [(0, 60_000), (10_000, 10_000),
                                                    (90_000, 60_000)])
def test_a_good_token_logs_in_for_no_longer_than_it_lasts(reauth_ms, lifetime_ms):
    setup = oauth_setup(reauth_ms=reauth_ms)
    connection, transport = login(setup, client_first_message(token()))
    connection.dataReceived(request(ApiKey.METADATA, 1, {"topics": None}, 3))
    _, authenticate = answers(transport, (ApiKey.SASL_HANDSHAKE, 1),
                              (ApiKey.SASL_AUTHENTICATE, 1))
    assert (authenticate.error_code, authenticate.auth_bytes) == (0, b"")
    assert authenticate.session_lifetime_ms == lifetime_ms
    assert connection.principal == "User:alice"
    assert setup.seen == [("User:alice", "SASL_PLAINTEXT")]
    setup.clock.advance(lifetime_ms / 1000 + 0.1)  # past the session's end: closed, unanswered
    transport.clear()
    connection.dataReceived(request(ApiKey.METADATA, 1, {"topics": None}, 4))
    assert transport.value() == b"" and transport.disconnecting


@pytest.mark.parametrize("claims, options, error", [
    ({"sub": "alice", "exp": NOW - 1}, {}, '{"status":"invalid_token"}'),
    ({"sub": "alice", "exp": NOW + 9, "scope": ["read"]},
     {"unsecuredValidatorRequiredScope": "kafka"},
     '{"status":"insufficient_scope", "scope":"[kafka]"}'),
])
def test_a_refused_token_is_answered_then_fails_after_the_acknowledgement(claims, options,
                                                                          error):
    setup = oauth_setup(options)
    connection, transport = login(setup, client_first_message(token(claims)))
    first = answers(transport, (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 1))[1]
    assert (first.error_code, first.auth_bytes) == (0, error.encode())
    assert not transport.disconnecting
    connection.dataReceived(request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\x01"}, 3)
                            + request(ApiKey.METADATA, 1, {"topics": None}, 4))
    setup.clock.advance(0.1)  # the failed-login delay
    final = [r for r in answers(transport, *[(ApiKey.SASL_HANDSHAKE, 1)] + [
        (ApiKey.SASL_AUTHENTICATE, 1)] * 2)][2]
    assert (final.error_code, final.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                       error)
    assert transport.disconnecting and connection.principal == "User:ANONYMOUS"
    assert setup.seen == [] and len(frames(transport.value())) == 3


def test_a_malformed_first_message_fails_at_once_with_the_generic_text():
    setup = oauth_setup()
    connection, transport = login(setup, b"n,,\x01auth=Bearer\x01\x01")
    setup.clock.advance(0.1)
    final = answers(transport, (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 1))[1]
    assert (final.error_code, final.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                       GENERIC)
    assert transport.disconnecting and connection.principal == "User:ANONYMOUS"
