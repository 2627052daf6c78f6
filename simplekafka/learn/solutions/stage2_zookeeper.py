"""Stage 2 exercises: coordination through ZooKeeper, as ZooKeeper-mode Kafka did it.

Read stages/stage2_zookeeper/README.md first. You write three pieces of the
coordination layer, each with a kazoo client handed in (a started
``KazooClient``, one ZooKeeper session: one broker):

1. a broker registers: the ephemeral ``/brokers/ids/<id>`` with Kafka's JSON;
2. a broker tries to become the controller: ``/controller`` and the bumped
   ``/controller_epoch`` in one multi;
3. the controller writes a partition's state, fenced by the version of
   ``/controller_epoch`` its election produced, so a zombie cannot.

``simplekafka learn check 2`` starts a real ZooKeeper (the embedded one of
section 2.1), runs your functions with several sessions, expires one for real,
and compares every znode with what SimpleKafka writes (``simplekafka.coordination.znodes``),
printing the steps taken up to the first one that went wrong.

kazoo in brief: ``zk.create(path, value, ephemeral=True, include_data=True)``
returns ``(path, stat)``; ``zk.get(path)`` returns ``(value, stat)``; both raise
``NoNodeError`` or ``NodeExistsError``. ``stat.czxid`` is the id of the
transaction that created the znode, ``stat.version`` counts its writes,
``stat.ephemeralOwner`` is the session that owns an ephemeral znode (0 for a
persistent one) and ``zk.client_id[0]`` is your own session's id. A multi:
``t = zk.transaction()``, then ``t.create``/``t.set_data``/``t.check``, then
``t.commit()``: all operations happen or none, and it returns one result per
operation: a ``ZnodeStat`` for a set_data, the path for a create, ``True`` for
a check; an exception *instance* (not raised) for each operation when one
failed (the failing one's own error: ``NodeExistsError``, ``BadVersionError``,
``NoNodeError``; the others ``RolledBackError`` or ``RuntimeInconsistency``).
"""

from __future__ import annotations

import json
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from simplekafka.coordination import (
    BrokerIdInUseError,
    ControllerMovedError,
    PartitionState,
    WriteConflictError,
    ZkPaths,
)

# --- exercise 1: register a broker ---------------------------------------------------------


def broker_json(host: str, port: int, rack: str | None, timestamp_ms: int) -> bytes:
    """The payload of ``/brokers/ids/<id>`` for a broker with one PLAINTEXT listener.

    A JSON object with exactly Kafka's fields (version 4):
    ``listener_security_protocol_map`` ``{"PLAINTEXT": "PLAINTEXT"}``,
    ``endpoints`` ``["PLAINTEXT://<host>:<port>"]``, ``jmx_port`` -1, ``host``,
    ``port``, ``timestamp`` (milliseconds, as a *string*), ``version`` 4, and
    ``rack`` only when there is one (no key at all otherwise, not null). The
    broker id is not in it: it is the znode's name.
    """
    payload: dict[str, object] = {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://{host}:{port}"],
        "jmx_port": -1,
        "host": host,
        "timestamp": str(timestamp_ms),
        "port": port,
        "version": 4,
    }
    if rack is not None:
        payload["rack"] = rack
    return json.dumps(payload).encode()


def register_broker(zk: KazooClient, broker_id: int, host: str, port: int,
                    rack: str | None = None) -> int:
    """Register the broker: create ``/brokers/ids/<broker_id>``; returns the broker epoch.

    The znode is ephemeral (it lives exactly as long as this session: that is
    what "the broker is alive" means), its payload ``broker_json`` stamped with
    the time now in milliseconds; its parent ``/brokers/ids`` exists. The
    broker epoch is the znode's czxid.

    If the znode exists (NODEEXISTS), do what Kafka's ``checkedEphemeralCreate``
    does: read it; when its ephemeral owner is this very session (a create
    retried after a lost connection) return its czxid; when another session owns
    it, another live broker has this id: raise ``BrokerIdInUseError`` and leave
    its znode alone. If it vanished before you could read it, create again.
    (SimpleKafka's ``BrokerRegistration`` first waits up to one session timeout
    for a stale znode of its own crashed predecessor to expire; not here.)
    """
    path = ZkPaths.broker(broker_id)
    data = broker_json(host, port, rack, int(time.time() * 1000))
    while True:
        try:
            _path, stat = zk.create(path, data, ephemeral=True, include_data=True)
            return stat.czxid
        except NodeExistsError:
            pass
        try:
            _data, stat = zk.get(path)
        except NoNodeError:
            continue  # its owner went away meanwhile: the id is free, try again
        if stat.ephemeralOwner != zk.client_id[0]:
            raise BrokerIdInUseError(f"broker id {broker_id} is registered by another live "
                                     f"session (znode {path})")
        return stat.czxid


# --- exercise 2: the controller election ---------------------------------------------------


def read_controller_epoch(zk: KazooClient) -> tuple[int, int]:
    """``(controller epoch, znode version)`` of ``/controller_epoch``; ``(0, -1)`` if absent.

    The znode holds the epoch as decimal text (``b"3"``), not JSON.
    """
    try:
        data, stat = zk.get(ZkPaths.CONTROLLER_EPOCH)
    except NoNodeError:
        return 0, -1
    return int(data), stat.version


def read_controller(zk: KazooClient) -> int | None:
    """The controller's broker id: the ``brokerid`` field of ``/controller``; None if absent."""
    try:
        data, _stat = zk.get(ZkPaths.CONTROLLER)
    except NoNodeError:
        return None
    return json.loads(data)["brokerid"]


def elect_controller(zk: KazooClient, broker_id: int) -> tuple[int | None, int, int]:
    """Try once to become the controller; returns (controller id, epoch, epoch znode version).

    Read ``/controller_epoch`` (epoch ``e``, version ``v``), then in ONE multi:
    create ``/controller`` ephemeral with ``{"version": 1, "brokerid": <id>,
    "timestamp": "<ms now>"}`` (timestamp a string, as Kafka writes it) and set
    ``/controller_epoch`` to ``e + 1`` expecting version ``v`` (or create it
    with ``e + 1`` when it was absent, ``v == -1``).

    Won: ``(broker_id, e + 1, the version /controller_epoch now has)``. Lost
    (NODEEXISTS: someone holds ``/controller``; BADVERSION: someone bumped the
    epoch first): nothing was written; read who won instead and return
    ``(read_controller(zk), *read_controller_epoch(zk))`` as they are now.
    """
    epoch, version = read_controller_epoch(zk)
    me = {"version": 1, "brokerid": broker_id, "timestamp": str(int(time.time() * 1000))}
    transaction = zk.transaction()
    transaction.create(ZkPaths.CONTROLLER, json.dumps(me).encode(), ephemeral=True)
    if version < 0:
        transaction.create(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode())
    else:
        transaction.set_data(ZkPaths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)
    results = transaction.commit()
    if any(isinstance(result, Exception) for result in results):
        return (read_controller(zk), *read_controller_epoch(zk))
    return broker_id, epoch + 1, version + 1


# --- exercise 3: fencing the zombie --------------------------------------------------------


def update_partition_state(zk: KazooClient, controller_epoch_version: int, topic: str,
                           partition: int, state: PartitionState, state_version: int) -> int:
    """Write ``state`` to the partition's state znode as a controller does; returns its new version.

    ONE multi: check that ``/controller_epoch`` still has version
    ``controller_epoch_version`` (the one this controller's election produced),
    then set ``/brokers/topics/<topic>/partitions/<partition>/state`` to
    ``state.to_json()`` expecting version ``state_version``.

    * The check failed (BadVersionError: a newer controller was elected, this
      one is a zombie): raise ``ControllerMovedError``; nothing was written.
    * The set_data failed (BadVersionError: someone changed the state since it
      was read; NoNodeError: no such partition): raise
      ``WriteConflictError(message, [that error])``; nothing was written.
    * Both held: return the state znode's new version.
    """
    transaction = zk.transaction()
    transaction.check(ZkPaths.CONTROLLER_EPOCH, controller_epoch_version)
    transaction.set_data(ZkPaths.partition_state(topic, partition), state.to_json(),
                         state_version)
    check, written = transaction.commit()
    if isinstance(check, BadVersionError):
        raise ControllerMovedError(f"/controller_epoch is no longer at version "
                                   f"{controller_epoch_version}: a newer controller was elected")
    if isinstance(written, Exception):
        raise WriteConflictError(f"the state of {topic}-{partition} was not written: "
                                 f"{written!r}", [written])
    return written.version
