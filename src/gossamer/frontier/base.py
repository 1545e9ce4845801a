"""The frontier contract every backend (embedded, Redis) fulfils.

Lease rules:

* ``add`` canonicalizes, scopes and deduplicates URLs, then queues the new ones per host.
* ``lease(n)`` hands out at most ``n`` URLs whose host is due: fewer than ``per_host`` of the
  host's URLs are leased, and the host's next request start (configured delay, robots
  Crawl-delay, adaptive slow-down, Retry-After) has come. Each lease has a deadline; a lease
  whose deadline passes is reclaimed by the backend and queued again.
* Every lease ends in exactly one of ``ack`` (finished: its record is written),
  ``retry`` (queued again, one more attempt, not before a delay) or ``release`` (queued again
  at the front of its host with no attempt counted, e.g. after the host's robots.txt was
  fetched or at shutdown). Each takes the :class:`Feedback` of the request made, if any, so
  the host's politeness slot can schedule the next start from the real start time.
* Nothing leaves durable state before its ack: a crash loses no URL; URLs leased at a crash
  are leased again.
* ``done()``: nothing queued, nothing leased, nothing waiting for a retry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Candidate:
    """A URL on its way into the frontier (not yet canonical)."""

    url: str
    depth: int = 0
    hops: int = 0
    """Redirect hops that led to this URL."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A URL handed to a fetcher until ack, retry, release or the deadline."""

    url: str
    fp: int
    host: str
    depth: int
    hops: int
    attempts: int
    """Attempts already made before this lease."""
    deadline: float
    token: int
    robots_blocked: bool = False
    """robots.txt forbids this URL: record it and ack with no feedback; no slot is used."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """What a request told about its host, for the politeness slot."""

    started_at: float | None = None
    """Clock time the request was sent; None when no request was made."""
    elapsed: float = 0.0
    failed: bool = False
    """Server error, timeout or connection failure."""
    retry_after: float | None = None
    """Seconds the server asked the whole host to pause (429/503 Retry-After)."""
    crawl_delay: float | None = None
    """The host's robots.txt Crawl-delay, when known."""


@dataclass(frozen=True, slots=True)
class AddResult:
    """How a batch of candidates fared."""

    added: int = 0
    duplicates: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FrontierStats:
    """Frozen snapshot of a frontier."""

    queued: int
    leased: int
    delayed: int
    hosts: int
    seen: int
    duplicates: int
    rejected: dict[str, int]
    active_hosts: int = 0
    """Hosts in the working set, scheduled now (the embedded frontier; see its doc)."""
    set_aside: int = 0
    """Malformed entries this frontier met in its durable queue and moved aside."""


class Frontier(Protocol):
    """The frontier contract; see the module docstring for the lease rules."""

    async def add(self, candidates: list[Candidate]) -> AddResult:
        """Canonicalize, scope, dedup and queue candidates."""
        ...

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` ready URLs (plus any robots-blocked ones met on the way)."""
        ...

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease: its record has been handed to the sinks."""
        ...

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Queue the URL again, not before ``after`` seconds, one more attempt counted."""
        ...

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted."""
        ...

    def next_ready(self) -> float | None:
        """Seconds until some URL may be leasable; None when nothing is queued."""
        ...

    def done(self) -> bool:
        """Nothing queued, leased or waiting."""
        ...

    def stats(self) -> FrontierStats:
        """A frozen snapshot."""
        ...
