"""Big pages parsed in the parse sandbox's worker processes: hostile shapes end in bounded time
with their links and the guard's flags (the worker killed by its CPU budget, the page parsed
the guarded way), a killed worker is replaced, so is one stopped from outside, an ordinary big
page reads as in-process, and no worker outlives a crawler killed with ``kill -9``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import psutil
import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.page import read, sandboxed
from gossamer.page.state import Fetched
from gossamer.parse.links import parse_html
from gossamer.parse.sandbox import PROGRESS_S, Sandbox, budget

pytestmark = pytest.mark.timeout(60)

URL = "http://example.com/"
MB = 1024 * 1024
LINK = b'<a href="/kept">kept</a>'
WORKER = "gossamer.page.sandboxed"


def _distinct_names(tags: int) -> bytes:
    return b"".join(
        b"<br " + b" ".join(b"a%d" % (60 * i + j) for j in range(60)) + b"></x>"
        for i in range(tags)
    )


HOSTILE: dict[str, Callable[[], bytes]] = {
    "1 MB of nested divs": lambda: LINK + b"<div>" * (MB // 5) + LINK,
    "nested lists": lambda: LINK + b"<ul><li>" * (MB // 8),
    "unclosed formatting elements rebuilt at each paragraph": lambda: (
        LINK + b"".join(b"<p><b c=%d>x</p></i>" % i for i in range(50_000))
    ),
    "one tag of many attributes each, distinct names, stray end tags": lambda: (
        LINK + _distinct_names(8192)
    ),
    "160k distinct tag names": lambda: (
        LINK + b"".join(b"<x%d></x%d>" % (i, i) for i in range(160_000))
    ),
}


@dataclass
class Answer:
    """The parts of a fetch :class:`gossamer.page.read.HtmlReader` reads."""

    body: bytes
    charset: str | None = None
    fetched_at: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


def reader(
    sandbox: Sandbox | None, extractor: str | None = None, tokens: bool = True
) -> read.HtmlReader:
    return read.HtmlReader(
        sandbox, follow_nofollow=False, extractor=extractor, robots_token="gossamer", tokens=tokens
    )


def workers() -> list[psutil.Process]:
    """This process's parse workers still running (or not yet reaped)."""
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if WORKER in " ".join(child.cmdline())
    ]


def ordinary_page(paragraphs: int = 3000) -> bytes:
    """A big page of ordinary markup: more than 4,096 tags, links, metadata, prose."""
    head = (
        "<html lang=en><head><title>An ordinary  big page</title>"
        '<meta name="description" content="A long page of prose.">'
        '<meta name="gossamer" content="nofollow">'
        '<link rel="canonical" href="/canonical">'
        '<meta name="author" content="A. Writer"></head><body><main>'
    )
    rows = "".join(
        f'<p>Paragraph {i} says something of <a href="/p{i % 400}">page {i % 400}</a>, '
        f"and a sentence more, so it reads as prose.</p>"
        for i in range(paragraphs)
    )
    image = '<p>A figure: <img src="/i.png" alt="an image"> and its caption, in prose.</p>'
    return (head + image + rows + "</main></body></html>").encode()


async def test_hostile_shapes_end_in_bounded_time_with_their_links_and_the_guard_flags() -> None:
    """Each shape costs lexbor's tree builder seconds to hours unguarded: its worker is killed
    at its CPU budget, the page is parsed the guarded way (the flags the guard gives it, and
    ``html-sandbox-killed``), a new worker answers the next page."""
    sandbox = Sandbox(WORKER, workers=1)
    try:
        for name, make in HOSTILE.items():
            body = make()
            assert sandboxed.wanted(body), name
            expected = parse_html(body, URL)
            started = time.monotonic()
            html = await reader(sandbox, tokens=False).page(URL, cast(Fetched, Answer(body)))
            took = time.monotonic() - started
            assert html.flags == (read.SANDBOX_KILLED,), name
            assert html.parsed.flags == expected.flags and expected.flags, name
            assert html.parsed.links == expected.links, name
            assert "http://example.com/kept" in html.parsed.links, name
            assert html.aside is None and html.parsed.tree is not None, name
            assert took < 20 * budget(len(body)) + 10, (name, took)
        killed = len(HOSTILE)
        assert sandbox.stats()._replace(pages=0) == (0, killed, killed)
        html = await reader(sandbox, tokens=False).page(URL, cast(Fetched, Answer(ordinary_page())))
        assert html.flags == () and html.aside is not None
        assert sandbox.stats() == (killed + 1, killed, killed + 1)
    finally:
        await sandbox.close()
    assert workers() == []


TOKENIZER_HOSTILE = frozenset(
    {"one tag of many attributes each, distinct names, stray end tags", "160k distinct tag names"}
)
"""The shapes that cost lexbor's tokenizer itself more than its budget (its tables of
attribute and tag names); the others cost its tree builder."""


async def test_hostile_shapes_read_from_their_tokens_keep_every_link_in_bounded_time() -> None:
    """A crawl that needs no tree reads a big page's tokens in-process under a CPU budget: the
    shapes that cost the tree builder cost the tokenizer linear time (no worker, no flag,
    every link the guarded parse keeps and those it flattens away); one that costs the
    tokenizer too (a tag of thousands of distinct attributes) runs past that budget and goes
    to the worker, which is killed at its own and the page parsed the guarded way, as a
    tree-reading crawl's is (so is one of 160,000 distinct tag names)."""
    sandbox = Sandbox(WORKER, workers=1)
    try:
        for name, make in HOSTILE.items():
            body = make()
            expected = parse_html(body, URL)
            started = time.monotonic()
            html = await reader(sandbox).page(URL, cast(Fetched, Answer(body)))
            took = time.monotonic() - started
            assert took < 20 * budget(len(body)) + 10, (name, took)
            assert set(expected.links) <= set(html.parsed.links), name
            assert "http://example.com/kept" in html.parsed.links, name
            if name in TOKENIZER_HOSTILE:
                assert html.flags == (read.SANDBOX_KILLED,) and html.parsed.flags, name
                assert html.aside is None and html.parsed.tree is not None, name
            else:
                assert html.flags == () and html.parsed.flags == (), name
                assert html.aside is not None and html.parsed.tree is None, name
        killed = len(TOKENIZER_HOSTILE)
        assert sandbox.stats() == (killed, killed, killed)  # only those went to a worker
    finally:
        await sandbox.close()
    assert workers() == []


@pytest.mark.parametrize("extractor", [None, "tree"])
async def test_an_ordinary_big_page_reads_as_it_does_in_process(extractor: str | None) -> None:
    """Title, links (the robots meta tag addressed to the crawler by name says nofollow,
    which the stage applies), the directives, the canonical tag and the extracted content
    are those of the in-process parse; the tree stays in the worker."""
    body = ordinary_page()
    answer = cast(Fetched, Answer(body, headers={"content-language": "en"}))
    factor = sandboxed.budget_factor(extractor)
    sandbox = Sandbox(WORKER, sandboxed.worker_args(extractor), workers=1, budget_factor=factor)
    try:
        aside = await reader(sandbox, extractor).page(URL, answer)
    finally:
        await sandbox.close()
    here = await reader(None, extractor).page(URL, answer)
    assert aside.aside is not None and here.aside is None and aside.parsed.tree is None
    assert aside.parsed == here.parsed  # every field but the tree and the meta nodes
    assert len(here.parsed.links) == 400 and aside.parsed.title == "An ordinary big page"
    assert aside.aside.robots == (False, True, False)  # noindex, nofollow, noarchive
    assert aside.aside.canonical == "http://example.com/canonical"
    assert aside.content == here.content
    if extractor is not None:
        content = cast(Any, aside.content)
        assert content.text.startswith("A figure") and content.authors == ("A. Writer",)
        assert content.images and content.description == "A long page of prose."
    assert workers() == []


def listed_page() -> bytes:
    """An ordinary big page whose links are in lists too (each URL linked from a list and from
    the prose), with a navigation of short texts: the texts, contexts and lists a focus reads."""
    nav = '<nav><ul><li><a href="/p7">Next</a></li><li><a href="/">Home</a></li></ul></nav>'
    lists = "".join(
        f'<ul><li><a href="/p{i}">Chapter {i} of the guide</a>: its long description, '
        f"a sentence or two about locking and transactions.</li></ul>"
        for i in range(0, 400, 7)
    )
    return ordinary_page().replace(b"<main>", (nav + "<main>" + lists).encode())


@pytest.mark.parametrize("extractor", [None, "tree"])
async def test_a_focus_has_the_link_texts_and_main_text_of_the_in_process_parse(
    extractor: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A focused crawl's big page stays in the worker, tree and all: the texts a focus reads of
    its links (anchor, context, list) are read there as they are from the in-process tree,
    those of URLs it asks only the list of included, and its main text is extracted there
    for the focus alone when the crawl keeps none (not the record's)."""
    from gossamer.extract import extract
    from gossamer.focus.anchors import link_texts

    monkeypatch.setattr(sandboxed, "FOCUS_MIN_TAGS", sandboxed.MIN_TAGS)  # this page too
    answer = cast(Fetched, Answer(listed_page()))
    focus = {"focus_extractor": "tree", "focus_links": 10_000}
    sandbox = Sandbox(WORKER, sandboxed.worker_args("tree"), workers=1, budget_factor=4.0)
    try:
        there = await read.HtmlReader(
            sandbox, follow_nofollow=False, extractor=extractor, robots_token="g", **focus
        ).page(URL, answer)
    finally:
        await sandbox.close()
    here = await read.HtmlReader(
        None, follow_nofollow=False, extractor=extractor, robots_token="g", **focus
    ).page(URL, answer)
    assert there.aside is not None and there.parsed.tree is None and there.flags == ()
    assert here.parsed.tree is not None and here.parsed.anchors is not None
    wanted = set(here.parsed.links)
    texts = link_texts(there.parsed, wanted)
    assert texts == link_texts(here.parsed, wanted) and list(texts) == list(
        link_texts(here.parsed, wanted)
    )
    assert len(texts) == 400 and texts["http://example.com/p7"].group > 0
    assert texts["http://example.com/p7"].anchor.startswith("Next Chapter 7 of the guide")
    # /p7's second link, in a list of its own, is read for its context: its list is numbered
    # then, unless the focus asks /p7's list alone, and every later list's number moves.
    for brief in ({"http://example.com/p7"}, set(sorted(wanted)[::3])):
        assert link_texts(there.parsed, wanted, brief) == link_texts(here.parsed, wanted, brief)
    few = set(sorted(wanted)[:5])
    assert link_texts(there.parsed, few) == link_texts(here.parsed, few)
    judged = extract(here.parsed.tree, URL, "tree")
    assert there.content == here.content == (None if extractor is None else judged)
    assert there.aside.content == (judged if extractor is None else None)


@pytest.mark.parametrize("paragraphs", [10, 200])
async def test_pages_of_up_to_64_kib_and_4096_tags_stay_in_process(paragraphs: int) -> None:
    """A page of at most 64 KiB and 4,096 ``<`` never goes to a worker: none is started (the
    guard reads it in-process, for less than a round trip to a worker costs)."""
    body = ordinary_page(paragraphs)
    assert len(body) <= sandboxed.MIN_BYTES and body.count(b"<") <= sandboxed.MIN_TAGS
    sandbox = Sandbox(WORKER, workers=1)
    try:
        html = await reader(sandbox, tokens=False).page(URL, cast(Fetched, Answer(body)))
        tokens = await reader(sandbox).page(URL, cast(Fetched, Answer(body)))
    finally:
        await sandbox.close()
    assert html.aside is None and html.parsed.tree is not None
    assert len(html.parsed.links) == min(paragraphs, 400)
    assert tokens.aside is not None and tokens.parsed.tree is None
    assert tokens.parsed == html.parsed and tokens.flags == html.flags == ()
    assert tokens.aside.canonical == "http://example.com/canonical"
    assert tokens.aside.robots.nofollow and not tokens.aside.robots.noindex
    assert sandbox.stats() == (0, 0, 0)


def test_where_a_page_is_parsed_goes_by_its_bytes_and_its_tags() -> None:
    """Past 64 KiB, or past 4,096 ``<``, to a worker; else in-process, its ``<`` counted for
    the guard (whose bound on formatting elements, which could cost lexbor 770 MB in 27 KB,
    tests/parse/test_formatting.py proves in-process)."""
    hostile = b"".join(b"<p><b c=%d>x" % n for n in range(2048))
    assert len(hostile) < sandboxed.MIN_BYTES
    assert sandboxed.weigh(hostile) == (False, 4096)
    assert sandboxed.weigh(hostile + b"<p>") == (True, None)  # one tag too many
    few = b"<p>" + b"x" * sandboxed.MIN_BYTES
    assert sandboxed.weigh(few[: sandboxed.MIN_BYTES]) == (False, 1)
    assert sandboxed.weigh(few) == (True, None)  # one byte too many


async def test_a_long_page_of_few_tags_goes_to_a_worker() -> None:
    """A page past 64 KiB goes to a worker however few its ``<`` (in-process, the guard would
    read it whole before lexbor), and reads as it does in-process; a crawl that needs no tree
    reads its tokens in-process, within their budget."""
    body = ordinary_page(1000)
    assert len(body) > sandboxed.MIN_BYTES and body.count(b"<") <= 4096
    sandbox = Sandbox(WORKER, workers=1)
    try:
        aside = await reader(sandbox, tokens=False).page(URL, cast(Fetched, Answer(body)))
        assert sandbox.stats() == (1, 0, 1)
        tokens = await reader(sandbox).page(URL, cast(Fetched, Answer(body)))
        assert sandbox.stats() == (1, 0, 1)
    finally:
        await sandbox.close()
    here = await reader(None).page(URL, cast(Fetched, Answer(body)))
    assert aside.aside is not None and aside.parsed.tree is None and aside.flags == ()
    assert aside.parsed == here.parsed == tokens.parsed and len(here.parsed.links) == 400
    assert tokens.aside is not None and tokens.flags == ()


async def test_a_handler_gets_a_tree_built_in_process_and_a_hook_turns_the_sandbox_off() -> None:
    """A page the sandbox parsed has no tree in the crawler; a page handler gets one (the
    guarded parse, built for the pages it handles only); a hook, which reads every page's
    tree, has every page parsed in-process."""
    from tests.page.test_stage import fetched, handle

    from gossamer.hooks import Page
    from gossamer.page import PageConfig, PageStage
    from gossamer.page.handlers import Handlers

    trees: list[bool] = []
    handlers = Handlers()

    @handlers.handler(r"page\.html$")
    def count(page: Page) -> dict[str, Any]:
        trees.append(page.tree is not None)
        return {"paragraphs": len(page.tree.css("p")) if page.tree is not None else None}

    def hook(page: Page) -> dict[str, Any]:
        return {"tree": page.tree is not None}

    sandbox = Sandbox(WORKER, workers=1)
    try:
        stage = PageStage(PageConfig(text=False, handlers=handlers), sandbox=sandbox)
        handled = await handle(stage, fetched(ordinary_page()))
        hooked = await handle(
            PageStage(PageConfig(text=False, hook=hook), sandbox=sandbox), fetched(ordinary_page())
        )
    finally:
        await sandbox.close()
    assert trees == [True] and [i.fields for i in handled.record.found] == [{"paragraphs": 3001}]
    assert handled.record.title == "An ordinary big page"
    assert handled.record.flags == ("nofollow",) and handled.record.outlinks == 0  # its meta tag
    assert hooked.record.extra == {"tree": True}
    # the handled page read from its tokens in-process (its tree built for the handler), the
    # hooked one parsed in-process: no worker
    assert sandbox.stats().pages == 0


async def test_a_page_past_the_workers_memory_is_parsed_the_guarded_way() -> None:
    """lexbor out of memory in a worker refuses the document instead of raising (the
    worker lives on and answers a page without links, flagged ``html-parse-error``): the
    page is parsed in-process, as for a worker that died, and keeps its links."""
    body = b'<a href="/first">f</a>' + b"<i>a</i>" * (MB // 2) + b'<a href="/last">l</a>'
    sandbox = Sandbox(WORKER, workers=1, memory_mb=160)
    try:
        html = await reader(sandbox, tokens=False).page(URL, cast(Fetched, Answer(body)))
    finally:
        await sandbox.close()
    assert sandbox.stats().pages == 1
    assert html.flags == (read.SANDBOX_KILLED,) and html.parsed.flags == ()
    assert html.parsed.links == ["http://example.com/first", "http://example.com/last"]
    assert workers() == []


PRINTING_JOB = """
import os, sys
from gossamer.parse.worker import serve

def job(request: bytes, body: bytes) -> bytes:
    print("a library's warning")
    os.write(1, b"and its C code's")
    return request + body

serve(job)
"""


async def test_a_job_that_prints_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a job prints (``print``, or C code writing to descriptor 1) never reaches the
    answers: each page is answered at once and the worker serves the next."""
    (tmp_path / "printing_job.py").write_text(PRINTING_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("printing_job", workers=1)
    try:
        started = time.monotonic()
        answers = [await sandbox.ask(b"page %d " % i, b"body") for i in range(3)]
        took = time.monotonic() - started
    finally:
        await sandbox.close()
    assert answers == [b"page 0 body", b"page 1 body", b"page 2 body"]
    assert sandbox.stats() == (3, 0, 1) and took < 10


SIZED_JOB = """
from gossamer.parse.worker import serve

serve(lambda request, body: body * int(request))
"""


async def test_answers_past_the_pipe_and_the_read_buffer_arrive_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer of 3 MB (past the answers' pipe, 1 MiB, and the room an answer is read into,
    64 KiB) is read as the worker writes it, whole; the answers before and after it too."""
    (tmp_path / "sized_job.py").write_text(SIZED_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("sized_job", workers=1)
    try:
        sizes = (1, 3 * MB, 70_000, 3 * MB + 1, 0)
        answers = [await sandbox.ask(b"%d" % size, b"x") for size in sizes]
    finally:
        await sandbox.close()
    assert answers == [b"x" * size for size in sizes]
    assert sandbox.stats() == (len(sizes), 0, 1)


SPINNING_JOB = """
import time
from gossamer.parse.worker import budget, rest_of_budget, serve

def spin(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass

def job(request: bytes, body: bytes) -> bytes:
    parse, rest = request.split(b" ")
    spin(float(parse) * budget(len(body)))
    rest_of_budget()
    spin(float(rest) * budget(len(body)))
    return b"done"

serve(job)
"""


async def test_the_parse_has_one_budget_and_the_rest_of_the_job_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a job of four budgets (a crawl keeping text), the parse is ended at one budget:
    a hostile page's parse costs the same whether the crawl keeps text or not; the work after
    `rest_of_budget` (the extraction) has the other three."""
    (tmp_path / "spinning_job.py").write_text(SPINNING_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("spinning_job", workers=1, budget_factor=4.0)
    body = b"x" * 500_000  # budgets of 0.15 s: a clock's tick is small beside them
    try:
        started = await sandbox.ask(b"0 0", body)  # the worker's start is out of the way
        long_rest = await sandbox.ask(b"0.3 2.2", body)
        long_parse = await sandbox.ask(b"1.6 0", body)
    finally:
        await sandbox.close()
    assert started == long_rest == b"done"
    assert long_parse is None
    assert sandbox.stats() == (3, 1, 1)  # the next page would start a new worker


async def test_a_closed_sandbox_leaves_the_page_to_the_in_process_parse_unflagged() -> None:
    """No worker ran (the sandbox closed at the crawl's end): the page is read in-process as
    without a sandbox, and nothing says a worker died on it."""
    sandbox = Sandbox(WORKER, workers=1)
    await sandbox.close()
    answer = cast(Fetched, Answer(ordinary_page()))
    html = await reader(sandbox, tokens=False).page(URL, answer)
    assert html.flags == () and html.aside is None and len(html.parsed.links) == 400
    assert sandbox.stats() == (0, 0, 0)


async def test_a_stopped_worker_is_given_up_within_seconds_and_replaced() -> None:
    """A worker stopped from outside (SIGSTOP) holds no page for the wall limit (20 budgets
    and 10 s): seen stopped at the next look, it is killed, the page parsed the guarded way
    and flagged, and a new worker answers the next page."""
    sandbox = Sandbox(WORKER, workers=1)
    try:
        page = reader(sandbox, tokens=False).page
        first = await page(URL, cast(Fetched, Answer(ordinary_page())))
        [worker] = workers()
        worker.suspend()
        started = time.monotonic()
        held = await page(URL, cast(Fetched, Answer(ordinary_page())))
        took = time.monotonic() - started
        assert not worker.is_running()  # killed and reaped
        again = await page(URL, cast(Fetched, Answer(ordinary_page())))
    finally:
        await sandbox.close()
    assert first.flags == again.flags == () and again.aside is not None
    assert held.flags == (read.SANDBOX_KILLED,) and len(held.parsed.links) == 400
    assert took < 3 * PROGRESS_S + 2, took
    assert sandbox.stats() == (3, 1, 2)
    assert workers() == []


SLEEPING_JOB = """
import time
from gossamer.parse.worker import serve

def job(request: bytes, body: bytes) -> bytes:
    if request.startswith(b"wait"):
        if request[5:]:  # the path of a file that says the page is here
            open(request[5:], "wb").close()
        time.sleep(50)
    return b"done"

serve(job)
"""


@pytest.mark.parametrize("pidfd", [True, False])
async def test_a_worker_whose_cpu_time_stands_still_on_a_page_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool
) -> None:
    """A worker that sleeps on its page (as a frozen one would: not running, its CPU time not
    moving) is given up after two looks, not at the wall limit; the next page gets a new
    worker. So too where no pidfd can be had (under valgrind): workers are killed and reaped
    all the same."""
    if not pidfd:

        def no_pidfd(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    (tmp_path / "sleeping_job.py").write_text(SLEEPING_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("sleeping_job", workers=1)
    try:
        started = time.monotonic()
        waited = await sandbox.ask(b"wait", b"body")
        took = time.monotonic() - started
        answered = await sandbox.ask(b"go", b"body")
    finally:
        await sandbox.close()
    assert waited is None and answered == b"done"
    assert took < 4 * PROGRESS_S + 2, took
    assert sandbox.stats() == (2, 1, 2)
    assert [w for w in psutil.Process().children() if "sleeping_job" in w.cmdline()] == []


async def test_a_crawler_killed_with_sigkill_leaves_no_worker_behind(tmp_path: Path) -> None:
    """``kill -9`` of a crawl (a real ``gossamer crawl`` process): Linux kills its parse
    worker with it (``PR_SET_PDEATHSIG``), nothing is left running. The worker is stopped
    first, so that it cannot end on its own at the end of its input (as an idle one does)."""
    linked, hold = asyncio.Event(), asyncio.Event()

    async def site(request: web.Request) -> web.StreamResponse:
        if request.path == "/":  # its links followed: no robots meta tag addressed to us
            page = ordinary_page().replace(b'<meta name="gossamer" content="nofollow">', b"")
            return web.Response(body=page, content_type="text/html")
        linked.set()  # the worker has parsed the front page: it is past its start
        with contextlib.suppress(TimeoutError):  # the crawl waits here until it is killed
            await asyncio.wait_for(hold.wait(), 30)
        return web.Response(text="<p>late", content_type="text/html")

    async with serve(site) as port:
        crawl = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "gossamer", "crawl", f"http://site.test:{port}/"),
            *("--resolve", "site.test=127.0.0.1", "--no-robots", "--quiet"),  # text: a worker
            *("--out", str(tmp_path / "out")),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await asyncio.wait_for(linked.wait(), 30)
            [worker] = [
                child
                for child in psutil.Process(crawl.pid).children()
                if WORKER in " ".join(child.cmdline())
            ]
            worker.suspend()
            crawl.kill()
            await crawl.wait()
            ended = await _ended_within(worker, 10)
            hold.set()
        finally:
            if crawl.returncode is None:
                crawl.kill()
                await crawl.wait()
    assert ended, worker


async def _ended_within(process: psutil.Process, seconds: float) -> bool:
    """Whether ``process`` ends (exits, or is a zombie its new parent has not reaped yet)
    within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_closing_the_sandbox_ends_a_page_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page still in a worker when the sandbox closes (the crawl's end) falls back at once:
    the worker is killed and reaped, the page answers None, none is left running."""
    (tmp_path / "sleeping_job.py").write_text(SLEEPING_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("sleeping_job", workers=1)
    assert await sandbox.ask(b"go", b"body") == b"done"
    here = tmp_path / "here"
    waiting = asyncio.create_task(sandbox.ask(b"wait " + bytes(here), b"body"))
    for _ in range(500):  # at most 5 s
        if here.exists() or waiting.done():
            break
        await asyncio.sleep(0.01)
    assert here.exists()  # the page is in the worker
    await sandbox.close()
    assert await asyncio.wait_for(waiting, 5) is None
    assert sandbox.stats() == (2, 0, 1)
    assert [w for w in psutil.Process().children() if "sleeping_job" in w.cmdline()] == []


GC_JOB = """
import gc, sys
imported = gc.isenabled()
from gossamer.parse.worker import serve

def job(request: bytes, body: bytes) -> bytes:
    return repr((imported, gc.isenabled(), sys.argv[1:3])).encode()

serve(job)
"""


async def test_a_worker_imports_with_the_collector_off_and_runs_with_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's modules are imported with no garbage collection (they allocate for good);
    its pages run with the collector on, and its arguments are as ``python -m`` gives them."""
    (tmp_path / "gc_job.py").write_text(GC_JOB)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    sandbox = Sandbox("gc_job", workers=1, memory_mb=512)
    try:
        answer = await sandbox.ask(b"go", b"body")
    finally:
        await sandbox.close()
    assert answer == repr((False, True, [str(512 << 20), "1.0"])).encode()
