"""Robots directives of a rendered page: the most restrictive of the served document's (its
meta tags, its X-Robots-Tag) and the rendered DOM's, with Debian's real
chromium-headless-shell on a real local site."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fetch.render.site import RenderSite, serve_site
from tests.fetch.render.test_render_crawl import crawl

pytestmark = pytest.mark.timeout(60)

_REMOVE = 'document.querySelector("meta[name=robots]").remove();'
_ADD = (
    'var m = document.createElement("meta"); m.name = "robots"; m.content = "noindex";'
    " document.head.appendChild(m);"
)


def _page(head: str, body: str, script: str) -> str:
    return (
        f"<!doctype html><html><head><title>t</title>{head}</head>"
        f"<body>{body}<script>{script}</script></body></html>"
    )


def _site() -> RenderSite:
    site = RenderSite()
    site.pages["/removed"] = _page(
        '<meta name="robots" content="noindex">', "<p>REMOVED words of the page</p>", _REMOVE
    )
    site.pages["/nofollow"] = _page(
        '<meta name="robots" content="nofollow">',
        '<p>Some words</p><a href="/found/nf-child">child</a>',
        _REMOVE,
    )
    site.pages["/gossamer"] = _page(
        '<meta name="gossamer" content="noindex">',
        "<p>NAMED words of the page</p>",
        'document.querySelector("meta[name=gossamer]").remove();',
    )
    site.pages["/added"] = _page("", "<p>ADDED words of the page</p>", _ADD)
    site.pages["/plain"] = _page("", "<p>PLAIN words of the page</p>", "1;")
    return site


async def test_a_served_directive_a_script_removes_still_holds(tmp_path: Path) -> None:
    seeds = ["/removed", "/nofollow", "/gossamer", "/added", "/plain"]
    async with serve_site(_site()) as (site, port):
        _, records, saved = await crawl(tmp_path, port, seeds, text=True, render="always")
    for path in ("/removed", "/gossamer", "/added"):
        page = records[path]
        assert page["rendered"] is True
        assert "noindex" in page["flags"], path
        assert page["text"] is None and page["title"] is None, path
    assert records["/nofollow"]["rendered"] is True
    assert "nofollow" in records["/nofollow"]["flags"]
    assert records["/nofollow"]["outlinks"] == 0
    assert site.hits["/found/nf-child"] == 0
    assert records["/plain"]["flags"] == [] and "PLAIN" in records["/plain"]["text"]
    assert saved["page_signals"]["noindex"] == 3
