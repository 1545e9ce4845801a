"""The page stage's ``handler`` step on canned answers: where it stands among the steps, the
items and links a handler gives, what it is not called on, and a failing handler recorded on
its page as a failing hook is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from gossamer.hooks import Link, Page
from gossamer.outcomes import Outcome
from gossamer.page import PageConfig, PageStage
from gossamer.page.handlers import Handlers

from .test_stage import ARTICLE, LINKS, URL, fetched, handle, urls

pytestmark = pytest.mark.timeout(30)


def _stage(handlers: Handlers, **config: Any) -> PageStage:
    return PageStage(PageConfig(handlers=handlers, **config))


def _hook(page: Page) -> dict[str, Any]:
    return {"hooked": True}


async def test_the_handler_step_stands_after_the_content_and_before_the_hook() -> None:
    handlers = Handlers()
    handlers.add(r"/a/", lambda page: None)
    stage = _stage(handlers, hook=_hook)
    steps = ("read", "robots", "canonical", "text", "handler", "hook", "outlinks")
    assert stage.steps == steps
    assert "handler" not in PageStage(PageConfig(handlers=Handlers())).steps


async def test_items_and_links_of_the_first_matching_handler() -> None:
    handlers = Handlers()
    seen: list[str] = []

    @handlers.handler(r"page\.html$")
    async def page_items(page: Page) -> AsyncIterator[dict[str, Any] | Link]:
        seen.append(page.url)
        yield {"title": page.title, "chars": len(page.html or "")}
        yield Link("other.html")
        yield {"n": 2}

    @handlers.handler(r"/a/")
    def never(page: Page) -> None:
        raise AssertionError("a later handler for the same URL")

    stage = _stage(handlers)
    page = await handle(stage, fetched())
    record = page.record
    assert seen == [URL]
    assert [item.fields for item in record.found] == [
        {"title": "A page", "chars": len(ARTICLE)},
        {"n": 2},
    ]
    assert [item.index for item in record.found] == [0, 1]
    assert record.rule == "page_items" and record.items == 2
    assert urls(page) == ["http://site.test/a/other.html"]  # instead of the page's own
    assert record.outlinks == 1
    stats = stage.stats()
    assert (stats.rule_pages, stats.items) == (1, 2)


async def test_keep_links_follows_the_pages_links_too() -> None:
    handlers = Handlers()

    @handlers.handler(r"/a/", keep_links=True)
    def more(page: Page) -> Iterator[Link]:
        yield Link("http://site.test/more")

    page = await handle(_stage(handlers), fetched())
    assert urls(page) == [*LINKS, "http://site.test/more"]
    assert page.record.rule == "more" and page.record.items == 0


async def test_no_handler_for_the_url_or_the_answer() -> None:
    handlers = Handlers()
    handlers.add(r"/elsewhere/", lambda page: [{"x": 1}])
    page = await handle(_stage(handlers), fetched())
    assert page.record.rule is None and urls(page) == LINKS
    handlers.add(r"/a/", lambda page: [{"x": 1}])
    withheld = fetched(headers={"content-type": "text/html", "x-robots-tag": "noindex"})
    assert (await handle(_stage(handlers), withheld)).record.found == ()


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        (ValueError("bug"), "handler-error: ValueError"),
        ([{"bytes": b"x"}], "handler-error: fields are not JSON"),
        (["a string"], "handler-error: gave neither a mapping nor a Link"),
        ([{"big": "x" * (1 << 20)}], "handler-error: fields over 1 MiB"),
    ],
)
async def test_a_failing_handler_is_recorded_on_its_page(returned: Any, error: str) -> None:
    def handler(page: Page) -> Any:
        if isinstance(returned, Exception):
            raise returned
        return returned

    handlers = Handlers()
    handlers.add(r"/a/", handler)
    page = await handle(_stage(handlers), fetched())
    assert page.record.error == error
    assert page.outcome is Outcome.HOOK_ERROR
    assert page.record.found == () and page.record.rule is None
    assert urls(page) == LINKS  # the page's own links are followed
