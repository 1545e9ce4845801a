"""Rendering pages built by JavaScript (``--render``) in Debian's headless Chromium, driven by
Playwright: the browser pool (``browser``), one page's render with its subrequests routed
through gossamer's fetcher (``page``), the barrier that keeps the browser from reaching
anything else (``barrier``: routing at the context with popups closed, a proxy that refuses
every connection the router did not fulfil, WebRTC kept off UDP, WebRTC and WebTransport
removed; its limits are written there), the ``auto`` mode's choice (``auto``) and the fetch
middleware the engine calls (``middleware``).

This package may import what the fetch stage may (``gossamer.redact``, ``gossamer.urls``,
``gossamer.fetch.http`` for the results it hands on, ``gossamer.parse.guard`` for the pages
``auto`` reads), selectolax, psutil and playwright:
importing it does not import Playwright; starting the pool does.
"""

from gossamer.fetch.render.auto import HostLearner, Signals, Verdict, read_signals
from gossamer.fetch.render.browser import (
    BROWSER_ARGS,
    BrowserConfig,
    BrowserPool,
    RenderUnavailable,
    check_available,
    default_concurrency,
)
from gossamer.fetch.render.middleware import RenderingFetcher, RenderStats
from gossamer.fetch.render.page import PageOptions, PageRenderer, Rendered

__all__ = [
    "BROWSER_ARGS",
    "BrowserConfig",
    "BrowserPool",
    "HostLearner",
    "PageOptions",
    "PageRenderer",
    "RenderStats",
    "RenderUnavailable",
    "Rendered",
    "RenderingFetcher",
    "Signals",
    "Verdict",
    "check_available",
    "default_concurrency",
    "read_signals",
]
