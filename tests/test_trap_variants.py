"""Crawls of a live site whose traps are variants of one page no template told apart before
(letter case, path parameters, a query grown by appending, one query spelt with empty pairs,
its pairs in either order or repeated, paths grown by slashes and file
names, a percent sign encoded again and again, a calendar of month names, random values
under odd parameter names) and of one whose trap is made of words only, beside a chain of 60
real pages: the guards stop the first kind, the host queue's sections keep the real pages
going out beside the second."""

from __future__ import annotations

import hashlib
import urllib.parse
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from tests.local_app import serve
from tests.test_trap_shapes import crawl, html

pytestmark = pytest.mark.timeout(60)

REAL = 30
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "so", "vi", "de", "po", "gu", "be", "fa", "zi"]
ECHO = ["news", "blog", "about", "team", "jobs"]
MONTHS = "january february march april may june july august september october november december"


def number(seed: str, k: int = 0) -> int:
    return int(hashlib.sha1(f"{seed}|{k}".encode()).hexdigest()[:12], 16)


def word(n: int) -> str:
    return "".join(SYLLABLES[(n // 14**i) % 14] for i in range(3)) + "n"


def real(i: int) -> str:
    return f"/real/{word(i * 37)}.html"


def variants(kind: str, here: str) -> list[str]:
    """Five or so links of trap ``kind`` from the page ``here`` (path and query)."""
    h = [number(here, k) for k in range(5)]
    path, _, query = here.partition("?")
    if kind == "case":
        return [
            "/" + "".join(c.upper() if x >> i & 1 else c for i, c in enumerate("guide/intro"))
            for x in h
        ]
    if kind == "param":
        return [f"/docs/guide;v={x % 10**5}" for x in h[:3]] + [
            f"/docs/guide;state={x:x}" for x in h[3:]
        ]
    if kind == "grow":
        base = query if path == "/filter" else "tags=red"
        return [f"/filter?{base},{word(h[0])}", f"/filter?{base}&tags={word(h[1])}"]
    if kind == "slash":
        base = path if path.startswith("/s/") else "/s/a"
        return [base + "/", base + "//b", base + "/index.html/"]
    if kind == "encode":
        name = path[5:] if path.startswith("/enc/") else "my page"  # its own name quoted again
        quoted = urllib.parse.quote(name, safe="")
        return [f"/enc/{quoted}", f"/enc/{quoted}x"]
    if kind == "months":
        months = MONTHS.split()
        year, month = (
            (2026, 10)
            if not path.startswith("/events/")
            else (int(path.split("/")[2]), months.index(path.split("/")[3]))
        )
        at = year * 12 + month
        return [f"/events/{(at + k) // 12}/{months[(at + k) % 12]}" for k in (1, -1, 12)]
    if kind == "echo":  # a soft 404: any path below /soft/ names the same relative links
        return [f"{w}/" for w in ECHO] if path.startswith("/soft/") else ["/soft/"]
    if kind == "spell":
        return [spelling(x) for x in h]
    if kind == "session":
        return [
            f"/shop/view?{name}={x:012x}{x:012x}"
            for name, x in zip(("s", "ctx", "tkn", "bv"), h, strict=False)
        ]
    return [f"/topics/{word(x)}-{word(x >> 16)}.html" for x in h]  # words


def spelling(x: int) -> str:
    """One of the endless spellings of ``/item?id=7&color=red``: ``&`` runs before, between
    and after its pairs, the pairs in either order, one of them repeated."""
    pairs = ["id=7", "color=red"] if x & 1 else ["color=red", "id=7"]
    pairs += [pairs[x >> 1 & 1]] * (x >> 2 & 3)
    between = "&" * (1 + (x >> 4) % 60)
    return f"/item?{'&' * (x >> 10 & 3)}{between.join(pairs)}{'&' * (x >> 12 & 3)}"


def trap_site(kinds: tuple[str, ...], log: list[str]):
    reals = {real(i): i for i in range(REAL)}

    async def handle(request: web.Request) -> web.StreamResponse:
        here = request.raw_path
        log.append(here)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if here == "/":
            return html([real(0), *(u for k in kinds for u in variants(k, "/"))])
        if here in reals:
            i = reals[here]
            following = [real(i + 1)] if i + 1 < REAL else []
            return html([*following, *(u for k in kinds for u in variants(k, here)[:1])])
        kind = trap_of(here)
        if kind not in kinds:
            return web.Response(status=404)
        return html(variants(kind, here))

    return handle


def trap_of(path_qs: str) -> str:
    for prefix, kind in (
        ("/docs/", "param"),
        ("/filter", "grow"),
        ("/s/", "slash"),
        ("/enc/", "encode"),
        ("/events/", "months"),
        ("/shop/", "session"),
        ("/item", "spell"),
        ("/soft/", "echo"),
        ("/topics/", "words"),
    ):
        if path_qs.startswith(prefix):
            return kind
    return "case" if path_qs.lower().startswith("/guide") else "real"


def tally(log: list[str]) -> tuple[set[str], Counter[str]]:
    fetched = [p for p in log if p not in ("/", "/robots.txt")]
    return {p for p in fetched if p.startswith("/real/")}, Counter(
        trap_of(p) for p in fetched if not p.startswith("/real/")
    )


async def test_variants_of_one_page_are_stopped_and_every_real_page_is_crawled(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    kinds = ("case", "param", "grow", "slash", "encode", "months", "session", "spell")
    async with serve(trap_site(kinds, log)) as port:
        stats = await crawl(port, tmp_path / "out", max_pages=1500)
    reals, traps = tally(log)
    print(f"real {len(reals)}, trap fetches {traps}, rejected {stats.rejected}")
    assert len(reals) == REAL
    for kind in ("case", "slash", "encode", "months", "spell"):  # a few URLs in all
        assert traps[kind] <= 20, kind
    for kind in ("param", "grow", "session"):  # a few URLs from each real page linking them
        assert traps[kind] <= 10 * REAL, kind


async def test_an_endless_trap_of_words_does_not_starve_real_pages(tmp_path: Path) -> None:
    log: list[str] = []
    async with serve(trap_site(("words",), log)) as port:
        await crawl(port, tmp_path / "out", max_pages=300, per_host=2)
    reals, traps = tally(log)
    print(f"real {len(reals)}, trap fetches {traps}")
    assert len(reals) == REAL  # the trap is bounded by the budget, beside them


async def test_a_soft_404_naming_the_same_relative_links_everywhere_ends(tmp_path: Path) -> None:
    log: list[str] = []
    async with serve(trap_site(("echo",), log)) as port:
        stats = await crawl(port, tmp_path / "out", max_pages=1000, digests="off")
    reals, traps = tally(log)
    print(f"real {len(reals)}, trap fetches {traps}, rejected {stats.rejected}")
    assert len(reals) == REAL
    assert traps["echo"] <= 1 + 5 + 25  # /soft/, its subdirectories and theirs
    assert stats.rejected["trap-loop"] >= 25 * 5
