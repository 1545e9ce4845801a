"""The cluster tests' harness: what a test leaves behind does not reach the next tests."""

from __future__ import annotations

import signal
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
