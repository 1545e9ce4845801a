"""The cluster tests' harness: what a test leaves behind does not reach the next tests."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

from tests.cluster.harness import STARTED, reap_started, start, until_waiting, worker_args
from tests.redis_server import RedisServer


async def test_a_worker_left_running_is_killed_and_reaped_in_the_tests_loop(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A test that fails midway leaves its workers running: the cluster tests' fixture kills
    them and waits for their exit in the test's event loop, so their process handles close
    there. Before, it only killed them after the loop had closed with the handles open:
    uvloop reported them as unraisable ResourceWarnings, in that test or a later one."""
    log = tmp_path / "w0.log"
    proc = await start(log, *worker_args(redis_server.url, tmp_path, 0))
    await until_waiting([log])  # it waits for a job that never comes
    await reap_started()
    assert proc.returncode == -signal.SIGKILL
    assert not STARTED


def _started_in_a_loop_now_closed() -> asyncio.subprocess.Process:
    """A process started in an event loop of its own, closed since (as a test outside the
    cluster fixtures leaves one in ``STARTED``)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(
            asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
        )
    finally:
        loop.close()


def _child_watchers_done() -> None:
    """Wait for asyncio's threads waiting for a child process to end (they hold its
    transport until then)."""
    for thread in threading.enumerate():
        if thread.name.startswith("asyncio-waitpid-"):
            thread.join(10)


async def test_a_process_of_a_closed_loop_is_not_waited_for() -> None:
    """A process of an event loop closed since is dropped from ``STARTED`` without being
    waited for: before, the reaping awaited it from the next test's loop."""
    proc = await asyncio.to_thread(_started_in_a_loop_now_closed)
    STARTED.append(proc)
    try:
        await asyncio.wait_for(reap_started(), 5)
        assert not STARTED
        assert proc.returncode is None  # not killed: its loop no longer reaps it
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # still sleeping: its pid is its own
        await asyncio.to_thread(_child_watchers_done)
        with warnings.catch_warnings():  # its transport, closed with no loop to close it
            warnings.simplefilter("ignore", ResourceWarning)
            del proc
            gc.collect()
