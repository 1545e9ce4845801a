"""The proxy pool's figures (`gossamer.fetch.proxies.ProxyPool.stats`): frozen snapshots, one
per proxy and one of the pool, as stats.json and ``/metrics`` read them."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["PoolStats", "ProxyStats", "State"]

State = Literal["unchecked", "live", "dead"]


class ProxyStats(msgspec.Struct, frozen=True):
    """One proxy's figures: requests sent through it and those that failed at the proxy,
    the mean time of its answered requests, its checked response time and its state."""

    proxy: str
    state: State
    requests: int
    failures: int
    mean_latency: float
    response_time: float | None


class PoolStats(msgspec.Struct, frozen=True):
    """A snapshot of the pool: its proxies, and requests that found no live proxy or were
    tried again through another proxy."""

    proxies: tuple[ProxyStats, ...]
    retries: int
    unserved: int
    waiting: bool = False
    """No proxy is live (after the first checks): the crawl waits for the next check."""
    waits: int = 0
    """Times the pool has had no live proxy left."""

    @property
    def live(self) -> int:
        """Proxies in the ring."""
        return sum(p.state == "live" for p in self.proxies)

    def as_json(self) -> dict[str, Any]:
        """The snapshot as stats.json holds it."""
        return {
            "live": self.live,
            "waiting": self.waiting,
            "waits": self.waits,
            "retries": self.retries,
            "unserved": self.unserved,
            "proxies": [
                {
                    "proxy": p.proxy,
                    "state": p.state,
                    "requests": p.requests,
                    "failures": p.failures,
                    "mean_latency": round(p.mean_latency, 4),
                    "response_time": None if p.response_time is None else round(p.response_time, 4),
                }
                for p in self.proxies
            ],
        }
