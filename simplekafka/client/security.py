"""Client security settings, with kafka-python's names, into what the transport uses.

``security_protocol`` is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; TLS takes
``ssl_cafile`` (the CA to trust; default: the system's) and, when the broker
asks for a client certificate, ``ssl_certfile``/``ssl_keyfile`` (one PEM file
may hold both); SASL takes ``sasl_mechanism`` (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, OAUTHBEARER), ``sasl_plain_username`` and ``sasl_plain_password``;
OAUTHBEARER takes ``sasl_oauth_token_provider`` (an object with ``token()``, as
kafka-python's), or, without one, makes Kafka's unsecured tokens naming
``sasl_plain_username`` (for development only: the broker believes any such token).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from simplekafka.client.connection import SaslCredentials, TokenProvider
from simplekafka.protocol.sasl import MECHANISMS, OAUTHBEARER

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """What a connection needs: a TLS context (or None) and a SASL login (or None)."""

    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


def client_security(security_protocol: str = "PLAINTEXT", sasl_mechanism: str | None = None,
                    sasl_plain_username: str | None = None,
                    sasl_plain_password: str | None = None, ssl_cafile: str | None = None,
                    ssl_certfile: str | None = None, ssl_keyfile: str | None = None,
                    ssl_check_hostname: bool = True,
                    sasl_oauth_token_provider: TokenProvider | None = None) -> ClientSecurity:
    """Check the settings (ValueError, one line) and build the connection's security."""
    protocol = security_protocol.upper()
    if protocol not in PROTOCOLS:
        raise ValueError(f"security_protocol must be one of {', '.join(PROTOCOLS)}, "
                         f"got {security_protocol!r}")
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=ssl_cafile)
        context.check_hostname = ssl_check_hostname
        if ssl_certfile:
            context.load_cert_chain(ssl_certfile, ssl_keyfile)
    sasl = None
    if protocol.startswith("SASL_"):
        mechanism = (sasl_mechanism or "PLAIN").upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"sasl_mechanism must be one of {', '.join(MECHANISMS)}, "
                             f"got {sasl_mechanism!r}")
        if mechanism == OAUTHBEARER:
            if sasl_oauth_token_provider is None and not sasl_plain_username:
                raise ValueError(f"{protocol} with OAUTHBEARER needs sasl_oauth_token_provider "
                                 "or sasl_plain_username (the principal of unsecured tokens)")
            return ClientSecurity(context, SaslCredentials(
                mechanism, sasl_plain_username or "", "", sasl_oauth_token_provider))
        if not sasl_plain_username or sasl_plain_password is None:
            raise ValueError(f"{protocol} needs sasl_plain_username and sasl_plain_password")
        sasl = SaslCredentials(mechanism, sasl_plain_username, sasl_plain_password)
    return ClientSecurity(context, sasl)
