"""One read of each sitemap per cluster job: the workers' sitemap stages claim a sitemap in
Redis before they read it.

Every worker that learns a host's robots.txt would read the sitemaps it names: the owner of
the host's partition, a new owner after a partition moved, a worker that asked for the file
out of band. A claim lets one of them read each sitemap URL (:class:`SitemapClaims`)::

    gs:{J}:sitemap:<h>  STRING  worker reading it (expires after the claim timeout, so a
                                dead worker's read may be made again), then "done" (kept)

``h`` is the xxh3_64 of the sitemap's canonical URL, in hex; the key carries the job's hash
tag like the control plane's.
"""

from __future__ import annotations

import xxhash

from gossamer.frontier.redis.scripts import RedisClient

__all__ = ["SitemapClaims"]

_DONE = "done"


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
        """Whether this worker reads ``url`` now (no other read it or is reading it)."""
        return bool(await self._redis.set(self._key(url), self._worker, nx=True, ex=self._ttl))

    async def finish(self, url: str) -> None:
        """``url`` was read to its end: no worker reads it again in this job."""
        await self._redis.set(self._key(url), _DONE)
