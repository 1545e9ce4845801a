"""Example pages that cannot define the topic, served by a small site on loopback: one with no
text stops the crawl (exit status 2) naming it; one that holds none of the phrase's words is
named in a warning and the crawl goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from tests.focus.test_focus_crawl import run_cli
from tests.local_app import serve, serve_pages

from gossamer.focus.examples import Example, unrelated
from gossamer.focus.topic import Topic

PHRASE = "database transactions and locking"
PAGES = {
    "/": '<html><body><p>Start.</p><a href="/locks.html">Locks</a></body></html>',
    "/empty.html": "<html><head><title>Nothing</title></head><body></body></html>",
    "/garden.html": "<html><body><main><p>Tomatoes want sun, water and a stake to climb."
    " Prune the side shoots weekly.</p></main></body></html>",
    "/locks.html": "<html><body><main><p>A transaction takes row locks; a database"
    " transaction waits for the locks it needs.</p></main></body></html>",
}


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_pages(PAGES) as port:
        yield f"http://site.test:{port}"


def test_an_example_without_the_phrases_words_is_named() -> None:
    examples = [
        Example("http://a.test/garden.html", "Tomatoes want sun and water."),
        Example("http://a.test/locks.html", "A transaction takes row locks."),
    ]
    messages = unrelated(examples, Topic(PHRASE, [e.text for e in examples]))
    assert messages == [
        "focus example http://a.test/garden.html holds none of the phrase's words: "
        "is it on the topic?"
    ]
    assert unrelated(examples, Topic("", [e.text for e in examples])) == []


@pytest.mark.slow
async def test_an_empty_example_page_exits_2(site: str, tmp_path: Path) -> None:
    args = [f"{site}/", "--focus-phrase", PHRASE, "--focus-example", f"{site}/empty.html"]
    code, output = await run_cli(args, tmp_path)
    assert code == 2, output
    assert f"{site}/empty.html: holds no text" in output, output


@pytest.mark.slow
async def test_an_off_topic_example_is_named_and_the_crawl_goes_on(
    site: str, tmp_path: Path
) -> None:
    args = [f"{site}/", "--focus-phrase", PHRASE, "--max-pages", "2"]
    args += ["--focus-example", f"{site}/garden.html", "--focus-example", f"{site}/locks.html"]
    code, output = await run_cli(args, tmp_path)
    assert code == 0, output
    assert f"focus example {site}/garden.html holds none of the phrase's words" in output
    assert "locks.html holds none" not in output


@pytest.mark.slow
async def test_an_example_outside_the_scope_is_named_and_shapes_the_topic(
    site: str, tmp_path: Path
) -> None:
    """An example on a host the crawl may not visit is fetched (it says what the topic is)
    and named in a warning; an example in scope is not."""
    port = site.rpartition(":")[2]
    elsewhere = f"http://elsewhere.example:{port}/locks.html"
    args = [f"{site}/", "--focus-phrase", PHRASE, "--max-pages", "2"]
    args += ["--focus-example", elsewhere, "--focus-example", f"{site}/locks.html"]
    args += ["--resolve", "elsewhere.example=127.0.0.1"]
    code, output = await run_cli(args, tmp_path)
    assert code == 0, output
    assert f"focus example {elsewhere} is outside the crawl's scope" in output, output
    assert f"{site}/locks.html is outside" not in output, output


@pytest.mark.slow
@pytest.mark.parametrize("allowed", [False, True])
async def test_an_example_redirecting_to_a_port_not_allowed_exits_2(
    site: str, tmp_path: Path, allowed: bool
) -> None:
    """An example page that redirects to another port of a host the crawl may reach is not
    followed there (a Redis, an admin page) unless the crawl allows that port; no request
    reaches the other port."""
    asked: list[str] = []

    async def other(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(text=PAGES["/locks.html"], content_type="text/html")

    async with serve(other) as port:
        target = f"http://other.test:{port}/locks.html"

        async def hop(request: web.Request) -> web.Response:
            if request.path == "/robots.txt":  # no rules: the example's own redirect decides
                raise web.HTTPNotFound
            raise web.HTTPFound(target)

        async with serve(hop) as hop_port:
            example = f"http://hop.test:{hop_port}/hop.html"
            args = [f"{site}/", "--focus-phrase", PHRASE, "--max-pages", "1"]
            args += ["--focus-example", example, "--allow-port", str(hop_port)]
            args += ["--allow-port", str(port)] if allowed else []
            code, output = await run_cli(args, tmp_path)
    if allowed:
        assert code == 0, output
        assert "/locks.html" in asked
    else:
        assert code == 2, output
        assert f"{example}: redirects to {target}, a port the crawl may not visit" in output
        assert asked == []


@pytest.mark.slow
async def test_an_example_redirecting_to_a_non_http_url_is_named_for_it(
    site: str, tmp_path: Path
) -> None:
    """Not "too many redirects": the one redirect it makes leads nowhere a crawl goes."""

    async def hop(request: web.Request) -> web.Response:
        raise web.HTTPFound("javascript:alert(1)")

    async with serve(hop) as port:
        example = f"http://hop.test:{port}/hop.html"
        args = [f"{site}/", "--focus-phrase", PHRASE, "--focus-example", example]
        code, output = await run_cli([*args, "--allow-port", str(port)], tmp_path)
    assert code == 2, output
    assert f"{example}: redirects to 'javascript:alert(1)', not an http(s) URL" in output, output
