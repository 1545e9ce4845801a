"""The walk over sitemaps: fetch each once, read it, follow its index's children.

:func:`read_sitemaps` starts from sitemap and feed URLs (robots.txt's ``Sitemap:`` lines,
``--sitemap``), fetches each through the ``fetch`` it is given (the crawl's goes through the
host's politeness gate and robots.txt), and yields every entry in scope as it is read, then a
:class:`~gossamer.discover.model.FileResult` for the file. Children of a sitemap index are
fetched after it, breadth first, each URL once, ``Limits.max_depth`` levels of indexes deep
and ``Limits.max_files`` files in all; a redirect is followed ``Limits.max_redirects`` times.
No file is fetched that ``may_fetch`` refuses (the crawl's scope: a child or a redirect's
target on a host or port the crawl may not visit): such a child is dropped, such a redirect
not followed.
An index whose children can no longer be read (the depth limit, or the file budget taken) is
read no further: its result counts the children read until then, flagged.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Protocol
from urllib.parse import urljoin

import msgspec

from gossamer.discover.model import Child, Entry, FileResult, Flag, Format, Item, Limits
from gossamer.discover.reader import SLICE_BYTES, SitemapReader
from gossamer.discover.scope import Grant, SitemapScope

__all__ = ["Body", "Reply", "SitemapFetch", "read_sitemaps"]

logger = logging.getLogger(__name__)

_REFUSED = 10_000
"""URLs ``may_fetch`` refused a walk remembers at most (past it, one asked again is asked)."""

Body = bytes | AsyncIterable[bytes]
"""A response body: whole, or its chunks as they arrive."""
Reply = tuple[int | None, Mapping[str, str], Body]
"""What a fetch returns: the status (None: no answer), the headers, the body."""


class SitemapFetch(Protocol):
    """Fetches one URL without following redirects and never raises. An async-generator
    body is closed (``aclose``) when the reader stops early, so it should release its
    response in a ``finally``."""

    def __call__(self, url: str) -> Awaitable[Reply]: ...


class _Job(msgspec.Struct):
    url: str
    depth: int
    inherited: frozenset[str] = frozenset()
    redirects: int = 0


class _File(msgspec.Struct):
    """The tally of one file as it is read."""

    job: _Job
    grant: Grant
    kept: int = 0
    dropped: int = 0
    flags: list[Flag] = msgspec.field(default_factory=list)

    def flag(self, flag: Flag) -> None:
        if flag not in self.flags:
            self.flags.append(flag)


def _anywhere(url: str) -> bool:
    return True


class _Walk:
    """The state of one walk: the queue, the URLs seen, the file budget."""

    def __init__(
        self,
        fetch: SitemapFetch,
        scope: SitemapScope,
        limits: Limits,
        may_fetch: Callable[[str], bool] = _anywhere,
    ) -> None:
        self.fetch = fetch
        self.scope = scope
        self.limits = limits
        self._may_fetch = may_fetch
        self.queue: deque[_Job] = deque()
        self.seen: set[str] = set()
        self.refused: set[str] = set()
        self.files = 0

    def add(self, url: str, depth: int, inherited: frozenset[str] = frozenset()) -> bool:
        """Queues a sitemap not seen yet; False once the file budget is spent."""
        if url in self.seen:
            return True
        if self.files + len(self.queue) >= self.limits.max_files:
            return False
        self.seen.add(url)
        self.queue.append(_Job(url, depth, inherited))
        return True

    def may_fetch(self, url: str) -> bool:
        """Whether the file at ``url`` may be fetched (asked once per URL of the walk)."""
        if url in self.seen:
            return True
        if url in self.refused:
            return False
        if self._may_fetch(url):
            return True
        if len(self.refused) < _REFUSED:
            self.refused.add(url)
        return False

    def entries(self, items: list[Item], tally: _File) -> list[Entry]:
        """The entries of ``items`` in scope; children in scope are queued."""
        kept = []
        for item in items:
            url = self.scope.canonical(item.url)
            if url is None or not tally.grant.allows(url):
                tally.dropped += 1
            elif isinstance(item, Child):
                self._child(url, tally)
            else:
                tally.kept += 1
                kept.append(item._replace(url=url))
        return kept

    def full(self, job: _Job) -> bool:
        """Whether no child of ``job`` (an index) could be queued any more: it is at the
        depth limit, or the file budget is taken."""
        limits = self.limits
        return job.depth >= limits.max_depth or self.files + len(self.queue) >= limits.max_files

    def _child(self, url: str, tally: _File) -> None:
        if not self.may_fetch(url):
            tally.dropped += 1
            return
        tally.kept += 1
        if tally.job.depth >= self.limits.max_depth:
            tally.flag(Flag.DEPTH)
        elif not self.add(url, tally.job.depth + 1, tally.grant.sites):
            tally.flag(Flag.TOO_MANY_FILES)

    def redirect(self, job: _Job, grant: Grant, location: str | None) -> bool:
        """Queues a redirect's target (first: it stands for the URL); False if none is
        followed. The target keeps what robots.txt granted the URL (on the same site)."""
        target = self.scope.canonical(urljoin(job.url, location or ""))
        if location is None or target is None or job.redirects >= self.limits.max_redirects:
            return False
        if not self.may_fetch(target):
            return False
        if target in self.seen or self.files + len(self.queue) >= self.limits.max_files:
            return False
        self.seen.add(target)
        self.queue.appendleft(_Job(target, job.depth, grant.sites, job.redirects + 1))
        return True


async def read_sitemaps(
    start_urls: Iterable[str],
    fetch: SitemapFetch,
    *,
    scope: SitemapScope | None = None,
    limits: Limits | None = None,
    may_fetch: Callable[[str], bool] = _anywhere,
) -> AsyncIterator[Entry | FileResult]:
    """Reads the sitemaps and feeds at ``start_urls`` and the sitemaps their indexes list.

    Yields each entry in scope as soon as it is read (its URL canonical), and after each file
    its :class:`FileResult`. ``scope`` holds what robots.txt said (none: each sitemap lists
    its own directory only). ``may_fetch`` tells whether a file (canonical URL) may be
    fetched at all (the crawl's scope); it is asked once per URL. Invalid start URLs are
    skipped, as are those ``may_fetch`` refuses.
    """
    walk = _Walk(fetch, scope or SitemapScope(), limits or Limits(), may_fetch)
    for url in start_urls:
        canonical = walk.scope.canonical(url)
        if canonical is not None and walk.may_fetch(canonical):
            walk.add(canonical, 0)
    while walk.queue:
        job = walk.queue.popleft()
        walk.files += 1
        async for item in _read_one(walk, job):
            yield item


async def _read_one(walk: _Walk, job: _Job) -> AsyncIterator[Entry | FileResult]:
    logger.debug("reading sitemap %s (depth %d)", job.url, job.depth)
    status, headers, body = await walk.fetch(job.url)
    tally = _File(job, walk.scope.grant(job.url, job.inherited))
    if status is None or not 200 <= status < 300:
        location = headers.get("Location", headers.get("location"))
        redirected = status is not None and 300 <= status < 400
        if not (redirected and walk.redirect(job, tally.grant, location)):
            tally.flag(Flag.HTTP_ERROR)
        await _close(body)
        yield _result(job, status, None, tally)
        return
    reader = SitemapReader(job.url, walk.limits)
    try:
        async for items in _read_body(reader, body):
            for entry in walk.entries(items, tally):
                yield entry
            if reader.format is Format.INDEX and tally.flags and walk.full(job):
                reader.cut(tally.flags[0])  # the rest of its children could not be read
    finally:
        await _close(body)
    yield _result(job, status, reader, tally)


async def _read_body(reader: SitemapReader, body: Body) -> AsyncIterator[list[Item]]:
    """The reader's entries a slice at a time, until the body ends or a limit cuts it."""
    if isinstance(body, bytes | bytearray | memoryview):
        view = memoryview(body)
        for start in range(0, len(view), SLICE_BYTES):
            async for items in _slices(reader, bytes(view[start : start + SLICE_BYTES])):
                yield items
            if reader.done:
                break
    else:
        async for chunk in body:
            async for items in _slices(reader, chunk):
                yield items
            if reader.done:
                break
    yield reader.close()


async def _slices(reader: SitemapReader, chunk: bytes) -> AsyncIterator[list[Item]]:
    """The entries of ``chunk``, one slice of it (uncompressed) after the other, the event
    loop given a turn after each: a file is no one stretch of CPU, whatever it inflates to."""
    yield reader.feed(chunk)
    await asyncio.sleep(0)
    while reader.backlog:
        yield reader.more()
        await asyncio.sleep(0)


async def _close(body: Body) -> None:
    """Closes a chunk iterator the reader left early (its response goes back)."""
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        await aclose()


def _result(
    job: _Job, status: int | None, reader: SitemapReader | None, tally: _File
) -> FileResult:
    flags = [*(reader.flags if reader is not None else ()), *tally.flags]
    if tally.dropped:
        flags.append(Flag.OUT_OF_SCOPE)
    result = FileResult(
        url=job.url,
        status=status,
        format=reader.format if reader is not None else Format.UNKNOWN,
        count=tally.kept,
        dropped=tally.dropped,
        flags=tuple(dict.fromkeys(flags)),
        depth=job.depth,
        bytes_read=reader.bytes_read if reader is not None else 0,
    )
    if result.flags:
        logger.info(
            "sitemap %s: %d entries, flags %s", job.url, result.count, ",".join(result.flags)
        )
    return result
