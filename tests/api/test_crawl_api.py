"""The Python API on the test web: records streamed while the crawl runs, stopped and
resumed, page handlers giving items and links, a failing handler recorded on its page."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gossamer
from gossamer import Crawl, CrawlSettings, Handlers, Link, Page, PageRecord
from gossamer.testweb import TestWebServer, Web, generate
from gossamer.urls import canonicalize

pytestmark = pytest.mark.timeout(60)


def _web() -> Web:
    return generate(11, hosts=3, pages_per_host=30, specials=(), crawl_delay=0.0)


def _settings(server: TestWebServer, out: Path, **fields: Any) -> CrawlSettings:
    values: dict[str, Any] = {
        "seeds": [server.url(0)],
        "out": out,
        "resolve": ["*.test=127.0.0.1"],
        "allow_domains": ["test"],
        "quiet": True,
        "concurrency": 4,
        "per_host": 1,
        "delay": 0.02,
        "checkpoint_interval": 0.05,
    }
    return CrawlSettings(**(values | fields))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _fetches(server: TestWebServer) -> Counter[str]:
    return Counter(canonicalize(e.url) for e in server.log if not e.path.startswith("/robots"))


async def test_records_arrive_while_the_crawl_runs(tmp_path: Path) -> None:
    web = _web()
    async with TestWebServer(web) as server:
        crawl = Crawl(_settings(server, tmp_path / "out"))
        stream = crawl.records()
        seen: list[PageRecord] = []
        running_at_first = None
        async with crawl:
            async for record in stream:
                if not seen:
                    running_at_first = crawl.running
                    stats = crawl.stats()
                    assert stats is not None and stats.pages < 30
                seen.append(record)
        stats = await crawl.wait()
        expected = web.reachable([server.url(0)], port=server.port)
    assert running_at_first is True, "the first record came only once the crawl had ended"
    written = _lines(tmp_path / "out" / "pages.jsonl")
    assert [r.url for r in seen] == [r["url"] for r in written]
    assert {r.url for r in seen} >= expected
    assert stats.pages == len([r for r in seen if r.kind == "page"])


async def test_a_reader_that_leaves_does_not_hold_the_crawl(tmp_path: Path) -> None:
    async with TestWebServer(_web()) as server:
        crawl = Crawl(_settings(server, tmp_path / "out", concurrency=8, per_host=2))
        async with crawl:
            async for _ in crawl.records(limit=1):
                break  # and never read again: the stream is dropped
            slow = crawl.records(limit=1)
            await slow.__anext__()
            await slow.aclose()
        stats = await crawl.wait()
    assert stats.pages > 10


async def test_stop_then_resume_loses_and_refetches_nothing(tmp_path: Path) -> None:
    web = _web()
    async with TestWebServer(web) as server:
        settings = _settings(server, tmp_path / "out")
        first = Crawl(settings)
        async with first:
            count = 0
            async for _ in first.records():
                count += 1
                if count == 15:
                    first.stop()
        stopped = await first.wait()
        assert stopped.pages < 60, "the stop came too late to test anything"
        written = len(_lines(tmp_path / "out" / "pages.jsonl"))

        again = Crawl(_settings(server, tmp_path / "out", seeds=[], resume=True))
        streamed = [record.url async for record in _run_streaming(again)]
        resumed = await again.wait()
        fetched = _fetches(server)
        expected = web.reachable([server.url(0)], port=server.port)
    urls = [r["url"] for r in _lines(tmp_path / "out" / "pages.jsonl")]
    assert len(urls) == len(set(urls)), "pages.jsonl has a URL twice"
    assert set(urls) >= expected
    assert len(streamed) == len(urls) - written  # only the new records
    assert resumed.pages == len(
        [r for r in _lines(tmp_path / "out" / "pages.jsonl") if r["kind"] == "page"]
    )
    assert not {u for u, n in fetched.items() if n > 1}, "a graceful stop refetches nothing"


async def _run_streaming(crawl: Crawl) -> Any:
    stream = crawl.records()
    crawl.start()
    async for record in stream:
        yield record


async def test_handlers_give_items_and_links(tmp_path: Path) -> None:
    given: list[str] = []

    handlers = Handlers()

    @handlers.handler(r"^http://site0\.test:\d+/$")
    def home(page: Page) -> Iterator[dict[str, Any] | Link]:
        same_host = [link for link in page.links if "//site0.test:" in link][:3]
        for link in same_host:
            given.append(link)
            yield Link(link)
        yield {"kind": "home", "links": len(same_host)}

    async with TestWebServer(_web()) as server:
        settings = _settings(server, tmp_path / "out", sitemaps="off")
        crawl = Crawl(settings, handlers=handlers)

        @crawl.handler(r"-\d+/$")
        async def article(page: Page) -> list[dict[str, Any] | Link]:
            given.append(page.url + "more/")
            return [{"title": page.title, "words": len((page.html or "").split())}, Link("more/")]

        stream = crawl.records()
        crawl.start()
        records = [record async for record in stream]
        stats = await crawl.wait()
        seed = server.url(0)
    urls = {record.url for record in records}
    assert urls == {canonicalize(url) for url in (seed, *given)}, "only the handlers' links"
    assert any(url.endswith("/more/") for url in urls)  # relative links resolved
    by_url = {record.url: record for record in records}
    seed = canonicalize(seed)
    assert [item.fields for item in by_url[seed].found] == [{"kind": "home", "links": 3}]
    assert by_url[seed].rule == "home" and by_url[seed].items == 1
    articles = [r for r in records if r.rule == "article"]
    assert len(articles) == 3
    assert all(r.found[0].fields["title"] == r.title for r in articles)
    items = _lines(tmp_path / "out" / "items.jsonl")
    assert len(items) == 4 == stats.items
    assert {item["rule"] for item in items} == {"home", "article"}
    assert stats.rule_pages == 4


async def test_a_failing_handler_is_recorded_on_its_page(tmp_path: Path) -> None:
    async with TestWebServer(_web()) as server:
        crawl = Crawl(_settings(server, tmp_path / "out", max_depth=1))

        @crawl.handler(r"/news/")
        def broken(page: Page) -> Iterator[dict[str, Any]]:
            yield {"fine": True}
            raise ValueError("a bug in the user's code")

        @crawl.handler(r"/docs/")
        def not_json(page: Page) -> list[dict[str, Any]]:
            return [{"body": page.body}]  # bytes: not JSON

        stats = await crawl.run()
    records = _lines(tmp_path / "out" / "pages.jsonl")
    failed = [r for r in records if r["error"] == "handler-error: ValueError"]
    refused = [r for r in records if r["error"] == "handler-error: fields are not JSON"]
    assert failed and all("/news/" in r["url"] for r in failed)
    assert refused and all("/docs/" in r["url"] for r in refused)
    assert all(r["items"] == 0 for r in failed + refused)
    assert stats.hook_errors == len(failed) + len(refused)
    assert any(r["error"] is None and r["status"] == 200 for r in records)  # the crawl went on
    # a failed handler's page has its own links followed: pages beyond it were crawled
    assert any(r["depth"] == 1 for r in records)


async def test_settings_are_checked_as_the_command_lines_are(tmp_path: Path) -> None:
    with pytest.raises(gossamer.SettingsError, match="concurrency"):
        Crawl(CrawlSettings(seeds=["http://example.test/"], concurrency=0))
    with pytest.raises(ValueError):
        Handlers().handler(r"(?<=a)b")  # RE2 refuses lookbehind, as in rule documents


def test_run_blocks_until_the_end(tmp_path: Path) -> None:
    """``gossamer.run`` runs its own event loop: the test web runs in a thread of its own."""
    import asyncio
    import threading

    web = generate(3, hosts=1, pages_per_host=8, specials=(), crawl_delay=0.0)
    ready = threading.Event()
    done = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        async with TestWebServer(web) as server:
            box["seed"], box["port"] = server.url(0), server.port
            ready.set()
            await asyncio.get_running_loop().run_in_executor(None, done.wait)

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    try:
        assert ready.wait(10)
        stats = gossamer.run(
            box["seed"],
            out=str(tmp_path / "out"),
            resolve=["*.test=127.0.0.1"],
            allow_domains=["test"],
            quiet=True,
        )
    finally:
        done.set()
        thread.join(10)
    assert stats.pages == len(web.reachable([box["seed"]], port=box["port"]))


async def test_stop_ends_a_crawl_held_by_a_stream_never_read(tmp_path: Path) -> None:
    async with TestWebServer(_web()) as server:
        crawl = Crawl(_settings(server, tmp_path / "out"))
        read = crawl.records()
        never_read = crawl.records(limit=1)  # full after one record: the crawl waits for it
        crawl.start()
        taken = [await read.__anext__(), await read.__anext__()]
        stats = crawl.stats()
        assert stats is not None and stats.pages < 90  # held by the full stream
        crawl.stop()
        stats = await asyncio.wait_for(crawl.wait(), 30)
        rest = [record async for record in read]
        kept = [record async for record in never_read]
    assert len(taken) + len(rest) == len(kept) >= 2  # every record reached both streams


async def test_a_second_crawl_on_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    """Two crawls on one folder (a resume started again while the last still runs, an
    overwrite over a running crawl) would record URLs twice and double every host's pace:
    the second is refused, naming the first's process, and the folder is free once the
    first ends."""
    out = tmp_path / "out"
    async with TestWebServer(_web()) as server:
        first = Crawl(_settings(server, out))
        async with first:
            async for _ in first.records(limit=1):
                break
            for fields in ({"resume": True, "seeds": []}, {"overwrite": True}):
                second = Crawl(_settings(server, out, **fields))
                with pytest.raises(gossamer.SettingsError, match="another crawl is running in"):
                    await second.run()
            first.stop()
        await first.wait()
        written = _lines(out / "pages.jsonl")
        again = await Crawl(_settings(server, out, seeds=[], resume=True)).run()
    assert len({r["url"] for r in written}) == len(written)
    assert again.pages >= len(written)
