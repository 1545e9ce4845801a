"""The page stage: a finished fetch in, the URL's record and the links it leads to out.

A 2xx answer goes through a short pipeline of steps over one :class:`PageState`, chosen once
when the stage is built from what the crawl asks for (a links-only crawl runs four): read
(decode, the parse, links, or plain text: a big page in the parse sandbox, see
:mod:`gossamer.page.read`), robots directives (``X-Robots-Tag`` and robots meta tags, a
rendered page's served ones too, :mod:`gossamer.page.owner`: ``nofollow`` drops the links,
``noindex`` the content, ``noarchive`` the archived payload), the canonical URL
(followed with ``--canonical follow``), rules, content fields (main text and metadata, a
PDF's text), the page handler registered for the URL's pattern (``handlers``, through the
Python API), the user's hook, content digests (a duplicate's links are not followed), and
the links to follow (with a focus, judged and scored). The content steps (rules, text,
handler, hook, digests) are passed over for a page whose content is withheld (``noindex`` unless
``ignore_noindex``, or a page that names another canonical URL, followed), and its archived
response keeps its headers but no body (:class:`Withheld`). A redirect becomes
its target's candidate; anything else, its record alone. A new kind of page work is one more
step here, never a branch in the engine.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from gossamer.digests.base import DigestIndex, digest, list_of_links
from gossamer.frontier.base import Candidate, Lease, Outlinks
from gossamer.hooks import Hook
from gossamer.outcomes import Action, Outcome
from gossamer.page import extras, read
from gossamer.page.canonical import FLAGS as CANONICAL_FLAGS
from gossamer.page.canonical import Canonicals, Checks, header_canonical, tag_canonical
from gossamer.page.owner import OwnerSignals
from gossamer.page.state import (
    NO_RULES,
    NO_TEXT,
    Fetched,
    Kept,
    PageResult,
    PageState,
    TextFields,
    Withheld,
    held_bytes,
)
from gossamer.parse.links import ParsedPage
from gossamer.redact import redact_authority
from gossamer.sinks.base import PageRecord
from gossamer.urls import Resolver, canonicalize

if TYPE_CHECKING:
    from gossamer.extract import Content
    from gossamer.extract.pdf import PdfPool
    from gossamer.extract.rules import RuleSet
    from gossamer.extract.rules.pool import RulePool
    from gossamer.page.freshness import Freshness
    from gossamer.page.handlers import Handlers
    from gossamer.parse.sandbox import Sandbox

RULE_COUNTERS = ("rule_pages", "items", "items_dropped", "rule_errors")
SIGNALS = ("noindex", "nofollow", "noarchive", "canonical", *CANONICAL_FLAGS)
"""What the stage counts of the site owner's signals: pages ``noindex``, ``nofollow`` and
``noarchive``,
pages naming another canonical URL (``canonical``) and what ``--canonical follow`` made of it
(the record flags of :mod:`gossamer.page.canonical`)."""
_SIGNAL_FLAGS = frozenset(SIGNALS)

Step = Callable[[PageState], Awaitable[None] | None]
"""A step: a coroutine when it may wait (a worker's answer), else a plain call (no task
switch, no coroutine made for a page)."""


class Focus(Protocol):
    """A focused crawl's policy (:class:`gossamer.focus.policy.FocusPolicy`): judges each 2xx
    HTML page and sets its outlinks' priorities. ``crawl.py`` builds it only when asked to
    focus, so a plain crawl imports nothing of :mod:`gossamer.focus.policy`."""

    def judge(
        self, url: str, depth: int, page: ParsedPage, content: Content | None, links: list[str]
    ) -> tuple[float, list[Candidate]]:
        """The page's relevance (0..1) and the outlinks to queue, with their priorities."""
        ...

    def redirected(self, url: str, target: str) -> float:
        """``url`` redirected to ``target``: the target's priority (``url``'s)."""
        ...

    async def upkeep(self) -> None:
        """Re-score the URLs waiting in the frontier, when due."""
        ...

    def json_stats(self) -> dict[str, Any]: ...

    @property
    def scored_links(self) -> int:
        """The links of a page it reads the texts of (its first so many)."""
        ...


class PageConfig(msgspec.Struct, frozen=True):
    """The knobs of the page stage."""

    follow_nofollow: bool = False
    max_redirects: int = 10
    hook: Hook | None = None
    """The user's ``--hook`` (see :mod:`gossamer.hooks`), called on every 2xx page."""
    text: bool = True
    """Extract the main text and metadata of HTML, plain-text and PDF pages."""
    extractor: str = "tree"
    """The main-text extractor (see :mod:`gossamer.extract`, imported only when ``text``)."""
    max_text_chars: int = 1_000_000
    rules: RuleSet | None = None
    """The rule documents (``--rules``) read on every 2xx HTML page, before the hook."""
    handlers: Handlers | None = None
    """The page handlers a Python program registered (see :mod:`gossamer.page.handlers`),
    called on every 2xx page whose URL one's pattern finds, after the rules and the content
    fields and before the hook."""
    follow_duplicates: bool = False
    """Follow the links of a page whose main text an earlier page had (with digests)."""
    near_digests: bool = False
    """Look for near duplicates too (a SimHash of every main text), not only exact ones."""
    robots_token: str = "gossamer"
    """The crawler's name in ``X-Robots-Tag: NAME: ...`` and ``<meta name=NAME>``."""
    ignore_noindex: bool = False
    """Store the content of ``noindex`` pages too (the user answers for it)."""
    archive_noarchive: bool = False
    """Archive the payload of ``noarchive`` pages too (the user answers for it)."""
    canonical: Literal["record", "follow"] = "record"
    """``follow``: queue a page's canonical URL and store no content for the page."""


class PageStats(msgspec.Struct, frozen=True):
    """What the page stage counted: the rules' pages, items and errors, content duplicates,
    and a focused crawl's figures."""

    rule_pages: int = 0
    items: int = 0
    items_dropped: int = 0
    rule_errors: int = 0
    duplicates_exact: int = 0
    duplicates_near: int = 0
    focus: dict[str, Any] | None = None
    signals: dict[str, int] | None = None
    """Pages by signal of :data:`SIGNALS` (every one, 0 included)."""


class PageStage:
    """Turns each finished fetch into its record and links (see the module docstring)."""

    def __init__(
        self,
        config: PageConfig,
        *,
        pdf: PdfPool | None = None,
        rule_pool: RulePool | None = None,
        focus: Focus | None = None,
        digests: DigestIndex | None = None,
        in_scope: Callable[[str], bool] | None = None,
        freshness: Freshness | None = None,
        canonical_checks: Checks | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """``in_scope`` tells whether the crawl may visit a URL: a canonical URL out of it is
        not followed (``--canonical follow``), nor one ``canonical_checks`` finds admission
        or robots.txt would turn away; ``freshness`` compares a continuous crawl's
        answers with the URL's last one (``--recrawl``); ``sandbox`` parses big pages (not
        with a hook, which reads every page's tree: it would be parsed twice; a focus has the
        texts of the links it reads read there, and its main text)."""
        if config.rules is not None and rule_pool is None:
            raise ValueError("a crawl with rules reads them in a RulePool")
        self._config = config
        self._pdf = pdf
        self._rule_pool = rule_pool
        self._focus = focus
        self._digests = digests
        self._freshness = freshness
        self._extractor = config.extractor if config.text else None
        self._counts: Counter[str] = Counter()
        self._signals = dict.fromkeys(SIGNALS, 0)
        self._canonicals: Canonicals[tuple[Lease, Fetched]] | None = None
        if config.canonical == "follow":
            self._canonicals = Canonicals(in_scope, checks=canonical_checks)
        self.upkeep: Callable[[], Awaitable[None]] | None = None if focus is None else focus.upkeep
        """Run after each URL is acked: the focus re-scores the frontier's URLs when due."""
        self._steps: tuple[Step, ...] = self._pipeline()
        self._reader = read.HtmlReader(
            sandbox if config.hook is None else None,
            follow_nofollow=config.follow_nofollow,
            extractor=self._extractor,
            robots_token=config.robots_token,
            focus_extractor=None if focus is None else config.extractor,
            focus_links=0 if focus is None else focus.scored_links,
        )
        self._owner = OwnerSignals(
            self._reader,
            config.robots_token,
            follow_nofollow=config.follow_nofollow,
            ignore_noindex=config.ignore_noindex,
            archive_noarchive=config.archive_noarchive,
        )

    def _pipeline(self) -> tuple[Step, ...]:
        config = self._config
        steps: list[Step] = [self._read, self._robots, self._canonical]
        if config.rules is not None:
            steps.append(self._rules)
        if config.text:
            steps.append(self._text)
        if config.handlers:
            steps.append(self._handler)
        if config.hook is not None:
            steps.append(self._hook)
        if self._digests is not None:
            steps.append(self._duplicate)
        steps.append(self._outlinks if self._focus is None else self._judge)
        content = (self._rules, self._text, self._handler, self._hook, self._duplicate)
        self._content_steps = frozenset(content)
        return tuple(steps)

    @property
    def steps(self) -> tuple[str, ...]:
        """The names of the steps a 2xx page goes through, in order."""
        return tuple(step.__name__.lstrip("_") for step in self._steps)

    async def handle(
        self, lease: Lease, result: Fetched, action: Action, error: str | None
    ) -> PageResult:
        """The URL's record and the candidates it leads to (outlinks or a redirect target),
        for a fetch whose fate (``action``, and ``error`` for a final failure) is decided."""
        state = PageState(lease, result, error, result.flags)
        if action is Action.STORE:
            for step in self._steps:
                if state.withheld is None or step not in self._content_steps:
                    waits = step(state)
                    if waits is not None:
                        await waits
        else:
            await self._owner.apply_other(state)
            if action is Action.REDIRECT and result.location is not None:
                self._redirect(state, result.location)
        kept: tuple[Kept, ...] = ()
        if self._canonicals is not None:
            flag, kept = await self._canonical_ended(state, action)
            state.flags += (flag,) if flag is not None else ()
        if state.flags or state.canonical is not None:
            self._count_signals(state)
        if self._freshness is not None:
            self._freshness.judge(state, action)
        elif result.status not in (None, 304):  # a 304 to no validators says nothing
            state.change = "new"  # no --recrawl: every fetch is a URL's first
        return _result(state)._replace(kept=kept) if kept else _result(state)

    async def _canonical_ended(
        self, state: PageState, action: Action
    ) -> tuple[str | None, tuple[Kept, ...]]:
        """What the fetch of a URL means to the pages that named it canonical, if any did,
        and the held pages stored after all (see `gossamer.page.canonical`)."""
        assert self._canonicals is not None
        lease, result, failed = state.lease, state.result, action is not Action.STORE
        if action is Action.REDIRECT:
            target = state.redirect_to if state.candidates else None
            flag, held = self._canonicals.redirected(lease.url, target)
        else:
            if state.withheld == "not-canonical":  # its canonical URL may lead back to it
                self._canonicals.hold(lease.url, (lease, result), held_bytes(result))
            flag, held = self._canonicals.ended(lease.url, failed, state.withheld)
        return flag, tuple([await self._stored_after_all(*page) for page in held])

    async def _stored_after_all(self, lease: Lease, result: Fetched) -> Kept:
        """A held page its canonical URL led back to, through the steps again but the links'
        (queued at its fetch): the record with its content, and its whole answer to archive."""
        state = PageState(lease, result, None, result.flags)
        for step in self._steps[:-1]:
            if state.withheld is None or step not in self._content_steps:
                waits = step(state)
                if waits is not None:
                    await waits
        self._follow(state)  # its record counts its links; its signals counted at its fetch
        state.change = "new" if self._freshness is None else None
        page = _result(state)  # its archive: a noarchive page's withheld, else all of it
        return Kept(page.record, page.archive or result)

    def _count_signals(self, state: PageState) -> None:
        signals = self._signals
        for flag in state.flags:
            if flag in _SIGNAL_FLAGS:
                signals[flag] += 1
        if state.canonical is not None and state.canonical != state.lease.url:
            signals["canonical"] += 1

    def restore_counts(self, rule_counts: Callable[[], tuple[int, int, int, int]]) -> None:
        """Start the rules' counters from a previous run's records (``--resume``)."""
        if self._config.rules is not None or self._config.handlers:
            self._counts.update(dict(zip(RULE_COUNTERS, rule_counts(), strict=True)))

    def stats(self) -> PageStats:
        """A frozen snapshot of what the stage counted."""
        counts = self._counts
        found = None if self._digests is None else self._digests.stats()
        return PageStats(
            rule_pages=counts["rule_pages"],
            items=counts["items"],
            items_dropped=counts["items_dropped"],
            rule_errors=counts["rule_errors"],
            duplicates_exact=0 if found is None else found.exact,
            duplicates_near=0 if found is None else found.near,
            focus=None if self._focus is None else self._focus.json_stats(),
            signals=dict(self._signals),
        )

    # -- the steps -------------------------------------------------------------------------

    async def _read(self, state: PageState) -> None:
        """Parse HTML (:class:`gossamer.page.read.HtmlReader`: never on the event loop when
        it could take long) or decode plain text."""
        result = state.result
        if result.error in read.UNREAD:
            return
        if read.is_html(result):
            parsed, state.content, state.aside, flags = await self._reader.page(
                state.lease.url, result
            )
            state.parsed = parsed
            state.links = parsed.links
            state.title = parsed.title
            state.flags += parsed.flags + flags
        elif self._extractor is not None and result.content_type == "text/plain":
            state.content = read.plain_text(result)

    def _robots(self, state: PageState) -> Awaitable[None] | None:
        """The site owner's robots directives (:mod:`gossamer.page.owner`)."""
        return self._owner.apply(state)

    async def archivable(self, result: Fetched) -> Fetched | Withheld:
        """What an archive keeps of an answer to be tried again: without its body if it is
        ``noindex`` (unless ``ignore_noindex``) or ``noarchive`` (unless
        ``archive_noarchive``)."""
        return await self._owner.archivable(result)

    def _canonical(self, state: PageState) -> None:
        """The canonical URL (the header's, else the tag's); followed, with ``follow``."""
        url, parsed = state.lease.url, state.parsed
        header = header_canonical(state.result.headers, url)
        tag = None
        if state.aside is not None:
            tag = state.aside.canonical
        elif parsed is not None and parsed.tree is not None and parsed.names_canonical is not False:
            tag = tag_canonical(parsed.tree, parsed.base_url, parsed.canonical_link)
        if header is not None and tag is not None and header != tag:
            state.flags += ("canonical-conflict",)
        state.canonical = header or tag
        if self._canonicals is None:
            return
        target, flag = self._canonicals.judge(url, state.canonical, state.lease.depth)
        state.flags += (flag,) if flag is not None else ()
        if target is not None:
            state.withheld = state.withheld or "not-canonical"
            state.canonical_link = Candidate(target, state.lease.depth + 1)

    async def _rules(self, state: PageState) -> None:
        """The rule matching an HTML page: its fields, and its links when it has link rules."""
        if state.parsed is None:
            return
        assert self._config.rules is not None and self._rule_pool is not None
        url, result = state.lease.url, state.result
        found = await extras.read_rules(
            self._rule_pool, self._config.rules, url, result, self._config.follow_nofollow
        )
        if found is None:
            return
        counts = {"rule_pages": 1, "items": len(found.items), "rule_errors": len(found.errors)}
        self._counts.update(counts, items_dropped=found.dropped)
        state.rules = extras.rule_fields(found, url, round(result.fetched_at, 3))
        if found.links is not None:
            state.links = found.links

    async def _text(self, state: PageState) -> None:
        """The content fields: from what the extractor read, or a PDF's text."""
        if state.content is not None:
            state.text, cut = read.text_fields(state.content, self._config.max_text_chars)
            state.flags += cut
        elif state.result.content_type == "application/pdf":
            await self._pdf_text(state)

    async def _pdf_text(self, state: PageState) -> None:
        """A PDF's text from the worker pool, or the reason there is none."""
        result = state.result
        if self._pdf is None or result.truncated:
            state.error = state.error or ("pdf-truncated" if result.truncated else None)
            return
        extracted = await self._pdf.text(result.body, self._config.max_text_chars)
        if extracted.text is None:
            state.error = state.error or extracted.error
            return
        from gossamer.extract.lang import detect_language

        text = extracted.text
        state.text = TextFields(text=text, text_chars=len(text), lang=detect_language(text))

    def _hook(self, state: PageState) -> None:
        """The user's hook: its fields, and the links to follow when it names them."""
        assert self._config.hook is not None
        extra, links, error = extras.call_hook(self._config.hook, extras.hook_page(state))
        state.extra = extra
        if links is not None:
            state.links = links
        if error is not None and state.error is None:
            state.error = error
            state.outcome = Outcome.HOOK_ERROR

    async def _handler(self, state: PageState) -> None:
        """The handler registered for the page's URL: its items join the record's (as a
        rule's do), its links replace the page's own (or join them, ``keep_links``)."""
        assert self._config.handlers is not None
        url = state.lease.url
        route = self._config.handlers.select(url)
        if route is None:
            return
        await self._tree(state)
        found, error = await extras.call_handler(route, extras.hook_page(state))
        if error is not None or found is None:
            if state.error is None:
                state.error = error
                state.outcome = Outcome.HOOK_ERROR
            return
        items, links = found
        counted = state.rules is None or state.rules.rule is None
        self._counts.update(rule_pages=int(counted), items=len(items))
        state.rules = extras.handler_fields(state.rules, route.name, items, url, state.result)
        if links:
            resolved = extras.resolve_links(url, links)
            state.links = [*state.links, *resolved] if route.keep_links else resolved

    async def _tree(self, state: PageState) -> None:
        """Give a page the sandbox parsed a tree in-process (the guarded parse), for a step
        that reads it."""
        parsed = state.parsed
        if state.aside is not None and parsed is not None and parsed.tree is None:
            tree = await self._reader.tree(state.result.body, state.result.charset)
            state.parsed = dataclasses.replace(parsed, tree=tree)

    async def _duplicate(self, state: PageState) -> None:
        """The page that had this main text first (content digests), if any."""
        assert self._digests is not None
        text = (state.text or NO_TEXT).text
        if not text:
            return
        found = digest(text, self._config.near_digests, state.title)
        url = redact_authority(state.lease.url)  # the index is stored: no password
        match = None if found is None else await self._digests.check(url, found)
        if match is not None:
            state.duplicate_of = match.first

    def _follow(self, state: PageState) -> list[str]:
        """The links to follow: none of a duplicate's (unless asked, or it is a list of
        links), whose record still counts them."""
        state.outlinks = len(state.links)
        if state.duplicate_of is not None and not self._config.follow_duplicates:
            text = (state.text or NO_TEXT).text or ""
            return state.links if list_of_links(text, len(state.links)) else []
        return state.links

    def _outlinks(self, state: PageState) -> None:
        """The links to follow, one level deeper (and a canonical URL followed, as deep)."""
        lease = state.lease
        state.candidates = Outlinks(self._follow(state), lease.depth + 1, lease.url)
        if state.canonical_link is not None:
            state.candidates = [*state.candidates, state.canonical_link]

    def _judge(self, state: PageState) -> None:
        """With a focus: a 2xx HTML page's relevance and its links' priorities."""
        assert self._focus is not None
        links, lease, parsed = self._follow(state), state.lease, state.parsed
        status = state.result.status
        if parsed is None or status is None or not 200 <= status < 300:
            state.candidates = Outlinks(links, lease.depth + 1, lease.url)
            return
        content = state.content
        if content is None and state.aside is not None:  # read in the sandbox for it alone
            content = state.aside.content
        state.relevance, state.candidates = self._focus.judge(
            lease.url, lease.depth, parsed, content, links
        )
        if state.canonical_link is not None:
            state.candidates = [*state.candidates, state.canonical_link]

    def _redirect(self, state: PageState, location: str) -> None:
        """A redirect: its target back to the frontier, one hop further, unless it is bad or
        one hop too many."""
        lease = state.lease
        try:
            resolved = Resolver(lease.url).resolve(location)
            target = canonicalize(resolved) if resolved is not None else None
        except ValueError:  # InvalidURL, or a lease URL no resolver takes
            target = None
        state.redirect_to = target
        if target is None:
            state.error = "bad-redirect"
        elif lease.hops + 1 > self._config.max_redirects:
            state.error = "too-many-redirects"
        else:
            state.error = None
            priority = 0.0 if self._focus is None else self._focus.redirected(lease.url, target)
            state.candidates = [Candidate(target, lease.depth, lease.hops + 1, priority)]


def _result(state: PageState) -> PageResult:
    """The record of a page the steps are done with, how it counts, and what of it an
    archive keeps."""
    lease, result = state.lease, state.result
    text, rules = state.text or NO_TEXT, state.rules or NO_RULES
    error = state.error or result.error
    archive = state.revisit
    if state.withheld is not None:
        state.title = state.extra = None
        archive = Withheld.of(result, state.withheld)
    elif state.unarchived is not None:
        archive = Withheld.of(result, state.unarchived)
    record = PageRecord(
        url=lease.url,
        status=result.status,
        depth=lease.depth,
        content_type=result.content_type,
        bytes=len(result.body),
        fetched_at=round(result.fetched_at, 3),
        elapsed_ms=round(result.elapsed * 1000, 1),
        title=state.title,
        outlinks=state.outlinks,
        redirect_to=state.redirect_to,
        error=error,
        attempts=lease.attempts + 1,
        truncated=result.truncated,
        flags=state.flags,
        extra=state.extra,
        text=text.text,
        lang=text.lang,
        description=text.description,
        canonical=state.canonical or text.canonical,
        published=text.published,
        authors=text.authors,
        images=text.images,
        text_chars=text.text_chars,
        rule=rules.rule,
        items=rules.items,
        rule_errors=rules.errors,
        proxy=result.proxy,
        rendered=result.rendered,
        relevance=state.relevance,
        duplicate_of=state.duplicate_of,
        change=state.change,
        previous_fetched_at=state.previous_fetched_at,
        found=rules.found,
    )
    outcome = state.outcome
    if outcome is None:
        failed = error is not None or result.status is None
        outcome = Outcome.FAILED if failed else Outcome.FETCHED
    return PageResult(record, state.candidates, outcome, archive)


__all__ = [
    "RULE_COUNTERS",
    "SIGNALS",
    "Focus",
    "PageConfig",
    "PageStage",
    "PageStats",
]
