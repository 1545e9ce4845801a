"""A rendered page cannot make the browser reach anything itself: popups (``window.open``,
``target=_blank`` links and forms), preconnects and prefetches (markup, script and ``Link``
header), WebRTC (STUN and TURN over UDP and TCP, from the page, an iframe, a data: iframe and
a popup), WebSockets, WebTransport, beacons, EventSource, a worker, iframes and
plain subrequests aimed at other ports of 127.0.0.1 and at 127.0.0.2 reach none of the trap
listeners there (tests/fetch/render/escape_page.py). The browser runs as in production: a
whole crawl (``run_crawl``), and the pool alone with no router at all (the network barrier by
itself), both with the crawler's own launch flags and host resolver rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest
from tests.fetch.render.escape_page import escape_page, link_header, open_vector_traps
from tests.fetch.render.site import RenderSite, serve_site
from tests.fetch.render.test_render_crawl import crawl
from tests.fetch.render.traps import open_traps

from gossamer.fetch.render import BrowserConfig, BrowserPool

pytestmark = pytest.mark.timeout(60)

_SETTLE = 0.5
"""Once the page has tried everything: time for a connection opened last to reach its trap."""
_NO_WEBRTC = "done-rtc-rtc_iframe-rtc_popup-webtransport-webtransport2"
"""The done link when the page found neither WebRTC nor WebTransport (removed)."""


async def test_a_rendered_page_reaches_no_trap(tmp_path: Path) -> None:
    site = RenderSite()
    async with open_traps() as traps:
        await open_vector_traps(traps)
        site.pages["/escape"] = escape_page(traps)
        site.page_headers["/escape"] = link_header(traps)
        async with serve_site(site) as (_, port):
            _, records, saved = await crawl(tmp_path, port, ["/escape"], render="always")
        await asyncio.sleep(_SETTLE)
    assert records["/escape"]["rendered"] is True
    done = [p for p in records if p.startswith("/found/done-")]
    assert len(done) == 1  # the page tried every way out
    assert not traps.hit(), " ".join(sorted(traps.hit()))
    assert done == [f"/found/{_NO_WEBRTC}"]  # WebRTC and WebTransport were gone
    assert not site.from_browser
    subrequests = saved["render"]["subrequests"]
    assert subrequests["blocked-popup"] >= 1  # popups' navigations met the router


async def test_redirects_from_the_site_to_another_port_reach_no_trap(tmp_path: Path) -> None:
    """A subrequest, an iframe and a link of the site whose redirects (one hop, or two
    through the site) end at other ports of 127.0.0.1: the router checks each hop, and the
    crawl's own fetches of the links do too."""
    site = RenderSite()
    async with open_traps() as traps:
        for name in ("fetch", "chain", "frame", "link", "document"):
            await traps.tcp(name, "127.0.0.1")
            site.redirects[f"/go/{name}"] = f"http://{traps[name].address}/{name}"
        site.redirects["/go/chain"] = "/go/chain2"
        site.redirects["/go/chain2"] = f"http://{traps['chain'].address}/chain"
        site.pages["/redirects"] = (
            "<!doctype html><html><head><title>r</title></head><body>"
            '<a href="/go/link">link</a><a href="/go/document">document</a>'
            '<iframe src="/go/frame"></iframe><script>'
            "fetch('/go/fetch').catch(() => 0); fetch('/go/chain').catch(() => 0);"
            "</script></body></html>"
        )
        async with serve_site(site) as (_, port):
            _, records, _ = await crawl(tmp_path, port, ["/redirects"], render="always")
        await asyncio.sleep(_SETTLE)
    assert records["/redirects"]["rendered"] is True
    assert site.hits["/go/fetch"] and site.hits["/go/chain2"] and site.hits["/go/frame"]
    assert not traps.hit(), " ".join(sorted(traps.hit()))


async def test_the_browser_alone_reaches_no_trap() -> None:
    """No router, no popup closing, no API removed: the launch flags alone hold."""
    pool = BrowserPool(BrowserConfig(), 1)
    async with open_traps() as traps:
        await open_vector_traps(traps)
        await pool.start()
        try:
            flags = psutil.Process(pool.browser_pid).cmdline()
            async with pool.context() as context:
                page = await context.new_page()
                await page.set_content(escape_page(traps), wait_until="commit")
                await page.wait_for_selector("#done", state="attached", timeout=10_000)
                await asyncio.sleep(_SETTLE)
        finally:
            await pool.close()
    assert "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1" in flags  # production's
    assert not traps.hit(), " ".join(sorted(traps.hit()))
