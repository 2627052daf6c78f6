"""TLS on Twisted from Kafka's PEM settings, and the principal a client certificate carries.

``ssl.keystore.location`` names a PEM file holding this broker's private key and
its certificate (chain), ``ssl.truststore.location`` a PEM file of trusted CA
certificates (Kafka 2.7+ reads the same PEM files with ``ssl.keystore.type=PEM``).
``ssl.client.auth`` decides about client certificates: ``required`` (a client
without a trusted certificate fails the handshake), ``requested`` (asked for,
checked if sent), ``none``. The principal of a TLS connection is the
certificate's subject as Kafka's default principal builder writes it,
``User:CN=alice,O=...`` (RFC 4514/2253 order), or ``User:ANONYMOUS`` without one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import crypto
from twisted.internet import ssl

if TYPE_CHECKING:
    from twisted.internet.interfaces import IOpenSSLClientConnectionCreator

    from simplekafka.broker.config import BrokerConfig

ANONYMOUS = "User:ANONYMOUS"
CLIENT_AUTH = ("required", "requested", "none")


class TlsConfigError(ValueError):
    """A TLS setting that cannot work (names the key and the file)."""


class PeerCertified(Protocol):
    """A TLS transport: the certificate the peer showed, if any."""

    def getPeerCertificate(self) -> crypto.X509 | None: ...


def _read(path: str | None, key: str) -> bytes:
    if not path:
        raise TlsConfigError(f"{key} is required on a TLS listener")
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None


def load_keystore(path: str | None, password: str | None = None,
                  key: str = "ssl.keystore.location") -> tuple[crypto.PKey, list[crypto.X509]]:
    """(private key, [certificate, chain...]) as pyOpenSSL objects, from one PEM file."""
    data = _read(path, key)
    try:
        private_key = serialization.load_pem_private_key(
            data, password.encode() if password else None)
        certificates = x509.load_pem_x509_certificates(data)
    except (ValueError, TypeError) as exc:
        raise TlsConfigError(f"{key}: {path} needs a PEM private key and certificate: "
                             f"{exc}") from None
    return (crypto.PKey.from_cryptography_key(private_key),  # type: ignore[arg-type]
            [crypto.X509.from_cryptography(c) for c in certificates])


def load_truststore(path: str | None,
                    key: str = "ssl.truststore.location") -> list[crypto.X509]:
    data = _read(path, key)
    try:
        return [crypto.X509.from_cryptography(c) for c in x509.load_pem_x509_certificates(data)]
    except ValueError as exc:
        raise TlsConfigError(f"{key}: {path} holds no PEM certificate: {exc}") from None


def server_options(config: BrokerConfig, listener: str) -> ssl.CertificateOptions:
    """The server side of one TLS listener."""
    setting = lambda key, default=None: config.listener_setting(listener, key, default)  # noqa: E731
    private_key, chain = load_keystore(setting("ssl.keystore.location"),
                                       setting("ssl.key.password"))
    client_auth = str(setting("ssl.client.auth", "none")).lower()
    if client_auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, "
                             f"got {client_auth!r}")
    verify = client_auth != "none"
    ca_certs = load_truststore(setting("ssl.truststore.location")) if verify else None
    return ssl.CertificateOptions(
        privateKey=private_key, certificate=chain[0], extraCertChain=chain[1:],
        verify=verify, caCerts=ca_certs, requireCertificate=client_auth == "required",
        raiseMinimumTo=ssl.TLSVersion.TLSv1_2)


def client_options(config: BrokerConfig, listener: str,
                   host: str) -> IOpenSSLClientConnectionCreator | ssl.CertificateOptions:
    """The client side of a broker's own connection to another broker's TLS listener."""
    setting = lambda key, default=None: config.listener_setting(listener, key, default)  # noqa: E731
    trusted = load_truststore(setting("ssl.truststore.location"))
    keystore = setting("ssl.keystore.location")
    private_key, chain = load_keystore(keystore, setting("ssl.key.password"))
    if str(setting("ssl.endpoint.identification.algorithm", "https")).lower() == "https":
        client_certificate = ssl.PrivateCertificate.loadPEM(
            crypto.dump_certificate(crypto.FILETYPE_PEM, chain[0])
            + crypto.dump_privatekey(crypto.FILETYPE_PEM, private_key))
        return ssl.optionsForClientTLS(
            host, trustRoot=ssl.trustRootFromCertificates(
                [ssl.Certificate(c) for c in trusted]),
            clientCertificate=client_certificate)
    return ssl.CertificateOptions(privateKey=private_key, certificate=chain[0],
                                  extraCertChain=chain[1:], verify=True, caCerts=trusted)


def principal_of(transport: PeerCertified) -> str:
    """``User:<subject DN>`` of the peer's certificate, or User:ANONYMOUS."""
    try:
        certificate = transport.getPeerCertificate()
    except Exception:
        certificate = None
    if certificate is None:
        return ANONYMOUS
    return "User:" + certificate.to_cryptography().subject.rfc4514_string()
