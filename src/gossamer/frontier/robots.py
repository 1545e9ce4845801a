"""robots.txt per host: fetched once, cached, and asked whether a URL may be crawled.

Follows RFC 9309 (the Robots Exclusion Protocol); protego parses the file and matches rules
(longest match wins, Allow wins a tie, ``*`` and ``$`` wildcards, groups merged per user agent).

Outcomes of a fetch (``RobotsPolicy.status``):

- ``ok``: a 2xx answer, parsed (only its first 500 KiB, §2.5).
- ``missing``: 4xx, "unavailable" (§2.3.1.3): everything is allowed. So is a redirect with no
  usable ``Location``.
- ``redirect-loop``: no robots.txt within five redirects, or a redirect loop; treated as
  unavailable, everything allowed (§2.3.1.2).
- ``redirect-offsite``: a redirect to a URL outside the crawl's scope (``may_follow`` says
  no: another host or port than the crawl may visit), not followed, so robots.txt can never
  take the crawler where its links could not; treated as unavailable, everything allowed,
  and a warning names the host, the target and the way to read it (``--allow-domain``,
  ``--allow-port``): the owner's rules there were not read.
- ``invalid``: a body the parser fails on; no rules apply (§2.2: unparsable lines are
  ignored), everything allowed.
- ``blocked``: no request could be made, the address guard (:mod:`gossamer.fetch.guard`)
  forbids every address of the host; everything allowed, as the fetch of any of its pages is
  refused the same way and ends as its own ``blocked-address`` record at once (disallowing
  would keep the URLs waiting for robots.txt retries that can never succeed). Cached only for
  the short retry interval, like ``unreachable``.
- ``unreachable``: 5xx, 429, no response, or a 2xx whose body broke off (§2.3.1.4):
  everything is disallowed, and the answer is cached only for the short retry interval. 429 is
  a 4xx code, but a server that asks us to slow down has not said "no robots.txt here"; Google
  treats it the same way.

The other outcomes are cached for ``ttl`` (24 hours by default; §2.4 says not to use a cached
copy for longer). The cache key is the origin, ``scheme://host[:port]`` with the default port left
out, the form of :func:`gossamer.urls.host_key`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import msgspec
from protego import Protego

from gossamer.frontier.robotstext import (
    MAX_ROBOTS_BYTES,
    names_a_user,
    robots_text,
    wildcard_count,
)
from gossamer.redact import redact_url
from gossamer.urls import Resolver

__all__ = [
    "DEFAULT_TOKEN",
    "MAX_REDIRECTS",
    "MAX_ROBOTS_BYTES",
    "FetchRobots",
    "RobotsCache",
    "RobotsDeferred",
    "RobotsPolicy",
    "RobotsReply",
    "RobotsResponse",
    "RobotsStats",
    "RobotsStatus",
    "VerdictCounts",
    "robots_origin",
]

log = logging.getLogger(__name__)
DEFAULT_TOKEN = "gossamer"
_CUT = frozenset({None, "decompression-bomb"})
"""Fetch errors that leave a robots.txt whole up to the parsing limit: a compressed file
decoded past `MAX_ROBOTS_BYTES` at a bomb's ratio is cut there, as a plain one is."""
MAX_REDIRECTS = 5
"""Redirects followed to reach robots.txt (RFC 9309 §2.3.1.2: at least five)."""
_PARSE_IN_THREAD_BYTES = 64 * 1024
_BLOCKED = "blocked-address"
"""The fetcher's error for a host the address guard forbids (``blocked``; on a redirect's
target it counts as unreachable, since the host's own server did answer)."""

RobotsStatus = Literal[
    "ok",
    "missing",
    "unreachable",
    "redirect-loop",
    "redirect-offsite",
    "invalid",
    "blocked",
    "too-complex",
]
MAX_ROBOTS_WAIT = 6 * 3600.0
"""The longest a robots.txt answered 429 or 5xx with a ``Retry-After`` is left alone (its
host's URLs wait as long): the site asked, and a day or a year would stall them for good."""
MAX_WILDCARD_RULES = 1_000
"""Wildcards (``*``, a run of them counting once) in the rules of the group that applies to
the crawler, at most: each costs a search of the URL on every check (protego), so 30,000
rules of one cost 50 ms a URL on the crawl's loop, and so do 690 rules of 240. A file past
it forbids the whole host (``too-complex``, a warning): its owner's rules are never crawled
past, and no host can slow the crawl down with its robots.txt. Real files hold tens to a few
hundred."""

_ORIGIN = re.compile(
    r"(https?)://(?:[^/?#]*@)?(\[[0-9A-Fa-f:.]+\]|[^/?#@:\[\]]+)(?::(\d*))?(?=[/?#]|\Z)",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class RobotsResponse(Protocol):
    """What the cache needs from one HTTP GET that does not follow redirects.

    ``status`` is ``None`` when no response arrived; ``error`` is set on network errors, also
    after the status line (then the body is partial); ``location`` is the raw ``Location``
    header of a 3xx. The fetcher's ``FetchResult`` fits.
    """

    @property
    def status(self) -> int | None: ...
    @property
    def body(self) -> bytes: ...
    @property
    def location(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def truncated(self) -> bool:
        """The body was cut (at the fetcher's limit): its last line may be partial."""
        ...


class RobotsReply(msgspec.Struct, frozen=True):
    """A plain :class:`RobotsResponse`."""

    status: int | None
    body: bytes = b""
    location: str | None = None
    error: str | None = None
    truncated: bool = False


FetchRobots = Callable[[str], Awaitable[RobotsResponse]]
"""GET one absolute URL without following redirects. Exceptions count as network errors."""


class VerdictCounts:
    """How many checks the policies of one cache allowed and disallowed."""

    __slots__ = ("allowed", "disallowed")

    def __init__(self) -> None:
        self.allowed = 0
        self.disallowed = 0


@dataclass(frozen=True, slots=True)
class RobotsPolicy:
    """The rules of one host for one product token; build with the class methods.

    ``crawl_delay`` comes from the group that applies to the token: the token's own group if
    the file has one (then ``None`` if that group sets no delay, as RFC 9309 applies one group
    only), else the ``*`` group. It is the file's value (protego drops negative ones and
    ``NaN``; an endless one, ``inf`` or ``1e400``, is read as ``1e308``); the politeness policy
    caps it at ``--max-crawl-delay`` and fetches a host asking for more at the cap (see
    :mod:`gossamer.frontier.politeness`).
    """

    status: RobotsStatus
    token: str = DEFAULT_TOKEN
    crawl_delay: float | None = None
    sitemaps: tuple[str, ...] = ()
    rules: Protego | None = field(default=None, repr=False, compare=False)
    """Parsed robots.txt; ``None`` means every URL gets ``default_allowed``."""
    default_allowed: bool = True
    verdicts: VerdictCounts | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(
        cls,
        body: bytes,
        token: str = DEFAULT_TOKEN,
        *,
        verdicts: VerdictCounts | None = None,
    ) -> RobotsPolicy:
        """Parse a robots.txt body (UTF-8, undecodable bytes tolerated, first 500 KiB)."""
        return cls.from_rules(Protego.parse(robots_text(body)), token, verdicts=verdicts)

    @classmethod
    def from_rules(
        cls, rules: Protego, token: str = DEFAULT_TOKEN, *, verdicts: VerdictCounts | None = None
    ) -> RobotsPolicy:
        """Wrap an already parsed protego object (every URL forbidden, ``too-complex``, when
        the group that applies holds more than `MAX_WILDCARD_RULES` wildcard rules)."""
        if wildcard_count(rules, token) > MAX_WILDCARD_RULES:
            return cls.disallow_all("too-complex", token, verdicts=verdicts)
        return cls(
            status="ok",
            token=token,
            crawl_delay=rules.crawl_delay(token),
            sitemaps=tuple(url for url in rules.sitemaps if not names_a_user(url)),
            rules=rules,
            verdicts=verdicts,
        )

    @classmethod
    def allow_all(
        cls,
        status: RobotsStatus = "missing",
        token: str = DEFAULT_TOKEN,
        *,
        verdicts: VerdictCounts | None = None,
    ) -> RobotsPolicy:
        """Every URL allowed (no robots.txt)."""
        return cls(status=status, token=token, default_allowed=True, verdicts=verdicts)

    @classmethod
    def disallow_all(
        cls,
        status: RobotsStatus = "unreachable",
        token: str = DEFAULT_TOKEN,
        *,
        verdicts: VerdictCounts | None = None,
    ) -> RobotsPolicy:
        """Every URL forbidden (robots.txt unreachable)."""
        return cls(status=status, token=token, default_allowed=False, verdicts=verdicts)

    def allowed(self, url: str) -> bool:
        """May ``url`` (on this policy's host) be crawled by ``token``?"""
        rules = self.rules
        verdict = self.default_allowed if rules is None else rules.can_fetch(url, self.token)
        if self.verdicts is not None:
            if verdict:
                self.verdicts.allowed += 1
            else:
                self.verdicts.disallowed += 1
        return verdict


class RobotsStats(msgspec.Struct, frozen=True):
    """A snapshot of a :class:`RobotsCache`."""

    hosts_cached: int
    in_flight: int
    fetches: int
    """robots.txt look-ups started (one per host and TTL)."""
    requests: int
    """HTTP requests made, redirects included."""
    coalesced: int
    """``get()`` calls that joined a look-up already in flight."""
    allowed: int
    disallowed: int
    unreachable: int
    """Look-ups that ended unreachable (5xx, 429, no response, broken 2xx body)."""


class _Entry(msgspec.Struct, frozen=True):
    policy: RobotsPolicy
    expires: float


class RobotsDeferred(Exception):
    """Raised by a robots.txt fetch function whose request never reached the host (no live
    proxy): nothing is cached, and `RobotsCache.get` raises it to its callers (`allowed`
    says no for now), who ask again later."""


class RobotsCache:
    """Per-origin robots.txt policies, fetched on demand and kept for a while.

    ``known()`` answers from memory and is the hot path; ``get()`` fetches when needed, once
    per origin however many callers wait; ``learn()`` takes a robots.txt fetched elsewhere (a
    proxy check's). ``on_rules(origin, policy)`` is told of every policy fetched or learnt
    (the crawl keeps their ``Sitemap:`` lines, whoever asked for the file). ``clock`` is a
    monotonic clock in seconds. At most ``max_hosts`` origins are kept; the least recently
    used go first (the embedded frontier schedules fewer hosts at a time than that, so the
    rules of hosts in play stay known).
    """

    def __init__(
        self,
        fetch: FetchRobots,
        *,
        token: str = DEFAULT_TOKEN,
        ttl: float = 24 * 3600.0,
        retry_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_hosts: int = 100_000,
        may_follow: Callable[[str], bool] | None = None,
        on_rules: Callable[[str, RobotsPolicy], None] | None = None,
    ) -> None:
        self._fetch = fetch
        self._on_rules = on_rules
        self._may_follow = may_follow
        self._token = token
        self._ttl = ttl
        self._retry_interval = retry_interval
        self._clock = clock
        self._max_hosts = max_hosts
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        """Origin -> its policy, the least recently used first (a dict would find its oldest
        key by scanning past every key deleted before it)."""
        self._in_flight: dict[str, asyncio.Task[RobotsPolicy]] = {}
        self._waits: dict[str, float] = {}
        """robots.txt URL -> the ``Retry-After`` of its last 429 or 5xx (read by `_load`)."""
        self._verdicts = VerdictCounts()
        self._fetches = 0
        self._requests = 0
        self._coalesced = 0
        self._unreachable = 0

    def known(self, url: str) -> RobotsPolicy | None:
        """The fresh cached policy for ``url``'s origin, or ``None``; never does I/O.

        Raises ``ValueError`` if ``url`` is not an http(s) URL.
        """
        entries = self._entries
        entry = entries.get(url)  # the frontier asks by host key: a key as it is
        if entry is None:
            key = robots_origin(url)
            entry = entries.get(key)
        else:
            key = url
        if entry is None or entry.expires <= self._clock():
            return None
        if next(reversed(entries)) != key:  # least recently used go first
            entries.move_to_end(key)
        return entry.policy

    async def get(self, url: str) -> RobotsPolicy:
        """The policy for ``url``'s origin, fetching its robots.txt if not cached and fresh."""
        key = robots_origin(url)
        entry = self._entries.get(key)
        if entry is not None and entry.expires > self._clock():
            return entry.policy
        task = self._in_flight.get(key)
        if task is None:
            self._fetches += 1
            task = asyncio.create_task(self._load(key), name=f"robots.txt {key}")
            self._in_flight[key] = task
        else:
            self._coalesced += 1
        # A caller that gives up must not cancel the look-up the others wait for.
        return await asyncio.shield(task)

    def verdict(self, url: str) -> bool | None:
        """Whether the fresh cached rules allow ``url``; None when they are not known."""
        policy = self.known(url)
        return None if policy is None else policy.allowed(url)

    async def learn(self, url: str, response: RobotsResponse) -> bool | None:
        """Take the rules of ``url``'s host from its robots.txt ``response``, fetched outside
        the cache (a proxy check's, through the proxy it checks), and say whether they allow
        ``url``. Only a conclusive answer is kept: a complete 2xx (parsed) or a 4xx other
        than 429 (no rules); None for any other (no answer, a redirect, 429, 5xx)."""
        known = self.verdict(url)
        if known is not None or response.status is None:
            return known
        status = response.status
        if 200 <= status < 300 and response.error is None:
            policy = await self._parse(response.body, response.truncated)
        elif 400 <= status < 500 and status != 429:
            policy = self._policy_without_rules("missing")
        else:
            return None
        self._keep(robots_origin(url), policy, self._ttl)
        return policy.allowed(url)

    async def allowed(self, url: str) -> bool:
        """Fetch the policy if needed and check ``url`` against it (no while it cannot be
        fetched for now: `RobotsDeferred`)."""
        try:
            return (await self.get(url)).allowed(url)
        except RobotsDeferred:
            return False

    def stats(self) -> RobotsStats:
        """A snapshot of the cache's counters."""
        return RobotsStats(
            hosts_cached=len(self._entries),
            in_flight=len(self._in_flight),
            fetches=self._fetches,
            requests=self._requests,
            coalesced=self._coalesced,
            allowed=self._verdicts.allowed,
            disallowed=self._verdicts.disallowed,
            unreachable=self._unreachable,
        )

    async def aclose(self) -> None:
        """Cancel look-ups in flight."""
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _load(self, key: str) -> RobotsPolicy:
        try:
            policy = await self._download(key + "/robots.txt")
            asked = max(self._retry_interval, self._waits.pop(key + "/robots.txt", 0.0))
            lifetime = self._ttl
            if policy.status == "unreachable":
                self._unreachable += 1
                log.info(
                    "robots.txt of %s unreachable; its URLs wait, asked again in %gs",
                    key,
                    asked,
                    extra={"event": "robots-unreachable", "origin": key, "retry_in": asked},
                )
            if policy.status == "too-complex":
                log.warning(
                    "robots.txt of %s holds more than %d wildcards for this crawler; "
                    "none of its URLs is fetched",
                    key,
                    MAX_WILDCARD_RULES,
                    extra={"event": "robots-too-complex", "origin": key},
                )
            if policy.status == "blocked":
                lifetime = self._retry_interval
            elif policy.status == "unreachable":
                lifetime = asked
            self._keep(key, policy, lifetime)
            return policy
        finally:
            del self._in_flight[key]

    def _keep(self, key: str, policy: RobotsPolicy, lifetime: float) -> None:
        self._entries.pop(key, None)  # re-insert at the end: eviction goes oldest first
        self._entries[key] = _Entry(policy, self._clock() + lifetime)
        while len(self._entries) > self._max_hosts:
            self._entries.popitem(last=False)
        if self._on_rules is not None:
            self._on_rules(key, policy)

    async def _download(self, url: str) -> RobotsPolicy:
        """Fetch ``url``, following up to ``MAX_REDIRECTS`` redirects (RFC 9309 §2.3.1.2:
        "crawlers SHOULD follow at least five consecutive redirects ... If there are more than
        five consecutive redirects, crawlers MAY assume that the robots.txt file is
        unavailable"). The rules found apply to the original origin."""
        seen, first = {url}, url
        for hop in range(MAX_REDIRECTS + 1):
            response = await self._get_once(url)
            status = response.status if response is not None else None
            if hop == 0 and response is not None and status is None and response.error == _BLOCKED:
                return self._policy_without_rules("blocked")
            if response is None or status is None:
                return self._policy_without_rules("unreachable")
            if 200 <= status < 300:
                if response.error not in _CUT:  # a cut file could miss some Disallow lines
                    return self._policy_without_rules("unreachable")
                return await self._parse(response.body, response.truncated)
            if 300 <= status < 400:
                target = _redirect_target(url, response.location)
                if target is None:
                    return self._policy_without_rules("missing")
                if self._may_follow is not None and not self._may_follow(target):
                    log.warning(
                        "robots.txt of %s redirects to %s, outside the crawl's scope: its rules "
                        "are not read and its URLs are crawled as if it had none "
                        "(--allow-domain or --allow-port reads them)",
                        robots_origin(first),
                        redact_url(target),
                        extra={"event": "robots-redirect-offsite"},
                    )
                    return self._policy_without_rules("redirect-offsite")
                if target in seen:
                    return self._policy_without_rules("redirect-loop")
                seen.add(target)
                url = target
                continue
            if 400 <= status < 500 and status != 429:
                return self._policy_without_rules("missing")
            wait = getattr(response, "retry_after", None)  # a 429 or 5xx may say when
            if isinstance(wait, int | float) and wait > 0:
                self._waits[first] = min(float(wait), MAX_ROBOTS_WAIT)
            return self._policy_without_rules("unreachable")
        return self._policy_without_rules("redirect-loop")

    async def _get_once(self, url: str) -> RobotsResponse | None:
        self._requests += 1
        try:
            return await self._fetch(url)
        except RobotsDeferred:
            raise
        except Exception:  # any failure to get an answer is "unreachable" (§2.3.1.4)
            return None

    async def _parse(self, body: bytes, cut: bool = False) -> RobotsPolicy:
        text = robots_text(body, cut)
        try:
            if len(text) > _PARSE_IN_THREAD_BYTES:  # large files take protego a while
                rules = await asyncio.to_thread(Protego.parse, text)
            else:
                rules = Protego.parse(text)
            return RobotsPolicy.from_rules(rules, self._token, verdicts=self._verdicts)
        except Exception:  # §2.2: rules that cannot be parsed are not rules
            log.warning(
                "robots.txt that protego cannot parse; no rules apply",
                exc_info=True,
                extra={"event": "robots-invalid"},
            )
            return self._policy_without_rules("invalid")

    def _policy_without_rules(self, status: RobotsStatus) -> RobotsPolicy:
        if status == "unreachable":
            return RobotsPolicy.disallow_all(status, self._token, verdicts=self._verdicts)
        return RobotsPolicy.allow_all(status, self._token, verdicts=self._verdicts)


def robots_origin(url: str) -> str:
    """The cache key of ``url``: ``scheme://host[:port]``, lower case, default port dropped.

    Raises ``ValueError`` if ``url`` is not an absolute http(s) URL.
    """
    match = _ORIGIN.match(url)
    if match is None:
        raise ValueError(f"not an http(s) URL: {url[:200]!r}")
    scheme = match[1].lower()
    host = match[2].lower()
    port = int(match[3]) if match[3] and len(match[3]) <= 5 else None
    if match[3] and (port is None or port > 65535):
        raise ValueError(f"bad port in URL: {url[:200]!r}")
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _redirect_target(url: str, location: str | None) -> str | None:
    if not location:
        return None
    try:
        target = Resolver(url).resolve(location)  # WHATWG rules, as a page's links
    except ValueError:
        return None
    return target if target is not None and _ORIGIN.match(target) else None
