"""The proxy pool: the proxies a crawl sends its requests through, checked and ranked.

Three parts:

- **collector**: the proxies come from ``--proxy`` URLs and a ``--proxies-file`` (one URL a
  line, ``#`` comments), which is re-read whenever its modification time changes (another
  program, the collector proper, keeps it up to date); proxies gone from the file leave the
  pool. `gossamer.proxyurl.parse_proxy` validates a URL: http, https or socks5, a host, a
  port, optional credentials, nothing else.
- **manager** (`ProxyPool.maintain`): checks each proxy by sending a request to the check URL
  through it before first use and ``check_interval`` seconds after its last relayed answer
  while live (a proxy in use needs no check), and records its response time. A proxy that
  relays the site's answer, whatever its status, passes; one that fails to (no connection, a
  timeout, a TLS or CONNECT failure, an error of its own: see `proxy_fault`) fails. A proxy
  that fails ``max_failures`` times in a row (checks or requests) is dead; a dead proxy is
  checked again ``revalidate`` seconds later and comes back when that passes. Checks are
  requests to the check URL's host like any other: the fetcher sends them through the
  host's politeness slot.
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
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import msgspec

from gossamer.fetch.proxyfault import REJECTED, ProxyAnswer, fetch_through, proxy_fault
from gossamer.proxyurl import Proxy, ProxyError, parse_proxy
from gossamer.redact import redact_url

__all__ = [
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

_MAX_FILE_BYTES = 1 << 20
_MAX_DOMAINS = 100_000
"""Domains whose place in the ring is remembered (forgotten all at once when full)."""
_LATENCY_WEIGHT = 0.3
"""Weight of the newest check in a proxy's response time (an exponential average)."""

State = Literal["unchecked", "live", "dead"]


Clock = Callable[[], float]


def read_proxies_file(path: Path) -> list[Proxy]:
    """The proxies of a file, one URL a line (blank and ``#`` lines skipped); raises
    `ProxyError` naming the line of a bad one, or OSError."""
    with path.open("rb") as file:
        raw = file.read(_MAX_FILE_BYTES + 1)
    if len(raw) > _MAX_FILE_BYTES:
        raise ProxyError(f"proxies file {path} is larger than {_MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProxyError(f"proxies file {path} is not UTF-8 text") from None
    proxies = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                proxies.append(parse_proxy(line))
            except ProxyError as exc:
                raise ProxyError(f"{path}, line {number}: {exc}") from None
    return proxies


class ProxyStats(msgspec.Struct, frozen=True):
    """One proxy's figures: requests sent through it and those that failed at the proxy,
    the mean time of its answered requests, its checked response time and its state."""

    proxy: str
    state: State
    requests: int
    failures: int
    mean_latency: float
    response_time: float | None


class PoolStats(msgspec.Struct, frozen=True):
    """A snapshot of the pool: its proxies, and requests that found no live proxy or were
    tried again through another proxy."""

    proxies: tuple[ProxyStats, ...]
    retries: int
    unserved: int
    waiting: bool = False
    """No proxy is live (after the first checks): the crawl waits for the next check."""
    waits: int = 0
    """Times the pool has had no live proxy left."""

    @property
    def live(self) -> int:
        """Proxies in the ring."""
        return sum(p.state == "live" for p in self.proxies)

    def as_json(self) -> dict[str, Any]:
        """The snapshot as stats.json holds it."""
        return {
            "live": self.live,
            "waiting": self.waiting,
            "waits": self.waits,
            "retries": self.retries,
            "unserved": self.unserved,
            "proxies": [
                {
                    "proxy": p.proxy,
                    "state": p.state,
                    "requests": p.requests,
                    "failures": p.failures,
                    "mean_latency": round(p.mean_latency, 4),
                    "response_time": None if p.response_time is None else round(p.response_time, 4),
                }
                for p in self.proxies
            ],
        }


class _Entry:
    """A proxy's mutable record in the pool."""

    __slots__ = (
        "due",
        "failures",
        "latency",
        "proxy",
        "reason",
        "refused",
        "requests",
        "response_time",
        "state",
        "streak",
        "timed",
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
        self._target: str | None = None
        self._clock = clock
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

    def set_checker(self, checker: Checker, target: str | None = None) -> None:
        """The function the manager checks proxies with, and the URL it asks for (named
        when no proxy passes: a check URL that hangs or fails fails every proxy)."""
        self._checker = checker
        self._target = target

    def __len__(self) -> int:
        return len(self._entries)

    def pick(self, domain: str, exclude: Iterable[Proxy] = ()) -> Proxy | None:
        """The next live proxy for ``domain`` (its step on the ring), skipping ``exclude``
        (the proxies a request failed through already: this pick is a retry); None when no
        live proxy is left."""
        ring = self._live_ring()
        skip = {p.url for p in exclude}
        choices = [e for e in ring if e.proxy.url not in skip] if skip else ring
        if not choices:
            self._unserved += not skip
            return None
        self._retries += bool(skip)
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

    def succeeded(self, proxy: Proxy, elapsed: float) -> None:
        """A request through ``proxy`` got an answer after ``elapsed`` seconds: proof enough
        that it works, so a live one's next check waits ``check_interval`` from now (checks
        take the check URL's host's politeness slots, which a crawl of it needs)."""
        entry = self._entries.get(proxy.url)
        if entry is not None:
            entry.requests += 1
            entry.timed += 1
            entry.latency += elapsed
            entry.streak = 0
            if entry.state == "live" and entry.due != float("inf"):
                entry.due = max(entry.due, self._clock() + self._check_interval)

    def failed(self, proxy: Proxy, reason: str) -> None:
        """A request through ``proxy`` failed at the proxy (``reason``, a fetch error)."""
        entry = self._entries.get(proxy.url)
        if entry is not None:
            entry.requests += 1
            entry.failures += 1
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
        rest = [e for e in self._entries.values() if e.state != "live"]
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
        """Re-read the file if it changed, then check every proxy whose check is due, all at
        once (the manager's one round)."""
        self.reload()
        now = self._clock()
        due = [e for e in self._entries.values() if e.due <= now]
        if due:
            await asyncio.gather(*(self._check(e) for e in due))
        self._note_live()

    async def start(self, tick: float = 1.0) -> None:
        """Check every proxy once (before the first request), then run `maintain` in the
        background until `close`."""
        if self._task is None:
            await self.check_due()
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
                await self.check_due()
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
        try:
            seconds = await self._checker(entry.proxy)
        except Exception:
            log.exception("checking proxy %s failed", entry.proxy.label)
            seconds = None
        if entry.proxy.url not in self._entries:
            return  # left the pool meanwhile
        now = self._clock()
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
        entry.due = now + self._check_interval
        if entry.state != "live":
            log.info(
                "proxy %s live (%.3fs)",
                entry.proxy.label,
                seconds,
                extra={"event": "proxy-live", "proxy": entry.proxy.label},
            )
            entry.state = "live"
            self._note_live()
        self._ring_stale = True

    def _failure(self, entry: _Entry, reason: str) -> None:
        """One more failure in a row: a live proxy dies after ``max_failures``, an unchecked
        one at once (it failed its first check); a dead one waits for its next check."""
        entry.streak += 1
        entry.reason = reason
        now = self._clock()
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
            self._revalidate,
            extra={"event": "proxy-dead", "proxy": entry.proxy.label, "reason": entry.reason},
        )

    def _note_live(self) -> None:
        """Log the pool's passing into and out of ``waiting`` (no proxy live), once each."""
        live = any(e.state == "live" for e in self._entries.values())
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
            self._ring = live
            self._ring_stale = False
        return self._ring


def _why(reason: str) -> str:
    """A proxy's failure as the log says it."""
    if reason == REJECTED:
        return "rejected: credentials (407 Proxy Authentication Required)"
    return f"failing: {reason or 'not checked yet'}"


async def proxy_listens(proxy: Proxy, connect_timeout: float) -> bool:
    """Whether ``proxy`` accepts a TCP connection within ``connect_timeout`` seconds: one that
    does not is dead without a request to the site, so a round of dead proxies takes none
    of the site's slots (and holds none of its pages back)."""
    try:
        async with asyncio.timeout(connect_timeout):
            _, writer = await asyncio.open_connection(proxy.host, proxy.port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True
