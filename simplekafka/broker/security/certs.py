"""Throwaway certificates for demos and tests: a CA, broker and client certificates (PEM).

``simplekafka certs --out DIR`` calls :func:`make_certificates`. Each key and
its certificate go into one PEM file, the form ``ssl.keystore.location``
(``ssl.keystore.type=PEM``) reads; ``ca.pem`` is the truststore of brokers and
clients. The broker certificate names ``localhost`` and ``127.0.0.1`` (and
any further hosts asked for) so host-name checks pass on one machine. Never
use these outside a laptop: the CA key sits next to them. Private keys are
created mode 0600 with O_EXCL (``_write_private``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertificateFiles:
    """Where :func:`make_certificates` wrote everything."""

    ca: Path  # the CA certificate: ssl.truststore.location for everyone
    ca_key: Path
    broker: Path  # broker key + certificate: the brokers' ssl.keystore.location
    clients: dict[str, Path]  # client name -> key + certificate (CN=<name>)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "SimpleKafka demo")])


def _pem(key: ec.EllipticCurvePrivateKey, *certificates: x509.Certificate) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()) + b"".join(
        c.public_bytes(serialization.Encoding.PEM) for c in certificates)


def _issue(subject: str, issuer_key: ec.EllipticCurvePrivateKey | None,
           issuer: x509.Name | None, *, ca: bool = False,
           hosts: Sequence[str] = (), days: int = 30, not_before_days: int = -1,
           usage=None) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(subject))
               .issuer_name(issuer if issuer is not None else _name(subject))
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now + datetime.timedelta(days=not_before_days))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                              critical=False))
    # What strict verifiers (Python 3.13's default VERIFY_X509_STRICT) insist on.
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True,
            data_encipherment=False, key_agreement=True, key_cert_sign=False, crl_sign=False,
            encipher_only=False, decipher_only=False), critical=True)
        if issuer_key is None:
            raise ValueError(f"{subject}: a leaf certificate needs its issuer's key")
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False)
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    certificate = builder.sign(issuer_key if issuer_key is not None else key, hashes.SHA256())
    return key, certificate


def make_certificates(out: Path, clients: Sequence[str] = ("client",),
                      hosts: Sequence[str] = ("localhost", "127.0.0.1"),
                      days: int = 30) -> CertificateFiles:
    """A fresh CA, one broker certificate for ``hosts`` and one per client name, under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _issue("SimpleKafka demo CA", None, None, ca=True, days=days)
    ca_path, ca_key_path = out / "ca.pem", out / "ca-key.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_private(ca_key_path, _pem(ca_key))
    broker_key, broker_cert = _issue(
        "broker", ca_key, ca_cert.subject, hosts=list(hosts), days=days,
        usage=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    broker_path = out / "broker.pem"
    _write_private(broker_path, _pem(broker_key, broker_cert))
    client_paths = {}
    for name in clients:
        key, cert = _issue(name, ca_key, ca_cert.subject, days=days,
                           usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        client_paths[name] = out / f"client-{name}.pem"
        _write_private(client_paths[name], _pem(key, cert))
    return CertificateFiles(ca_path, ca_key_path, broker_path, client_paths)


def make_client_certificate(files: CertificateFiles, name: str, path: Path, *,
                            expired: bool = False) -> Path:
    """One more client certificate from the same CA (``expired``: valid only in the past)."""
    ca_data = files.ca_key.read_bytes()
    ca_key = serialization.load_pem_private_key(ca_data, None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):  # make_certificates writes EC keys
        raise ValueError(f"{files.ca_key} does not hold an EC private key")
    ca_cert = x509.load_pem_x509_certificate(files.ca.read_bytes())
    key, cert = _issue(name, ca_key, ca_cert.subject, days=-1 if expired else 30,
                       not_before_days=-30 if expired else -1,
                       usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
    _write_private(Path(path), _pem(key, cert))
    return Path(path)


def split_pem(path: Path, key_path: Path, cert_path: Path) -> None:
    """Write a combined PEM's key and certificate to two files (clients that want them apart)."""
    data = Path(path).read_bytes()
    key = serialization.load_pem_private_key(data, None)
    certificates = x509.load_pem_x509_certificates(data)
    _write_private(Path(key_path), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    Path(cert_path).write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM)
                                         for c in certificates))


def _write_private(path: Path, data: bytes) -> None:
    """Write a private key readable by its owner only from the moment it exists: a new file
    created 0600 with O_EXCL (never an existing file, nor through a link someone left in
    the directory), then renamed over ``path``. No chmod afterwards, so there is no moment
    when another user could open it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
