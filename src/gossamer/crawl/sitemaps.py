"""The sitemap stage: the sitemaps and feeds a crawl learns of are read, and their URLs
handed to admission.

Where they come from: the ``Sitemap:`` lines of every robots.txt the crawl learns
(:meth:`SitemapStage.learned`, the robots cache's ``on_rules``: a robots lease's, or one
asked for out of band), and ``--sitemap`` (:meth:`SitemapStage.given`). Each is read by
:func:`gossamer.discover.read_sitemaps`, its child sitemaps too; every request goes through
the host's politeness slot (the host gate; each file takes it in turn with the host's pages,
:mod:`gossamer.frontier.slotclaims`) and, unless ``--no-robots``, robots.txt: a sitemap
robots.txt disallows is not fetched, and recorded as blocked. The fetcher's timeouts and
body caps hold, then the reader's limits; the sitemaps one robots.txt names share one budget
of files a round, and a read takes half of the event loop at most
(:mod:`gossamer.crawl.sitemapbudget`).

Concurrency is bounded: one sitemap at a time per host (that of the sitemap's URL), a few
hosts at once, each in a task of its own, so the crawl loop never waits for a read. The
stage is the crawl ledger's work aside (:class:`gossamer.ledger.Aside`): the crawl does not
end while a read is under way or waiting (:meth:`SitemapStage.busy`, asked before the
frontier's ``done()`` is believed), and a read's records go through the ledger in order
with the pages'. The loop looks at the frontier at every checkpoint, so URLs a read queues
are leased within ``--checkpoint-interval``.

Entries go to ``frontier.add`` in batches, at depth 1: a sitemap stands one hop below its site,
as the links of its home page do, so ``--max-depth 0`` still crawls the seeds only and breadth
first puts the seeds before what their sites announce. The crawl's scope, per-host budgets and
trap guards apply as for links (entries of a host whose page budget is spent are turned away:
`~.sitemapbudget.Intake`). What a sitemap says of each URL (``lastmod``, ``changefreq``,
``priority``) is staged in crawl.db's ``sitemap_entries`` in the same batches. Each file read
becomes a record of kind ``sitemap`` (status, ``format``, entry and dropped counts in ``extra``,
flags), in pages.jsonl, crawl.db and the store like a page's, counted as no page.

A sitemap read to its end is staged in ``sitemap_reads`` after its entries and records, so
``--resume`` reads again only the sitemaps a stopped or killed crawl had not finished (their
entries seen before are duplicates then), and none read already. A continuous crawl
(``--recrawl``) reads each sitemap again ``reread`` seconds after its last read (its URL's
initial revisit interval: ``[[revisit]]`` tables set a feed's), so what it announces later is
found, sooner after a read that failed (a bounded backoff: :mod:`~.sitemaprereads`); with
``--resume`` it reads them all again at the start. A read that ended with an error of its own
is recorded too (kind ``sitemap``, error ``internal-error``), and not marked read.

In a cluster job each worker has its stage; entries go to the Redis frontier's ``add``. By
host a worker reads only the sitemaps of hosts it owns (`SitemapStage.own`), at their owner's
pace (:mod:`gossamer.frontier.gate`): one of a host owned elsewhere waits, not `busy`, until
the worker gains the host (`moved`); a read whose host is given away stops at its next file,
its claim given back for the new owner; an index's child on a host owned elsewhere is not
fetched (error ``owned-elsewhere``). ``--sitemap`` URLs are read by the first worker that
claims them (by host: of their host's owner).
Each sitemap is read once per job: a worker claims it in Redis first
(:mod:`gossamer.cluster.sitemaps`), for the claim timeout, and marks it done only once its
records are in every sink (the ledger's ``after_checkpoint``): a worker killed mid-read loses
no entry it handed to ``add`` and no record, and once its claim expires the next worker that
learns the host's robots.txt reads it again. A continuous job reads each sitemap again on
the same schedule, one worker at a time: the last read's claim says when the next is due."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

from gossamer.crawl.sitemapbudget import SiteBudgets, skipped
from gossamer.crawl.sitemapfiles import (
    OWNED_ELSEWHERE,
    READ_SQL,
    Answer,
    Claims,
    Counts,
    Dated,
    Fetch,
    FileScope,
    SitemapStats,
    admit,
    file_record,
    finish_claim,
    release_claim,
)
from gossamer.crawl.sitemaprereads import Rereads, failed
from gossamer.crawldb import CrawlDB
from gossamer.discover import (
    Entry,
    FileResult,
    Flag,
    Format,
    Limits,
    Reply,
    SitemapScope,
    read_sitemaps,
)
from gossamer.fetch.http import FetchResult
from gossamer.frontier.base import Frontier
from gossamer.frontier.gate import NotOwned
from gossamer.frontier.robots import RobotsPolicy
from gossamer.ledger import Ledger
from gossamer.redact import redact_url
from gossamer.sinks.base import Archive
from gossamer.urls import host_key

__all__ = ["GIVEN", "Claims", "SitemapStage", "SitemapStats"]

log = logging.getLogger(__name__)

GIVEN = ""
"""The origin of a sitemap given by ``--sitemap`` (no robots.txt named it)."""


class SitemapStage:
    """See the module doc. ``fetch`` goes through the host gate; ``allowed`` is robots.txt's
    verdict (None: ``--no-robots``); ``archive`` keeps every answer (``--warc``); ``db`` is
    crawl.db; ``hosts`` is how many hosts' sitemaps are read at once; ``refusal`` says why
    the crawl may not visit a URL (its scope: see `FileScope`): only the robots.txt of hosts
    it may visit name sitemaps for it (a robots.txt asked for only to check a sitemap on
    another host names none), and it fetches no sitemap file it may not; ``reread`` (a
    continuous crawl) the seconds after which a sitemap read is read again."""

    def __init__(
        self,
        fetch: Fetch,
        db: CrawlDB,
        *,
        allowed: Callable[[str], Awaitable[bool]] | None = None,
        archive: Archive | None = None,
        limits: Limits | None = None,
        hosts: int = 4,
        refusal: Callable[[str], str | None] | None = None,
        reread: Callable[[str], float] | None = None,
    ) -> None:
        self._fetch = fetch
        self._rereads = Rereads(reread, self._again)
        self._db = db
        self._allowed = allowed
        self._archive = archive
        self._limits = limits or Limits()
        self._budgets = SiteBudgets(GIVEN)
        self._room = asyncio.Semaphore(hosts)
        self._named: dict[str, set[str]] = {}
        """Sitemap URL (canonical) -> origins that named it (``GIVEN`` for --sitemap)."""
        self._done: set[tuple[str, str]] = set()
        self._queues: dict[str, OrderedDict[str, None]] = {}
        """Sitemaps waiting per host, in order (robots.txt may name 20,000: oldest at once)."""
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._answers: dict[str, Answer] = {}
        self._counts = Counts()
        self._scope = FileScope(refusal, self._counts, GIVEN)
        self._frontier: Frontier | None = None
        self._ledger: Ledger | None = None
        self._claims: Claims | None = None
        self._owns: Callable[[str], bool] = lambda host: True  # alone: every host is ours
        self._sooner: Dated | None = None
        self._vouch: Dated | None = None

    def share(self, claims: Claims) -> None:
        """A cluster worker's stage: read a sitemap only once ``claims`` gives it the read."""
        self._claims = claims

    def own(self, owns: Callable[[str], bool]) -> None:
        """By host: read the sitemaps of hosts ``owns`` (by key) only; `moved` tells a move."""
        self._owns = owns

    def moved(self) -> None:
        """The hosts owned changed: read the sitemaps waiting for those gained."""
        for host in list(self._queues):
            self._spawn(host)

    def use_lastmod(self, sooner: Dated, vouch: Dated | None = None) -> None:
        """A continuous crawl's: entries with a ``lastmod`` go to ``sooner`` too, which
        makes those newer than their URL's last fetch due now, and those whose date is of
        their last change (not a feed's date of publication: ``Entry.published``) to
        ``vouch``, which marks those older unchanged as of the read."""
        self._sooner, self._vouch = sooner, vouch

    def use_robots(self, allowed: Callable[[str], Awaitable[bool]]) -> None:
        """Ask robots.txt (``allowed``: the robots cache's) before each file is fetched."""
        self._allowed = allowed

    # -- what comes in ----------------------------------------------------------------------

    def learned(self, origin: str, policy: RobotsPolicy) -> None:
        """The robots.txt of ``origin`` is known: its ``Sitemap:`` lines are to be read."""
        if not self._scope.visits(origin + "/"):
            return
        for url in policy.sitemaps:
            self._want(origin, url)

    def given(self, urls: Iterable[str]) -> None:
        """``--sitemap`` URLs: to be read (once per crawl)."""
        for url in urls:
            self._want(GIVEN, url)

    def restore(self) -> None:
        """``--resume``: the sitemaps already read are not read again, and those robots.txt
        named that were not read to their end are read now. A continuous crawl reads them all
        again."""
        rows = self._db.query("SELECT origin, url FROM sitemap_reads")
        read = [(origin, self._db.reveal(url)) for origin, url in rows]  # its password back
        if not self._rereads.on:
            self._done.update(read)
        for origin, url in [*read, *self._db.query("SELECT host, url FROM sitemaps")]:
            self._want(origin, url)

    def _want(self, origin: str, url: str) -> None:
        canonical = self._scope.canonical(url, origin)
        if canonical is None:
            return
        if (origin, canonical) in self._done or not self._scope.allows(canonical, origin):
            return
        origins = self._named.setdefault(canonical, set())
        if origin in origins:
            return
        origins.add(origin)
        # queued already: its read to come grants ``origin`` too
        self._queues.setdefault(host_key(canonical), OrderedDict()).setdefault(canonical)
        self._spawn(host_key(canonical))

    # -- the reads --------------------------------------------------------------------------

    def start(self, frontier: Frontier) -> None:
        """Entries go to ``frontier`` (the crawl's, before its loop starts)."""
        self._frontier = frontier
        self._budgets.spent = frontier.budget_spent

    def bind(self, ledger: Ledger) -> None:
        """Read what is waiting, and from now on what comes, recording through ``ledger``
        (the crawl loop's, which waits for the reads, :meth:`busy`, before it ends)."""
        self._ledger = ledger
        for host in list(self._queues):
            self._spawn(host)

    def busy(self) -> bool:
        """Whether a sitemap is being read or waits to be (of a host this worker owns)."""
        return bool(self._tasks) or any(self._owns(host) for host in self._queues)

    def _spawn(self, host: str) -> None:
        busy = self._ledger is None or self._frontier is None or host in self._tasks
        if busy or not self._owns(host):  # a host owned elsewhere: its owner reads it
            return
        task = asyncio.create_task(self._read_host(host), name=f"sitemaps {host}")
        self._tasks[host] = task

    async def _read_host(self, host: str) -> None:
        """Read ``host``'s waiting sitemaps one after the other (a few hosts at once)."""
        try:
            async with self._room:
                queue = self._queues[host]
                while queue and self._owns(host):
                    url = next(iter(queue))
                    read = await self._read_contained(url)
                    del queue[url]
                    if self._named.get(url, read) - read:  # named again while being read
                        queue[url] = None
                    await asyncio.sleep(0)  # a read the budget left out had no await
        finally:
            # No await from the queue's last look to here: a sitemap queued meanwhile found
            # this task running and is read by it.
            if not self._queues.get(host):
                self._queues.pop(host, None)
            del self._tasks[host]

    async def _read_contained(self, url: str) -> set[str]:
        """Read ``url``; the origins its read granted."""
        origins = set(self._named.get(url, ()))
        try:
            if self._claims is not None and not await self._claims.claim(url):
                self._ask_later(url, origins)
                return origins  # another worker read it (or reads it now)
            try:
                await self._read(url, origins)
            except asyncio.CancelledError:
                await release_claim(self._claims, url)
                raise
            except NotOwned:  # its host was given away: the new owner reads it
                await release_claim(self._claims, url)
                return set()
            if self._claims is not None and self._ledger is not None:
                self._ledger.after_checkpoint(functools.partial(finish_claim, self._claims, url))
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug a sitemap revealed ends its read, not the crawl
            log.exception("internal error reading sitemap %s; crawl goes on", redact_url(url))
            await self._failed(url, origins)
        return origins

    async def _failed(self, url: str, origins: set[str]) -> None:
        """A read that ended with an error of its own (see the module doc)."""
        with contextlib.suppress(Exception):  # the record must not be the next error
            self._file(FileResult(url, None, Format.UNKNOWN, 0), error="internal-error")
        await release_claim(self._claims, url)
        self._rereads.failure(url, origins)

    def _ask_later(self, url: str, origins: set[str]) -> None:
        """A continuous job's sitemap another worker read or reads: claimed again once the
        claims say its next read may be due."""
        wait = None if not self._rereads.on or self._claims is None else self._claims.later(url)
        if wait is not None:
            self._rereads.later(url, origins, wait)

    async def _read(self, url: str, origins: set[str]) -> None:
        began = asyncio.get_running_loop().time()
        if (left := self._budgets.left(origins)) > 0:
            files, entries, unanswered = await self._walk(url, origins, self._limits.at_most(left))
            self._budgets.spend(url, origins, files, entries)
        else:  # the sitemaps its site's robots.txt names took their files (or entries)
            self._file(skipped(url, self._budgets.spent_flag(origins)))
            unanswered = False
        self._db.stage(READ_SQL, [(origin, self._db.hide(url)) for origin in origins])
        self._done.update((origin, url) for origin in origins)
        if unanswered:
            self._rereads.failure(url, origins)
        else:
            self._rereads.read(url, origins, began)

    async def _walk(self, url: str, origins: set[str], limits: Limits) -> tuple[int, int, bool]:
        """Read ``url`` (and the sitemaps it lists) within ``limits`` and the entries left to
        ``origins``; the files read, entries listed, and whether its own fetch failed."""
        scope = SitemapScope({origin: [url] for origin in origins if origin != GIVEN})
        batch: list[Entry] = []
        files, unanswered, intake = 0, False, self._budgets.intake(origins)
        reply = functools.partial(self._reply, host_key(url))
        may_fetch = functools.partial(self._scope.walks, url if GIVEN in origins else None)
        walk = read_sitemaps([url], reply, scope=scope, limits=limits, may_fetch=may_fetch)
        async for item in walk:
            if isinstance(item, FileResult):
                await self._admit(batch)
                unanswered |= self._file(item) and item.depth == 0
                files += 1
            elif (take := intake.take(item)) is None:  # the site's entries are spent: stop
                self._file(skipped(item.source, Flag.TOO_MANY_URLS))
                break
            elif take:
                batch.append(item)
            if intake.batched():
                await self._admit(batch)
                await intake.pause()
        await self._admit(batch)
        self._counts.budget += intake.turned
        return files, intake.listed, unanswered

    def _again(self, url: str, origins: set[str]) -> None:
        """A continuous crawl's next read of ``url``, for the origins its last read granted."""
        self._budgets.refund(url)
        named = self._named.get(url, set())
        for origin in origins:
            self._done.discard((origin, url))
            named.discard(origin)
            self._want(origin, url)

    async def _reply(self, host: str, url: str) -> Reply:
        """One file's fetch for the reader of a sitemap of ``host``: robots.txt asked first,
        through the host gate, archived; what its record needs kept."""
        ours = self._owns(key := host_key(url))
        if not ours and key == host:
            raise NotOwned(url)
        if not ours or (self._allowed is not None and not await self._allowed(url)):
            self._answers[url] = Answer(None, error=None if ours else OWNED_ELSEWHERE)
            return None, {}, b""
        result: FetchResult = await self._fetch.fetch(url)
        archived = await self._archive.write(result) if self._archive is not None else None
        self._answers[url] = Answer(result, archived)
        if result.status is None:
            return None, {}, b""
        headers = dict(result.headers)
        if result.location is not None:
            headers["location"] = result.location
        return result.status, headers, result.body

    async def _admit(self, batch: list[Entry]) -> None:
        """Hand ``batch`` to admission and stage what it says of each URL; empties it."""
        if batch and self._frontier is not None:
            entries, batch[:] = list(batch), []
            dated = self._sooner, self._vouch
            await admit(self._frontier, self._db, entries, dated, self._counts)

    def _file(self, file: FileResult, error: str | None = None) -> bool:
        """Record one file read (``error``: its read's); whether its fetch failed."""
        answer = self._answers.pop(file.url, Answer(None))
        record = file_record(file, answer, self._allowed is not None, self._counts, error)
        if self._ledger is not None:
            self._ledger.note(record, answer.archived)
        return failed(answer.result)

    # -- the rest ---------------------------------------------------------------------------

    def stats(self) -> SitemapStats:
        """A frozen snapshot."""
        return self._counts.snapshot(len(self._tasks), sum(map(len, self._queues.values())))

    def json_stats(self) -> dict[str, int]:
        """:meth:`stats` as stats.json shows it."""
        return self.stats().as_json()

    async def close(self) -> None:
        """Stop the reads under way (a stopped crawl reads them again when resumed)."""
        self._rereads.close()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
