"""``--canonical follow`` with ``--render``: a page held while its canonical URL is awaited
keeps its served body beside the rendered one, and both count in the held pages' bound
(``MAX_HELD_BYTES``), with Debian's real chromium-headless-shell on a real local site.
Before, only the rendered body counted: pages whose scripts shrink them (here 300 KB served,
a few hundred bytes rendered) were held far past the bound."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from tests.fetch.render.site import RenderSite, serve_site
from tests.fetch.render.test_render_crawl import crawl

from gossamer.page import canonical

pytestmark = pytest.mark.timeout(60)

PAD = 300_000
"""Bytes of each page's served body a script removes before the DOM is read."""


def _page(n: int) -> str:
    pad = "<p>" + "x" * PAD + "</p>"
    return (
        '<!doctype html><html><head><title>t</title><link rel="canonical" href="/gone">'
        f'</head><body><p>PAGE {n}</p><div id="pad">{pad}</div>'
        '<script>document.getElementById("pad").remove();</script></body></html>'
    )


async def test_a_rendered_page_held_for_its_canonical_url_counts_its_served_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(canonical, "MAX_HELD_BYTES", PAD + PAD // 2)  # room for one page
    site = RenderSite()
    site.pages["/a1"] = _page(1)
    site.pages["/a2"] = _page(2)
    with caplog.at_level(logging.WARNING, logger="gossamer.page.canonical"):
        async with serve_site(site) as (_, port):
            _, records, _ = await crawl(
                tmp_path, port, ["/a1", "/a2"], render="always", canonical="follow", per_host=1
            )
    assert records["/gone"]["status"] == 404 and records["/a1"]["rendered"]
    lines = (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    flags = {}
    for record in map(json.loads, lines):
        flags.setdefault(record["url"].rsplit("/", 1)[1], []).append(record["flags"])
    # /a2 (held, the newest) has its content stored after all in a second record; /a1,
    # forgotten to make room, has none, and a warning names it
    assert flags["a2"] == [["canonical-followed"], ["canonical-error"]]
    assert flags["a1"] == [["canonical-followed"]]
    assert "no longer held" in caplog.text and "/a1" in caplog.text
