"""One read of each sitemap per cluster job: the workers' sitemap stages claim a sitemap in
Redis before they read it.

Every worker that learns a host's robots.txt would read the sitemaps it names: the owner of
the host's partition, a new owner after a partition moved, a worker that asked for the file
out of band. A claim lets one of them read each sitemap URL (:class:`SitemapClaims`)::

    gs:{J}:sitemap:<h>  STRING  worker reading it (expires after the claim timeout, so a
                                dead worker's read may be made again), then "done" (kept)

A worker that finds a sitemap claimed by another waits for it (polling, with backoff, for at
most the claim timeout): the other finishes it, or lets it go (a worker that stops in the
middle of a read gives its claims back, so the host's new owner reads it), or dies (its claim
expires). A sitemap is never left unread because its reader left.

``h`` is the xxh3_64 of the sitemap's canonical URL, in hex; the key carries the job's hash
tag like the control plane's.
"""

from __future__ import annotations

import asyncio
import time

import xxhash

from gossamer.frontier.redis.scripts import RedisClient

__all__ = ["SitemapClaims"]

_DONE = "done"
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
"""Delete a claim only if this worker holds it (not "done", not another's)."""
_FIRST_WAIT = 0.25
_LONGEST_WAIT = 5.0


class SitemapClaims:
    """Claims of sitemap reads for ``worker`` in ``job``; a claim lasts ``ttl`` seconds
    unless finished."""

    def __init__(self, redis: RedisClient, job: str, worker: str, ttl: float) -> None:
        self._redis = redis
        self._prefix = f"gs:{{{job}}}:sitemap:"
        self._worker = worker
        self._ttl = max(1, round(ttl))

    def _key(self, url: str) -> str:
        return self._prefix + xxhash.xxh3_64_hexdigest(url.encode())

    async def claim(self, url: str) -> bool:
        """Whether this worker reads ``url`` now: True once it holds the claim, False if the
        sitemap was read to its end; while another worker holds it, waits (see the module
        docstring)."""
        key, wait = self._key(url), _FIRST_WAIT
        give_up = time.monotonic() + self._ttl + _LONGEST_WAIT
        while True:
            if await self._redis.set(key, self._worker, nx=True, ex=self._ttl):
                return True
            holder = await self._redis.get(key)
            if (holder is not None and _text(holder) == _DONE) or time.monotonic() > give_up:
                return False
            await asyncio.sleep(wait)  # another worker's read: no event reaches this one
            wait = min(wait * 2, _LONGEST_WAIT)

    async def release(self, url: str) -> None:
        """Give back the claim of a read this worker did not finish."""
        await self._redis.eval(_RELEASE, 1, self._key(url), self._worker)

    async def finish(self, url: str) -> None:
        """``url`` was read to its end: no worker reads it again in this job."""
        await self._redis.set(self._key(url), _DONE)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
