"""A rendered DOM holding lone surrogates (a script's text: Playwright hands them on as they
are, ``"\\ud800"``), with Debian's real chromium-headless-shell on a real local site: the page
is stored, its links followed, each lone surrogate read as U+FFFD as a browser encodes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fetch.render.site import RenderSite, serve_site
from tests.fetch.render.test_render_crawl import crawl

pytestmark = pytest.mark.timeout(60)

_LONE = (
    "document.getElementById('t').textContent = 'LONE a\\ud800b';"
    " var a = document.createElement('a'); a.href = '/found/after-\\udc80';"
    " a.textContent = 'next'; document.body.appendChild(a);"
)


def _site() -> RenderSite:
    site = RenderSite()
    site.pages["/lone"] = (
        "<!doctype html><html><head><title>t</title></head>"
        f"<body><p id=t>x</p><a href='/found/plain'>plain</a><script>{_LONE}</script>"
        "</body></html>"
    )
    return site


async def test_a_dom_with_lone_surrogates_is_stored_and_its_links_followed(
    tmp_path: Path,
) -> None:
    async with serve_site(_site()) as (site, port):
        _, records, _ = await crawl(tmp_path, port, ["/lone"], text=True, render="always")
    page = records["/lone"]
    assert page["rendered"] is True and page["status"] == 200
    assert "LONE a\ufffdb" in page["text"]
    assert site.hits["/found/plain"] == 1
    assert "/found/after-%EF%BF%BD" in records
