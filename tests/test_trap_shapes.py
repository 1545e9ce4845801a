"""Crawls of two live sites: one whose traps are made of random tokens (hashes that link more
hashes, cursors, nested ids, a first segment that changes on every link) beside a chain of
61 real pages, and one ordinary site with thousands of pages under one template each (a
documentation set, a product catalogue behind a paginated list, a commit history, a dated
blog, Debian's Python documentation), which the guards must leave whole."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings
from gossamer.stats import CrawlStats

pytestmark = pytest.mark.timeout(60)

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")
_B62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def token(seed: str, size: int = 12) -> str:
    """A base62 token of ``size`` characters, fixed by ``seed``."""
    value = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    return "".join(_B62[(value >> (6 * i)) % 62] for i in range(size))


def sha(seed: str) -> str:
    return hashlib.sha1(seed.encode()).hexdigest()


def uuid(seed: str) -> str:
    h = hashlib.md5(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def html(links: list[str], title: str = "page") -> web.Response:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    body = f"<html><head><title>{title}</title></head><body><ul>{anchors}</ul></body></html>"
    return web.Response(text=body, content_type="text/html")


async def crawl(port: int, out: Path, **flags: Any) -> CrawlStats:
    base = {
        "seeds": [f"http://127.0.0.1:{port}/"],
        "out": out,
        "quiet": True,
        "concurrency": 16,
        "per_host": 8,
        "max_depth": 500,
        "sitemaps": "off",
    }
    return await asyncio.wait_for(run_crawl(load_settings(base | flags, env={})), 55)


def logged(handler: Callable[[str, str], web.Response], log: list[str]) -> Any:
    async def serve_logged(request: web.Request) -> web.StreamResponse:
        log.append(request.path_qs)
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return handler(request.path, request.query_string)

    return serve_logged


# -- a site of token traps -------------------------------------------------------------------


def token_traps(path: str, query: str) -> web.Response:
    """Real pages ``/real/1`` .. ``/real/60`` (a chain) and ``/about/...``; every other URL a
    trap's."""
    here = path + "?" + query
    if path == "/":
        entries = [f"/item/{token('i')}", f"/feed?cursor={token('c', 16)}", f"/n/{uuid('n')}/"]
        return html([*entries, f"/s/{sha('s')}.htm", "/real/1", "/about/team", "/about/jobs"])
    if path.startswith("/real/"):
        number = int(path.rpartition("/")[2])
        return html([f"/real/{number + 1}"] if number < 60 else ["/"])
    if path.startswith("/about/"):
        return html(["/", "/about/team", "/about/jobs"])
    if path.startswith("/item/"):  # base62 ids, each linking four more
        return html([f"/item/{token(here + str(i))}" for i in range(4)])
    if path == "/feed":  # cursors under two names
        return html([f"/feed?cursor={token(here, 16)}", f"/feed?after={token(here + 'a', 16)}"])
    if path.startswith("/n/"):  # a new uuid below the path on every link
        return html([f"{path}{uuid(here + str(i))}/" for i in range(3)])
    # a first segment that changes on every link, then a hash
    return html([f"/{'pqrstu'[i]}{i}x/{sha(here + str(i))}.htm" for i in range(3)])


def is_real(path_qs: str) -> bool:
    return path_qs == "/" or re.fullmatch(r"/real/[0-9]+|/about/(team|jobs)", path_qs) is not None


async def test_token_traps_cost_a_few_fetches_and_every_real_page_is_crawled(
    tmp_path: Path,
) -> None:
    log: list[str] = []
    async with serve(logged(token_traps, log)) as port:
        stats = await crawl(port, tmp_path / "out", max_pages_per_host=2000)
    fetched = [p for p in log if p != "/robots.txt"]
    real = {p for p in fetched if is_real(p)}
    trapped = [p for p in fetched if not is_real(p)]
    print(f"fetches {len(fetched)}, trap URLs {len(trapped)}: {Counter(p[:3] for p in trapped)}")
    print(f"rejected {stats.rejected}")
    assert len(real) == 63  # /, /real/1..60, /about/team and /about/jobs
    assert len(trapped) <= 0.25 * len(fetched)
    assert {"trap-generated", "trap-nesting"} <= set(stats.rejected)


# -- an ordinary site with crowded templates -------------------------------------------------

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "install",
    "config",
    "network",
    "storage",
    "cache",
    "query",
    "index",
    "router",
    "session",
    "worker",
    "schema",
    "stream",
    "buffer",
    "socket",
    "render",
    "layout",
    "theme",
    "plugin",
]


def ordinary_site() -> dict[str, list[str]]:
    """Every page of the site (path with query) and its links."""
    rng = random.Random(5)
    site: dict[str, list[str]] = {}
    docs = sorted(
        {f"/docs/{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i % 40}.html" for i in range(3000)}
    )
    site["/docs/"] = docs
    for doc in docs:
        site[doc] = ["/docs/", *rng.sample(docs, 3)]
    products = [f"/product/{10_000 + 7 * i}" for i in range(1500)]
    for page in range(75):  # a catalogue listed 20 to a page, each page linking the next
        listed = products[20 * page : 20 * page + 20]
        site[f"/products?page={page + 1}"] = [*listed, f"/products?page={page + 2}"]
    site["/products?page=76"] = []
    for product in products:
        site[product] = [*rng.sample(products, 4), "/products?page=1"]
    commits = [sha(f"commit{i}") for i in range(300)]
    for page in range(30):
        listed = commits[10 * page : 10 * page + 10]
        site[f"/commits?page={page + 1}"] = [f"/commit/{c}" for c in listed]
        site[f"/commits?page={page + 1}"].append(f"/commits?page={page + 2}")
    site["/commits?page=31"] = []
    for index, commit in enumerate(commits):
        parent = commits[min(index + 1, len(commits) - 1)]
        site[f"/commit/{commit}"] = [f"/commit/{parent}", f"/tree/{commit}/src/"]
        site[f"/tree/{commit}/src/"] = [f"/tree/{commit}/src/app/main.py"]
        site[f"/tree/{commit}/src/app/main.py"] = []
    days = [f"/blog/2024/{1 + i // 28:02d}/{1 + i % 28:02d}/post-{i}/" for i in range(200)]
    for page in range(20):  # an archive, ten posts a page; each post links its neighbours
        site[f"/blog/page/{page + 1}"] = [*days[10 * page : 10 * page + 10]]
        site[f"/blog/page/{page + 1}"].append(f"/blog/page/{page + 2}")
    site["/blog/page/21"] = []
    for i, day in enumerate(days):
        site[day] = [days[max(i - 1, 0)], days[min(i + 1, len(days) - 1)]]
    site["/"] = ["/docs/", "/products?page=1", "/commits?page=1", "/blog/page/1"]
    return site


def python_docs() -> dict[str, str]:
    """The library reference of Debian's Python documentation (``library/<module>.html``),
    by path under ``/py/`` (none if not installed)."""
    library = PYTHON_DOCS / "library"
    if not library.is_dir():
        return {}
    return {f"/py/library/{p.name}": p.read_text(errors="replace") for p in library.glob("*.html")}


async def test_an_ordinary_site_with_crowded_templates_is_crawled_whole(tmp_path: Path) -> None:
    site, docs = ordinary_site(), python_docs()
    site["/"].append("/py/library/index.html")
    log: list[str] = []

    def page(path: str, query: str) -> web.Response:
        key = path + ("?" + query if query else "")
        if key in site:
            return html(site[key])
        if path in docs:
            return web.Response(text=docs[path], content_type="text/html")
        return web.Response(status=404)

    async with serve(logged(page, log)) as port:
        stats = await crawl(port, tmp_path / "out", concurrency=32, per_host=16, text=False)
    fetched = {p for p in log if p != "/robots.txt"}
    traps = {r: n for r, n in stats.rejected.items() if r.startswith("trap-")}
    print(f"fetched {len(fetched)} of {len(site)} pages and {len(docs)} docs; rejected {traps}")
    assert not traps
    assert set(site) <= fetched, sorted(set(site) - fetched)[:5]
    lines = (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    ok = {json.loads(line)["url"] for line in lines}
    assert len(ok) >= len(site) + 0.9 * len(docs)
