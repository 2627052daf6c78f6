"""Let a test harness expire a broker's ZooKeeper session, as Kafka's tests do in-process.

ZooKeeper ends a session when a client holding its id and password closes
it, which is how test harnesses (kazoo's, Kafka's) force a "session expired"
on a live member. A broker is a separate process here, so when the
environment variable ``SIMPLEKAFKA_ZK_SESSION_FILE`` names a file, the broker
writes its current session id and password there (mode 0600), and again
after every new session. Nothing is written when the variable is unset.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kazoo.client import KazooClient


SESSION_FILE_ENV = "SIMPLEKAFKA_ZK_SESSION_FILE"


def publish_session(zk: KazooClient, path: str | os.PathLike | None = None) -> None:
    """Write ``zk``'s session to ``path`` (default: the env variable) now and on each reconnect."""
    path = path or os.environ.get(SESSION_FILE_ENV)
    if not path:
        return
    target = Path(path)

    def write(_state: object = None) -> None:
        client_id = zk.client_id
        if not client_id:
            return
        session_id, password = client_id
        scratch = target.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(f"{session_id:x} {password.hex()}\n")
            os.replace(scratch, target)

    write()
    zk.add_listener(write)


def read_session(path: str | os.PathLike) -> tuple[int, bytes]:
    """The (session id, password) a broker published; ValueError if the file is absent or bad."""
    try:
        session_hex, password_hex = Path(path).read_text().split()
        return int(session_hex, 16), bytes.fromhex(password_hex)
    except (OSError, ValueError) as exc:
        raise ValueError(f"no ZooKeeper session published in {path} ({exc})") from None
