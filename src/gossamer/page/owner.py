"""The site owner's robots directives of a fetched page, for the page stage: ``X-Robots-Tag``
headers and robots meta tags (see :mod:`gossamer.page.directives`) and what they do to the
page: ``nofollow`` drops its links (unless ``follow_nofollow``), ``noindex`` withholds its
content (unless ``ignore_noindex``), ``noarchive`` its payload from the archive (unless
``archive_noarchive``): a WARC is a replayable copy of the page, exactly what ``noarchive``
asks a crawler not to keep; its text and record are kept, as for any page.

A rendered page (``--render``) answers to the most restrictive of its served document's
directives and its rendered DOM's: a script that removes a served ``noindex`` does not undo
it (a search engine does not even render such a page), and one that adds a ``noindex``
holds as well.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gossamer.page import read
from gossamer.page.directives import Directives, header_directives, meta_directives
from gossamer.page.state import Fetched, Withheld

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from gossamer.page.state import PageState

_SERVED_WORDS = re.compile(rb"(?i)noindex|nofollow|none|noarchive|unavailable_after")
"""The words a served document's robots meta tag restricts with: one without any is not
parsed again."""


class OwnerSignals:
    """Reads a page's robots directives and applies them to its state."""

    def __init__(
        self,
        reader: read.HtmlReader,
        token: str,
        *,
        follow_nofollow: bool = False,
        ignore_noindex: bool = False,
        archive_noarchive: bool = False,
    ) -> None:
        self._reader = reader
        self._token = token
        self._follow_nofollow = follow_nofollow
        self._ignore_noindex = ignore_noindex
        self._archive_noarchive = archive_noarchive

    def apply(self, state: PageState) -> Awaitable[None] | None:
        """A stored page's directives: its headers', its (rendered) DOM's, and, rendered, its
        served document's (a coroutine then: that document is parsed)."""
        result = state.result
        found = header_directives(result.headers, self._token, result.fetched_at)
        parsed = state.parsed
        if state.aside is not None:
            found = found.merge(state.aside.robots)
        elif parsed is not None and parsed.tree is not None:
            metas = meta_directives(parsed.tree, self._token, result.fetched_at, parsed.metas)
            found = found.merge(metas)
        served = result.served
        if served is not None and _SERVED_WORDS.search(served) is not None:
            return self._apply_served(state, found, served)
        self._restrict(state, found)
        return None

    async def _apply_served(self, state: PageState, found: Directives, served: bytes) -> None:
        result = state.result
        tree = await self._reader.tree(served, result.served_charset)
        if tree is not None:
            found = found.merge(meta_directives(tree, self._token, result.fetched_at))
        self._restrict(state, found)

    def _restrict(self, state: PageState, found: Directives) -> None:
        state.flags += found.flags
        if found.nofollow and not self._follow_nofollow:
            state.links = []
        if found.noindex and not self._ignore_noindex:
            state.withheld = "noindex"
        elif found.noarchive and not self._archive_noarchive:
            state.unarchived = "noarchive"

    async def apply_other(self, state: PageState) -> None:
        """An answer that is not stored (an error, a redirect): its ``noindex`` withholds its
        body from the archive all the same, and flags its record."""
        found = await self.directives(state.result)
        state.flags += found.flags
        if found.noindex and not self._ignore_noindex:
            state.withheld = "noindex"
        elif found.noarchive and not self._archive_noarchive:
            state.unarchived = "noarchive"

    async def directives(self, result: Fetched) -> Directives:
        """The robots directives of an answer that is not stored: its headers', and, for an
        HTML body that names a robots meta tag at all, its tags' (the body parsed for them)."""
        found = header_directives(result.headers, self._token, result.fetched_at)
        if found.noindex or result.error in read.UNREAD or not read.is_html(result):
            return found
        if not read.names_robots(result.body):
            return found
        tree = await self._reader.tree(result.body, result.charset)
        if tree is None:
            return found
        return found.merge(meta_directives(tree, self._token, result.fetched_at))

    async def archivable(self, result: Fetched) -> Fetched | Withheld:
        """What an archive keeps of an answer to be tried again: without its body if it is
        ``noindex`` (unless ``ignore_noindex``) or ``noarchive`` (unless
        ``archive_noarchive``)."""
        found = await self.directives(result)
        if found.noindex and not self._ignore_noindex:
            return Withheld.of(result, "noindex")
        if found.noarchive and not self._archive_noarchive:
            return Withheld.of(result, "noarchive")
        return result
