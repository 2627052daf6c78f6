"""Security on the broker: listeners, TLS and SASL (who a connection is) and the
authorizer (what that principal may do), the way Kafka configures them.

==================  ==========================================================
module              what it does
==================  ==========================================================
``listeners``       ``listeners``, ``listener.security.protocol.map``,
                    ``advertised.listeners``, the inter-broker listener
``tls``             PEM keystore/truststore into Twisted TLS options; the
                    principal of a client certificate
``sasl``            the per-connection SASL authenticator's states (PLAIN,
                    SCRAM and OAUTHBEARER), the failed-login delay; its
                    frames and answers are ``broker.apis.sasl``'s
``credentials``     the SCRAM credentials from ``/config/users``
``scram_users``     SCRAM users described and altered in ZooKeeper (KIP-554)
``inter_broker``    a broker's own login to another broker's listener
``certs``           a throwaway CA and certificates (``simplekafka certs``)
``authorizer``      ACLs (``/kafka-acl``), asked by every request handler
==================  ==========================================================

The byte-level mechanisms are sans-I/O: PLAIN and SCRAM in ``simplekafka.protocol.sasl``,
OAUTHBEARER with Kafka's unsecured tokens in ``simplekafka.protocol.oauthbearer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simplekafka.protocol.sasl import MECHANISMS, OAUTHBEARER

if TYPE_CHECKING:
    from simplekafka.broker.config import BrokerConfig


def check_security_config(config: BrokerConfig) -> None:
    """Refuse at start-up what could not work (ValueError with one line naming the key)."""
    from simplekafka.broker.security.sasl import jaas_for, oauthbearer_validator
    from simplekafka.broker.security.tls import server_options

    enabled = config["sasl.enabled.mechanisms"]
    uses_sasl = any(listener.uses_sasl for listener in config.listeners)
    for mechanism in enabled if uses_sasl else ():  # only a SASL listener offers them
        if mechanism not in MECHANISMS:
            raise ValueError(f"sasl.enabled.mechanisms: {mechanism} is not supported "
                             f"(supported: {', '.join(MECHANISMS)})")
    for listener in config.listeners:
        if listener.uses_sasl and OAUTHBEARER in enabled:
            oauthbearer_validator(config, listener.name)  # its options, checked now
        if listener.uses_tls:
            server_options(config, listener.name)  # reads the PEM files now, not at connect
    inter = next(li for li in config.listeners if li.name == config.inter_broker_listener)
    if inter.uses_sasl:
        mechanism = config["sasl.mechanism.inter.broker.protocol"]
        if mechanism not in enabled:
            raise ValueError(f"sasl.mechanism.inter.broker.protocol {mechanism} is not in "
                             "sasl.enabled.mechanisms")
        if mechanism == OAUTHBEARER:
            raise ValueError("sasl.mechanism.inter.broker.protocol OAUTHBEARER is not supported "
                             "(brokers log in to each other with PLAIN or SCRAM)")
        if jaas_for(config, inter.name, mechanism).login is None:
            raise ValueError(
                f"the inter-broker listener {inter.name} uses SASL: give the broker's login as "
                f'username="..." password="..." in listener.name.{inter.name.lower()}.'
                f"{mechanism.lower()}.sasl.jaas.config (or sasl.jaas.config)")
