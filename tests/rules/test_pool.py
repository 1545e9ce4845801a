"""The rule pool's workers: what a ``call``ed function prints never reaches the answers,
and a worker killed while idle is replaced without failing the next page."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from gossamer.extract.rules.pool import RulePool
from gossamer.extract.rules.schema import RuleSet, read_documents, rules_from_documents

pytestmark = pytest.mark.timeout(60)

RULE = """
[[rule]]
name = "title"
url = "/page$"
[[rule.field]]
name = "t"
css = "title"
process = [{call = "shout"}]
"""
PAGE = b"<html><head><title>Hello</title></head><body></body></html>"


@pytest.fixture
def noisy_rules(tmp_path: Path) -> RuleSet:
    (tmp_path / "noisy.py").write_text(
        "def shout(value, **kw):\n    print('a debugging line', value * 100)\n    return value\n"
    )
    (tmp_path / "r.toml").write_text(RULE)
    documents = read_documents([tmp_path / "r.toml"])
    return rules_from_documents(documents, {"shout": f"{tmp_path / 'noisy.py'}:shout"})


async def test_a_function_that_prints_does_not_garble_the_answers(noisy_rules: RuleSet) -> None:
    pool = RulePool(workers=1, timeout=10)
    try:
        for _ in range(3):
            found = await pool.evaluate(noisy_rules, "http://a.example/page", PAGE)
            assert found is not None
            assert (found.items, found.errors) == ([{"t": "Hello"}], [])
    finally:
        await pool.close()
    assert pool.stats().timed_out == 0


async def test_a_worker_killed_while_idle_is_replaced(noisy_rules: RuleSet) -> None:
    pool = RulePool(workers=1, timeout=10)
    try:
        await pool.evaluate(noisy_rules, "http://a.example/page", PAGE)
        (worker,) = psutil.Process().children()
        os.kill(worker.pid, signal.SIGKILL)
        for _ in range(200):  # until the event loop has reaped it (it alone waits for it)
            if not psutil.pid_exists(worker.pid):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the exit's callback, which the watcher schedules
        found = await pool.evaluate(noisy_rules, "http://a.example/page", PAGE)
        assert found is not None
        assert (found.items, found.errors) == ([{"t": "Hello"}], [])
        assert pool.stats().workers_started == 2
    finally:
        await pool.close()
    assert not psutil.Process().children()


_WITHOUT_STDERR = """
import asyncio, sys
from pathlib import Path
from gossamer.extract.rules.pool import RulePool
from gossamer.extract.rules.schema import read_documents, rules_from_documents

async def main() -> None:
    tmp = Path(sys.argv[1])
    rules = rules_from_documents(
        read_documents([tmp / "r.toml"]), {"shout": f"{tmp / 'noisy.py'}:shout"}
    )
    pool = RulePool(workers=1, timeout=10)
    found = await pool.evaluate(rules, "http://a.example/page", sys.argv[2].encode())
    await pool.close()
    print(found.items if found else None, found.errors if found else None)

asyncio.run(main())
"""


def test_a_crawl_without_stderr_still_reads_pages_with_rules(
    noisy_rules: RuleSet, tmp_path: Path
) -> None:
    """The crawl started with stderr closed (``2>&-``): its workers have nowhere to send
    what a function prints, and answer all the same."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -c "$1" "$2" "$3" 2>&-', sys.executable, _WITHOUT_STDERR,
         str(tmp_path), PAGE.decode()],
        env=env, capture_output=False, stdout=subprocess.PIPE, timeout=30, check=True,
    )  # fmt: skip
    assert done.stdout.decode().strip() == "[{'t': 'Hello'}] []"
