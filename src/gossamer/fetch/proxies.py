"""The proxy pool: the proxies a crawl sends its requests through, checked and ranked.

Its parts:

- **collector**: the proxies come from ``--proxy`` URLs and a ``--proxies-file`` (one URL a
  line, ``#`` comments), which is re-read whenever its modification time changes (another
  program, the collector proper, keeps it up to date); proxies gone from the file leave the
  pool. `gossamer.proxyurl.parse_proxy` validates a URL: http, https or socks5, a host, a
  port, optional credentials, nothing else.
- **manager** (`ProxyPool.maintain`): a proxy that takes no TCP connection fails with no
  request to any site (`proxy_listens`); an unchecked one that takes one is used **on
  trial** at once (in the ring after the live ones): its first relayed answer is its check,
  its first failure kills it (`fetch_through` asks the next proxy: a retry, no URL lost). A
  check sends the check URL through a proxy no answer vouched for yet (its first, unless an
  answer came first), one idle ``check_interval`` seconds while live, one in doubt
  (`check_soon`), a dead one ``revalidate`` seconds after it died; it records the response
  time. A proxy that relays the site's answer, whatever its status, passes; one that fails
  to (no connection, a timeout, a TLS or CONNECT failure, an error of its own: see
  `proxy_fault`) fails. ``max_failures`` in a row (checks or requests) kill a live proxy;
  a dead one comes back when a check passes. Checks go through the check URL's host's
  politeness slot like any request, one at a time, a tenth of that host's slots at most
  (:mod:`gossamer.fetch.checkshare`) however many proxies, however short the interval; back
  to back while no proxy is live (`start` checks until one passes, or none is left). A
  retry goes through a proxy off trial while one is left: it tells a site's failure from
  a proxy's.
- **404s**: a proxy may answer a plain 404 of its own to everything: the pool `doubts`
  some 404s (:mod:`gossamer.fetch.proxydoubts`), which `fetch_through` asks another proxy.
- **waiting**: while no proxy is live the pool is ``waiting`` (`PoolStats.waiting`, logged
  once when it starts, with why the proxies failed, and when a proxy is back): the crawl
  leases nothing and spends no URL's attempts until a check brings a proxy back.
- **refused**: a proxy answering 407 (Proxy Authentication Required) is "rejected:
  credentials", logged at each of its checks. When every proxy is, and none can change (no
  proxies file, which a collector may rewrite with new credentials), the pool is `refused`:
  the crawl stops (its queue kept for ``--resume``) and ends with an error (`refusal`), as
  no check would ever pass. Proxies that hang or answer garbage may come back: the crawl waits.
- **pool** (`ProxyPool.pick`): the live proxies in a ring ordered by response time, fastest
  first. Each domain walks the ring from the head, one step per request: good proxies serve
  first and one domain's requests spread over several proxies.

A proxy is shown (logs, records, stats) by its `Proxy.label`, ``scheme://host:port``: its
credentials appear nowhere but in the requests to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from gossamer.fetch.checkshare import CHECK_SHARE, CheckShare
from gossamer.fetch.proxydoubts import NotFoundDoubts
from gossamer.fetch.proxyfault import (
    NOT_FOUND,
    REJECTED,
    ProxyAnswer,
    fetch_through,
    proxy_fault,
    proxy_listens,
)
from gossamer.fetch.proxystats import PoolStats, ProxyStats, State
from gossamer.proxyurl import Proxy, ProxyError, read_proxies_file
from gossamer.redact import redact_url

__all__ = [
    "CHECK_SHARE",
    "PoolStats",
    "ProxyAnswer",
    "ProxyPool",
    "ProxyStats",
    "fetch_through",
    "proxy_fault",
    "proxy_listens",
    "read_proxies_file",
]

log = logging.getLogger(__name__)

_MAX_DOMAINS = 100_000
"""Domains whose place in the ring is remembered (forgotten all at once when full)."""
_LATENCY_WEIGHT = 0.3
"""Weight of the newest check in a proxy's response time (an exponential average)."""

Clock = Callable[[], float]


class _Entry:
    """A proxy's mutable record in the pool."""

    __slots__ = (
        "due",
        "failures",
        "latency",
        "probed",
        "proxy",
        "reason",
        "refused",
        "requests",
        "response_time",
        "state",
        "streak",
        "timed",
        "trial",
    )

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.state: State = "unchecked"
        self.refused = False  # its last check got a 407 (a request's may be the site's)
        self.requests = self.failures = self.streak = self.timed = 0
        self.latency = 0.0
        self.response_time: float | None = None
        self.due = 0.0
        """When the manager checks it next (monotonic)."""
        self.reason = ""
        """Why it failed last (a `proxy_fault` reason), while not live."""
        self.probed = -float("inf")
        """When it last took a TCP connection (the pool's prober), or failed to."""
        self.trial = False
        """Unchecked but listening: in the ring, its first relayed answer its check."""

    def stats(self) -> ProxyStats:
        mean = self.latency / self.timed if self.timed else 0.0
        return ProxyStats(
            self.proxy.label,
            self.state,
            self.requests,
            self.failures,
            mean,
            self.response_time,
        )


Checker = Callable[[Proxy], Awaitable[float | str | None]]
"""Fetches the check URL through a proxy: its response time in seconds, or why it failed
(a `proxy_fault` reason; None: no reason known) (the fetcher provides it:
`gossamer.fetch.http.Fetcher.check_proxy`)."""


class ProxyPool:
    """The proxies of a crawl, ranked and checked (see the module doc).

    ``proxies`` are the ones given directly, ``file`` the collector's list. The pool is fed
    by the fetcher: `succeeded` and `failed` after each request through a proxy. ``checker``
    may be set later (`set_checker`), before `maintain` runs.
    """

    def __init__(
        self,
        proxies: Iterable[Proxy] = (),
        *,
        file: Path | None = None,
        max_failures: int = 3,
        check_interval: float = 300.0,
        revalidate: float = 60.0,
        checker: Checker | None = None,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if max_failures < 1 or check_interval <= 0 or revalidate <= 0:
            raise ValueError("max_failures must be >= 1, the intervals > 0")
        self._given = list(proxies)
        self._file = file
        self._mtime: float | None = None
        self._max_failures = max_failures
        self._check_interval = check_interval
        self._revalidate = revalidate
        self._checker = checker
        self._prober: Callable[[Proxy], Awaitable[bool]] | None = None
        self._target: str | None = None
        self._clock = clock
        self._sleep = sleep
        self._share = CheckShare()
        self._checking = asyncio.Lock()
        """Held by the check running: one at a time."""
        self._doubts = NotFoundDoubts()
        self._entries: dict[str, _Entry] = {}
        self._ring: list[_Entry] = []
        self._ring_stale = True
        self._cursors: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._retries = 0
        """Proxies picked after another failed the same request."""
        self._unserved = 0
        """Requests that found no live proxy."""
        self._waiting = False
        self._waits = 0
        self._live = asyncio.Event()
        """Set while a proxy is live."""
        self._refused = False
        self._on_refused: list[Callable[[], None]] = []
        self._set_proxies(self._given)

    def set_checker(
        self, checker: Checker, target: str | None = None, probe: float | None = None
    ) -> None:
        """The function the manager checks proxies with, and the URL it asks for (named
        when no proxy passes: a check URL that hangs or fails fails every proxy); with a
        ``probe`` timeout, an unchecked proxy that takes a connection in time is used on
        trial at once (`proxy_listens`)."""
        self._checker = checker
        self._target = target
        self._share.host = None if target is None else urlsplit(target).hostname
        self._prober = (
            None if probe is None else functools.partial(proxy_listens, connect_timeout=probe)
        )

    def __len__(self) -> int:
        return len(self._entries)

    def pick(self, domain: str, exclude: Iterable[Proxy] = ()) -> Proxy | None:
        """The next live proxy for ``domain`` (its step on the ring), skipping ``exclude``
        (the proxies a request failed through already: this pick is a retry, through a
        proxy off trial while one is left, which tells the site's failures from a proxy's);
        None when no live proxy is left."""
        ring = self._live_ring()
        skip = {p.url for p in exclude}
        choices = [e for e in ring if e.proxy.url not in skip] if skip else ring
        if skip:
            choices = [e for e in choices if not e.trial] or choices
        if not choices:
            self._unserved += not skip
            return None
        self._retries += bool(skip)
        self._share.requested(domain, self._clock())
        if len(self._cursors) >= _MAX_DOMAINS and domain not in self._cursors:
            self._cursors.clear()
        step = self._cursors.get(domain, 0)
        self._cursors[domain] = step + 1
        return choices[step % len(choices)].proxy

    def peek(self, domain: str) -> Proxy | None:
        """The proxy `pick` would give ``domain`` next, without taking its turn (what a login
        for the domain goes through); None when no proxy is live."""
        ring = self._live_ring()
        return ring[self._cursors.get(domain, 0) % len(ring)].proxy if ring else None

    def succeeded(self, proxy: Proxy, elapsed: float, status: int | None = None) -> None:
        """A request through ``proxy`` got an answer (``status``) after ``elapsed`` seconds:
        proof enough that it works (one on trial is live: that was its check), so a live
        one's next check waits ``check_interval`` from now (checks take the check URL's
        host's politeness slots, which a crawl of it needs)."""
        entry = self._entries.get(proxy.url)
        if entry is None:
            return
        entry.requests += 1
        entry.timed += 1
        entry.latency += elapsed
        entry.streak = 0
        self._doubts.answered(proxy.url, status)
        if entry.state == "unchecked" and entry.trial:
            entry.response_time = elapsed
            self._passed(entry, elapsed)
        if entry.state == "live" and entry.due != float("inf"):
            entry.due = max(entry.due, self._clock() + self._check_interval)

    def doubts(self, proxy: Proxy, domain: str) -> bool:
        """Whether a 404 ``proxy`` relayed for ``domain`` is to be asked of another proxy
        first (`fetch_through`, :mod:`gossamer.fetch.proxydoubts`)."""
        steps = self._cursors.get(domain, 0)
        return self._doubts.doubts(proxy.url, domain, len(self._live_ring()), steps)

    def vouched(self, proxy: Proxy) -> None:
        """Another proxy relayed the 404 ``proxy`` relayed: its 404s are the sites'."""
        self._doubts.vouched(proxy.url)

    def failed(self, proxy: Proxy, reason: str) -> None:
        """A request through ``proxy`` failed at the proxy (``reason``, a fetch error)."""
        entry = self._entries.get(proxy.url)
        if entry is not None:
            entry.requests += 1
            entry.failures += 1
            if reason == NOT_FOUND:
                self._doubts.refuted(proxy.url)
            self._failure(entry, reason)

    def check_soon(self, proxy: Proxy) -> None:
        """Check ``proxy`` at the manager's next round, if it is live (an answer through it
        may have been garbled by it)."""
        entry = self._entries.get(proxy.url)
        if entry is not None and entry.state == "live":
            entry.due = min(entry.due, self._clock())

    def stats(self) -> PoolStats:
        """A frozen snapshot (ring order first, then the others)."""
        ring = self._live_ring()
        rest = [e for e in self._entries.values() if e.state != "live" and not e.trial]
        return PoolStats(
            tuple(e.stats() for e in (*ring, *rest)),
            retries=self._retries,
            unserved=self._unserved,
            waiting=self._waiting,
            waits=self._waits,
        )

    @property
    def waiting(self) -> bool:
        """No proxy is live (once checked): requests would find none."""
        return self._waiting

    async def wait_live(self) -> None:
        """Return once some proxy is live."""
        await self._live.wait()

    @property
    def refused(self) -> bool:
        """Every proxy rejected the crawl's credentials (407), and none can change."""
        return self._refused

    def on_refused(self, call: Callable[[], None]) -> None:
        """Have ``call`` called once the pool is `refused` (at once if it is already)."""
        if self._refused:
            call()
        else:
            self._on_refused.append(call)

    def refusal(self) -> str:
        """Why a `refused` pool stopped the crawl, in one line (no credential in it)."""
        return (
            "every proxy rejected the crawl's credentials (407 Proxy Authentication Required): "
            f"{', '.join(self.states())}; the queued URLs are kept: fix the proxies' "
            "user:password and run again with --resume"
        )

    def json_stats(self) -> dict[str, Any]:
        """`stats` as stats.json holds it."""
        return self.stats().as_json()

    def states(self) -> MappingProxyType[str, State]:
        """Each proxy's state, by label."""
        return MappingProxyType({e.proxy.label: e.state for e in self._entries.values()})

    async def check_due(self) -> None:
        """Re-read the file if it changed, then check every proxy whose check is due, one
        after the other, each waiting the time the one before earned (`CHECK_SHARE`)."""
        await self._round(wait=True)

    async def _round(self, *, wait: bool) -> None:
        """A round: the due proxies probed (all at once: no request to any site), then
        checked in turn while their time has come (or waiting for it)."""
        self.reload()
        now = self._clock()
        due = [e for e in self._entries.values() if e.due <= now]
        if self._prober is not None:
            await asyncio.gather(*(self._probe(e) for e in due if e.probed < e.due))
        due.sort(key=lambda e: e.due)
        for entry in due:
            if entry.due > self._clock() or entry.proxy.url not in self._entries:
                continue  # proved by a request, failed its probe, or gone meanwhile
            if not wait and not self._share.allows(self._clock(), self._has_live()):
                break
            await self._check(entry)
        self._note_live()

    async def _probe(self, entry: _Entry) -> None:
        """``entry``'s proxy probed: one that takes no connection fails (no slot of the site
        taken), an unchecked one that does goes on trial."""
        assert self._prober is not None
        entry.probed = self._clock()
        if not await self._prober(entry.proxy):
            self._failure(entry, "no-connection")
        elif entry.state == "unchecked" and not entry.trial:
            entry.trial = True
            self._ring_stale = True

    async def start(self, tick: float = 1.0) -> None:
        """Probe every proxy and check them until one passes (or none is left: the others
        serve on trial), then run `maintain` in the background until `close`."""
        if self._task is None:
            await self._round(wait=False)
            self._task = asyncio.create_task(self.maintain(tick), name="proxy-manager")

    async def close(self) -> None:
        """Stop the manager."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def maintain(self, tick: float = 1.0) -> None:
        """The manager: a round of `check_due` every ``tick`` seconds, until cancelled."""
        while True:
            try:
                await self._round(wait=False)
            except Exception:
                log.exception("proxy check round failed; trying again")
            await asyncio.sleep(tick)

    def reload(self) -> bool:
        """Re-read the proxies file if its modification time changed; True if it was read.
        A file that cannot be read or holds a bad line leaves the pool as it was."""
        if self._file is None:
            return False
        try:
            mtime = self._file.stat().st_mtime
        except OSError as exc:
            if self._mtime is not None:
                log.warning("proxies file %s unreadable: %s", self._file, exc.strerror)
                self._mtime = None
            return False
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            listed = read_proxies_file(self._file)
        except (OSError, ProxyError) as exc:
            log.warning("proxies file not used: %s", exc, extra={"event": "proxies-file-bad"})
            return False
        self._set_proxies([*self._given, *listed])
        log.info(
            "proxies file %s read: %d proxies",
            self._file,
            len(listed),
            extra={"event": "proxies-file-read", "proxies": len(listed)},
        )
        return True

    def _set_proxies(self, proxies: Iterable[Proxy]) -> None:
        entries = {}
        for proxy in proxies:
            entries[proxy.url] = self._entries.get(proxy.url) or _Entry(proxy)
        self._entries = entries
        self._ring_stale = True

    async def _check(self, entry: _Entry) -> None:
        if self._checker is None:
            return
        entry.due = float("inf")  # not again while this check runs
        async with self._checking:
            if self._has_live() and (wait := self._share.wait(self._clock())) > 0:
                await self._sleep(wait)
            started = self._clock()
            try:
                seconds = await self._checker(entry.proxy)
            except Exception:
                log.exception("checking proxy %s failed", entry.proxy.label)
                seconds = None
            now = self._clock()
        self._judge(entry, seconds, now)
        asked = seconds not in ("no-connection", "no-check-url")  # a request to the host
        self._share.checked(started, now, asked_site=asked, live=self._has_live())

    def _has_live(self) -> bool:
        return any(e.state == "live" for e in self._entries.values())

    def _judge(self, entry: _Entry, seconds: float | str | None, now: float) -> None:
        """``entry`` after its check: ``seconds`` it took, or why it failed."""
        if entry.proxy.url not in self._entries:
            return  # left the pool meanwhile
        if seconds is None or isinstance(seconds, str):
            entry.refused = seconds == REJECTED
            self._failure(entry, seconds or "check failed")
            if entry.state == "live":
                entry.due = now + min(self._check_interval, self._revalidate)
            return
        previous = entry.response_time
        entry.response_time = (
            seconds
            if previous is None
            else (1 - _LATENCY_WEIGHT) * previous + _LATENCY_WEIGHT * seconds
        )
        entry.streak = 0
        entry.refused = False
        self._passed(entry, seconds)

    def _passed(self, entry: _Entry, seconds: float) -> None:
        """``entry`` passed its check, or relayed an answer while on trial."""
        entry.due = self._clock() + self._check_interval
        if entry.state != "live":
            log.info(
                "proxy %s live (%.3fs)",
                entry.proxy.label,
                seconds,
                extra={"event": "proxy-live", "proxy": entry.proxy.label},
            )
            entry.state = "live"
            entry.trial = False
            self._note_live()
        self._ring_stale = True

    def _failure(self, entry: _Entry, reason: str) -> None:
        """One more failure in a row: a live proxy dies after ``max_failures``, an unchecked
        one at once (it failed its first check); a dead one waits for its next check."""
        entry.streak += 1
        entry.reason = reason
        now = self._clock()
        if entry.trial:  # its first request failed: its first check (still due) tells why
            entry.trial = False
            entry.state = "dead"
            entry.due = now if entry.due <= now else now + self._revalidate
            self._ring_stale = True
            self._log_dead(entry)
            self._note_live()
            return
        if entry.state == "dead":
            entry.due = now + self._revalidate
            if reason == REJECTED:  # it will not pass until its credentials change: say so
                self._log_dead(entry)
            return
        if entry.state == "live" and entry.streak < self._max_failures:
            return
        entry.state = "dead"
        entry.due = now + self._revalidate
        self._ring_stale = True
        self._log_dead(entry)
        self._note_live()

    def _log_dead(self, entry: _Entry) -> None:
        log.warning(
            "proxy %s %s (%d failure(s) in a row); checked again in %.0fs",
            entry.proxy.label,
            _why(entry.reason),
            entry.streak,
            max(0.0, entry.due - self._clock()),
            extra={"event": "proxy-dead", "proxy": entry.proxy.label, "reason": entry.reason},
        )

    def _note_live(self) -> None:
        """Log the pool's passing into and out of ``waiting`` (no proxy live), once each."""
        live = self._has_live() or any(e.trial for e in self._entries.values())
        if live:
            self._live.set()
        else:
            self._live.clear()
        checked = all(e.state != "unchecked" for e in self._entries.values())
        waiting = not live and checked and bool(self._entries)
        if waiting and self._file is None and not self._refused:
            self._note_refused()
        if waiting == self._waiting:
            return
        self._waiting = waiting
        if not waiting:
            log.info("a proxy is live again: the crawl goes on", extra={"event": "proxies-back"})
            return
        self._waits += 1
        if not self._refused:  # a refused pool stops the crawl: it does not wait
            reasons = Counter(_why(entry.reason) for entry in self._entries.values())
            target = "" if self._target is None else f" of {redact_url(self._target)}"
            log.warning(
                "no proxy live (%s): the crawl waits for the next proxy check%s (in %gs at "
                "most; a check URL that hangs or fails fails every proxy: --proxy-check-url)",
                ", ".join(f"{count} {why}" for why, count in reasons.items()),
                target,
                self._revalidate,
                extra={"event": "proxies-none-live", "proxies": len(self._entries)},
            )

    def _note_refused(self) -> None:
        """Every proxy is dead: if each one's last check got a 407, the pool is `refused`."""
        if all(e.refused for e in self._entries.values()):
            self._refused = True
            log.error(
                "every proxy rejected the crawl's credentials (407): the crawl stops",
                extra={"event": "proxies-refused", "proxies": len(self._entries)},
            )
            calls, self._on_refused = self._on_refused, []
            for call in calls:
                call()

    def _live_ring(self) -> list[_Entry]:
        if self._ring_stale:
            live = [e for e in self._entries.values() if e.state == "live"]
            live.sort(key=lambda e: e.response_time or 0.0)
            self._ring = live + [e for e in self._entries.values() if e.trial]
            self._ring_stale = False
        return self._ring


def _why(reason: str) -> str:
    """A proxy's failure as the log says it."""
    if reason == REJECTED:
        return "rejected: credentials (407 Proxy Authentication Required)"
    return f"failing: {reason or 'not checked yet'}"
