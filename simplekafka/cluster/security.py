"""Broker and client settings for a secured LocalCluster (tests, demos, benchmarks).

``secure_broker_config`` writes Kafka's keys for brokers that serve SSL,
SASL_PLAINTEXT and SASL_SSL listeners besides PLAINTEXT: the PEM keystore and
truststore from ``simplekafka.broker.security.certs``, the PLAIN users and the
broker's own login in each listener's JAAS text (Kafka's
``listener.name.<l>.<mechanism>.sasl.jaas.config``), and the inter-broker
listener. With ``authorizer=True`` the brokers run Kafka's ACL authorizer and
``super.users`` names the brokers' own login and nobody else: the inter-broker
listener must then log the brokers in (SASL), for a broker's requests to itself
carry that principal too, and User:ANONYMOUS is a super user nowhere.
``client_config`` gives the matching confluent-kafka (librdkafka) settings for
one listener, mechanism and user.

``oauthbearer={...}`` also enables OAUTHBEARER on the SASL listeners, with
those options of Kafka's unsecured validator (``{}``: its defaults; e.g.
``{"unsecuredValidatorRequiredScope": "kafka"}``); a client then logs in with
an unsecured token naming its principal (librdkafka's
``enable.sasl.oauthbearer.unsecure.jwt``), for development only.
"""

from __future__ import annotations

import os

from simplekafka.broker.security.certs import CertificateFiles

ADMIN = ("admin", "admin-secret")  # the brokers' own login (the super user for the ACLs)
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def _jaas(module: str, login: tuple[str, str], users: dict[str, str] | None = None) -> str:
    entries = [f'username="{login[0]}"', f'password="{login[1]}"']
    entries += [f'user_{name}="{password}"' for name, password in (users or {}).items()]
    return f"{module} required {' '.join(entries)};"


def secure_broker_config(certs: CertificateFiles | None, plain_users: dict[str, str],
                         listeners: tuple[str, ...] = ("SSL", "SASL_PLAINTEXT", "SASL_SSL"),
                         inter_broker_listener: str = "PLAINTEXT",
                         inter_broker_mechanism: str = "PLAIN",
                         client_auth: str = "requested",
                         admin: tuple[str, str] = ADMIN,
                         authorizer: bool = False,
                         oauthbearer: dict[str, str] | None = None) -> dict[str, str]:
    """Kafka broker keys for ``listeners`` (plus PLAINTEXT, which LocalCluster adds);
    ``authorizer``: ACLs on, ``super.users=User:<admin>`` only; ``oauthbearer``: OAUTHBEARER
    on, with these unsecured-validator options (see the module docstring)."""
    if authorizer and inter_broker_listener not in SASL_LISTENERS:
        raise ValueError(f"authorizer=True wants a SASL inter-broker listener (the brokers log "
                         f"in as User:{admin[0]}, the only super user), not "
                         f"{inter_broker_listener}")
    config: dict[str, str] = {"inter.broker.listener.name": inter_broker_listener,
                              "sasl.mechanism.inter.broker.protocol": inter_broker_mechanism}
    if certs is not None:
        config.update({"ssl.keystore.location": str(certs.broker), "ssl.keystore.type": "PEM",
                       "ssl.truststore.location": str(certs.ca), "ssl.truststore.type": "PEM",
                       "ssl.client.auth": client_auth})
    users = {admin[0]: admin[1], **plain_users}
    for listener in listeners:
        if listener not in SASL_LISTENERS:
            continue
        prefix = f"listener.name.{listener.lower()}"
        config[f"{prefix}.plain.sasl.jaas.config"] = _jaas(
            "org.apache.kafka.common.security.plain.PlainLoginModule", admin, users)
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            config[f"{prefix}.{mechanism}.sasl.jaas.config"] = _jaas(
                "org.apache.kafka.common.security.scram.ScramLoginModule", admin)
        if oauthbearer is not None:
            options = " ".join(f'{key}="{value}"' for key, value in oauthbearer.items())
            config[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
                f"{OAUTHBEARER_MODULE} required {options};".replace(" ;", ";"))
    if oauthbearer is not None:
        config["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
    if authorizer:
        config.update({"authorizer.class.name": AUTHORIZER, "super.users": f"User:{admin[0]}"})
    return config


def client_config(listener: str, certs: CertificateFiles | None = None,
                  mechanism: str | None = None, user: str | None = None,
                  password: str | None = None,
                  client_certificate: str | os.PathLike[str] | None = None,
                  oauthbearer_config: str = "") -> dict[str, str]:
    """confluent-kafka settings for one listener (``client_certificate``: a PEM path);
    OAUTHBEARER: librdkafka's unsecured tokens for principal ``user``, with
    ``oauthbearer_config`` added (``scope=a,b lifeSeconds=60``)."""
    config = {"security.protocol": listener.lower()}
    if listener in SASL_LISTENERS and mechanism == "OAUTHBEARER":
        config.update({"sasl.mechanism": "OAUTHBEARER",
                       "enable.sasl.oauthbearer.unsecure.jwt": "true",
                       "sasl.oauthbearer.config": f"principal={user} {oauthbearer_config}"
                       .strip()})
    elif listener in SASL_LISTENERS:
        config.update({"sasl.mechanism": mechanism or "PLAIN", "sasl.username": user or "",
                       "sasl.password": password or ""})
    if listener in ("SSL", "SASL_SSL") and certs is not None:
        config["ssl.ca.location"] = str(certs.ca)
        if client_certificate is not None:
            config["ssl.certificate.location"] = str(client_certificate)
            config["ssl.key.location"] = str(client_certificate)
    return config
