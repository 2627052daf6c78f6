"""Start the console as a process of its own (for ``cluster up --console``, tests, benchmarks)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque

_LISTENING = re.compile(r"^console: (http://\S+/) ")


class ConsoleProcess:
    """A running ``simplekafka console``; ``url`` ends with a slash, e.g. http://127.0.0.1:8080/."""

    def __init__(self, bootstrap_servers: str, host: str = "127.0.0.1", port: int = 0,
                 timeout: float = 60.0) -> None:
        command = [sys.executable, "-m", "simplekafka", "console",
                   "--bootstrap-server", bootstrap_servers, "--host", host, "--port", str(port)]
        self.output: deque[str] = deque(maxlen=200)  # its last lines, for diagnostics
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        self.url = self._wait_for_url(timeout)
        threading.Thread(target=self._drain, daemon=True, name="console-output").start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        seen = self.output
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            seen.append(line)
            match = _LISTENING.match(line)
            if match:
                return match.group(1)
        self.stop()
        raise RuntimeError("the console did not start:\n" + "".join(seen))

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 20.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def __enter__(self) -> ConsoleProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
