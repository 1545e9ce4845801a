"""One read of each sitemap per cluster job (a continuous job's: one at a time, again each
interval): the workers' sitemap stages claim a sitemap in Redis before they read it.

Every worker that learns a host's robots.txt would read the sitemaps it names: the owner of
the host's partition, a new owner after a partition moved, a worker that asked for the file
out of band. A claim lets one of them read each sitemap URL (:class:`SitemapClaims`)::

    gs:{J}:sitemap:<h>  STRING  worker reading it (expires after the claim timeout, so a
                                dead worker's read may be made again), then "done" (kept;
                                in a continuous job until the next read is due)

A worker that finds a sitemap claimed by another waits for it (polling, with backoff, for at
most the claim timeout): the other finishes it, or lets it go (a worker that stops in the
middle of a read gives its claims back, so the host's new owner reads it), or dies (its claim
expires). A sitemap is never left unread because its reader left.

A continuous job (``--recrawl``) reads each sitemap again one interval after its last read
began, as the embedded backend does (``reread``: the initial revisit interval of its URL).
The reader's "done" expires then, so the next worker to claim it reads it; a worker that finds
the sitemap claimed or done does not wait but is told when to ask again (:meth:`later`: the
key's time to live), so every worker that learned of the sitemap asks when it is due and
exactly one of them reads it, whichever workers come and go: the schedule lives in Redis,
not in the worker that read last. A claim repeated after a reply lost to an outage (the
worker's Redis guard repeats it) finds its own name and holds.

A claim key of another type (a HASH where the STRING goes: an operator's mistake, or hostile)
is no reason to stop nor to skip the sitemap: the worker asking reads it without a claim (the
host's owner, which alone reads its sitemaps while it owns it), warns once, and its
``finish`` writes the key as a STRING again (SET replaces a key of any type), which mends it.

``h`` is the xxh3_64 of the sitemap's canonical URL (a password in it masked: a hash of a
short password could be reversed by trying them all), in hex; the key carries the job's hash
tag like the control plane's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import xxhash

from gossamer.frontier.redis.credentials import masked_url
from gossamer.frontier.redis.faults import faulty
from gossamer.frontier.redis.scripts import RedisClient

__all__ = ["SitemapClaims"]

_DONE = "done"
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
"""Delete a claim only if this worker holds it (not "done", not another's)."""
_CLAIM_AGAIN = """
local holder = redis.call('GET', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if not holder or holder == ARGV[1] or left == -1 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return -3
end
return left
"""
"""A continuous job's claim: -3 once this worker holds it (taken now, already its own, or
"done" for good by a run of the job that ended), else the milliseconds until the holder's
claim or the last read's "done" expires."""
_CLAIMED = -3
_FIRST_WAIT = 0.25
_LONGEST_WAIT = 5.0

log = logging.getLogger(__name__)


class SitemapClaims:
    """Claims of sitemap reads for ``worker`` in ``job``; a claim lasts ``ttl`` seconds
    unless finished. ``reread`` (a continuous job): the seconds from a read's start to the
    next read of a sitemap URL."""

    def __init__(
        self,
        redis: RedisClient,
        job: str,
        worker: str,
        ttl: float,
        *,
        reread: Callable[[str], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = redis
        self._prefix = f"gs:{{{job}}}:sitemap:"
        self._worker = worker
        self._ttl = max(1, round(ttl))
        self._reread = reread
        self._clock = clock
        self._began: dict[str, float] = {}
        """The start of each read this worker holds (a continuous job's), by URL."""
        self._wait: dict[str, float] = {}
        """Seconds until the sitemaps another worker holds or read may be claimed, by URL."""
        self._claim_again = redis.register_script(_CLAIM_AGAIN)
        self._release = redis.register_script(_RELEASE)
        self._warned = False

    def _key(self, url: str) -> str:
        return self._prefix + xxhash.xxh3_64_hexdigest(masked_url(url).encode())

    async def claim(self, url: str) -> bool:
        """Whether this worker reads ``url`` now: True once it holds the claim, False if the
        sitemap was read to its end (a continuous job's: or is being read or was read, and
        :meth:`later` says when to ask again); while another worker holds it, a job that ends
        waits (see the module docstring)."""
        try:
            return await (
                self._claim_now(url) if self._reread is not None else self._claim_or_wait(url)
            )
        except Exception as exc:
            if not faulty(exc):
                raise
            self._wrong_type(url, exc)
            if self._reread is not None:
                self._began[url] = self._clock()
            return True

    def _wrong_type(self, url: str, error: object) -> None:
        """Redis refused ``url``'s claim key for its type: read without a claim, said once."""
        if not self._warned:
            self._warned = True
            log.warning(
                "sitemap claim %s of %s unusable (%s): read without a claim, its finish "
                "writes the key again",
                self._key(url),
                masked_url(url)[:200],
                error,
                extra={"event": "sitemap-claim-unusable", "key": self._key(url)},
            )

    async def _claim_or_wait(self, url: str) -> bool:
        """A job that ends: ``url``'s claim taken, or False once it was read (waiting for the
        worker reading it)."""
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

    async def _claim_now(self, url: str) -> bool:
        began = self._clock()
        left = int(
            await self._claim_again(keys=[self._key(url)], args=[self._worker, self._ttl * 1000])
        )
        if left == _CLAIMED:
            self._began[url] = began
            self._wait.pop(url, None)
            return True
        self._wait[url] = max(left, 0) / 1000
        return False

    def later(self, url: str) -> float | None:
        """A continuous job's: the seconds after which ``url``, found claimed or read by the
        last :meth:`claim`, may be claimed again (None: not a continuous job)."""
        return self._wait.pop(url, None)

    async def release(self, url: str) -> None:
        """Give back the claim of a read this worker did not finish."""
        self._began.pop(url, None)
        await self._refusing(self._release(keys=[self._key(url)], args=[self._worker]))

    @staticmethod
    async def _refusing(call: Awaitable[object]) -> None:
        """Await ``call``; a key of another type (nothing to give back) is let be."""
        try:
            await call
        except Exception as exc:
            if not faulty(exc):
                raise

    async def finish(self, url: str) -> None:
        """``url`` was read to its end: no worker reads it again in this job (a continuous
        job's: until one interval after this read began)."""
        began = self._began.pop(url, None)
        if self._reread is None or began is None:
            await self._redis.set(self._key(url), _DONE)
            return
        left = began + self._reread(url) - self._clock()
        await self._redis.set(self._key(url), _DONE, px=max(1, round(left * 1000)))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
