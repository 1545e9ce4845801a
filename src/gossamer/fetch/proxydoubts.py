"""Which 404s through a proxy are asked of another proxy before they count (the pool's
`gossamer.fetch.proxies.ProxyPool.doubts`, for `gossamer.fetch.proxyfault.fetch_through`).

A proxy may answer a plain 404 of its own to every request (nothing in it names the proxy:
`proxy_fault` cannot tell it from the site's) and pass its checks, which it relays *an*
answer to; where it writes the answer's head, that is (a plain-HTTP URL through an HTTP(S)
proxy: through SOCKS5 or in an HTTPS URL's CONNECT tunnel the site's bytes come as they
were). So such a 404 is doubted while no other proxy has vouched for one of the proxy's 404s
(relayed a 404 for the same URL), after another proxy refuted one (relayed another answer:
the proxy is charged ``proxy-404``), and at a vouched proxy's second 404 in a row (it may
have turned: the first of that run is taken as it came). Bounded: never with fewer than two
proxies to compare (one proxy's 404s are recorded as they come), and never more than one
doubt for a domain plus one for every two of its other requests, so a site of real 404s
never sees its requests doubled.
"""

from __future__ import annotations

__all__ = ["NotFoundDoubts"]

_RUN = 2
"""A vouched proxy's 404s in a row before the last of them is doubted again."""
_MAX_KEYS = 100_000
"""Proxies or domains remembered, at most (forgotten all at once when full)."""


class NotFoundDoubts:
    """The doubts' state: per proxy (by URL), whether another proxy vouched for its 404s and
    its 404s in a row; per domain, the doubts it has cost."""

    def __init__(self) -> None:
        self._vouched: set[str] = set()
        self._run: dict[str, int] = {}
        self._doubted: dict[str, int] = {}

    def doubts(self, proxy: str, domain: str, proxies: int, requests: int) -> bool:
        """Whether a 404 ``proxy`` relayed for ``domain`` is to be asked of another proxy,
        with ``proxies`` in the ring and ``requests`` sent for ``domain`` (this one too)."""
        if proxies < 2:
            return False
        if len(self._run) >= _MAX_KEYS:
            self._run.clear()
        run = self._run[proxy] = self._run.get(proxy, 0) + 1
        if proxy in self._vouched and run % _RUN:
            return False
        doubted = self._doubted.get(domain, 0)
        if 2 * doubted > requests - doubted:
            return False
        if len(self._doubted) >= _MAX_KEYS:
            self._doubted.clear()
        self._doubted[domain] = doubted + 1
        return True

    def answered(self, proxy: str, status: int | None) -> None:
        """``proxy`` relayed an answer of ``status``: another than a 404 ends its run."""
        if status != 404:
            self._run.pop(proxy, None)

    def vouched(self, proxy: str) -> None:
        """Another proxy relayed the 404 ``proxy`` relayed: its 404s are the sites'."""
        if len(self._vouched) >= _MAX_KEYS:
            self._vouched.clear()
        self._vouched.add(proxy)
        self._run.pop(proxy, None)

    def refuted(self, proxy: str) -> None:
        """Another proxy relayed another answer where ``proxy`` relayed a 404."""
        self._vouched.discard(proxy)
