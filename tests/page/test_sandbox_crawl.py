"""Crawls of a real server with big pages, the parse sandbox on and off: the same records (a
hostile page's worker killed at its budget, the page parsed the guarded way and flagged, a new
worker for the next big page; a crawl keeping no text reads a big page's tokens in-process
under a CPU budget, linear on it, and keeps every link unflagged, and sends the sandbox only a
page past that budget), no worker process left once the crawl ends."""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.local_app import serve_pages

from gossamer.crawl import run_crawl
from gossamer.page import sandboxed
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

HOST = "site.test"
_VARYING = ("fetched_at", "elapsed_ms")


def big_page(name: str, links: list[str], head: str = "") -> str:
    """More than 4,096 tags of ordinary markup: prose, links, metadata."""
    rows = "".join(
        f"<p>Paragraph {i} of {name} says something, <em>and</em> a sentence more.</p>"
        for i in range(1500)
    )
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return (
        f"<html lang=en><head><title>Page {name}</title>"
        f'<meta name="description" content="About {name}.">{head}</head>'
        f"<body><main><h1>{name}</h1>{anchors}{rows}</main></body></html>"
    )


PAGES = {
    "/": '<a href="/one">1</a><a href="/two">2</a><a href="/bomb">bomb</a><a href="/noindex">n</a>',
    "/one": big_page("one", ["/two", "/three"], '<link rel="canonical" href="/one-canonical">'),
    "/two": big_page("two", ["/one", "/three?x=1"]),
    "/three": big_page("three", ["/"]),
    "/three?x=1": big_page("three again", []),
    "/noindex": big_page("noindex", ["/hidden"], '<meta name="robots" content="noindex,nofollow">'),
    "/bomb": '<a href="/after">after</a>' + "<div>" * 200_000 + '<a href="/deep">deep</a>',
    "/after": big_page("after", []),
    "/deep": "<p>deep",
    "/one-canonical": "<p>canonical",
}


def find(path: str) -> str | None:
    return PAGES.get(path)


async def crawl(out: Path, port: int, **flags: Any) -> CrawlStats:
    settings = {
        "out": out,
        "seeds": [f"http://{HOST}:{port}/"],
        "resolve": [f"{HOST}=127.0.0.1"],
        "robots": False,
        "quiet": True,
    }
    return await asyncio.wait_for(run_crawl(load_settings(settings | flags, env={})), 45)


def records(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for line in (out / "pages.jsonl").read_text().splitlines():
        record = json.loads(line)
        for name in _VARYING:
            record.pop(name, None)
        found[record["url"].split("/", 3)[3]] = record
    return found


def workers() -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if "gossamer.page.sandboxed" in " ".join(child.cmdline())
    ]


@pytest.mark.parametrize("text", [True, False])
async def test_the_sandbox_gives_the_records_of_the_in_process_parse(
    tmp_path: Path, text: bool
) -> None:
    async with serve_pages(find) as port:
        stats_on = await crawl(tmp_path / "on", port, text=text)
        assert workers() == []
        stats_off = await crawl(tmp_path / "off", port, text=text, parse_sandbox="off")
    on, off = records(tmp_path / "on"), records(tmp_path / "off")
    crawled = len(PAGES) - 1  # the canonical URL is recorded, not followed
    assert sorted(on) == sorted(off) and len(on) == crawled
    bomb_on, bomb_off = on.pop("bomb"), off.pop("bomb")
    assert bomb_off["flags"] == ["html-flattened"] and bomb_off["outlinks"] == 2
    if text:  # the tree's builder is quadratic on it: killed, guarded in-process
        assert bomb_on == bomb_off | {"flags": ["html-flattened", "html-sandbox-killed"]}
    else:  # read from its tokens in-process: linear, nothing flattened
        assert bomb_on == bomb_off | {"flags": []}
    assert on == off
    assert on["one"]["canonical"] == f"http://{HOST}:{port}/one-canonical"
    assert on["noindex"]["flags"] == ["noindex", "nofollow"] and on["noindex"]["outlinks"] == 0
    assert (on["two"]["text"] is not None) is text and on["two"]["title"] == "Page two"
    # /one, /two, /three, /three?x=1, /noindex, /bomb (killed with text), then /after: a new
    # worker; without text, every page's tokens are read in-process (within their budget)
    if text:
        assert stats_on.parse_sandbox == {"pages": 7, "killed": 1, "started": 2}
    else:
        assert stats_on.parse_sandbox == {"pages": 0, "killed": 0, "started": 0}
    assert stats_off.parse_sandbox is None
    assert stats_on.pages == stats_off.pages == crawled


def names_page(size: int) -> str:
    """A link, ``size`` bytes of distinct attribute names (lexbor's tokenizer is quadratic in
    them: its hash table of names never grows), a link."""
    names = "".join(f"<br a{i}=1>" for i in range(size // 12))
    return f'<a href="/first">first</a>{names}<a href="/last">last</a>'


async def test_a_page_past_its_token_budget_is_read_in_the_sandbox(tmp_path: Path) -> None:
    """A links-only crawl reads a big page's tokens in-process for at most
    `sandboxed.TOKENS_HERE_BUDGET_S` of CPU; a page that costs more (distinct attribute names)
    goes to the sandbox, and its links are all there; an ordinary big page stays in-process."""
    pages = {
        "/": '<a href="/names">n</a><a href="/big">b</a>',
        "/names": names_page(768 * 1024),
        "/big": big_page("big", ["/"]),
        "/first": "<p>first",
        "/last": "<p>last",
    }
    async with serve_pages(pages.get) as port:
        stats = await crawl(tmp_path / "on", port, text=False)
    found = records(tmp_path / "on")
    assert sorted(found) == ["", "big", "first", "last", "names"]
    assert found["names"]["outlinks"] == 2 and found["big"]["outlinks"] == 1
    assert stats.parse_sandbox is not None and stats.parse_sandbox["pages"] == 1
    assert workers() == []


PHRASE = "paragraph sentence"
"""The big pages' words: a focused crawl judges them relevant, and reads their links' texts."""


async def test_a_focused_crawl_reads_only_pages_past_the_focus_limit_in_the_sandbox(
    tmp_path: Path,
) -> None:
    """A focus judges a page the sandbox read later than one read in-process, and chooses
    what to fetch next worse meanwhile: its crawl sends the sandbox only pages past
    `sandboxed.FOCUS_MIN_TAGS` ``<`` (the bomb) or `sandboxed.FOCUS_MIN_BYTES`, not the pages
    of some 6,000 tags a plain crawl sends there."""
    focused = {"focus_phrase": PHRASE, "concurrency": 1, "text": False}
    async with serve_pages(find) as port:
        stats = await crawl(tmp_path / "on", port, **focused)
    assert stats.parse_sandbox == {"pages": 1, "killed": 1, "started": 1}
    found = records(tmp_path / "on")
    assert found["bomb"]["flags"] == ["html-flattened", "html-sandbox-killed"]


@pytest.mark.parametrize("text", [True, False])
async def test_a_focused_crawl_reads_big_pages_in_the_sandbox_as_in_process(
    tmp_path: Path, text: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A focus reads each page's tree (its links' texts, its main text): a big page's stays in
    the sandbox's worker, which reads them there. The records are those of the in-process
    parse; the page that kills its worker is read the guarded way and flagged, as in a plain
    crawl, and the crawl goes on. (Relevance moves a little with the order pages are judged in,
    which moves with the sandbox's answers: the texts read are compared in
    ``tests/parse/test_sandbox.py``.) Without text, the main text is extracted there for the
    focus alone."""
    monkeypatch.setattr(sandboxed, "FOCUS_MIN_TAGS", sandboxed.MIN_TAGS)  # the big pages too
    focused = {"focus_phrase": PHRASE, "concurrency": 1, "text": text}
    async with serve_pages(find) as port:
        stats_on = await crawl(tmp_path / "on", port, **focused)
        stats_off = await crawl(tmp_path / "off", port, **focused, parse_sandbox="off")
    assert workers() == []
    on, off = records(tmp_path / "on"), records(tmp_path / "off")
    assert sorted(on) == sorted(off) and len(on) == len(PAGES) - 1
    relevance = {name: (on[name].pop("relevance"), off[name].pop("relevance")) for name in on}
    assert all(abs(a - b) < 0.01 for a, b in relevance.values()), relevance
    assert relevance["two"][0] > 0.4 and relevance["deep"][0] < 0.1
    bomb_on, bomb_off = on.pop("bomb"), off.pop("bomb")
    assert bomb_on == bomb_off | {"flags": ["html-flattened", "html-sandbox-killed"]}
    assert on == off and (on["two"]["text"] is not None) is text
    assert stats_on.parse_sandbox == {"pages": 7, "killed": 1, "started": 2}
    assert stats_on.focus is not None and stats_off.focus is not None
    assert stats_on.focus["judged"] == stats_off.focus["judged"] == len(PAGES) - 1


NESTED = (
    '<a href="/after">after</a>'
    + "<div>" * 127
    + "<p><span><i>x</i></span></p>" * (3 * 1024 * 1024 // 29)
    + "</div>" * 127
)
"""3 MB nested as deep as the guard lets through, every element closed: lexbor parses it as it
is in 0.1 s, the guard reads it first in Python for 1 s."""


async def test_a_focused_crawl_costs_a_hostile_page_what_a_plain_crawl_does(
    tmp_path: Path,
) -> None:
    """Markup the guard reads slowly costs a focused crawl, whose parse sandbox reads the page
    and its links' texts, no more of the crawler's own CPU than a plain crawl (before, a focus
    parsed every page in-process: 1 s of the guard's Python on this one, on the event loop's
    interpreter)."""
    pages = {"/": '<a href="/nested">nested</a>', "/nested": NESTED, "/after": big_page("a", [])}
    spent = {}
    async with serve_pages(pages) as port:
        for mode, flags in (("plain", {}), ("focused", {"focus_phrase": PHRASE})):
            started = time.process_time()
            await crawl(tmp_path / mode, port, concurrency=1, **flags)
            spent[mode] = time.process_time() - started
    plain, focused = records(tmp_path / "plain"), records(tmp_path / "focused")
    assert sorted(plain) == sorted(focused) == ["", "after", "nested"]
    assert focused["nested"]["flags"] == plain["nested"]["flags"] == []
    assert focused["nested"]["outlinks"] == plain["nested"]["outlinks"] == 1
    assert spent["focused"] < spent["plain"] + 0.5, spent


RECONSTRUCTION = (
    "".join(f"<p><b c={i}>x</p></i>" for i in range(4095)) + '<p><a href="/after">x</a>'
)
"""89 KB of exactly 16,383 ``<`` that look ordinary to the guard's routes (as many ends as
starts), whose 4,095 ``<b>`` lexbor rebuilds at every paragraph: parsed as it is, 2.4 s and
3 GB. Its sandbox worker dies on it."""


async def test_a_page_that_killed_its_worker_is_guarded_before_lexbor_reads_it(
    tmp_path: Path,
) -> None:
    """The crawler parses a page its worker died on the guarded way from the start: the
    guard's cheaper routes would give it to lexbor as it is first (its check comes after the
    parse), 3 GB for this page. The crawl runs with 1.5 GB of address space: it keeps the
    page's link."""

    def limited() -> None:
        limit = 1536 << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    pages = {"/": '<a href="/shape">shape</a>', "/shape": RECONSTRUCTION, "/after": "<p>after"}
    async with serve_pages(pages) as port:
        out = tmp_path / "out"
        command = [sys.executable, "-m", "gossamer", "crawl", f"http://127.0.0.1:{port}/"]
        command += ["--out", str(out), "--no-robots", "--quiet"]  # text: the worker's tree
        process = await asyncio.create_subprocess_exec(*command, preexec_fn=limited)
        assert await asyncio.wait_for(process.wait(), 45) == 0
    found = records(out)
    assert "html-sandbox-killed" in found["shape"]["flags"], found["shape"]
    assert found["shape"]["outlinks"] == 1 and found["after"]["status"] == 200
