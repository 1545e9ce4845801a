"""The fetch the robots cache asks through, and the fetch protocol the crawl loop calls.

The engine hands robots.txt leases to the cache (:class:`gossamer.frontier.robots.RobotsCache`)
and the cache fetches through :class:`RobotsFetch`, which takes the lease's slot, archives
each answer and counts the requests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple, Protocol

from gossamer.frontier.robots import RobotsCache, RobotsDeferred
from gossamer.page import Fetched
from gossamer.sinks.base import Archive
from gossamer.urls import host_key


class Fetch(Protocol):
    """Anything that fetches one URL without following redirects and never raises."""

    async def fetch(self, url: str) -> Fetched: ...


class SessionFetch(Protocol):
    """A fetcher that can send a request outside the site's session: with no cookie
    (`gossamer.fetch.http.Fetcher`)."""

    async def fetch(
        self, url: str, *, headers: Mapping[str, str] | None = None, cookies: bool = True
    ) -> Fetched: ...


class NoCookies:
    """``fetcher``'s requests with no cookie sent and none of their answers' kept: robots.txt
    is no page of the site's session, and no cookie (a sibling host's ``Domain`` cookies
    with ``Path=/robots.txt``, big enough for the server to refuse the request) may change
    what it says."""

    def __init__(self, fetcher: SessionFetch) -> None:
        self._fetcher = fetcher

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> Fetched:
        return await self._fetcher.fetch(url, headers=headers, cookies=False)


UNSENT = frozenset({"no-proxy", "proxy-error"})
"""Fetch errors of a request that never reached the site (no live proxy, or every proxy
tried failed)."""


class RobotsFetch:
    """The fetch function handed to the robots cache.

    A host's robots lease takes its slot for the first request of its robots.txt
    (`leased`, then `ended`, which tells when its last request started). Every other
    robots.txt request, a redirect's next hop or one asked for outside a lease (a focus
    example's host, a rendered page's subrequest), goes through ``gated``: the fetcher
    behind the host gate, pace only (the one asking may hold a lease of the host). The
    lease's request tells ``started`` (the gate's `started`) when it really started, so a
    redirect's next hop is spaced from that start, not from when the lease was granted (the
    lease's slot stays taken meanwhile: a pace-only pass waits for no connection). In a
    crawl through proxies (``proxied``) a request that never reached the site (no
    live proxy, or every proxy tried failed it) raises `RobotsDeferred`: no "unreachable"
    verdict is cached for a site never asked (its URLs would spend their attempts on it).
    The robots lease is asked for again; the proxies' failures soon leave none live, and
    the crawl waits.
    """

    def __init__(
        self,
        fetcher: Fetch,
        archive: Archive | None = None,
        *,
        gated: Fetch | None = None,
        started: Callable[[str, float], None] | None = None,
        proxied: bool = False,
    ) -> None:
        self._fetcher = fetcher
        self._archive = archive
        self._gated = gated if gated is not None else fetcher
        self._started = started
        self._proxied = proxied
        self._leases: dict[str, float | None] = {}
        """Hosts whose robots lease is out: when their last request started (None: the
        lease's own slot is not used yet)."""
        self.requests = 0

    def leased(self, host: str) -> None:
        """A robots lease of ``host`` is out: its first request uses the lease's slot."""
        self._leases[host] = None

    def ended(self, host: str) -> float | None:
        """The robots lease of ``host`` ended: when its last request started, if any."""
        return self._leases.pop(host, None)

    async def __call__(self, url: str) -> Fetched:
        host = host_key(url)
        if host in self._leases and self._leases[host] is None:
            result = await self._fetcher.fetch(url)
            if self._started is not None:
                self._started(url, result.sent_by)
        else:
            result = await self._gated.fetch(url)
        self.requests += 1
        if self._archive is not None:
            await self._archive.write(result)
        if host in self._leases:
            self._leases[host] = result.sent_by
        if self._proxied and result.error in UNSENT:
            raise RobotsDeferred(url)
        return result


class Robots(NamedTuple):
    """robots.txt: the cache the crawl asks for a host's rules, and the fetch it asks
    through (which takes a robots lease's slot and counts the requests)."""

    cache: RobotsCache
    fetch: RobotsFetch


__all__ = ["UNSENT", "Fetch", "NoCookies", "Robots", "RobotsFetch", "SessionFetch"]
