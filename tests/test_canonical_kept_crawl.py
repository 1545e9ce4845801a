"""``--canonical follow`` in a whole crawl of a real server on loopback: a page keeps its
content unless its canonical URL is one the crawl will fetch (not the page itself once its
tracking and session parameters are stripped, not refused by admission or robots.txt), a
page whose canonical URL redirects back to it has its content stored after all, and a
canonical URL that is noindex is flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl

pytestmark = pytest.mark.timeout(60)

TEXT = "A page keeps the text a crawl stores unless its canonical page is stored instead. " * 3
CANONICAL = {
    "/strip": "/strip?utm_source=feed",  # the page itself, once stripped
    "/session": "/session;jsessionid=ABC",
    "/to-blocked": "/blocked",  # robots.txt disallows it
    "/claim": "http://user:hunter2@site.test:{port}/claimed",  # credentials of its own
    "/back": "/back-r",  # which redirects back to /back
    "/to-noindex": "/noindexed",
    "/new": "/old",  # /old redirected here
}
PAGES = ["/old", *CANONICAL]


async def handle(request: web.Request) -> web.Response:
    path, port = request.path, request.url.port
    if path == "/robots.txt":
        return web.Response(text="User-agent: *\nDisallow: /blocked\n")
    if path == "/back-r":
        raise web.HTTPMovedPermanently("/back")
    if path == "/old":
        raise web.HTTPMovedPermanently("/new")
    canonical = CANONICAL.get(path)
    head = "" if canonical is None else f'<link rel="canonical" href="{canonical}">'
    links = "".join(f'<a href="{p}">{p}</a>' for p in PAGES) if path == "/" else ""
    html = f"<html><head><title>{path}</title>{head.format(port=port)}</head>"
    response = web.Response(
        body=f"{html}<body><p>{TEXT}</p>{links}</body></html>".encode(), content_type="text/html"
    )
    if path == "/noindexed":
        response.headers["X-Robots-Tag"] = "noindex"
    return response


async def test_a_page_keeps_its_content_unless_its_canonical_url_will_be_fetched(
    tmp_path: Path,
) -> None:
    records = await crawl(tmp_path / "out", handle, canonical="follow", robots=True, per_host=1)
    flags = {path: set(r["flags"]) for path, r in records.items()}
    for path in ("/strip", "/session"):  # self-canonical once stripped
        assert records[path]["text"] and not {f for f in flags[path] if f.startswith("canon")}
    for path in ("/to-blocked", "/claim"):  # refused: the page keeps its own
        assert records[path]["text"] and "canonical-error" in flags[path], path
        assert "canonical-followed" not in flags[path]
    assert not {"/blocked", "/claimed"} & records.keys()
    assert "canonical-loop" in flags["/new"] and records["/new"]["text"]  # /old came here
    # followed, then found to redirect back: the page's content stored after all (the
    # last of its records), the redirect flagged; or to be noindex: flagged
    assert "canonical-loop" in flags["/back"] and records["/back"]["text"]
    assert "canonical-loop" in flags["/back-r"]
    # noindex: the page's content stored after all (the last of its records)
    assert "canonical-error" in flags["/to-noindex"] and records["/to-noindex"]["text"]
    assert "canonical-error" in flags["/noindexed"]
