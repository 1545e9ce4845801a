"""Admission: the one gate every URL passes on its way into a frontier.

Each candidate is canonicalized once (tracking and session parameters stripped,
:class:`~gossamer.tracking.ParamStripper`), scoped (its origin, cached per host key, then the
scope's guards: URL length, depth, repeated segments; a host whose page budget is spent,
:mod:`gossamer.frontier.budgets`) and fingerprinted. Both backends admit through here; what
they do with the admitted URLs (the seen check, queueing) is theirs, but the URLs new to the
crawl go through :meth:`Admission.screen` (the trap guards, :mod:`gossamer.frontier.traps`)
before they are queued: the embedded frontier's after its seen check, the Redis frontier's
(``admit`` with ``known``) those it has not sent to Redis yet.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping

import msgspec

from gossamer.frontier.base import Candidate
from gossamer.frontier.budgets import BudgetLimits, HostBudget
from gossamer.frontier.traps import TrapGuard, TrapLimits, TrapStats
from gossamer.settings.models import CrawlSettings
from gossamer.tracking import TRACKING_PARAMS, ParamStripper
from gossamer.urls import (
    InvalidURL,
    OriginCache,
    Scope,
    canonicalize,
    credentials_of,
    fingerprint,
    host_key,
    plain_origin,
)

Admitted = tuple[str, str, int, Candidate]
"""A candidate in scope: (canonical URL, host key, fingerprint, the candidate). A plain tuple:
millions pass here."""
_REFUSED_SPELLINGS = 16_384
"""Candidate URLs remembered as turned away for good, as they were spelled (see
`Admission.admit`); emptied when it reaches this many."""
_OFFSITE_ORIGINS = 4_096
"""Offsite origins remembered as plainly spelled (see `Admission._offsite`); emptied when
it reaches this many."""


class Guards(msgspec.Struct, frozen=True):
    """What admission does besides the scope: the parameters it strips (none: keep all),
    the trap guards' limits (None: off) and the per-host page budgets."""

    strip: tuple[str, ...] = TRACKING_PARAMS
    traps: TrapLimits | None = msgspec.field(default_factory=TrapLimits)
    budgets: BudgetLimits = msgspec.field(default_factory=BudgetLimits)

    @classmethod
    def of(cls, settings: CrawlSettings) -> Guards:
        """The guards a crawl's settings ask for."""
        traps = None
        if settings.trap_guards:
            traps = TrapLimits(
                per_template=settings.trap_template_budget,
                query_combos=settings.trap_query_combos,
                date_steps=settings.trap_date_steps,
                token_steps=settings.trap_token_steps,
                max_ids=settings.trap_max_ids,
            )
        budgets = BudgetLimits(settings.max_pages_per_host, dict(settings.host_page_budgets))
        return cls(tuple(settings.strip_params), traps, budgets)


class Admission:
    """Canonicalize, scope and fingerprint candidates; counts what it turns away."""

    def __init__(self, scope: Scope, guards: Guards | None = None) -> None:
        guards = guards or Guards()
        self._scope = scope
        self._origins = OriginCache(scope)
        self._rejected: dict[str, int] = {}
        self._strip = ParamStripper(guards.strip)
        self._strip_url = self._strip.strip if self._strip else None
        self._credentials: set[str] = set()
        """The user names and passwords (with their hosts) the user's seeds gave."""
        self._traps = TrapGuard(guards.traps) if guards.traps is not None else None
        self.budget = HostBudget(guards.budgets) if guards.budgets else None
        """The page budgets the frontier's scheduler spends (None: no host has one)."""
        self._refused: dict[str, str] = {}
        """Candidate URLs as spelled, turned away for a reason their spelling alone decides
        (``invalid-url``, an origin out of scope) and so whatever page links them: the
        same spelling again is counted without being canonicalized (a site's every page
        links the same offsite pages). Bounded by `_REFUSED_SPELLINGS`."""
        self._offsite: set[str] = set()
        """Origins out of scope (``scheme://host[:port]/``, :func:`~gossamer.urls.plain_origin`)
        whose spelling tells their host key: a link spelled with one of them and ASCII
        after it is turned away for its origin without being canonicalized (a site
        links many pages of a few offsite hosts, each spelling once). The verdict still
        comes from the origin cache. Such a URL never fails to canonicalize and names no user
        info (WHATWG reads no authority past its ``/``, and escapes an ASCII path, query or
        fragment, never failing on one); the origin is one ada reads as written, not only
        the regex of canonical URLs (``http://0x7f.1/`` is ``127.0.0.1`` to ada). Bounded
        by `_OFFSITE_ORIGINS`."""

    def admit(
        self,
        candidates: Iterable[Candidate],
        known: Container[int] | None = None,
        source: str | None = None,
    ) -> tuple[list[Admitted], dict[str, int]]:
        """The candidates in scope, in order, and how many were turned away for each reason
        (``invalid-url``, ``offsite``, ``depth`` ..., ``userinfo`` for a URL with a user name
        or password none of the user's seeds gave, ``bad-priority`` for a priority that is
        not a finite number). ``source`` is the page the candidates were found on (by
        default a page's `Outlinks` tell). With ``known`` (fingerprints known seen), the
        others go through :meth:`screen` too."""
        source = source or getattr(candidates, "source", None)
        rejected: dict[str, int] = {}
        admitted: list[Admitted] = []
        refused = self._refused
        again: dict[str, Admitted] = {}  # this batch's admitted spellings: a page often
        # names a new link twice (the same verdict: nothing admission reads changes meanwhile)
        for cand in candidates:
            if not cand.priority:  # a priority's verdict may differ (bad-priority)
                reason = refused.get(cand.url)
                if reason is not None:
                    rejected[reason] = rejected.get(reason, 0) + 1
                    continue
                same = again.get(cand.url)
                if same is not None and same[3].depth == cand.depth:
                    admitted.append((same[0], same[1], same[2], cand))
                    continue
            verdict = self._verdict(cand, source)
            if isinstance(verdict, str):
                rejected[verdict] = rejected.get(verdict, 0) + 1
                continue
            admitted.append(verdict)
            if not cand.priority and "@" not in verdict[0]:  # (userinfo: the seed's own)
                again[cand.url] = verdict
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) + count
        if known is not None and self._traps is not None:
            fresh = [a for a in admitted if a[2] not in known]
            kept = {a[2] for a in self.screen(fresh, rejected, source)}
            admitted = [a for a in admitted if a[2] in kept or a[2] in known]
        return admitted, rejected

    def _verdict(self, cand: Candidate, source: str | None) -> Admitted | str:
        """A candidate in scope, or why it is turned away (see :meth:`admit`)."""
        url = cand.url
        cut = url.find("/", 8)  # the slash after the authority ("https://" is 8 long)
        if url[: cut + 1] in self._offsite and url.isascii():  # (no user info: it ends at /)
            reason = self._origins.reason(url[:cut])
            if reason is not None and not cand.priority:  # (a priority may be bad)
                self._refuse(url, reason)
                return reason
        try:
            url = canonicalize(cand.url)
        except InvalidURL:
            self._refuse(cand.url, "invalid-url")
            return "invalid-url"
        if self._strip_url is not None:
            url = self._strip_url(url)
        key = host_key(url)
        reason = self._origins.reason(key)
        if reason is None:
            reason = self._scope.trap_reason(url, cand.depth)
        elif "@" not in url or credentials_of(url) is None:  # no page's may change it
            self._refuse(cand.url, reason)
            self._learn(cand.url, key)
        if "@" in url and not self._may_send(url, cand, source):
            reason = "userinfo"
        if reason is None and self.spent(key):
            reason = "budget"
        if cand.priority and not -math.inf < cand.priority < math.inf:
            reason = "bad-priority"  # a NaN or an infinity would upset every ranking
        return (url, key, fingerprint(url), cand) if reason is None else reason

    def spent(self, key: str) -> bool:
        """Whether host ``key``'s page budget is spent: its new URLs are turned away
        (``budget``)."""
        return self.budget is not None and self.budget.spent(key)

    def _refuse(self, spelling: str, reason: str) -> None:
        """Remember that ``spelling`` is turned away for ``reason`` whatever page links it."""
        if len(self._refused) >= _REFUSED_SPELLINGS:
            self._refused.clear()
        self._refused[spelling] = reason

    def _learn(self, spelling: str, key: str) -> None:
        """Remember the offsite origin ``key`` for its spellings (`_offsite`) if ``spelling``
        names it as its canonical form does and it is a plain origin."""
        origin = key + "/"
        offsite = self._offsite
        if origin in offsite or not spelling.startswith(origin) or not plain_origin(origin):
            return
        if len(offsite) >= _OFFSITE_ORIGINS:
            offsite.clear()
        offsite.add(origin)

    def _may_send(self, url: str, cand: Candidate, source: str | None) -> bool:
        """Whether the URL's user name and password (if any) may be sent: a seed's are the
        user's own; a URL the crawl found (a link, a redirect, a canonical URL, a sitemap
        entry, whatever its depth) sends only those a seed gave, or those of the page it was
        found on (a relative link keeps its page's), never its own."""
        credentials = credentials_of(url)
        if credentials is None:
            return True
        if cand.seed:
            self._credentials.add(credentials)
            return True
        if credentials in self._credentials:
            return True
        return source is not None and credentials_of(source) == credentials

    def trust(self, credentials: Iterable[str]) -> None:
        """Take ``credentials`` (``user:password@host[:port]``, as a canonical URL's authority
        names them) as a seed's: those of seeds another process admitted (a cluster job's,
        which ``cluster submit`` or another worker added), learnt when the first of their
        URLs is claimed. The URLs a crawl finds keep them then, wherever found (redirect
        targets, a focused crawl's links, canonical URLs and sitemap entries name no page
        that gave them), on their origin only."""
        self._credentials.update(credentials)

    def screen(
        self, fresh: list[Admitted], rejected: dict[str, int], source: str | None = None
    ) -> list[Admitted]:
        """The admitted URLs new to the crawl (``fresh``, one batch: the links of the page
        ``source``, if known) that are no trap's (see :mod:`gossamer.frontier.traps`); the
        others are counted in ``rejected`` (an :meth:`admit` result) and the totals. The
        guard counts the URLs it lets through."""
        if self._traps is None or not fresh:
            return fresh
        batch = [(key, url, cand.depth) for url, key, _, cand in fresh]
        reasons = self._traps.screen(batch, source)
        kept = []
        for admitted, reason in zip(fresh, reasons, strict=True):
            if reason is None:
                kept.append(admitted)
            else:
                rejected[reason] = rejected.get(reason, 0) + 1
                self._rejected[reason] = self._rejected.get(reason, 0) + 1
        return kept

    def trap_stats(self) -> TrapStats | None:
        """The trap guards' snapshot (None: off)."""
        return None if self._traps is None else self._traps.stats()

    @property
    def rejected(self) -> dict[str, int]:
        """Candidates turned away so far, by reason (a copy)."""
        return dict(self._rejected)

    @property
    def origins_cached(self) -> int:
        """Host keys whose scope verdict is cached (bounded)."""
        return len(self._origins)

    def locate(
        self, priorities: Mapping[str, float], urls: dict[int, str] | None = None
    ) -> dict[str, dict[int, float]]:
        """:func:`locate` with this admission's stripped parameters."""
        return locate(priorities, self._strip, urls)


def refusal(scope: Scope, url: str, depth: int, source: str) -> str | None:
    """Why :meth:`Admission.admit` turns away the canonical URL ``url`` found on the page
    ``source`` at ``depth``, as far as the crawl's state does not matter (the scope's
    guards; a user name or password that is not the page's own); None: it would not."""
    try:
        url = canonicalize(url)
    except InvalidURL:
        return "invalid-url"
    reason = scope.reject_reason(url, depth)
    credentials = credentials_of(url)
    if reason is None and credentials is not None and credentials != credentials_of(source):
        reason = "userinfo"
    return reason


def locate(
    priorities: Mapping[str, float],
    strip: ParamStripper | None = None,
    urls: dict[int, str] | None = None,
) -> dict[str, dict[int, float]]:
    """URLs as candidates spelled them with their priorities, canonicalized as :meth:`admit`
    does: by host key, then fingerprint (invalid URLs and non-finite priorities left out);
    ``urls``, when given, gets each fingerprint's canonical URL."""
    out: dict[str, dict[int, float]] = {}
    for raw, priority in priorities.items():
        if not isinstance(priority, (int, float)) or not math.isfinite(priority):
            continue
        try:
            url = canonicalize(raw)
        except InvalidURL:
            continue
        if strip:
            url = strip.strip(url)
        fp = fingerprint(url)
        out.setdefault(host_key(url), {})[fp] = float(priority)
        if urls is not None:
            urls[fp] = url
    return out
