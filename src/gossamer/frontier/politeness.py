"""Per-host politeness slots: how many requests in flight, and when the next may start.

The delay between two request starts on one host is the largest of the configured delay, the
host's robots.txt Crawl-delay, and an adaptive delay. The adaptive delay follows the host's
error rate (an exponentially weighted mean of failures: ``failure_delay * rate / (1 - rate)``,
so 50% failures wait ``failure_delay``, 90% nine times that) and its latency (a host whose mean
response time passes ``slow_latency`` gets one request per response time). The response time
is the feedback's ``elapsed``: the time to the response head (``FetchResult.latency``), not to
the end of the body, whose length says how big the body was or how slowly the server chose to
send it, not how loaded the host is (a large sitemap, or one dripped until ``total_timeout``,
would otherwise slow every later page of the host). A Retry-After pauses the whole host.

A Crawl-delay is capped at ``max_crawl_delay`` (60 s by default): a host asking for more
(``Crawl-delay: 86400`` would take a day per page, so a crawl would never end) is fetched at
the cap, and the cap is logged once for the host. Fetching at the cap rather than giving the
host up keeps its pages in the crawl, at a pace most sites that set a delay accept.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable

import msgspec

from gossamer.frontier.base import Feedback, WaitReason

_LATENCY_ALPHA = 0.3
_ERROR_ALPHA = 0.2
_NEGLIGIBLE = 0.01

log = logging.getLogger(__name__)


class DomainSlot(msgspec.Struct):
    """The requests in flight over the hosts of one registrable domain, and its hosts that
    wait for one of them to end (:class:`gossamer.frontier.domains.DomainShare`); its hosts
    in the working set, and those waiting for one of them to leave it."""

    name: str
    """The domain (or, until the Public Suffix List is read, the last two labels)."""
    host: str
    """The first host named into it (its name is worked out again from this one)."""
    active: int = 0
    parked: dict[str, None] | None = None
    """Keys of its hosts due while it was full, the longest waiting first."""
    gone: bool = False
    """Dropped from the share (idle): a slot pointing here takes the live one next time."""
    wake: Callable[[DomainSlot], None] | None = None
    """Called when one of its requests ends while hosts are parked."""
    members: int = 0
    """Its hosts in the scheduler's working set (:mod:`gossamer.frontier.workingset`)."""
    joining: deque[str] | None = None
    """Keys of its hosts that came to join the working set while it held its share of it,
    the first come first."""


class HostSlot(msgspec.Struct):
    """Politeness state of one host (scheme://host:port)."""

    active: int = 0
    next_start: float = 0.0
    crawl_delay: float = 0.0
    error_rate: float = 0.0
    """Exponentially weighted mean of failures (1) and successes (0)."""
    latency: float | None = None
    """Exponentially weighted mean response time, seconds."""
    requests: int = 0
    failures: int = 0
    paused_until: float = 0.0
    """Not before this time: the host's last ``Retry-After``."""
    pages_owed: bool = True
    """No page has started since the host's last request set aside for its pages (a
    sitemap's, :meth:`gossamer.frontier.slotclaims.SlotClaims.claim`): the next slot goes to
    a page if one is waiting. True at first: a host's seed goes before its sitemaps."""
    owed_until: float = 0.0
    """When a page's turn lapses, once an aside request finds one owed (0: not yet set)."""
    domain: DomainSlot | None = None
    """Its registrable domain's share, once it has had a request with domains capped."""


class PolitenessPolicy(msgspec.Struct, frozen=True):
    """The rules every slot follows."""

    per_host: int = 2
    per_domain: int | None = None
    """Requests in flight over the hosts of one registrable domain (None: no cap)."""
    delay: float = 0.0
    slow_latency: float = 2.0
    """Mean latency above which the host gets one request per latency period."""
    failure_delay: float = 0.5
    """Adaptive delay at a 50% error rate."""
    max_delay: float = 60.0
    """Cap of the adaptive delay."""
    max_crawl_delay: float = 60.0
    """Cap of a robots.txt Crawl-delay; a host asking for more is fetched at the cap."""
    max_pause: float = 600.0
    """Longest ``Retry-After`` honoured as a pause of the host. A server may ask for years;
    a longer one gives the URL up (``retry-after-too-long``) and the host is slowed down as
    for any failure instead."""

    def delay_of(self, slot: HostSlot) -> float:
        """Current spacing of request starts on the host."""
        adaptive = 0.0
        if slot.latency is not None and slot.latency > self.slow_latency:
            adaptive = slot.latency
        if slot.error_rate > _NEGLIGIBLE:
            odds = slot.error_rate / max(1.0 - slot.error_rate, 1e-6)
            adaptive = max(adaptive, self.failure_delay * odds)
        return max(self.delay, slot.crawl_delay, min(adaptive, self.max_delay))

    def why_waiting(self, slot: HostSlot) -> WaitReason:
        """What spaces the host's requests now: ``retry-after``, ``crawl-delay``, ``back-off``
        (slowed down for its errors or latency), ``delay`` (the configured one), or
        ``limit`` when none spaces them (its connections are all in use)."""
        if slot.paused_until >= slot.next_start > 0:
            return "retry-after"
        spacing = self.delay_of(slot)
        if spacing <= 0:
            return "limit"
        if slot.crawl_delay >= spacing:
            return "crawl-delay"
        return "delay" if self.delay >= spacing else "back-off"

    def ready_at(self, slot: HostSlot) -> float:
        """When the host may start its next request (infinity while it is full).

        While the host has a delay, requests run one at a time, so each start is spaced from
        the real start of the one before (a lease and its request start are not the same
        instant); without a delay up to ``per_host`` run at once.
        """
        active = slot.active
        if not active:  # the limit is one request at least: no spacing to work out
            return slot.next_start
        if active >= self.per_host:
            return math.inf
        return math.inf if self.delay_of(slot) > 0 else slot.next_start

    def room(self, slot: HostSlot) -> int:
        """Requests the host may still start at once: ``per_host``, or one while it has a
        delay, less those in flight; no more than its domain's room (``per_domain`` less the
        requests in flight over its hosts; none for a domain dropped since the host was found
        due: it is looked at again)."""
        limit = 1 if self.delay_of(slot) > 0 else self.per_host
        room = limit - slot.active
        if (domain := slot.domain) is not None and self.per_domain is not None:
            return 0 if domain.gone else min(room, self.per_domain - domain.active)
        return room

    def on_lease(self, slot: HostSlot, now: float) -> None:
        """A request is about to start on the host."""
        slot.active += 1
        if (domain := slot.domain) is not None:
            domain.active += 1
        slot.next_start = max(slot.next_start, now) + self.delay_of(slot)

    def claim(self, slot: HostSlot, now: float, room: bool) -> float:
        """Start a request outside any lease if the host is due: 0.0 when started, else the
        seconds until it may (infinity while ``room`` is asked for and its connections are all
        in use)."""
        if room and slot.active >= self.per_host:
            return math.inf
        if slot.next_start > now:
            return slot.next_start - now
        self.on_lease(slot, now)
        return 0.0

    def started(self, slot: HostSlot, started_at: float) -> None:
        """A request to the host started at ``started_at``: space its next start from that."""
        slot.next_start = max(slot.next_start, started_at + self.delay_of(slot))

    def on_finish(
        self, slot: HostSlot, feedback: Feedback | None, now: float, host: str = "a host"
    ) -> None:
        """A leased request ended; learn from what it told about the host (named ``host`` in
        the log)."""
        if slot.active:
            slot.active -= 1
            if (domain := slot.domain) is not None and domain.active:
                domain.active -= 1
                if domain.parked and domain.wake is not None:
                    domain.wake(domain)  # its hosts parked longest take the room
        if feedback is None:
            return
        if feedback.crawl_delay is not None:
            self.set_crawl_delay(slot, feedback.crawl_delay, host)
        if feedback.started_at is not None:
            before = self.delay_of(slot)
            self._learn(slot, feedback)
            after = self.delay_of(slot)
            floor = max(self.delay, slot.crawl_delay)
            if before <= floor < after:
                log.info(
                    "%s slowed down: one request every %.2fs (error rate %.0f%%, latency %s)",
                    host,
                    after,
                    100 * slot.error_rate,
                    "-" if slot.latency is None else f"{slot.latency:.2f}s",
                    extra={
                        "event": "host-slowed",
                        "host": host,
                        "delay": round(after, 3),
                        "error_rate": round(slot.error_rate, 3),
                        "latency": slot.latency,
                    },
                )
            elif after <= floor < before:
                log.info(
                    "%s back to its normal pace",
                    host,
                    extra={"event": "host-recovered", "host": host, "delay": round(after, 3)},
                )
            slot.next_start = max(slot.next_start, feedback.started_at + after)
        if feedback.retry_after is not None and feedback.retry_after <= self.max_pause:
            slot.next_start = max(slot.next_start, now + feedback.retry_after)
            slot.paused_until = now + feedback.retry_after
            log.info(
                "%s asked to wait %gs (Retry-After); the host pauses",
                host,
                feedback.retry_after,
                extra={"event": "host-paused", "host": host, "seconds": feedback.retry_after},
            )

    def set_crawl_delay(self, slot: HostSlot, asked: float | None, host: str) -> None:
        """The host's robots.txt asks for ``asked`` seconds between requests (None: nothing);
        capped at ``max_crawl_delay``, the cap logged once for the host."""
        delay = min(asked or 0.0, self.max_crawl_delay)
        if delay == slot.crawl_delay:
            return
        before = self.delay_of(slot)
        if asked is not None and asked > delay:
            log.warning(
                "%s asks for a Crawl-delay of %gs; fetching it every %gs (--max-crawl-delay)",
                host,
                asked,
                delay,
                extra={"event": "crawl-delay-capped", "host": host, "asked": asked},
            )
        slot.crawl_delay = delay
        if slot.next_start:  # the rules came after a request spaced by the old delay
            slot.next_start += max(0.0, self.delay_of(slot) - before)  # (their robots.txt)

    def _learn(self, slot: HostSlot, feedback: Feedback) -> None:
        slot.requests += 1
        slot.failures += feedback.failed
        slot.error_rate += _ERROR_ALPHA * (feedback.failed - slot.error_rate)
        if not feedback.failed:
            if slot.latency is None:
                slot.latency = feedback.elapsed
            else:
                slot.latency += _LATENCY_ALPHA * (feedback.elapsed - slot.latency)
