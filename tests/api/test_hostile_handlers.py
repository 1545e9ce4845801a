"""Page handlers that misbehave, on the test web: each is recorded on its pages as a
handler error (``handler-error: ...``), the page's own links are followed, and the crawl
ends with its stats.json, whatever the handler raised, however long it waited, however
much it gave. A real stop still ends a crawl whose handler is waiting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gossamer import Crawl, CrawlSettings, Handlers, Page
from gossamer.testweb import TestWebServer, generate

pytestmark = pytest.mark.timeout(60)


async def _cancelled(page: Page) -> None:
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future  # a task the handler awaited was cancelled: not the crawl


def _exits(page: Page) -> None:
    raise SystemExit(3)


def _interrupts(page: Page) -> list[dict[str, Any]]:
    raise KeyboardInterrupt


async def _hangs(page: Page) -> None:
    await asyncio.Event().wait()


_BIG = "x" * 1_000_000


def _too_much(page: Page) -> list[dict[str, Any]]:
    return [{"b": _BIG} for _ in range(150)]  # each item under 1 MiB, all 150 MB


def _deep(page: Page) -> list[dict[str, Any]]:
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    return [{"x": nested}]


def _timeout_raised(page: Page) -> None:
    raise TimeoutError  # the handler's own: not its time bound


@pytest.mark.parametrize(
    ("handler", "error"),
    [
        (_cancelled, "handler-error: CancelledError"),
        (_exits, "handler-error: SystemExit"),
        (_interrupts, "handler-error: KeyboardInterrupt"),
        (_hangs, "handler-error: timeout"),
        (_too_much, "handler-error: output too large"),
        (_deep, "handler-error: fields nested too deep"),
        (_timeout_raised, "handler-error: TimeoutError"),
    ],
)
async def test_a_hostile_handler_is_a_handler_error(
    tmp_path: Path, handler: Callable[[Page], Any], error: str
) -> None:
    web = generate(5, hosts=1, pages_per_host=12, specials=(), crawl_delay=0.0)
    out = tmp_path / "out"
    handlers = Handlers(timeout=0.3)
    handlers.add(r"^http://[^/]+/$", handler)  # the front page only: its links lead on
    async with TestWebServer(web) as server:
        settings = CrawlSettings(
            seeds=[server.url(0)],
            out=out,
            resolve=["*.test=127.0.0.1"],
            allow_domains=["test"],
            quiet=True,
            concurrency=4,
            max_depth=1,
        )
        stats = await asyncio.wait_for(Crawl(settings, handlers=handlers).run(), 30)
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    front = [r for r in records if r["url"] == server.url(0)]
    assert [r["error"] for r in front] == [error]
    assert front[0]["items"] == 0
    assert any(r["depth"] == 1 and r["error"] is None for r in records)  # its links followed
    assert stats.hook_errors == 1
    assert json.loads((out / "stats.json").read_text())["hook_errors"] == 1


async def test_stop_ends_a_crawl_whose_handler_waits(tmp_path: Path) -> None:
    web = generate(5, hosts=1, pages_per_host=12, specials=(), crawl_delay=0.0)
    entered = asyncio.Event()

    async def waits(page: Page) -> None:
        entered.set()
        await asyncio.Event().wait()

    handlers = Handlers(timeout=50)
    handlers.add(r"^http://[^/]+/$", waits)
    async with TestWebServer(web) as server:
        settings = CrawlSettings(
            seeds=[server.url(0)],
            out=tmp_path / "out",
            resolve=["*.test=127.0.0.1"],
            allow_domains=["test"],
            quiet=True,
        )
        crawl = Crawl(settings, handlers=handlers)
        crawl.start()
        await asyncio.wait_for(entered.wait(), 20)
        started = time.monotonic()
        crawl.stop()
        await asyncio.wait_for(crawl.wait(), 40)
    assert time.monotonic() - started < 40
    assert (tmp_path / "out" / "stats.json").exists()


def test_handlers_refuse_a_bad_timeout_and_a_non_function() -> None:
    for timeout in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="timeout"):
            Handlers(timeout=timeout)
    with pytest.raises(ValueError, match="callable"):
        Handlers().handler(r"/")(None)  # type: ignore[type-var]


class Stubborn:
    """A handler that swallows its cancellation (a retry loop with a bare ``except:``) until
    ``release`` is set; ``entered`` is set at its first call."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.running = 0

    async def __call__(self, page: Page) -> None:
        self.entered.set()
        self.running += 1
        try:
            while not self.release.is_set():
                with contextlib.suppress(BaseException):  # the hostile shape under test
                    await self.release.wait()
        finally:
            self.running -= 1


async def _stubborn_crawl(
    tmp_path: Path, stubborn: Stubborn, bound: float, stop: bool
) -> tuple[list[dict[str, Any]], float]:
    """The records of a crawl whose front page's handler is ``stubborn``, and the seconds
    from the handler's first call (and ``stop()``) to the crawl's end."""
    web = generate(5, hosts=1, pages_per_host=12, specials=(), crawl_delay=0.0)
    handlers = Handlers(timeout=bound)
    handlers.add(r"^http://[^/]+/$", stubborn)
    async with TestWebServer(web) as server:
        settings = CrawlSettings(
            seeds=[server.url(0)],
            out=tmp_path / "out",
            resolve=["*.test=127.0.0.1"],
            allow_domains=["test"],
            quiet=True,
            max_depth=1,
        )
        crawl = Crawl(settings, handlers=handlers)
        crawl.start()
        await asyncio.wait_for(stubborn.entered.wait(), 20)
        started = time.monotonic()
        if stop:
            crawl.stop()
        done, _ = await asyncio.wait([asyncio.ensure_future(crawl.wait())], timeout=20)
        took = time.monotonic() - started
        stubborn.release.set()  # the abandoned call ends, so the loop can close
        assert done, "the crawl waited on a handler that ignores its cancellation"
    lines = (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], took


async def test_a_handler_that_ignores_its_cancellation_ends_at_its_bound(tmp_path: Path) -> None:
    stubborn = Stubborn()
    records, _ = await _stubborn_crawl(tmp_path, stubborn, bound=0.3, stop=False)
    errors = [r["error"] for r in records if r["error"] is not None]
    assert errors == ["handler-error: timeout"]
    assert any(r["depth"] == 1 and r["error"] is None for r in records)  # its links followed
    assert stubborn.running == 1  # abandoned, not waited on (released at the end)


async def test_stop_ends_a_crawl_whose_handler_ignores_its_cancellation(tmp_path: Path) -> None:
    stubborn = Stubborn()
    _, took = await _stubborn_crawl(tmp_path, stubborn, bound=50, stop=True)
    assert took < 15
    assert (tmp_path / "out" / "stats.json").exists()


A_PROGRAM = """
import asyncio, contextlib, sys
from gossamer import Crawl, CrawlSettings, Handlers, Page
from gossamer.testweb import TestWebServer, generate

async def stubborn(page: Page) -> None:
    while True:  # a retry loop that takes every exception for its own
        with contextlib.suppress(BaseException):
            await asyncio.sleep(3600)

async def main() -> None:
    web = generate(5, hosts=1, pages_per_host=12, specials=(), crawl_delay=0.0)
    handlers = Handlers(timeout=0.3)
    handlers.add(r"^http://[^/]+/$", stubborn)
    async with TestWebServer(web) as server:
        settings = CrawlSettings(
            seeds=[server.url(0)], out=sys.argv[1], resolve=["*.test=127.0.0.1"],
            allow_domains=["test"], quiet=True, max_depth=1,
        )
        stats = await Crawl(settings, handlers=handlers).run()
    print("pages", stats.pages, flush=True)

asyncio.run(main())
print("asyncio.run returned", flush=True)
"""


def test_a_program_whose_handler_ignores_its_cancellation_exits(tmp_path: Path) -> None:
    """``asyncio.run()`` cancels every task at its exit and waits for all: a handler call that
    ignores its cancellation held the program there for good. The crawl's end gives it one
    more cancellation and `HANDLER_GRACE`, then lets it go with a warning naming it."""
    import subprocess
    import sys

    program = [sys.executable, "-c", A_PROGRAM, str(tmp_path / "out")]
    done = subprocess.run(program, capture_output=True, text=True, timeout=40)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["pages 12", "asyncio.run returned"], done.stdout
    [warning] = [line for line in done.stderr.splitlines() if "after the crawl's end" in line]
    assert warning.startswith("page handler __main__.stubborn still ignores its cancellation")
