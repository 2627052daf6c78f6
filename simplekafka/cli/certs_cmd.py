"""``simplekafka certs --out DIR``: a throwaway CA, a broker and client certificates (PEM).

Writes ``ca.pem`` (the truststore of brokers and clients), ``ca-key.pem``,
``broker.pem`` (key and certificate for ``localhost``, ``127.0.0.1`` and any
``--host``: the brokers' ``ssl.keystore.location``) and
``client-NAME.pem`` per ``--client NAME`` (subject ``CN=NAME``, so the
principal on an SSL listener is ``User:CN=NAME,O=SimpleKafka demo``).
For demos and tests only: the CA's key lies beside them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simplekafka.cli import CliError, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "certs", help="make a throwaway CA, broker and client certificates",
        description=__doc__.strip("`"))
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument("--client", action="append", default=[], metavar="NAME",
                        help="a client certificate CN=NAME (repeatable; default: client)")
    parser.add_argument("--host", action="append", default=[], metavar="HOST",
                        help="another host name or address for the broker certificate")
    parser.add_argument("--days", type=positive_int, default=30, help="validity (default 30)")
    parser.set_defaults(func=certs_main)


def certs_main(args: argparse.Namespace) -> int:
    from simplekafka.broker.security.certs import make_certificates

    try:
        files = make_certificates(args.out, clients=args.client or ["client"],
                                  hosts=["localhost", "127.0.0.1", *args.host], days=args.days)
    except OSError as exc:
        raise CliError(f"cannot write certificates to {args.out}: {exc.strerror or exc}") \
            from None
    print(f"CA certificate (ssl.truststore.location): {files.ca}")
    print(f"broker key and certificate (ssl.keystore.location): {files.broker}")
    for name, path in files.clients.items():
        print(f"client {name} key and certificate: {path}")
    return 0
