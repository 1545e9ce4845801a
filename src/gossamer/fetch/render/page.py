"""Rendering one page: its document as gossamer fetched it, its subrequests through gossamer's
own fetcher, and a wait for the page to settle under a hard deadline.

The browser fetches nothing itself. Every request of the page's context goes through a route
handler (popups' too; they are closed as they open, and whatever the handler does not
fulfil meets the barrier of :mod:`gossamer.fetch.render.barrier`): the page's document is
fulfilled with the body gossamer fetched (inside the page's lease: politeness slot, proxy,
login, robots.txt as for any page); other navigations of the main frame and popups'
navigations are aborted; subrequests of a blocked kind (images, fonts, media by default), other
methods than GET and HEAD, URLs out of the crawl's scope and URLs robots.txt disallows are
aborted; the rest are fetched by gossamer's fetcher (its proxies, logins, address guard and
size caps) and fulfilled with its answer, redirects followed here (each target checked like
the first URL), since a browser handed a redirect fetches its target itself. WebSockets are
closed before they connect.

Waiting: ``load`` (capped at ``load_timeout``), then until neither the DOM (a
MutationObserver) nor the network (requests in flight) has changed for ``settle`` seconds
and no short ``setTimeout`` callback is pending,
optionally scrolling to the end ``scroll`` times; all within ``timeout``. At the deadline the
DOM is taken as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from gossamer.fetch.render.barrier import seal
from gossamer.redact import redact_url
from gossamer.urls import Resolver

if TYPE_CHECKING:
    from playwright.async_api import Frame, Page, Request, Route, WebSocketRoute

    from gossamer.fetch.render.browser import BrowserPool

log = logging.getLogger(__name__)

_SETTLE_SCRIPT = """
(() => {
  window.__gossamerChanged = performance.now();
  const all = {subtree: true, childList: true, attributes: true, characterData: true};
  new MutationObserver(() => { window.__gossamerChanged = performance.now(); })
    .observe(document, all);
  const pending = new Set();
  const setTimer = window.setTimeout, clearTimer = window.clearTimeout;
  window.setTimeout = function (callback, delay, ...rest) {
    if (typeof callback !== 'function' || Number(delay) > %d) {
      return setTimer.call(this, callback, delay, ...rest);
    }
    const id = setTimer.call(this, function (...args) {
      pending.delete(id);
      return callback.apply(this, args);
    }, delay, ...rest);
    pending.add(id);
    return id;
  };
  window.clearTimeout = function (id) { pending.delete(id); return clearTimer.call(this, id); };
  window.__gossamerTimers = () => pending.size;
})();
"""
_QUIET_JS = """() => [
  (window.__gossamerTimers && window.__gossamerTimers()) ? 0
    : performance.now() - (window.__gossamerChanged || 0),
  document.documentElement ? document.documentElement.scrollHeight : 0,
  document.getElementsByTagName('*').length,
]"""
_SCROLL_JS = "() => window.scrollTo(0, document.documentElement.scrollHeight)"
_POLL_SECONDS = 0.05
_MAX_REDIRECTS = 5
_ANY = re.compile(".*")
_TIMER_CAP_MS = 5000
"""Pending ``setTimeout`` callbacks due within this many ms keep a page unsettled (longer
ones, and ``setInterval`` polls, do not)."""
_CONTENT_SECONDS = 3.0
_CONTENT_TRIES = 3
"""Reads of the DOM while navigations replace it (see `_content`)."""
_DROP_HEADERS = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)
_FORWARD_HEADERS = ("accept", "accept-language", "content-type")


class Answer(Protocol):
    """The parts of a fetch result a render reads (the document's and each subrequest's)."""

    @property
    def status(self) -> int | None: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def body(self) -> bytes: ...


class SubFetch(Protocol):
    """gossamer's fetcher, as the route handler uses it."""

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class PageOptions:
    """How a page is rendered."""

    user_agent: str = "gossamer"
    timeout: float = 15.0
    load_timeout: float = 5.0
    settle: float = 0.3
    scroll: int = 0
    block: frozenset[str] = frozenset({"image", "font", "media"})


@dataclass(frozen=True, slots=True)
class Rendered:
    """A render's outcome: the DOM as HTML, or why there is none."""

    html: str | None
    error: str | None = None
    """``crashed`` (the page or browser died: worth one retry), ``failed`` or ``timeout``
    (not even the DOM could be read by the deadline)."""
    deadline: bool = False
    """The page had not settled by the deadline (its DOM was taken as it was)."""
    seconds: float = 0.0


class PageRenderer:
    """Renders pages in the pool's browser; counts subrequests by outcome."""

    def __init__(
        self,
        pool: BrowserPool,
        fetcher: SubFetch,
        options: PageOptions,
        *,
        in_scope: Callable[[str], bool],
        allowed: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self._pool = pool
        self._fetcher = fetcher
        self._options = options
        self._in_scope = in_scope
        self._allowed = allowed
        self.subrequests: Counter[str] = Counter()
        """``allowed``, ``failed`` and ``blocked-<why>`` counts."""

    async def render(self, url: str, document: Answer) -> Rendered:
        """Render ``url`` whose answer is ``document``; never raises (but for cancellation)."""
        from playwright.async_api import Error as PlaywrightError

        started = time.monotonic()
        deadline = started + self._options.timeout
        try:
            async with self._pool.context(
                user_agent=self._options.user_agent,
                service_workers="block",
                accept_downloads=False,
                viewport={"width": 1280, "height": 900},
            ) as context:
                page = await context.new_page()
                crashed = asyncio.Event()
                page.on("crash", lambda _: crashed.set())
                await page.add_init_script(_SETTLE_SCRIPT % _TIMER_CAP_MS)
                handler = _Handler(self, url, document, deadline, page.main_frame)
                try:
                    await seal(context, page)
                    await context.route("**/*", handler.route)
                    await context.route_web_socket(_ANY, handler.websocket)
                    outcome = await self._run(page, url, handler, deadline, crashed)
                finally:
                    for fetch in list(handler.fetches):
                        fetch.cancel()
        except PlaywrightError as exc:
            log.info("render of %s failed: %s", redact_url(url), _first_line(exc))
            outcome = Rendered(None, "crashed" if _crash(exc) else "failed")
        except (OSError, RuntimeError) as exc:
            log.warning("render of %s failed: %s", redact_url(url), exc)
            outcome = Rendered(None, "failed")
        seconds = time.monotonic() - started
        return Rendered(outcome.html, outcome.error, outcome.deadline, seconds)

    async def _run(
        self, page: Page, url: str, handler: _Handler, deadline: float, crashed: asyncio.Event
    ) -> Rendered:
        """Navigate, wait and read the DOM; a crash ends the wait at once."""
        work = asyncio.ensure_future(self._navigate_and_wait(page, url, handler, deadline))
        crash = asyncio.ensure_future(crashed.wait())
        try:
            done, _ = await asyncio.wait(
                {work, crash},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            crash.cancel()
            if not work.done():
                work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
        if crashed.is_set():
            return Rendered(None, "crashed")
        if work in done and work.exception() is not None:
            raise work.exception()  # type: ignore[misc]
        settled = work in done
        try:
            async with asyncio.timeout(_CONTENT_SECONDS):
                html = await _content(page)
        except TimeoutError:
            return Rendered(None, "timeout", deadline=True)
        return Rendered(html, deadline=not settled)

    async def _navigate_and_wait(
        self, page: Page, url: str, handler: _Handler, deadline: float
    ) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        options = self._options
        load_cap = min(options.load_timeout, max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(PlaywrightTimeout):
            await page.goto(url, wait_until="load", timeout=load_cap * 1000)
        size = await self._settle(page, handler)
        for _ in range(options.scroll):
            await page.evaluate(_SCROLL_JS)
            await asyncio.sleep(_POLL_SECONDS)
            grown = await self._settle(page, handler)
            if grown[0] <= size[0] and grown[1] <= size[1]:  # the list has ended
                break
            size = grown

    async def _settle(self, page: Page, handler: _Handler) -> tuple[int, int]:
        """Wait until the DOM and the network have been quiet for ``settle`` seconds; the
        document's scroll height and element count then."""
        settle = self._options.settle
        while True:
            changed_ago, height, elements = await page.evaluate(_QUIET_JS)
            network = 0.0 if handler.in_flight else time.monotonic() - handler.last_activity
            quiet = min(changed_ago / 1000, network)
            if quiet >= settle:
                return int(height), int(elements)
            await asyncio.sleep(max(_POLL_SECONDS, settle - quiet))


async def _content(page: Page) -> str:
    """The page's DOM as HTML (`_well_formed`); while a navigation is under way (a load slower
    than the load timeout, a script's redirect) Chromium refuses it: read again once the new
    document has its DOM, a few times at most (the caller bounds the time)."""
    from playwright.async_api import Error as PlaywrightError

    for _ in range(_CONTENT_TRIES - 1):
        try:
            return _well_formed(await page.content())
        except PlaywrightError as exc:
            if "navigating" not in str(exc):
                raise
            with contextlib.suppress(PlaywrightError):
                await page.wait_for_load_state("domcontentloaded")
    return _well_formed(await page.content())


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _well_formed(html: str) -> str:
    """``html`` with each lone surrogate as U+FFFD, as a browser encodes one. A script's
    strings may hold them (``'\\ud800'``) and Playwright hands them on; UTF-8 holds none (the
    body's encoding failed and ended the crawl)."""
    return html if html.isascii() else _LONE_SURROGATE.sub("\ufffd", html)


class _Handler:
    """The route handler of one page (see the module doc)."""

    def __init__(
        self, renderer: PageRenderer, url: str, document: Answer, deadline: float, frame: Frame
    ) -> None:
        self._renderer = renderer
        self._frame = frame
        """The page's main frame: other top-level frames are popups."""
        self._url = url
        self._document: Answer | None = document
        self._deadline = deadline
        self.in_flight = 0
        self.last_activity = time.monotonic()
        self.fetches: set[asyncio.Future[Any]] = set()
        """Subrequests being fetched: cancelled when the page ends."""

    async def route(self, route: Route) -> None:
        request = route.request
        try:
            await self._route(route, request)
        except Exception as exc:  # the page closed meanwhile, or the browser died
            log.debug("route of %s ended: %s", redact_url(request.url), _first_line(exc))

    async def websocket(self, socket: WebSocketRoute) -> None:
        """A WebSocket never reaches a server (gossamer cannot fetch it for the page)."""
        self._renderer.subrequests["blocked-websocket"] += 1
        with contextlib.suppress(Exception):
            await socket.close()

    async def _route(self, route: Route, request: Request) -> None:
        renderer = self._renderer
        if request.is_navigation_request() and _top_level(request):
            if _frame(request) != self._frame:  # a popup's, closed as it opens
                await self._block(route, "popup")
                return
            document, self._document = self._document, None
            if document is None:  # a script navigating away: the page stays
                await self._block(route, "navigation")
                return
            await route.fulfill(
                status=document.status or 200,
                headers=_headers(document.headers),
                body=document.body,
            )
            return
        why = self._refusal(request) or await self._url_refusal(request.url)
        if why is not None:
            await self._block(route, why)
            return
        headers = {k: v for k in _FORWARD_HEADERS if (v := request.headers.get(k))}
        self.in_flight += 1
        self.last_activity = time.monotonic()
        try:
            answer, why = await self._follow(request.url, headers)
        finally:
            self.in_flight -= 1
            self.last_activity = time.monotonic()
        if why is not None:
            await self._block(route, why)
        elif answer is None:
            renderer.subrequests["failed"] += 1
            await route.abort("failed")
        else:
            renderer.subrequests["allowed"] += 1
            await route.fulfill(
                status=answer.status or 200, headers=_headers(answer.headers), body=answer.body
            )

    async def _follow(
        self, url: str, headers: Mapping[str, str]
    ) -> tuple[Answer | None, str | None]:
        """The answer to ``url`` after its redirects, each target checked as the first URL
        was (the browser, handed a redirect, would fetch its target itself); or why not."""
        for _ in range(_MAX_REDIRECTS + 1):
            answer = await self._fetch(url, headers)
            if answer is None or answer.status is None:
                return None, None
            location = answer.headers.get("location")
            if not 300 <= answer.status < 400 or not location:
                return answer, None
            try:
                target = Resolver(url).resolve(location)
            except ValueError:
                target = None
            if target is None:
                return None, None
            why = await self._url_refusal(target)
            if why is not None:
                return None, why
            url = target
        return None, None

    async def _fetch(self, url: str, headers: Mapping[str, str]) -> Answer | None:
        """gossamer's answer to ``url``, or None when the page's deadline came first."""
        fetch = asyncio.ensure_future(self._renderer._fetcher.fetch(url, headers=headers))
        self.fetches.add(fetch)
        try:
            await asyncio.wait({fetch}, timeout=max(0.1, self._deadline - time.monotonic()))
        finally:
            self.fetches.discard(fetch)
        if not fetch.done() or fetch.cancelled():
            fetch.cancel()
            return None
        answer: Answer = fetch.result()
        return answer

    def _refusal(self, request: Request) -> str | None:
        """Why the request's kind or method is not given to the page, or None."""
        if request.resource_type in self._renderer._options.block:
            return str(request.resource_type)
        if request.method not in ("GET", "HEAD"):
            return "method"
        return None

    async def _url_refusal(self, url: str) -> str | None:
        """Why ``url`` is not fetched for the page (scheme, scope, robots.txt), or None."""
        renderer = self._renderer
        if not url.startswith(("http://", "https://")):
            return "scheme"
        if not renderer._in_scope(url):
            return "scope"
        if renderer._allowed is not None and not await renderer._allowed(url):
            return "robots"
        return None

    async def _block(self, route: Route, why: str) -> None:
        self._renderer.subrequests[f"blocked-{why}"] += 1
        await route.abort("blockedbyclient")


def _frame(request: Request) -> Frame | None:
    """The request's frame; None for a popup's first navigation, which Chromium issues
    before it creates the popup's frame."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return request.frame
    except PlaywrightError:
        return None


def _top_level(request: Request) -> bool:
    """Whether the request is a navigation of a top-level frame (or of one not yet made)."""
    frame = _frame(request)
    return frame is None or frame.parent_frame is None


def _headers(headers: Mapping[str, str]) -> dict[str, str]:
    """An answer's headers as a fulfilled response carries them: the body is decoded."""
    return {k: v for k, v in headers.items() if k.lower() not in _DROP_HEADERS}


def _crash(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(
        word in text
        for word in ("crash", "closed", "disconnected", "target page", "browser has been")
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
