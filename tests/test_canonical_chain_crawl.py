"""``--canonical follow`` on a real server on loopback whose every page names a new canonical
URL (an endless chain): each canonical hop counts toward the depth, so ``--max-depth`` ends the
chain, and its last page, whose canonical URL is too deep to fetch, keeps its content."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl

pytestmark = pytest.mark.timeout(60)

TEXT = "Each page of this chain names the next one its canonical page, without end. " * 3


async def handle(request: web.Request) -> web.Response:
    if request.path == "/":
        return web.Response(body=b'<html><a href="/c/0">go</a></html>', content_type="text/html")
    number = int(request.path.rpartition("/")[2])
    head = f'<link rel="canonical" href="/c/{number + 1}">'
    html = f"<html><head><title>{number}</title>{head}</head><body><p>{TEXT}</p></body></html>"
    return web.Response(body=html.encode(), content_type="text/html")


async def test_an_endless_canonical_chain_ends_at_the_depth_bound(tmp_path: Path) -> None:
    records = await crawl(
        tmp_path / "out", handle, canonical="follow", max_depth=3, max_pages=200, digests="off"
    )
    chain = sorted((r["depth"], path) for path, r in records.items() if path != "/")
    assert chain == [(1, "/c/0"), (2, "/c/1"), (3, "/c/2")]
    for path in ("/c/0", "/c/1"):
        assert "canonical-followed" in records[path]["flags"]
        assert records[path]["text"] is None
    assert "canonical-error" in records["/c/2"]["flags"]  # /c/3 would be at depth 4
    assert records["/c/2"]["text"]
