"""Where the Redis frontier keeps a job, and how a queue entry is written there.

Key layout (``J`` the job, ``p`` a partition). Every key of partition ``p`` carries the hash
tag ``{J:p}``, so a partition lives in one Redis Cluster slot and each script touches one slot
only::

    gs:{J:p}:seen       SET    fingerprints ever added (exact: a false positive would skip a
                               page; integers, so small partitions use Redis' compact intset)
    gs:{J:p}:queue      LIST   entries waiting, FIFO: RPUSH on add, LPUSH to give back to the
                               front, LPOP to claim (while every entry has priority 0)
    gs:{J:p}:ranked     ZSET   entries waiting, best first, once the partition met an entry
                               with a priority other than 0 (its list moved here then, once):
                               score -priority, member "<order>|<entry>" (16 characters of
                               order: arrival, or the front of the priority for an entry given
                               back); claimed lowest score first (``lua/_ranked.lua``)
    gs:{J:p}:ranks      HASH   fingerprint -> member of ``ranked`` (``reprioritize``)
    gs:{J:p}:claimed    HASH   claim token -> entry held by some worker
    gs:{J:p}:deadlines  ZSET   claim token -> wall-clock deadline (renewed while held)
    gs:{J:p}:counts     HASH   queued, claimed, seen, finished; token (last claim token issued);
                               ranked (1 once ranked), order and front (order counters)
    gs:{J:p}:fence      HASH   worker -> "ms:seq": Redis-clock ms before which no new owner
                               may claim, and the sequence of the worker's last fence call
    gs:{J:p}:pages      HASH   host key -> pages taken, for hosts with a page budget whose
                               partition is p (see :mod:`.pages`)
    gs:{J:p}:revisits   HASH   fingerprint -> revisit state of a page fetched, packed (a
                               continuous crawl's, see :mod:`.revisits`)
    gs:{J:p}:due        ZSET   fingerprint -> wall-clock time its revisit is due (a page not
                               out: neither queued nor claimed)

Job-level keys, tagged ``{J}`` like the control plane's::

    gs:{J}:bad          LIST   bad entries as JSON {partition, reason, entry}, newest first
    gs:{J}:bad:count    STRING how many entries were ever set aside

The shared limiter of ``partition_by="url"`` keeps each host ``h`` (its host key's xxh3_64,
in hex) under its own hash tag ``{J:h:h}`` (see :mod:`.limiter`)::

    gs:{J:h:h}:slots    ZSET   holder -> deadline
    gs:{J:h:h}:pace     HASH   next (earliest next request start), delay

An entry is ``fp|depth|hops|attempts|not_before|url``, or with a priority other than 0
``fp|depth|hops|attempts|not_before|priority|url`` (a URL starts with ``http``, a number never
does): ``not_before`` is the wall-clock time before which a retried URL may not be fetched.
What comes off Redis is checked where it is decoded (:meth:`Entry.decode`): an entry that
does not decode raises :class:`BadEntry` and is set aside (see :mod:`.claims`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import xxhash

from gossamer.frontier.hosts import Queued
from gossamer.urls import fingerprint, host_key

if TYPE_CHECKING:
    from gossamer.frontier.admission import Admitted

_MAX_URL = 1 << 20
"""Characters of an entry's URL beyond which it is bad, whatever the job's max URL length."""
_FINGERPRINT = re.compile(r"-?\d{1,19}")
_COUNT = re.compile(r"\d{1,9}")


@dataclass(frozen=True, slots=True)
class Ownership:
    """The partitions one worker owns, as of one version of the job's assignment: a value
    the owner of the assignment hands to :meth:`RedisFrontier.own`."""

    partitions: frozenset[int]
    version: int = 0

    @classmethod
    def every(cls, partitions: int) -> Ownership:
        """Every partition: a frontier alone on its job."""
        return cls(frozenset(range(partitions)))


def partition_of(key: str, partitions: int) -> int:
    """The partition of a host key (``scheme://host[:port]``)."""
    return xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % partitions


def partition_keys(job: str, part: int) -> dict[str, str]:
    """The Redis keys of one partition, all with the hash tag ``{job:part}``."""
    tag = f"gs:{{{job}:{part}}}:"
    names = (
        *("seen", "queue", "claimed", "deadlines", "counts", "fence", "ranked", "ranks", "pages"),
        *("revisits", "due"),
    )
    return {name: tag + name for name in names}


def bad_keys(job: str) -> dict[str, str]:
    """The job's keys of set-aside entries (``entries`` LIST, ``count`` STRING), tag ``{job}``."""
    return {"entries": f"gs:{{{job}}}:bad", "count": f"gs:{{{job}}}:bad:count"}


def host_keys(job: str, key: str) -> dict[str, str]:
    """The Redis keys of one host's shared limiter (url mode), with the hash tag ``{job:h:…}``."""
    digest = xxhash.xxh3_64_hexdigest(key.encode("utf-8", "surrogatepass"))
    tag = f"gs:{{{job}:h:{digest}}}:"
    return {name: tag + name for name in ("slots", "pace")}


class PartitionKeys:
    """The keys of each partition of one job, built once per partition."""

    def __init__(self, job: str) -> None:
        if "{" in job or "}" in job or not job:
            raise ValueError(f"job name {job!r} must be non-empty and free of braces")
        self.job = job
        self._keys: dict[int, dict[str, str]] = {}

    def __call__(self, part: int) -> dict[str, str]:
        keys = self._keys.get(part)
        if keys is None:
            keys = self._keys[part] = partition_keys(self.job, part)
        return keys

    def of(self, part: int, *names: str) -> list[str]:
        """The keys ``names`` of ``part``, in that order (a script's KEYS)."""
        keys = self(part)
        return [keys[name] for name in names]


class BadEntry(ValueError):
    """A queue entry from Redis that does not decode; it is set aside (see :mod:`.claims`)."""


@dataclass(slots=True, kw_only=True)
class Entry(Queued):
    """A claimed entry: where it came from in Redis, and when it may be fetched."""

    not_before: float
    part: int
    claim: int
    orphan: bool = False
    """Its partition was given away while it was leased: it goes back to Redis when it
    returns."""

    def encode(self) -> str:
        return encode(self, self.not_before)

    @classmethod
    def decode(cls, raw: bytes | str, part: int, claim: int) -> Entry:
        """The entry ``raw`` from Redis; :class:`BadEntry` saying why when it is malformed."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            raise BadEntry("not UTF-8") from None
        fields = text.split("|", 5)
        if len(fields) != 6:
            raise BadEntry(f"{len(fields)} fields, not 6")
        fp, *counts, not_before, url = fields
        priority = 0.0
        if not url.startswith("http"):
            number, _, url = url.partition("|")
            priority = _number(number, "priority")
        if not _FINGERPRINT.fullmatch(fp) or not -(1 << 63) <= int(fp) < 1 << 63:
            raise BadEntry("the fingerprint is not a 64-bit integer")
        if not all(_COUNT.fullmatch(n) for n in counts):
            raise BadEntry("depth, hops or attempts is not a small count")
        when = _number(not_before, "not_before")
        _check_url(url)
        if int(fp) != fingerprint(url):
            raise BadEntry("the fingerprint is not the URL's")
        depth, hops, attempts = map(int, counts)
        return cls(
            url, int(fp), depth, hops, attempts, priority, not_before=when, part=part, claim=claim
        )


def encode(entry: Queued, not_before: float) -> str:
    """An entry as Redis keeps it (see the module docstring)."""
    head = f"{entry.fp}|{entry.depth}|{entry.hops}|{entry.attempts}|{not_before!r}"
    if entry.priority:
        return f"{head}|{entry.priority!r}|{entry.url}"
    return f"{head}|{entry.url}"


def new_entry(url: str, fp: int, depth: int, hops: int, priority: float) -> str:
    """The entry of a URL just admitted (no attempt, no not-before time): what :func:`encode`
    makes of it, without making a :class:`Queued` (a million seeds pass here)."""
    if priority:
        return f"{fp}|{depth}|{hops}|0|0.0|{priority!r}|{url}"
    return f"{fp}|{depth}|{hops}|0|0.0|{url}"


Batches = dict[int, list[str]]
"""Queue entries by partition, each ended by a newline (as ``add.lua`` takes them)."""


def batch_entries(
    admitted: Iterable[Admitted], sent: Container[int], partitions: int, *, by_url: bool
) -> tuple[Batches, set[int], list[int], int]:
    """The entries of admitted URLs not in ``sent`` (nor repeated in the batch), by partition;
    the partitions with a priority; the new URLs' fingerprints; the count of duplicates."""
    batches: Batches = {}
    ranked: set[int] = set()
    fps: set[int] = set()
    parts: dict[str, int] = {}  # a batch's URLs share few hosts: one hash per host
    duplicates = 0
    for url, key, fp, cand in admitted:
        if fp in fps or fp in sent:
            duplicates += 1
            continue
        fps.add(fp)
        entry = new_entry(url, fp, cand.depth, cand.hops, cand.priority)
        if by_url:
            part = fp % partitions
        elif (part := parts.get(key, -1)) < 0:
            part = parts[key] = partition_of(key, partitions)
        batches.setdefault(part, []).append(entry + "\n")
        if cand.priority:
            ranked.add(part)
    return batches, ranked, list(fps), duplicates


def _number(text: str, name: str) -> float:
    """A finite float of an entry; :class:`BadEntry` saying which field otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise BadEntry(f"{name} is not a number") from None
    if not math.isfinite(value):
        raise BadEntry(f"{name} is not finite")
    return value


def _check_url(url: str) -> None:
    """Raise :class:`BadEntry` unless ``url`` looks like a canonical http(s) URL."""
    if len(url) > _MAX_URL:
        raise BadEntry(f"URL of {len(url)} characters")
    if not url.startswith(("http://", "https://")):
        raise BadEntry("not an http(s) URL")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise BadEntry("URL with characters a canonical URL never has")
    if not host_key(url).partition("://")[2]:
        raise BadEntry("URL without a host")
