"""How often the proxy pool may check a proxy (`gossamer.fetch.proxies.ProxyPool`): a check is
a request to the check URL's host, through its politeness slot, so checks may take a small
share of that host at most, `CHECK_SHARE`, however many proxies there are and however short
the check interval.

Checks go one at a time, and a check that took T seconds (its wait for the host's slot
included) has the next wait ``T * (1 / CHECK_SHARE - 1)``: checks hold the host a tenth of
the time at most. While the crawl sends the check host requests (one in the last `_IDLE`
seconds), a check also waits for ``1 / CHECK_SHARE - 1`` of them since the one before: it
takes one of the host's slots in ten at most (a quick check of a host that was due still
takes a slot, and the host's pace after it). While no proxy is live no page goes out, and
checks go back to back.
"""

from __future__ import annotations

__all__ = ["CHECK_SHARE", "CheckShare"]

CHECK_SHARE = 0.1
"""The share of the check host's slots (or, while it gets no page, its time) checks take."""
_AFTER = 1 / CHECK_SHARE - 1
_IDLE = 60.0
"""Seconds without a request to the check host before its slots count no more."""


class CheckShare:
    """When the next check may start, from the checks so far and the requests the crawl sent
    the check host (by host name, as the pool's domains are)."""

    def __init__(self) -> None:
        self.host: str | None = None
        """The check URL's host name (None: no check host known; time alone counts)."""
        self._next = -float("inf")
        """No check before then (time spacing)."""
        self._requests = 0
        """Requests sent the check host (`requested`)."""
        self._at_check = 0
        """``_requests`` when the last check ended."""
        self._last_request = -float("inf")

    def requested(self, host: str, now: float) -> None:
        """A request for ``host`` is sent through the pool at ``now``."""
        if host == self.host:
            self._requests += 1
            self._last_request = now

    def wait(self, now: float) -> float:
        """Seconds before the time spacing lets a check start (0: it does)."""
        return max(0.0, self._next - now)

    def allows(self, now: float, live: bool) -> bool:
        """Whether a check may start at ``now``, while a proxy is ``live`` or not (then at
        once): spaced in time, and, while the crawl sends the check host requests, after
        enough of them."""
        if not live:
            return True
        if now < self._next:
            return False
        busy = now - self._last_request < _IDLE
        return not busy or self._requests - self._at_check >= _AFTER

    def checked(self, started: float, ended: float, *, asked_site: bool, live: bool) -> None:
        """A check ran from ``started`` to ``ended``; ``asked_site``: it sent the check host a
        request (not a proxy that took no connection); ``live``: a proxy is live (pages go)."""
        if asked_site and live:
            self._next = ended + (ended - started) * _AFTER
            self._at_check = self._requests
