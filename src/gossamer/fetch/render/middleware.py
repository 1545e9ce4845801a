"""The rendering middleware of the fetch stage: fetches a page over plain HTTP, decides whether
to render it, and hands the engine the rendered DOM as the page's body.

The engine sees a fetcher like any other (``fetch(url)``); a rendered page's result is the
plain HTTP result with the rendered HTML as its body, ``rendered`` set, the served body kept
as ``served`` (the page stage reads its robots meta tags: a script cannot undo them), and its
wire exchange (what WARC archives) untouched: the archive keeps the raw HTTP response. A render
that fails (a crash, retried once; a page whose DOM could not be read in time) leaves the raw
result, flagged ``render-failed``; a page that had not settled by the deadline is flagged
``render-deadline``, and a DOM larger than the body cap (``--max-body-bytes``) is cut there,
flagged ``render-cut``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from gossamer.fetch.http import FetchResult
from gossamer.fetch.render.auto import HostLearner, Signals, proved_useful, read_signals
from gossamer.fetch.render.browser import BrowserPool
from gossamer.fetch.render.page import PageRenderer, Rendered
from gossamer.redact import redact_url
from gossamer.settings.regex import UrlPattern
from gossamer.urls import host_key

log = logging.getLogger(__name__)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_CRASH_RETRY_WAIT = 0.2
_READ_IN_THREAD = 512 * 1024


@dataclass(frozen=True, slots=True)
class RenderStats:
    """A snapshot of the rendering middleware (stats.json's ``render``)."""

    mode: str
    concurrency: int
    pages_rendered: int
    render_failures: int
    retries: int
    deadline_hits: int
    restarts: int
    crashes: int
    render_seconds: float
    subrequests_allowed: int
    subrequests_blocked: int
    subrequests: dict[str, int]
    auto: dict[str, int] = field(default_factory=dict)
    browser_rss_mb: float = 0.0
    browser_peak_rss_mb: float = 0.0


class DocumentFetch(Protocol):
    """What fetches a page's document (the crawl's `Fetcher`, or one that tells the host
    gate when each request started)."""

    async def fetch(self, url: str) -> FetchResult: ...


class RenderingFetcher:
    """Fetches with ``fetcher``, renders what ``mode`` (``auto`` or ``always``) and the URL
    patterns call for in ``renderer``'s browser."""

    def __init__(
        self,
        fetcher: DocumentFetch,
        renderer: PageRenderer,
        pool: BrowserPool,
        mode: str,
        patterns: tuple[UrlPattern, ...] = (),
        learner: HostLearner | None = None,
        max_bytes: int = 10 * 1024 * 1024,
    ) -> None:
        self._max_bytes = max_bytes
        self._fetcher = fetcher
        self._renderer = renderer
        self._pool = pool
        self._mode = mode
        self._patterns = patterns
        self._learner = learner or HostLearner()
        self._counts = dict.fromkeys(
            ("rendered", "failures", "retries", "deadline", "considered", "skipped"), 0
        )
        self._seconds = 0.0

    async def start(self) -> None:
        """Launch the browser (raises RenderUnavailable, or playwright's Error)."""
        await self._pool.start()

    async def close(self) -> None:
        """Close the browser and its driver."""
        await self._pool.close()

    async def fetch(self, url: str) -> FetchResult:
        """The page's plain HTTP result, or its rendered form (see the module doc)."""
        raw = await self._fetcher.fetch(url)
        if not _renderable(raw):
            return raw
        forced = self._mode == "always" or any(p.search(url) for p in self._patterns)
        if forced:
            return await self._render(url, raw, learn=None)
        if self._mode != "auto":
            return raw
        self._counts["considered"] += 1
        signals = await _signals(raw.body, url)
        host = host_key(url)
        if not self._learner.should_render(host, signals):
            self._counts["skipped"] += 1
            return raw
        return await self._render(url, raw, learn=(host, signals))

    async def _render(self, url: str, raw: FetchResult, learn: Any) -> FetchResult:
        outcome = await self._renderer.render(url, raw)
        if outcome.error == "crashed":
            self._counts["retries"] += 1
            await asyncio.sleep(_CRASH_RETRY_WAIT)
            log.info("render of %s crashed; retrying once", redact_url(url))
            outcome = await self._renderer.render(url, raw)
        self._seconds += outcome.seconds
        if outcome.deadline:
            self._counts["deadline"] += 1
        if outcome.html is None:
            self._counts["failures"] += 1
            log.info("render of %s failed (%s); raw page kept", redact_url(url), outcome.error)
            return msgspec.structs.replace(raw, flags=(*raw.flags, "render-failed"))
        self._counts["rendered"] += 1
        if learn is not None:
            host, signals = learn
            rendered = await _signals(outcome.html or "", url)
            self._learner.observe(host, proved_useful(signals, rendered))
        return _rendered_result(raw, outcome, self._max_bytes)

    def stats(self) -> RenderStats:
        """A frozen snapshot."""
        subrequests = dict(self._renderer.subrequests)
        blocked = sum(v for k, v in subrequests.items() if k.startswith("blocked-"))
        auto = {}
        if self._mode == "auto":
            auto = {
                "pages_considered": self._counts["considered"],
                "pages_skipped": self._counts["skipped"],
                **{f"hosts_{k}": v for k, v in self._learner.counts().items()},
            }
        pool = self._pool
        return RenderStats(
            mode=self._mode,
            concurrency=pool.concurrency,
            pages_rendered=self._counts["rendered"],
            render_failures=self._counts["failures"],
            retries=self._counts["retries"],
            deadline_hits=self._counts["deadline"],
            restarts=pool.restarts,
            crashes=pool.crashes,
            render_seconds=round(self._seconds, 3),
            subrequests_allowed=subrequests.get("allowed", 0),
            subrequests_blocked=blocked,
            subrequests=subrequests,
            auto=auto,
            browser_rss_mb=round(pool.rss_bytes / (1 << 20), 1),
            browser_peak_rss_mb=round(pool.peak_rss_bytes / (1 << 20), 1),
        )

    def json_stats(self) -> dict[str, Any]:
        """The snapshot as stats.json holds it."""
        from dataclasses import asdict

        return asdict(self.stats())

    def browser_peak_mb(self) -> float:
        """The browser tree's peak resident memory so far, MiB."""
        return round(self._pool.peak_rss_bytes / (1 << 20), 1)


async def _signals(html: bytes | str, url: str) -> Signals:
    """The page's signals; a large page read off the event loop (lexbor lets it run)."""
    if len(html) < _READ_IN_THREAD:
        return read_signals(html, url)
    return await asyncio.to_thread(read_signals, html, url)


def _renderable(result: FetchResult) -> bool:
    """A complete 2xx HTML answer."""
    if not result.ok or result.truncated:
        return False
    if result.content_type is not None:
        return result.content_type in _HTML_TYPES
    head = result.body[:256].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _rendered_result(raw: FetchResult, outcome: Rendered, max_bytes: int) -> FetchResult:
    """``raw`` with the rendered DOM as its body, cut at ``max_bytes`` (flag ``render-cut``)."""
    flags = (*raw.flags, "render-deadline") if outcome.deadline else raw.flags
    body = outcome.html.encode("utf-8") if outcome.html is not None else raw.body
    if len(body) > max_bytes:
        body = body[:max_bytes]
        flags = (*flags, "render-cut")
    return msgspec.structs.replace(
        raw,
        body=body,
        content_type="text/html",
        charset="utf-8",
        rendered=True,
        flags=flags,
        served=raw.body,
        served_charset=raw.charset,
    )
