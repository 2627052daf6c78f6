"""Local process helpers shared by the embedded ZooKeeper, LocalCluster and the CLI.

A free port to start a server on, whether a pid still runs, and a bounded
poll for a condition: each written once here, in the lowest layer that
starts processes (the embedded ZooKeeper's launcher), so that the cluster
layer, the CLI, the tests and the benchmarks all use the same ones.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard, TypeVar

LOOPBACK = "127.0.0.1"

T = TypeVar("T")


def free_port(host: str = LOOPBACK) -> int:
    """A port nobody listens on right now (the OS picks it; we release it at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def pid_alive(pid: int | None) -> TypeGuard[int]:
    """True if a process with this pid runs (a zombie, ours or another's, does not count)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # our own child that already exited: reap it so it does not count as alive
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass
    try:  # someone else's zombie "exists" until its parent reaps it
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return status != "Z"


def wait_until(condition: Callable[[], T], what: str, timeout: float = 60.0,
               interval: float = 0.1,
               error: Callable[[str], Exception] = TimeoutError) -> T:
    """Poll ``condition`` until it returns something true and return that, else raise.

    Bounded in time: after ``timeout`` seconds ``error("timed out after ...
    waiting for <what>")`` is raised.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise error(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def command_line(pid: int) -> str:
    """The command line of ``pid`` with spaces between arguments ("" if unknown)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def stop_recorded_pid(pid: int | None, marker: str, timeout: float = 30.0, *,
                      within: str | None = None) -> TypeGuard[int]:
    """SIGTERM (then SIGKILL after ``timeout``) a recorded pid whose command line holds ``marker``.

    A pid read back from a file may have been recycled by something else by
    now: only a process whose command line still names ``marker`` (and
    ``within``, when given: a directory of its own, so that a recycled pid now
    held by the same kind of process of another cluster is left alone) is
    signalled. Returns True if it was ours and is now gone.
    """
    if pid is None or not pid_alive(pid):
        return False
    held = command_line(pid)
    if marker not in held or (within is not None and within not in held):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid), f"pid {pid} to die", 10.0)
    return True


__all__: list[str] = ["LOOPBACK", "command_line", "free_port", "pid_alive", "stop_recorded_pid",
                      "wait_until"]
