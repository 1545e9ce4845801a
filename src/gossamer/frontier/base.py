"""The frontier contract every backend (embedded, Redis) fulfils.

Lease rules:

* ``add`` admits URLs (canonicalize, scope, fingerprint: :mod:`gossamer.frontier.admission`),
  drops the ones seen before, then queues the new ones per host: the highest ``priority``
  first, in arrival order among equals (all 0 by default: breadth first inside a host).
* ``lease(n)`` hands out at most ``n`` leases that use a slot of their host (``page`` and
  ``robots`` ones) whose host is due: fewer than ``per_host`` of the host's requests are out,
  and the host's next request start (configured delay, robots Crawl-delay, adaptive
  slow-down, Retry-After) has come. It may add any number of ``blocked`` and
  ``unreachable`` leases, which use no slot. Each lease has a deadline; a lease whose
  deadline passes is reclaimed by the backend and queued again.
* robots.txt is one stage of the frontier: a host's URLs are held until its rules are known.
  While they are not, the host's next slot goes to one ``robots`` lease (the host's
  ``/robots.txt``, never more than one at a time); the engine fetches it into the robots.txt
  cache and ends the lease with ``rules``, with the rules found (an ``unreachable`` status
  when there was no usable answer). Then the host's URLs go out as ``page`` leases, those the
  rules forbid as ``blocked`` ones (recorded, no request); while the rules are unreachable,
  as ``unreachable`` ones (retried after ``--robots-retry`` or recorded). No page lease needs
  a second look at robots.txt.
* Every lease of a URL ends in exactly one of ``ack`` (finished: its record is written),
  ``retry`` (queued again, one more attempt, not before a delay) or ``release`` (queued again
  at the front of its host with no attempt counted, e.g. at shutdown). Each takes the
  :class:`Feedback` of the request made, if any, so the host's politeness slot can schedule
  the next start from the real start time. A ``robots`` lease ends with ``rules`` (or
  ``release``, its rules still unknown).
* Priorities (``Candidate.priority``, higher first, all 0 by default) order the URLs best
  first within each host and across hosts: of the hosts due now, the one whose next URL is
  best goes first. While the best queued URL's host is not due (its delay, Crawl-delay or
  connection limit), URLs worse than it by more than the frontier's ``slack`` (a share of its
  priority when that is 0.5 or more) wait too, so a page budget is not spent on far worse URLs
  meanwhile. Politeness is never traded for priority. A URL keeps its priority through
  retries, releases, reclaims, ``--resume`` and (Redis) partition hand-over;
  ``reprioritize`` changes the priorities of URLs still queued.
  While every priority is 0 the frontier serves hosts in the order they become due
  (breadth first), at no extra cost.
* Nothing leaves durable state before its ack: a crash loses no URL; URLs leased at a crash
  are leased again.
* ``done()``: nothing queued, nothing leased, nothing waiting for a retry. It may await its
  backend's storage and may answer False for a while after the last URL ended (a shared
  backend looks at the whole job at most so often), never True early.
* What ``lease()`` may do: end leases whose deadline passed, and await I/O of its backend's
  own storage to get URLs to hand out (read queued URLs back from crawl.db, claim entries from
  Redis, take host slots from a shared limiter). It starts no task and leaves no I/O running
  when it returns, and does no periodic upkeep: renewing, reclaiming and refreshing a shared
  backend's state is its owner's job, through the backend's own methods (for the Redis
  frontier, the cluster worker's keeper).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Literal, Protocol, get_args, overload

import msgspec


class Candidate(msgspec.Struct):
    """A URL on its way into the frontier (not yet canonical). One is made per outlink: the
    frontier's values are msgspec Structs, made in C, where a dataclass's ``__init__`` runs
    in Python (and its generated methods are compiled at every start)."""

    url: str
    depth: int = 0
    hops: int = 0
    """Redirect hops that led to this URL."""
    priority: float = 0.0
    """Higher first, inside its host and across hosts (see the module docstring); arrival
    order among equals. A finite number (a focused crawl's relevance, 0..1)."""
    seed: bool = False
    """Given by the user (a seed), not found by the crawl (a link, redirect, canonical URL or
    sitemap entry): only a seed may carry a user name and password of its own."""


class Outlinks(Sequence[Candidate]):
    """The links of one page as candidates, all at one depth with no priority: what a crawl
    adds most (a hundred and more per page, most of them seen before). Each `Candidate` is
    made when it is read, so a frontier that drops the URLs it added lately unread (the
    embedded one) makes a candidate of the new ones only. ``source`` is the page's URL
    (None: not known), which the trap guards read a line of descent from."""

    __slots__ = ("depth", "source", "urls")

    def __init__(self, urls: list[str], depth: int, source: str | None = None) -> None:
        self.urls = urls
        self.depth = depth
        self.source = source

    def __len__(self) -> int:
        return len(self.urls)

    @overload
    def __getitem__(self, index: int) -> Candidate: ...

    @overload
    def __getitem__(self, index: slice) -> Outlinks: ...

    def __getitem__(self, index: int | slice) -> Candidate | Outlinks:
        if isinstance(index, slice):
            return Outlinks(self.urls[index], self.depth, self.source)
        return Candidate(self.urls[index], self.depth)

    def __iter__(self) -> Iterator[Candidate]:
        depth = self.depth
        return (Candidate(url, depth) for url in self.urls)


LeaseKind = Literal["page", "robots", "blocked", "unreachable", "budget"]
"""What a lease asks of the engine: ``page`` fetch the URL; ``robots`` fetch the host's
robots.txt and end the lease with ``rules``; ``blocked`` robots.txt forbids the URL: record
it and ack with no feedback; ``unreachable`` the host's robots.txt could not be fetched:
retry the URL or record it; ``budget`` the host's page budget is spent
(:mod:`gossamer.frontier.budgets`): record it and ack with no feedback. Only ``page`` and
``robots`` leases use a slot of their host."""


class Lease(msgspec.Struct, frozen=True):
    """A URL (or a host's robots.txt) handed to a fetcher until it ends or its deadline."""

    url: str
    fp: int
    host: str
    depth: int
    hops: int
    attempts: int
    """Attempts already made before this lease."""
    deadline: float
    token: int
    kind: LeaseKind = "page"


class Feedback(msgspec.Struct, frozen=True):
    """What a request told about its host, for the politeness slot."""

    started_at: float | None = None
    """Clock time the request was sent; None when no request was made."""
    elapsed: float = 0.0
    """Seconds until the response head came (the host's latency; ``FetchResult.latency``)."""
    failed: bool = False
    """Server error, timeout or connection failure."""
    retry_after: float | None = None
    """Seconds the server asked the whole host to pause (429/503 Retry-After)."""
    crawl_delay: float | None = None
    """The host's robots.txt Crawl-delay, when known."""


class Rules(Protocol):
    """A host's robots.txt rules as the frontier applies them
    (:class:`~gossamer.frontier.robots.RobotsPolicy` is one)."""

    @property
    def status(self) -> str:
        """``unreachable`` when robots.txt could not be fetched (the host's URLs go out as
        ``unreachable`` leases)."""
        ...

    @property
    def crawl_delay(self) -> float | None: ...

    def allowed(self, url: str) -> bool:
        """May ``url`` (on this host) be fetched?"""
        ...


class AddResult(msgspec.Struct, frozen=True):
    """How a batch of candidates fared."""

    added: int = 0
    duplicates: int = 0
    rejected: dict[str, int] = msgspec.field(default_factory=dict)


class FrontierStats(msgspec.Struct, frozen=True):
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


WaitReason = Literal["retry-after", "crawl-delay", "back-off", "delay", "limit", "limiter"]
"""Why a host is held back (:attr:`HeldBack.reason`; the progress line and ``/metrics`` show
these strings): ``retry-after`` (paused by the host's Retry-After), ``crawl-delay`` (its
robots.txt asks for it), ``back-off`` (slowed down for its errors or latency), ``delay`` (the
configured one), ``limit`` (its connections are all in use) or ``limiter`` (the cluster's
shared host limiter refused it a slot)."""
WAIT_REASONS: frozenset[WaitReason] = frozenset(get_args(WaitReason))
"""Every :data:`WaitReason`."""
POLITE_REASONS: frozenset[WaitReason] = frozenset({"delay", "crawl-delay", "limit"})
"""Reasons of a host waiting at its polite pace, not backing off (:func:`waiting`)."""


class HeldBack(msgspec.Struct, frozen=True):
    """A host politeness holds back (see :meth:`Frontier.held_back`)."""

    host: str
    reason: WaitReason
    wait: float
    """Seconds until its next request may start."""
    queued: int
    in_flight: int


def waiting(held: Iterable[HeldBack]) -> tuple[int, int]:
    """Hosts held back: (at their polite pace, backing off: slowed down by errors or latency,
    or paused by a Retry-After or a limiter)."""
    polite = backing_off = 0
    for host in held:
        if host.reason in POLITE_REASONS:
            polite += 1
        else:
            backing_off += 1
    return polite, backing_off


class Frontier(Protocol):
    """The frontier contract; see the module docstring for the lease rules."""

    async def add(self, candidates: Sequence[Candidate]) -> AddResult:
        """Canonicalize, scope, dedup and queue candidates (a list, or a page's `Outlinks`)."""
        ...

    async def reprioritize(self, priorities: Mapping[str, float]) -> int:
        """Give URLs still queued (not leased, not finished) new priorities; returns how many
        changed.

        Keys are URLs as they were passed in :attr:`Candidate.url`; they are canonicalized as
        ``add`` does, and URLs not queued (unknown, leased, finished, invalid) are skipped.
        A URL keeps its arrival order among its new equals. Costs about the queue length of
        the hosts named (embedded) or one batched script per partition (Redis).
        """
        ...

    async def lease(self, n: int) -> list[Lease]:
        """Up to ``n`` leases that use a slot, plus any that do not met on the way. May await
        the backend's storage I/O; starts no task (see the module docstring)."""
        ...

    async def ack(self, lease: Lease, feedback: Feedback | None) -> None:
        """Finish a lease: its record has been handed to the sinks."""
        ...

    async def retry(self, lease: Lease, after: float, feedback: Feedback | None) -> None:
        """Queue the URL again, not before ``after`` seconds, one more attempt counted."""
        ...

    async def release(self, lease: Lease, feedback: Feedback | None) -> None:
        """Queue the URL again at the front of its host, no attempt counted (a ``robots``
        lease: its host's rules are still unknown)."""
        ...

    async def rules(self, lease: Lease, rules: Rules, feedback: Feedback | None) -> None:
        """End a ``robots`` lease with the rules its host's robots.txt gave."""
        ...

    def budget_spent(self, key: str) -> bool:
        """Whether host ``key``'s page budget is spent (:mod:`gossamer.frontier.budgets`):
        ``add`` turns its new URLs away (``budget``)."""
        ...

    def next_ready(self) -> float | None:
        """Seconds until some URL may be leasable; None when nothing is queued."""
        ...

    async def done(self) -> bool:
        """Nothing queued, leased or waiting (see the module docstring)."""
        ...

    def stats(self) -> FrontierStats:
        """A frozen snapshot."""
        ...

    def held_back(self, most: int | None = 10) -> list[HeldBack]:
        """Up to ``most`` (None: all) hosts with URLs that politeness holds back now, the
        longest wait first, each with its reason. Costs a walk over the scheduled hosts: for
        a status file or a metrics scrape, not for every snapshot."""
        ...
