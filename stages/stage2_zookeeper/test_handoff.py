"""kazoo's threads handed to an event loop (asyncio here; Twisted's reactor.callFromThread
works the same way): callbacks arrive on the loop's thread and the loop never blocks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from simplekafka.coordination import (
    BrokerRegistration,
    ControllerElection,
    LoopHandoff,
    ZkPaths,
    ensure_kafka_paths,
)

pytestmark = pytest.mark.integration


async def _ticks_while(condition: asyncio.Event, timeout: float = 20.0) -> int:
    """Count loop iterations until ``condition`` is set: proof the loop kept running."""
    ticks = 0
    deadline = time.monotonic() + timeout
    while not condition.is_set():
        assert time.monotonic() < deadline, "timed out"
        ticks += 1
        await asyncio.sleep(0.01)
    return ticks


def test_blocking_zookeeper_calls_report_back_on_the_loop(zk):
    ensure_kafka_paths(zk)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        handoff = LoopHandoff(loop.call_soon_threadsafe)
        done = asyncio.Event()
        seen: dict[str, object] = {}

        def slow_listing() -> list[str]:
            time.sleep(0.3)  # a slow ZooKeeper; the loop must keep turning meanwhile
            return zk.get_children("/brokers")

        def on_result(children: list[str]) -> None:
            seen["children"], seen["thread"] = sorted(children), threading.get_ident()
            done.set()

        handoff.run_blocking(slow_listing, on_result=on_result)
        ticks = await _ticks_while(done)
        assert seen == {"children": ["ids", "seqid", "topics"], "thread": loop_thread}
        assert ticks >= 5

        failed = asyncio.Event()
        errors: list[BaseException] = []
        handoff.run_blocking(zk.get, "/no/such/znode",
                             on_error=lambda exc: (errors.append(exc), failed.set()))
        await _ticks_while(failed)
        assert type(errors[0]).__name__ == "NoNodeError"
        handoff.close()

    asyncio.run(scenario())


def test_election_callbacks_and_watches_run_on_the_loop(zk, zk_client_factory):
    other = zk_client_factory()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        calls: list[tuple[str, object, int]] = []
        elected, saw_newcomer = asyncio.Event(), asyncio.Event()

        def on_brokers(changes) -> None:
            calls.append(("brokers", changes.new, threading.get_ident()))
            if 2 in changes.new:
                saw_newcomer.set()

        election = ControllerElection(
            zk, 1, registration=BrokerRegistration(zk, 1, "127.0.0.1", 9001),
            on_elected=lambda epoch: (calls.append(("elected", epoch, threading.get_ident())),
                                      elected.set()),
            on_brokers_changed=on_brokers,
            call_soon=loop.call_soon_threadsafe,
        ).start()
        await _ticks_while(elected)
        # A watch fired on kazoo's thread: the change still arrives on the loop.
        await loop.run_in_executor(None, BrokerRegistration(other, 2, "127.0.0.1", 9002).register)
        await _ticks_while(saw_newcomer)
        await loop.run_in_executor(None, election.stop)
        assert calls[0][:2] == ("elected", 1)
        assert {thread for _, _, thread in calls} == {loop_thread}
        assert zk.exists(ZkPaths.CONTROLLER) is None  # stop() resigned cleanly

    asyncio.run(scenario())


TWISTED_SCRIPT = r"""
import sys, threading
from twisted.internet import reactor
from simplekafka.coordination import BrokerRegistration, ControllerElection, connect_zookeeper

zk = connect_zookeeper(sys.argv[1], session_timeout=4.0)
reactor_thread = []
seen = []

def on_elected(epoch):
    seen.append(("elected", epoch, threading.get_ident() == reactor_thread[0]))
    reactor.callLater(0, finish)

def finish():
    election.stop()  # blocks briefly; acceptable at shutdown
    print(seen, flush=True)
    reactor.stop()

election = ControllerElection(zk, 1, registration=BrokerRegistration(zk, 1, "127.0.0.1", 9001),
                              on_elected=on_elected, call_soon=reactor.callFromThread)
reactor.callWhenRunning(lambda: (reactor_thread.append(threading.get_ident()), election.start()))
reactor.callLater(30, reactor.stop)
reactor.run()
zk.stop()
"""


def test_twisted_reactor_gets_the_callbacks_on_its_own_thread(zk_connect):
    """The seam as the stage 4 broker uses it: reactor.callFromThread."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", TWISTED_SCRIPT, zk_connect],
                            capture_output=True, text=True, timeout=60, cwd=root, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[('elected', 1, True)]"
