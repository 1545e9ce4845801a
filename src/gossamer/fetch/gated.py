"""Requests that wait for their host's politeness slot before they are sent.

The fetch stage knows no frontier: the host gate (:class:`gossamer.frontier.gate.HostGate`)
reaches it as a `HostPace`, handed in by the wiring (``crawl.py``). `GatedFetch` wraps any
fetcher so each of its requests goes through the gate; `Fetcher` itself sends its proxy checks
through it, and the logins of `gossamer.fetch.auth` their form posts and token requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["GatedFetch", "HostPace", "SubFetch", "leave"]


class HostPace(Protocol):
    """The host gate, as the fetch stage uses it (see :mod:`gossamer.frontier.gate`)."""

    async def enter(self, url: str, *, pace_only: bool = False, aside: bool = False) -> Any:
        """Wait for ``url``'s host and take its slot; returns what `leave` gives back."""
        ...

    def leave(
        self,
        taken: Any,
        started_at: float | None,
        *,
        elapsed: float = 0.0,
        status: int | None = None,
        error: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Give the slot back with what the request told about the host."""
        ...

    def now(self) -> float:
        """The clock slots are kept by."""
        ...

    def started(self, url: str, at: float) -> None:
        """A request to ``url``'s host under a lease started ``at`` (the clock's time)."""
        ...


class SubFetch(Protocol):
    """A fetcher: `gossamer.fetch.http.Fetcher` or the rendering middleware (headers are
    passed on only when a request has some: the middleware takes none)."""

    async def fetch(self, url: str) -> Any: ...


class GatedFetch:
    """``fetcher``, each request through ``gate`` (``pace_only``, ``aside``: see the gate's
    module doc). A result's ``sent_by`` spaces the next request, as for a leased page."""

    def __init__(
        self, fetcher: SubFetch, gate: HostPace, *, pace_only: bool = False, aside: bool = False
    ) -> None:
        self._fetcher = fetcher
        self._gate = gate
        self._pace_only = pace_only
        self._aside = aside

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> Any:
        """``fetcher.fetch(url)`` once the host is due."""
        taken = await self._gate.enter(url, pace_only=self._pace_only, aside=self._aside)
        result = None
        try:
            if headers is None:
                result = await self._fetcher.fetch(url)
            else:
                sender: Any = self._fetcher
                result = await sender.fetch(url, headers=headers)
        finally:
            leave(self._gate, taken, result)
        return result


def leave(gate: HostPace, taken: Any, result: Any) -> None:
    """Give a gate's slot back with what ``result`` (a fetch result) told about the host
    (None: the request was cancelled or failed, or told nothing of the site; counted as sent
    just now)."""
    if result is None:
        gate.leave(taken, gate.now())
        return
    gate.leave(
        taken,
        result.sent_by,
        elapsed=result.latency,
        status=result.status,
        error=result.error,
        retry_after=result.retry_after,
    )
