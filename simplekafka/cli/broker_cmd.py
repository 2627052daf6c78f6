"""``simplekafka broker``: run one broker in the foreground until SIGTERM or Ctrl-C.

Configuration comes, later sources winning, from Kafka's defaults, a
``--config`` properties file, the named options (``--broker-id``, ``--port``,
...), and ``--set key=value``. Logs go to stderr; one line on stdout,
``simplekafka broker N listening on HOST:PORT``, says the broker is serving.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

from simplekafka.cli import CliError, key_values

if TYPE_CHECKING:
    from twisted.python.failure import Failure

    from simplekafka.broker.config import BrokerConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker", help="run a broker", description=__doc__.splitlines()[0])
    parser.add_argument("--broker-id", type=int, help="broker.id")
    parser.add_argument("--port", type=int, help="port to listen on (0: any free one)")
    parser.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--data-dir", help="log.dirs: where partition logs live")
    parser.add_argument("--zookeeper", help="zookeeper.connect: host:port[/chroot]")
    parser.add_argument("--rack", help="broker.rack")
    parser.add_argument("--config", help="a Kafka-style server.properties file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any configuration key (repeatable)")
    parser.add_argument("--log-level", default="INFO", help="how much to log (default INFO)",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.set_defaults(func=run)


def build_properties(args: argparse.Namespace) -> dict[str, str]:
    """Merge the configuration sources into one dict of Kafka keys."""
    from simplekafka.broker.config import read_properties

    properties: dict[str, str] = {}
    if args.config:
        properties.update(read_properties(args.config))
    if args.broker_id is not None:
        properties["broker.id"] = str(args.broker_id)
    if args.port is not None or args.host is not None:
        host = args.host if args.host is not None else "127.0.0.1"
        port = args.port if args.port is not None else 9092
        properties["listeners"] = f"PLAINTEXT://{host}:{port}"
    if args.data_dir:
        properties["log.dirs"] = args.data_dir
    if args.zookeeper:
        properties["zookeeper.connect"] = args.zookeeper
    if args.rack:
        properties["broker.rack"] = args.rack
    properties.update(key_values(args.set, "--set"))
    return properties


def run(args: argparse.Namespace) -> int:
    from simplekafka.broker.config import BrokerConfig, ConfigError

    try:
        config = BrokerConfig.from_properties(build_properties(args))
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s [broker %(broker_id)s] %(name)s: %(message)s",
    )
    _tag_log_records(config.broker_id)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    for key in config.ignored_keys:
        logging.getLogger("simplekafka.broker").info("ignoring Kafka setting %s here", key)
    raise_open_files_limit()
    return serve(config)


def raise_open_files_limit() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard limit: each replica holds open files (its .log,
    and before Python 3.13 its index mappings), so thousands of partitions need more
    than the usual soft 1024. Returns the (soft, hard) limits now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            logging.getLogger("simplekafka.broker").warning(
                "cannot raise the open-files limit from %d to %d: %s", soft, hard, exc)
    logging.getLogger("simplekafka.broker").info("open-files limit %d (hard %d)", soft, hard)
    return soft, hard


def _tag_log_records(broker_id: int) -> None:
    factory = logging.getLogRecordFactory()

    def tagged(*args: object, **kwargs: object) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        record.broker_id = broker_id
        return record

    logging.setLogRecordFactory(tagged)


def serve(config: BrokerConfig) -> int:
    """Run the reactor with one broker until it is told to stop; returns the exit code."""
    from twisted.internet import reactor as installed

    reactor: Any = installed  # whichever reactor is installed: its interfaces are run-time facts
    from twisted.internet.error import CannotListenError

    from simplekafka.broker.broker import KafkaBroker
    from simplekafka.storage import StorageError

    log = logging.getLogger("simplekafka.broker")
    exit_code = [0]

    def ready(broker: KafkaBroker) -> None:
        host, port = broker.advertised_address
        print(f"simplekafka broker {broker.broker_id} listening on {host}:{port}", flush=True)

    try:
        broker = KafkaBroker(config, reactor, on_ready=ready)
    except (StorageError, OSError, ValueError) as exc:
        raise CliError(f"cannot open the logs: {exc}") from None
    try:
        broker.listen()
    except CannotListenError as exc:
        raise CliError(f"cannot listen on {config.listen_host}:{config.listen_port}: "
                       f"{exc.socketError}") from None

    def failed(failure: Failure) -> None:
        log.error("broker %d could not start: %s", broker.broker_id,
                  failure.getErrorMessage())
        exit_code[0] = 1
        reactor.stop()

    reactor.callWhenRunning(lambda: broker.start().addErrback(failed))
    reactor.addSystemEventTrigger("before", "shutdown", broker.stop)
    reactor.run()
    return exit_code[0]
