"""A cluster job's content digests in Redis: every worker checks and fills one index, so a
page is a duplicate of whichever worker's page had its content first.

The index is spread over :data:`SHARDS` hash tags ``{J:d<s>}`` (``J`` the job, ``s`` a hex
digit), so on a Redis Cluster it spreads over the masters instead of loading the slot of the
job's control keys. Key layout::

    gs:{J:d<s>}:digest:exact     HASH  exact hash (16 hex) -> the first URL of that content;
                                       ``s`` the exact hash's top 4 bits
    gs:{J:d<s>}:digest:counts    HASH  digested, exact, near: this shard's share of the job's
                                       totals (:func:`read_totals` adds them up)
    gs:{J:d<s>}:digest:near      HASH  SimHash (16 hex) -> the first URL of that SimHash;
                                       ``s`` the SimHash's top 4 bits
    gs:{J:d<s>}:digest:b:<i>:<v> SET   SimHashes whose band ``i`` has the value ``v`` (hex), at
                                       most :data:`~gossamer.digests.base.MAX_BUCKET` of them;
                                       ``s`` from ``i`` and ``v`` (:func:`band_key`)

A check is one pipeline, and a second one for a new content or a near match.
``lua/exact.lua`` looks the exact hash up and, when no URL had the content, stores this URL
as its first, in one atomic step in the exact hash's shard: two workers racing with one
content agree on the first. In the same pipeline ``lua/members.lua`` reads the SimHash's band
sets (they live in several shards); the nearest SimHash within the threshold, found here
rather than in Redis (Redis only hands the sets over), names the first URL (read from the near
map). With none, the SimHash joins the near map (``lua/near.lua``) and its band sets
(``lua/band.lua`` keeps each set bounded), in one pipeline. On one Redis server, which holds
every shard, the first pipeline is one ``lua/check.lua`` call, in which a new content whose
band sets are all empty (nothing can be near it) also joins the index, and the second one
``near.lua`` call: most pages cost one call, not five or ten (a plain client of a server in
cluster mode, refused such a call once, keeps to the pipelines). Two near (not exact) copies
checked at the same instant by two workers may both be taken as firsts: a near duplicate
missed, never a page dropped. A reply is checked before use. While Redis cannot be reached,
pages are taken as no duplicates and the crawl goes on (a worker's guard waits for Redis
first; see :mod:`gossamer.cluster.resilient`).
"""

from __future__ import annotations

import logging
from collections import Counter
from importlib import resources

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError, RedisClusterException, RedisError

from gossamer.digests.base import (
    DEFAULT_THRESHOLD,
    MAX_BUCKET,
    MAX_THRESHOLD,
    Digest,
    DigestStats,
    Match,
    bands,
)
from gossamer.frontier.redis.scripts import ScriptCall, run_scripts

log = logging.getLogger(__name__)
_MAX_URL = 1 << 16
"""Bytes of a first URL in a reply past which the reply is not believed."""
_MAX_MEMBERS = MAX_BUCKET * 4
"""Members of a band set in a reply past which the set is not read further."""
SHARDS = 16
"""Hash tags the index is spread over (a power of two: the top bits of a hash pick one)."""
_SHIFT = 64 - (SHARDS.bit_length() - 1)


def shard_tag(job: str, shard: int) -> str:
    """The key prefix of one shard of the job's index."""
    return f"gs:{{{job}:d{shard:x}}}:digest:"


def digest_keys(job: str, exact: int) -> dict[str, str]:
    """The exact map and counts of the shard of the exact hash ``exact``."""
    tag = shard_tag(job, exact >> _SHIFT)
    return {"exact": tag + "exact", "counts": tag + "counts"}


def near_key(job: str, near: int) -> str:
    """The near map (SimHash -> first URL) of the shard of the SimHash ``near``."""
    return shard_tag(job, near >> _SHIFT) + "near"


def band_key(job: str, band: int) -> str:
    """The set of SimHashes of one band value (``band``: its number << 64 | its value)."""
    number, value = band >> 64, band & ((1 << 64) - 1)
    shard = (value * 0x9E3779B1 + number) % SHARDS
    return f"{shard_tag(job, shard)}b:{number}:{value:x}"


async def read_totals(redis: Redis | RedisCluster, job: str) -> Counter[str]:
    """The job's digest totals (digested, exact, near), summed over the shards."""
    totals: Counter[str] = Counter()
    for shard in range(SHARDS):
        counts = await redis.hgetall(shard_tag(job, shard) + "counts")
        for name, value in counts.items():
            if isinstance(name, bytes) and isinstance(value, bytes) and value.isdigit():
                totals[name.decode("ascii", "replace")] += int(value[:18])
    return totals


class RedisDigests:
    """The job's digest index in Redis (one server or a Redis Cluster)."""

    def __init__(
        self, redis: Redis | RedisCluster, job: str, threshold: int = DEFAULT_THRESHOLD
    ) -> None:
        if not 0 <= threshold <= MAX_THRESHOLD:
            raise ValueError(f"threshold must be 0..{MAX_THRESHOLD}, not {threshold}")
        self._redis = redis
        self._scripts = {
            name: redis.register_script(_source(name))
            for name in ("exact", "check", "members", "near", "band")
        }
        self._job = job
        self._one_server = not isinstance(redis, RedisCluster)
        """Whether ``check.lua`` may read keys of several shards in one call."""
        self._threshold = threshold
        self._counts: Counter[str] = Counter()
        self._down = False

    async def check(self, url: str, digest: Digest) -> Match | None:
        """As :meth:`gossamer.digests.base.DigestIndex.check`."""
        try:
            match = await self._check(url, digest)
        except (RedisError, RedisClusterException, OSError) as exc:
            self._counts["unavailable"] += 1
            if not self._down:  # the outage itself is the cluster's to report (resilient)
                self._down = True
                log.debug("digests unavailable (%s); pages taken as no duplicates", exc)
            return None
        self._down = False
        self._counts["digested"] += 1
        if match is None or match.first == url:
            return None
        self._counts[match.kind] += 1
        return match

    async def _check(self, url: str, digest: Digest) -> Match | None:
        keys = digest_keys(self._job, digest.exact)
        reply, joined, sets = await self._look_up(url, digest, keys)
        first = _first(reply)
        if first is None:
            return None  # not a reply the scripts give
        if first and first != url:
            return Match("exact", first)
        near = digest.near
        if near is None or joined:
            return None
        match = await self._nearest(near, sets)
        if match is not None:
            if match.first != url:
                await self._redis.hincrby(keys["counts"], "near", 1)
            return match
        if not first:  # a new content: its SimHash joins the index
            await self._remember(url, near)
        return None

    async def _look_up(
        self, url: str, digest: Digest, keys: dict[str, str]
    ) -> tuple[object, bool, list[object]]:
        """The exact script's reply, whether the SimHash joined the index already (only
        ``check.lua`` does that) and the SimHash's band sets."""
        exact = [f"{digest.exact:016x}", url]
        calls: list[ScriptCall] = [(self._scripts["exact"], [keys["exact"], keys["counts"]], exact)]
        near = digest.near
        if near is not None:
            band_keys = [band_key(self._job, band) for band in bands(near, self._threshold)]
            if self._one_server:
                try:
                    return await self._look_up_here(exact, keys, near, band_keys)
                except ClusterCrossSlotError:
                    self._one_server = False  # a plain client of a server in cluster mode
            members = self._scripts["members"]
            calls += [(members, [key], [_MAX_MEMBERS]) for key in band_keys]
        reply, *sets = await run_scripts(self._redis, calls)
        return reply, False, sets

    async def _look_up_here(
        self, exact: list[str], keys: dict[str, str], near: int, band_keys: list[str]
    ) -> tuple[object, bool, list[object]]:
        """``_look_up`` in one ``check.lua`` call (one server: every shard is on it), made
        directly rather than as a pipeline of one."""
        script_keys = [keys["exact"], keys["counts"], near_key(self._job, near), *band_keys]
        args: list[str | int] = [*exact, f"{near:016x}", MAX_BUCKET, _MAX_MEMBERS]
        reply = await self._scripts["check"](keys=script_keys, args=args)
        if not isinstance(reply, list) or len(reply) < 2:
            return None, False, []
        first, joined, *sets = reply
        return first, joined == 1, sets

    async def _nearest(self, near: int, sets: list[object]) -> Match | None:
        """The first URL of the nearest SimHash of the band ``sets`` within the threshold."""
        best, distance = None, self._threshold + 1
        for members in sets:
            for member in members if isinstance(members, list) else ():
                other = _simhash(member)
                if other is not None and (d := (near ^ other).bit_count()) < distance:
                    best, distance = other, d
        if best is None:
            return None
        first = await self._redis.hget(near_key(self._job, best), f"{best:016x}")
        if not isinstance(first, bytes) or not first or len(first) > _MAX_URL:
            return None
        return Match("near", first.decode("utf-8", "replace"), distance)

    async def _remember(self, url: str, near: int) -> None:
        """The SimHash in the near map and its band sets (a second add of it changes nothing):
        one call on one server, else the band sets each by ``band.lua``."""
        hexed = f"{near:016x}"
        band_keys = [band_key(self._job, band) for band in bands(near, self._threshold)]
        near_map = near_key(self._job, near)
        args: list[str | int] = [hexed, url, MAX_BUCKET]
        if self._one_server:
            await self._scripts["near"](keys=[near_map, *band_keys], args=args)
            return
        band = self._scripts["band"]
        calls: list[ScriptCall] = [(self._scripts["near"], [near_map], args)]
        calls += [(band, [key], [hexed, MAX_BUCKET]) for key in band_keys]
        await run_scripts(self._redis, calls)

    def stats(self) -> DigestStats:
        """This worker's checks (the job's totals: :func:`read_totals`)."""
        return DigestStats(self._counts["digested"], self._counts["exact"], self._counts["near"])


def _source(name: str) -> str:
    """The source of ``lua/<name>.lua`` (after ``_exact.lua`` for the scripts that take the
    exact hash, ``_near.lua`` for those that add a SimHash to the index)."""
    lua = resources.files("gossamer.digests") / "lua"
    source = (lua / f"{name}.lua").read_text("utf-8")
    if name in ("near", "check"):
        source = (lua / "_near.lua").read_text("utf-8") + source
    if name in ("exact", "check"):
        source = (lua / "_exact.lua").read_text("utf-8") + source
    return source


def _first(reply: object) -> str | None:
    """The exact script's reply as a URL ('' for none), None for a reply that is not one."""
    if not isinstance(reply, bytes) or len(reply) > _MAX_URL:
        return None
    return reply.decode("utf-8", "replace")


def _simhash(member: object) -> int | None:
    """A band set's member as a SimHash, None for one gossamer never wrote."""
    if not isinstance(member, bytes) or len(member) != 16:
        return None
    try:
        return int(member, 16)
    except ValueError:
        return None
