"""A cluster job's content digests in Redis: every worker checks and fills one index, so a
page is a duplicate of whichever worker's page had its content first.

Key layout (``J`` the job; every key carries the job's hash tag ``{J}``, so the one script
touches one Redis Cluster slot)::

    gs:{J}:digest:exact     HASH   exact hash (16 hex) -> the first URL of that content
    gs:{J}:digest:near      HASH   SimHash (16 hex) -> the first URL of that SimHash
    gs:{J}:digest:counts    HASH   digested, exact, near (the job's totals)
    gs:{J}:digest:b:<i>:<v> SET    SimHashes whose band ``i`` has the value ``v`` (hex), at
                                   most :data:`~gossamer.digests.base.MAX_BUCKET` of them

``lua/digest.lua`` looks the digest up and, when no URL had the content, stores it, in one
atomic step: two workers racing with one content agree on the first. A reply is checked
before use; while Redis cannot be reached, pages are taken as no duplicates and the crawl goes
on (the worker reports the outage itself).
"""

from __future__ import annotations

import logging
from collections import Counter
from importlib import resources

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from gossamer.digests.base import (
    DEFAULT_THRESHOLD,
    MAX_BUCKET,
    MAX_THRESHOLD,
    Digest,
    DigestStats,
    Match,
    bands,
)

log = logging.getLogger(__name__)
_MAX_URL = 1 << 16
"""Bytes of a first URL in a reply past which the reply is not believed."""


def digest_keys(job: str) -> dict[str, str]:
    """The job's digest keys but the band sets (``band`` is their prefix)."""
    tag = f"gs:{{{job}}}:digest:"
    return {
        "exact": tag + "exact",
        "near": tag + "near",
        "counts": tag + "counts",
        "band": tag + "b:",
    }


class RedisDigests:
    """The job's digest index in Redis (one server or a Redis Cluster)."""

    def __init__(
        self, redis: Redis | RedisCluster, job: str, threshold: int = DEFAULT_THRESHOLD
    ) -> None:
        if not 0 <= threshold <= MAX_THRESHOLD:
            raise ValueError(f"threshold must be 0..{MAX_THRESHOLD}, not {threshold}")
        source = resources.files("gossamer.digests") / "lua" / "digest.lua"
        self._script = redis.register_script(source.read_text("utf-8"))
        self._keys = digest_keys(job)
        self._threshold = threshold
        self._counts: Counter[str] = Counter()
        self._down = False

    async def check(self, url: str, digest: Digest) -> Match | None:
        """As :meth:`gossamer.digests.base.DigestIndex.check`."""
        keys = self._keys
        near = digest.near
        band_keys = [
            f"{keys['band']}{band >> 64}:{band & ((1 << 64) - 1):x}"
            for band in (bands(near, self._threshold) if near is not None else ())
        ]
        args: list[str | int] = [
            f"{digest.exact:016x}",
            "" if near is None else f"{near:016x}",
            url,
            self._threshold,
            MAX_BUCKET,
        ]
        try:
            reply = await self._script(
                keys=[keys["exact"], keys["near"], keys["counts"], *band_keys], args=args
            )
        except (RedisError, OSError) as exc:
            self._counts["unavailable"] += 1
            if not self._down:  # the outage itself is the cluster's to report (resilient)
                self._down = True
                log.debug("digests unavailable (%s); pages taken as no duplicates", exc)
            return None
        self._down = False
        self._counts["digested"] += 1
        match = _match(reply)
        if match is None or match.first == url:
            return None
        self._counts[match.kind] += 1
        return match

    def stats(self) -> DigestStats:
        """This worker's checks (the job's totals are in ``gs:{J}:digest:counts``)."""
        return DigestStats(self._counts["digested"], self._counts["exact"], self._counts["near"])


def _match(reply: object) -> Match | None:
    """The script's reply as a match, None for none or for a reply that is not one."""
    if not isinstance(reply, list) or len(reply) != 3:
        return None
    kind, first, distance = reply
    if kind not in (b"exact", b"near") or not isinstance(first, bytes) or not first:
        return None
    if len(first) > _MAX_URL or not isinstance(distance, int) or not 0 <= distance <= 64:
        return None
    return Match(
        "exact" if kind == b"exact" else "near", first.decode("utf-8", "replace"), distance
    )
